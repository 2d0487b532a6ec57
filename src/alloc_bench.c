#include "shmbench/alloc_bench.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/arena.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"
#include "shmbench/sysinfo.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096ull
#define BIPC_BLOCK_OVERHEAD 64     /* bytes per block the pool is given beyond the block */
#define BIPC_POOL_SLACK (1u << 20) /* bytes for the segment manager and rounding */
#define JEMALLOC_META_BYTES (8ull << 20)

enum { S_OPEN, S_TRUNCATE, S_MMAP, S_CLOSE, S_TOTAL, S_CLEANUP, S_TOUCH, S_ATTACH, S_DETACH, S_COUNT };
static const char *const posix_steps[S_COUNT] = {"shm_open", "ftruncate", "mmap",  "close", "total",
                                                 "cleanup",  "touch",     "attach", "detach"};
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
    if (!arena_fits(cfg) || cfg->threads < 0 || cfg->threads > SHMB_ALLOC_MAX_THREADS)
        return -EINVAL;
    const uint64_t threads = cfg->threads > 1 ? (uint64_t)cfg->threads : 1;
    const uint64_t blocks = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    uint64_t most = 0, sum = 0;
    for (int i = 0; i < nsizes; i++) {
        const uint64_t b = (sizes[i] * 1024 + PAGE - 1) / PAGE * PAGE; /* sizes < 2^41 */
        for (int k = 0; k < SHMB_ALLOC_KINDS; k++) {
            if (!cfg->run[k])
                continue;
            /* a pool maps blocks x threads x (b + its overhead, <= b / 4 + 8 MiB): keep it
             * below 2^62 */
            if (k != SHMB_ALLOC_POSIX &&
                blocks * threads > (UINT64_MAX / 4) / (2 * b + JEMALLOC_META_BYTES))
                return -EOVERFLOW;
            /* touched bytes of every thread at once, and the segments one kept holds */
            uint64_t written = 0, kept_segments = 0;
            if (k == SHMB_ALLOC_POSIX) {
                written = cfg->touch ? b * threads : cfg->peer ? PAGE : 0; /* the tag's page */
                kept_segments = cfg->measure_mmap_only ? 1 : cfg->num_iterations;
            } else if (k == SHMB_ALLOC_ARENA) { /* one arena per thread */
                written = cfg->touch ? pool_bytes(SHMB_ALLOC_ARENA, b, blocks) * threads : 0;
                kept_segments = 1;
            } else {                            /* one pool for all threads */
                const uint64_t pool = pool_bytes((shmb_alloc_kind_t)k, b, blocks * threads);
                written = cfg->touch ? pool : 0;
                if (!cfg->touch && cfg->peer) /* a tag per block: a page each at most */
                    written = blocks * PAGE < pool ? blocks * PAGE : pool;
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
    if (cfg->peer) /* the control segment: a head of at most a page, then the data area */
        *bytes += PAGE + SHMB_ALLOC_PEER_DATA_BYTES;
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

/* createSharedMemory: shm_open + ftruncate, mmap, close, each timed into
 * s[step][i], and their sum into s[S_TOTAL][i]. Nothing is left on error. */
static int posix_create(const shmb_alloc_config_t *cfg, size_t bytes, shmb_segment_t *seg,
                        double *s[S_COUNT], size_t i)
{
    uint64_t t_open, t_truncate, t_mmap, t_close;
    int ret = shmb_segment_create(seg, cfg->shm_prefix, bytes, &t_open, &t_truncate);
    if (ret < 0)
        return ret;
    ret = shmb_segment_map(seg, &t_mmap);
    if (ret == 0)
        ret = shmb_segment_close(seg, &t_close);
    if (ret < 0) {
        shmb_segment_destroy(seg, NULL);
        return ret;
    }
    s[S_OPEN][i] = (double)t_open;
    s[S_TRUNCATE][i] = (double)t_truncate;
    s[S_MMAP][i] = (double)t_mmap;
    s[S_CLOSE][i] = (double)t_close;
    s[S_TOTAL][i] = (double)(t_open + t_truncate + t_mmap + t_close);
    return 0;
}

/* The first write of a fresh mapping, timed into *ns. */
static int posix_touch(void *addr, size_t bytes, double *ns)
{
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_segment_first_write(addr, bytes);
    *ns = (double)(shmb_clock_now_ns() - t0);
    return ret;
}

/* Unlinks the segment (cleanup timed into *ns), or leaves it on purpose and
 * counts it in *kept. */
static int posix_end(const shmb_alloc_config_t *cfg, shmb_segment_t *seg, double *ns, uint64_t *kept)
{
    if (cfg->cleanup) {
        uint64_t t_cleanup;
        int ret = shmb_segment_destroy(seg, &t_cleanup);
        *ns = (double)t_cleanup;
        return ret;
    }
    int ret = shmb_segment_release(seg);
    *kept += ret == 0;
    return ret;
}

static void copy_bytes(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/* Writes tag at ptr, untimed: a first write when the page is fresh, guarded
 * as one (a full /dev/shm is -ENOSPC, not a SIGBUS). */
static int write_tag(void *ptr, uint64_t tag)
{
    return shmb_segment_first_write_copy(ptr, &tag, sizeof(tag), copy_bytes);
}

/* The peer attaches and detaches the segment of allocation i of this size,
 * which must hold its tag. */
static int posix_peer(const shmb_alloc_config_t *cfg, shmb_segment_t *seg, uint64_t size_kb,
                      double *s[S_COUNT], size_t i, char *why, size_t why_cap)
{
    const uint64_t tag = shmb_alloc_peer_tag(cfg->seed ^ (size_kb << 32) ^ (uint64_t)cfg->repetition, i);
    int ret = write_tag(seg->addr, tag);
    uint64_t attach_ns = 0, detach_ns = 0;
    if (ret == 0)
        ret = shmb_alloc_peer_posix(cfg->peer, seg->name, seg->size, tag, &attach_ns, &detach_ns,
                                    why, why_cap);
    s[S_ATTACH][i] = (double)attach_ns;
    s[S_DETACH][i] = (double)detach_ns;
    return ret;
}

static int posix_once(const shmb_alloc_config_t *cfg, uint64_t size_kb, double *s[S_COUNT], size_t i,
                      uint64_t *kept, char *why, size_t why_cap)
{
    const size_t bytes = (size_t)size_kb * 1024;
    shmb_segment_t seg;
    int ret = posix_create(cfg, bytes, &seg, s, i);
    if (ret < 0)
        return ret;
    if (cfg->touch)
        ret = posix_touch(seg.addr, bytes, &s[S_TOUCH][i]);
    if (ret == 0 && cfg->peer)
        ret = posix_peer(cfg, &seg, size_kb, s, i, why, why_cap);
    if (ret < 0) {
        shmb_segment_destroy(&seg, NULL);
        return ret;
    }
    return posix_end(cfg, &seg, &s[S_CLEANUP][i], kept);
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
    case S_ATTACH:
    case S_DETACH:
        return cfg->peer != NULL;
    default:
        return !cfg->measure_mmap_only;
    }
}

static int posix_size(const shmb_alloc_config_t *cfg, uint64_t size_kb, shmb_rows_t *rows,
                      uint64_t *kept, char *why, size_t why_cap)
{
    const size_t bytes = (size_t)size_kb * 1024, n = (size_t)cfg->num_iterations;
    double *s[S_COUNT] = {0};
    int ret = 0;
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        if (!(s[k] = calloc(n, sizeof(double))))
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && cfg->measure_mmap_only)
        ret = posix_mmap_only(cfg, bytes, s, kept);
    for (size_t i = 0; ret == 0 && !cfg->measure_mmap_only && i < n; i++)
        ret = posix_once(cfg, size_kb, s, i, kept, why, why_cap);

    shmb_row_t row = row_template(cfg, "posix", size_kb);
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        if (posix_step_timed(cfg, k))
            ret = push_step(rows, row, posix_steps[k], s[k], n, n);
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

/* Every live block inside its allocator's SHM, no two overlapping: blocks[i]
 * comes from pools[i / per_pool]. */
static int verify_blocks(pool_t *const *pools, uint64_t per_pool, void **blocks, uint64_t n,
                         size_t bytes, const char *pass, char *why, size_t cap)
{
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        pool_t *p = pools[i / per_pool];
        if (!pool_holds(p, blocks[i], bytes)) {
            snprintf(why, cap, "%s (%s): block %p of %zu bytes is outside its SHM",
                     kind_names[p->kind], pass, blocks[i], bytes);
            ret = -EPROTO;
        }
    }
    void **sorted = ret == 0 ? malloc((size_t)n * sizeof(*sorted)) : NULL;
    if (ret == 0 && !sorted)
        return shmb_error_record("malloc", ENOMEM, NULL);
    if (ret < 0)
        return ret;
    memcpy(sorted, blocks, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), compare_ptr);
    for (uint64_t i = 0; i + 1 < n && ret == 0; i++) {
        if ((uintptr_t)sorted[i] + bytes > (uintptr_t)sorted[i + 1]) {
            snprintf(why, cap, "%s (%s): blocks %p and %p of %zu bytes overlap",
                     kind_names[pools[0]->kind], pass, sorted[i], sorted[i + 1], bytes);
            ret = -EPROTO;
        }
    }
    free(sorted);
    return ret;
}

typedef struct pool_run {
    pool_t *pool;
    void **blocks;
    uint64_t *order;   /* free order: a permutation of 0..blocks */
    uint64_t n;        /* working set */
    size_t bytes;      /* requested per block */
    double *batch[A_COUNT];
    double *touch_ns;
    char *why;
    size_t why_cap;
    /* with a peer (bipc, jemalloc): round 0's blocks handed to it */
    uint64_t rounds;       /* the peer's timed batches: as many as the pool's */
    uint64_t tag_seed;     /* block i's tag: shmb_alloc_peer_tag(tag_seed, i) */
    double *attach_ns;     /* one per pool the peer attached */
    size_t nattach;
    double *translate_ns;  /* rounds */
} pool_run_t;

/* The first write of each fresh block, timed one by one. */
static int time_touch(pool_run_t *a, double *touch_ns)
{
    int ret = 0;
    for (uint64_t i = 0; i < a->n && ret == 0; i++)
        ret = posix_touch(a->blocks[i], a->bytes, &touch_ns[i]);
    return ret;
}

/* One timed batch of a round: step A_ALLOC, A_FREE, A_REUSE or
 * A_TOUCH_REUSE over the working set; ns per operation into batch[step][r]. */
static int pool_batch(pool_run_t *a, int step, uint64_t r, uint64_t span[2])
{
    const uint64_t w = a->n;
    int ret = 0;
    const uint64_t t0 = shmb_clock_now_ns();
    switch (step) {
    case A_FREE:
        ret = pool_free_batch(a->pool, a->blocks, a->order, w);
        break;
    case A_TOUCH_REUSE: /* a purged block is faulted in again: guarded too */
        for (uint64_t i = 0; i < w && ret == 0; i++)
            ret = shmb_segment_first_write(a->blocks[i], a->bytes);
        break;
    default:
        ret = pool_alloc_batch(a->pool, a->bytes, a->blocks, w);
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

/* The lender's pools as a borrower is told them: bipc's one pool (id 0),
 * or every SHM pool jemalloc's arena has now. *out is malloc'ed. */
static int pool_list(pool_t *p, shmb_fipc_pool_t **out, size_t *n)
{
    size_t count = p->kind == SHMB_ALLOC_BIPC ? 1 : shmb_fipc_jemalloc_pool_list(p->jem, NULL, 0);
    shmb_fipc_pool_t *v = calloc(count ? count : 1, sizeof(*v));
    if (!v)
        return shmb_error_record("malloc", ENOMEM, NULL);
    if (p->kind == SHMB_ALLOC_BIPC) {
        v[0].bytes = shmb_fipc_classic_size(p->bipc);
        snprintf(v[0].name, sizeof(v[0].name), "%s", shmb_fipc_classic_name(p->bipc));
    } else {
        count = shmb_fipc_jemalloc_pool_list(p->jem, v, count); /* no pool goes while blocks live */
    }
    *out = v;
    *n = count;
    return 0;
}

/* A block's handle, as the lender makes it: bipc's offset from the pool's
 * base, jemalloc's (pool id, offset) from its repository. */
static int pool_handle(pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h)
{
    memset(h, 0, sizeof(*h));
    h->len = bytes;
    if (p->kind == SHMB_ALLOC_BIPC) {
        h->pool_offset = (uint64_t)((const unsigned char *)block - (unsigned char *)shmb_fipc_classic_base(p->bipc));
        return 0;
    }
    return shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(p->jem), block, &h->id, &h->offset);
}

/* Round 0's blocks handed to the peer: each tagged (untimed), its handle
 * sent; the peer attaches the pools it needs, checks every tag and times
 * its translations. */
static int peer_pass(const shmb_alloc_config_t *cfg, pool_run_t *a)
{
    shmb_lookup_request_t *handles = malloc((size_t)a->n * sizeof(*handles));
    shmb_fipc_pool_t *pools = NULL;
    size_t npools = 0;
    int ret = handles ? pool_list(a->pool, &pools, &npools) : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < a->n && ret == 0; i++) {
        ret = pool_handle(a->pool, a->blocks[i], a->bytes, &handles[i]);
        if (ret == 0)
            ret = write_tag(a->blocks[i], shmb_alloc_peer_tag(a->tag_seed, i));
    }
    if (ret == 0 && !(a->attach_ns = calloc(npools ? npools : 1, sizeof(double))))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0) {
        const shmb_alloc_peer_pools_t in = {
            .kind = a->pool->kind == SHMB_ALLOC_BIPC ? SHMB_ALLOC_PEER_CLASSIC : SHMB_ALLOC_PEER_JEMALLOC,
            .pools = pools, .npools = npools, .handles = handles, .n = a->n, .seed = a->tag_seed,
            .rounds = a->rounds};
        ret = shmb_alloc_peer_pools(cfg->peer, &in, a->attach_ns, npools, &a->nattach, a->translate_ns,
                                    a->why, a->why_cap);
    }
    free(pools);
    free(handles);
    return ret;
}

/* Round 0's check of a pass ("alloc", "alloc_reuse") over the blocks of
 * every thread: blocks[t * per_thread ...] come from pools[t]. */
static int check_pass(const shmb_alloc_config_t *cfg, pool_t *const *pools, void **blocks,
                      uint64_t per_thread, int threads, size_t bytes, const char *pass, char *why,
                      size_t why_cap)
{
    if (cfg->check_hook)
        cfg->check_hook(blocks, per_thread, threads, cfg->check_hook_arg);
    return verify_blocks(pools, per_thread, blocks, per_thread * (uint64_t)threads, bytes, pass,
                         why, why_cap);
}

/* One round: alloc all, [verify, touch], free in random order, alloc again,
 * [verify, touch], empty the pool. Writes ns per operation of each batch
 * into batch[A_*][r]. */
static int pool_round(const shmb_alloc_config_t *cfg, pool_run_t *a, uint64_t r)
{
    int ret = pool_batch(a, A_ALLOC, r, NULL);
    if (ret == 0 && r == 0)
        ret = check_pass(cfg, &a->pool, a->blocks, a->n, 1, a->bytes, "alloc", a->why, a->why_cap);
    if (ret == 0 && r == 0 && cfg->touch)
        ret = time_touch(a, a->touch_ns);
    if (ret == 0 && r == 0 && a->translate_ns)
        ret = peer_pass(cfg, a);
    if (ret == 0)
        ret = pool_batch(a, A_FREE, r, NULL);
    if (ret == 0)
        ret = pool_batch(a, A_REUSE, r, NULL);
    if (ret == 0 && r == 0)
        ret = check_pass(cfg, &a->pool, a->blocks, a->n, 1, a->bytes, "alloc_reuse", a->why,
                         a->why_cap);
    if (ret == 0 && cfg->touch)
        ret = pool_batch(a, A_TOUCH_REUSE, r, NULL);
    if (ret == 0)
        ret = pool_empty(a->pool, a->blocks, a->order, a->n);
    return ret;
}

/* What a pool run measured: samples of every step (ns per operation), and
 * with threads > 1 the summed wall time of each step's phases. */
typedef struct pool_figures {
    double *batch[A_COUNT]; /* nbatch samples each: one per round and thread */
    size_t nbatch;
    double *touch_ns;       /* ntouch samples: one per fresh block */
    size_t ntouch;
    double *setup_ns;       /* nsetup samples: one per pool created */
    size_t nsetup;
    uint64_t ops;           /* operations of each batch step, all threads */
    int threads;
    double wall_ns[A_COUNT + 1]; /* per step, [A_COUNT]: touch; threads > 1 only */
    const char *note;       /* of every row, or "" */
    const pool_run_t *peer; /* NULL, or the run whose blocks the peer translated */
} pool_figures_t;

/* The aggregate rate of a row just pushed: ops over the wall time. */
static void set_rate(shmb_rows_t *rows, uint64_t ops, double wall_ns)
{
    rows->v[rows->n - 1].items_per_second = wall_ns > 0 ? (double)ops * 1e9 / wall_ns : 0;
}

static int pool_rows(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t size_kb,
                     const pool_figures_t *f, shmb_rows_t *rows)
{
    static const char *steps[A_COUNT] = {"alloc", "free", "alloc_reuse", "touch_reuse"};
    shmb_row_t row = row_template(cfg, kind_names[kind], size_kb);
    row.threads = f->threads;
    snprintf(row.note, sizeof(row.note), "%s", f->note);
    int ret = push_step(rows, row, "setup", f->setup_ns, f->nsetup, f->nsetup);
    for (int k = 0; k < A_COUNT && ret == 0; k++) {
        if (k == A_TOUCH_REUSE && !cfg->touch)
            continue;
        ret = push_step(rows, row, steps[k], f->batch[k], f->nbatch, f->ops);
        if (ret == 0 && f->threads > 1)
            set_rate(rows, f->ops, f->wall_ns[k]);
        if (ret == 0 && k == A_ALLOC && cfg->touch) {
            ret = push_step(rows, row, "touch", f->touch_ns, f->ntouch, f->ntouch);
            if (ret == 0 && f->threads > 1)
                set_rate(rows, f->ntouch, f->wall_ns[A_COUNT]);
        }
    }
    if (ret == 0 && f->peer)
        ret = push_step(rows, row, "attach", f->peer->attach_ns, f->peer->nattach, f->peer->nattach);
    if (ret == 0 && f->peer)
        ret = push_step(rows, row, "translate", f->peer->translate_ns, (size_t)f->peer->rounds,
                        f->peer->rounds * f->peer->n);
    return ret;
}

static int pool_size(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, uint64_t size_kb,
                     shmb_rows_t *rows, uint64_t *kept, char *why, size_t why_cap)
{
    pool_t pool;
    memset(&pool, 0, sizeof(pool));
    pool.kind = kind;
    pool_run_t a;
    memset(&a, 0, sizeof(a));
    a.pool = &pool;
    a.bytes = (size_t)size_kb * 1024;
    a.n = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    a.why = why;
    a.why_cap = why_cap;
    const uint64_t rounds = (SHMB_ALLOC_ARENA_MIN_OPS + a.n - 1) / a.n;
    const int peer = cfg->peer && kind != SHMB_ALLOC_ARENA; /* the arena is single-process by design */
    a.rounds = rounds;
    a.tag_seed = cfg->seed ^ (size_kb << 32) ^ ((uint64_t)kind << 56) ^ (uint64_t)cfg->repetition;

    a.touch_ns = calloc((size_t)a.n, sizeof(double));
    a.blocks = calloc((size_t)a.n, sizeof(*a.blocks));
    a.order = calloc((size_t)a.n, sizeof(*a.order));
    a.translate_ns = peer ? calloc((size_t)rounds, sizeof(double)) : NULL;
    int ret = a.touch_ns && a.blocks && a.order && (a.translate_ns || !peer) ? 0 : -ENOMEM;
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
    ret = pool_create(&pool, cfg, a.bytes, a.n);
    double setup_ns = (double)(shmb_clock_now_ns() - t0);
    if (ret < 0)
        goto out_free;
    for (uint64_t r = 0; r < rounds && ret == 0; r++)
        ret = pool_round(cfg, &a, r);
    int r = pool_destroy(&pool, ret < 0 || cfg->cleanup, kept);
    ret = ret < 0 ? ret : r;
    if (ret == 0) {
        pool_figures_t f = {.nbatch = (size_t)rounds, .touch_ns = a.touch_ns, .ntouch = (size_t)a.n,
                            .setup_ns = &setup_ns, .nsetup = 1, .ops = rounds * a.n, .threads = 1,
                            .note = "", .peer = peer ? &a : NULL};
        memcpy(f.batch, a.batch, sizeof(f.batch));
        ret = pool_rows(cfg, kind, size_kb, &f, rows);
    }

out_free:
    for (int k = 0; k < A_COUNT; k++)
        free(a.batch[k]);
    free(a.touch_ns);
    free(a.blocks);
    free(a.order);
    free(a.attach_ns);
    free(a.translate_ns);
    return ret;
}

/* ---- several threads at once ---- */

/* A barrier that spins (yielding after a while), so that the threads leave
 * it within a few hundred nanoseconds of each other. */
typedef struct barrier {
    atomic_int arrived;
    atomic_uint generation;
    int threads;
} barrier_t;

static void barrier_wait(barrier_t *b)
{
    unsigned g = atomic_load_explicit(&b->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == b->threads - 1) {
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->generation, 1, memory_order_release);
        return;
    }
    unsigned spins = 0;
    while (atomic_load_explicit(&b->generation, memory_order_acquire) == g)
        if (++spins > 4096)
            sched_yield();
}

/* `threads` threads running fn(team, i) together; the calling thread only
 * starts and joins them. */
typedef struct team team_t;
struct team {
    int threads;
    const int *cpus;       /* thread i's CPU; NULL: not pinned */
    void (*fn)(team_t *team, int i);
    void *ctx;
    barrier_t barrier;
    atomic_int go;            /* 0: wait, 1: run, -1: give up (a thread could not start) */
    atomic_int failed;        /* the first error, 0 while none */
    atomic_int failed_thread; /* the thread that met it */
    shmb_error_t *errors;     /* each thread's error record when it failed */
};

typedef struct member {
    team_t *team;
    int index;
} member_t;

/* Records thread i's failure; the first one wins. */
static void team_fail(team_t *t, int i, int ret)
{
    int none = 0;
    t->errors[i] = *shmb_error_last();
    if (atomic_compare_exchange_strong(&t->failed, &none, ret))
        atomic_store(&t->failed_thread, i);
}

/* Every thread calls it before every phase, in the same sequence: waits for
 * all, then says whether to work (no thread failed so far). */
static int team_phase(team_t *t)
{
    barrier_wait(&t->barrier);
    return atomic_load_explicit(&t->failed, memory_order_acquire) == 0;
}

static int team_ok(team_t *t)
{
    return atomic_load_explicit(&t->failed, memory_order_acquire) == 0;
}

static void *member_main(void *arg)
{
    member_t *m = arg;
    team_t *t = m->team;
    int go;
    while ((go = atomic_load_explicit(&t->go, memory_order_acquire)) == 0)
        sched_yield();
    if (go < 0)
        return NULL;
    if (t->cpus) {
        int ret = shmb_sysinfo_pin_cpu(t->cpus[m->index]);
        if (ret < 0) {
            char object[32];
            snprintf(object, sizeof(object), "CPU %d", t->cpus[m->index]);
            team_fail(t, m->index, shmb_error_record("sched_setaffinity", -ret, object));
        }
    }
    t->fn(t, m->index);
    return NULL;
}

/* Runs the team to the end. Returns 0 or the first error, whose record
 * (if any) is copied to this thread's. */
static int team_run(team_t *t)
{
    pthread_t *tids = calloc((size_t)t->threads, sizeof(*tids));
    member_t *members = calloc((size_t)t->threads, sizeof(*members));
    t->errors = calloc((size_t)t->threads, sizeof(*t->errors));
    t->barrier.threads = t->threads;
    int ret = tids && members && t->errors ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    int started = 0;
    for (; ret == 0 && started < t->threads; started++) {
        members[started] = (member_t){t, started};
        int err = pthread_create(&tids[started], NULL, member_main, &members[started]);
        if (err != 0) {
            ret = shmb_error_record("pthread_create", err, NULL);
            break;
        }
    }
    atomic_store_explicit(&t->go, ret == 0 ? 1 : -1, memory_order_release);
    for (int i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (ret == 0 && (ret = atomic_load(&t->failed)) < 0) {
        const shmb_error_t *e = &t->errors[atomic_load(&t->failed_thread)];
        if (e->call)
            shmb_error_record(e->call, e->err, e->object);
    }
    free(tids);
    free(members);
    free(t->errors);
    return ret;
}

/* Summed wall time of `phases` phases: for each, the last thread's end
 * minus the first thread's start (start and end: [phase * threads + t]). */
static double wall_ns(const uint64_t *start, const uint64_t *end, uint64_t phases, int threads)
{
    double sum = 0;
    for (uint64_t p = 0; p < phases; p++) {
        uint64_t first = UINT64_MAX, last = 0;
        for (int t = 0; t < threads; t++) {
            const uint64_t i = p * (uint64_t)threads + (uint64_t)t;
            first = start[i] < first ? start[i] : first;
            last = end[i] > last ? end[i] : last;
        }
        sum += last > first ? (double)(last - first) : 0;
    }
    return sum;
}

/* posix: each thread creates, [touches] and cleans up its own buffers, one
 * at a time; every allocation, touch and cleanup is a phase. */
enum { P_ALLOC, P_TOUCH, P_CLEANUP, P_COUNT };

typedef struct posix_team {
    const shmb_alloc_config_t *cfg;
    size_t bytes;
    uint64_t n;          /* allocations per thread */
    double *s[S_COUNT];  /* thread t's samples at [t * n, (t + 1) * n) */
    uint64_t *kept;      /* per thread */
    uint64_t *start[P_COUNT], *end[P_COUNT]; /* phase clocks: [i * threads + t] */
} posix_team_t;

static void posix_member(team_t *t, int me)
{
    posix_team_t *c = t->ctx;
    const shmb_alloc_config_t *cfg = c->cfg;
    double *s[S_COUNT];
    for (int k = 0; k < S_COUNT; k++)
        s[k] = c->s[k] + (uint64_t)me * c->n;
    shmb_segment_t seg;
    int live = 0, mapped = 0, ret = 0;
    if (cfg->measure_mmap_only) { /* this thread's one segment, created untimed */
        if ((ret = shmb_segment_create(&seg, cfg->shm_prefix, c->bytes, NULL, NULL)) < 0)
            team_fail(t, me, ret);
        live = ret == 0;
    }
    for (uint64_t i = 0; i < c->n; i++) {
        const uint64_t at = i * (uint64_t)t->threads + (uint64_t)me;
        if (team_phase(t) && (live || !cfg->measure_mmap_only)) {
            c->start[P_ALLOC][at] = shmb_clock_now_ns();
            if (cfg->measure_mmap_only) {
                uint64_t ns = 0;
                ret = shmb_segment_map(&seg, &ns);
                s[S_MMAP][i] = (double)ns;
            } else {
                ret = posix_create(cfg, c->bytes, &seg, s, i);
                live = ret == 0;
            }
            mapped = ret == 0;
            c->end[P_ALLOC][at] = shmb_clock_now_ns();
            if (ret < 0)
                team_fail(t, me, ret);
        }
        if (cfg->touch && team_phase(t) && mapped) {
            c->start[P_TOUCH][at] = shmb_clock_now_ns();
            ret = posix_touch(seg.addr, c->bytes, &s[S_TOUCH][i]);
            c->end[P_TOUCH][at] = shmb_clock_now_ns();
            if (ret < 0)
                team_fail(t, me, ret);
        }
        if (cfg->measure_mmap_only || cfg->cleanup) {
            if (team_phase(t) && mapped) {
                c->start[P_CLEANUP][at] = shmb_clock_now_ns();
                if (cfg->measure_mmap_only) {
                    uint64_t ns = 0;
                    ret = shmb_segment_unmap(&seg, &ns);
                    s[S_CLEANUP][i] = (double)ns;
                } else {
                    ret = posix_end(cfg, &seg, &s[S_CLEANUP][i], &c->kept[me]);
                    live = 0;
                }
                mapped = 0;
                c->end[P_CLEANUP][at] = shmb_clock_now_ns();
                if (ret < 0)
                    team_fail(t, me, ret);
            }
        } else if (live && team_ok(t)) { /* --cleanup=false: left on purpose */
            if ((ret = posix_end(cfg, &seg, NULL, &c->kept[me])) < 0)
                team_fail(t, me, ret);
            live = mapped = 0;
        }
        if (live && !cfg->measure_mmap_only) { /* another thread failed mid-way */
            shmb_segment_destroy(&seg, NULL);
            live = mapped = 0;
        }
    }
    if (live && (cfg->cleanup || !team_ok(t))) {
        if ((ret = shmb_segment_destroy(&seg, NULL)) < 0)
            team_fail(t, me, ret);
    } else if (live) {
        if ((ret = shmb_segment_release(&seg)) < 0)
            team_fail(t, me, ret);
        c->kept[me] += ret == 0;
    }
}

static int posix_size_threads(const shmb_alloc_config_t *cfg, uint64_t size_kb, const int *cpus,
                              shmb_rows_t *rows, uint64_t *kept)
{
    const int threads = cfg->threads;
    posix_team_t c = {.cfg = cfg, .bytes = (size_t)size_kb * 1024, .n = cfg->num_iterations};
    const size_t samples = (size_t)c.n * (size_t)threads;
    int ret = (c.kept = calloc((size_t)threads, sizeof(*c.kept))) ? 0 : -ENOMEM;
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        ret = (c.s[k] = calloc(samples, sizeof(double))) ? 0 : -ENOMEM;
    for (int p = 0; p < P_COUNT && ret == 0; p++)
        ret = (c.start[p] = calloc(samples, sizeof(uint64_t))) &&
                      (c.end[p] = calloc(samples, sizeof(uint64_t)))
                  ? 0
                  : -ENOMEM;
    if (ret < 0)
        shmb_error_record("malloc", ENOMEM, NULL);
    team_t team = {.threads = threads, .cpus = cpus, .fn = posix_member, .ctx = &c};
    if (ret == 0)
        ret = team_run(&team);
    for (int i = 0; ret == 0 && i < threads; i++)
        *kept += c.kept[i];

    shmb_row_t row = row_template(cfg, "posix", size_kb);
    row.threads = threads;
    for (int k = 0; k < S_COUNT && ret == 0; k++) {
        if (!posix_step_timed(cfg, k))
            continue;
        ret = push_step(rows, row, posix_steps[k], c.s[k], samples, samples);
        int phase = k == S_TOUCH                                   ? P_TOUCH
                    : k == S_CLEANUP                               ? P_CLEANUP
                    : k == S_TOTAL || (k == S_MMAP && cfg->measure_mmap_only) ? P_ALLOC
                                                                   : -1;
        if (ret == 0)
            set_rate(rows, samples, phase < 0 ? 0 : wall_ns(c.start[phase], c.end[phase], c.n, threads));
    }
    for (int k = 0; k < S_COUNT; k++)
        free(c.s[k]);
    for (int p = 0; p < P_COUNT; p++) {
        free(c.start[p]);
        free(c.end[p]);
    }
    free(c.kept);
    return ret;
}

/* Pools: every batch of every round is a phase; round 0's blocks of all
 * threads are checked together by thread 0 between phases. */
typedef struct pool_team {
    const shmb_alloc_config_t *cfg;
    pool_t **pools;      /* thread t's pool */
    pool_run_t *runs;    /* thread t's working set and samples */
    uint64_t rounds;
    uint64_t *start, *end; /* phase clocks: [(step * rounds + r) * threads + t]; step A_COUNT: touch */
    char *why;
    size_t why_cap;
} pool_team_t;

static void pool_member(team_t *t, int me)
{
    static const char *passes[A_COUNT] = {"alloc", NULL, "alloc_reuse", NULL};
    pool_team_t *c = t->ctx;
    const shmb_alloc_config_t *cfg = c->cfg;
    pool_run_t *a = &c->runs[me];
    const uint64_t threads = (uint64_t)t->threads;
    int ret = 0;
    if (a->pool->kind == SHMB_ALLOC_JEMALLOC_TCACHE) { /* this thread's tcache, made on first use */
        void *p;
        if ((ret = pool_alloc_batch(a->pool, a->bytes, &p, 1)) == 0)
            ret = pool_free_batch(a->pool, &p, &(uint64_t){0}, 1);
        if (ret < 0)
            team_fail(t, me, ret);
    }
    for (uint64_t r = 0; r < c->rounds; r++) {
        for (int step = 0; step < A_COUNT; step++) {
            if (step == A_TOUCH_REUSE && !cfg->touch)
                continue;
            const uint64_t at = ((uint64_t)step * c->rounds + r) * threads + (uint64_t)me;
            if (team_phase(t)) {
                uint64_t span[2];
                if ((ret = pool_batch(a, step, r, span)) < 0)
                    team_fail(t, me, ret);
                c->start[at] = span[0];
                c->end[at] = span[1];
            }
            if (r == 0 && passes[step] && team_phase(t) && me == 0) {
                ret = check_pass(cfg, c->pools, c->runs[0].blocks, a->n, t->threads, a->bytes,
                                 passes[step], c->why, c->why_cap);
                if (ret < 0)
                    team_fail(t, me, ret);
            }
            if (r == 0 && step == A_ALLOC && cfg->touch && team_phase(t)) {
                const uint64_t touch_at = (uint64_t)A_COUNT * c->rounds * threads + (uint64_t)me;
                c->start[touch_at] = shmb_clock_now_ns();
                if ((ret = time_touch(a, a->touch_ns)) < 0)
                    team_fail(t, me, ret);
                c->end[touch_at] = shmb_clock_now_ns();
            }
        }
        if (team_ok(t) && (ret = pool_empty(a->pool, a->blocks, a->order, a->n)) < 0)
            team_fail(t, me, ret);
    }
}

static int pool_size_threads(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind,
                             uint64_t size_kb, const int *cpus, shmb_rows_t *rows, uint64_t *kept,
                             char *why, size_t why_cap)
{
    const int threads = cfg->threads;
    const int own = kind == SHMB_ALLOC_ARENA; /* single-threaded by design: one per thread */
    const int npools = own ? threads : 1;
    const uint64_t n = shmb_alloc_bench_arena_blocks(cfg->num_iterations);
    const uint64_t rounds = (SHMB_ALLOC_ARENA_MIN_OPS + n - 1) / n;
    const size_t per_all = (size_t)n * (size_t)threads, clocks = (size_t)(A_COUNT + 1) * rounds * threads;
    const size_t bytes = (size_t)size_kb * 1024;
    pool_t *store = calloc((size_t)npools, sizeof(*store));
    pool_t **pools = calloc((size_t)threads, sizeof(*pools));
    pool_run_t *runs = calloc((size_t)threads, sizeof(*runs));
    void **blocks = calloc(per_all, sizeof(*blocks));
    uint64_t *order = calloc(per_all, sizeof(*order));
    double *touch_ns = calloc(per_all, sizeof(double));
    double *setup_ns = calloc((size_t)npools, sizeof(double));
    uint64_t *start = calloc(clocks, sizeof(uint64_t)), *end = calloc(clocks, sizeof(uint64_t));
    double *batch[A_COUNT] = {0};
    int ret = store && pools && runs && blocks && order && touch_ns && setup_ns && start && end ? 0 : -ENOMEM;
    for (int k = 0; k < A_COUNT && ret == 0; k++)
        ret = (batch[k] = calloc((size_t)rounds * (size_t)threads, sizeof(double))) ? 0 : -ENOMEM;
    if (ret < 0) {
        shmb_error_record("malloc", ENOMEM, NULL);
        goto out_free;
    }
    int created = 0;
    for (; created < npools && ret == 0; created++) {
        store[created].kind = kind;
        uint64_t t0 = shmb_clock_now_ns();
        ret = pool_create(&store[created], cfg, bytes, own ? n : n * (uint64_t)threads);
        setup_ns[created] = (double)(shmb_clock_now_ns() - t0);
    }
    if (ret < 0)
        created--;
    for (int t = 0; t < threads && ret == 0; t++) {
        pool_run_t *a = &runs[t];
        pools[t] = &store[own ? t : 0];
        a->pool = pools[t];
        a->blocks = blocks + (size_t)t * n;
        a->order = order + (size_t)t * n;
        a->touch_ns = touch_ns + (size_t)t * n;
        a->n = n;
        a->bytes = bytes;
        for (int k = 0; k < A_COUNT; k++)
            a->batch[k] = batch[k] + (size_t)t * rounds;
        shmb_rng_t rng;
        shmb_rng_seed(&rng, cfg->seed ^ size_kb ^ ((uint64_t)t << 40));
        for (uint64_t i = 0; i < n; i++)
            a->order[i] = i;
        shmb_rng_shuffle(&rng, a->order, (size_t)n);
    }
    pool_team_t c = {.cfg = cfg, .pools = pools, .runs = runs, .rounds = rounds, .start = start,
                     .end = end, .why = why, .why_cap = why_cap};
    team_t team = {.threads = threads, .cpus = cpus, .fn = pool_member, .ctx = &c};
    if (ret == 0)
        ret = team_run(&team);
    for (int p = 0; p < created; p++) {
        int r = pool_destroy(&store[p], ret < 0 || cfg->cleanup, kept);
        ret = ret < 0 ? ret : r;
    }
    if (ret == 0) {
        pool_figures_t f = {.nbatch = (size_t)rounds * (size_t)threads, .touch_ns = touch_ns,
                            .ntouch = per_all, .setup_ns = setup_ns, .nsetup = (size_t)npools,
                            .ops = rounds * per_all, .threads = threads,
                            .note = own ? "one arena per thread" : ""};
        memcpy(f.batch, batch, sizeof(f.batch));
        for (int k = 0; k < A_COUNT; k++)
            f.wall_ns[k] = wall_ns(start + (size_t)k * rounds * threads, end + (size_t)k * rounds * threads,
                                   rounds, threads);
        f.wall_ns[A_COUNT] = wall_ns(start + (size_t)A_COUNT * rounds * threads,
                                     end + (size_t)A_COUNT * rounds * threads, 1, threads);
        ret = pool_rows(cfg, kind, size_kb, &f, rows);
    }

out_free:
    for (int k = 0; k < A_COUNT; k++)
        free(batch[k]);
    free(store);
    free(pools);
    free(runs);
    free(blocks);
    free(order);
    free(touch_ns);
    free(setup_ns);
    free(start);
    free(end);
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
    static const char *steps[] = {"setup", "alloc", "free", "alloc_reuse", "touch", "touch_reuse",
                                  "attach", "detach", "translate"};
    const int posix = kind == SHMB_ALLOC_POSIX;
    int ret = 0;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]) && ret == 0; i++) {
        if (!cfg->touch && strncmp(steps[i], "touch", 5) == 0)
            continue;
        if (!cfg->peer && i >= 6) /* attach, detach, translate */
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

static int run_size(const shmb_alloc_config_t *cfg, uint64_t size_kb, const int *cpus,
                    shmb_rows_t *rows, uint64_t *kept, char *why, size_t why_cap)
{
    const int threaded = cfg->threads > 1;
    int ret = 0;
    if (cfg->run[SHMB_ALLOC_POSIX])
        ret = threaded ? posix_size_threads(cfg, size_kb, cpus, rows, kept)
                       : posix_size(cfg, size_kb, rows, kept, why, why_cap);
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS && ret == 0; k++) {
        if (!cfg->run[k])
            continue;
        ret = threaded ? pool_size_threads(cfg, (shmb_alloc_kind_t)k, size_kb, cpus, rows, kept, why, why_cap)
                       : pool_size(cfg, (shmb_alloc_kind_t)k, size_kb, rows, kept, why, why_cap);
    }
    const char *baseline = cfg->measure_mmap_only ? "mmap" : "total";
    const char *free_baseline = cfg->measure_mmap_only || cfg->cleanup ? "cleanup" : "";
    for (int k = SHMB_ALLOC_ARENA; k < SHMB_ALLOC_KINDS && ret == 0; k++) {
        set_speedup(rows, cfg, size_kb, kind_names[k], "alloc", baseline);
        set_speedup(rows, cfg, size_kb, kind_names[k], "alloc_reuse", baseline);
        set_speedup(rows, cfg, size_kb, kind_names[k], "free", free_baseline);
        set_speedup(rows, cfg, size_kb, kind_names[k], "translate", "attach");
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
        cfg->max_size_kb > SHMB_ALLOC_MAX_SIZE_KB || kinds == 0 || (cfg->system_rows && kinds != 1) ||
        cfg->threads < 0 || cfg->threads > SHMB_ALLOC_MAX_THREADS ||
        (cfg->peer && (cfg->threads > 1 || cfg->measure_mmap_only)))
        return -EINVAL;
    if (!arena_fits(cfg))
        return -EINVAL;
    int cpus[SHMB_ALLOC_MAX_THREADS];
    int pinned = cfg->threads > 1 ? shmb_sysinfo_plan_cpus(cfg->cpu, cfg->threads, cpus) : 0;
    if (pinned < 0)
        return pinned;

    int ret = 0;
    for (int i = 0; i < nsizes && ret == 0; i++) {
        if (!cfg->system_rows) {
            ret = run_size(cfg, sizes[i], pinned ? cpus : NULL, rows, kept, why, why_cap);
            continue;
        }
        shmb_rows_t all = {0};
        ret = run_size(cfg, sizes[i], pinned ? cpus : NULL, &all, kept, why, why_cap);
        if (ret == 0)
            ret = system_rows(cfg, (shmb_alloc_kind_t)kind, sizes[i], &all, rows);
        shmb_rows_free(&all);
    }
    return ret;
}
