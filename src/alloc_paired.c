/* alloc_paired: a paired run of the allocation benchmark (--systems). Per
 * size, the systems' registrations round by round (each system one
 * registration per round: Mooncake one buffer's createSharedMemory,
 * Flow-IPC one pool), then their blocks round by round (alloc_rounds.c: each
 * system one round of alloc, free and alloc_reuse batches per round), every
 * round in the order of shmbench/paired.h; then the rows: the
 * --system rows' names with /system:NAME, and each system's ratio to the
 * baseline (/vs:BASELINE). The control is an independent second instance
 * of the baseline's allocator: its own buffers, its own pool. */
#include "alloc_internal.h"

#include "shmbench/error.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/paired.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* By shmb_lookup_system_t, as shmb_alloc_system_allocators names them:
 * what registers a buffer or pool, and what places a block in it. */
static const shmb_alloc_kind_t register_kind[SHMB_LOOKUP_SYSTEMS] = {SHMB_ALLOC_POSIX, SHMB_ALLOC_BIPC,
                                                                     SHMB_ALLOC_JEMALLOC};
static const shmb_alloc_kind_t block_kind[SHMB_LOOKUP_SYSTEMS] = {SHMB_ALLOC_OFFSET, SHMB_ALLOC_BIPC,
                                                                  SHMB_ALLOC_JEMALLOC};

/* want rounds, at least SHMB_ALLOC_PAIRED_MIN_ROUNDS (a count asked for:
 * the fewest with an interval), up to a multiple of 2 x systems: whole
 * blocks of shmb_paired_order's balanced order. */
static uint64_t balanced(const shmb_alloc_config_t *cfg, uint64_t want)
{
    const uint64_t block = 2 * (cfg->nsystems ? cfg->nsystems : 1);
    const uint64_t least = cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_ALLOC_PAIRED_MIN_ROUNDS;
    want = want > least ? want : least;
    return (want + block - 1) / block * block;
}

void shmb_alloc_bench_paired_rounds(const shmb_alloc_config_t *cfg, uint64_t *block, uint64_t *reg)
{
    const uint64_t n = shmb_alloc_bench_working_set(cfg);
    *block = balanced(cfg, (cfg->min_ops + n - 1) / n);
    *reg = balanced(cfg, cfg->num_iterations);
}

int shmb_alloc_paired_ok(const shmb_alloc_config_t *cfg)
{
    if (cfg->nsystems < 2 || cfg->nsystems > SHMB_PAIRED_MAX_SYSTEMS)
        return 0;
    for (size_t s = 0; s < cfg->nsystems; s++)
        if (cfg->systems[s] < 0 || cfg->systems[s] >= SHMB_LOOKUP_SYSTEMS || !cfg->system_names[s])
            return 0;
    return cfg->threads <= 1 && !cfg->peer && !cfg->touch && !cfg->measure_mmap_only && !cfg->system_rows &&
           cfg->cleanup && cfg->num_iterations > 0 && cfg->num_iterations <= SHMB_ALLOC_MAX_ITERATIONS &&
           cfg->min_ops > 0 && cfg->min_ops <= SHMB_ALLOC_MAX_MIN_OPS &&
           cfg->working_set <= SHMB_ALLOC_MAX_ITERATIONS && cfg->max_size_kb <= SHMB_ALLOC_MAX_SIZE_KB;
}

typedef struct paired_register {
    const shmb_alloc_config_t *cfg;
    const shmb_alloc_kind_t *kinds; /* system s's register_kind */
    size_t bytes;
    uint64_t blocks;                /* a pool's working set */
} paired_register_t;

/* One registration of system `which`, timed as its --system register row
 * times it, then undone untimed. */
static int register_slice(void *ctx, size_t which, double *ns)
{
    const paired_register_t *c = ctx;
    const shmb_alloc_kind_t kind = c->kinds[which];
    if (kind == SHMB_ALLOC_POSIX)
        return shmb_alloc_posix_register(c->cfg, c->bytes, ns);
    shmb_alloc_pool_t pool = {0};
    int ret = shmb_alloc_pool_create(c->cfg, &pool, shmb_alloc_pool_ops(kind), c->bytes, c->blocks, ns);
    uint64_t kept = 0; /* none: unlinked */
    return ret < 0 ? ret : pool.ops->destroy(&pool, 1, &kept);
}

/* One question's rows: the --system row's name (step, size_kb) per system
 * and per ratio; ops = operations one sample stands for. */
static int push_question(const shmb_alloc_config_t *cfg, shmb_rows_t *rows, uint64_t size_kb, const char *step,
                         double *const *samples, uint64_t rounds, uint64_t ops)
{
    shmb_row_t tmpl = shmb_alloc_row(cfg, "", size_kb);
    snprintf(tmpl.step, sizeof(tmpl.step), "%s", step);
    tmpl.iterations = ops;
    size_t first;
    return shmb_paired_push_rows(rows, &tmpl, cfg->system_names, cfg->nsystems, samples, (size_t)rounds, &first);
}

static int paired_size(const shmb_alloc_run_t *run, uint64_t size_kb, double *store, uint64_t reg_rounds,
                       uint64_t block_rounds)
{
    static const char *steps[SHMB_ALLOC_BLOCK_STEPS] = {"alloc", "free", "alloc_reuse"};
    const shmb_alloc_config_t *cfg = run->cfg;
    const size_t nsys = cfg->nsystems;
    shmb_alloc_kind_t reg_kinds[SHMB_PAIRED_MAX_SYSTEMS], blk_kinds[SHMB_PAIRED_MAX_SYSTEMS];
    double *reg[SHMB_PAIRED_MAX_SYSTEMS], *blk[SHMB_ALLOC_BLOCK_STEPS][SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < nsys; s++) {
        reg_kinds[s] = register_kind[cfg->systems[s]];
        blk_kinds[s] = block_kind[cfg->systems[s]];
        reg[s] = store + s * reg_rounds;
        for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS; k++)
            blk[k][s] = store + nsys * reg_rounds + ((size_t)k * nsys + s) * block_rounds;
    }
    const uint64_t n = shmb_alloc_bench_working_set(cfg);
    paired_register_t rc = {.cfg = cfg, .kinds = reg_kinds, .bytes = (size_t)size_kb * 1024, .blocks = n};
    int ret = shmb_paired_run(nsys, (size_t)reg_rounds, register_slice, &rc, reg);
    double *const *by_step[SHMB_ALLOC_BLOCK_STEPS] = {blk[0], blk[1], blk[2]};
    if (ret == 0)
        ret = shmb_alloc_pool_paired(run, blk_kinds, nsys, size_kb, block_rounds, by_step);
    if (ret == 0)
        ret = push_question(cfg, run->rows, size_kb, "register", reg, reg_rounds, 1);
    for (int k = 0; k < SHMB_ALLOC_BLOCK_STEPS && ret == 0; k++)
        ret = push_question(cfg, run->rows, size_kb, steps[k], blk[k], block_rounds, n);
    return ret;
}

int shmb_alloc_paired_run(const shmb_alloc_run_t *run)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES], reg_rounds, block_rounds;
    const int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    if (nsizes < 0 || !shmb_alloc_paired_ok(cfg))
        return -EINVAL;
    shmb_alloc_bench_paired_rounds(cfg, &block_rounds, &reg_rounds);
    const size_t nsys = cfg->nsystems;
    double *store = calloc(nsys * ((size_t)reg_rounds + SHMB_ALLOC_BLOCK_STEPS * (size_t)block_rounds), sizeof(double));
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
