/* alloc_pool_fipc: Flow-IPC's pools behind the table (alloc_internal.h):
 * SHM-classic's boost.interprocess pool (bipc) and SHM-jemalloc's arena
 * over SHM pools (jemalloc, jemalloc_tcache), each with its object layer
 * (bipc_object: Pool_arena::construct, jemalloc_object: Ipc_arena::construct;
 * docs/allocation.md). */
#include "alloc_internal.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIPC_BLOCK_OVERHEAD 64     /* bytes per block the pool is given beyond the block */
#define BIPC_POOL_SLACK (1u << 20) /* bytes for the segment manager and rounding */

enum { F_BIPC, F_JEMALLOC, F_JEMALLOC_TCACHE, F_BIPC_OBJECT, F_JEMALLOC_OBJECT, F_COUNT };

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

/* jemalloc's thread cache for blocks of `bytes`, as jemalloc 5.3 sizes it
 * (jemalloc/jemalloc src/tcache.c, tcache_ncached_max_compute): a small
 * class caches its slab's regions << opt.lg_tcache_nslots_mul, even, within
 * [opt.tcache_nslots_small_min, opt.tcache_nslots_small_max]; a large class
 * up to arenas.tcache_max caches opt.tcache_nslots_large; above, none. */
static int tcache_setting(const char *name, uint64_t *out)
{
    int64_t v;
    int ret = shmb_fipc_jemalloc_setting(name, &v);
    if (ret < 0)
        return shmb_error_record("mallctl", -ret, name);
    *out = v < 0 ? 0 : (uint64_t)v;
    return 0;
}

static uint64_t even_up(uint64_t n)
{
    return n + n % 2;
}

/* The small class's slots: nregs scaled, clamped as jemalloc clamps it. */
static int tcache_small_slots(uint64_t nregs, uint64_t *slots)
{
    uint64_t lo = 0, hi = 0;
    int64_t mul = 0;
    int ret = tcache_setting("opt.tcache_nslots_small_min", &lo);
    if (ret == 0)
        ret = tcache_setting("opt.tcache_nslots_small_max", &hi);
    if (ret == 0 && (ret = shmb_fipc_jemalloc_setting("opt.lg_tcache_nslots_mul", &mul)) < 0)
        return shmb_error_record("mallctl", -ret, "opt.lg_tcache_nslots_mul");
    if (ret < 0)
        return ret;
    lo = even_up(lo) < 2 ? 2 : even_up(lo);
    hi = hi - hi % 2 < 2 ? 2 : hi - hi % 2;
    lo = lo > hi ? hi : lo;
    const uint64_t want = even_up(mul < 0 ? nregs >> (-mul < 63 ? -mul : 63) : nregs << (mul < 32 ? mul : 32));
    *slots = want <= lo ? lo : want <= hi ? want : hi;
    return 0;
}

int shmb_alloc_tcache_reach(uint64_t bytes, uint64_t *max_bytes, uint64_t *slots)
{
    uint64_t max = 0, nbins = 0, size = 0, nregs = 0;
    int ret = tcache_setting("arenas.tcache_max", &max);
    if (ret == 0)
        ret = tcache_setting("arenas.nbins", &nbins);
    char name[64];
    for (uint64_t i = 0; ret == 0 && i < nbins && size < bytes; i++) {
        snprintf(name, sizeof(name), "arenas.bin.%llu.size", (unsigned long long)i);
        if ((ret = tcache_setting(name, &size)) == 0 && size >= bytes) {
            snprintf(name, sizeof(name), "arenas.bin.%llu.nregs", (unsigned long long)i);
            ret = tcache_setting(name, &nregs);
        }
    }
    uint64_t n = 0;
    if (ret == 0 && bytes <= max)
        ret = nregs ? tcache_small_slots(nregs, &n) : tcache_setting("opt.tcache_nslots_large", &n);
    if (ret < 0)
        return ret;
    *max_bytes = max;
    *slots = n;
    return 0;
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
};
const size_t shmb_alloc_fipc_npools = F_COUNT;
