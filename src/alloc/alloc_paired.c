/* alloc_paired: a paired run (--systems): per size, each question's systems round by round in
 * shmbench/paired.h's order, then their rows; the control is a second baseline instance. */
#include "alloc_internal.h"

#include "shmbench/error.h"
#include "shmbench/paired.h"
#include "shmbench/upstream.h"
#include "shmbench/upstream_flowipc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int shmb_alloc_paired_ok(const shmb_alloc_config_t *cfg)
{
    if (cfg->nsystems < 2 || cfg->nsystems > SHMB_PAIRED_MAX_SYSTEMS)
        return 0;
    for (size_t s = 0; s < cfg->nsystems; s++) {
        const int upstream = shmb_system_is_upstream(cfg->systems[s]);
        const int built = cfg->systems[s] == (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM ? shmb_upstream_available()
                          : cfg->systems[s] == (int)SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM
                              ? shmb_upstream_flowipc_available() && cfg->systems[0] == SHMB_SYSTEM_FLOWIPC_CLASSIC
                              : 0; /* flowipc_jemalloc_upstream: no allocator rows */
        if (upstream && (s == 0 || s + 1 == cfg->nsystems || !built))
            return 0; /* neither the baseline nor its control, and only where it was built (Flow-IPC's: beside its model) */
        if (cfg->systems[s] < 0 || (cfg->systems[s] >= SHMB_SYSTEMS && !upstream) || !cfg->system_names[s])
            return 0;
    }
    return cfg->threads <= 1 && !cfg->peer && !cfg->touch && !cfg->measure_mmap_only && !cfg->system_rows &&
           cfg->cleanup && shmb_alloc_counts_ok(cfg);
}

typedef struct paired_register {
    const shmb_alloc_config_t *cfg;
    const shmb_alloc_pool_ops_t **ops; /* what registers system s's memory (NULL: posix) */
    size_t bytes;
    uint64_t buffers;
} paired_register_t;

/* One deployment registration of system `which`, timed as its --system
 * register row times it, then undone untimed. */
static int register_slice(void *ctx, size_t which, double *ns)
{
    const paired_register_t *c = ctx;
    return shmb_alloc_register_total(c->cfg, c->ops[which], c->bytes, c->buffers, ns);
}

/* One question's rows: the --system row's name (step, size_kb, and
 * buffers:N when given) per system and per ratio; ops = operations one
 * sample stands for. */
static int push_question(const shmb_alloc_config_t *cfg, shmb_rows_t *rows, uint64_t size_kb, uint64_t buffers,
                         const char *step, double *const *samples, uint64_t rounds, uint64_t ops)
{
    shmb_row_t tmpl = shmb_alloc_row(cfg, "", size_kb);
    snprintf(tmpl.step, sizeof(tmpl.step), "%s", step);
    if (buffers)
        shmb_alloc_register_name(&tmpl, size_kb, buffers);
    tmpl.iterations = ops;
    size_t first;
    return shmb_paired_push_rows(rows, &tmpl, cfg->system_names, cfg->nsystems, samples, (size_t)rounds, &first);
}

/* The doubles a size's samples take at most: every system's rounds of every question. */
static size_t store_doubles(size_t nsys, const uint64_t reg_rounds[SHMB_ALLOC_REGISTER_COUNTS],
                            uint64_t block_rounds)
{
    size_t per = 2 * SHMB_ALLOC_BLOCK_STEPS * (size_t)block_rounds;
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++)
        per += (size_t)reg_rounds[i];
    return nsys * per;
}

typedef struct paired_pools {
    const shmb_alloc_run_t *run;
    shmb_alloc_round_t *a;   /* system s's pool, working set and samples */
    uint64_t *next;  /* system s's next round */
} paired_pools_t;

/* System `which` runs its next round; *ns its alloc batch (the other steps
 * land in its samples). */
static int paired_slice(void *ctx, size_t which, double *ns)
{
    paired_pools_t *c = ctx;
    shmb_alloc_round_t *a = &c->a[which];
    const uint64_t r = c->next[which]++;
    const int ret = shmb_alloc_round_run(c->run, a, r, 1);
    *ns = a->batch[SHMB_ALLOC_ALLOC][r];
    return ret;
}

/* The blocks' question at one size (one thread): a pool of kinds[s] per
 * system, the same working set, block size and free order; each round every
 * pool runs one round, round 0's blocks checked. ns[k][s][r]: step k's ns
 * per operation of system s in round r. Every pool is unlinked before it
 * returns. 0, -EINVAL, -errno or -EPROTO. */
static int pool_paired(const shmb_alloc_run_t *run, const shmb_alloc_kind_t *kinds, size_t nsys, uint64_t size_kb,
                       uint64_t rounds, double *const *const ns[SHMB_ALLOC_BLOCK_STEPS])
{
    const shmb_alloc_config_t *cfg = run->cfg;
    if (nsys == 0 || nsys > SHMB_PAIRED_MAX_SYSTEMS || rounds == 0)
        return -EINVAL;
    const uint64_t n = shmb_alloc_bench_working_set(cfg);
    shmb_alloc_pool_t pools[SHMB_PAIRED_MAX_SYSTEMS];
    shmb_alloc_round_t a[SHMB_PAIRED_MAX_SYSTEMS];
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
        shmb_alloc_shuffle(cfg->seed ^ size_kb, order, n); /* one free order for every system */
    size_t created = 0;
    for (; created < nsys && ret == 0; created++) {
        shmb_alloc_round_t *p = &a[created];
        *p = (shmb_alloc_round_t){.pool = &pools[created], .blocks = blocks + (size_t)n * created,
                          .handles = handles[created], .order = order, .n = n, .bytes = (size_t)size_kb * 1024};
        for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS; k++)
            p->batch[k] = ns[k][created];
        alloc_ns[created] = ns[SHMB_ALLOC_ALLOC][created];
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

/* The systems that answer a question: all for the bare allocator's (model 0), those with a
 * model of their own for register and the object layer. The question's config into *q; how many. */
static size_t question_systems(const shmb_alloc_config_t *cfg, int model, shmb_alloc_config_t *q)
{
    *q = *cfg;
    size_t m = 0;
    for (size_t s = 0; s < cfg->nsystems; s++) {
        if (model && shmb_system_is_upstream(cfg->systems[s]))
            continue;
        q->systems[m] = cfg->systems[s];
        q->system_names[m++] = cfg->system_names[s];
    }
    q->nsystems = m;
    return m;
}

/* Every question of one size measured, then its rows pushed (none on
 * error): register per N, the object layer's alloc, free, alloc_reuse,
 * the bare allocator's alloc_bare, free_bare (its alloc_reuse is measured
 * in its rounds, not reported). */
static int paired_size(const shmb_alloc_run_t *run, uint64_t size_kb, double *store,
                       const uint64_t reg_rounds[SHMB_ALLOC_REGISTER_COUNTS], uint64_t block_rounds)
{
    static const char *const steps[2][SHMB_ALLOC_BLOCK_STEPS] = {{"alloc", "free", "alloc_reuse"},
                                                                 {"alloc_bare", "free_bare", NULL}};
    shmb_alloc_config_t q[2]; /* [0]: the models' questions (register, object layer), [1]: the bare */
    size_t nq[2];
    for (int l = 0; l < 2; l++)
        nq[l] = question_systems(run->cfg, l == 0, &q[l]);
    const shmb_alloc_pool_ops_t *reg_ops[SHMB_PAIRED_MAX_SYSTEMS];
    shmb_alloc_kind_t kinds[2][SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < nq[0]; s++) {
        reg_ops[s] = shmb_alloc_pool_ops(shmb_alloc_system_layers[q[0].systems[s]].reg);
        kinds[0][s] = shmb_alloc_system_layers[q[0].systems[s]].object;
    }
    for (size_t s = 0; s < nq[1]; s++)
        kinds[1][s] = q[1].systems[s] == (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM ? SHMB_ALLOC_UPSTREAM_BARE
                      : q[1].systems[s] == (int)SHMB_SYSTEM_FLOWIPC_CLASSIC_UPSTREAM
                          ? SHMB_ALLOC_UPSTREAM_CLASSIC_BARE
                          : shmb_alloc_system_layers[q[1].systems[s]].bare;
    /* each question's samples, by its own systems, carved from the store */
    double *reg[SHMB_ALLOC_REGISTER_COUNTS][SHMB_PAIRED_MAX_SYSTEMS];
    double *blk[2][SHMB_ALLOC_BLOCK_STEPS][SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < nq[0]; s++)
        for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++) {
            reg[i][s] = store;
            store += reg_rounds[i];
        }
    for (int l = 0; l < 2; l++)
        for (size_t s = 0; s < nq[l]; s++)
            for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS; k++) {
                blk[l][k][s] = store;
                store += block_rounds;
            }
    int ret = 0;
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS && ret == 0; i++) {
        paired_register_t rc = {.cfg = &q[0], .ops = reg_ops, .bytes = (size_t)size_kb * 1024,
                                .buffers = shmb_alloc_register_buffers[i]};
        ret = shmb_paired_run(nq[0], (size_t)reg_rounds[i], register_slice, &rc, reg[i]);
    }
    for (int l = 0; l < 2 && ret == 0; l++) {
        double *const *by_step[SHMB_ALLOC_BLOCK_STEPS] = {blk[l][0], blk[l][1], blk[l][2]};
        const shmb_alloc_run_t qrun = {.cfg = &q[l], .hook = run->hook, .rows = run->rows, .kept = run->kept,
                                       .why = run->why, .why_cap = run->why_cap};
        ret = pool_paired(&qrun, kinds[l], nq[l], size_kb, block_rounds, by_step);
    }
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS && ret == 0; i++)
        ret = push_question(&q[0], run->rows, size_kb, shmb_alloc_register_buffers[i], "register", reg[i],
                            reg_rounds[i], 1);
    const uint64_t n = shmb_alloc_bench_working_set(run->cfg);
    for (int l = 0; l < 2 && ret == 0; l++)
        for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS && ret == 0; k++)
            if (steps[l][k])
                ret = push_question(&q[l], run->rows, size_kb, 0, steps[l][k], blk[l][k], block_rounds, n);
    return ret;
}

int shmb_alloc_paired_run(const shmb_alloc_run_t *run)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES], reg_rounds[SHMB_ALLOC_REGISTER_COUNTS], block_rounds;
    const int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    if (nsizes < 0 || !shmb_alloc_paired_ok(cfg))
        return -EINVAL;
    shmb_alloc_bench_paired_rounds(cfg, &block_rounds, reg_rounds);
    double *store = calloc(store_doubles(cfg->nsystems, reg_rounds, block_rounds), sizeof(double));
    if (!store)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    shmb_progress_plan(cfg->progress, (uint64_t)nsizes);
    for (int i = 0; i < nsizes && ret == 0; i++) {
        char label[64];
        snprintf(label, sizeof(label), "paired %llu KB", (unsigned long long)sizes[i]);
        shmb_progress_step(cfg->progress, (uint64_t)i, label);
        ret = paired_size(run, sizes[i], store, reg_rounds, block_rounds);
    }
    free(store);
    return ret;
}
