/* fipc_classic: Flow-IPC's SHM-classic Pool_arena (docs/models.md): one SHM
 * pool under boost.interprocess's rbtree_best_fit and its interprocess
 * mutex; a handle is a block's offset from the pool's base. C++17 behind
 * this header; sizes in bytes; functions return 0 or -errno and let no
 * exception through. */
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

/* A sparse pool of pool_bytes named after prefix, its segment manager built
 * in it (its header pages reserved). -EINVAL: too small for the manager;
 * -ENOSPC: no room for the headers. Nothing is left on an error. */
int shmb_fipc_classic_create(const char *prefix, size_t pool_bytes, shmb_fipc_classic_t **out) SHMB_NOEXCEPT;

/* Unmaps the pool, unlinking it when unlink_pool. NULL: a no-op. */
int shmb_fipc_classic_destroy(shmb_fipc_classic_t *pool, int unlink_pool) SHMB_NOEXCEPT;

/* Pool_arena::allocate. -EINVAL: 0 bytes; -ENOMEM: no room; -EIO: the
 * pool's mutex cannot be locked. */
int shmb_fipc_classic_alloc(shmb_fipc_classic_t *pool, size_t bytes, void **out) SHMB_NOEXCEPT;

/* Pool_arena::deallocate. -EINVAL: ptr outside the pool; -EIO: the pool's
 * mutex cannot be locked (the block stays allocated). */
int shmb_fipc_classic_free(shmb_fipc_classic_t *pool, void *ptr) SHMB_NOEXCEPT;

/* The pool's mapping: base and size in bytes (for handles and checks). */
void *shmb_fipc_classic_base(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;
size_t shmb_fipc_classic_size(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;

/* The free bytes of the pool (segment_manager::get_free_memory); 0 for NULL. */
size_t shmb_fipc_classic_free_bytes(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;

/* The pool's SHM name, which a borrower opens ("/..."). */
const char *shmb_fipc_classic_name(const shmb_fipc_classic_t *pool) SHMB_NOEXCEPT;

/* A borrower's open of the pool as basic_managed_shared_memory(open_only)
 * does it: shm_open(O_RDWR), fstat, a read-write mmap of all of it, close. */
int shmb_fipc_classic_attach(const char *name, void **base, size_t *bytes) SHMB_NOEXCEPT;

/* munmap of an attach's mapping. */
int shmb_fipc_classic_detach(void *base, size_t bytes) SHMB_NOEXCEPT;

/* A handle's translation: base + offset; NULL unless [offset, offset + len)
 * is inside the pool (len > 0). */
void *shmb_fipc_classic_to_address(void *base, size_t pool_bytes, uint64_t offset, uint64_t len) SHMB_NOEXCEPT;

/* The timed loop: the sum of to_address over requests[0..n) (NULL counts 0). */
uint64_t shmb_fipc_classic_translate_batch(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests, size_t n) SHMB_NOEXCEPT;

/* The latency loop: the same as a dependent chain (shmb_lookup_chain). */
uint64_t shmb_fipc_classic_translate_chain(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests,
                                           const uint64_t *expected, size_t n) SHMB_NOEXCEPT;

/* ---- the object layer: Pool_arena::construct<T> in its own process ---- */

typedef struct shmb_fipc_classic_objects shmb_fipc_classic_objects_t; /* opaque: a Pool_arena */

/* One handle: the object (NULL: empty) and its boost::shared_ptr (opaque). */
typedef struct shmb_fipc_classic_handle {
    void *addr;
    void *handle[2];
} shmb_fipc_classic_handle_t;

/* A Pool_arena over pool (outliving it). */
int shmb_fipc_classic_objects_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_objects_t **out) SHMB_NOEXCEPT;

/* Releases the arena once its objects are dropped. NULL: a no-op. */
void shmb_fipc_classic_objects_destroy(shmb_fipc_classic_objects_t *o) SHMB_NOEXCEPT;

/* Pool_arena::construct of a bytes-long object into the empty *h. */
int shmb_fipc_classic_object_new(shmb_fipc_classic_objects_t *o, size_t bytes,
                                 shmb_fipc_classic_handle_t *h) SHMB_NOEXCEPT;

/* Drops the last handle of an object of o (the deleter frees it; a failed
 * deallocate is recorded, not counted). -EINVAL for an empty one. */
int shmb_fipc_classic_object_drop(shmb_fipc_classic_objects_t *o, shmb_fipc_classic_handle_t *h) SHMB_NOEXCEPT;

/* Checks a live handle before timing: pointing at addr, inside the pool, one
 * owner, its count in SHM 1. Else -EPROTO and why. */
int shmb_fipc_classic_object_check(const shmb_fipc_classic_objects_t *o, const shmb_fipc_classic_handle_t *h,
                                   size_t bytes, char *why, size_t why_cap) SHMB_NOEXCEPT;

/* How many objects the arena constructed, and how many its deleters freed. */
void shmb_fipc_classic_objects_counts(const shmb_fipc_classic_objects_t *o, uint64_t *constructed,
                                      uint64_t *freed) SHMB_NOEXCEPT;

/* ---- object hand-off (Pool_arena::lend_object / borrow_object): each
 * process has its own arena over the one pool; the blob is the only message
 * (no return), and the last owner deallocates in its own process. ---- */

#define SHMB_FIPC_CLASSIC_BLOB_BYTES 16u /* the object's offset (ptrdiff_t) + the arena's scope id (u64) */

/* A process's handle to an object in the pool (all zero: empty). */
typedef struct shmb_fipc_classic_object {
    void *addr;     /* the object in this process's mapping; NULL when empty */
    void *owner[2]; /* the shared_ptr (opaque) */
} shmb_fipc_classic_object_t;

typedef struct shmb_fipc_classic_arena shmb_fipc_classic_arena_t; /* opaque */

/* The lender's arena over its own pool (outliving it). */
int shmb_fipc_classic_arena_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_arena_t **out) SHMB_NOEXCEPT;

/* A borrower's arena: Pool_arena(open_only) of the pool `name`
 * (shmb_fipc_classic_attach). */
int shmb_fipc_classic_arena_open(const char *name, shmb_fipc_classic_arena_t **out) SHMB_NOEXCEPT;

/* Ends an arena once its objects are released, unmapping a borrower's.
 * NULL: a no-op. */
int shmb_fipc_classic_arena_destroy(shmb_fipc_classic_arena_t *a) SHMB_NOEXCEPT;

/* Pool_arena::construct into the empty *out: its last owner frees it. */
int shmb_fipc_classic_construct(shmb_fipc_classic_arena_t *a, size_t bytes,
                                shmb_fipc_classic_object_t *out) SHMB_NOEXCEPT;

/* Session_impl::lend_object: the owner count + 1, the blob (offset, scope id)
 * into blob. -EINVAL: not this arena's object, or cap too small. */
int shmb_fipc_classic_lend(shmb_fipc_classic_arena_t *a, const shmb_fipc_classic_object_t *obj,
                           void *blob, size_t cap, size_t *len) SHMB_NOEXCEPT;

/* Session_impl::borrow_object into the empty *out. -EBADMSG: not a blob, or
 * an offset outside the pool. */
int shmb_fipc_classic_borrow(shmb_fipc_classic_arena_t *a, const void *blob, size_t len,
                             shmb_fipc_classic_object_t *out) SHMB_NOEXCEPT;

/* Drops a handle: the owner count - 1, the last owner deallocating (a failed
 * deallocate is recorded, not counted). */
void shmb_fipc_classic_release(shmb_fipc_classic_object_t *obj) SHMB_NOEXCEPT;

/* How many objects this arena's releases deallocated. */
uint64_t shmb_fipc_classic_frees(const shmb_fipc_classic_arena_t *a) SHMB_NOEXCEPT;

/* One whole hand-off in this process, checked before timing: -EBADMSG (blob),
 * -EFAULT (borrowed pointer), -ESTALE (owner counts, or not freed exactly
 * once by the last owner). */
int shmb_fipc_classic_handoff_verify(shmb_fipc_classic_t *pool, size_t bytes) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
