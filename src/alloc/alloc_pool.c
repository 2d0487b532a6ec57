/* alloc_pool: the pool allocators of the allocation benchmark behind one
 * table of operations (src/alloc_internal.h), the check of their blocks,
 * and the hand-off of blocks to a peer process.
 *
 *   offset           (system: Mooncake Store) shmbench/offset_alloc.h: the
 *                    OffsetBufferAllocator model over one SHM segment created
 *                    and mapped as createSharedMemory does, shared by every
 *                    thread
 *   arena            (kernel, a reference) shmbench/arena.h: an ideal lock-free,
 *                    single-process free-stack pool over one segment; one per
 *                    thread with several threads
 *   bipc             (system: Flow-IPC SHM-classic) boost.interprocess
 *                    rbtree_best_fit under its mutex, in one SHM pool
 *   jemalloc         (system: Flow-IPC SHM-jemalloc) mallocx in a jemalloc
 *                    arena whose extents are SHM pools, no thread cache
 *   jemalloc_tcache  the same with an explicit thread cache per thread
 * Each system's other layer (the rows' alloc / free are the object layer,
 * alloc_bare / free_bare the bare allocator; docs/allocation.md):
 *   offset_bare         (Mooncake Store) OffsetAllocator alone, without
 *                       OffsetBufferAllocator's AllocatedBuffer, counter and
 *                       metrics
 *   bipc_object      (Flow-IPC SHM-classic) Pool_arena::construct: the
 *                       object in the pool and its boost::shared_ptr
 *   jemalloc_object  (Flow-IPC SHM-jemalloc) Ipc_arena::construct: the
 *                       object from mallocx and its std::shared_ptr
 * And upstream's own code, where the library was built against it
 * (docs/upstream.md):
 *   upstream_offset_bare  (mooncake_upstream) Mooncake Store's
 *                       OffsetAllocator compiled from the user's source,
 *                       over a segment made as offset_bare's
 */
#include "alloc_internal.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/arena.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/offset_alloc.h"
#include "shmbench/segment.h"
#include "shmbench/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIPC_BLOCK_OVERHEAD 64     /* bytes per block the pool is given beyond the block */
#define BIPC_POOL_SLACK (1u << 20) /* bytes for the segment manager and rounding */

static int inside(const void *base, size_t size, const void *ptr, size_t bytes)
{
    const unsigned char *c = ptr, *b = base;
    return c >= b && (size_t)(c - b) <= size && bytes <= size - (size_t)(c - b);
}

/* ---- offset: Mooncake Store ---- */

/* Upstream's caller keeps each AllocatedBuffer it got; the table's free is
 * given addresses, so the pool keeps the blocks by offset / 1 KB (every
 * request here is a multiple of 1 KB, and so is every bin it rounds to and
 * every offset): a shift and a load per free that upstream does not pay. */
#define OFFSET_SLOT_SHIFT 10

typedef struct offset_pool {
    shmb_segment_t seg;
    shmb_offset_t *alloc;
    shmb_offset_block_t **slot; /* the live block at offset i << OFFSET_SLOT_SHIFT, or NULL */
} offset_pool_t;

/* Each block takes its bin (<= 12.5% above the request); a request above
 * the largest bin is bounded the same way. */
static uint64_t offset_shm_bytes(uint64_t bytes, uint64_t blocks)
{
    const uint64_t bin = shmb_offset_footprint(bytes);
    return blocks * (bin ? bin : bytes + bytes / 8);
}

/* createSharedMemory (shm_open, ftruncate, mmap, close), then the segment
 * mounted: OffsetBufferAllocator's constructor over it. */
static int offset_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    offset_pool_t *o = calloc(1, sizeof(*o));
    if (!o)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = shmb_segment_create(&o->seg, prefix, size, NULL, NULL);
    if (ret == 0) {
        if ((ret = shmb_segment_map(&o->seg, NULL)) == 0 &&
            (ret = shmb_offset_create(o->seg.addr, size, 0, &o->alloc)) < 0)
            shmb_error_record("OffsetBufferAllocator", -ret, o->seg.name);
        if (ret == 0 && !(o->slot = calloc((size >> OFFSET_SLOT_SHIFT) + 1, sizeof(*o->slot))))
            ret = shmb_error_record("malloc", ENOMEM, NULL);
        if (ret < 0) {
            shmb_offset_destroy(o->alloc);
            shmb_segment_destroy(&o->seg, NULL);
        }
    }
    if (ret < 0) {
        free(o);
        return ret;
    }
    p->impl = o;
    return 0;
}

/* The slot of the block at ptr, or NULL when none starts there. */
static shmb_offset_block_t **offset_slot(offset_pool_t *o, const void *ptr)
{
    const uintptr_t off = (uintptr_t)ptr - (uintptr_t)o->seg.addr;
    if ((uintptr_t)ptr < (uintptr_t)o->seg.addr || off >= o->seg.size)
        return NULL;
    shmb_offset_block_t **s = &o->slot[off >> OFFSET_SLOT_SHIFT];
    return *s && shmb_offset_address(*s) == ptr ? s : NULL;
}

static int offset_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    (void)handles;
    offset_pool_t *o = p->impl;
    int ret = 0;
    shmb_offset_block_t *b;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        if ((ret = shmb_offset_alloc(o->alloc, bytes, &b)) == 0) {
            blocks[i] = shmb_offset_address(b);
            o->slot[shmb_offset_offset(o->alloc, b) >> OFFSET_SLOT_SHIFT] = b;
        }
    }
    return ret;
}

static int offset_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)handles;
    offset_pool_t *o = p->impl;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        shmb_offset_block_t **s = offset_slot(o, blocks[order[i]]);
        if (!s)
            return -EINVAL;
        shmb_offset_block_t *b = *s;
        *s = NULL; /* before the allocator may hand the offset to another thread */
        ret = shmb_offset_free(b);
    }
    return ret;
}

/* Whatever is still live (a failed run) goes back before the allocator does. */
static int offset_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    offset_pool_t *o = p->impl;
    for (size_t i = 0; shmb_offset_live(o->alloc) > 0 && i <= o->seg.size >> OFFSET_SLOT_SHIFT; i++) {
        if (o->slot[i])
            shmb_offset_free(o->slot[i]);
        o->slot[i] = NULL;
    }
    shmb_offset_destroy(o->alloc);
    free(o->slot);
    int ret;
    if (unlink_shm) {
        ret = shmb_segment_destroy(&o->seg, NULL);
    } else {
        ret = shmb_segment_release(&o->seg);
        *kept += ret == 0;
    }
    free(o);
    return ret;
}

static int offset_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    const offset_pool_t *o = p->impl;
    return inside(o->seg.addr, o->seg.size, ptr, bytes);
}

/* Every block one the allocator made and still holds live, and the
 * allocator's own check of them (shmb_offset_verify). */
static int offset_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n, size_t bytes,
                         char *why, size_t cap)
{
    (void)handles;
    (void)bytes;
    offset_pool_t *o = p->impl;
    shmb_offset_block_t **live = malloc((size_t)(n ? n : 1) * sizeof(*live));
    if (!live)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        shmb_offset_block_t **s = offset_slot(o, blocks[i]);
        if (s) {
            live[i] = *s;
        } else {
            snprintf(why, cap, "offset: block %p is not a live block of its allocator", blocks[i]);
            ret = -EPROTO;
        }
    }
    if (ret == 0 && (ret = shmb_offset_verify(o->alloc, live, (size_t)n, why, cap)) == -ENOMEM)
        shmb_error_record("malloc", ENOMEM, NULL);
    free(live);
    return ret;
}

/* ---- arena ---- */

typedef struct arena_pool {
    shmb_segment_t seg;
    shmb_arena_t arena;
} arena_pool_t;

static uint64_t arena_shm_bytes(uint64_t bytes, uint64_t blocks)
{
    return blocks * shmb_arena_block_bytes((size_t)bytes);
}

static int arena_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    arena_pool_t *a = calloc(1, sizeof(*a));
    if (!a)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = shmb_segment_create(&a->seg, prefix, size, NULL, NULL);
    if (ret == 0) {
        if ((ret = shmb_segment_map(&a->seg, NULL)) == 0)
            ret = shmb_arena_init(&a->arena, a->seg.addr, size);
        if (ret < 0)
            shmb_segment_destroy(&a->seg, NULL);
    }
    if (ret < 0) {
        free(a);
        return ret;
    }
    p->impl = a;
    return 0;
}

static int arena_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    arena_pool_t *a = p->impl;
    shmb_arena_fini(&a->arena);
    int ret;
    if (unlink_shm) {
        ret = shmb_segment_destroy(&a->seg, NULL);
    } else {
        ret = shmb_segment_release(&a->seg);
        *kept += ret == 0;
    }
    free(a);
    return ret;
}

static int arena_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    (void)handles;
    shmb_arena_t *arena = &((arena_pool_t *)p->impl)->arena;
    int ret = 0;
    shmb_handle_t h;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        if ((ret = shmb_arena_alloc(arena, bytes, &h)) == 0)
            blocks[i] = shmb_arena_ptr(arena, h);
    return ret;
}

static int arena_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)handles;
    shmb_arena_t *arena = &((arena_pool_t *)p->impl)->arena;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_arena_free(arena, shmb_arena_handle(arena, blocks[order[i]]));
    return ret;
}

/* The arena forgets its blocks at once. */
static int arena_empty(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)blocks;
    (void)handles;
    (void)order;
    (void)n;
    shmb_arena_reset(&((arena_pool_t *)p->impl)->arena);
    return 0;
}

static int arena_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    const arena_pool_t *a = p->impl;
    return inside(a->seg.addr, a->seg.size, ptr, bytes);
}

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
    return inside(shmb_fipc_classic_base(p->impl), shmb_fipc_classic_size(p->impl), ptr, bytes);
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

/* ---- jemalloc, jemalloc_tcache: Flow-IPC SHM-jemalloc ---- */

/* What jemalloc's extents hold at most: its size classes round up by <= 25%. */
static uint64_t jemalloc_shm_bytes(uint64_t bytes, uint64_t blocks)
{
    const uint64_t pages = (bytes + SHMB_ALLOC_PAGE - 1) / SHMB_ALLOC_PAGE * SHMB_ALLOC_PAGE;
    return blocks * pages / 4 * 5 + SHMB_ALLOC_POOL_META_BYTES;
}

static int jemalloc_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    (void)size; /* its extents are made as it needs them */
    return shmb_fipc_jemalloc_create(prefix, 0, (shmb_fipc_jemalloc_t **)&p->impl);
}

static int jemalloc_tcache_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    (void)size;
    return shmb_fipc_jemalloc_create(prefix, 1, (shmb_fipc_jemalloc_t **)&p->impl);
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

/* ---- the frees' check ---- */

/* The check after round 0's free batch of an object layer: every object
 * constructed so far is freed, each once (freed moved by exactly n since
 * the last check: a deleter that never ran, or ran twice, moves it by
 * another amount). */
static int check_frees(const char *kind, uint64_t constructed, uint64_t freed, uint64_t *seen, uint64_t n,
                       char *why, size_t cap)
{
    const uint64_t now = freed - *seen;
    *seen = freed;
    if (now == n && constructed == freed)
        return 0;
    snprintf(why, cap, "%s (free): %llu objects dropped, %llu freed by their deleters, %llu of %llu constructed "
             "still live", kind, (unsigned long long)n, (unsigned long long)now,
             (unsigned long long)(constructed - (freed < constructed ? freed : constructed)),
             (unsigned long long)constructed);
    return -EPROTO;
}

/* Mooncake's object layer: every AllocatedBuffer's destructor gave its
 * block back (the allocator counts none live, no bytes in use). */
static int offset_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    offset_pool_t *o = p->impl;
    if (shmb_offset_live(o->alloc) == 0 && shmb_offset_in_use(o->alloc) == 0)
        return 0;
    snprintf(why, cap, "offset (free): %llu blocks dropped, the allocator still counts %llu live",
             (unsigned long long)n, (unsigned long long)shmb_offset_live(o->alloc));
    return -EPROTO;
}

/* ---- offset_bare: Mooncake Store's OffsetAllocator alone ---- */

typedef struct offset_bare_pool {
    shmb_segment_t seg;
    shmb_offset_bare_t *alloc;
} offset_bare_pool_t;

static int offset_bare_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    offset_bare_pool_t *o = calloc(1, sizeof(*o));
    if (!o)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = shmb_segment_create(&o->seg, prefix, size, NULL, NULL);
    if (ret == 0) {
        if ((ret = shmb_segment_map(&o->seg, NULL)) == 0 &&
            (ret = shmb_offset_bare_create(o->seg.addr, size, 0, &o->alloc)) < 0)
            shmb_error_record("OffsetAllocator", -ret, o->seg.name);
        if (ret < 0)
            shmb_segment_destroy(&o->seg, NULL);
    }
    if (ret < 0) {
        free(o);
        return ret;
    }
    p->impl = o;
    return 0;
}

/* The handles still live (a failed run) are the caller's: the allocator
 * goes, they then free nothing. */
static int offset_bare_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    offset_bare_pool_t *o = p->impl;
    shmb_offset_bare_destroy(o->alloc);
    int ret;
    if (unlink_shm) {
        ret = shmb_segment_destroy(&o->seg, NULL);
    } else {
        ret = shmb_segment_release(&o->seg);
        *kept += ret == 0;
    }
    free(o);
    return ret;
}

static int offset_bare_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    shmb_offset_bare_t *a = ((offset_bare_pool_t *)p->impl)->alloc;
    shmb_offset_bare_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        if ((ret = shmb_offset_bare_alloc(a, bytes, &h[i])) == 0)
            blocks[i] = h[i].addr;
    return ret;
}

static int offset_bare_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)p;
    (void)blocks;
    shmb_offset_bare_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_offset_bare_free(&h[order[i]]);
    return ret;
}

/* The allocator counts no block live. */
static int offset_bare_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    const uint64_t live = shmb_offset_bare_live(((offset_bare_pool_t *)p->impl)->alloc);
    if (live == 0)
        return 0;
    snprintf(why, cap, "offset_bare (free): %llu blocks freed, the allocator still counts %llu live",
             (unsigned long long)n, (unsigned long long)live);
    return -EPROTO;
}

static int offset_bare_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    const offset_bare_pool_t *o = p->impl;
    return inside(o->seg.addr, o->seg.size, ptr, bytes);
}

/* Each block is its handle's. */
static int offset_bare_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n,
                              size_t bytes, char *why, size_t cap)
{
    (void)p;
    (void)bytes;
    const shmb_offset_bare_handle_t *h = handles;
    for (uint64_t i = 0; i < n; i++) {
        if (blocks[i] != h[i].addr) {
            snprintf(why, cap, "offset_bare: block %p is not its handle's (%p)", blocks[i], h[i].addr);
            return -EPROTO;
        }
    }
    return 0;
}

/* ---- upstream_offset_bare: Mooncake Store's own OffsetAllocator ---- */

/* Block i of a batch lives in upstream slot i (a batch is always the whole
 * working set from block 0, freed by its indices): the slot is the handle,
 * so the caller keeps none. */
typedef struct upstream_pool {
    shmb_segment_t seg;
    shmb_upstream_offset_t *alloc;
    uint32_t slots;
} upstream_pool_t;

static int upstream_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    if (p->blocks == 0 || p->blocks > UINT32_MAX)
        return -EINVAL;
    upstream_pool_t *o = calloc(1, sizeof(*o));
    if (!o)
        return shmb_error_record("malloc", ENOMEM, NULL);
    o->slots = (uint32_t)p->blocks;
    int ret = shmb_segment_create(&o->seg, prefix, size, NULL, NULL);
    if (ret == 0) {
        if ((ret = shmb_segment_map(&o->seg, NULL)) == 0 &&
            (ret = shmb_upstream_offset_create(o->seg.addr, size, o->slots, &o->alloc)) < 0)
            shmb_error_record("upstream OffsetAllocator", -ret, o->seg.name);
        if (ret < 0)
            shmb_segment_destroy(&o->seg, NULL);
    }
    if (ret < 0) {
        free(o);
        return ret;
    }
    p->impl = o;
    return 0;
}

static int upstream_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    upstream_pool_t *o = p->impl;
    shmb_upstream_offset_destroy(o->alloc);
    int ret;
    if (unlink_shm) {
        ret = shmb_segment_destroy(&o->seg, NULL);
    } else {
        ret = shmb_segment_release(&o->seg);
        *kept += ret == 0;
    }
    free(o);
    return ret;
}

static int upstream_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    (void)handles;
    shmb_upstream_offset_t *a = ((upstream_pool_t *)p->impl)->alloc;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_upstream_offset_alloc(a, (uint32_t)i, bytes, &blocks[i]);
    return ret;
}

/* A block freed twice is -ENOENT: the run fails. */
static int upstream_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order, uint64_t n)
{
    (void)blocks;
    (void)handles;
    shmb_upstream_offset_t *a = ((upstream_pool_t *)p->impl)->alloc;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_upstream_offset_free(a, (uint32_t)order[i]);
    return ret;
}

static int upstream_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    const upstream_pool_t *o = p->impl;
    return inside(o->seg.addr, o->seg.size, ptr, bytes);
}

/* blocks[0..n) against upstream's own handles (shmb_upstream_offset_check):
 * live when recorded, each its slot's handle's, inside the range, disjoint;
 * blocks NULL: every slot empty. */
static int upstream_check(upstream_pool_t *o, void *const *blocks, uint64_t n, size_t bytes, const char *pass,
                          char *why, size_t cap)
{
    if (n > o->slots)
        return -EINVAL;
    void **addr = calloc((size_t)n ? (size_t)n : 1, sizeof(*addr));
    size_t *len = malloc(((size_t)n ? (size_t)n : 1) * sizeof(*len));
    int ret = addr && len ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        addr[i] = blocks ? blocks[i] : NULL;
        len[i] = bytes;
    }
    if (ret == 0)
        ret = shmb_upstream_offset_check(o->alloc, addr, len, (uint32_t)n);
    free(addr);
    free(len);
    if (ret == -ENOENT || ret == -EFAULT || ret == -EEXIST) {
        snprintf(why, cap, "upstream_offset_bare (%s): upstream's handles disagree with the blocks: %s", pass,
                 ret == -ENOENT ? (blocks ? "a block not live" : "a block freed not once")
                 : ret == -EFAULT ? "a block that is not its handle's, or outside the range"
                                  : "two blocks overlap");
        return -EPROTO;
    }
    return ret;
}

static int upstream_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n,
                           size_t bytes, char *why, size_t cap)
{
    (void)handles;
    return upstream_check(p->impl, blocks, n, bytes, "alloc", why, cap);
}

/* Every slot empty: each block freed, once (a second free fails the batch). */
static int upstream_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    return upstream_check(p->impl, NULL, n, 0, "free", why, cap);
}

/* ---- bipc_object: Flow-IPC SHM-classic's Pool_arena::construct ---- */

typedef struct bipc_objects {
    shmb_alloc_pool_t pool; /* the bipc pool under the objects */
    shmb_fipc_classic_objects_t *objs;
    uint64_t freed_seen;    /* the frees' count at the last check */
} bipc_objects_t;

static int bipc_object_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    bipc_objects_t *b = calloc(1, sizeof(*b));
    if (!b)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = bipc_create(&b->pool, prefix, size);
    if (ret == 0 && (ret = shmb_fipc_classic_objects_create(b->pool.impl, &b->objs)) < 0) {
        shmb_error_record("Pool_arena", -ret, NULL);
        shmb_fipc_classic_destroy(b->pool.impl, 1);
    }
    if (ret < 0) {
        free(b);
        return ret;
    }
    p->impl = b;
    return 0;
}

static int bipc_object_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    bipc_objects_t *b = p->impl;
    shmb_fipc_classic_objects_destroy(b->objs);
    int ret = bipc_destroy(&b->pool, unlink_shm, kept);
    free(b);
    return ret;
}

static int bipc_object_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    shmb_fipc_classic_objects_t *objs = ((bipc_objects_t *)p->impl)->objs;
    shmb_fipc_classic_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        if ((ret = shmb_fipc_classic_object_new(objs, bytes, &h[i])) == 0)
            blocks[i] = h[i].addr;
    return ret;
}

static int bipc_object_free(shmb_alloc_pool_t *p, void **blocks, void *handles, const uint64_t *order,
                               uint64_t n)
{
    (void)blocks;
    shmb_fipc_classic_objects_t *objs = ((bipc_objects_t *)p->impl)->objs;
    shmb_fipc_classic_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_classic_object_drop(objs, &h[order[i]]);
    return ret;
}

static int bipc_object_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    return bipc_holds(&((bipc_objects_t *)p->impl)->pool, ptr, bytes);
}

/* Each block is its handle's object, the handle as construct made it. */
static int bipc_object_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n,
                                 size_t bytes, char *why, size_t cap)
{
    const shmb_fipc_classic_objects_t *objs = ((bipc_objects_t *)p->impl)->objs;
    const shmb_fipc_classic_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        if (blocks[i] != h[i].addr) {
            snprintf(why, cap, "bipc_object: block %p is not its handle's object (%p)", blocks[i], h[i].addr);
            return -EPROTO;
        }
        ret = shmb_fipc_classic_object_check(objs, &h[i], bytes, why, cap);
    }
    return ret;
}

static int bipc_object_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    bipc_objects_t *b = p->impl;
    uint64_t constructed, freed;
    shmb_fipc_classic_objects_counts(b->objs, &constructed, &freed);
    return check_frees("bipc_object", constructed, freed, &b->freed_seen, n, why, cap);
}

static int bipc_object_lend(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n)
{
    return bipc_lend(&((bipc_objects_t *)p->impl)->pool, out, n);
}

static int bipc_object_handle(shmb_alloc_pool_t *p, const void *block, size_t bytes, shmb_lookup_request_t *h)
{
    return bipc_handle(&((bipc_objects_t *)p->impl)->pool, block, bytes, h);
}

/* ---- jemalloc_object: Flow-IPC SHM-jemalloc's Ipc_arena::construct ---- */

typedef struct jemalloc_objects {
    shmb_alloc_pool_t pool; /* the jemalloc arena under the objects */
    shmb_fipc_jemalloc_objects_t *objs;
    uint64_t freed_seen;
} jemalloc_objects_t;

static int jemalloc_object_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    jemalloc_objects_t *b = calloc(1, sizeof(*b));
    if (!b)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = jemalloc_create(&b->pool, prefix, size);
    if (ret == 0 && (ret = shmb_fipc_jemalloc_objects_create(b->pool.impl, &b->objs)) < 0) {
        shmb_error_record("Ipc_arena", -ret, NULL);
        shmb_fipc_jemalloc_destroy(b->pool.impl, 1, NULL);
    }
    if (ret < 0) {
        free(b);
        return ret;
    }
    p->impl = b;
    return 0;
}

static int jemalloc_object_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    jemalloc_objects_t *b = p->impl;
    shmb_fipc_jemalloc_objects_destroy(b->objs);
    int ret = jemalloc_destroy(&b->pool, unlink_shm, kept);
    free(b);
    return ret;
}

static int jemalloc_object_alloc(shmb_alloc_pool_t *p, size_t bytes, void **blocks, void *handles, uint64_t n)
{
    shmb_fipc_jemalloc_objects_t *objs = ((jemalloc_objects_t *)p->impl)->objs;
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
    shmb_fipc_jemalloc_objects_t *objs = ((jemalloc_objects_t *)p->impl)->objs;
    shmb_fipc_jemalloc_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_fipc_jemalloc_object_drop(objs, &h[order[i]]);
    return ret;
}

static int jemalloc_object_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    return jemalloc_holds(&((jemalloc_objects_t *)p->impl)->pool, ptr, bytes);
}

static int jemalloc_object_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n,
                                     size_t bytes, char *why, size_t cap)
{
    (void)bytes; /* inside one of the arena's pools: holds, through the repository */
    const shmb_fipc_jemalloc_objects_t *objs = ((jemalloc_objects_t *)p->impl)->objs;
    const shmb_fipc_jemalloc_handle_t *h = handles;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        if (blocks[i] != h[i].addr) {
            snprintf(why, cap, "jemalloc_object: block %p is not its handle's object (%p)", blocks[i],
                     h[i].addr);
            return -EPROTO;
        }
        ret = shmb_fipc_jemalloc_object_check(objs, &h[i], why, cap);
    }
    return ret;
}

static int jemalloc_object_freed(shmb_alloc_pool_t *p, uint64_t n, char *why, size_t cap)
{
    jemalloc_objects_t *b = p->impl;
    uint64_t constructed, freed;
    shmb_fipc_jemalloc_objects_counts(b->objs, &constructed, &freed);
    return check_frees("jemalloc_object", constructed, freed, &b->freed_seen, n, why, cap);
}

static int jemalloc_object_lend(shmb_alloc_pool_t *p, shmb_fipc_pool_t **out, size_t *n)
{
    return jemalloc_lend(&((jemalloc_objects_t *)p->impl)->pool, out, n);
}

static int jemalloc_object_handle(shmb_alloc_pool_t *p, const void *block, size_t bytes,
                                     shmb_lookup_request_t *h)
{
    return jemalloc_handle(&((jemalloc_objects_t *)p->impl)->pool, block, bytes, h);
}

/* ---- the table ---- */

static const shmb_alloc_pool_ops_t pools[] = {
    {.kind = SHMB_ALLOC_OFFSET, .shm_bytes = offset_shm_bytes, .create = offset_create,
     .destroy = offset_destroy, .alloc = offset_alloc, .free = offset_free, .empty = offset_free,
     .holds = offset_holds, .verify = offset_verify, .freed = offset_freed},
    {.kind = SHMB_ALLOC_ARENA, .per_thread = 1, .shm_bytes = arena_shm_bytes, .create = arena_create,
     .destroy = arena_destroy, .alloc = arena_alloc, .free = arena_free, .empty = arena_empty,
     .holds = arena_holds},
    {.kind = SHMB_ALLOC_BIPC, .shm_bytes = bipc_shm_bytes, .create = bipc_create, .destroy = bipc_destroy,
     .alloc = bipc_alloc, .free = bipc_free, .empty = bipc_free, .holds = bipc_holds, .lend = bipc_lend,
     .handle = bipc_handle, .peer_kind = SHMB_ALLOC_PEER_CLASSIC},
    {.kind = SHMB_ALLOC_JEMALLOC, .shm_bytes = jemalloc_shm_bytes, .create = jemalloc_create,
     .destroy = jemalloc_destroy, .alloc = jemalloc_alloc, .free = jemalloc_free, .empty = jemalloc_free,
     .holds = jemalloc_holds, .lend = jemalloc_lend, .handle = jemalloc_handle,
     .peer_kind = SHMB_ALLOC_PEER_JEMALLOC},
    {.kind = SHMB_ALLOC_JEMALLOC_TCACHE, .shm_bytes = jemalloc_shm_bytes, .create = jemalloc_tcache_create,
     .destroy = jemalloc_destroy, .thread_start = jemalloc_thread_start, .alloc = jemalloc_alloc,
     .free = jemalloc_free, .empty = jemalloc_free, .holds = jemalloc_holds, .lend = jemalloc_lend,
     .handle = jemalloc_handle, .peer_kind = SHMB_ALLOC_PEER_JEMALLOC},
    {.kind = SHMB_ALLOC_OFFSET_BARE, .handle_bytes = sizeof(shmb_offset_bare_handle_t),
     .shm_bytes = offset_shm_bytes, .create = offset_bare_create, .destroy = offset_bare_destroy,
     .alloc = offset_bare_alloc, .free = offset_bare_free, .empty = offset_bare_free,
     .holds = offset_bare_holds, .verify = offset_bare_verify, .freed = offset_bare_freed},
    {.kind = SHMB_ALLOC_BIPC_OBJECT, .handle_bytes = sizeof(shmb_fipc_classic_handle_t),
     .shm_bytes = bipc_shm_bytes, .create = bipc_object_create, .destroy = bipc_object_destroy,
     .alloc = bipc_object_alloc, .free = bipc_object_free, .empty = bipc_object_free,
     .holds = bipc_object_holds, .verify = bipc_object_verify, .freed = bipc_object_freed,
     .lend = bipc_object_lend, .handle = bipc_object_handle, .peer_kind = SHMB_ALLOC_PEER_CLASSIC},
    {.kind = SHMB_ALLOC_JEMALLOC_OBJECT, .handle_bytes = sizeof(shmb_fipc_jemalloc_handle_t),
     .shm_bytes = jemalloc_shm_bytes, .create = jemalloc_object_create,
     .destroy = jemalloc_object_destroy, .alloc = jemalloc_object_alloc, .free = jemalloc_object_free,
     .empty = jemalloc_object_free, .holds = jemalloc_object_holds, .verify = jemalloc_object_verify,
     .freed = jemalloc_object_freed, .lend = jemalloc_object_lend, .handle = jemalloc_object_handle,
     .peer_kind = SHMB_ALLOC_PEER_JEMALLOC},
    {.kind = SHMB_ALLOC_UPSTREAM_BARE, .per_thread = 1, .shm_bytes = offset_shm_bytes, .create = upstream_create,
     .destroy = upstream_destroy, .alloc = upstream_alloc, .free = upstream_free, .empty = upstream_free,
     .holds = upstream_holds, .verify = upstream_verify, .freed = upstream_freed},
};

const shmb_alloc_pool_ops_t *shmb_alloc_pool_ops(shmb_alloc_kind_t kind)
{
    for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
        if (pools[i].kind == kind)
            return &pools[i];
    return NULL;
}

/* ---- the check of the blocks, and the peer ---- */

static int compare_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

int shmb_alloc_pool_verify(shmb_alloc_pool_t *const *pools_of, uint64_t per_pool, void **blocks, const void *handles,
                           uint64_t n, size_t bytes, const char *pass, char *why, size_t cap)
{
    for (uint64_t i = 0; i < n; i++) {
        shmb_alloc_pool_t *p = pools_of[i / per_pool];
        if (!p->ops->holds(p, blocks[i], bytes)) {
            snprintf(why, cap, "%s (%s): block %p of %zu bytes is outside its SHM",
                     shmb_alloc_kind_name(p->ops->kind), pass, blocks[i], bytes);
            return -EPROTO;
        }
    }
    void **sorted = malloc((size_t)n * sizeof(*sorted));
    if (!sorted)
        return shmb_error_record("malloc", ENOMEM, NULL);
    memcpy(sorted, blocks, (size_t)n * sizeof(*sorted));
    qsort(sorted, (size_t)n, sizeof(*sorted), compare_ptr);
    int ret = 0;
    for (uint64_t i = 0; i + 1 < n && ret == 0; i++) {
        if ((uintptr_t)sorted[i] + bytes > (uintptr_t)sorted[i + 1]) {
            snprintf(why, cap, "%s (%s): blocks %p and %p of %zu bytes overlap",
                     shmb_alloc_kind_name(pools_of[0]->ops->kind), pass, sorted[i], sorted[i + 1], bytes);
            ret = -EPROTO;
        }
    }
    free(sorted);
    for (uint64_t i = 0; i < n && ret == 0;) { /* each pool once, over its run of blocks */
        shmb_alloc_pool_t *p = pools_of[i / per_pool];
        uint64_t end = i + per_pool;
        while (end < n && pools_of[end / per_pool] == p)
            end += per_pool;
        end = end < n ? end : n;
        if (p->ops->verify)
            ret = p->ops->verify(p, blocks + i, (const char *)handles + i * p->ops->handle_bytes, end - i, bytes,
                                 why, cap);
        i = end;
    }
    return ret;
}

int shmb_alloc_pool_lend(shmb_alloc_pool_t *p, shmb_peer_t *peer, shmb_alloc_lending_t *l, char *why,
                         size_t why_cap)
{
    shmb_lookup_request_t *handles = malloc((size_t)l->n * sizeof(*handles));
    shmb_fipc_pool_t *list = NULL;
    size_t npools = 0;
    int ret = handles ? p->ops->lend(p, &list, &npools) : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < l->n && ret == 0; i++) {
        ret = p->ops->handle(p, l->blocks[i], l->bytes, &handles[i]);
        if (ret == 0)
            ret = shmb_alloc_write_tag(l->blocks[i], shmb_alloc_peer_tag(l->tag_seed, i));
    }
    if (ret == 0 && !(l->attach_ns = calloc(npools ? npools : 1, sizeof(double))))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0) {
        const shmb_alloc_peer_pools_t in = {
            .kind = (shmb_alloc_peer_pool_kind_t)p->ops->peer_kind, .pools = list, .npools = npools,
            .handles = handles, .n = l->n, .seed = l->tag_seed, .rounds = l->rounds};
        ret = shmb_alloc_peer_pools(peer, &in, l->attach_ns, npools, &l->nattach, l->translate_ns, why,
                                    why_cap);
    }
    free(list);
    free(handles);
    return ret;
}
