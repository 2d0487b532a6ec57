/* alloc_register: what registering SHM costs: createSharedMemory, a pool's create, the
 * register rows' deployment totals (mapped, never written, undone untimed). */
#include "alloc_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdlib.h>

int shmb_alloc_posix_create(const char *prefix, size_t bytes, shmb_segment_t *seg, uint64_t ns[4])
{
    int ret = shmb_segment_create(seg, prefix, bytes, &ns[0], &ns[1]);
    if (ret < 0)
        return ret;
    ret = shmb_segment_map(seg, &ns[2]);
    if (ret == 0)
        ret = shmb_segment_close(seg, &ns[3]);
    if (ret < 0)
        shmb_segment_destroy(seg, NULL);
    return ret;
}

int shmb_alloc_segment_end(shmb_segment_t *seg, int unlink, double *ns, uint64_t *kept)
{
    if (unlink) {
        uint64_t t = 0;
        const int ret = shmb_segment_destroy(seg, &t);
        if (ns)
            *ns = (double)t;
        return ret;
    }
    int ret = shmb_segment_release(seg);
    *kept += ret == 0;
    return ret;
}

int shmb_alloc_pool_create(const shmb_alloc_config_t *cfg, shmb_alloc_pool_t *p, const shmb_alloc_pool_ops_t *ops,
                           size_t bytes, uint64_t blocks, double *register_ns)
{
    p->ops = ops;
    p->blocks = blocks;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = ops->create(p, cfg->shm_prefix, (size_t)ops->shm_bytes(bytes, blocks));
    *register_ns = (double)(shmb_clock_now_ns() - t0);
    return ret;
}

/* Mooncake: N buffers' createSharedMemory, all live at once; the sum of
 * their totals. */
static int posix_total(const shmb_alloc_config_t *cfg, size_t bytes, uint64_t buffers, double *total_ns)
{
    shmb_segment_t *segs = calloc((size_t)buffers, sizeof(*segs));
    if (!segs)
        return shmb_error_record("malloc", ENOMEM, NULL);
    double sum = 0;
    uint64_t made = 0;
    int ret = 0;
    for (uint64_t ns[4]; made < buffers; made++) {
        if ((ret = shmb_alloc_posix_create(cfg->shm_prefix, bytes, &segs[made], ns)) < 0)
            break;
        sum += (double)(ns[0] + ns[1] + ns[2] + ns[3]);
    }
    for (uint64_t i = 0; i < made; i++) {
        int r = shmb_segment_destroy(&segs[i], NULL);
        ret = ret < 0 ? ret : r;
    }
    free(segs);
    *total_ns = sum;
    return ret;
}

/* SHM-jemalloc: the arena, then N mallocx (the pools its extent hooks
 * create come with them). */
static int jemalloc_total(const shmb_alloc_config_t *cfg, size_t bytes, uint64_t buffers, double *ns)
{
    shmb_fipc_jemalloc_t *j = NULL;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_fipc_jemalloc_create_filled(cfg->shm_prefix, buffers, bytes, &j);
    *ns = (double)(shmb_clock_now_ns() - t0);
    int r = shmb_fipc_jemalloc_destroy(j, 1, NULL);
    return ret < 0 ? ret : r;
}

int shmb_alloc_register_total(const shmb_alloc_config_t *cfg, const shmb_alloc_pool_ops_t *ops, size_t bytes,
                              uint64_t buffers, double *ns)
{
    if (buffers == 0)
        return -EINVAL;
    if (!ops)
        return posix_total(cfg, bytes, buffers, ns);
    if (ops->kind == SHMB_ALLOC_JEMALLOC)
        return jemalloc_total(cfg, bytes, buffers, ns);
    if (ops->kind != SHMB_ALLOC_BIPC) /* SHM-classic: one pool that holds them */
        return -EINVAL;
    shmb_alloc_pool_t pool = {0};
    int ret = shmb_alloc_pool_create(cfg, &pool, ops, bytes, buffers, ns);
    uint64_t kept = 0; /* none: unlinked */
    return ret < 0 ? ret : ops->destroy(&pool, 1, &kept);
}
