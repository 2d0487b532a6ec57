#include "shmbench/alloc_bench.h"

#include "shmbench/arena.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { S_OPEN, S_TRUNCATE, S_MMAP, S_TOTAL, S_CLEANUP, S_TOUCH, S_COUNT };
enum { A_ALLOC, A_FREE, A_REUSE, A_TOUCH_REUSE, A_COUNT };

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

int shmb_alloc_bench_shm_bytes(const shmb_alloc_config_t *cfg, uint64_t *bytes)
{
    if (cfg->max_size_kb > SHMB_ALLOC_MAX_SIZE_KB)
        return -EOVERFLOW;
    uint64_t block = shmb_arena_block_bytes((size_t)(cfg->max_size_kb * 1024));
    uint64_t blocks = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    if (block == 0 || blocks > UINT64_MAX / block)
        return -EOVERFLOW;
    uint64_t need = 0;
    if (cfg->touch && cfg->arena)
        need = blocks * block;
    if (cfg->touch && cfg->posix && cfg->max_size_kb * 1024 > need)
        need = cfg->max_size_kb * 1024;
    *bytes = need;
    return 0;
}

static shmb_row_t row_template(const shmb_alloc_config_t *cfg, const char *variant, uint64_t size_kb)
{
    shmb_row_t row;
    memset(&row, 0, sizeof(row));
    snprintf(row.variant, sizeof(row.variant), "%s", variant);
    snprintf(row.arg_name, sizeof(row.arg_name), "size_kb");
    row.arg = size_kb;
    row.threads = 1;
    row.repetition = cfg->repetition;
    return row;
}

static int push_step(shmb_rows_t *rows, shmb_row_t row, const char *step, double *samples,
                     size_t n, uint64_t iterations)
{
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.iterations = iterations;
    return shmb_rows_push_samples(rows, &row, samples, n);
}

/* One posix allocation: shm_open + ftruncate + mmap, [touch], cleanup. */
static int posix_once(const shmb_alloc_config_t *cfg, size_t bytes, double *s[S_COUNT], size_t i,
                      uint64_t *kept)
{
    shmb_segment_t seg;
    uint64_t t_open, t_truncate, t_mmap, t_cleanup = 0;
    int ret = shmb_segment_create(&seg, cfg->shm_prefix, bytes, &t_open, &t_truncate);
    if (ret < 0)
        return ret;
    ret = shmb_segment_map(&seg, &t_mmap);
    if (ret < 0) {
        shmb_segment_destroy(&seg, NULL);
        return ret;
    }
    if (cfg->touch) {
        uint64_t t0 = shmb_clock_now_ns();
        shmb_segment_touch(seg.addr, bytes);
        s[S_TOUCH][i] = (double)(shmb_clock_now_ns() - t0);
    }
    if (cfg->cleanup) {
        ret = shmb_segment_destroy(&seg, &t_cleanup);
    } else {
        ret = shmb_segment_release(&seg);
        *kept += ret == 0;
    }
    s[S_OPEN][i] = (double)t_open;
    s[S_TRUNCATE][i] = (double)t_truncate;
    s[S_MMAP][i] = (double)t_mmap;
    s[S_TOTAL][i] = (double)(t_open + t_truncate + t_mmap);
    s[S_CLEANUP][i] = (double)t_cleanup;
    return ret;
}

/* --measure_mmap_only: one segment, created untimed; mmap, [touch], munmap. */
static int posix_mmap_only(const shmb_alloc_config_t *cfg, size_t bytes, double *s[S_COUNT],
                           uint64_t *kept)
{
    shmb_segment_t seg;
    int ret = shmb_segment_create(&seg, cfg->shm_prefix, bytes, NULL, NULL);
    for (uint64_t i = 0; ret == 0 && i < cfg->num_iterations; i++) {
        uint64_t t_mmap, t_unmap;
        ret = shmb_segment_map(&seg, &t_mmap);
        if (ret < 0)
            break;
        if (cfg->touch) {
            uint64_t t0 = shmb_clock_now_ns();
            shmb_segment_touch(seg.addr, bytes);
            s[S_TOUCH][i] = (double)(shmb_clock_now_ns() - t0);
        }
        ret = shmb_segment_unmap(&seg, &t_unmap);
        s[S_MMAP][i] = (double)t_mmap;
        s[S_CLEANUP][i] = (double)t_unmap;
    }
    if (ret < 0 && seg.fd < 0)
        return ret;
    if (ret < 0 || cfg->cleanup) {
        int r = shmb_segment_destroy(&seg, NULL);
        return ret < 0 ? ret : r;
    }
    ret = shmb_segment_release(&seg);
    *kept += ret == 0;
    return ret;
}

static int posix_step_timed(const shmb_alloc_config_t *cfg, int step)
{
    switch (step) {
    case S_MMAP:
        return 1;
    case S_CLEANUP:
        return cfg->cleanup || cfg->measure_mmap_only;
    case S_TOUCH:
        return cfg->touch;
    default:
        return !cfg->measure_mmap_only;
    }
}

static int posix_size(const shmb_alloc_config_t *cfg, uint64_t size_kb, shmb_rows_t *rows,
                      double *s[S_COUNT], uint64_t *kept)
{
    static const char *steps[S_COUNT] = {"shm_open", "ftruncate", "mmap", "total", "cleanup", "touch"};
    size_t bytes = (size_t)size_kb * 1024;
    uint64_t n = cfg->num_iterations;
    int ret = 0;
    if (cfg->measure_mmap_only)
        ret = posix_mmap_only(cfg, bytes, s, kept);
    for (uint64_t i = 0; !cfg->measure_mmap_only && ret == 0 && i < n; i++)
        ret = posix_once(cfg, bytes, s, (size_t)i, kept);
    if (ret < 0)
        return ret;

    shmb_row_t row = row_template(cfg, "posix", size_kb);
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        if (posix_step_timed(cfg, k))
            ret = push_step(rows, row, steps[k], s[k], (size_t)n, n);
    return ret;
}

typedef struct arena_run {
    shmb_arena_t arena;
    shmb_handle_t *handles;
    uint64_t *order;   /* free order: a permutation of 0..blocks */
    uint64_t blocks;   /* working set */
    size_t bytes;      /* requested per block */
} arena_run_t;

/* One round: alloc all, [touch], free in random order, alloc again, [touch].
 * Writes ns per operation of each batch into batch[A_*]. */
static int arena_round(arena_run_t *a, int touch_fresh, int touch_reuse, double *touch_ns,
                       double batch[A_COUNT])
{
    const uint64_t w = a->blocks;
    int ret = 0;
    uint64_t t0 = shmb_clock_now_ns();
    for (uint64_t i = 0; i < w && ret == 0; i++)
        ret = shmb_arena_alloc(&a->arena, a->bytes, &a->handles[i]);
    uint64_t t1 = shmb_clock_now_ns();
    batch[A_ALLOC] = (double)(t1 - t0) / (double)w;
    for (uint64_t i = 0; touch_fresh && i < w && ret == 0; i++) {
        uint64_t t2 = shmb_clock_now_ns();
        shmb_segment_touch(shmb_arena_ptr(&a->arena, a->handles[i]), a->bytes);
        touch_ns[i] = (double)(shmb_clock_now_ns() - t2);
    }

    t0 = shmb_clock_now_ns();
    for (uint64_t i = 0; i < w && ret == 0; i++)
        ret = shmb_arena_free(&a->arena, a->handles[a->order[i]]);
    t1 = shmb_clock_now_ns();
    batch[A_FREE] = (double)(t1 - t0) / (double)w;

    t0 = shmb_clock_now_ns();
    for (uint64_t i = 0; i < w && ret == 0; i++)
        ret = shmb_arena_alloc(&a->arena, a->bytes, &a->handles[i]);
    t1 = shmb_clock_now_ns();
    batch[A_REUSE] = (double)(t1 - t0) / (double)w;

    if (touch_reuse && ret == 0) {
        t0 = shmb_clock_now_ns();
        for (uint64_t i = 0; i < w; i++)
            shmb_segment_touch(shmb_arena_ptr(&a->arena, a->handles[i]), a->bytes);
        batch[A_TOUCH_REUSE] = (double)(shmb_clock_now_ns() - t0) / (double)w;
    }
    shmb_arena_reset(&a->arena);
    return ret;
}

static int arena_rows(const shmb_alloc_config_t *cfg, uint64_t size_kb, shmb_rows_t *rows,
                      double setup_ns, double *batch[A_COUNT], uint64_t rounds, double *touch_ns,
                      uint64_t blocks)
{
    static const char *steps[A_COUNT] = {"alloc", "free", "alloc_reuse", "touch_reuse"};
    shmb_row_t row = row_template(cfg, "arena", size_kb);
    int ret = push_step(rows, row, "setup", &setup_ns, 1, 1);
    for (int k = 0; k < A_COUNT && ret == 0; k++) {
        if (k == A_TOUCH_REUSE && !cfg->touch)
            continue;
        ret = push_step(rows, row, steps[k], batch[k], (size_t)rounds, rounds * blocks);
        if (ret == 0 && k == A_ALLOC && cfg->touch)
            ret = push_step(rows, row, "touch", touch_ns, (size_t)blocks, blocks);
    }
    return ret;
}

static int arena_size(const shmb_alloc_config_t *cfg, uint64_t size_kb, shmb_rows_t *rows,
                      uint64_t *kept)
{
    arena_run_t a;
    memset(&a, 0, sizeof(a));
    a.bytes = (size_t)size_kb * 1024;
    a.blocks = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    const uint64_t rounds = (SHMB_ALLOC_ARENA_MIN_OPS + a.blocks - 1) / a.blocks;
    size_t pool = (size_t)(a.blocks * shmb_arena_block_bytes(a.bytes));

    double *batch[A_COUNT] = {0};
    double *touch_ns = calloc((size_t)a.blocks, sizeof(double));
    a.handles = calloc((size_t)a.blocks, sizeof(*a.handles));
    a.order = calloc((size_t)a.blocks, sizeof(*a.order));
    int ret = touch_ns && a.handles && a.order ? 0 : -ENOMEM;
    for (int k = 0; k < A_COUNT && ret == 0; k++)
        ret = (batch[k] = calloc((size_t)rounds, sizeof(double))) ? 0 : -ENOMEM;
    if (ret < 0) {
        shmb_error_record("malloc", ENOMEM, NULL);
        goto out_free;
    }
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed ^ size_kb);
    for (uint64_t i = 0; i < a.blocks; i++)
        a.order[i] = i;
    shmb_rng_shuffle(&rng, a.order, (size_t)a.blocks);

    shmb_segment_t seg;
    uint64_t t0 = shmb_clock_now_ns();
    ret = shmb_segment_create(&seg, cfg->shm_prefix, pool, NULL, NULL);
    if (ret < 0)
        goto out_free;
    ret = shmb_segment_map(&seg, NULL);
    if (ret == 0)
        ret = shmb_arena_init(&a.arena, seg.addr, pool);
    double setup_ns = (double)(shmb_clock_now_ns() - t0);
    if (ret < 0)
        goto out_segment;

    for (uint64_t r = 0; r < rounds && ret == 0; r++) {
        double one[A_COUNT] = {0};
        ret = arena_round(&a, cfg->touch && r == 0, cfg->touch, touch_ns, one);
        for (int k = 0; k < A_COUNT; k++)
            batch[k][r] = one[k];
    }
    shmb_arena_fini(&a.arena);
    if (ret == 0)
        ret = arena_rows(cfg, size_kb, rows, setup_ns, batch, rounds, touch_ns, a.blocks);

out_segment:
    if (ret < 0 || cfg->cleanup) {
        int r = shmb_segment_destroy(&seg, NULL);
        ret = ret < 0 ? ret : r;
    } else {
        ret = shmb_segment_release(&seg);
        *kept += ret == 0;
    }
out_free:
    for (int k = 0; k < A_COUNT; k++)
        free(batch[k]);
    free(touch_ns);
    free(a.handles);
    free(a.order);
    return ret;
}

static void set_speedup(shmb_rows_t *rows, const shmb_alloc_config_t *cfg, uint64_t size_kb,
                        const char *step, const char *baseline_step)
{
    shmb_row_t *base = shmb_rows_find(rows, "posix", baseline_step, size_kb, cfg->repetition);
    shmb_row_t *row = shmb_rows_find(rows, "arena", step, size_kb, cfg->repetition);
    if (base && row && row->ns.mean > 0)
        row->speedup = base->ns.mean / row->ns.mean;
}

int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows, uint64_t *kept)
{
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES];
    int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes,
                                        SHMB_ALLOC_MAX_SIZES);
    if (nsizes < 0 || cfg->num_iterations == 0 || cfg->num_iterations > SHMB_ALLOC_MAX_ITERATIONS ||
        cfg->max_size_kb > SHMB_ALLOC_MAX_SIZE_KB)
        return -EINVAL;

    double *s[S_COUNT] = {0};
    int ret = 0;
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        ret = (s[k] = calloc((size_t)cfg->num_iterations, sizeof(double))) ? 0 : -ENOMEM;
    if (ret < 0)
        shmb_error_record("malloc", ENOMEM, NULL);

    const char *baseline = cfg->measure_mmap_only ? "mmap" : "total";
    const char *free_baseline = cfg->measure_mmap_only || cfg->cleanup ? "cleanup" : "";
    for (int i = 0; i < nsizes && ret == 0; i++) {
        if (cfg->posix)
            ret = posix_size(cfg, sizes[i], rows, s, kept);
        if (ret == 0 && cfg->arena)
            ret = arena_size(cfg, sizes[i], rows, kept);
        set_speedup(rows, cfg, sizes[i], "alloc", baseline);
        set_speedup(rows, cfg, sizes[i], "alloc_reuse", baseline);
        set_speedup(rows, cfg, sizes[i], "free", free_baseline);
    }
    for (int k = 0; k < S_COUNT; k++)
        free(s[k]);
    return ret;
}
