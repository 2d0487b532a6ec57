/*
 * fipc_classic: a model of Flow-IPC's SHM-classic (ipc::shm::classic::
 * Pool_arena, repo Flow-IPC/ipc_shm): one SHM pool managed by
 * boost.interprocess with the rbtree_best_fit algorithm under its
 * interprocess mutex (a system model: C++17 inside, this C header outside).
 *
 * The pool is one SHM segment this module creates itself through
 * shmbench/segment.h (O_CREAT|O_EXCL, mode 0600, registered for clean-up on
 * a signal), mapped, with a boost::interprocess segment manager of
 * rbtree_best_fit<mutex_family> and null_index placed at its start: the
 * allocator and lock Pool_arena uses through
 * basic_managed_shared_memory<char, rbtree_best_fit<mutex_family>,
 * null_index>. A handle is a block's offset from the pool's base; a borrower
 * translates it by adding its own base.
 *
 * Sizes in bytes. Functions return 0 or -errno; no C++ exception crosses
 * this header.
 */
#ifndef SHMBENCH_FIPC_CLASSIC_H
#define SHMBENCH_FIPC_CLASSIC_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shmb_fipc_classic shmb_fipc_classic_t; /* opaque */

/* Creates and maps a pool of pool_bytes (sparse: nothing is written but the
 * segment manager's header and the allocator's end block, whose pages are
 * reserved with posix_fallocate first) named after prefix, and builds the
 * segment manager in it. Returns 0, -EINVAL (pool too small for the
 * manager), -ENOSPC (/dev/shm has no room for the headers, recorded as
 * "posix_fallocate"), or the segment module's errors (nothing left
 * behind). */
int shmb_fipc_classic_create(const char *prefix, size_t pool_bytes, shmb_fipc_classic_t **out);

/* Unmaps and closes the pool; unlinks it when `unlink_pool`, else leaves it
 * in /dev/shm on purpose (--cleanup=false). Returns 0 or -errno. NULL is a
 * no-op returning 0. */
int shmb_fipc_classic_destroy(shmb_fipc_classic_t *pool, int unlink_pool);

/* segment_manager::allocate(bytes, nothrow). Returns 0 and the block in
 * *out, -EINVAL for 0 bytes, or -ENOMEM when the pool cannot serve it. */
int shmb_fipc_classic_alloc(shmb_fipc_classic_t *pool, size_t bytes, void **out);

/* segment_manager::deallocate. Returns 0, or -EINVAL when ptr is not inside
 * the pool. */
int shmb_fipc_classic_free(shmb_fipc_classic_t *pool, void *ptr);

/* The pool's mapping: base and size in bytes (for handles and checks). */
void *shmb_fipc_classic_base(const shmb_fipc_classic_t *pool);
size_t shmb_fipc_classic_size(const shmb_fipc_classic_t *pool);

/* The pool's SHM name, which a borrower opens ("/..."). */
const char *shmb_fipc_classic_name(const shmb_fipc_classic_t *pool);

/* The borrower's side of a pool another process created, as
 * basic_managed_shared_memory(open_only, name) opens it: shm_open(O_RDWR),
 * fstat for its size, mmap of all of it (read-write, MAP_SHARED), close.
 * *base and *bytes receive the mapping. Returns 0, -EINVAL (an empty
 * object) or -errno (the failing call recorded with the name). */
int shmb_fipc_classic_attach(const char *name, void **base, size_t *bytes);

/* munmap of an attach's mapping. Returns 0 or -errno (recorded). */
int shmb_fipc_classic_detach(void *base, size_t bytes);

/* Borrower-side translation of a handle (offset from the pool's base) of a
 * block of len bytes, for a pool mapped at base of pool_bytes: base + offset,
 * or NULL when [offset, offset + len) is not inside the pool (or len = 0). */
void *shmb_fipc_classic_to_address(void *base, size_t pool_bytes, uint64_t offset, uint64_t len);

/* The timed loop: translates requests[0..n) (their pool_offset and len)
 * with shmb_fipc_classic_to_address and returns the sum of the addresses
 * (NULL counts 0). */
uint64_t shmb_fipc_classic_translate_batch(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests, size_t n);

/* The latency loop: translates requests[0..n) as a dependent chain, each
 * request's pool_offset shifted by how far the previous translation landed
 * from expected[] (0 when it is right: shmbench/lookup.h, shmb_lookup_chain).
 * Returns the sum of the addresses (NULL counts 0). */
uint64_t shmb_fipc_classic_translate_chain(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests,
                                           const uint64_t *expected, size_t n);

#ifdef __cplusplus
}
#endif

#endif
