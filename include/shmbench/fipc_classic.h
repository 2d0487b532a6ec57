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

#include "shmbench/error.h"
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
int shmb_fipc_classic_create(const char *prefix, size_t pool_bytes, shmb_fipc_classic_t **out) SHMB_NOEXCEPT;

/* Unmaps and closes the pool; unlinks it when `unlink_pool`, else leaves it
 * in /dev/shm on purpose (--cleanup=false). Returns 0 or -errno. NULL is a
 * no-op returning 0. */
int shmb_fipc_classic_destroy(shmb_fipc_classic_t *pool, int unlink_pool) SHMB_NOEXCEPT;

/* segment_manager::allocate(bytes, nothrow). Returns 0 and the block in
 * *out, -EINVAL for 0 bytes, -ENOMEM when the pool cannot serve it, or -EIO
 * when the pool's interprocess mutex cannot be locked. */
int shmb_fipc_classic_alloc(shmb_fipc_classic_t *pool, size_t bytes, void **out) SHMB_NOEXCEPT;

/* segment_manager::deallocate. Returns 0, -EINVAL when ptr is not inside
 * the pool, or -EIO when the pool's interprocess mutex cannot be locked
 * (the block stays allocated). */
int shmb_fipc_classic_free(shmb_fipc_classic_t *pool, void *ptr) SHMB_NOEXCEPT;

/* The pool's mapping: base and size in bytes (for handles and checks). */
void *shmb_fipc_classic_base(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;
size_t shmb_fipc_classic_size(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;

/* The pool's SHM name, which a borrower opens ("/..."). */
const char *shmb_fipc_classic_name(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;

/* The borrower's side of a pool another process created, as
 * basic_managed_shared_memory(open_only, name) opens it: shm_open(O_RDWR),
 * fstat for its size, mmap of all of it (read-write, MAP_SHARED), close.
 * *base and *bytes receive the mapping. Returns 0, -EINVAL (an empty
 * object) or -errno (the failing call recorded with the name). */
int shmb_fipc_classic_attach(const char *name, void **base, size_t *bytes) SHMB_NOEXCEPT;

/* munmap of an attach's mapping. Returns 0 or -errno (recorded). */
int shmb_fipc_classic_detach(void *base, size_t bytes) SHMB_NOEXCEPT;

/* Borrower-side translation of a handle (offset from the pool's base) of a
 * block of len bytes, for a pool mapped at base of pool_bytes: base + offset,
 * or NULL when [offset, offset + len) is not inside the pool (or len = 0). */
void *shmb_fipc_classic_to_address(void *base, size_t pool_bytes, uint64_t offset, uint64_t len) SHMB_NOEXCEPT;

/* The timed loop: translates requests[0..n) (their pool_offset and len)
 * with shmb_fipc_classic_to_address and returns the sum of the addresses
 * (NULL counts 0). */
uint64_t shmb_fipc_classic_translate_batch(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests, size_t n) SHMB_NOEXCEPT;

/* The latency loop: translates requests[0..n) as a dependent chain, each
 * request's pool_offset shifted by how far the previous translation landed
 * from expected[] (0 when it is right: shmbench/lookup.h, shmb_lookup_chain).
 * Returns the sum of the addresses (NULL counts 0). */
uint64_t shmb_fipc_classic_translate_chain(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests,
                                           const uint64_t *expected, size_t n) SHMB_NOEXCEPT;


/* ---- the object layer: Pool_arena::construct<T> in its own process ----
 *
 * What the allocation benchmark's alloc / free rows of SHM-classic time
 * (repo Flow-IPC/ipc_shm, src/ipc/shm/classic/pool_arena.hpp: construct,
 * Handle_in_shm, handle_deleter_impl; pool_arena.cpp: allocate,
 * deallocate). construct<T>: allocate(sizeof(Handle_in_shm<T>)) in the pool
 * (the object, then its owner count: bytes rounded up to 4, + 4), the owner
 * count made 1 in SHM, T constructed under a Pool_arena_activator (a
 * thread_local arena pointer set and restored), and a boost::shared_ptr whose
 * control block comes from this process's heap (operator new: boost's
 * default for a pointer with a deleter), aliased to the object. Dropping the
 * last handle runs the deleter: the owner count - 1 in SHM and, at 0, ~T
 * under the activator and deallocate (rbtree_best_fit under the pool's
 * mutex), then the control block is freed. T is a buffer of `bytes` whose
 * constructor leaves its bytes as they are (as Mooncake's block is:
 * neither layer writes the bytes). Logging is off (Pool_arena's should_log
 * checks are left out, as in shmb_fipc_classic_alloc). */

typedef struct shmb_fipc_classic_objects shmb_fipc_classic_objects_t; /* opaque: a Pool_arena */

/* One handle: addr (the object; NULL when empty), and a
 * boost::shared_ptr (C++ only: never copy or touch it). */
typedef struct shmb_fipc_classic_handle {
    void *addr;
    void *handle[2];
} shmb_fipc_classic_handle_t;

/* A Pool_arena over pool (which must outlive it). Returns 0, -EINVAL or
 * -ENOMEM. */
int shmb_fipc_classic_objects_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_objects_t **out) SHMB_NOEXCEPT;

/* Releases the arena; its objects must be dropped first. NULL is a no-op. */
void shmb_fipc_classic_objects_destroy(shmb_fipc_classic_objects_t *o) SHMB_NOEXCEPT;

/* Pool_arena::construct of a bytes-long object into *h (which must be
 * empty). Returns 0, -EINVAL, -ENOMEM, or -EIO (the pool's mutex). */
int shmb_fipc_classic_object_new(shmb_fipc_classic_objects_t *o, size_t bytes,
                                 shmb_fipc_classic_handle_t *h) SHMB_NOEXCEPT;

/* Drops the handle of an object of o (its last owner: the deleter runs);
 * *h is empty afterwards. Returns 0 or -EINVAL (NULL or empty). A deallocate that
 * fails (the pool's mutex) is recorded and not counted as a free. */
int shmb_fipc_classic_object_drop(shmb_fipc_classic_objects_t *o, shmb_fipc_classic_handle_t *h) SHMB_NOEXCEPT;

/* The check before timing, of a live handle of a bytes-long object: its
 * shared_ptr points at addr, the object and its owner count lie inside the
 * pool, the shared_ptr has one owner and the count in SHM is 1. Returns 0,
 * or -EPROTO with why written. */
int shmb_fipc_classic_object_check(const shmb_fipc_classic_objects_t *o, const shmb_fipc_classic_handle_t *h,
                                   size_t bytes, char *why, size_t why_cap) SHMB_NOEXCEPT;

/* How many objects the arena constructed, and how many its deleters
 * deallocated (each deleter run that freed). */
void shmb_fipc_classic_objects_counts(const shmb_fipc_classic_objects_t *o, uint64_t *constructed,
                                      uint64_t *freed) SHMB_NOEXCEPT;

/* ---- object hand-off (Pool_arena::lend_object / borrow_object) ----
 *
 * Flow-IPC SHM-classic's object API between two processes (repo
 * Flow-IPC/ipc_shm: src/ipc/shm/classic/pool_arena.hpp, construct,
 * lend_object, borrow_object, handle_deleter_impl; src/ipc/session/detail/
 * shm/classic/session_impl.hpp, lend_object and borrow_object adding the
 * arena's scope id to the blob). Each process has its own arena over the
 * one pool: the lender's over the pool it created, a borrower's over the
 * pool opened by name (mapped read-write: its release may free).
 *
 * An object lives in the pool with an owner count beside it
 * (Handle_in_shm: the bytes, then a std::atomic<unsigned>), made 1 by
 * construct. Per object (the `handoff`):
 *   lender:   lend -> the blob (the count + 1: an atomic increment in SHM),
 *             then drops its own handle (count - 1);
 *   message:  the blob to the borrower (the only message: no return);
 *   borrower: borrow(blob) -> a boost::shared_ptr (its control block
 *             allocated in this process) to the object in its mapping;
 *             release: the count - 1; the owner that brings it to 0
 *             deallocates (boost.interprocess's deallocate, under the
 *             pool's interprocess mutex) in its own process.
 * A driver that needs to know the borrower is done (to time round trips)
 * must add a reply of its own: SHM-classic has none.
 */

#define SHMB_FIPC_CLASSIC_BLOB_BYTES 16u /* the object's offset (ptrdiff_t) + the arena's scope id (u64) */

/* A process's handle to an object in the pool: addr, and a
 * boost::shared_ptr inside owner (C++ only: never copy or touch it). */
typedef struct shmb_fipc_classic_object {
    void *addr;     /* the object in this process's mapping; NULL when empty */
    void *owner[2]; /* the shared_ptr (opaque) */
} shmb_fipc_classic_object_t;

typedef struct shmb_fipc_classic_arena shmb_fipc_classic_arena_t; /* opaque */

/* The lender's arena over its own pool (which must outlive it). Returns 0,
 * -EINVAL or -ENOMEM. */
int shmb_fipc_classic_arena_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_arena_t **out) SHMB_NOEXCEPT;

/* A borrower's arena: Pool_arena(open_only) on the pool named name: open,
 * map read-write (shmb_fipc_classic_attach), and the segment manager already
 * in it. Returns 0, -EINVAL, -ENOMEM or the attach's errors. */
int shmb_fipc_classic_arena_open(const char *name, shmb_fipc_classic_arena_t **out) SHMB_NOEXCEPT;

/* Unmaps a borrower's arena (the lender's pool stays its creator's). Its
 * objects must be released first. Returns 0 or the munmap's -errno
 * (recorded); NULL is a no-op returning 0. */
int shmb_fipc_classic_arena_destroy(shmb_fipc_classic_arena_t *a) SHMB_NOEXCEPT;

/* Pool_arena::construct: bytes (and the owner count, 1) from the pool, in a
 * handle whose last owner frees them. *out must be empty. Returns 0,
 * -EINVAL or -ENOMEM. */
int shmb_fipc_classic_construct(shmb_fipc_classic_arena_t *a, size_t bytes,
                                shmb_fipc_classic_object_t *out) SHMB_NOEXCEPT;

/* Session_impl::lend_object: is the handle in this arena, the owner count
 * + 1, the offset's blob and the scope id after it
 * (SHMB_FIPC_CLASSIC_BLOB_BYTES into blob, cap bytes). Returns 0 or -EINVAL
 * (not this arena's object, cap too small). */
int shmb_fipc_classic_lend(shmb_fipc_classic_arena_t *a, const shmb_fipc_classic_object_t *obj,
                           void *blob, size_t cap, size_t *len) SHMB_NOEXCEPT;

/* Session_impl::borrow_object: the scope id read, the object's address in
 * this mapping, a handle to it. *out must be empty. Returns 0, -EBADMSG
 * (not such a blob, or an offset outside the pool) or -ENOMEM. */
int shmb_fipc_classic_borrow(shmb_fipc_classic_arena_t *a, const void *blob, size_t len,
                             shmb_fipc_classic_object_t *out) SHMB_NOEXCEPT;

/* Drops a handle (empty: a no-op): handle_deleter_impl's owner count - 1,
 * and, when that was the last owner, deallocate here (when the pool's mutex
 * cannot be locked, the block stays allocated, is not counted in
 * shmb_fipc_classic_frees, and the error is recorded as "deallocate"). */
void shmb_fipc_classic_release(shmb_fipc_classic_object_t *obj) SHMB_NOEXCEPT;

/* How many objects this arena's releases deallocated. */
uint64_t shmb_fipc_classic_frees(const shmb_fipc_classic_arena_t *a) SHMB_NOEXCEPT;

/* One whole hand-off of a bytes-long object in this process, checked step
 * by step (run it before timing hand-offs): a lender arena over pool and a
 * borrower arena over a second mapping of it; an object with a pattern
 * lent, borrowed, released by the lender, then by the borrower. Checks the
 * blob (the object's offset, the session's scope: -EBADMSG), the borrowed
 * pointer (that offset in the borrower's mapping, reading the pattern:
 * -EFAULT), the owner count after each step and that the object is freed
 * once, by the last owner, with the pool's free bytes back where they were
 * (-ESTALE). Returns 0, one of those, or the calls' errors. */
int shmb_fipc_classic_handoff_verify(shmb_fipc_classic_t *pool, size_t bytes) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
