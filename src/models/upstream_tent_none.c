/* upstream_tent_none: TENT's part of shmbench/upstream.h when TENT is not
 * built: every call says so. */
#include "shmbench/upstream.h"

#include <errno.h>

int shmb_upstream_tent_available(void) { return 0; }

int shmb_upstream_tent_create(uint32_t buffers, size_t buffer_bytes, size_t source_bytes, shmb_upstream_tent_t **out)
{
    (void)buffers, (void)buffer_bytes, (void)source_bytes, (void)out;
    return -ENOTSUP;
}

void shmb_upstream_tent_destroy(shmb_upstream_tent_t *t) { (void)t; }

void *shmb_upstream_tent_buffer(const shmb_upstream_tent_t *t, uint32_t buffer)
{
    (void)t, (void)buffer;
    return NULL;
}

int shmb_upstream_tent_submit(shmb_upstream_tent_t *t, const uint32_t *buffer, const uint64_t *offset, uint32_t n,
                              size_t bytes, void **landed)
{
    (void)t, (void)buffer, (void)offset, (void)n, (void)bytes, (void)landed;
    return -ENOTSUP;
}

int shmb_upstream_tent_relocate(shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset, size_t bytes, void **local)
{
    (void)t, (void)buffer, (void)offset, (void)bytes, (void)local;
    return -ENOTSUP;
}

int shmb_upstream_tent_check(const shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset, const void *landed)
{
    (void)t, (void)buffer, (void)offset, (void)landed;
    return -ENOTSUP;
}
