/*
 * alloc_bench: what one SHM allocation costs, Mooncake's path against
 * Flow-IPC's pool allocators, with an ideal arena as a reference point.
 *
 * Allocators (shmb_alloc_kind_t; the rows' variant is its name):
 *   posix            (system: Mooncake's createSharedMemory) shm_open,
 *                    ftruncate, mmap and close per buffer, each timed one by
 *                    one (steps shm_open, ftruncate, mmap, close, total,
 *                    cleanup = munmap + shm_unlink)
 *   arena            (kernel, a reference) an ideal single-process pool
 *   bipc             (system: Flow-IPC SHM-classic) boost.interprocess
 *   jemalloc         (system: Flow-IPC SHM-jemalloc) no thread cache
 *   jemalloc_tcache  the same with a thread cache
 *   offset_bare      (Mooncake's bare layer) OffsetAllocator alone, without
 *                    OffsetBufferAllocator's AllocatedBuffer and metrics
 *   bipc_object      (SHM-classic's object layer) Pool_arena::construct: the
 *                    object in the pool and its boost::shared_ptr
 *   jemalloc_object  (SHM-jemalloc's object layer) Ipc_arena::construct: the
 *                    object from mallocx and its std::shared_ptr
 * The pools are created once per size (step setup) and timed in batches
 * over rounds (steps alloc, free, alloc_reuse: ns per operation); every
 * block they hand out is checked inside its SHM and not overlapping another
 * before any figure counts. touch = 1 adds the timed first write (touch,
 * touch_reuse); threads > 1 runs each allocator on that many threads at once
 * (rows carry threads, ns per thread per operation, items_per_second the
 * aggregate); a peer adds what a receiver pays (attach, detach, translate).
 * speedup = Mooncake's like's p50 / the row's p50. With system_rows, one
 * system's allocators run (posix and its two layers at most) and its rows
 * are named by step alone (register per N: the deployment totals, alloc,
 * free, alloc_reuse: the object layer, alloc_bare, free_bare: the bare
 * allocator, ...), a step the system lacks an unmeasured row.
 *
 * Functions return 0 or -errno; a failed system call is recorded
 * (shmbench/error.h).
 */
#ifndef SHMBENCH_ALLOC_BENCH_H
#define SHMBENCH_ALLOC_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/notes.h"
#include "shmbench/paired.h"
#include "shmbench/peer.h"
#include "shmbench/progress.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_MAX_SIZES 64
#define SHMB_ALLOC_ARENA_MIN_BATCH 2048   /* blocks in the working set, at least: a batch of
                                          * 2048 allocs lasts > 100 timer overheads */
#define SHMB_ALLOC_MIN_OPS 100000         /* default of min_ops */
#define SHMB_ALLOC_MAX_MIN_OPS (SHMB_ALLOC_ARENA_MIN_BATCH * 4096ull) /* the peer times at most
                                          * 4096 batches (SHMB_ALLOC_PEER_MAX_ROUNDS) */
#define SHMB_ALLOC_MAX_ITERATIONS 100000000
#define SHMB_ALLOC_MAX_SIZE_KB (1ull << 30) /* 1 TiB */
#define SHMB_ALLOC_MAX_THREADS 256

typedef enum shmb_alloc_kind {
    SHMB_ALLOC_POSIX,
    SHMB_ALLOC_OFFSET,
    SHMB_ALLOC_ARENA,
    SHMB_ALLOC_BIPC,
    SHMB_ALLOC_JEMALLOC,
    SHMB_ALLOC_JEMALLOC_TCACHE,
    SHMB_ALLOC_OFFSET_BARE,        /* OffsetAllocator alone (Mooncake's bare layer) */
    SHMB_ALLOC_BIPC_OBJECT,     /* Pool_arena::construct (SHM-classic's object layer) */
    SHMB_ALLOC_JEMALLOC_OBJECT, /* Ipc_arena::construct (SHM-jemalloc's object layer) */
    SHMB_ALLOC_KINDS /* how many there are */
} shmb_alloc_kind_t;

typedef struct shmb_alloc_config {
    uint64_t num_iterations; /* allocations per size (=1000) */
    uint64_t min_size_kb;    /* first size (=4) */
    uint64_t max_size_kb;    /* last size, included (=1024) */
    uint64_t min_ops;        /* pools: operations timed per step and size, at least: rounds over
                              * the working set repeat until then (=SHMB_ALLOC_MIN_OPS),
                              * 1..SHMB_ALLOC_MAX_MIN_OPS; below the working set, one round (a
                              * note says so: a batch is never shorter than the working set) */
    int count_given;         /* 1: the count was asked for (--num_iterations given): a paired run's
                              * rounds go down to SHMB_PAIRED_MIN_ROUNDS, not
                              * SHMB_ALLOC_PAIRED_MIN_ROUNDS */
    uint64_t working_set;    /* pools: live blocks per round, 1..SHMB_ALLOC_MAX_ITERATIONS (with a
                              * peer: at most SHMB_ALLOC_PEER_MAX_ROUNDS rounds); 0: max(num_iterations,
                              * SHMB_ALLOC_ARENA_MIN_BATCH) */
    int measure_mmap_only;   /* posix: time mmap and munmap of one segment per size (=0) */
    int cleanup;             /* unlink segments after use (=1) */
    int touch;               /* time first touch of every page (=0) */
    int run[SHMB_ALLOC_KINDS]; /* 1: run this allocator */
    int system_rows;         /* 1: exactly one allocator runs; rows named by step only */
    int upstream;            /* with system_rows and no run[]: the system mooncake_upstream, upstream's
                              * own OffsetAllocator (shmbench/upstream.h) as alloc_bare / free_bare,
                              * every other row unmeasured */
    uint64_t seed;           /* random free order */
    const char *shm_prefix;  /* "/mooncake_bench_" */
    int repetition;          /* stamped into the rows */
    int threads;             /* threads running each allocator at once; 0 or 1: the calling
                              * thread alone (=1) */
    shmb_progress_t *progress; /* NULL: none; else told each step between timed phases (shmbench/progress.h) */
    int cpu;                 /* threads > 1: first CPU of the threads (each pinned to its own
                              * planned CPU, shmb_sysinfo_plan_cpus, when there are enough; else
                              * each runs on every allowed CPU), -1: the first allowed */
    shmb_peer_t *peer;       /* NULL: no peer; else the peer of shmb_alloc_peer_start, which
                              * attaches what is allocated (threads 1, no measure_mmap_only) */
    /* A paired run (--systems, shmbench/paired.h): nsystems > 0 measures these systems
     * instead of run[] (which only sizes the space), the baseline first, its control last. */
    size_t nsystems;         /* 0: not paired; else 3..SHMB_PAIRED_MAX_SYSTEMS */
    int systems[SHMB_PAIRED_MAX_SYSTEMS];              /* shmb_system_t of each, or
                                                        * SHMB_SYSTEM_MOONCAKE_UPSTREAM (not the
                                                        * baseline): its questions are the bare
                                                        * allocator's alone, the others run without it */
    const char *system_names[SHMB_PAIRED_MAX_SYSTEMS]; /* "mooncake", ..., "mooncake_control" */
} shmb_alloc_config_t;

/* "posix", "offset", "arena", "bipc", "jemalloc", "jemalloc_tcache". */
const char *shmb_alloc_kind_name(shmb_alloc_kind_t kind);

/* The allocators of the real system called `system` (--system), as a
 * comma-separated list of shmb_alloc_kind_name()s: mooncake
 * "posix,offset,offset_bare" (createSharedMemory registers each buffer,
 * OffsetBufferAllocator places objects in it over OffsetAllocator),
 * flowipc_classic "bipc_object,bipc", flowipc_jemalloc
 * "jemalloc_object,jemalloc" (Ipc_arena::construct and allocate pass
 * MALLOCX_TCACHE_NONE). NULL when no system has that name (or system is
 * NULL). */
const char *shmb_alloc_system_allocators(const char *system);

/* The sizes of a run in KB: min, doubling, then max if doubling skips it.
 * Returns how many (<= cap), or -EINVAL (0 < min <= max not met, or more
 * than cap sizes). */
int shmb_alloc_bench_sizes(uint64_t min_kb, uint64_t max_kb, uint64_t *sizes, size_t cap);

/* A pool's working set for num_iterations: max(num_iterations,
 * SHMB_ALLOC_ARENA_MIN_BATCH) blocks. */
uint64_t shmb_alloc_bench_arena_blocks(uint64_t num_iterations);

/* A pool's working set: cfg->working_set, or when 0
 * shmb_alloc_bench_arena_blocks(cfg->num_iterations). */
uint64_t shmb_alloc_bench_working_set(const shmb_alloc_config_t *cfg);

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
 * arena; min_ops or working_set out of range), threads above SHMB_ALLOC_MAX_THREADS, or a
 * peer with threads > 1 or measure_mmap_only. With a peer, an error may be one the peer met (recorded
 * here again) and -EPIPE means it died (shmbench/peer.h); -EPROTO also when
 * the peer read a wrong tag. Nothing is left behind on error.
 * Paired (cfg->nsystems > 0): per size, register per N (deployment
 * totals), then alloc, free and alloc_reuse (the object layer) and
 * alloc_bare, free_bare (the bare allocator), each measured round by round
 * over every system in the order of shmbench/paired.h, the control an independent second
 * instance of the baseline's allocator; rows of shmb_paired_push_rows with
 * the --system rows' names (+ /system:NAME, /vs:BASELINE). -EINVAL unless
 * threads <= 1, no peer, touch, measure_mmap_only or system_rows, and
 * cleanup = 1 (every pool and buffer goes before the next size). */
int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows,
                         uint64_t *kept_segments, char *why, size_t why_cap);

/* A paired run's rounds at the working set (cfg->nsystems > 0; with 0, the
 * same for a --system run's register rows): *block the rounds of alloc,
 * free and alloc_reuse at each layer (each system one batch of each per
 * round: the --system run's batches), reg[i] those of register with
 * shmb_alloc_register_buffers[i] buffers (each system one deployment total
 * per round: ceil(num_iterations / buffers), at least
 * SHMB_ALLOC_REGISTER_MIN_ROUNDS); each at least
 * SHMB_ALLOC_PAIRED_MIN_ROUNDS (SHMB_PAIRED_MIN_ROUNDS with count_given),
 * rounded up to a multiple of 2 x nsystems (whole blocks of
 * shmb_paired_order's balanced order). */
#define SHMB_ALLOC_PAIRED_MIN_ROUNDS 20
#define SHMB_ALLOC_REGISTER_MIN_ROUNDS 9 /* samples of a register row, at least */
#define SHMB_ALLOC_REGISTER_COUNTS 3     /* the N of the register rows: 10, 100, 1000 */
void shmb_alloc_bench_paired_rounds(const shmb_alloc_config_t *cfg, uint64_t *block,
                                    uint64_t reg[SHMB_ALLOC_REGISTER_COUNTS]);

/* shm_allocation_bench: a peer process (cfg->peer), the system's allocator
 * alone (cfg->system_rows), --measure_mmap_only, --cleanup=false, threads
 * (cfg->threads > 1, pinned from cfg->cpu). */
int shmb_notes_alloc(shmb_report_t *report, shmb_notes_t *store, const shmb_alloc_config_t *cfg);

#ifdef __cplusplus
}
#endif

#endif
