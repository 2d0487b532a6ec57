/* alloc_paired: a paired run of the allocation benchmark (--systems). Per
 * size, the systems' registrations round by round for each N of
 * shmb_alloc_register_buffers (each system one deployment total per round,
 * alloc_register.c: Mooncake N buffers' createSharedMemory, Flow-IPC the
 * pool(s) for N blocks), then their blocks round by round at the object
 * layer and then at the bare allocator's (alloc_rounds.c: each system one
 * round of alloc, free and alloc_reuse batches per round), every round in
 * the order of shmbench/paired.h; then the rows: the --system rows' names
 * with /system:NAME, and each system's ratio to the baseline
 * (/vs:BASELINE). The control is an independent second instance of the
 * baseline's allocator: its own buffers, its own pool. */
#include "alloc_internal.h"

#include "shmbench/error.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/paired.h"
#include "shmbench/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* By shmb_system_t, as shmb_alloc_system_allocators names them:
 * what registers its memory (alloc_register.c), what places an object in
 * it (the alloc / free rows), and the bare allocator under that (the
 * alloc_bare / free_bare rows). */
static const shmb_alloc_kind_t register_kind[SHMB_SYSTEMS] = {SHMB_ALLOC_POSIX, SHMB_ALLOC_BIPC,
                                                                     SHMB_ALLOC_JEMALLOC};
static const shmb_alloc_kind_t object_kind[SHMB_SYSTEMS] = {SHMB_ALLOC_OFFSET, SHMB_ALLOC_BIPC_OBJECT,
                                                                   SHMB_ALLOC_JEMALLOC_OBJECT};
static const shmb_alloc_kind_t bare_kind[SHMB_SYSTEMS] = {SHMB_ALLOC_OFFSET_BARE, SHMB_ALLOC_BIPC,
                                                                 SHMB_ALLOC_JEMALLOC};

/* want rounds, at least `least` (and SHMB_ALLOC_PAIRED_MIN_ROUNDS, or
 * SHMB_PAIRED_MIN_ROUNDS with a count asked for: the fewest with an
 * interval), up to a multiple of 2 x systems: whole blocks of
 * shmb_paired_order's balanced order (with mooncake_upstream, also of
 * 2 x the other systems, who answer the questions it does not). */
static uint64_t balanced(const shmb_alloc_config_t *cfg, uint64_t want, uint64_t least)
{
    uint64_t block = 2 * (cfg->nsystems ? cfg->nsystems : 1);
    for (size_t s = 0; s < cfg->nsystems; s++) {
        if (cfg->systems[s] != (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM)
            continue;
        /* the models' questions run without it: whole blocks of their order too (lcm) */
        const uint64_t m = block - 2;
        uint64_t a = block, b = m;
        while (b) {
            const uint64_t t = a % b;
            a = b;
            b = t;
        }
        block = block / a * m;
        break;
    }
    const uint64_t floor = cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_ALLOC_PAIRED_MIN_ROUNDS;
    least = least > floor ? least : floor;
    want = want > least ? want : least;
    return (want + block - 1) / block * block;
}

void shmb_alloc_bench_paired_rounds(const shmb_alloc_config_t *cfg, uint64_t *block,
                                    uint64_t reg[SHMB_ALLOC_REGISTER_COUNTS])
{
    const uint64_t n = shmb_alloc_bench_working_set(cfg);
    *block = balanced(cfg, (cfg->min_ops + n - 1) / n, 0);
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++) {
        const uint64_t buffers = shmb_alloc_register_buffers[i];
        reg[i] = balanced(cfg, (cfg->num_iterations + buffers - 1) / buffers, SHMB_ALLOC_REGISTER_MIN_ROUNDS);
    }
}

int shmb_alloc_paired_ok(const shmb_alloc_config_t *cfg)
{
    if (cfg->nsystems < 2 || cfg->nsystems > SHMB_PAIRED_MAX_SYSTEMS)
        return 0;
    for (size_t s = 0; s < cfg->nsystems; s++) {
        const int upstream = cfg->systems[s] == (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM;
        if (upstream && (s == 0 || s + 1 == cfg->nsystems || !shmb_upstream_available()))
            return 0; /* neither the baseline nor its control, and only where it was built */
        if (cfg->systems[s] < 0 || (cfg->systems[s] >= SHMB_SYSTEMS && !upstream) || !cfg->system_names[s])
            return 0;
    }
    return cfg->threads <= 1 && !cfg->peer && !cfg->touch && !cfg->measure_mmap_only && !cfg->system_rows &&
           cfg->cleanup && cfg->num_iterations > 0 && cfg->num_iterations <= SHMB_ALLOC_MAX_ITERATIONS &&
           cfg->min_ops > 0 && cfg->min_ops <= SHMB_ALLOC_MAX_MIN_OPS &&
           cfg->working_set <= SHMB_ALLOC_MAX_ITERATIONS && cfg->max_size_kb <= SHMB_ALLOC_MAX_SIZE_KB;
}

typedef struct paired_register {
    const shmb_alloc_config_t *cfg;
    const shmb_alloc_kind_t *kinds; /* system s's register_kind */
    size_t bytes;
    uint64_t buffers;
} paired_register_t;

/* One deployment registration of system `which`, timed as its --system
 * register row times it, then undone untimed. */
static int register_slice(void *ctx, size_t which, double *ns)
{
    const paired_register_t *c = ctx;
    return shmb_alloc_register_total(c->cfg, c->kinds[which], c->bytes, c->buffers, ns);
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

/* Where a size's samples go: per system, each register question's
 * rounds, then each layer's steps' rounds. */
typedef struct paired_store {
    double *reg[SHMB_ALLOC_REGISTER_COUNTS][SHMB_PAIRED_MAX_SYSTEMS];
    double *blk[2][SHMB_ALLOC_BLOCK_STEPS][SHMB_PAIRED_MAX_SYSTEMS]; /* [0]: object layer, [1]: bare */
} paired_store_t;

static size_t store_doubles(size_t nsys, const uint64_t reg_rounds[SHMB_ALLOC_REGISTER_COUNTS],
                            uint64_t block_rounds)
{
    size_t per = 2 * SHMB_ALLOC_BLOCK_STEPS * (size_t)block_rounds;
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++)
        per += (size_t)reg_rounds[i];
    return nsys * per;
}

static void store_split(double *at, size_t nsys, const uint64_t reg_rounds[SHMB_ALLOC_REGISTER_COUNTS],
                        uint64_t block_rounds, paired_store_t *st)
{
    for (size_t s = 0; s < nsys; s++) {
        for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++) {
            st->reg[i][s] = at;
            at += reg_rounds[i];
        }
        for (int l = 0; l < 2; l++)
            for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS; k++) {
                st->blk[l][k][s] = at;
                at += block_rounds;
            }
    }
}

/* The systems that answer a question: all of them for the bare
 * allocator's (model = 0), those with a model of their own for register and
 * the object layer (mooncake_upstream covers neither). The question's
 * config (its systems and names) into *q, their indices in the run into
 * idx; returns how many. */
static size_t question_systems(const shmb_alloc_config_t *cfg, int model, shmb_alloc_config_t *q,
                               size_t idx[SHMB_PAIRED_MAX_SYSTEMS])
{
    *q = *cfg;
    size_t m = 0;
    for (size_t s = 0; s < cfg->nsystems; s++) {
        if (model && cfg->systems[s] == (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM)
            continue;
        q->systems[m] = cfg->systems[s];
        q->system_names[m] = cfg->system_names[s];
        idx[m++] = s;
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
    size_t idx[2][SHMB_PAIRED_MAX_SYSTEMS], nq[2];
    for (int l = 0; l < 2; l++)
        nq[l] = question_systems(run->cfg, l == 0, &q[l], idx[l]);
    shmb_alloc_kind_t reg_kinds[SHMB_PAIRED_MAX_SYSTEMS], kinds[2][SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < nq[0]; s++) {
        reg_kinds[s] = register_kind[q[0].systems[s]];
        kinds[0][s] = object_kind[q[0].systems[s]];
    }
    for (size_t s = 0; s < nq[1]; s++)
        kinds[1][s] = q[1].systems[s] == (int)SHMB_SYSTEM_MOONCAKE_UPSTREAM ? SHMB_ALLOC_UPSTREAM_BARE
                                                                             : bare_kind[q[1].systems[s]];
    paired_store_t st;
    store_split(store, run->cfg->nsystems, reg_rounds, block_rounds, &st);
    /* each question's samples, by its own systems */
    double *reg[SHMB_ALLOC_REGISTER_COUNTS][SHMB_PAIRED_MAX_SYSTEMS];
    double *blk[2][SHMB_ALLOC_BLOCK_STEPS][SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < nq[0]; s++)
        for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++)
            reg[i][s] = st.reg[i][idx[0][s]];
    for (int l = 0; l < 2; l++)
        for (size_t s = 0; s < nq[l]; s++)
            for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS; k++)
                blk[l][k][s] = st.blk[l][k][idx[l][s]];
    int ret = 0;
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS && ret == 0; i++) {
        paired_register_t rc = {.cfg = &q[0], .kinds = reg_kinds, .bytes = (size_t)size_kb * 1024,
                                .buffers = shmb_alloc_register_buffers[i]};
        ret = shmb_paired_run(nq[0], (size_t)reg_rounds[i], register_slice, &rc, reg[i]);
    }
    for (int l = 0; l < 2 && ret == 0; l++) {
        double *const *by_step[SHMB_ALLOC_BLOCK_STEPS] = {blk[l][0], blk[l][1], blk[l][2]};
        const shmb_alloc_run_t qrun = {.cfg = &q[l], .hook = run->hook, .rows = run->rows, .kept = run->kept,
                                       .why = run->why, .why_cap = run->why_cap};
        ret = shmb_alloc_pool_paired(&qrun, kinds[l], nq[l], size_kb, block_rounds, by_step);
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
