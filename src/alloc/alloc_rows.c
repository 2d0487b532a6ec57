/* alloc_rows: the allocation benchmark's rows, sizes and systems, shared by
 * the driver and its modes (alloc_internal.h). */
#include "alloc_internal.h"

#include "shmbench/paired.h"

#include <errno.h>
#include <stdio.h>

/* By shmb_system_t, the paths table's order of the systems. */
static const char *const system_allocators[SHMB_SYSTEMS] = {
    "posix,offset,offset_bare", "bipc_object,bipc", "jemalloc_object,jemalloc"};

const shmb_alloc_layers_t shmb_alloc_system_layers[SHMB_SYSTEMS] = {
    {SHMB_ALLOC_OFFSET, SHMB_ALLOC_OFFSET_BARE, SHMB_ALLOC_POSIX},
    {SHMB_ALLOC_BIPC_OBJECT, SHMB_ALLOC_BIPC, SHMB_ALLOC_BIPC},
    {SHMB_ALLOC_JEMALLOC_OBJECT, SHMB_ALLOC_JEMALLOC, SHMB_ALLOC_JEMALLOC}};

const uint64_t shmb_alloc_register_buffers[SHMB_ALLOC_REGISTER_COUNTS] = {10, 100, 1000};

const char *shmb_alloc_system_allocators(const char *system)
{
    const int s = shmb_path_system(system);
    return s < 0 ? NULL : system_allocators[s];
}

int shmb_alloc_bench_sizes(uint64_t min_kb, uint64_t max_kb, uint64_t *sizes, size_t cap)
{
    if (min_kb == 0 || min_kb > max_kb)
        return -EINVAL;
    size_t n = 0;
    for (uint64_t kb = min_kb;; kb *= 2) {
        if (n == cap)
            return -EINVAL;
        sizes[n++] = kb < max_kb ? kb : max_kb;
        if (kb >= max_kb || kb > max_kb / 2) {
            if (sizes[n - 1] != max_kb) {
                if (n == cap)
                    return -EINVAL;
                sizes[n++] = max_kb;
            }
            return (int)n;
        }
    }
}

uint64_t shmb_alloc_bench_arena_blocks(uint64_t num_iterations)
{
    return num_iterations > SHMB_ALLOC_ARENA_MIN_BATCH ? num_iterations : SHMB_ALLOC_ARENA_MIN_BATCH;
}

uint64_t shmb_alloc_bench_working_set(const shmb_alloc_config_t *cfg)
{
    return cfg->working_set ? cfg->working_set : shmb_alloc_bench_arena_blocks(cfg->num_iterations);
}

uint64_t shmb_alloc_rounds(const shmb_alloc_config_t *cfg)
{
    const uint64_t n = shmb_alloc_bench_working_set(cfg);
    return (cfg->min_ops + n - 1) / n;
}

int shmb_alloc_counts_ok(const shmb_alloc_config_t *cfg)
{
    return cfg->num_iterations > 0 && cfg->num_iterations <= SHMB_ALLOC_MAX_ITERATIONS && cfg->min_ops > 0 &&
           cfg->min_ops <= SHMB_ALLOC_MAX_MIN_OPS && cfg->working_set <= SHMB_ALLOC_MAX_ITERATIONS &&
           cfg->max_size_kb <= SHMB_ALLOC_MAX_SIZE_KB;
}

/* want rounds, at least `least` (and SHMB_ALLOC_PAIRED_MIN_ROUNDS, or
 * SHMB_PAIRED_MIN_ROUNDS with a count asked for), up to whole blocks of
 * shmb_paired_order's balanced order: 2 x systems (with upstream systems
 * also 2 x the others, who answer the questions they do not). */
static uint64_t balanced(const shmb_alloc_config_t *cfg, uint64_t want, uint64_t least)
{
    uint64_t block = 2 * (cfg->nsystems ? cfg->nsystems : 1), upstream = 0;
    for (size_t s = 0; s < cfg->nsystems; s++)
        upstream += (uint64_t)shmb_system_is_upstream(cfg->systems[s]);
    if (upstream) {
        const uint64_t m = block - 2 * upstream; /* lcm(block, m) */
        uint64_t a = block, b = m;
        while (b) {
            const uint64_t t = a % b;
            a = b;
            b = t;
        }
        block = block / a * m;
    }
    const uint64_t floor = cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_ALLOC_PAIRED_MIN_ROUNDS;
    least = least > floor ? least : floor;
    want = want > least ? want : least;
    return (want + block - 1) / block * block;
}

void shmb_alloc_bench_paired_rounds(const shmb_alloc_config_t *cfg, uint64_t *block,
                                    uint64_t reg[SHMB_ALLOC_REGISTER_COUNTS])
{
    *block = balanced(cfg, shmb_alloc_rounds(cfg), 0);
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++) {
        const uint64_t buffers = shmb_alloc_register_buffers[i];
        reg[i] = balanced(cfg, (cfg->num_iterations + buffers - 1) / buffers, SHMB_ALLOC_REGISTER_MIN_ROUNDS);
    }
}

void shmb_alloc_register_name(shmb_row_t *row, uint64_t size_kb, uint64_t buffers)
{
    snprintf(row->arg_text, sizeof(row->arg_text), "%llu/buffers:%llu", (unsigned long long)size_kb,
             (unsigned long long)buffers);
}

shmb_row_t shmb_alloc_row(const shmb_alloc_config_t *cfg, const char *variant, uint64_t size_kb)
{
    return shmb_row_make(variant, "size_kb", size_kb, cfg->repetition);
}

int shmb_alloc_push_step(shmb_rows_t *rows, shmb_row_t row, const char *step, double *samples, size_t n,
                         uint64_t iterations)
{
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.iterations = iterations;
    return shmb_rows_push_samples(rows, &row, samples, n);
}

void shmb_alloc_set_rate(shmb_rows_t *rows, uint64_t ops, double wall_ns)
{
    rows->v[rows->n - 1].items_per_second = wall_ns > 0 ? (double)ops * 1e9 / wall_ns : 0;
}

int shmb_alloc_crew_start(const shmb_alloc_config_t *cfg, shmb_crew_t **crew)
{
    const shmb_crew_config_t c = {.threads = cfg->threads, .cpu = cfg->cpu, .pin = SHMB_CREW_PIN_OWN};
    return shmb_crew_start(crew, &c);
}
