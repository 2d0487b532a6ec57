/* alloc_pool_fipc: Flow-IPC's pools behind the table: bipc, jemalloc(_tcache), their object
 * layers, and upstream's own Pool_arena (docs/allocation.md, docs/upstream.md). */
#include "alloc_internal.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/upstream_flowipc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIPC_BLOCK_OVERHEAD 64     /* bytes per block the pool is given beyond the block */
#define BIPC_POOL_SLACK (1u << 20) /* bytes for the segment manager and rounding */

enum { F_BIPC, F_JEMALLOC, F_JEMALLOC_TCACHE, F_BIPC_OBJECT, F_JEMALLOC_OBJECT, F_UPSTREAM_BIPC, F_COUNT };

/* ---- bipc: Flow-IPC SHM-classic ---- */

static uint64_t bipc_shm_bytes(uint64_t bytes, uint64_t blocks)
{
    return blocks * (bytes + BIPC_BLOCK_OVERHEAD) + BIPC_POOL_SLACK;
}

static int bipc_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    return shmb_fipc_classic_create(prefix, size, (shmb_fipc_classic_t **)&p->impl);
}

static int bipc_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    int ret = shmb_fipc_classic_destroy(p->impl, unlink_shm);
    *kept += ret == 0 && !unlink_shm;
    return ret;
}

static int bipc_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    (void)handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_classic_alloc(p->impl, bytes, &blocks[i]);
    return ret;
}

static int bipc_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_classic_free(p->impl, blocks[order[i]]);
    return ret;
}

static int bipc_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    return shmb_alloc_inside(shmb_fipc_classic_base(p->impl), shmb_fipc_classic_size(p->impl), ptr, bytes);
}

/* Its one pool, id 0. */
static int bipc_lend(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n)
{
    shmb_fipc_pool_t *v = calloc(1, sizeof(*v));
    if (!v)
        return shmb_error_record("malloc", ENOMEM, NULL);
    v->bytes = shmb_fipc_classic_size(p->impl);
    snprintf(v->name, sizeof(v->name), "%s", shmb_fipc_classic_name(p->impl));
    *out = v;
    *n = 1;
    return 0;
}

/* The block's offset from the pool's base. */
static int bipc_handle(shmb_alloc_pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h)
{
    memset(h, 0, sizeof(*h));
    h->len = bytes;
    h->pool_offset = (uint64_t)((const unsigned char *)block - (unsigned char *)shmb_fipc_classic_base(p->impl));
    return 0;
}

/* get_free_memory, and the largest request that allocates now, found by a
 * binary search with each probe freed at once (rbtree_best_fit serves a
 * request from any free block large enough, so success is monotone in size). */
static int bipc_space(shmb_alloc_pool_t *p, uint64_t *total_free, uint64_t *largest)
{
    uint64_t lo = 0, hi = shmb_fipc_classic_free_bytes(p->impl);
    *total_free = hi;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        void *block;
        int ret = shmb_fipc_classic_alloc(p->impl, (size_t)mid, &block);
        if (ret == 0 && (ret = shmb_fipc_classic_free(p->impl, block)) < 0)
            return ret;
        if (ret == 0)
            lo = mid;
        else if (ret == -ENOMEM)
            hi = mid - 1;
        else
            return ret;
    }
    *largest = lo;
    return 0;
}

/* ---- jemalloc, jemalloc_tcache: Flow-IPC SHM-jemalloc ---- */

/* What jemalloc's extents hold at most: its size classes round up by <= 25%. */
static uint64_t jemalloc_shm_bytes(uint64_t bytes, uint64_t blocks)
{
    const uint64_t pages = (bytes + SHMB_ALLOC_PAGE - 1) / SHMB_ALLOC_PAGE * SHMB_ALLOC_PAGE;
    return blocks * pages / 4 * 5 + SHMB_ALLOC_POOL_META_BYTES;
}

/* Its extents are made as it needs them; jemalloc_tcache's with a thread cache. */
static int jemalloc_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    (void)size;
    const int tcache = p->ops->kind == SHMB_ALLOC_JEMALLOC_TCACHE;
    return shmb_fipc_jemalloc_create(prefix, tcache, (shmb_fipc_jemalloc_t **)&p->impl);
}

static int jemalloc_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    return shmb_fipc_jemalloc_destroy(p->impl, unlink_shm, kept);
}

static int jemalloc_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    (void)handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_jemalloc_alloc(p->impl, bytes, &blocks[i]);
    return ret;
}

static int jemalloc_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_jemalloc_free(p->impl, blocks[order[i]]);
    return ret;
}

/* The bytes of every SHM pool its arena has mapped. */
static uint64_t jemalloc_mapped(shmb_alloc_pool_t *p)
{
    uint64_t bytes = 0;
    shmb_fipc_jemalloc_pools(p->impl, &bytes);
    return bytes;
}

/* This thread's tcache, made on first use: not inside a timed batch. */
static int jemalloc_thread_start(shmb_alloc_pool_t *p, size_t bytes)
{
    void *block;
    int ret = jemalloc_alloc(p, bytes, &block, NULL, 1);
    return ret < 0 ? ret : jemalloc_free(p, &block, NULL, &(uint64_t){0}, 1);
}

static int jemalloc_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    shmb_fipc_repo_t *repo = shmb_fipc_jemalloc_repo(p->impl);
    uint32_t id;
    uint64_t off;
    return shmb_fipc_repo_from_address(repo, ptr, &id, &off) == 0 &&
           shmb_fipc_repo_to_address(repo, id, off, bytes) == ptr;
}

/* Every SHM pool its arena has now: no pool goes while blocks live. */
static int jemalloc_lend(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n)
{
    size_t count = shmb_fipc_jemalloc_pool_list(p->impl, NULL, 0);
    shmb_fipc_pool_t *v = calloc(count ? count : 1, sizeof(*v));
    if (!v)
        return shmb_error_record("malloc", ENOMEM, NULL);
    *n = shmb_fipc_jemalloc_pool_list(p->impl, v, count);
    *out = v;
    return 0;
}

/* The block's (pool id, offset) from the repository. */
static int jemalloc_handle(shmb_alloc_pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h)
{
    memset(h, 0, sizeof(*h));
    h->len = bytes;
    return shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(p->impl), block, &h->id, &h->offset);
}

/* ---- bipc_object, jemalloc_object: the object layers over their pools ---- */

typedef struct objects {
    shmb_alloc_pool_t pool; /* the bare pool under the objects */
    union {
        shmb_fipc_classic_objects_t *classic;
        shmb_fipc_jemalloc_objects_t *jemalloc;
    } objs;
    uint64_t freed_seen; /* the frees' count at the last check */
} objects_t;

static int classic(const shmb_alloc_pool_t *p)
{
    return p->ops->kind == SHMB_ALLOC_BIPC_OBJECT;
}

static int objects_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    const int c = classic(p);
    objects_t *b = calloc(1, sizeof(*b));
    if (!b)
        return shmb_error_record("malloc", ENOMEM, NULL);
    b->pool.ops = &shmb_alloc_fipc_pools[c ? F_BIPC : F_JEMALLOC];
    int ret = b->pool.ops->create(&b->pool, prefix, size);
    if (ret == 0 && (ret = c ? shmb_fipc_classic_objects_create(b->pool.impl, &b->objs.classic)
                             : shmb_fipc_jemalloc_objects_create(b->pool.impl, &b->objs.jemalloc)) < 0) {
        shmb_error_record(c ? "Pool_arena" : "Ipc_arena", -ret, NULL);
        uint64_t kept = 0; /* none: unlinked */
        b->pool.ops->destroy(&b->pool, 1, &kept);
    }
    if (ret < 0) {
        free(b);
        return ret;
    }
    p->impl = b;
    return 0;
}

static int objects_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    objects_t *b = p->impl;
    if (classic(p))
        shmb_fipc_classic_objects_destroy(b->objs.classic);
    else
        shmb_fipc_jemalloc_objects_destroy(b->objs.jemalloc);
    int ret = b->pool.ops->destroy(&b->pool, unlink_shm, kept);
    free(b);
    return ret;
}

/* The timed loops, one per model: a direct call per object. */
static int bipc_object_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    shmb_fipc_classic_objects_t *objs = ((objects_t *)p->impl)->objs.classic;
    shmb_fipc_classic_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        if ((ret = shmb_fipc_classic_object_new(objs, bytes, &h[i])) == 0)
            blocks[i] = h[i].addr;
    return ret;
}

static int bipc_object_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)blocks;
    shmb_fipc_classic_objects_t *objs = ((objects_t *)p->impl)->objs.classic;
    shmb_fipc_classic_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_classic_object_drop(objs, &h[order[i]]);
    return ret;
}

static int jemalloc_object_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    shmb_fipc_jemalloc_objects_t *objs = ((objects_t *)p->impl)->objs.jemalloc;
    shmb_fipc_jemalloc_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        if ((ret = shmb_fipc_jemalloc_object_new(objs, bytes, &h[i])) == 0)
            blocks[i] = h[i].addr;
    return ret;
}

static int jemalloc_object_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order,
                                uint64_t n)
{
    (void)blocks;
    shmb_fipc_jemalloc_objects_t *objs = ((objects_t *)p->impl)->objs.jemalloc;
    shmb_fipc_jemalloc_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_jemalloc_object_drop(objs, &h[order[i]]);
    return ret;
}

static int objects_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    objects_t *b = p->impl;
    return b->pool.ops->holds(&b->pool, ptr, bytes);
}

/* Each block is its handle's object, the handle as construct made it
 * (jemalloc: inside one of the arena's pools, through the repository). */
static int objects_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n, size_t bytes,
                          char *why, size_t cap)
{
    const objects_t *b = p->impl;
    const int c = classic(p);
    const shmb_fipc_classic_handle_t *hc = handles;
    const shmb_fipc_jemalloc_handle_t *hj = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        void *addr = c ? hc[i].addr : hj[i].addr;
        if (blocks[i] != addr) {
            snprintf(why, cap, "%s: block %p is not its handle's object (%p)", p->ops->name, blocks[i], addr);
            return -EPROTO;
        }
        ret = c ? shmb_fipc_classic_object_check(b->objs.classic, &hc[i], bytes, why, cap)
                : shmb_fipc_jemalloc_object_check(b->objs.jemalloc, &hj[i], why, cap);
    }
    return ret;
}

/* After round 0's free batch: every object constructed so far is freed,
 * each once (freed moved by exactly n since the last check: a deleter that
 * never ran, or ran twice, moves it by another amount). */
static int objects_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    objects_t *b = p->impl;
    uint64_t constructed, freed;
    if (classic(p))
        shmb_fipc_classic_objects_counts(b->objs.classic, &constructed, &freed);
    else
        shmb_fipc_jemalloc_objects_counts(b->objs.jemalloc, &constructed, &freed);
    const uint64_t now = freed - b->freed_seen;
    b->freed_seen = freed;
    if (now == n && constructed == freed)
        return 0;
    snprintf(why, cap, "%s (free): %llu objects dropped, %llu freed by their deleters, %llu of %llu constructed "
             "still live", p->ops->name, (unsigned long long)n, (unsigned long long)now,
             (unsigned long long)(constructed - (freed < constructed ? freed : constructed)),
             (unsigned long long)constructed);
    return -EPROTO;
}

static int objects_lend(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n)
{
    objects_t *b = p->impl;
    return b->pool.ops->lend(&b->pool, out, n);
}

static int objects_handle(shmb_alloc_pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h)
{
    objects_t *b = p->impl;
    return b->pool.ops->handle(&b->pool, block, bytes, h);
}

/* ---- upstream_bipc_bare: SHM-classic's own Pool_arena (docs/upstream.md), its pool named by
 * upstream under the run's prefix, tracked so that a fatal signal removes it ---- */

typedef struct fipcup_pool {
    shmb_upstream_classic_t *arena;
    int tracked; /* shmb_segment_track_file's id */
} fipcup_pool_t;

static int fipcup_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    fipcup_pool_t *o = calloc(1, sizeof(*o));
    char name[SHMB_SEGMENT_NAME_MAX + 1], path[SHMB_SEGMENT_NAME_MAX + 16];
    if (!o)
        return shmb_error_record("malloc", ENOMEM, NULL);
    o->tracked = -1;
    int ret = shmb_segment_make_name(name, sizeof(name), prefix);
    if (ret == 0) {
        snprintf(path, sizeof(path), "/dev/shm%s", name);
        o->tracked = shmb_segment_track_file(path); /* before it exists: a signal meanwhile removes it */
        if (o->tracked < 0)
            ret = shmb_error_record("shmb_segment_track_file", -o->tracked, path);
    }
    if (ret == 0 && (ret = shmb_upstream_classic_create(name, size, &o->arena)) < 0)
        shmb_error_record("upstream Pool_arena", -ret, name);
    if (ret < 0) {
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

/* ---- the table's Flow-IPC entries ---- */

const shmb_alloc_pool_ops_t shmb_alloc_fipc_pools[F_COUNT] = {
    [F_BIPC] = {.kind = SHMB_ALLOC_BIPC, .name = "bipc", .shm_bytes = bipc_shm_bytes, .create = bipc_create,
                .destroy = bipc_destroy, .alloc = bipc_alloc, .free = bipc_free, .empty = bipc_free,
                .holds = bipc_holds, .lend = bipc_lend, .handle = bipc_handle,
                .peer_kind = SHMB_ALLOC_PEER_CLASSIC, .space = bipc_space},
    [F_JEMALLOC] = {.kind = SHMB_ALLOC_JEMALLOC, .name = "jemalloc", .shm_bytes = jemalloc_shm_bytes,
                    .create = jemalloc_create, .destroy = jemalloc_destroy, .alloc = jemalloc_alloc,
                    .free = jemalloc_free, .empty = jemalloc_free, .holds = jemalloc_holds,
                    .lend = jemalloc_lend, .handle = jemalloc_handle, .peer_kind = SHMB_ALLOC_PEER_JEMALLOC,
                    .mapped = jemalloc_mapped},
    [F_JEMALLOC_TCACHE] = {.kind = SHMB_ALLOC_JEMALLOC_TCACHE, .name = "jemalloc_tcache",
                           .shm_bytes = jemalloc_shm_bytes, .create = jemalloc_create,
                           .destroy = jemalloc_destroy, .thread_start = jemalloc_thread_start,
                           .alloc = jemalloc_alloc, .free = jemalloc_free, .empty = jemalloc_free,
                           .holds = jemalloc_holds, .lend = jemalloc_lend, .handle = jemalloc_handle,
                           .peer_kind = SHMB_ALLOC_PEER_JEMALLOC},
    [F_BIPC_OBJECT] = {.kind = SHMB_ALLOC_BIPC_OBJECT, .name = "bipc_object",
                       .handle_bytes = sizeof(shmb_fipc_classic_handle_t), .shm_bytes = bipc_shm_bytes,
                       .create = objects_create, .destroy = objects_destroy, .alloc = bipc_object_alloc,
                       .free = bipc_object_free, .empty = bipc_object_free, .holds = objects_holds,
                       .verify = objects_verify, .freed = objects_freed, .lend = objects_lend,
                       .handle = objects_handle, .peer_kind = SHMB_ALLOC_PEER_CLASSIC},
    [F_JEMALLOC_OBJECT] = {.kind = SHMB_ALLOC_JEMALLOC_OBJECT, .name = "jemalloc_object",
                           .handle_bytes = sizeof(shmb_fipc_jemalloc_handle_t), .shm_bytes = jemalloc_shm_bytes,
                           .create = objects_create, .destroy = objects_destroy, .alloc = jemalloc_object_alloc,
                           .free = jemalloc_object_free, .empty = jemalloc_object_free, .holds = objects_holds,
                           .verify = objects_verify, .freed = objects_freed, .lend = objects_lend,
                           .handle = objects_handle, .peer_kind = SHMB_ALLOC_PEER_JEMALLOC},
    [F_UPSTREAM_BIPC] = {.kind = SHMB_ALLOC_UPSTREAM_CLASSIC_BARE, .name = "upstream_bipc_bare", .per_thread = 1,
                         .shm_bytes = bipc_shm_bytes, .create = fipcup_create, .destroy = fipcup_destroy,
                         .alloc = fipcup_alloc, .free = fipcup_free, .empty = fipcup_free, .holds = fipcup_holds,
                         .verify = fipcup_verify, .freed = fipcup_freed},
};
const size_t shmb_alloc_fipc_npools = F_COUNT;
