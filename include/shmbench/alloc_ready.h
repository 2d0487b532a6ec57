/* alloc_ready: time to ready of a pool (--allocator=ready): per backing x
 * prefault method (shmbench/backing.h), `iterations` pools made ready and
 * destroyed, each timed; its row's note the first pool's GB/s, page faults,
 * and resident and huge shares (smaps); that pool verified through a second
 * mapping before the row counts (docs/backing.md). 0 or -errno (recorded). */
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
 * the pool (thp: and its alignment's ends), its second mapping, and a stack
 * and guard page per prefault thread. */
uint64_t shmb_alloc_ready_mappings(const shmb_alloc_ready_config_t *cfg);

/* The largest pool the run creates for `kind` (pool_bytes rounded to its
 * page): what must fit in /dev/shm, memory or the free huge pages. 0,
 * -EINVAL or -EOVERFLOW. */
int shmb_alloc_ready_pool_bytes(const shmb_alloc_ready_config_t *cfg, shmb_backing_kind_t kind, uint64_t *bytes);

/* Every selected backing x prefault, a row each. A failed pool or
 * verification (-EPROTO, why says which) stops it: the rows appended stay,
 * nothing is left in /dev/shm nor the huge page pool. 0, -EINVAL, -ENOMEM
 * or the failure. */
int shmb_alloc_ready_run(const shmb_alloc_ready_config_t *cfg, shmb_rows_t *rows, char *why, size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
