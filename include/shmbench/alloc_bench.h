/*
 * alloc_bench: what one SHM allocation costs, Mooncake's path against
 * Flow-IPC's pool allocators, with an ideal arena as the lower bound.
 *
 * posix (system: Mooncake's createSharedMemory): per allocation shm_open
 * (O_CREAT|O_EXCL, 0600), ftruncate, mmap and close of the descriptor, each
 * timed on its own (they take microseconds); total is their sum. cleanup
 * (munmap + shm_unlink) is one timed step. Each allocation is cleaned up
 * before the next, so one segment is alive at a time.
 *
 * Pools, one per size, created and mapped once (the setup row, one sample):
 *   arena            (kernel, the bound) shmbench/arena.h: an ideal lock-free,
 *                    single-process free-stack pool over one segment
 *   bipc             (system: Flow-IPC SHM-classic) boost.interprocess
 *                    rbtree_best_fit under its mutex, in one SHM pool
 *   jemalloc         (system: Flow-IPC SHM-jemalloc) mallocx in a jemalloc
 *                    arena whose extents are SHM pools, no thread cache
 *   jemalloc_tcache  the same with an explicit thread cache
 * A round allocates the working set into the empty pool (alloc), frees it
 * in a random order fixed by the seed (free), allocates it again into the
 * holes (alloc_reuse), then empties the pool untimed. These take
 * nanoseconds, so each pass is timed as one batch and the per-operation
 * figure is batch time / batch size. Rounds repeat until
 * SHMB_ALLOC_ARENA_MIN_OPS operations per step were timed. Before anything
 * is reported, the first round's blocks are checked: each lies inside its
 * allocator's SHM, and no two live blocks overlap.
 *
 * --touch: one byte per page of each fresh block is written and timed
 * (touch), as Mooncake's first write pays it: nothing is reserved before,
 * so tmpfs allocates the pages inside the timed write; for pools also the
 * reused blocks, as a batch (touch_reuse).
 *
 * speedup: posix total (free: cleanup) p50 / the pool row's p50: medians, so
 * that one preemption or the first round's page faults do not decide it.
 *
 * threads > 1 (shmb_sysinfo_plan_cpus says where they run; pinned when each
 * has a CPU of its own): for each allocator and size, that many threads run
 * the same path at once, and every timed phase (posix: each allocation,
 * touch, cleanup; pools: each batch) starts at a barrier, so the threads
 * contend as they would in one process:
 *   posix            each thread its own segments (the kernel's tmpfs and
 *                    mm locks are shared)
 *   bipc             ONE pool for all threads: its interprocess mutex is
 *                    taken by every allocate and deallocate
 *   jemalloc         ONE arena for all threads: its locks, no thread cache
 *   jemalloc_tcache  the same arena, a jemalloc tcache per thread in front
 *   arena            one arena per thread (it is single-threaded by design):
 *                    the bound of an allocator that shares nothing; its rows'
 *                    note says so
 * Rows carry threads = N. Their ns figures are per thread per operation:
 * percentiles over every thread's samples (iterations = threads x each
 * thread's operations). items_per_second is the aggregate: all threads'
 * operations / the summed wall time of the phases (first start to last end
 * of each); posix's shm_open, ftruncate, mmap and close run inside one
 * phase, so only total, touch and cleanup carry it. Round 0's blocks of
 * every thread are checked together before any figure counts: each inside
 * its allocator's SHM, none overlapping another, of any thread.
 *
 * peer (cfg->peer, a peer started with shmb_alloc_peer_start: shmbench/
 * alloc_peer.h), one thread only: after each posix allocation (and its
 * touch), this process writes the allocation's tag at the segment's first
 * byte (untimed, guarded as a first write: without --touch it is the one
 * page written) and the peer attaches the segment by name and detaches it,
 * timing both: rows attach and detach, one sample per allocation, checked
 * by the tag the peer read. Then cleanup as before. bipc and jemalloc
 * (also jemalloc_tcache): after round 0's alloc check (and touch), every
 * block is tagged (untimed, guarded; without --touch a page per block) and
 * its handle (bipc offset, jemalloc pool id + offset) sent with the pool
 * list; the peer attaches a pool on the first handle naming it (row attach,
 * one sample per pool), checks every block's tag through its translation,
 * then times `rounds` batches of translations (row translate, ns per
 * handle; speedup = posix attach p50 / its p50). The arena, one process by
 * design, has no peer rows. With system rows: attach, detach, translate
 * follow the others, a dash where the system lacks the step (pools:
 * detach; posix: translate).
 *
 * With a system selected, only its allocator runs and its rows are named by
 * step alone: setup, alloc, free, alloc_reuse (and touch, touch_reuse), where
 * posix's alloc is its total and free its cleanup, and a step the system
 * does not have is an unmeasured (dash) row, so two systems' runs pair row
 * by row.
 */
#ifndef SHMBENCH_ALLOC_BENCH_H
#define SHMBENCH_ALLOC_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/peer.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_MAX_SIZES 64
#define SHMB_ALLOC_ARENA_MIN_BATCH 2048   /* blocks in the working set, at least: a batch of
                                          * 2048 allocs lasts > 100 timer overheads */
#define SHMB_ALLOC_ARENA_MIN_OPS 100000   /* operations timed per pool step and size */
#define SHMB_ALLOC_MAX_ITERATIONS 100000000
#define SHMB_ALLOC_MAX_SIZE_KB (1ull << 30) /* 1 TiB */
#define SHMB_ALLOC_MAX_THREADS 256

typedef enum shmb_alloc_kind {
    SHMB_ALLOC_POSIX,
    SHMB_ALLOC_ARENA,
    SHMB_ALLOC_BIPC,
    SHMB_ALLOC_JEMALLOC,
    SHMB_ALLOC_JEMALLOC_TCACHE,
    SHMB_ALLOC_KINDS /* how many there are */
} shmb_alloc_kind_t;

typedef struct shmb_alloc_config {
    uint64_t num_iterations; /* allocations per size (=1000) */
    uint64_t min_size_kb;    /* first size (=4) */
    uint64_t max_size_kb;    /* last size, included (=1024) */
    int measure_mmap_only;   /* posix: time mmap and munmap of one segment per size (=0) */
    int cleanup;             /* unlink segments after use (=1) */
    int touch;               /* time first touch of every page (=0) */
    int run[SHMB_ALLOC_KINDS]; /* 1: run this allocator */
    int system_rows;         /* 1: exactly one allocator runs; rows named by step only */
    uint64_t seed;           /* random free order */
    const char *shm_prefix;  /* "/mooncake_bench_" */
    int repetition;          /* stamped into the rows */
    int threads;             /* threads running each allocator at once; 0 or 1: the calling
                              * thread alone (=1) */
    int cpu;                 /* threads > 1: first CPU of the threads, -1: the first allowed */
    shmb_peer_t *peer;       /* NULL: no peer; else the peer of shmb_alloc_peer_start, which
                              * attaches what is allocated (threads 1, no measure_mmap_only) */
    /* For tests, NULL otherwise: called after round 0's alloc and alloc_reuse
     * of a pool, before the blocks are checked, with every thread's blocks
     * (thread t's are blocks[t * per_thread ...]); a test plants a wrong one. */
    void (*check_hook)(void **blocks, uint64_t per_thread, int threads, void *arg);
    void *check_hook_arg;
} shmb_alloc_config_t;

/* "posix", "arena", "bipc", "jemalloc", "jemalloc_tcache". */
const char *shmb_alloc_kind_name(shmb_alloc_kind_t kind);

/* The sizes of a run in KB: min, doubling, then max if doubling skips it.
 * Returns how many (<= cap), or -EINVAL (0 < min <= max not met, or more
 * than cap sizes). */
int shmb_alloc_bench_sizes(uint64_t min_kb, uint64_t max_kb, uint64_t *sizes, size_t cap);

/* A pool's working set for num_iterations: max(num_iterations,
 * SHMB_ALLOC_ARENA_MIN_BATCH) blocks. */
uint64_t shmb_alloc_bench_arena_blocks(uint64_t num_iterations);

/* The most /dev/shm space the run holds at once, in bytes, over
 * `repetitions` repetitions: the pages it writes with touch (untouched
 * segments stay sparse), by all its threads at once; with cleanup = 0,
 * everything it keeps adds up. With a peer: also the page of each tag (when
 * not touched anyway) and the peer's control segment.
 * Returns 0, -EINVAL (the arena cannot hold its working set of the largest
 * size: no size class that large, or 2^32 granules or more) or -EOVERFLOW. */
int shmb_alloc_bench_shm_bytes(const shmb_alloc_config_t *cfg, int repetitions, uint64_t *bytes);

/* Runs the benchmark and appends its rows. *kept_segments counts the segments
 * left in /dev/shm on purpose (cleanup = 0). Returns 0, -errno (a failed call
 * is recorded with shmb_error_record), or -EPROTO when an allocator handed out
 * a block outside its SHM or overlapping another, with the details in why.
 * -EINVAL for a bad configuration (as shmb_alloc_bench_shm_bytes says for the
 * arena), threads above SHMB_ALLOC_MAX_THREADS, or a peer with threads > 1 or
 * measure_mmap_only. With a peer, an error may be one the peer met (recorded
 * here again) and -EPIPE means it died (shmbench/peer.h); -EPROTO also when
 * the peer read a wrong tag. Nothing is left behind on error. */
int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows,
                         uint64_t *kept_segments, char *why, size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
