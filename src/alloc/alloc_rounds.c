/* alloc_rounds: a pool's rows at one size, its rounds on one thread or a lockstep crew, and
 * round 0's blocks lent to a peer (docs/allocation.md). */
#include "alloc_internal.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hands round 0's blocks to the peer: each tagged (untimed) with
 * shmb_alloc_peer_tag(tag_seed, i), its handle sent; the peer attaches the
 * pools it needs (attach_ns, malloc'ed here), checks every tag and times
 * `rounds` batches of translations (translate_ns). */
typedef struct lending {
    uint64_t tag_seed, rounds;
    double *attach_ns;
    size_t nattach;
    double *translate_ns;
} lending_t;

static int pool_lend(void *arg, shmb_alloc_round_t *a)
{
    lending_t *l = arg;
    const shmb_alloc_run_t *run = a->run;
    shmb_alloc_pool_t *p = a->pool;
    shmb_lookup_request_t *handles = malloc((size_t)a->n * sizeof(*handles));
    shmb_fipc_pool_t *list = NULL;
    size_t npools = 0;
    int ret = handles ? p->ops->lend(p, &list, &npools) : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < a->n && ret == 0; i++) {
        ret = p->ops->handle(p, a->blocks[i], a->bytes, &handles[i]);
        if (ret == 0)
            ret = shmb_alloc_write_tag(a->blocks[i], shmb_alloc_peer_tag(l->tag_seed, i));
    }
    if (ret == 0 && !(l->attach_ns = calloc(npools ? npools : 1, sizeof(double))))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0) {
        const shmb_alloc_peer_pools_t in = {
            .kind = (shmb_alloc_peer_pool_kind_t)p->ops->peer_kind, .pools = list, .npools = npools,
            .handles = handles, .n = a->n, .seed = l->tag_seed, .rounds = l->rounds};
        ret = shmb_alloc_peer_pools(run->cfg->peer, &in, l->attach_ns, npools, &l->nattach, l->translate_ns,
                                    run->why, run->why_cap);
    }
    free(list);
    free(handles);
    return ret;
}

/* What a pool run measured: samples of every step (ns per operation), and
 * with threads > 1 the summed wall time of each step's phases. */
typedef struct pool_figures {
    double *batch[SHMB_ALLOC_STEPS]; /* nbatch samples each: one per round and thread */
    size_t nbatch;
    double *touch_ns;       /* ntouch samples: one per fresh block */
    size_t ntouch;
    uint64_t touch_pages, touch_resident; /* pages touched, and of those in memory before */
    double *register_ns;       /* nregister samples: one per pool created */
    size_t nregister;
    uint64_t ops;           /* operations of each batch step, all threads */
    int threads;
    double wall_ns[SHMB_ALLOC_STEPS + 1]; /* per step, [SHMB_ALLOC_STEPS]: touch; threads > 1 only */
    const lending_t *lending; /* NULL, or what the peer measured (one thread) */
} pool_figures_t;

static int pool_rows(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t size_kb,
                     const pool_figures_t *f, shmb_rows_t *rows)
{
    static const char *steps[SHMB_ALLOC_STEPS] = {"alloc", "free", "alloc_reuse", "touch_reuse"};
    shmb_row_t row = shmb_alloc_row(cfg, shmb_alloc_kind_name(kind), size_kb);
    row.threads = f->threads;
    if (f->threads > 1 && shmb_alloc_pool_ops(kind)->per_thread)
        snprintf(row.note, sizeof(row.note), "one %s per thread", shmb_alloc_kind_name(kind));
    int ret = shmb_alloc_push_step(rows, row, "register", f->register_ns, f->nregister, f->nregister);
    for (int k = 0; k < SHMB_ALLOC_STEPS && ret == 0; k++) {
        if (k == SHMB_ALLOC_TOUCH_REUSE && !cfg->touch)
            continue;
        ret = shmb_alloc_push_step(rows, row, steps[k], f->batch[k], f->nbatch, f->ops);
        if (ret == 0 && f->threads > 1)
            shmb_alloc_set_rate(rows, f->ops, f->wall_ns[k]);
        if (ret == 0 && k == SHMB_ALLOC_ALLOC && cfg->touch) {
            shmb_row_t touch = row; /* its note says how first a touch it was, for every allocator */
            snprintf(touch.note, sizeof(touch.note), "%llu/%llu " SHMB_ALLOC_PAGES_BEFORE,
                     (unsigned long long)f->touch_resident, (unsigned long long)f->touch_pages);
            ret = shmb_alloc_push_step(rows, touch, "touch", f->touch_ns, f->ntouch, f->ntouch);
            if (ret == 0 && f->threads > 1)
                shmb_alloc_set_rate(rows, f->ntouch, f->wall_ns[SHMB_ALLOC_STEPS]);
        }
    }
    const lending_t *l = f->lending;
    if (ret == 0 && l)
        ret = shmb_alloc_push_step(rows, row, "attach", l->attach_ns, l->nattach, l->nattach);
    if (ret == 0 && l)
        ret = shmb_alloc_push_step(rows, row, "translate", l->translate_ns, (size_t)l->rounds, f->ops);
    return ret;
}

/* Several threads: every batch of every round is a phase; round 0's blocks of all threads
 * are checked together by thread 0 between phases. */
typedef struct pool_crew {
    const shmb_alloc_run_t *run;
    shmb_alloc_pool_t **pools; /* thread t's pool */
    shmb_alloc_round_t *runs;          /* thread t's working set and samples */
    uint64_t rounds;
    uint64_t *start, *end;     /* phase clocks: [(step * rounds + r) * threads + t]; step SHMB_ALLOC_STEPS: touch */
} pool_crew_t;

/* Thread `me`'s phases of round r. */
static void pool_member_round(shmb_crew_t *crew, int me, pool_crew_t *c, uint64_t r)
{
    static const char *passes[SHMB_ALLOC_STEPS] = {"alloc", "free", "alloc_reuse", NULL};
    const shmb_alloc_config_t *cfg = c->run->cfg;
    shmb_alloc_round_t *a = &c->runs[me];
    const int threads = shmb_crew_threads(crew);
    int ret;
    for (int step = 0; step < SHMB_ALLOC_STEPS; step++) {
        if (step == SHMB_ALLOC_TOUCH_REUSE && !cfg->touch)
            continue;
        const uint64_t at = ((uint64_t)step * c->rounds + r) * (uint64_t)threads + (uint64_t)me;
        if (shmb_crew_sync(crew)) {
            uint64_t span[2];
            if ((ret = shmb_alloc_round_batch(a, step, r, span)) < 0)
                shmb_crew_fail(crew, me, ret);
            c->start[at] = span[0];
            c->end[at] = span[1];
        }
        if (r == 0 && passes[step] && shmb_crew_sync(crew) && me == 0 &&
            (ret = step == SHMB_ALLOC_FREE
                       ? shmb_alloc_round_freed(c->run, c->pools, a->n, threads)
                       : shmb_alloc_round_check(c->run, c->pools, c->runs[0].blocks, c->runs[0].handles, a->n,
                                                threads, a->bytes, passes[step])) < 0)
            shmb_crew_fail(crew, me, ret);
        if (r == 0 && step == SHMB_ALLOC_ALLOC && cfg->touch && shmb_crew_sync(crew)) {
            const uint64_t touch_at = (uint64_t)SHMB_ALLOC_STEPS * c->rounds * (uint64_t)threads + (uint64_t)me;
            c->start[touch_at] = shmb_clock_now_ns();
            if ((ret = shmb_alloc_round_touch(a)) < 0)
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
    shmb_alloc_round_t *a = &c->runs[me];
    int ret;
    if (a->pool->ops->thread_start && (ret = a->pool->ops->thread_start(a->pool, a->bytes)) < 0)
        shmb_crew_fail(crew, me, ret);
    for (uint64_t r = 0; r < c->rounds; r++)
        pool_member_round(crew, me, c, r);
}

/* The arrays of a pool run: thread t's share of each is [t * n ...). */
typedef struct pool_store {
    shmb_alloc_pool_t *pools;  /* npools */
    shmb_alloc_pool_t **of;    /* thread t's pool */
    shmb_alloc_round_t *runs;
    void **blocks;
    char *handles;
    uint64_t *order;
    double *touch_ns, *register_ns;
    uint64_t *start, *end;
    double *batch[SHMB_ALLOC_STEPS];
    void *mem[10 + SHMB_ALLOC_STEPS]; /* every array above, for store_free */
    int nmem, failed;
} pool_store_t;

/* A zeroed array of n (>= 1) items, freed by store_free. */
static void *take(pool_store_t *s, size_t n, size_t size)
{
    void *p = s->mem[s->nmem++] = calloc(n ? n : 1, size ? size : 1);
    s->failed |= p == NULL;
    return p;
}

static int store_alloc(pool_store_t *s, int threads, int npools, uint64_t n, uint64_t rounds, size_t handle_bytes)
{
    const size_t per_all = (size_t)n * (size_t)threads, clocks = (size_t)(SHMB_ALLOC_STEPS + 1) * rounds * threads;
    s->pools = take(s, (size_t)npools, sizeof(*s->pools));
    s->of = take(s, (size_t)threads, sizeof(*s->of));
    s->runs = take(s, (size_t)threads, sizeof(*s->runs));
    s->blocks = take(s, per_all, sizeof(*s->blocks));
    s->handles = take(s, per_all, handle_bytes);
    s->order = take(s, per_all, sizeof(*s->order));
    s->touch_ns = take(s, per_all, sizeof(double));
    s->register_ns = take(s, (size_t)npools, sizeof(double));
    s->start = take(s, clocks, sizeof(uint64_t));
    s->end = take(s, clocks, sizeof(uint64_t));
    for (int k = 0; k < SHMB_ALLOC_STEPS; k++)
        s->batch[k] = take(s, (size_t)rounds * (size_t)threads, sizeof(double));
    return s->failed ? shmb_error_record("malloc", ENOMEM, NULL) : 0;
}

static void store_free(pool_store_t *s)
{
    for (int i = 0; i < s->nmem; i++)
        free(s->mem[i]);
}

/* Thread t's working set, samples and free order. */
static void assign(const shmb_alloc_config_t *cfg, pool_store_t *s, int t, int per_thread, uint64_t n,
                   uint64_t rounds, uint64_t size_kb)
{
    shmb_alloc_round_t *a = &s->runs[t];
    s->of[t] = &s->pools[per_thread ? t : 0];
    a->pool = s->of[t];
    a->blocks = s->blocks + (size_t)t * n;
    a->handles = s->handles + (size_t)t * n * a->pool->ops->handle_bytes;
    a->order = s->order + (size_t)t * n;
    a->touch_ns = s->touch_ns + (size_t)t * n;
    a->n = n;
    a->bytes = (size_t)size_kb * 1024;
    for (int k = 0; k < SHMB_ALLOC_STEPS; k++)
        a->batch[k] = s->batch[k] + (size_t)t * rounds;
    shmb_alloc_shuffle(cfg->seed ^ size_kb ^ ((uint64_t)t << 40), a->order, n);
}

int shmb_alloc_pool_size(const shmb_alloc_run_t *run, shmb_alloc_kind_t kind, uint64_t size_kb)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kind);
    const int threads = cfg->threads > 1 ? cfg->threads : 1, npools = ops->per_thread ? threads : 1;
    const uint64_t n = shmb_alloc_bench_working_set(cfg), rounds = shmb_alloc_rounds(cfg);
    const size_t per_all = (size_t)n * (size_t)threads, phase = (size_t)rounds * (size_t)threads;
    const int peer = cfg->peer && ops->lend; /* one thread only */
    lending_t lending = {
        .rounds = rounds, .tag_seed = cfg->seed ^ (size_kb << 32) ^ ((uint64_t)kind << 56) ^ (uint64_t)cfg->repetition};
    pool_store_t s = {0};
    int ret = store_alloc(&s, threads, npools, n, rounds, ops->handle_bytes), created = 0;
    if (ret == 0 && peer && !(lending.translate_ns = calloc((size_t)rounds, sizeof(double))))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
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
    if (ret == 0 && threads == 1) {
        s.runs[0].lend = peer ? pool_lend : NULL;
        s.runs[0].lend_arg = &lending;
        ret = shmb_alloc_round_run(run, &s.runs[0], 0, rounds);
    }
    else if (ret == 0 && (ret = shmb_alloc_crew_start(cfg, &crew)) == 0)
        ret = shmb_crew_run(crew, pool_member, &c);
    shmb_crew_stop(crew);
    for (int p = 0; p < created; p++) {
        int r = ops->destroy(&s.pools[p], ret < 0 || cfg->cleanup, run->kept);
        ret = ret < 0 ? ret : r;
    }
    if (ret == 0) {
        pool_figures_t f = {.nbatch = phase, .touch_ns = s.touch_ns, .ntouch = per_all, .register_ns = s.register_ns,
                            .nregister = (size_t)npools, .ops = rounds * per_all, .threads = threads,
                            .lending = peer ? &lending : NULL};
        memcpy(f.batch, s.batch, sizeof(f.batch));
        for (int t = 0; t < threads; t++) {
            f.touch_pages += s.runs[t].touch_pages;
            f.touch_resident += s.runs[t].touch_resident;
        }
        for (int k = 0; k <= SHMB_ALLOC_STEPS && threads > 1; k++)
            f.wall_ns[k] = shmb_crew_wall_ns(s.start + (size_t)k * phase, s.end + (size_t)k * phase,
                                             k < SHMB_ALLOC_STEPS ? rounds : 1, threads);
        ret = pool_rows(cfg, kind, size_kb, &f, run->rows);
    }
    store_free(&s);
    free(lending.attach_ns);
    free(lending.translate_ns);
    return ret;
}
