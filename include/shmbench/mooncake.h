/*
 * mooncake: a model of Mooncake's SHM path, per request and per allocation
 * (a system model: C++17 inside, this C header outside).
 *
 * Relocation follows ShmTransport::relocateSharedMemoryAddress (upstream
 * kvcache-ai/Mooncake, mooncake-transfer-engine/src/transport/shm_transport/
 * shm_transport.cpp, with transfer_metadata.{h,cpp}) step by step, with the
 * same containers, smart pointers and lock:
 *   1. TransferMetadata::getSegmentDescByID(target_id) with the metadata
 *      cache on: an RWSpinlock read guard, an
 *      std::unordered_map<SegmentID, std::shared_ptr<SegmentDesc>> probed
 *      with count() and operator[], the shared_ptr copied out;
 *   2. the descriptor's std::vector<BufferDesc> scanned in registration
 *      order; an entry matches when its shm_path is not empty and it holds
 *      [addr, addr + len). A BufferDesc carries its strings (name, location,
 *      shm_path) and vectors (lkey, rkey) beside addr and length, so the scan
 *      strides over records of well over 128 bytes;
 *   3. on a hit, the remap cache (std::unordered_map<uint64_t,
 *      OpenedShmEntry> keyed by the buffer's base) probed with count(), then
 *      operator[];
 *   4. on the first use of a buffer, ops->attach opens and maps it (Mooncake:
 *      shm_open(O_RDWR) + mmap of the whole buffer, the descriptor kept in
 *      OpenedShmEntry until the transport goes; upstream maps the request's
 *      length, which later requests further into the buffer overrun) and the
 *      mapping enters the remap cache.
 * Allocation (createSharedMemory: shm_open(O_CREAT|O_RDWR), ftruncate, mmap,
 * close) is timed step by step by alloc_bench on shmbench/segment.h, which
 * does exactly those calls; this module models the per-request path.
 *
 * Functions return 0 or -errno; no C++ exception crosses this header.
 */
#ifndef SHMBENCH_MOONCAKE_H
#define SHMBENCH_MOONCAKE_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One buffer the peer registered. */
typedef struct shmb_mooncake_buffer {
    uint64_t addr;        /* base in the peer's address space */
    uint64_t length;      /* bytes, > 0 */
    const char *shm_path; /* SHM name to open on first use; "" = not SHM (skipped) */
} shmb_mooncake_buffer_t;

/* How a buffer is mapped on first use and unmapped at the end. attach maps
 * `length` bytes of the SHM object `shm_path` and returns our address in
 * *local (0 or -errno); `index` is the buffer's registration index (Mooncake
 * itself opens by path alone; the index lets a caller place or count
 * mappings). detach (may be NULL) undoes one attach. */
typedef struct shmb_mooncake_ops {
    int (*attach)(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local);
    void (*detach)(void *ctx, void *local, uint64_t length);
    void *ctx;
} shmb_mooncake_ops_t;

typedef struct shmb_mooncake shmb_mooncake_t; /* opaque */

/* Builds the metadata of one peer: segment target_id holding buffers[0..n)
 * in registration order (strings copied), beside `other_segments` further
 * segment ids (each with one small non-SHM buffer) so that the metadata map
 * is not trivially small. Nothing is attached yet. Returns 0, -EINVAL (n = 0,
 * a zero length, ops or ops->attach NULL) or -ENOMEM. */
int shmb_mooncake_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                         size_t other_segments, const shmb_mooncake_ops_t *ops,
                         shmb_mooncake_t **out);

/* Detaches every attached buffer (ops->detach) and frees everything. NULL is
 * a no-op. */
void shmb_mooncake_destroy(shmb_mooncake_t *m);

/* One request through the whole path: translates [addr, addr + len) of
 * segment target_id into our address in *out, attaching the buffer on first
 * use. Returns 0, -ENOENT (unknown target_id), -EINVAL (no SHM buffer holds
 * the whole range, or len = 0) or attach's error. */
int shmb_mooncake_relocate(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len,
                           void **out);

/* The timed loop: relocates requests[0..n) (their addr and len) in segment
 * target_id and returns the sum of the translated addresses (a failed
 * request counts 0), so that nothing can be optimised away. */
uint64_t shmb_mooncake_relocate_batch(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests, size_t n);

/* The latency loop: relocates requests[0..n) as a dependent chain, each
 * request's addr shifted by how far the previous relocation landed from
 * expected[] (0 when it is right: shmbench/lookup.h, shmb_lookup_chain).
 * Returns the sum of the translated addresses (a failed request counts 0). */
uint64_t shmb_mooncake_relocate_chain(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests,
                                      const uint64_t *expected, size_t n);

/* How many buffers have been attached so far. */
size_t shmb_mooncake_attached(const shmb_mooncake_t *m);

#ifdef __cplusplus
}
#endif

#endif
