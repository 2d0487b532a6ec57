/* alloc_pool_fipcup: Flow-IPC SHM-classic's own Pool_arena, compiled from
 * the user's source (shmbench/upstream_flowipc.h, docs/upstream.md), the
 * bare layer of flowipc_classic_upstream: a pool outside shmb_alloc_kind_t,
 * as upstream_offset_bare is. Upstream creates and names its SHM pool
 * itself: under the run's prefix, tracked so that a fatal signal removes it. */
#include "alloc_internal.h"

#include "shmbench/error.h"
#include "shmbench/upstream_flowipc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fipcup_pool {
    shmb_upstream_classic_t *arena;
    int tracked; /* shmb_segment_track_file's id */
} fipcup_pool_t;

/* What bipc's pool maps for the same blocks: the pools are the same size
 * (read from the Flow-IPC table, not through shmb_alloc_pool_ops, which
 * calls this file: no circle). */
static uint64_t fipcup_shm_bytes(uint64_t bytes, uint64_t blocks)
{
    size_t i = 0;
    while (shmb_alloc_fipc_pools[i].kind != SHMB_ALLOC_BIPC)
        i++;
    return shmb_alloc_fipc_pools[i].shm_bytes(bytes, blocks);
}

static int fipcup_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    fipcup_pool_t *o = calloc(1, sizeof(*o));
    char name[SHMB_SEGMENT_NAME_MAX + 1], path[SHMB_SEGMENT_NAME_MAX + 16];
    int ret = o ? shmb_segment_make_name(name, sizeof(name), prefix) : shmb_error_record("malloc", ENOMEM, NULL);
    if (o)
        o->tracked = -1;
    if (ret == 0) {
        snprintf(path, sizeof(path), "/dev/shm%s", name);
        o->tracked = shmb_segment_track_file(path); /* before it exists: a signal meanwhile removes it */
        if (o->tracked < 0)
            ret = shmb_error_record("shmb_segment_track_file", -o->tracked, path);
    }
    if (ret == 0 && (ret = shmb_upstream_classic_create(name, size, &o->arena)) < 0)
        shmb_error_record("upstream Pool_arena", -ret, name);
    if (ret < 0) {
        if (o)
            shmb_segment_untrack_file(o->tracked);
        free(o);
        return ret;
    }
    p->impl = o;
    return 0;
}

/* Upstream's pool is always removed: it is not the suite's segment to keep. */
static int fipcup_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    (void)unlink_shm, (void)kept;
    fipcup_pool_t *o = p->impl;
    int ret = shmb_upstream_classic_destroy(o->arena);
    if (ret < 0)
        shmb_error_record("Pool_arena::remove_persistent", -ret, NULL);
    shmb_segment_untrack_file(o->tracked);
    free(o);
    return ret;
}

static int fipcup_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    (void)handles;
    shmb_upstream_classic_t *a = ((fipcup_pool_t *)p->impl)->arena;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_upstream_classic_alloc(a, bytes, &blocks[i]);
    return ret;
}

static int fipcup_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)handles;
    shmb_upstream_classic_t *a = ((fipcup_pool_t *)p->impl)->arena;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_upstream_classic_free(a, blocks[order[i]]);
    return ret;
}

static int fipcup_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    const shmb_upstream_classic_t *a = ((fipcup_pool_t *)p->impl)->arena;
    return shmb_alloc_inside(shmb_upstream_classic_base(a), shmb_upstream_classic_size(a), ptr, bytes);
}

/* blocks NULL: every block freed (the pool's free bytes as at creation);
 * else each block in the pool by upstream's own test. */
static int fipcup_check(shmb_alloc_pool_t *p, void *const *blocks, uint64_t n, char *why, size_t cap)
{
    if (n > UINT32_MAX)
        return -EINVAL;
    const int ret = shmb_upstream_classic_check(((fipcup_pool_t *)p->impl)->arena, blocks, blocks ? (uint32_t)n : 0);
    if (ret == -EFAULT || ret == -EBUSY) {
        snprintf(why, cap, "upstream_bipc_bare: %s",
                 ret == -EFAULT ? "(alloc) a block upstream's Pool_arena says is not in its pool"
                                : "(free) the pool's free bytes are not what they were before the blocks: "
                                  "a block not freed, or freed twice");
        return -EPROTO;
    }
    return ret;
}

static int fipcup_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n, size_t bytes,
                         char *why, size_t cap)
{
    (void)handles, (void)bytes;
    return fipcup_check(p, blocks, n, why, cap);
}

static int fipcup_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    (void)n;
    return fipcup_check(p, NULL, 0, why, cap);
}

const shmb_alloc_pool_ops_t shmb_alloc_fipcup_pool = {
    .kind = SHMB_ALLOC_UPSTREAM_CLASSIC_BARE, .name = "upstream_bipc_bare", .per_thread = 1,
    .shm_bytes = fipcup_shm_bytes, .create = fipcup_create, .destroy = fipcup_destroy, .alloc = fipcup_alloc,
    .free = fipcup_free, .empty = fipcup_free, .holds = fipcup_holds, .verify = fipcup_verify,
    .freed = fipcup_freed};
