/*
 * alloc_bench: what one SHM allocation costs, today's path against an arena.
 *
 * posix (Mooncake today): per allocation shm_open, ftruncate and mmap, each
 * timed on its own (they take microseconds); total is their sum. Cleanup
 * (munmap + close + shm_unlink) is one timed step. Each allocation is cleaned
 * up before the next, so at most one segment is alive at a time.
 *
 * arena (Flow-IPC): one pool segment per size, created and mapped once (the
 * setup row), serving blocks from a shmb_arena. A round allocates the working
 * set, frees it in a random order (fixed by the seed) and allocates it again:
 * rows alloc, free, alloc_reuse. These take nanoseconds, so each pass is timed
 * as one batch and the per-operation figure is batch time / batch size.
 * Rounds repeat until SHMB_ALLOC_ARENA_MIN_OPS operations per step were timed.
 *
 * --touch: one byte per page of each fresh block is written and timed (touch);
 * for the arena also the reused blocks, as a batch (touch_reuse).
 */
#ifndef SHMBENCH_ALLOC_BENCH_H
#define SHMBENCH_ALLOC_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_MAX_SIZES 64
#define SHMB_ALLOC_ARENA_MIN_BATCH 2048   /* blocks in the working set, at least: a batch of
                                          * 2048 allocs lasts > 100 timer overheads */
#define SHMB_ALLOC_ARENA_MIN_OPS 100000   /* operations timed per arena step and size */
#define SHMB_ALLOC_MAX_ITERATIONS 100000000
#define SHMB_ALLOC_MAX_SIZE_KB (1ull << 30) /* 1 TiB */

typedef struct shmb_alloc_config {
    uint64_t num_iterations; /* allocations per size (=1000) */
    uint64_t min_size_kb;    /* first size (=4) */
    uint64_t max_size_kb;    /* last size, included (=1024) */
    int measure_mmap_only;   /* time mmap and munmap of one segment per size (=0) */
    int cleanup;             /* unlink segments after use (=1) */
    int touch;               /* time first touch of every page (=0) */
    int posix;               /* run the posix allocator (=1) */
    int arena;               /* run the arena allocator (=1) */
    uint64_t seed;           /* random free order */
    const char *shm_prefix;  /* "/mooncake_bench_" */
    int repetition;          /* stamped into the rows */
} shmb_alloc_config_t;

/* The sizes of a run in KB: min, doubling, then max if doubling skips it.
 * Returns how many (<= cap), or -EINVAL (0 < min <= max not met, or more
 * than cap sizes). */
int shmb_alloc_bench_sizes(uint64_t min_kb, uint64_t max_kb, uint64_t *sizes, size_t cap);

/* The arena's working set for num_iterations: max(num_iterations,
 * SHMB_ALLOC_ARENA_MIN_BATCH) blocks. */
uint64_t shmb_alloc_bench_arena_blocks(uint64_t num_iterations);

/* The most /dev/shm space the run holds at once, in bytes (pages it writes
 * with touch; otherwise segments stay sparse). Returns 0 or -EOVERFLOW. */
int shmb_alloc_bench_shm_bytes(const shmb_alloc_config_t *cfg, uint64_t *bytes);

/* Runs the benchmark and appends its rows. *kept_segments counts the segments
 * left in /dev/shm on purpose (cleanup = 0). Returns 0 or -errno (a failed
 * call is recorded with shmb_error_record). Nothing is left behind on error. */
int shmb_alloc_bench_run(const shmb_alloc_config_t *cfg, shmb_rows_t *rows,
                         uint64_t *kept_segments);

#ifdef __cplusplus
}
#endif

#endif
