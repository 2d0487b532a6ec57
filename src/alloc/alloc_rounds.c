/* alloc_rounds: the rounds that time the pool allocators of the
 * allocation benchmark (their operations: alloc_pool.c), on one thread or
 * on a crew of threads, and their rows.
 *
 * A round allocates the working set into the empty pool (alloc), frees it
 * in a random order fixed by the seed (free), allocates it again into the
 * holes (alloc_reuse), then empties the pool untimed. These take
 * nanoseconds, so each pass is timed as one batch and the per-operation
 * figure is batch time / batch size. Rounds repeat until cfg->min_ops
 * operations per step were timed. Before anything is reported, round 0's
 * blocks are checked: each lies inside its allocator's SHM, and no two live
 * blocks overlap. --touch times the first write of each fresh block (touch)
 * and of the reused blocks as a batch (touch_reuse).
 *
 * threads > 1: that many threads (a crew, src/crew_internal.h) run the same
 * path at once and every timed phase (each batch) starts at the crew's
 * barrier, so they contend as in one process: bipc and jemalloc share ONE
 * pool (its mutex, its arena's locks; jemalloc_tcache a tcache per thread in
 * front), the arena is one per thread (it is single-threaded by design: the
 * reference of an allocator that shares nothing; its rows' note says so). Rows
 * carry threads = N; ns figures are per thread per operation, percentiles
 * over every thread's samples; items_per_second is all threads' operations /
 * the summed wall time of the phases. Round 0's blocks of every thread are
 * checked together.
 *
 * With a peer (one thread): after round 0's alloc check (and touch), every
 * block is tagged and its handle sent with the pool list; the peer attaches
 * a pool on the first handle naming it (row attach, one sample per pool),
 * checks every tag through its translation, then times `rounds` batches of
 * translations (row translate, ns per handle; speedup = posix attach p50 /
 * its p50). A pool whose table entry cannot lend (the arena) has no peer
 * rows.
 */
#include "alloc_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/paired.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { A_ALLOC, A_FREE, A_REUSE, A_TOUCH_REUSE, A_COUNT };

/* Rounds of a pool's working set of n blocks: at least cfg->min_ops operations per step. */
static uint64_t pool_rounds(const shmb_alloc_config_t *cfg, uint64_t n)
{
    return (cfg->min_ops + n - 1) / n;
}

/* ---- pools: rounds ---- */

typedef struct pool_run {
    shmb_alloc_pool_t *pool;
    void **blocks;
    void *handles;     /* the blocks' handles (ops->handle_bytes each), or NULL */
    uint64_t *order;   /* free order: a permutation of 0..n */
    uint64_t n;        /* working set */
    size_t bytes;      /* requested per block */
    double *batch[A_COUNT];
    double *touch_ns;
    uint64_t touch_pages;    /* pages the touch wrote */
    uint64_t touch_resident; /* of those, in memory before it: no first touch */
    shmb_alloc_lending_t *lending; /* NULL, or round 0's blocks go to the peer */
} pool_run_t;

/* Adds to *resident how many of the pages a touch of [addr, addr + bytes)
 * writes (one byte per page from addr on) are in memory already: an
 * allocator that wrote inside the block (a header) or a neighbour's touch
 * faulted them, so their touch is no first one (mincore, untimed). */
static int count_resident(void *addr, size_t bytes, uint64_t *pages, uint64_t *resident)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = (uintptr_t)addr & ~(page - 1);
    const uint64_t n = (bytes + page - 1) / page;
    unsigned char vec[256];
    for (uint64_t done = 0; done < n;) {
        const uint64_t k = n - done < sizeof(vec) ? n - done : sizeof(vec);
        if (mincore((void *)(start + done * page), (size_t)(k * page), vec) != 0)
            return shmb_error_record("mincore", errno, NULL);
        for (uint64_t i = 0; i < k; i++)
            *resident += vec[i] & 1;
        done += k;
    }
    *pages += n;
    return 0;
}

/* The first write of each fresh block, timed one by one; the pages already
 * in memory before it counted. */
static int time_touch(pool_run_t *a)
{
    int ret = 0;
    for (uint64_t i = 0; i < a->n && ret == 0; i++) {
        ret = count_resident(a->blocks[i], a->bytes, &a->touch_pages, &a->touch_resident);
        if (ret == 0)
            ret = shmb_alloc_touch(a->blocks[i], a->bytes, &a->touch_ns[i]);
    }
    return ret;
}

/* One timed batch of a round: step A_ALLOC, A_FREE, A_REUSE or
 * A_TOUCH_REUSE over the working set; ns per operation into batch[step][r]. */
static int pool_batch(pool_run_t *a, int step, uint64_t r, uint64_t span[2])
{
    const uint64_t w = a->n;
    shmb_alloc_pool_t *p = a->pool;
    int ret = 0;
    const uint64_t t0 = shmb_clock_now_ns();
    switch (step) {
    case A_FREE:
        ret = p->ops->free(p, a->blocks, a->handles, a->order, w);
        break;
    case A_TOUCH_REUSE: /* a purged block is faulted in again: guarded too */
        for (uint64_t i = 0; i < w && ret == 0; i++)
            ret = shmb_segment_first_write(a->blocks[i], a->bytes);
        break;
    default:
        ret = p->ops->alloc(p, a->bytes, a->blocks, a->handles, w);
        break;
    }
    const uint64_t t1 = shmb_clock_now_ns();
    a->batch[step][r] = (double)(t1 - t0) / (double)w;
    if (span) {
        span[0] = t0;
        span[1] = t1;
    }
    return ret;
}

/* Round 0's check of a pass ("alloc", "alloc_reuse") over the blocks of
 * every thread: blocks[t * per_thread ...] (and their handles) come from
 * pools[t]. */
static int check_pass(const shmb_alloc_run_t *run, shmb_alloc_pool_t *const *pools, void **blocks,
                      const void *handles, uint64_t per_thread, int threads, size_t bytes, const char *pass)
{
    if (run->hook && run->hook->check)
        run->hook->check(blocks, per_thread, threads, run->hook->arg);
    return shmb_alloc_pool_verify(pools, per_thread, blocks, handles, per_thread * (uint64_t)threads, bytes, pass,
                                  run->why, run->why_cap);
}

/* Round 0's check after the free batch: each of the n blocks freed once
 * (pools[0] when shared, else each thread's pool its own per_thread). */
static int check_freed(const shmb_alloc_run_t *run, shmb_alloc_pool_t *const *pools, uint64_t per_thread,
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

/* One round: alloc all, [verify, touch, lend], free in random order, alloc
 * again, [verify], [touch], empty the pool. */
static int pool_round(const shmb_alloc_run_t *run, pool_run_t *a, uint64_t r)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    int ret = pool_batch(a, A_ALLOC, r, NULL);
    if (ret == 0 && r == 0)
        ret = check_pass(run, &a->pool, a->blocks, a->handles, a->n, 1, a->bytes, "alloc");
    if (ret == 0 && r == 0 && cfg->touch)
        ret = time_touch(a);
    if (ret == 0 && r == 0 && a->lending)
        ret = shmb_alloc_pool_lend(a->pool, cfg->peer, a->lending, run->why, run->why_cap);
    if (ret == 0)
        ret = pool_batch(a, A_FREE, r, NULL);
    if (ret == 0 && r == 0)
        ret = check_freed(run, &a->pool, a->n, 1);
    if (ret == 0)
        ret = pool_batch(a, A_REUSE, r, NULL);
    if (ret == 0 && r == 0)
        ret = check_pass(run, &a->pool, a->blocks, a->handles, a->n, 1, a->bytes, "alloc_reuse");
    if (ret == 0 && cfg->touch)
        ret = pool_batch(a, A_TOUCH_REUSE, r, NULL);
    if (ret == 0)
        ret = a->pool->ops->empty(a->pool, a->blocks, a->handles, a->order, a->n);
    return ret;
}

/* What a pool run measured: samples of every step (ns per operation), and
 * with threads > 1 the summed wall time of each step's phases. */
typedef struct pool_figures {
    double *batch[A_COUNT]; /* nbatch samples each: one per round and thread */
    size_t nbatch;
    double *touch_ns;       /* ntouch samples: one per fresh block */
    size_t ntouch;
    uint64_t touch_pages, touch_resident; /* pages touched, and of those in memory before */
    double *register_ns;       /* nregister samples: one per pool created */
    size_t nregister;
    uint64_t ops;           /* operations of each batch step, all threads */
    int threads;
    double wall_ns[A_COUNT + 1]; /* per step, [A_COUNT]: touch; threads > 1 only */
    const shmb_alloc_lending_t *lending; /* NULL, or what the peer measured */
} pool_figures_t;

static int pool_rows(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t size_kb,
                     const pool_figures_t *f, shmb_rows_t *rows)
{
    static const char *steps[A_COUNT] = {"alloc", "free", "alloc_reuse", "touch_reuse"};
    shmb_row_t row = shmb_alloc_row(cfg, shmb_alloc_kind_name(kind), size_kb);
    row.threads = f->threads;
    if (f->threads > 1 && shmb_alloc_pool_ops(kind)->per_thread)
        snprintf(row.note, sizeof(row.note), "one %s per thread", shmb_alloc_kind_name(kind));
    int ret = shmb_alloc_push_step(rows, row, "register", f->register_ns, f->nregister, f->nregister);
    for (int k = 0; k < A_COUNT && ret == 0; k++) {
        if (k == A_TOUCH_REUSE && !cfg->touch)
            continue;
        ret = shmb_alloc_push_step(rows, row, steps[k], f->batch[k], f->nbatch, f->ops);
        if (ret == 0 && f->threads > 1)
            shmb_alloc_set_rate(rows, f->ops, f->wall_ns[k]);
        if (ret == 0 && k == A_ALLOC && cfg->touch) {
            shmb_row_t touch = row; /* its note says how first a touch it was, for every allocator */
            snprintf(touch.note, sizeof(touch.note), "%llu/%llu " SHMB_ALLOC_PAGES_BEFORE,
                     (unsigned long long)f->touch_resident, (unsigned long long)f->touch_pages);
            ret = shmb_alloc_push_step(rows, touch, "touch", f->touch_ns, f->ntouch, f->ntouch);
            if (ret == 0 && f->threads > 1)
                shmb_alloc_set_rate(rows, f->ntouch, f->wall_ns[A_COUNT]);
        }
    }
    const shmb_alloc_lending_t *l = f->lending;
    if (ret == 0 && l)
        ret = shmb_alloc_push_step(rows, row, "attach", l->attach_ns, l->nattach, l->nattach);
    if (ret == 0 && l)
        ret = shmb_alloc_push_step(rows, row, "translate", l->translate_ns, (size_t)l->rounds,
                                   l->rounds * l->n);
    return ret;
}

int shmb_alloc_pool_create(const shmb_alloc_config_t *cfg, shmb_alloc_pool_t *p, const shmb_alloc_pool_ops_t *ops,
                           size_t bytes, uint64_t blocks, double *register_ns)
{
    p->ops = ops;
    p->blocks = blocks;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = ops->create(p, cfg->shm_prefix, (size_t)ops->shm_bytes(bytes, blocks));
    *register_ns = (double)(shmb_clock_now_ns() - t0);
    return ret;
}

/* The free order of a working set: a permutation of 0..n fixed by seed. */
static void shuffled(uint64_t seed, uint64_t *order, uint64_t n)
{
    shmb_rng_t rng;
    shmb_rng_seed(&rng, seed);
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    shmb_rng_shuffle(&rng, order, (size_t)n);
}

static int pool_size_one(const shmb_alloc_run_t *run, shmb_alloc_kind_t kind, uint64_t size_kb)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kind);
    shmb_alloc_pool_t pool = {0};
    shmb_alloc_lending_t lending = {0};
    pool_run_t a = {.pool = &pool, .bytes = (size_t)size_kb * 1024,
                    .n = shmb_alloc_bench_working_set(cfg)};
    const uint64_t rounds = pool_rounds(cfg, a.n);
    const int peer = cfg->peer && ops->lend;
    a.touch_ns = calloc((size_t)a.n, sizeof(double));
    a.blocks = calloc((size_t)a.n, sizeof(*a.blocks));
    a.handles = calloc((size_t)a.n, ops->handle_bytes ? ops->handle_bytes : 1);
    a.order = calloc((size_t)a.n, sizeof(*a.order));
    if (peer) {
        lending = (shmb_alloc_lending_t){
            .blocks = a.blocks, .n = a.n, .bytes = a.bytes, .rounds = rounds,
            .tag_seed = cfg->seed ^ (size_kb << 32) ^ ((uint64_t)kind << 56) ^ (uint64_t)cfg->repetition,
            .translate_ns = calloc((size_t)rounds, sizeof(double))};
        a.lending = &lending;
    }
    int ret = a.touch_ns && a.blocks && a.handles && a.order && (lending.translate_ns || !peer) ? 0 : -ENOMEM;
    for (int k = 0; k < A_COUNT && ret == 0; k++)
        ret = (a.batch[k] = calloc((size_t)rounds, sizeof(double))) ? 0 : -ENOMEM;
    if (ret < 0) {
        shmb_error_record("malloc", ENOMEM, NULL);
        goto out_free;
    }
    shuffled(cfg->seed ^ size_kb, a.order, a.n);
    double register_ns;
    if ((ret = shmb_alloc_pool_create(cfg, &pool, ops, a.bytes, a.n, &register_ns)) < 0)
        goto out_free;
    for (uint64_t r = 0; r < rounds && ret == 0; r++)
        ret = pool_round(run, &a, r);
    int r = ops->destroy(&pool, ret < 0 || cfg->cleanup, run->kept);
    ret = ret < 0 ? ret : r;
    if (ret == 0) {
        pool_figures_t f = {.nbatch = (size_t)rounds, .touch_ns = a.touch_ns, .ntouch = (size_t)a.n,
                            .touch_pages = a.touch_pages, .touch_resident = a.touch_resident,
                            .register_ns = &register_ns, .nregister = 1, .ops = rounds * a.n, .threads = 1,
                            .lending = a.lending};
        memcpy(f.batch, a.batch, sizeof(f.batch));
        ret = pool_rows(cfg, kind, size_kb, &f, run->rows);
    }

out_free:
    for (int k = 0; k < A_COUNT; k++)
        free(a.batch[k]);
    free(a.touch_ns);
    free(a.blocks);
    free(a.handles);
    free(a.order);
    free(lending.attach_ns);
    free(lending.translate_ns);
    return ret;
}

/* ---- pools: several threads at once ---- */

/* Every batch of every round is a phase; round 0's blocks of all threads
 * are checked together by thread 0 between phases. */
typedef struct pool_crew {
    const shmb_alloc_run_t *run;
    shmb_alloc_pool_t **pools; /* thread t's pool */
    pool_run_t *runs;          /* thread t's working set and samples */
    uint64_t rounds;
    uint64_t *start, *end;     /* phase clocks: [(step * rounds + r) * threads + t]; step A_COUNT: touch */
} pool_crew_t;

/* Thread `me`'s phases of round r. */
static void pool_member_round(shmb_crew_t *crew, int me, pool_crew_t *c, uint64_t r)
{
    static const char *passes[A_COUNT] = {"alloc", "free", "alloc_reuse", NULL};
    const shmb_alloc_config_t *cfg = c->run->cfg;
    pool_run_t *a = &c->runs[me];
    const int threads = shmb_crew_threads(crew);
    int ret;
    for (int step = 0; step < A_COUNT; step++) {
        if (step == A_TOUCH_REUSE && !cfg->touch)
            continue;
        const uint64_t at = ((uint64_t)step * c->rounds + r) * (uint64_t)threads + (uint64_t)me;
        if (shmb_crew_sync(crew)) {
            uint64_t span[2];
            if ((ret = pool_batch(a, step, r, span)) < 0)
                shmb_crew_fail(crew, me, ret);
            c->start[at] = span[0];
            c->end[at] = span[1];
        }
        if (r == 0 && passes[step] && shmb_crew_sync(crew) && me == 0 &&
            (ret = step == A_FREE ? check_freed(c->run, c->pools, a->n, threads)
                                  : check_pass(c->run, c->pools, c->runs[0].blocks, c->runs[0].handles, a->n,
                                               threads, a->bytes, passes[step])) < 0)
            shmb_crew_fail(crew, me, ret);
        if (r == 0 && step == A_ALLOC && cfg->touch && shmb_crew_sync(crew)) {
            const uint64_t touch_at = (uint64_t)A_COUNT * c->rounds * (uint64_t)threads + (uint64_t)me;
            c->start[touch_at] = shmb_clock_now_ns();
            if ((ret = time_touch(a)) < 0)
                shmb_crew_fail(crew, me, ret);
            c->end[touch_at] = shmb_clock_now_ns();
        }
    }
    /* a barrier first: thread 0 may still be checking round 0's blocks, and
     * an allocator's own check (offset's) reads which blocks are live */
    if (shmb_crew_sync(crew) && (ret = a->pool->ops->empty(a->pool, a->blocks, a->handles, a->order, a->n)) < 0)
        shmb_crew_fail(crew, me, ret);
}

static void pool_member(shmb_crew_t *crew, int me, void *arg)
{
    pool_crew_t *c = arg;
    pool_run_t *a = &c->runs[me];
    int ret;
    if (a->pool->ops->thread_start && (ret = a->pool->ops->thread_start(a->pool, a->bytes)) < 0)
        shmb_crew_fail(crew, me, ret);
    for (uint64_t r = 0; r < c->rounds; r++)
        pool_member_round(crew, me, c, r);
}

/* The arrays of a threaded pool run: thread t's share of each is [t * n ...). */
typedef struct pool_store {
    shmb_alloc_pool_t *pools;  /* npools */
    shmb_alloc_pool_t **of;    /* thread t's pool */
    pool_run_t *runs;
    void **blocks;
    char *handles;
    uint64_t *order;
    double *touch_ns, *register_ns;
    uint64_t *start, *end;
    double *batch[A_COUNT];
} pool_store_t;

static int store_alloc(pool_store_t *s, int threads, int npools, uint64_t n, uint64_t rounds, size_t handle_bytes)
{
    const size_t per_all = (size_t)n * (size_t)threads, clocks = (size_t)(A_COUNT + 1) * rounds * threads;
    s->pools = calloc((size_t)npools, sizeof(*s->pools));
    s->of = calloc((size_t)threads, sizeof(*s->of));
    s->runs = calloc((size_t)threads, sizeof(*s->runs));
    s->blocks = calloc(per_all, sizeof(*s->blocks));
    s->handles = calloc(per_all, handle_bytes ? handle_bytes : 1);
    s->order = calloc(per_all, sizeof(*s->order));
    s->touch_ns = calloc(per_all, sizeof(double));
    s->register_ns = calloc((size_t)npools, sizeof(double));
    s->start = calloc(clocks, sizeof(uint64_t));
    s->end = calloc(clocks, sizeof(uint64_t));
    int ok = s->pools && s->of && s->runs && s->blocks && s->handles && s->order && s->touch_ns && s->register_ns && s->start &&
             s->end;
    for (int k = 0; k < A_COUNT && ok; k++)
        ok = (s->batch[k] = calloc((size_t)rounds * (size_t)threads, sizeof(double))) != NULL;
    return ok ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
}

static void store_free(pool_store_t *s)
{
    for (int k = 0; k < A_COUNT; k++)
        free(s->batch[k]);
    free(s->pools);
    free(s->of);
    free(s->runs);
    free(s->blocks);
    free(s->handles);
    free(s->order);
    free(s->touch_ns);
    free(s->register_ns);
    free(s->start);
    free(s->end);
}

/* Thread t's working set, samples and free order. */
static void assign(const shmb_alloc_config_t *cfg, pool_store_t *s, int t, int per_thread, uint64_t n,
                   uint64_t rounds, uint64_t size_kb)
{
    pool_run_t *a = &s->runs[t];
    s->of[t] = &s->pools[per_thread ? t : 0];
    a->pool = s->of[t];
    a->blocks = s->blocks + (size_t)t * n;
    a->handles = s->handles + (size_t)t * n * a->pool->ops->handle_bytes;
    a->order = s->order + (size_t)t * n;
    a->touch_ns = s->touch_ns + (size_t)t * n;
    a->n = n;
    a->bytes = (size_t)size_kb * 1024;
    for (int k = 0; k < A_COUNT; k++)
        a->batch[k] = s->batch[k] + (size_t)t * rounds;
    shuffled(cfg->seed ^ size_kb ^ ((uint64_t)t << 40), a->order, n);
}

static int pool_size_threads(const shmb_alloc_run_t *run, shmb_alloc_kind_t kind, uint64_t size_kb)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kind);
    const int threads = cfg->threads, npools = ops->per_thread ? threads : 1;
    const uint64_t n = shmb_alloc_bench_working_set(cfg), rounds = pool_rounds(cfg, n);
    const size_t per_all = (size_t)n * (size_t)threads, phase = (size_t)rounds * (size_t)threads;
    pool_store_t s = {0};
    int ret = store_alloc(&s, threads, npools, n, rounds, ops->handle_bytes), created = 0;
    for (; created < npools && ret == 0; created++)
        ret = shmb_alloc_pool_create(cfg, &s.pools[created], ops, (size_t)size_kb * 1024,
                          ops->per_thread ? n : n * (uint64_t)threads, &s.register_ns[created]);
    if (ret < 0 && created > 0)
        created--;
    for (int t = 0; t < threads && ret == 0; t++)
        assign(cfg, &s, t, ops->per_thread, n, rounds, size_kb);
    pool_crew_t c = {.run = run, .pools = s.of, .runs = s.runs, .rounds = rounds, .start = s.start,
                     .end = s.end};
    shmb_crew_t *crew = NULL;
    if (ret == 0 && (ret = shmb_alloc_crew_start(cfg, &crew)) == 0)
        ret = shmb_crew_run(crew, pool_member, &c);
    shmb_crew_stop(crew);
    for (int p = 0; p < created; p++) {
        int r = ops->destroy(&s.pools[p], ret < 0 || cfg->cleanup, run->kept);
        ret = ret < 0 ? ret : r;
    }
    if (ret == 0) {
        pool_figures_t f = {.nbatch = phase, .touch_ns = s.touch_ns, .ntouch = per_all, .register_ns = s.register_ns,
                            .nregister = (size_t)npools, .ops = rounds * per_all, .threads = threads};
        memcpy(f.batch, s.batch, sizeof(f.batch));
        for (int t = 0; t < threads; t++) {
            f.touch_pages += s.runs[t].touch_pages;
            f.touch_resident += s.runs[t].touch_resident;
        }
        for (int k = 0; k <= A_COUNT; k++)
            f.wall_ns[k] = shmb_crew_wall_ns(s.start + (size_t)k * phase, s.end + (size_t)k * phase,
                                             k < A_COUNT ? rounds : 1, threads);
        ret = pool_rows(cfg, kind, size_kb, &f, run->rows);
    }
    store_free(&s);
    return ret;
}

int shmb_alloc_pool_size(const shmb_alloc_run_t *run, shmb_alloc_kind_t kind, uint64_t size_kb)
{
    if (run->cfg->threads > 1)
        return pool_size_threads(run, kind, size_kb);
    return pool_size_one(run, kind, size_kb);
}

/* ---- pools: a paired run ---- */

typedef struct paired_pools {
    const shmb_alloc_run_t *run;
    pool_run_t *a;   /* system s's pool, working set and samples */
    uint64_t *next;  /* system s's next round */
} paired_pools_t;

/* System `which` runs its next round; *ns its alloc batch (the other steps
 * land in its samples through pool_round). */
static int paired_slice(void *ctx, size_t which, double *ns)
{
    paired_pools_t *c = ctx;
    pool_run_t *a = &c->a[which];
    const uint64_t r = c->next[which]++;
    int ret = pool_round(c->run, a, r);
    *ns = a->batch[A_ALLOC][r];
    return ret;
}

int shmb_alloc_pool_paired(const shmb_alloc_run_t *run, const shmb_alloc_kind_t *kinds, size_t nsys,
                           uint64_t size_kb, uint64_t rounds, double *const *const ns[SHMB_ALLOC_BLOCK_STEPS])
{
    const shmb_alloc_config_t *cfg = run->cfg;
    if (nsys == 0 || nsys > SHMB_PAIRED_MAX_SYSTEMS || rounds == 0)
        return -EINVAL;
    const uint64_t n = shmb_alloc_bench_working_set(cfg);
    shmb_alloc_pool_t pools[SHMB_PAIRED_MAX_SYSTEMS];
    pool_run_t a[SHMB_PAIRED_MAX_SYSTEMS];
    uint64_t next[SHMB_PAIRED_MAX_SYSTEMS] = {0};
    double *alloc_ns[SHMB_PAIRED_MAX_SYSTEMS];
    memset(pools, 0, sizeof(pools));
    memset(a, 0, sizeof(a));
    void **blocks = calloc((size_t)n * nsys, sizeof(*blocks));
    void *handles[SHMB_PAIRED_MAX_SYSTEMS] = {NULL};
    uint64_t *order = calloc((size_t)n, sizeof(*order));
    int ret = blocks && order ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t s = 0; s < nsys && ret == 0; s++) {
        const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kinds[s]);
        if (!ops)
            ret = -EINVAL;
        else if (ops->handle_bytes && !(handles[s] = calloc((size_t)n, ops->handle_bytes)))
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    if (ret == 0)
        shuffled(cfg->seed ^ size_kb, order, n); /* one free order for every system */
    size_t created = 0;
    for (; created < nsys && ret == 0; created++) {
        pool_run_t *p = &a[created];
        *p = (pool_run_t){.pool = &pools[created], .blocks = blocks + (size_t)n * created,
                          .handles = handles[created], .order = order, .n = n, .bytes = (size_t)size_kb * 1024};
        for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS; k++)
            p->batch[k] = ns[k][created];
        alloc_ns[created] = ns[A_ALLOC][created];
        double register_ns; /* register is its own question: shmb_alloc_posix_register's rounds */
        if ((ret = shmb_alloc_pool_create(cfg, &pools[created], shmb_alloc_pool_ops(kinds[created]), p->bytes, n,
                                          &register_ns)) < 0)
            break;
    }
    paired_pools_t c = {.run = run, .a = a, .next = next};
    if (ret == 0)
        ret = shmb_paired_run(nsys, (size_t)rounds, paired_slice, &c, alloc_ns);
    uint64_t kept = 0; /* none: every pool is unlinked */
    for (size_t s = 0; s < created; s++) {
        int r = pools[s].ops->destroy(&pools[s], 1, &kept);
        ret = ret < 0 ? ret : r;
    }
    for (size_t s = 0; s < nsys; s++)
        free(handles[s]);
    free(blocks);
    free(order);
    return ret;
}
