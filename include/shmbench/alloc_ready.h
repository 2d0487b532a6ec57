/*
 * alloc_ready: time to ready of a pool, the rows of shm_allocation_bench
 * --allocator=ready.
 *
 * For each backing and prefault method selected (shmbench/backing.h), a pool
 * of pool_bytes is made ready `iterations` times (create, size, map,
 * prefault; then destroyed), each timed as one operation. One row per
 * backing x prefault: shm_alloc/ready/<backing>/<prefault>/pool_mb:N (with
 * /threads:T for touch, populate_write and fallocate split over T > 1
 * threads; none and populate are one mmap call whatever threads says), whose
 * ns are the seconds to ready (in ns per pool), bytes_per_second the pool's
 * bytes over the mean time, and the note the first pool's
 * "<GB/s> <faults> faults rss <%> huge <%>": page faults the process took
 * (getrusage, every thread) and how much of the pool was resident, and
 * mapped by huge pages, right after the prefault, read back from smaps.
 * A MAP_POPULATE that could not populate shows as rss under 100%; the
 * methods that report a failure end the run with their error.
 *
 * Every row's first pool is verified before it counts: a word per 4 KiB
 * written through the pool's mapping (guarded: a full backing is -ENOSPC,
 * never SIGBUS) and read back through a second mapping of the same file.
 *
 * Functions return 0 or -errno; a failed system call is recorded
 * (shmbench/error.h).
 */
#ifndef SHMBENCH_ALLOC_READY_H
#define SHMBENCH_ALLOC_READY_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/backing.h"
#include "shmbench/progress.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ALLOC_READY_MAX_ITERATIONS 1000 /* pools per row, at most */

typedef struct shmb_alloc_ready_config {
    uint64_t pool_bytes;                 /* bytes of each pool, rounded up to the backing's page */
    int backing[SHMB_BACKING_KINDS];     /* 1: run this backing */
    int prefault[SHMB_PREFAULT_KINDS];   /* 1: run this prefault method */
    int threads;                         /* prefault threads, 1..SHMB_BACKING_MAX_THREADS (=1) */
    uint64_t iterations;                 /* pools per row, 1..SHMB_ALLOC_READY_MAX_ITERATIONS (=3) */
    uint64_t hugepage_size;              /* hugetlb's page: SHMB_BACKING_HUGE_2MB or _1GB (0: 2 MiB) */
    const char *shm_prefix;              /* tmpfs names: "/mooncake_bench_" */
    shmb_progress_t *progress;           /* NULL: none; else told before each backing and prefault */
    int repetition;                      /* stamped into the rows */
} shmb_alloc_ready_config_t;

/* The mappings a ready run holds at most at once beyond the process's own:
 * the pool (thp: with the ends of its alignment reservation while it is
 * mapped), its second mapping while verified, and per prefault thread a
 * stack and its guard page. */
uint64_t shmb_alloc_ready_mappings(const shmb_alloc_ready_config_t *cfg);

/* The largest pool, in bytes, that the run creates for `kind` (pool_bytes
 * rounded to its page): what must fit in /dev/shm (tmpfs), in memory, or in
 * the free huge pages (hugetlb). Returns 0 or -EINVAL / -EOVERFLOW. */
int shmb_alloc_ready_pool_bytes(const shmb_alloc_ready_config_t *cfg, shmb_backing_kind_t kind, uint64_t *bytes);

/* Runs every selected backing x prefault and appends their rows. On a
 * failed pool (its step's error recorded) or a failed verification
 * (-EPROTO, why says which pool and what was read) it stops: the rows
 * already appended stay, nothing is left in /dev/shm nor in the huge page
 * pool. Returns 0, -EINVAL (a bad config), -ENOMEM or the failure. */
int shmb_alloc_ready_run(const shmb_alloc_ready_config_t *cfg, shmb_rows_t *rows, char *why, size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
