/*
 * offset_alloc's test hook: what only the library and its tests see.
 */
#ifndef SHMBENCH_OFFSET_ALLOC_INTERNAL_H
#define SHMBENCH_OFFSET_ALLOC_INTERNAL_H

#include "shmbench/offset_alloc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A planted fault: the next successful shmb_offset_alloc of `a` reports its
 * block one byte below where the allocator placed it, so that it overlaps
 * the block just before it (or starts below the range when it is the first),
 * which shmb_offset_verify must catch. The block still frees its own range. */
void shmb_offset_plant_overlap(shmb_offset_t *a) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
