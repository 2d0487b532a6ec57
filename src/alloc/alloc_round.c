/* alloc_round: a pool's rounds on the runner (alloc, free, alloc_reuse batches over the
 * working set), the first writes and the blocks' checks; pools only through their table. */
#include "alloc_internal.h"

#include "base/runner_internal.h"
#include "shmbench/error.h"
#include "shmbench/rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void copy_bytes(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

int shmb_alloc_write_tag(void *ptr, uint64_t tag)
{
    return shmb_segment_first_write_copy(ptr, &tag, sizeof(tag), copy_bytes);
}

void shmb_alloc_shuffle(uint64_t seed, uint64_t *order, uint64_t n)
{
    shmb_rng_t rng;
    shmb_rng_seed(&rng, seed);
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    shmb_rng_shuffle(&rng, order, (size_t)n);
}

/* Before each block of the touch's walk, untimed: how many of the pages its touch writes are in
 * memory already (a header the allocator wrote, or a neighbour's touch: no first touch). */
static int touch_resident(void *ctx, uint64_t count)
{
    (void)count;
    shmb_alloc_round_t *a = ctx;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = (uintptr_t)a->blocks[a->touched] & ~(page - 1);
    const uint64_t n = (a->bytes + page - 1) / page;
    unsigned char vec[256];
    for (uint64_t done = 0; done < n;) {
        const uint64_t k = n - done < sizeof(vec) ? n - done : sizeof(vec);
        if (mincore((void *)(start + done * page), (size_t)(k * page), vec) != 0)
            return shmb_error_record("mincore", errno, NULL);
        for (uint64_t i = 0; i < k; i++)
            a->touch_resident += vec[i] & 1;
        done += k;
    }
    a->touch_pages += n;
    return 0;
}

static int touch_block(void *ctx, uint64_t count)
{
    (void)count;
    shmb_alloc_round_t *a = ctx;
    return shmb_segment_first_write(a->blocks[a->touched], a->bytes);
}

static int touch_next(void *ctx, uint64_t count)
{
    (void)count;
    ((shmb_alloc_round_t *)ctx)->touched++;
    return 0;
}

int shmb_alloc_round_touch(shmb_alloc_round_t *a)
{
    shmb_samples_t out = {.v = a->touch_ns, .cap = (size_t)a->n}; /* exactly n samples */
    const shmb_runner_plan_t plan = {.ops = a->n, .batches = a->n, .budget_ns = UINT64_MAX,
                                     .before = touch_resident, .after = touch_next};
    a->touched = 0;
    return shmb_runner_run(&plan, touch_block, a, &out, NULL);
}

/* The timed batch of a->step over the working set, one operation per block. */
static int step_batch(void *ctx, uint64_t count)
{
    shmb_alloc_round_t *a = ctx;
    shmb_alloc_pool_t *p = a->pool;
    int ret = 0;
    switch (a->step) {
    case SHMB_ALLOC_FREE:
        ret = p->ops->free(p, a->blocks, a->handles, a->order, count);
        break;
    case SHMB_ALLOC_TOUCH_REUSE: /* a purged block is faulted in again: guarded too */
        for (uint64_t i = 0; i < count && ret == 0; i++)
            ret = shmb_segment_first_write(a->blocks[i], a->bytes);
        break;
    default:
        ret = p->ops->alloc(p, a->bytes, a->blocks, a->handles, count);
        break;
    }
    a->failed = ret < 0;
    return ret;
}

int shmb_alloc_round_batch(shmb_alloc_round_t *a, int step, uint64_t r, uint64_t span[2])
{
    shmb_samples_t out = {.v = &a->batch[step][r], .cap = 1};
    const shmb_runner_plan_t plan = {.ops = a->n, .batches = 1, .budget_ns = UINT64_MAX, .clocks = span};
    a->step = step;
    return shmb_runner_run(&plan, step_batch, a, &out, NULL);
}

int shmb_alloc_round_check(const shmb_alloc_run_t *run, shmb_alloc_pool_t *const *pools, void **blocks,
                           const void *handles, uint64_t per_thread, int threads, size_t bytes, const char *pass)
{
    if (run->hook && run->hook->check)
        run->hook->check(blocks, per_thread, threads, run->hook->arg);
    return shmb_alloc_pool_verify(pools, per_thread, blocks, handles, per_thread * (uint64_t)threads, bytes, pass,
                                  run->why, run->why_cap);
}

int shmb_alloc_round_freed(const shmb_alloc_run_t *run, shmb_alloc_pool_t *const *pools, uint64_t per_thread,
                           int threads)
{
    const shmb_alloc_pool_ops_t *ops = pools[0]->ops;
    if (!ops->freed)
        return 0;
    if (!ops->per_thread)
        return ops->freed(pools[0], per_thread * (uint64_t)threads, run->why, run->why_cap);
    int ret = 0;
    for (int t = 0; t < threads && ret == 0; t++)
        ret = ops->freed(pools[t], per_thread, run->why, run->why_cap);
    return ret;
}

/* After each batch of a walk, untimed: round 0's check of it (after alloc, the touch and the
 * lending too), the pool emptied after a round's last step; then the next step. */
static int step_after(void *ctx, uint64_t count)
{
    (void)count;
    shmb_alloc_round_t *a = ctx;
    const shmb_alloc_run_t *run = a->run;
    const int step = a->step, first = a->r == 0,
              last = step == (run->cfg->touch ? SHMB_ALLOC_TOUCH_REUSE : SHMB_ALLOC_REUSE);
    int ret = 0;
    if (a->failed)
        return 0;
    if (first && step == SHMB_ALLOC_FREE)
        ret = shmb_alloc_round_freed(run, &a->pool, a->n, 1);
    else if (first && step != SHMB_ALLOC_TOUCH_REUSE)
        ret = shmb_alloc_round_check(run, &a->pool, a->blocks, a->handles, a->n, 1, a->bytes,
                                     step == SHMB_ALLOC_ALLOC ? "alloc" : "alloc_reuse");
    if (ret == 0 && first && step == SHMB_ALLOC_ALLOC && run->cfg->touch)
        ret = shmb_alloc_round_touch(a);
    if (ret == 0 && first && step == SHMB_ALLOC_ALLOC && a->lend)
        ret = a->lend(a->lend_arg, a);
    if (ret == 0 && last)
        ret = a->pool->ops->empty(a->pool, a->blocks, a->handles, a->order, a->n);
    a->step = last ? SHMB_ALLOC_ALLOC : step + 1;
    a->r += last;
    return ret;
}

int shmb_alloc_round_run(const shmb_alloc_run_t *run, shmb_alloc_round_t *a, uint64_t r0, uint64_t rounds)
{
    enum { CHUNK = 256 }; /* rounds a runner run takes at most: their samples fit on the stack */
    const uint64_t steps = run->cfg->touch ? SHMB_ALLOC_STEPS : SHMB_ALLOC_BLOCK_STEPS;
    double v[CHUNK * SHMB_ALLOC_STEPS];
    a->run = run;
    a->step = SHMB_ALLOC_ALLOC;
    a->r = r0;
    int ret = 0;
    for (uint64_t done = 0; done < rounds && ret == 0; done += CHUNK) {
        const uint64_t k = rounds - done < CHUNK ? rounds - done : CHUNK;
        shmb_samples_t out = {.v = v, .cap = (size_t)(k * steps)}; /* one sample a batch, never grown */
        const shmb_runner_plan_t plan = {.ops = k * steps * a->n, .batches = k * steps, .budget_ns = UINT64_MAX,
                                         .after = step_after};
        ret = shmb_runner_run(&plan, step_batch, a, &out, NULL);
        for (size_t j = 0; j < out.n; j++)
            a->batch[j % steps][r0 + done + j / steps] = v[j];
    }
    return ret;
}

static int compare_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

int shmb_alloc_pool_verify(shmb_alloc_pool_t *const *pools_of, uint64_t per_pool, void **blocks, const void *handles,
                           uint64_t n, size_t bytes, const char *pass, char *why, size_t cap)
{
    for (uint64_t i = 0; i < n; i++) {
        shmb_alloc_pool_t *p = pools_of[i / per_pool];
        if (!p->ops->holds(p, blocks[i], bytes)) {
            snprintf(why, cap, "%s (%s): block %p of %zu bytes is outside its SHM", p->ops->name, pass, blocks[i],
                     bytes);
            return -EPROTO;
        }
    }
    void **sorted = malloc((size_t)n * sizeof(*sorted));
    if (!sorted)
        return shmb_error_record("malloc", ENOMEM, NULL);
    memcpy(sorted, blocks, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), compare_ptr);
    int ret = 0;
    for (uint64_t i = 0; i + 1 < n && ret == 0; i++) {
        if ((uintptr_t)sorted[i] + bytes > (uintptr_t)sorted[i + 1]) {
            snprintf(why, cap, "%s (%s): blocks %p and %p of %zu bytes overlap", pools_of[0]->ops->name, pass,
                     sorted[i], sorted[i + 1], bytes);
            ret = -EPROTO;
        }
    }
    free(sorted);
    for (uint64_t i = 0; i < n && ret == 0;) { /* each pool once, over its run of blocks */
        shmb_alloc_pool_t *p = pools_of[i / per_pool];
        uint64_t end = i + per_pool;
        while (end < n && pools_of[end / per_pool] == p)
            end += per_pool;
        end = end < n ? end : n;
        if (p->ops->verify)
            ret = p->ops->verify(p, blocks + i, (const char *)handles + i * p->ops->handle_bytes, end - i, bytes,
                                 why, cap);
        i = end;
    }
    return ret;
}
