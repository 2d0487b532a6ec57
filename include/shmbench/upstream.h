/* upstream: Mooncake's own OffsetAllocator and TENT, compiled from the
 * user's checkout (-DSHMB_MOONCAKE_SOURCE, docs/upstream.md), beside the
 * models. Built without it, every call returns -ENOTSUP (no #if needed).
 * Functions return 0 or -errno and let no exception through. */
#ifndef SHMBENCH_UPSTREAM_H
#define SHMBENCH_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the library was built against a Mooncake source, else 0. */
int shmb_upstream_available(void) SHMB_NOEXCEPT;

/* The Mooncake commit compiled (git describe --always --dirty); "" without. */
const char *shmb_upstream_commit(void) SHMB_NOEXCEPT;

/* Upstream's bare OffsetAllocator over [base, base + bytes); each live
 * block's handle kept in a slot 0 .. slots - 1 the caller names. */
typedef struct shmb_upstream_offset shmb_upstream_offset_t;

/* The allocator with the node capacities OffsetBufferAllocator picks for
 * `bytes`. -EINVAL: a NULL, bytes or slots 0, or the range wraps. */
int shmb_upstream_offset_create(void *base, size_t bytes, uint32_t slots, shmb_upstream_offset_t **out) SHMB_NOEXCEPT;

/* Frees every block still held, then the allocator. NULL: a no-op. */
void shmb_upstream_offset_destroy(shmb_upstream_offset_t *a) SHMB_NOEXCEPT;

/* A block of `bytes` held in `slot`. -EBUSY: the slot is taken; -ENOMEM:
 * upstream returned no handle. */
int shmb_upstream_offset_alloc(shmb_upstream_offset_t *a, uint32_t slot, size_t bytes, void **addr) SHMB_NOEXCEPT;

/* Frees the block in `slot`; -ENOENT: the slot holds none. */
int shmb_upstream_offset_free(shmb_upstream_offset_t *a, uint32_t slot) SHMB_NOEXCEPT;

/* Checks before timing the blocks of slots 0 .. n - 1 against the caller's
 * record (addr[i] NULL: empty): -ENOENT (a slot disagrees), -EFAULT (not
 * the handle's address, or outside the range), -EEXIST (an overlap). */
int shmb_upstream_offset_check(const shmb_upstream_offset_t *a, void *const *addr, const size_t *bytes,
                               uint32_t n) SHMB_NOEXCEPT;

/* TENT (unless -DSHMB_MOONCAKE_TENT=OFF): a target and an initiator
 * TransferEngineImpl in this process, the target's SHM buffers registered
 * and the initiator's source; stand-ins in upstream/stubs/tent/. */
typedef struct shmb_upstream_tent shmb_upstream_tent_t;

/* 1 when TENT was built, else 0. */
int shmb_upstream_tent_available(void) SHMB_NOEXCEPT;

/* Both engines and `buffers` buffers (milliseconds each: never timed).
 * -ENOMEM: a buffer; -EIO: an engine, a registration or the opening failed. */
int shmb_upstream_tent_create(uint32_t buffers, size_t buffer_bytes, size_t source_bytes,
                              shmb_upstream_tent_t **out) SHMB_NOEXCEPT;

/* Unregisters and frees the buffers, then the engines. NULL: a no-op. */
void shmb_upstream_tent_destroy(shmb_upstream_tent_t *t) SHMB_NOEXCEPT;

/* The target's own mapping of buffer `buffer`; NULL when out of range. */
void *shmb_upstream_tent_buffer(const shmb_upstream_tent_t *t, uint32_t buffer) SHMB_NOEXCEPT;

/* One batch of n WRITEs of `bytes`, request i to offset[i] of buffer[i],
 * polled to completion; *landed (may be NULL): the last one's target here.
 * -ERANGE: past a buffer; -ENOMEM: no batch; -EIO: TENT failed one. */
int shmb_upstream_tent_submit(shmb_upstream_tent_t *t, const uint32_t *buffer, const uint64_t *offset, uint32_t n,
                              size_t bytes, void **landed) SHMB_NOEXCEPT;

/* relocateSharedMemoryAddress alone, on an SHM transport of its own (its
 * first relocation into a buffer maps it): byte `offset` of `buffer` here. */
int shmb_upstream_tent_relocate(shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset, size_t bytes,
                                void **local) SHMB_NOEXCEPT;

/* Checks that `landed` is byte `offset` of `buffer` (a tag written there
 * reads back); -EFAULT if not. */
int shmb_upstream_tent_check(const shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset,
                             const void *landed) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
