/* offset_alloc: Mooncake Store's per-object allocator, OffsetBufferAllocator
 * over OffsetAllocator (docs/models.md), managing [base, base + bytes) of a
 * segment the caller mapped, its metadata all in process memory. C++17
 * behind this header; thread-safe as upstream (one mutex); sizes in bytes;
 * functions return 0 or -errno and let no exception through. */
#ifndef SHMBENCH_OFFSET_ALLOC_H
#define SHMBENCH_OFFSET_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shmb_offset shmb_offset_t;             /* opaque: one registered range */
typedef struct shmb_offset_block shmb_offset_block_t; /* opaque: one live block (upstream's AllocatedBuffer) */

/* OffsetBufferAllocator over [base, base + bytes), as a mounted segment gets.
 * max_nodes caps the node pool (at most max_nodes - 1 live blocks); 0:
 * upstream's bytes / 1024 clamped to [2^20, 2^26]. -EINVAL: the range. */
int shmb_offset_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_t **out) SHMB_NOEXCEPT;

/* Releases the allocator; live blocks then free nothing but must still be
 * freed. NULL: a no-op. */
void shmb_offset_destroy(shmb_offset_t *a) SHMB_NOEXCEPT;

/* OffsetBufferAllocator::allocate. -ENOMEM: no free region holds it, or the
 * node pool is full. */
int shmb_offset_alloc(shmb_offset_t *a, size_t bytes, shmb_offset_block_t **out) SHMB_NOEXCEPT;

/* ~AllocatedBuffer: the range back to its allocator, merged with free
 * neighbours. */
int shmb_offset_free(shmb_offset_block_t *block) SHMB_NOEXCEPT;

/* The block's first byte in the caller's mapping, and its requested size. */
void *shmb_offset_address(const shmb_offset_block_t *block) SHMB_NOEXCEPT;
size_t shmb_offset_block_bytes(const shmb_offset_block_t *block) SHMB_NOEXCEPT;

/* The block's offset from the range's base. */
uint64_t shmb_offset_offset(const shmb_offset_t *a, const shmb_offset_block_t *block) SHMB_NOEXCEPT;

/* Requested bytes of the live blocks, and how many are live. 0 for NULL. */
uint64_t shmb_offset_in_use(const shmb_offset_t *a) SHMB_NOEXCEPT;
uint64_t shmb_offset_live(const shmb_offset_t *a) SHMB_NOEXCEPT;

/* getLargestFreeRegion: the largest request served now; 0 when the node pool
 * is full, or for NULL. */
uint64_t shmb_offset_largest_free(const shmb_offset_t *a) SHMB_NOEXCEPT;

/* storageReport in bytes: *total_free the free bytes, *largest the largest
 * free region (its bin's size, rounded down); both 0 for NULL. */
void shmb_offset_storage(const shmb_offset_t *a, uint64_t *total_free, uint64_t *largest) SHMB_NOEXCEPT;

/* The bytes a request occupies: its bin's size, at most 12.5% more (0 for 0
 * bytes or above 3.75 GiB). n blocks of one size fit in n times this. */
uint64_t shmb_offset_footprint(uint64_t bytes) SHMB_NOEXCEPT;

/* Checks before timing that blocks[0..n), every live block of a, lie inside
 * the range, overlap nowhere and match the counters. Else -EPROTO and why. */
int shmb_offset_verify(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n,
                       char *why, size_t why_cap) SHMB_NOEXCEPT;

/* ---- the bare allocator: OffsetAllocator and its handles alone ---- */

typedef struct shmb_offset_bare shmb_offset_bare_t; /* opaque */

/* One live allocation (NULL addr: empty) and its handle (opaque). */
typedef struct shmb_offset_bare_handle {
    void *addr;
    uint64_t handle[5]; /* OffsetAllocationHandle */
} shmb_offset_bare_handle_t;

/* OffsetAllocator::create over [base, base + bytes), max_nodes as in
 * shmb_offset_create. */
int shmb_offset_bare_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_bare_t **out) SHMB_NOEXCEPT;

/* As shmb_offset_destroy. */
void shmb_offset_bare_destroy(shmb_offset_bare_t *a) SHMB_NOEXCEPT;

/* OffsetAllocator::allocate into the empty *h. */
int shmb_offset_bare_alloc(shmb_offset_bare_t *a, size_t bytes, shmb_offset_bare_handle_t *h) SHMB_NOEXCEPT;

/* ~OffsetAllocationHandle: freeAllocation; *h is empty afterwards. */
int shmb_offset_bare_free(shmb_offset_bare_handle_t *h) SHMB_NOEXCEPT;

/* How many blocks are live; 0 for NULL. */
uint64_t shmb_offset_bare_live(const shmb_offset_bare_t *a) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
