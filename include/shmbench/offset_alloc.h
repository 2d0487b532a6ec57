/*
 * offset_alloc: a model of Mooncake Store's per-object allocator,
 * OffsetBufferAllocator over OffsetAllocator (a system model: C++17 inside,
 * this C header outside).
 *
 * Mooncake registers a buffer once (createSharedMemory: shm_open, ftruncate,
 * mmap) and then places every object inside it with OffsetAllocator
 * (upstream kvcache-ai/Mooncake, mooncake-store/include/offset_allocator/
 * offset_allocator.h and src/offset_allocator.cpp: Sebastian Aaltonen's
 * OffsetAllocator with Mooncake's changes), wrapped per object by
 * OffsetBufferAllocator::allocate / deallocate (mooncake-store/src/
 * allocator.cpp). This module does per request what those do, in their order:
 * the free-region hint, the allocator's Mutex, the two-level bins and the node
 * pool with neighbour merging, the OffsetAllocationHandle (a weak_ptr to the
 * allocator from shared_from_this), the AllocatedBuffer from make_unique
 * (holding a weak_ptr to its OffsetBufferAllocator), the atomic size counter
 * and the master's allocated-bytes metrics (a global and a per-segment gauge).
 * Upstream runs this in the master service, which allocates inside the
 * segments its clients mounted; the RPC by which a client's put reaches it is
 * not part of this model.
 *
 * It manages [base, base + bytes) of memory the caller created and mapped
 * (an SHM segment): like upstream, it keeps every piece of metadata in process
 * memory and never reads or writes the range itself.
 *
 * A block occupies its request rounded up to its bin (a float-like size with
 * 3 mantissa bits: at most 12.5% more; shmb_offset_footprint). Blocks are
 * placed back to back, so their alignment is what the rounded sizes give:
 * requests that are multiples of 4096 get 4096-aligned offsets, a 1-byte
 * request may start anywhere. Sizes in bytes. Functions return 0 or -errno;
 * no C++ exception crosses this header. Thread-safe, as upstream is (one
 * mutex around the bins).
 */
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

/* Sets up the allocator over [base, base + bytes), as the master does when a
 * segment is mounted (OffsetBufferAllocator's constructor). max_nodes caps the
 * node pool, whose nodes are the live blocks and the free regions between
 * them: at most max_nodes - 1 blocks are live at once (upstream refuses an
 * allocation once every node is taken, even one that would need no new node).
 * 0 takes upstream's choice, bytes / 1024 clamped to [2^20, 2^26]. Returns 0,
 * -EINVAL (base NULL, bytes 0, or the range wraps) or -ENOMEM. */
int shmb_offset_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_t **out) SHMB_NOEXCEPT;

/* Releases the allocator. Blocks still live stay valid objects that no longer
 * free anything (upstream: their weak_ptrs expire); shmb_offset_free must
 * still release each. NULL is a no-op. */
void shmb_offset_destroy(shmb_offset_t *a) SHMB_NOEXCEPT;

/* OffsetBufferAllocator::allocate: a block of `bytes` in *out. Returns 0,
 * -EINVAL (a or out NULL, bytes 0) or -ENOMEM (no free region holds the
 * rounded size, or the node pool is full). */
int shmb_offset_alloc(shmb_offset_t *a, size_t bytes, shmb_offset_block_t **out) SHMB_NOEXCEPT;

/* Destroys the block (upstream: the AllocatedBuffer's destructor, through
 * OffsetBufferAllocator::deallocate): its range goes back to the allocator
 * that made it, merged with free neighbours. Returns 0, or -EINVAL for NULL. */
int shmb_offset_free(shmb_offset_block_t *block) SHMB_NOEXCEPT;

/* The block's first byte in the caller's mapping, and its requested size. */
void *shmb_offset_address(const shmb_offset_block_t *block) SHMB_NOEXCEPT;
size_t shmb_offset_block_bytes(const shmb_offset_block_t *block) SHMB_NOEXCEPT;

/* The block's offset from the range's base (what a peer that maps the same
 * segment adds to its own base). */
uint64_t shmb_offset_offset(const shmb_offset_t *a, const shmb_offset_block_t *block) SHMB_NOEXCEPT;

/* Requested bytes of the live blocks (OffsetBufferAllocator::size()), and how
 * many blocks are live (OffsetAllocator's allocated_num). 0 for NULL. */
uint64_t shmb_offset_in_use(const shmb_offset_t *a) SHMB_NOEXCEPT;
uint64_t shmb_offset_live(const shmb_offset_t *a) SHMB_NOEXCEPT;

/* The largest request that can be served now: the size of the highest
 * non-empty bin (OffsetBufferAllocator::getLargestFreeRegion); 0 when the
 * node pool is full. 0 for NULL. */
uint64_t shmb_offset_largest_free(const shmb_offset_t *a) SHMB_NOEXCEPT;

/* The bytes a request occupies in a range of at most 3.75 GiB (its bin's
 * size, OffsetAllocator::normalizedAllocationSize); 0 for 0 bytes or above
 * 3.75 GiB. n blocks of one size fit in n times this. */
uint64_t shmb_offset_footprint(uint64_t bytes) SHMB_NOEXCEPT;

/* The check a driver runs before timing: blocks[0..n) are every live block of
 * `a`; each lies inside the range, no two overlap (by requested size), and
 * their count and bytes match the allocator's counters. Returns 0, -EPROTO
 * with the first fault described in why (why_cap bytes, may be 0), -EINVAL
 * (a NULL, or blocks NULL with n > 0) or -ENOMEM. */
int shmb_offset_verify(const shmb_offset_t *a, shmb_offset_block_t *const *blocks, size_t n,
                       char *why, size_t why_cap) SHMB_NOEXCEPT;

/* ---- the bare allocator: OffsetAllocator alone ----
 *
 * Upstream's OffsetAllocator (offset_allocator.cpp: OffsetAllocator::allocate
 * and the OffsetAllocationHandle whose destructor runs freeAllocation) without
 * what OffsetBufferAllocator adds per object (the AllocatedBuffer from
 * make_unique, its size counter, the master's metrics): the free-region hint,
 * the Mutex, the bins, OffsetAllocator's own two counters and the handle.
 * The caller keeps each handle, as upstream's caller keeps the
 * std::optional<OffsetAllocationHandle> it got. */

typedef struct shmb_offset_bare shmb_offset_bare_t; /* opaque */

/* One live allocation: addr (NULL when empty) and the handle (C++ only:
 * never copy or touch it). */
typedef struct shmb_offset_bare_handle {
    void *addr;
    uint64_t handle[5]; /* OffsetAllocationHandle */
} shmb_offset_bare_handle_t;

/* OffsetAllocator::create over [base, base + bytes) with the node pool
 * OffsetBufferAllocator's constructor gives it (max_nodes as in
 * shmb_offset_create). Returns 0, -EINVAL or -ENOMEM. */
int shmb_offset_bare_create(void *base, size_t bytes, uint32_t max_nodes, shmb_offset_bare_t **out) SHMB_NOEXCEPT;

/* Releases the allocator (handles still live then free nothing, but must
 * still be freed). NULL is a no-op. */
void shmb_offset_bare_destroy(shmb_offset_bare_t *a) SHMB_NOEXCEPT;

/* OffsetAllocator::allocate: a block of `bytes` into *h, which must be empty.
 * Returns 0, -EINVAL (NULLs, 0 bytes, *h not empty) or -ENOMEM. */
int shmb_offset_bare_alloc(shmb_offset_bare_t *a, size_t bytes, shmb_offset_bare_handle_t *h) SHMB_NOEXCEPT;

/* Destroys the handle (~OffsetAllocationHandle: freeAllocation, merged with
 * free neighbours); *h is empty afterwards. Returns 0, or -EINVAL when NULL
 * or empty. */
int shmb_offset_bare_free(shmb_offset_bare_handle_t *h) SHMB_NOEXCEPT;

/* How many blocks are live (OffsetAllocator's allocated_num); 0 for NULL. */
uint64_t shmb_offset_bare_live(const shmb_offset_bare_t *a) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
