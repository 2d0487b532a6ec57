#include "shmbench/alloc_bench.h"

#include "shmbench/arena.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096ull
#define BIPC_BLOCK_OVERHEAD 64     /* bytes per block the pool is given beyond the block */
#define BIPC_POOL_SLACK (1u << 20) /* bytes for the segment manager and rounding */
#define JEMALLOC_META_BYTES (8ull << 20)

enum { S_OPEN, S_TRUNCATE, S_MMAP, S_CLOSE, S_TOTAL, S_CLEANUP, S_TOUCH, S_COUNT };
enum { A_ALLOC, A_FREE, A_REUSE, A_TOUCH_REUSE, A_COUNT };

static const char *const kind_names[SHMB_ALLOC_KINDS] = {"posix", "arena", "bipc", "jemalloc",
                                                        "jemalloc_tcache"};

const char *shmb_alloc_kind_name(shmb_alloc_kind_t kind)
{
    return (unsigned)kind < SHMB_ALLOC_KINDS ? kind_names[kind] : "unknown";
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

/* The SHM a pool of `blocks` blocks of `bytes` maps (arena, bipc), or what
 * jemalloc's extents hold at most (its size classes round up by <= 25%).
 * 0 when the size has no arena class. */
static uint64_t pool_bytes(shmb_alloc_kind_t kind, uint64_t bytes, uint64_t blocks)
{
    switch (kind) {
    case SHMB_ALLOC_ARENA:
        return blocks * shmb_arena_block_bytes((size_t)bytes);
    case SHMB_ALLOC_BIPC:
        return blocks * (bytes + BIPC_BLOCK_OVERHEAD) + BIPC_POOL_SLACK;
    default:
        return blocks * ((bytes + PAGE - 1) / PAGE * PAGE) / 4 * 5 + JEMALLOC_META_BYTES;
    }
}

/* Can the arena hold the working set of the largest size (a size class, and
 * fewer than 2^32 granules)? */
static int arena_fits(const shmb_alloc_config_t *cfg)
{
    if (!cfg->run[SHMB_ALLOC_ARENA])
        return 1;
    uint64_t block = shmb_arena_block_bytes((size_t)(cfg->max_size_kb * 1024));
    uint64_t blocks = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    return block != 0 && blocks <= (uint64_t)UINT32_MAX * SHMB_ARENA_GRANULE / block;
}

int shmb_alloc_bench_shm_bytes(const shmb_alloc_config_t *cfg, int repetitions, uint64_t *bytes)
{
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES];
    int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes, SHMB_ALLOC_MAX_SIZES);
    if (nsizes < 0 || repetitions < 1)
        return -EINVAL;
    if (cfg->max_size_kb > SHMB_ALLOC_MAX_SIZE_KB || cfg->num_iterations > SHMB_ALLOC_MAX_ITERATIONS)
        return -EOVERFLOW;
    if (!arena_fits(cfg))
        return -EINVAL;
    const uint64_t blocks = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    uint64_t most = 0, sum = 0;
    for (int i = 0; i < nsizes; i++) {
        const uint64_t b = (sizes[i] * 1024 + PAGE - 1) / PAGE * PAGE; /* sizes < 2^41 */
        for (int k = 0; k < SHMB_ALLOC_KINDS; k++) {
            if (!cfg->run[k])
                continue;
            /* a pool maps blocks x (b + its overhead, <= b / 4 + 8 MiB): keep it below 2^62 */
            if (k != SHMB_ALLOC_POSIX && blocks > (UINT64_MAX / 4) / (2 * b + JEMALLOC_META_BYTES))
                return -EOVERFLOW;
            uint64_t written = 0, kept_segments = 0; /* touched bytes, and what a kept segment holds */
            if (k == SHMB_ALLOC_POSIX) {
                written = cfg->touch ? b : 0;
                kept_segments = cfg->measure_mmap_only ? 1 : cfg->num_iterations;
            } else {
                written = cfg->touch ? pool_bytes((shmb_alloc_kind_t)k, b, blocks) : 0;
                kept_segments = 1;
            }
            if (written > UINT64_MAX / kept_segments || sum > UINT64_MAX - written * kept_segments)
                return -EOVERFLOW;
            sum += written * kept_segments;
            most = written > most ? written : most;
        }
    }
    if (!cfg->cleanup && sum > UINT64_MAX / (uint64_t)repetitions)
        return -EOVERFLOW;
    *bytes = cfg->cleanup ? most : sum * (uint64_t)repetitions;
    return 0;
}

static shmb_row_t row_template(const shmb_alloc_config_t *cfg, const char *variant, uint64_t size_kb)
{
    return shmb_row_make(variant, "size_kb", size_kb, cfg->repetition);
}

static int push_step(shmb_rows_t *rows, shmb_row_t row, const char *step, double *samples,
                     size_t n, uint64_t iterations)
{
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.iterations = iterations;
    return shmb_rows_push_samples(rows, &row, samples, n);
}

/* ---- posix: Mooncake's createSharedMemory, one buffer at a time ---- */

static int posix_once(const shmb_alloc_config_t *cfg, size_t bytes, double *s[S_COUNT], size_t i,
                      uint64_t *kept)
{
    shmb_segment_t seg;
    uint64_t t_open, t_truncate, t_mmap, t_close, t_cleanup = 0;
    int ret = shmb_segment_create(&seg, cfg->shm_prefix, bytes, &t_open, &t_truncate);
    if (ret < 0)
        return ret;
    ret = shmb_segment_map(&seg, &t_mmap);
    if (ret == 0)
        ret = shmb_segment_close(&seg, &t_close);
    if (ret < 0) {
        shmb_segment_destroy(&seg, NULL);
        return ret;
    }
    if (cfg->touch) {
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_segment_first_write(seg.addr, bytes);
        s[S_TOUCH][i] = (double)(shmb_clock_now_ns() - t0);
        if (ret < 0) {
            shmb_segment_destroy(&seg, NULL);
            return ret;
        }
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
    s[S_CLOSE][i] = (double)t_close;
    s[S_TOTAL][i] = (double)(t_open + t_truncate + t_mmap + t_close);
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
            ret = shmb_segment_first_write(seg.addr, bytes);
            s[S_TOUCH][i] = (double)(shmb_clock_now_ns() - t0);
        }
        int r = shmb_segment_unmap(&seg, &t_unmap);
        ret = ret < 0 ? ret : r;
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
                      uint64_t *kept)
{
    static const char *steps[S_COUNT] = {"shm_open", "ftruncate", "mmap", "close",
                                         "total", "cleanup", "touch"};
    const size_t bytes = (size_t)size_kb * 1024, n = (size_t)cfg->num_iterations;
    double *s[S_COUNT] = {0};
    int ret = 0;
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        if (!(s[k] = calloc(n, sizeof(double))))
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && cfg->measure_mmap_only)
        ret = posix_mmap_only(cfg, bytes, s, kept);
    for (size_t i = 0; ret == 0 && !cfg->measure_mmap_only && i < n; i++)
        ret = posix_once(cfg, bytes, s, i, kept);

    shmb_row_t row = row_template(cfg, "posix", size_kb);
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        if (posix_step_timed(cfg, k))
            ret = push_step(rows, row, steps[k], s[k], n, n);
    for (int k = 0; k < S_COUNT; k++)
        free(s[k]);
    return ret;
}

/* ---- pools: the arena bound and Flow-IPC's allocators ---- */

typedef struct pool {
    shmb_alloc_kind_t kind;
    shmb_segment_t seg;          /* arena */
    shmb_arena_t arena;          /* arena */
    shmb_fipc_classic_t *bipc;   /* bipc */
    shmb_fipc_jemalloc_t *jem;   /* jemalloc, jemalloc_tcache */
} pool_t;

static int pool_create(pool_t *p, const shmb_alloc_config_t *cfg, uint64_t bytes, uint64_t blocks)
{
    const size_t size = (size_t)pool_bytes(p->kind, bytes, blocks);
    int ret;
    switch (p->kind) {
    case SHMB_ALLOC_ARENA:
        ret = shmb_segment_create(&p->seg, cfg->shm_prefix, size, NULL, NULL);
        if (ret < 0)
            return ret;
        ret = shmb_segment_map(&p->seg, NULL);
        if (ret == 0)
            ret = shmb_arena_init(&p->arena, p->seg.addr, size);
        if (ret < 0)
            shmb_segment_destroy(&p->seg, NULL);
        return ret;
    case SHMB_ALLOC_BIPC:
        return shmb_fipc_classic_create(cfg->shm_prefix, size, &p->bipc);
    default:
        return shmb_fipc_jemalloc_create(cfg->shm_prefix, p->kind == SHMB_ALLOC_JEMALLOC_TCACHE,
                                         &p->jem);
    }
}

/* Unlinks the pool's SHM when `unlink_shm`, else leaves it on purpose and
 * counts it in *kept. */
static int pool_destroy(pool_t *p, int unlink_shm, uint64_t *kept)
{
    int ret;
    switch (p->kind) {
    case SHMB_ALLOC_ARENA:
        shmb_arena_fini(&p->arena);
        if (unlink_shm)
            return shmb_segment_destroy(&p->seg, NULL);
        ret = shmb_segment_release(&p->seg);
        *kept += ret == 0;
        return ret;
    case SHMB_ALLOC_BIPC:
        ret = shmb_fipc_classic_destroy(p->bipc, unlink_shm);
        *kept += ret == 0 && !unlink_shm;
        return ret;
    default:
        return shmb_fipc_jemalloc_destroy(p->jem, unlink_shm, kept);
    }
}

/* The timed loops: one per allocator, so that no indirect call sits in them. */
static int pool_alloc_batch(pool_t *p, size_t bytes, void **blocks, uint64_t n)
{
    int ret = 0;
    shmb_handle_t h;
    switch (p->kind) {
    case SHMB_ALLOC_ARENA:
        for (uint64_t i = 0; i < n && ret == 0; i++)
            if ((ret = shmb_arena_alloc(&p->arena, bytes, &h)) == 0)
                blocks[i] = shmb_arena_ptr(&p->arena, h);
        return ret;
    case SHMB_ALLOC_BIPC:
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_fipc_classic_alloc(p->bipc, bytes, &blocks[i]);
        return ret;
    default:
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_fipc_jemalloc_alloc(p->jem, bytes, &blocks[i]);
        return ret;
    }
}

static int pool_free_batch(pool_t *p, void **blocks, const uint64_t *order, uint64_t n)
{
    int ret = 0;
    switch (p->kind) {
    case SHMB_ALLOC_ARENA:
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_arena_free(&p->arena, shmb_arena_handle(&p->arena, blocks[order[i]]));
        return ret;
    case SHMB_ALLOC_BIPC:
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_fipc_classic_free(p->bipc, blocks[order[i]]);
        return ret;
    default:
        for (uint64_t i = 0; i < n && ret == 0; i++)
            ret = shmb_fipc_jemalloc_free(p->jem, blocks[order[i]]);
        return ret;
    }
}

/* Empties the pool, untimed: the arena forgets its blocks, the others free them. */
static int pool_empty(pool_t *p, void **blocks, const uint64_t *order, uint64_t n)
{
    if (p->kind != SHMB_ALLOC_ARENA)
        return pool_free_batch(p, blocks, order, n);
    shmb_arena_reset(&p->arena);
    return 0;
}

/* Is [ptr, ptr + bytes) inside the allocator's SHM? */
static int pool_holds(pool_t *p, const void *ptr, size_t bytes)
{
    const unsigned char *c = ptr, *base;
    size_t size;
    uint32_t id;
    uint64_t off;
    switch (p->kind) {
    case SHMB_ALLOC_ARENA:
        base = p->seg.addr;
        size = p->seg.size;
        break;
    case SHMB_ALLOC_BIPC:
        base = shmb_fipc_classic_base(p->bipc);
        size = shmb_fipc_classic_size(p->bipc);
        break;
    default: {
        shmb_fipc_repo_t *repo = shmb_fipc_jemalloc_repo(p->jem);
        return shmb_fipc_repo_from_address(repo, ptr, &id, &off) == 0 &&
               shmb_fipc_repo_to_address(repo, id, off, bytes) == ptr;
    }
    }
    return c >= base && (size_t)(c - base) <= size && bytes <= size - (size_t)(c - base);
}

static int compare_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

/* Every live block inside the allocator's SHM, no two overlapping. */
static int verify_blocks(pool_t *p, void **blocks, uint64_t n, size_t bytes, const char *pass,
                         char *why, size_t cap)
{
    void **sorted = malloc((size_t)n * sizeof(*sorted));
    if (!sorted)
        return shmb_error_record("malloc", ENOMEM, NULL);
    memcpy(sorted, blocks, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), compare_ptr);
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        if (!pool_holds(p, sorted[i], bytes)) {
            snprintf(why, cap, "%s (%s): block %p of %zu bytes is outside its SHM",
                     kind_names[p->kind], pass, sorted[i], bytes);
            ret = -EPROTO;
        } else if (i + 1 < n && (uintptr_t)sorted[i] + bytes > (uintptr_t)sorted[i + 1]) {
            snprintf(why, cap, "%s (%s): blocks %p and %p of %zu bytes overlap",
                     kind_names[p->kind], pass, sorted[i], sorted[i + 1], bytes);
            ret = -EPROTO;
        }
    }
    free(sorted);
    return ret;
}

typedef struct pool_run {
    pool_t pool;
    void **blocks;
    uint64_t *order;   /* free order: a permutation of 0..blocks */
    uint64_t n;        /* working set */
    size_t bytes;      /* requested per block */
    double *batch[A_COUNT];
    double *touch_ns;
    char *why;
    size_t why_cap;
} pool_run_t;

/* The first write of each fresh block, timed one by one. */
static int time_touch(pool_run_t *a, double *touch_ns)
{
    int ret = 0;
    for (uint64_t i = 0; i < a->n && ret == 0; i++) {
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_segment_first_write(a->blocks[i], a->bytes);
        touch_ns[i] = (double)(shmb_clock_now_ns() - t0);
    }
    return ret;
}

/* One round: alloc all, [verify, touch], free in random order, alloc again,
 * [verify, touch], empty the pool. Writes ns per operation of each batch
 * into batch[A_*][r]. */
static int pool_round(pool_run_t *a, uint64_t r, int touch)
{
    const uint64_t w = a->n;
    uint64_t t0 = shmb_clock_now_ns();
    int ret = pool_alloc_batch(&a->pool, a->bytes, a->blocks, w);
    uint64_t t1 = shmb_clock_now_ns();
    a->batch[A_ALLOC][r] = (double)(t1 - t0) / (double)w;
    if (ret == 0 && r == 0)
        ret = verify_blocks(&a->pool, a->blocks, w, a->bytes, "alloc", a->why, a->why_cap);
    if (ret == 0 && r == 0 && touch)
        ret = time_touch(a, a->touch_ns);

    if (ret == 0) {
        t0 = shmb_clock_now_ns();
        ret = pool_free_batch(&a->pool, a->blocks, a->order, w);
        t1 = shmb_clock_now_ns();
        a->batch[A_FREE][r] = (double)(t1 - t0) / (double)w;
    }
    if (ret == 0) {
        t0 = shmb_clock_now_ns();
        ret = pool_alloc_batch(&a->pool, a->bytes, a->blocks, w);
        t1 = shmb_clock_now_ns();
        a->batch[A_REUSE][r] = (double)(t1 - t0) / (double)w;
    }
    if (ret == 0 && r == 0)
        ret = verify_blocks(&a->pool, a->blocks, w, a->bytes, "alloc_reuse", a->why, a->why_cap);
    if (ret == 0 && touch) { /* a purged block is faulted in again: guarded too */
        t0 = shmb_clock_now_ns();
        for (uint64_t i = 0; i < w && ret == 0; i++)
            ret = shmb_segment_first_write(a->blocks[i], a->bytes);
        a->batch[A_TOUCH_REUSE][r] = (double)(shmb_clock_now_ns() - t0) / (double)w;
    }
    if (ret == 0)
        ret = pool_empty(&a->pool, a->blocks, a->order, w);
    return ret;
}

static int pool_rows(const shmb_alloc_config_t *cfg, const pool_run_t *a, uint64_t size_kb,
                     double setup_ns, uint64_t rounds, shmb_rows_t *rows)
{
    static const char *steps[A_COUNT] = {"alloc", "free", "alloc_reuse", "touch_reuse"};
    shmb_row_t row = row_template(cfg, kind_names[a->pool.kind], size_kb);
    int ret = push_step(rows, row, "setup", &setup_ns, 1, 1);
    for (int k = 0; k < A_COUNT && ret == 0; k++) {
        if (k == A_TOUCH_REUSE && !cfg->touch)
            continue;
        ret = push_step(rows, row, steps[k], a->batch[k], (size_t)rounds, rounds * a->n);
        if (ret == 0 && k == A_ALLOC && cfg->touch)
            ret = push_step(rows, row, "touch", a->touch_ns, (size_t)a->n, a->n);
    }
    return ret;
}

static int pool_size(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t size_kb,
                     shmb_rows_t *rows, uint64_t *kept, char *why, size_t why_cap)
{
    pool_run_t a;
    memset(&a, 0, sizeof(a));
    a.pool.kind = kind;
    a.bytes = (size_t)size_kb * 1024;
    a.n = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    a.why = why;
    a.why_cap = why_cap;
    const uint64_t rounds = (SHMB_ALLOC_ARENA_MIN_OPS + a.n - 1) / a.n;

    a.touch_ns = calloc((size_t)a.n, sizeof(double));
    a.blocks = calloc((size_t)a.n, sizeof(*a.blocks));
    a.order = calloc((size_t)a.n, sizeof(*a.order));
    int ret = a.touch_ns && a.blocks && a.order ? 0 : -ENOMEM;
    for (int k = 0; k < A_COUNT && ret == 0; k++)
        ret = (a.batch[k] = calloc((size_t)rounds, sizeof(double))) ? 0 : -ENOMEM;
    if (ret < 0) {
        shmb_error_record("malloc", ENOMEM, NULL);
        goto out_free;
    }
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed ^ size_kb);
    for (uint64_t i = 0; i < a.n; i++)
        a.order[i] = i;
    shmb_rng_shuffle(&rng, a.order, (size_t)a.n);

    uint64_t t0 = shmb_clock_now_ns();
    ret = pool_create(&a.pool, cfg, a.bytes, a.n);
    double setup_ns = (double)(shmb_clock_now_ns() - t0);
    if (ret < 0)
        goto out_free;
    for (uint64_t r = 0; r < rounds && ret == 0; r++)
        ret = pool_round(&a, r, cfg->touch);
    int r = pool_destroy(&a.pool, ret < 0 || cfg->cleanup, kept);
    ret = ret < 0 ? ret : r;
    if (ret == 0)
        ret = pool_rows(cfg, &a, size_kb, setup_ns, rounds, rows);

out_free:
    for (int k = 0; k < A_COUNT; k++)
        free(a.batch[k]);
    free(a.touch_ns);
    free(a.blocks);
    free(a.order);
    return ret;
}

/* ---- speedups and the rows of one system ---- */

static void set_speedup(shmb_rows_t *rows, const shmb_alloc_config_t *cfg, uint64_t size_kb,
                        const char *variant, const char *step, const char *baseline_step)
{
    shmb_row_t *base = shmb_rows_find(rows, "posix", baseline_step, size_kb, cfg->repetition);
    shmb_row_t *row = shmb_rows_find(rows, variant, step, size_kb, cfg->repetition);
    if (base && row && row->ns.p50 > 0)
        row->speedup = base->ns.p50 / row->ns.p50;
}

/* One system's rows under step names alone: posix's total is its alloc and
 * its cleanup its free; a step the system lacks is an unmeasured row. */
static int system_rows(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t size_kb,
                       const shmb_rows_t *all, shmb_rows_t *rows)
{
    static const char *steps[] = {"setup", "alloc", "free", "alloc_reuse", "touch", "touch_reuse"};
    const int posix = kind == SHMB_ALLOC_POSIX;
    int ret = 0;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && ret == 0; i++) {
        if (!cfg->touch && strncmp(steps[i], "touch", 5) == 0)
            continue;
        const char *from = steps[i];
        if (posix && strcmp(from, "alloc") == 0)
            from = "total";
        else if (posix && strcmp(from, "free") == 0)
            from = "cleanup";
        const shmb_row_t *src = shmb_rows_find(all, kind_names[kind], from, size_kb, cfg->repetition);
        shmb_row_t row = src ? *src : row_template(cfg, "", size_kb);
        row.variant[0] = '\0';
        snprintf(row.step, sizeof(row.step), "%s", steps[i]);
        ret = shmb_rows_push(rows, &row);
    }
    return ret;
}

static int run_size(const shmb_alloc_config_t *cfg, uint64_t size_kb, shmb_rows_t *rows,
                    uint64_t *kept, char *why, size_t why_cap)
{
    int ret = 0;
    if (cfg->run[SHMB_ALLOC_POSIX])
        ret = posix_size(cfg, size_kb, rows, kept);
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS && ret == 0; k++)
        if (cfg->run[k])
            ret = pool_size(cfg, (shmb_alloc_kind_t)k, size_kb, rows, kept, why, why_cap);
    const char *baseline = cfg->measure_mmap_only ? "mmap" : "total";
    const char *free_baseline = cfg->measure_mmap_only || cfg->cleanup ? "cleanup" : "";
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS && ret == 0; k++) {
        set_speedup(rows, cfg, size_kb, kind_names[k], "alloc", baseline);
        set_speedup(rows, cfg, size_kb, kind_names[k], "alloc_reuse", baseline);
        set_speedup(rows, cfg, size_kb, kind_names[k], "free", free_baseline);
    }
    return ret;
}

int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows, uint64_t *kept,
                         char *why, size_t why_cap)
{
    uint64_t sizes[SHMB_ALLOC_MAX_SIZES];
    int nsizes = shmb_alloc_bench_sizes(cfg->min_size_kb, cfg->max_size_kb, sizes,
                                        SHMB_ALLOC_MAX_SIZES);
    int kinds = 0, kind = -1;
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        if (cfg->run[k]) {
            kinds++;
            kind = k;
        }
    if (nsizes < 0 || cfg->num_iterations == 0 || cfg->num_iterations > SHMB_ALLOC_MAX_ITERATIONS ||
        cfg->max_size_kb > SHMB_ALLOC_MAX_SIZE_KB || kinds == 0 || (cfg->system_rows && kinds != 1))
        return -EINVAL;
    if (!arena_fits(cfg))
        return -EINVAL;

    int ret = 0;
    for (int i = 0; i < nsizes && ret == 0; i++) {
        if (!cfg->system_rows) {
            ret = run_size(cfg, sizes[i], rows, kept, why, why_cap);
            continue;
        }
        shmb_rows_t all = {0};
        ret = run_size(cfg, sizes[i], &all, kept, why, why_cap);
        if (ret == 0)
            ret = system_rows(cfg, (shmb_alloc_kind_t)kind, sizes[i], &all, rows);
        shmb_rows_free(&all);
    }
    return ret;
}
