/* alloc_pool: the pools over one createSharedMemory segment (offset, offset_bare, upstream's
 * OffsetAllocator, the arena) and the table of every pool (docs/allocation.md). */
#include "alloc_internal.h"

#include "shmbench/arena.h"
#include "shmbench/error.h"
#include "shmbench/offset_alloc.h"
#include "shmbench/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the segment every pool here lives in: the first member of its impl ---- */

/* A zeroed impl of impl_bytes whose segment of `size` is created and mapped. */
static int seg_open(size_t impl_bytes, const char *prefix, size_t size, void **out)
{
    shmb_segment_t *seg = calloc(1, impl_bytes);
    if (!seg)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = shmb_segment_create(seg, prefix, size, NULL, NULL);
    if (ret == 0 && (ret = shmb_segment_map(seg, NULL)) < 0)
        shmb_segment_destroy(seg, NULL);
    if (ret < 0) {
        free(seg);
        return ret;
    }
    *out = seg;
    return 0;
}

/* Unlinks the segment, or leaves it counted in *kept; frees the impl. */
static int seg_close(void *impl, int unlink_shm, uint64_t *kept)
{
    const int ret = shmb_alloc_segment_end(impl, unlink_shm, NULL, kept);
    free(impl);
    return ret;
}

static int seg_holds(shmb_alloc_pool_t *p, const void *ptr, size_t bytes)
{
    const shmb_segment_t *seg = p->impl;
    return shmb_alloc_inside(seg->addr, seg->size, ptr, bytes);
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

/* createSharedMemory, then OffsetBufferAllocator's constructor over it. */
static int offset_create(shmb_alloc_pool_t *p, const char *prefix, size_t size)
{
    offset_pool_t *o;
    int ret = seg_open(sizeof(*o), prefix, size, &p->impl);
    if (ret < 0)
        return ret;
    o = p->impl;
    if ((ret = shmb_offset_create(o->seg.addr, size, 0, &o->alloc)) < 0)
        shmb_error_record("OffsetBufferAllocator", -ret, o->seg.name);
    if (ret == 0 && !(o->slot = calloc((size >> OFFSET_SLOT_SHIFT) + 1, sizeof(*o->slot))))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret < 0) {
        shmb_offset_destroy(o->alloc);
        seg_close(o, 1, NULL);
    }
    return ret;
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
    return seg_close(o, unlink_shm, kept);
}

/* Every block one the allocator made and still holds live, and the
 * allocator's own check of them (shmb_offset_verify). */
static int offset_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n, size_t bytes,
                         char *why, size_t cap)
{
    (void)handles, (void)bytes;
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

/* storageReport: the free bytes, and the largest free region as its bin's
 * size rounded down (a lower bound, within 12.5%). */
static int offset_space(shmb_alloc_pool_t *p, uint64_t *total_free, uint64_t *largest)
{
    shmb_offset_storage(((offset_pool_t *)p->impl)->alloc, total_free, largest);
    return 0;
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
    int ret = seg_open(sizeof(arena_pool_t), prefix, size, &p->impl);
    arena_pool_t *a = p->impl;
    if (ret == 0 && (ret = shmb_arena_init(&a->arena, a->seg.addr, size)) < 0)
        seg_close(a, 1, NULL);
    return ret;
}

static int arena_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    shmb_arena_fini(&((arena_pool_t *)p->impl)->arena);
    return seg_close(p->impl, unlink_shm, kept);
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
    (void)blocks, (void)handles, (void)order, (void)n;
    shmb_arena_reset(&((arena_pool_t *)p->impl)->arena);
    return 0;
}

/* ---- offset's and offset_bare's checks ---- */

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
    int ret = seg_open(sizeof(offset_bare_pool_t), prefix, size, &p->impl);
    offset_bare_pool_t *o = p->impl;
    if (ret == 0 && (ret = shmb_offset_bare_create(o->seg.addr, size, 0, &o->alloc)) < 0) {
        shmb_error_record("OffsetAllocator", -ret, o->seg.name);
        seg_close(o, 1, NULL);
    }
    return ret;
}

/* The handles still live (a failed run) are the caller's: the allocator
 * goes, they then free nothing. */
static int offset_bare_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    shmb_offset_bare_destroy(((offset_bare_pool_t *)p->impl)->alloc);
    return seg_close(p->impl, unlink_shm, kept);
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
    (void)p, (void)blocks;
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

/* Each block is its handle's. */
static int offset_bare_verify(shmb_alloc_pool_t *p, void *const *blocks, const void *handles, uint64_t n,
                              size_t bytes, char *why, size_t cap)
{
    (void)p, (void)bytes;
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
    int ret = seg_open(sizeof(upstream_pool_t), prefix, size, &p->impl);
    upstream_pool_t *o = p->impl;
    if (ret == 0) {
        o->slots = (uint32_t)p->blocks;
        if ((ret = shmb_upstream_offset_create(o->seg.addr, size, o->slots, &o->alloc)) < 0) {
            shmb_error_record("upstream OffsetAllocator", -ret, o->seg.name);
            seg_close(o, 1, NULL);
        }
    }
    return ret;
}

static int upstream_destroy(shmb_alloc_pool_t *p, int unlink_shm, uint64_t *kept)
{
    shmb_upstream_offset_destroy(((upstream_pool_t *)p->impl)->alloc);
    return seg_close(p->impl, unlink_shm, kept);
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
    (void)blocks, (void)handles;
    shmb_upstream_offset_t *a = ((upstream_pool_t *)p->impl)->alloc;
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_upstream_offset_free(a, (uint32_t)order[i]);
    return ret;
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

/* ---- the table ---- */

static const shmb_alloc_pool_ops_t pools[] = {
    {.kind = SHMB_ALLOC_OFFSET, .name = "offset", .shm_bytes = offset_shm_bytes, .create = offset_create,
     .destroy = offset_destroy, .alloc = offset_alloc, .free = offset_free, .empty = offset_free,
     .holds = seg_holds, .verify = offset_verify, .freed = offset_freed, .space = offset_space},
    {.kind = SHMB_ALLOC_ARENA, .name = "arena", .per_thread = 1, .shm_bytes = arena_shm_bytes,
     .create = arena_create, .destroy = arena_destroy, .alloc = arena_alloc, .free = arena_free,
     .empty = arena_empty, .holds = seg_holds},
    {.kind = SHMB_ALLOC_OFFSET_BARE, .name = "offset_bare", .handle_bytes = sizeof(shmb_offset_bare_handle_t),
     .shm_bytes = offset_shm_bytes, .create = offset_bare_create, .destroy = offset_bare_destroy,
     .alloc = offset_bare_alloc, .free = offset_bare_free, .empty = offset_bare_free, .holds = seg_holds,
     .verify = offset_bare_verify, .freed = offset_bare_freed},
    {.kind = SHMB_ALLOC_UPSTREAM_BARE, .name = "upstream_offset_bare", .per_thread = 1,
     .shm_bytes = offset_shm_bytes, .create = upstream_create, .destroy = upstream_destroy,
     .alloc = upstream_alloc, .free = upstream_free, .empty = upstream_free, .holds = seg_holds,
     .verify = upstream_verify, .freed = upstream_freed},
};

const shmb_alloc_pool_ops_t *shmb_alloc_pool_ops(shmb_alloc_kind_t kind)
{
    for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
        if (pools[i].kind == kind)
            return &pools[i];
    for (size_t i = 0; i < shmb_alloc_fipc_npools; i++)
        if (shmb_alloc_fipc_pools[i].kind == kind)
            return &shmb_alloc_fipc_pools[i];
    return NULL;
}

const char *shmb_alloc_kind_name(shmb_alloc_kind_t kind)
{
    const shmb_alloc_pool_ops_t *ops = shmb_alloc_pool_ops(kind);
    return ops ? ops->name : kind == SHMB_ALLOC_POSIX ? "posix" : "unknown";
}
