/* transfer_buffers: the run's two SHM buffers on the configured backing,
 * made ready or not, and their end. */
#include "transfer_internal.h"

/* tmpfs as Mooncake's createSharedMemory (shm_open + ftruncate + mmap), the
 * others through the backing module (thp advised before any touch); ready:
 * tmpfs reserved with posix_fallocate before the mapping, the others written
 * once per page, guarded (a full backing is -ENOSPC, never a SIGBUS). */
int shmb_transfer_create_buffer(const shmb_transfer_run_t *r, shmb_segment_t *seg, uint64_t bytes, int ready)
{
    shmb_backing_config_t bc = r->cfg->backing;
    bc.shm_prefix = r->cfg->shm_prefix;
    shmb_backing_t b;
    int ret = shmb_backing_create(&b, &bc, bytes, NULL);
    if (ret < 0)
        return ret;
    if (ready && bc.kind == SHMB_BACKING_TMPFS)
        ret = shmb_segment_reserve(&b.seg);
    if (ret == 0)
        ret = shmb_backing_map(&b, 0, NULL);
    if (ret == 0 && ready && bc.kind != SHMB_BACKING_TMPFS)
        ret = shmb_backing_prefault(&b, SHMB_PREFAULT_TOUCH, 1);
    if (ret < 0) {
        shmb_backing_destroy(&b);
        return ret;
    }
    *seg = b.seg;
    return 0;
}

int shmb_transfer_buffers_destroy(shmb_transfer_run_t *r)
{
    int r1 = r->dst.fd >= 0 ? shmb_segment_destroy(&r->dst, NULL) : 0;
    int r2 = r->src.fd >= 0 ? shmb_segment_destroy(&r->src, NULL) : 0;
    return r1 < 0 ? r1 : r2;
}
