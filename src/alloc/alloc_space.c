/* alloc_space: what each allocator holds of one pool under the KV mix: utilization at the
 * first refusal, fragmentation after a seeded churn (docs/allocation.md, "Space"). */
#include "alloc_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

const shmb_alloc_space_class_t shmb_alloc_kv_mix[SHMB_ALLOC_KV_MIX_CLASSES] = {
    {4096, 70}, {256 << 10, 20}, {3274752, 10}};

double shmb_alloc_space_fragmentation(uint64_t largest, uint64_t total)
{
    return total ? 1.0 - (double)largest / (double)total : 0.0;
}

uint64_t shmb_alloc_space_draw(const shmb_alloc_space_class_t *mix, size_t nmix, uint64_t rnd)
{
    if (!mix) {
        mix = shmb_alloc_kv_mix;
        nmix = SHMB_ALLOC_KV_MIX_CLASSES;
    }
    const uint64_t r = rnd % 100;
    uint64_t acc = 0;
    for (size_t i = 0; i < nmix; i++)
        if (r < (acc += mix[i].percent))
            return mix[i].bytes;
    return mix[nmix - 1].bytes;
}

/* One run's pool, its live blocks and the samples. */
typedef struct space {
    const shmb_alloc_space_config_t *cfg;
    shmb_alloc_pool_t pool;
    void **blocks;
    uint64_t *bytes;   /* requested bytes of blocks[i] */
    uint64_t *order;   /* a shuffle of 0..n */
    uint64_t n, cap;   /* live blocks; room for them */
    uint64_t live;     /* requested bytes live */
    uint64_t live_cap; /* a pool that maps as it grows, in the churn: the live bytes of its fill */
    double *alloc_ns;  /* each allocation, timed alone */
    uint64_t nalloc, alloc_cap;
    double *free_ns;   /* each round's free batch, ns per free */
    uint64_t nfree;
    shmb_rng_t rng;
} space_t;

/* One block of the mix, timed alone: 0, 1 when it failed (-ENOMEM; for a
 * pool that maps as it grows, an allocation that maps past pool_bytes, then
 * freed untimed, and in the churn one that would take the live bytes past
 * those of its fill: the extent the failed one mapped stays with the arena,
 * and would otherwise let it hold more each round), or -errno. */
static int space_alloc(space_t *s)
{
    const shmb_alloc_pool_ops_t *ops = s->pool.ops;
    const uint64_t bytes = shmb_alloc_space_draw(s->cfg->mix, s->cfg->nmix, shmb_rng_next(&s->rng));
    if (s->n == s->cap)
        return -EOVERFLOW;
    if (s->live_cap && s->live + bytes > s->live_cap)
        return 1;
    if (s->nalloc == s->alloc_cap) {
        double *v = realloc(s->alloc_ns, (size_t)(s->alloc_cap *= 2) * sizeof(*v));
        if (!v)
            return shmb_error_record("malloc", ENOMEM, NULL);
        s->alloc_ns = v;
    }
    const uint64_t before = ops->mapped ? ops->mapped(&s->pool) : 0;
    void *block = NULL;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = ops->alloc(&s->pool, (size_t)bytes, &block, NULL, 1);
    const uint64_t t1 = shmb_clock_now_ns();
    if (ret == -ENOMEM)
        return 1;
    if (ret < 0)
        return ret;
    if (ops->mapped) {
        const uint64_t after = ops->mapped(&s->pool);
        if (after > before && after > s->cfg->pool_bytes) {
            ret = ops->free(&s->pool, &block, NULL, &(uint64_t){0}, 1);
            return ret < 0 ? ret : 1;
        }
    }
    s->alloc_ns[s->nalloc++] = (double)(t1 - t0);
    s->blocks[s->n] = block;
    s->bytes[s->n++] = bytes;
    s->live += bytes;
    return 0;
}

typedef struct span {
    uintptr_t at;
    uint64_t len;
} span_t;

static int span_cmp(const void *a, const void *b)
{
    const uintptr_t x = ((const span_t *)a)->at, y = ((const span_t *)b)->at;
    return (x > y) - (x < y);
}

/* Every live block inside the pool, no two overlapping, and the pool's own
 * check; 0, -EPROTO (why) or -ENOMEM. */
static int space_check(space_t *s, const char *pass, char *why, size_t cap)
{
    const shmb_alloc_pool_ops_t *ops = s->pool.ops;
    span_t *v = malloc((size_t)(s->n ? s->n : 1) * sizeof(*v));
    if (!v)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    for (uint64_t i = 0; i < s->n && ret == 0; i++) {
        v[i] = (span_t){(uintptr_t)s->blocks[i], s->bytes[i]};
        if (!ops->holds(&s->pool, s->blocks[i], (size_t)s->bytes[i])) {
            snprintf(why, cap, "%s (space, %s): block %p of %llu bytes outside its pool", ops->name, pass,
                     s->blocks[i], (unsigned long long)s->bytes[i]);
            ret = -EPROTO;
        }
    }
    if (ret == 0)
        qsort(v, (size_t)s->n, sizeof(*v), span_cmp);
    for (uint64_t i = 1; i < s->n && ret == 0; i++) {
        if (v[i - 1].at + v[i - 1].len > v[i].at) {
            snprintf(why, cap, "%s (space, %s): blocks at %#lx and %#lx overlap", ops->name, pass,
                     (unsigned long)v[i - 1].at, (unsigned long)v[i].at);
            ret = -EPROTO;
        }
    }
    free(v);
    if (ret == 0 && ops->verify)
        ret = ops->verify(&s->pool, s->blocks, NULL, s->n, 0, why, cap);
    return ret;
}

/* Allocates until the first failure, then checks the live set. */
static int space_fill(space_t *s, const char *pass, uint64_t *checks, char *why, size_t cap)
{
    int ret;
    while ((ret = space_alloc(s)) == 0)
        ;
    if (ret < 0 || (ret = space_check(s, pass, why, cap)) < 0)
        return ret;
    ++*checks;
    return 0;
}

/* Frees free_percent of the live blocks, picked by a seeded shuffle, as one
 * timed batch; the survivors keep their order. */
static int space_free(space_t *s, uint64_t *frees)
{
    uint64_t k = s->n * s->cfg->free_percent / 100;
    k = k ? k : s->n > 0; /* one at least */
    if (k == 0)
        return 0;
    shmb_alloc_shuffle(shmb_rng_next(&s->rng), s->order, s->n);
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = s->pool.ops->free(&s->pool, s->blocks, NULL, s->order, k);
    const uint64_t t1 = shmb_clock_now_ns();
    if (ret < 0)
        return ret;
    s->free_ns[s->nfree++] = (double)(t1 - t0) / (double)k;
    *frees += k;
    for (uint64_t i = 0; i < k; i++) {
        s->live -= s->bytes[s->order[i]];
        s->blocks[s->order[i]] = NULL;
    }
    uint64_t m = 0;
    for (uint64_t i = 0; i < s->n; i++) {
        if (s->blocks[i]) {
            s->blocks[m] = s->blocks[i];
            s->bytes[m++] = s->bytes[i];
        }
    }
    s->n = m;
    return 0;
}

/* The two rows: space_alloc (each allocation; note: utilization,
 * fragmentation, largest of total free) and space_free (each round's ns per free; note: checks). */
static int space_rows(const space_t *s, const shmb_alloc_space_t *r, shmb_rows_t *rows)
{
    shmb_row_t row = shmb_row_make(s->pool.ops->name, "pool_mb", s->cfg->pool_bytes >> 20, s->cfg->repetition);
    if (r->has_free)
        snprintf(row.note, sizeof(row.note), "util %.4f frag %.4f (%.1f of %.1f MiB)", r->utilization,
                 r->fragmentation, (double)r->largest_free / 1048576.0, (double)r->total_free / 1048576.0);
    else
        snprintf(row.note, sizeof(row.note), "util %.4f frag -", r->utilization);
    int ret = shmb_alloc_push_step(rows, row, "space_alloc", s->alloc_ns, (size_t)s->nalloc, r->allocs);
    snprintf(row.note, sizeof(row.note), "verified %llu live sets", (unsigned long long)r->checks);
    return ret < 0 ? ret : shmb_alloc_push_step(rows, row, "space_free", s->free_ns, (size_t)s->nfree, r->frees);
}

static int space_config_ok(const shmb_alloc_space_config_t *cfg, shmb_alloc_kind_t kind)
{
    uint32_t sum = 0;
    for (size_t i = 0; cfg->mix && i < cfg->nmix; i++)
        sum += cfg->mix[i].bytes ? cfg->mix[i].percent : 101;
    return (kind == SHMB_ALLOC_OFFSET || kind == SHMB_ALLOC_BIPC || kind == SHMB_ALLOC_JEMALLOC) &&
           cfg->pool_bytes >= SHMB_ALLOC_PAGE && cfg->free_percent >= 1 && cfg->free_percent <= 100 &&
           (!cfg->mix || (cfg->nmix > 0 && sum == 100));
}

int shmb_alloc_space_run(const shmb_alloc_space_config_t *cfg, shmb_alloc_kind_t kind, shmb_alloc_space_t *out,
                         shmb_rows_t *rows, char *why, size_t why_cap)
{
    if (!space_config_ok(cfg, kind))
        return -EINVAL;
    uint64_t smallest = UINT64_MAX;
    for (size_t i = 0; i < (cfg->mix ? cfg->nmix : SHMB_ALLOC_KV_MIX_CLASSES); i++) {
        const uint64_t b = (cfg->mix ? cfg->mix : shmb_alloc_kv_mix)[i].bytes;
        smallest = b < smallest ? b : smallest;
    }
    space_t s = {.cfg = cfg, .cap = cfg->pool_bytes / smallest + 2, .alloc_cap = 1024};
    shmb_alloc_space_t r = {0};
    int ret = 0;
    shmb_rng_seed(&s.rng, cfg->seed);
    s.blocks = calloc((size_t)s.cap, sizeof(*s.blocks));
    s.bytes = calloc((size_t)s.cap, sizeof(*s.bytes));
    s.order = calloc((size_t)s.cap, sizeof(*s.order));
    s.alloc_ns = malloc((size_t)s.alloc_cap * sizeof(*s.alloc_ns));
    s.free_ns = calloc((size_t)cfg->rounds + 1, sizeof(*s.free_ns));
    if (!s.blocks || !s.bytes || !s.order || !s.alloc_ns || !s.free_ns) {
        ret = shmb_error_record("malloc", ENOMEM, NULL);
        goto out;
    }
    s.pool.ops = shmb_alloc_pool_ops(kind);
    s.pool.blocks = s.cap;
    ret = s.pool.ops->create(&s.pool, cfg->shm_prefix, (size_t)cfg->pool_bytes);
    if (ret < 0)
        goto out;
    if ((ret = space_fill(&s, "fill", &r.checks, why, why_cap)) == 0) {
        r.fill_blocks = s.n;
        r.fill_bytes = s.live;
        r.utilization = (double)s.live / (double)cfg->pool_bytes;
        s.live_cap = s.pool.ops->mapped ? s.live : 0;
    }
    for (uint64_t round = 0; ret == 0 && round < cfg->rounds; round++)
        if ((ret = space_free(&s, &r.frees)) == 0)
            ret = space_fill(&s, "churn", &r.checks, why, why_cap);
    if (ret == 0 && s.pool.ops->space && (ret = s.pool.ops->space(&s.pool, &r.total_free, &r.largest_free)) == 0) {
        r.has_free = 1;
        r.fragmentation = shmb_alloc_space_fragmentation(r.largest_free, r.total_free);
    }
    r.allocs = s.nalloc;
    for (uint64_t i = 0; i < s.n; i++)
        s.order[i] = i;
    const int freed = s.pool.ops->free(&s.pool, s.blocks, NULL, s.order, s.n);
    uint64_t kept = 0;
    const int gone = s.pool.ops->destroy(&s.pool, 1, &kept);
    ret = ret < 0 ? ret : freed < 0 ? freed : gone;
    if (ret == 0 && rows)
        ret = space_rows(&s, &r, rows);
    if (ret == 0)
        *out = r;
out:
    free(s.blocks);
    free(s.bytes);
    free(s.order);
    free(s.alloc_ns);
    free(s.free_ns);
    return ret;
}
