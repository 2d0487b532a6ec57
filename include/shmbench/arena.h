/* arena: the slab kernel, a pool allocator over one pre-mapped region
 * (docs/models.md): O(1) alloc and free by power-of-two size class, no
 * system call, bookkeeping outside the region. A handle is a block's offset
 * from the base. Functions return 0 or -errno. */
#ifndef SHMBENCH_ARENA_H
#define SHMBENCH_ARENA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_ARENA_GRANULE 4096u /* bytes: the smallest block */
#define SHMB_ARENA_CLASSES 32    /* 4 KiB .. 8 TiB */

typedef uint64_t shmb_handle_t; /* byte offset of a block from the base */

typedef struct shmb_arena_class {
    uint32_t *free; /* stack of freed blocks' granule indices */
    uint32_t top;   /* entries on the stack */
} shmb_arena_class_t;

typedef struct shmb_arena {
    unsigned char *base;    /* start of the region, page-aligned */
    size_t size;            /* bytes, a multiple of SHMB_ARENA_GRANULE */
    size_t granules;        /* size / SHMB_ARENA_GRANULE */
    size_t bump;            /* first never-allocated granule */
    uint8_t *class_of;      /* per granule: class of the live block starting there, or 0xFF */
    uint32_t *stack_memory; /* one allocation behind every class's stack */
    shmb_arena_class_t classes[SHMB_ARENA_CLASSES];
} shmb_arena_t;

/* An arena over [base, base + size): base page-aligned, size a non-zero
 * multiple of SHMB_ARENA_GRANULE below 2^32 granules; the region untouched. */
int shmb_arena_init(shmb_arena_t *arena, void *base, size_t size);

/* Frees the bookkeeping; the region itself belongs to the caller. */
void shmb_arena_fini(shmb_arena_t *arena);

/* The bytes a block serving `size` occupies, or 0 (size 0, or too large). */
size_t shmb_arena_block_bytes(size_t size);

/* A block of at least `size` bytes: its class's free stack, else the
 * untouched top. -EINVAL: size 0; -ENOMEM: neither serves it. */
int shmb_arena_alloc(shmb_arena_t *arena, size_t size, shmb_handle_t *out);

/* Returns a block to its class; -EINVAL if not the start of a live block. */
int shmb_arena_free(shmb_arena_t *arena, shmb_handle_t handle);

/* Forgets every block: the arena is as after init. O(size / granule). */
void shmb_arena_reset(shmb_arena_t *arena);

/* Handle -> pointer in this process's mapping. O(1), no checks. */
static inline void *shmb_arena_ptr(const shmb_arena_t *arena, shmb_handle_t handle)
{
    return arena->base + handle;
}

/* Pointer into the region -> handle. O(1), no checks. */
static inline shmb_handle_t shmb_arena_handle(const shmb_arena_t *arena, const void *ptr)
{
    return (shmb_handle_t)((const unsigned char *)ptr - arena->base);
}

#ifdef __cplusplus
}
#endif

#endif
