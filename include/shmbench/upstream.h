/*
 * upstream: Mooncake's own code, compiled from the user's Mooncake checkout,
 * beside the models of it (docs/upstream.md).
 *
 * Configured with -DSHMB_MOONCAKE_SOURCE=PATH (a checkout, or a git directory
 * with -DSHMB_MOONCAKE_COMMIT=REV), the library compiles Mooncake Store's
 * OffsetAllocator (kvcache-ai/Mooncake, mooncake-store/include/
 * offset_allocator/offset_allocator.h, mooncake-store/src/
 * offset_allocator.cpp) from there and serves it through this header; the
 * stand-ins for what it includes but does not use are in upstream/stubs/.
 * Without the option the header is the same and every function says so:
 * shmb_upstream_available() is 0 and the others return -ENOTSUP, so a caller
 * needs no #if.
 *
 * Functions return 0 or -errno; no C++ exception crosses this header.
 */
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

/* The Mooncake commit the upstream code was compiled from (40 hex digits,
 * or what `git describe --always --dirty` says of a checkout with local
 * changes); "" when the library was built without the option. Static. */
const char *shmb_upstream_commit(void) SHMB_NOEXCEPT;

/* Upstream's OffsetAllocator over [base, base + bytes), the bare allocator
 * (no OffsetBufferAllocator, no AllocatedBuffer, no metrics): allocate is
 * OffsetAllocator::allocate (its free-region hint, Mutex, bins and node
 * pool, and the OffsetAllocationHandle it returns), free is that handle's
 * destruction (OffsetAllocator::freeAllocation). Like upstream it never
 * reads or writes the range. The caller names each live block by a slot,
 * 0 .. slots - 1, where the handle is kept, so that neither call adds a heap
 * allocation of this layer's own. */
typedef struct shmb_upstream_offset shmb_upstream_offset_t;

/* Creates the allocator with the node capacities OffsetBufferAllocator's
 * constructor picks for `bytes` (mooncake-store/src/allocator.cpp:
 * bytes / 4096 clamped to [1024, 65536] nodes at first, growing to
 * bytes / 1024 clamped to [2^20, 2^26]). Returns 0, -EINVAL (out NULL, base
 * NULL, bytes 0, slots 0, or the range wraps), -ENOMEM, or -ENOTSUP (not
 * built with the option). */
int shmb_upstream_offset_create(void *base, size_t bytes, uint32_t slots, shmb_upstream_offset_t **out) SHMB_NOEXCEPT;

/* Frees every block still held, then the allocator. NULL is a no-op. */
void shmb_upstream_offset_destroy(shmb_upstream_offset_t *a) SHMB_NOEXCEPT;

/* A block of `bytes` held in `slot`; its first byte in *addr. Returns 0,
 * -EINVAL (a or addr NULL, bytes 0, slot out of range), -EBUSY (the slot
 * holds a block), -ENOMEM (upstream returned no handle) or -ENOTSUP. */
int shmb_upstream_offset_alloc(shmb_upstream_offset_t *a, uint32_t slot, size_t bytes, void **addr) SHMB_NOEXCEPT;

/* Frees the block in `slot`. Returns 0, -EINVAL (a NULL, slot out of range),
 * -ENOENT (the slot holds no block: a double free) or -ENOTSUP. */
int shmb_upstream_offset_free(shmb_upstream_offset_t *a, uint32_t slot) SHMB_NOEXCEPT;

/* Checks the blocks of slots 0 .. n - 1 against what the caller recorded
 * (addr[i], bytes[i]; addr[i] NULL for a slot the caller holds empty): each
 * recorded block is the one its slot's handle names, lies inside the range,
 * and overlaps no other. Returns 0, -EINVAL (bad arguments, n > slots),
 * -ENOENT (a slot empty where a block was recorded, or the reverse),
 * -EFAULT (an address that is not the handle's, or a block outside the
 * range), -EEXIST (two blocks overlap), -ENOMEM or -ENOTSUP. For use before
 * timing, not inside a timed loop (it sorts). */
int shmb_upstream_offset_check(const shmb_upstream_offset_t *a, void *const *addr, const size_t *bytes,
                               uint32_t n) SHMB_NOEXCEPT;

/* TENT, Mooncake's transfer engine (kvcache-ai/Mooncake,
 * mooncake-transfer-engine/tent/), built from the same source unless
 * -DSHMB_MOONCAKE_TENT=OFF: two TransferEngineImpl in this process, as two
 * Mooncake processes on one machine have them. The target allocates `buffers`
 * SHM buffers of buffer_bytes (allocateLocalMemory: the SHM transport's
 * createSharedMemory, named /dev/shm/mooncake_<pid>_*, removed at destroy)
 * and registers each (registerLocalMemory); the initiator registers one
 * source buffer of source_bytes and opens the target's segment. Stand-ins
 * (upstream/stubs/tent/): the RPC agent is in-process, the NIC probe finds
 * no NIC, and the copy moves nothing (it consumes the relocated address and
 * records it). */
typedef struct shmb_upstream_tent shmb_upstream_tent_t;

/* 1 when TENT was built, else 0. */
int shmb_upstream_tent_available(void) SHMB_NOEXCEPT;

/* Builds both engines and the buffers. Takes milliseconds per buffer: set-up,
 * never timed. Returns 0, -EINVAL (out NULL, a count or size 0), -ENOMEM (a
 * buffer could not be made), -EIO (an engine failed to start, a
 * registration or the segment's opening failed) or -ENOTSUP. */
int shmb_upstream_tent_create(uint32_t buffers, size_t buffer_bytes, size_t source_bytes,
                              shmb_upstream_tent_t **out) SHMB_NOEXCEPT;

/* Frees the buffers (unregister, then freeLocalMemory: munmap and
 * shm_unlink) and the engines. NULL is a no-op. */
void shmb_upstream_tent_destroy(shmb_upstream_tent_t *t) SHMB_NOEXCEPT;

/* The target's own mapping of buffer `buffer`; NULL when out of range. */
void *shmb_upstream_tent_buffer(const shmb_upstream_tent_t *t, uint32_t buffer) SHMB_NOEXCEPT;

/* n WRITE requests of `bytes` from the source, request i to byte offset[i]
 * of target buffer buffer[i], in one batch: allocateBatch(n),
 * submitTransfer (selection, the SHM transport's submit and its
 * relocateSharedMemoryAddress, which maps a buffer on its first request),
 * getTransferStatus until the batch completes, freeBatch. *landed (may be
 * NULL): where the last request's copy was aimed in this process. Returns 0,
 * -EINVAL, -ERANGE (a buffer index, or a range past a buffer's end), -ENOMEM
 * (no batch), -EIO (TENT refused or failed a request) or -ENOTSUP. */
int shmb_upstream_tent_submit(shmb_upstream_tent_t *t, const uint32_t *buffer, const uint64_t *offset, uint32_t n,
                              size_t bytes, void **landed) SHMB_NOEXCEPT;

/* ShmTransport::relocateSharedMemoryAddress alone, for byte `offset` of
 * target buffer `buffer` (`bytes` long): *local is that byte in this
 * process's mapping. It runs on an SHM transport of its own, installed like
 * the initiator's over a control service that has opened the target's
 * segment, so its mappings are its own: the first relocation into a buffer
 * maps it (the miss path), the next ones find it (the hit path). Returns 0,
 * -EINVAL, -ERANGE, -EIO (TENT refused it) or -ENOTSUP. */
int shmb_upstream_tent_relocate(shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset, size_t bytes,
                                void **local) SHMB_NOEXCEPT;

/* Checks that `landed` is byte `offset` of target buffer `buffer`: tags
 * written through the target's mapping read back through landed. Returns 0,
 * -EFAULT (they do not: another buffer, another offset; landed NULL),
 * -EINVAL or -ENOTSUP. Reads and writes one byte there. */
int shmb_upstream_tent_check(const shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset,
                             const void *landed) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
