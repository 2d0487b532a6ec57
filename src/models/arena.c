/* arena: the pool allocator over one pre-mapped region (shmbench/arena.h):
 * the region carved into blocks by size class, a stack of free blocks each. */
#include "shmbench/arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NOT_A_BLOCK 0xFF

/* Smallest class whose block holds `granules` granules: ceil(log2). */
static unsigned class_for_granules(size_t granules)
{
    if (granules <= 1)
        return 0;
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(granules - 1)));
}

size_t shmb_arena_block_bytes(size_t size)
{
    if (size == 0 || size > ((size_t)SHMB_ARENA_GRANULE << (SHMB_ARENA_CLASSES - 1)))
        return 0;
    size_t granules = (size + SHMB_ARENA_GRANULE - 1) / SHMB_ARENA_GRANULE;
    return (size_t)SHMB_ARENA_GRANULE << class_for_granules(granules);
}

int shmb_arena_init(shmb_arena_t *arena, void *base, size_t size)
{
    if (!arena || !base || size == 0 || size % SHMB_ARENA_GRANULE != 0 ||
        (uintptr_t)base % SHMB_ARENA_GRANULE != 0 || size / SHMB_ARENA_GRANULE > UINT32_MAX)
        return -EINVAL;
    size_t granules = size / SHMB_ARENA_GRANULE;

    /* Class c can hold at most granules >> c blocks at once; the stacks
     * together need fewer than 2 * granules entries. */
    size_t entries = 0;
    for (unsigned c = 0; c < SHMB_ARENA_CLASSES; c++)
        entries += granules >> c;
    uint32_t *stacks = malloc((entries ? entries : 1) * sizeof(uint32_t));
    uint8_t *class_of = malloc(granules);
    if (!stacks || !class_of) {
        free(stacks);
        free(class_of);
        return -ENOMEM;
    }

    memset(arena, 0, sizeof(*arena));
    arena->base = base;
    arena->size = size;
    arena->granules = granules;
    arena->class_of = class_of;
    arena->stack_memory = stacks;
    for (unsigned c = 0; c < SHMB_ARENA_CLASSES; c++) {
        arena->classes[c].free = stacks;
        stacks += granules >> c;
    }
    shmb_arena_reset(arena);
    return 0;
}

void shmb_arena_fini(shmb_arena_t *arena)
{
    free(arena->stack_memory);
    free(arena->class_of);
    memset(arena, 0, sizeof(*arena));
}

void shmb_arena_reset(shmb_arena_t *arena)
{
    arena->bump = 0;
    for (unsigned c = 0; c < SHMB_ARENA_CLASSES; c++)
        arena->classes[c].top = 0;
    memset(arena->class_of, NOT_A_BLOCK, arena->granules);
}

int shmb_arena_alloc(shmb_arena_t *arena, size_t size, shmb_handle_t *out)
{
    if (size == 0)
        return -EINVAL;
    size_t granules = (size + SHMB_ARENA_GRANULE - 1) / SHMB_ARENA_GRANULE;
    if (granules > arena->granules)
        return -ENOMEM;
    unsigned c = class_for_granules(granules);
    shmb_arena_class_t *cls = &arena->classes[c];
    size_t g;
    if (cls->top > 0) {
        g = cls->free[--cls->top];
    } else {
        size_t need = (size_t)1 << c;
        if (need > arena->granules - arena->bump)
            return -ENOMEM;
        g = arena->bump;
        arena->bump += need;
    }
    arena->class_of[g] = (uint8_t)c;
    *out = (shmb_handle_t)g * SHMB_ARENA_GRANULE;
    return 0;
}

int shmb_arena_free(shmb_arena_t *arena, shmb_handle_t handle)
{
    if (handle % SHMB_ARENA_GRANULE != 0 || handle >= arena->size)
        return -EINVAL;
    size_t g = (size_t)(handle / SHMB_ARENA_GRANULE);
    unsigned c = arena->class_of[g];
    if (c == NOT_A_BLOCK)
        return -EINVAL;
    arena->class_of[g] = NOT_A_BLOCK;
    shmb_arena_class_t *cls = &arena->classes[c];
    cls->free[cls->top++] = (uint32_t)g;
    return 0;
}
