/* alloc_register: registration as a deployment total (the register rows of
 * --system and --systems): what making N blocks of one size usable costs
 * each design, whole.
 *
 *   posix     (Mooncake) N buffers, each createSharedMemory (shm_open,
 *             ftruncate, mmap, close: alloc_posix.c's steps), all live at
 *             once; the sample is the sum of their totals
 *   bipc      (Flow-IPC SHM-classic) one pool that holds N such blocks
 *             (Pool_arena's create: the segment and its segment manager)
 *   jemalloc  (Flow-IPC SHM-jemalloc) the arena, then N mallocx of the size:
 *             the pools its extent hooks create for them come with those
 *             allocations, and so do the allocations themselves (at most N x
 *             the alloc_bare row, against pools that take microseconds each)
 *
 * Nothing is written into the blocks: registration touches no page, so N x
 * size of /dev/shm is mapped, not used. What the sample holds is undone
 * after it, untimed (unmapped, unlinked).
 */
#include "alloc_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_jemalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

const uint64_t shmb_alloc_register_buffers[SHMB_ALLOC_REGISTER_COUNTS] = {10, 100, 1000};

/* Arena, then the N blocks; destroyed untimed. */
static int jemalloc_total(const shmb_alloc_config_t *cfg, size_t bytes, uint64_t buffers, double *ns)
{
    shmb_fipc_jemalloc_t *j = NULL;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_fipc_jemalloc_create_filled(cfg->shm_prefix, buffers, bytes, &j);
    *ns = (double)(shmb_clock_now_ns() - t0);
    int r = shmb_fipc_jemalloc_destroy(j, 1, NULL);
    return ret < 0 ? ret : r;
}

int shmb_alloc_register_total(const shmb_alloc_config_t *cfg, shmb_alloc_kind_t kind, size_t bytes,
                              uint64_t buffers, double *ns)
{
    if (buffers == 0)
        return -EINVAL;
    switch (kind) {
    case SHMB_ALLOC_POSIX:
        return shmb_alloc_posix_register(cfg, bytes, buffers, ns);
    case SHMB_ALLOC_BIPC: {
        shmb_alloc_pool_t pool = {0};
        int ret = shmb_alloc_pool_create(cfg, &pool, shmb_alloc_pool_ops(kind), bytes, buffers, ns);
        uint64_t kept = 0; /* none: unlinked */
        return ret < 0 ? ret : pool.ops->destroy(&pool, 1, &kept);
    }
    case SHMB_ALLOC_JEMALLOC:
        return jemalloc_total(cfg, bytes, buffers, ns);
    default:
        return -EINVAL;
    }
}

void shmb_alloc_register_name(shmb_row_t *row, uint64_t size_kb, uint64_t buffers)
{
    snprintf(row->arg_text, sizeof(row->arg_text), "%llu/buffers:%llu", (unsigned long long)size_kb,
             (unsigned long long)buffers);
}
