/* upstream_flowipc_none: shmbench/upstream_flowipc.h without
 * -DSHMB_FLOWIPC_SOURCE: every call says there is no upstream code. */
#include "shmbench/upstream_flowipc.h"

#include <errno.h>

int shmb_upstream_flowipc_available(void) { return 0; }

const char *shmb_upstream_flowipc_commits(void) { return ""; }

int shmb_upstream_classic_create(const char *name, size_t bytes, shmb_upstream_classic_t **out)
{
    (void)name, (void)bytes, (void)out;
    return -ENOTSUP;
}

int shmb_upstream_classic_destroy(shmb_upstream_classic_t *c) { return c ? -ENOTSUP : 0; }

void *shmb_upstream_classic_base(const shmb_upstream_classic_t *c)
{
    (void)c;
    return NULL;
}

size_t shmb_upstream_classic_size(const shmb_upstream_classic_t *c)
{
    (void)c;
    return 0;
}

int shmb_upstream_classic_alloc(shmb_upstream_classic_t *c, size_t bytes, void **addr)
{
    (void)c, (void)bytes, (void)addr;
    return -ENOTSUP;
}

int shmb_upstream_classic_free(shmb_upstream_classic_t *c, void *addr)
{
    (void)c, (void)addr;
    return -ENOTSUP;
}

int shmb_upstream_classic_check(const shmb_upstream_classic_t *c, void *const *addr, uint32_t n)
{
    (void)c, (void)addr, (void)n;
    return -ENOTSUP;
}

int shmb_upstream_jemalloc_repo_create(shmb_upstream_jemalloc_repo_t **out)
{
    (void)out;
    return -ENOTSUP;
}

void shmb_upstream_jemalloc_repo_destroy(shmb_upstream_jemalloc_repo_t *r) { (void)r; }

int shmb_upstream_jemalloc_repo_insert(shmb_upstream_jemalloc_repo_t *r, uint32_t id, const char *name, void *base,
                                       size_t bytes, int fd)
{
    (void)r, (void)id, (void)name, (void)base, (void)bytes, (void)fd;
    return -ENOTSUP;
}

void *shmb_upstream_jemalloc_to_address(const shmb_upstream_jemalloc_repo_t *r, uint32_t id, uint32_t offset)
{
    (void)r, (void)id, (void)offset;
    return NULL;
}

int shmb_upstream_jemalloc_from_address(const shmb_upstream_jemalloc_repo_t *r, const void *addr, uint32_t *id,
                                        uint32_t *offset)
{
    (void)r, (void)addr, (void)id, (void)offset;
    return -ENOTSUP;
}
