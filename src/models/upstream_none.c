/* upstream_none: shmbench/upstream.h without -DSHMB_MOONCAKE_SOURCE: every
 * call says there is no upstream code. */
#include "shmbench/upstream.h"

#include <errno.h>

int shmb_upstream_available(void) { return 0; }

const char *shmb_upstream_commit(void) { return ""; }

int shmb_upstream_offset_create(void *base, size_t bytes, uint32_t slots, shmb_upstream_offset_t **out)
{
    (void)base, (void)bytes, (void)slots, (void)out;
    return -ENOTSUP;
}

void shmb_upstream_offset_destroy(shmb_upstream_offset_t *a) { (void)a; }

int shmb_upstream_offset_alloc(shmb_upstream_offset_t *a, uint32_t slot, size_t bytes, void **addr)
{
    (void)a, (void)slot, (void)bytes, (void)addr;
    return -ENOTSUP;
}

int shmb_upstream_offset_free(shmb_upstream_offset_t *a, uint32_t slot)
{
    (void)a, (void)slot;
    return -ENOTSUP;
}

int shmb_upstream_offset_check(const shmb_upstream_offset_t *a, void *const *addr, const size_t *bytes, uint32_t n)
{
    (void)a, (void)addr, (void)bytes, (void)n;
    return -ENOTSUP;
}
