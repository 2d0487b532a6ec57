/* fipc_jemalloc: Flow-IPC's SHM-jemalloc (docs/models.md): a jemalloc arena
 * whose extents are SHM pools (jemalloc from libshmb_jemalloc.so: the
 * process's malloc stays glibc's), the pool repository, the object layer and
 * the object hand-off between two processes. C++17 behind this header; sizes
 * in bytes; functions return 0 or -errno and let no exception through. */
#ifndef SHMBENCH_FIPC_JEMALLOC_H
#define SHMBENCH_FIPC_JEMALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/error.h"
#include "shmbench/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_FIPC_JEMALLOC_MAX_POOL (2ull << 30) /* bytes: the largest extent (retain_grow_limit) */

/* ---- repository ---- */

typedef struct shmb_fipc_repo shmb_fipc_repo_t; /* opaque */

/* An empty repository. Returns 0 or -ENOMEM. */
int shmb_fipc_repo_create(shmb_fipc_repo_t **out) SHMB_NOEXCEPT;

/* Frees the repository, not the pools it names. NULL: a no-op. */
int shmb_fipc_repo_destroy(shmb_fipc_repo_t *repo) SHMB_NOEXCEPT;

/* Enters pool `id` at [base, base + size). -EEXIST: id taken; -EINVAL: size
 * 0 or overlapping a pool. */
int shmb_fipc_repo_insert(shmb_fipc_repo_t *repo, uint32_t id, void *base, size_t size) SHMB_NOEXCEPT;

/* Removes pool `id`. Returns 0 or -ENOENT. */
int shmb_fipc_repo_erase(shmb_fipc_repo_t *repo, uint32_t id) SHMB_NOEXCEPT;

/* Shm_pool_repository::to_address: pool `id`'s base + offset; NULL unless
 * [offset, offset + len) is inside a known pool (len > 0). */
void *shmb_fipc_repo_to_address(shmb_fipc_repo_t *repo, uint32_t id, uint64_t offset,
                                uint64_t len) SHMB_NOEXCEPT;

/* The lender's from_address: the pool holding ptr and the offset in it, or
 * -ENOENT. */
int shmb_fipc_repo_from_address(shmb_fipc_repo_t *repo, const void *ptr, uint32_t *id,
                                uint64_t *offset) SHMB_NOEXCEPT;

/* The timed loop: the sum of to_address over requests[0..n) (NULL counts 0). */
uint64_t shmb_fipc_repo_translate_batch(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests, size_t n) SHMB_NOEXCEPT;

/* The latency loop: the same as a dependent chain (shmb_lookup_chain). */
uint64_t shmb_fipc_repo_translate_chain(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests,
                                        const uint64_t *expected, size_t n) SHMB_NOEXCEPT;

/* ---- allocator ---- */

typedef struct shmb_fipc_jemalloc shmb_fipc_jemalloc_t; /* opaque */

/* An arena over SHM pools named after prefix, each thread with its own
 * tcache when tcache != 0. Pools of jemalloc's metadata are reserved
 * (posix_fallocate), block pools not. -ENOSPC: /dev/shm full; -EIO: jemalloc
 * refused (recorded). Create and destroy overlap no other call. */
int shmb_fipc_jemalloc_create(const char *prefix, int tcache, shmb_fipc_jemalloc_t **out) SHMB_NOEXCEPT;

/* Destroys the arena and its caches and unmaps every pool, unlinking them
 * when unlink_pools (else adds their count to *kept, if given). Returns the
 * first error after trying every pool. NULL: a no-op. */
int shmb_fipc_jemalloc_destroy(shmb_fipc_jemalloc_t *j, int unlink_pools, uint64_t *kept) SHMB_NOEXCEPT;

/* mallocx in the arena (this thread's cache with tcache). -EINVAL: 0 bytes;
 * -ENOSPC: a metadata pool found /dev/shm full; -ENOMEM otherwise. */
int shmb_fipc_jemalloc_alloc(shmb_fipc_jemalloc_t *j, size_t bytes, void **out) SHMB_NOEXCEPT;

/* dallocx of a block from shmb_fipc_jemalloc_alloc. */
int shmb_fipc_jemalloc_free(shmb_fipc_jemalloc_t *j, void *ptr) SHMB_NOEXCEPT;

/* An arena (no tcache) with n untouched blocks of `bytes` allocated, so the
 * pools its hooks make for them exist; they go with the arena. On an error
 * nothing is left and *out is NULL. */
int shmb_fipc_jemalloc_create_filled(const char *prefix, uint64_t n, size_t bytes,
                                     shmb_fipc_jemalloc_t **out) SHMB_NOEXCEPT;

/* ---- the object layer: Ipc_arena::construct<T> in its own process ---- */

typedef struct shmb_fipc_jemalloc_objects shmb_fipc_jemalloc_objects_t; /* opaque: an Ipc_arena */

/* One handle: the object (NULL: empty) and its std::shared_ptr (opaque). */
typedef struct shmb_fipc_jemalloc_handle {
    void *addr;
    void *handle[2];
} shmb_fipc_jemalloc_handle_t;

/* An Ipc_arena over j's arena (j without tcache, outliving it). */
int shmb_fipc_jemalloc_objects_create(shmb_fipc_jemalloc_t *j, shmb_fipc_jemalloc_objects_t **out) SHMB_NOEXCEPT;

/* Releases the arena once its objects are dropped. NULL: a no-op. */
void shmb_fipc_jemalloc_objects_destroy(shmb_fipc_jemalloc_objects_t *o) SHMB_NOEXCEPT;

/* Ipc_arena::construct of a bytes-long object into the empty *h; errors as
 * shmb_fipc_jemalloc_alloc's. */
int shmb_fipc_jemalloc_object_new(shmb_fipc_jemalloc_objects_t *o, size_t bytes,
                                  shmb_fipc_jemalloc_handle_t *h) SHMB_NOEXCEPT;

/* Drops the last handle of an object of o (the deleter frees it); -EINVAL
 * for an empty one. */
int shmb_fipc_jemalloc_object_drop(shmb_fipc_jemalloc_objects_t *o, shmb_fipc_jemalloc_handle_t *h) SHMB_NOEXCEPT;

/* Checks a live handle before timing: one owner, pointing at addr, its
 * deleter holding this arena and id. Else -EPROTO and why. */
int shmb_fipc_jemalloc_object_check(const shmb_fipc_jemalloc_objects_t *o, const shmb_fipc_jemalloc_handle_t *h,
                                    char *why, size_t why_cap) SHMB_NOEXCEPT;

/* How many objects the arena constructed, and how many its deleters freed. */
void shmb_fipc_jemalloc_objects_counts(const shmb_fipc_jemalloc_objects_t *o, uint64_t *constructed,
                                       uint64_t *freed) SHMB_NOEXCEPT;

/* The allocator's repository: every pool jemalloc got, by id. */
shmb_fipc_repo_t *shmb_fipc_jemalloc_repo(const shmb_fipc_jemalloc_t *j) SHMB_NOEXCEPT;

/* How many SHM pools exist, and their total bytes (bytes may be NULL). */
size_t shmb_fipc_jemalloc_pools(const shmb_fipc_jemalloc_t *j, uint64_t *bytes) SHMB_NOEXCEPT;

/* ---- borrower (the process a block is lent to) ---- */

#define SHMB_FIPC_POOL_NAME_MAX 255 /* bytes of a pool's SHM name, without the NUL */

/* What a lender tells a borrower of one pool: its id, size and SHM name. */
typedef struct shmb_fipc_pool {
    uint32_t id;
    uint64_t bytes;
    char name[SHMB_FIPC_POOL_NAME_MAX + 1];
} shmb_fipc_pool_t;

/* The first cap pools by ascending id into out; returns how many there are. */
size_t shmb_fipc_jemalloc_pool_list(const shmb_fipc_jemalloc_t *j, shmb_fipc_pool_t *out, size_t cap) SHMB_NOEXCEPT;

/* Borrower_shm_pool_collection::open_shm_pool: shm_open(O_RDONLY) and a
 * read-only mmap of `bytes`; the descriptor stays open (*fd), as upstream's. */
int shmb_fipc_pool_attach(const char *name, uint64_t bytes, void **base, int *fd) SHMB_NOEXCEPT;

/* munmap + close of an attach. */
int shmb_fipc_pool_detach(void *base, uint64_t bytes, int fd) SHMB_NOEXCEPT;

/* ---- object hand-off (Shm_session: lend, borrow, return) ----
 * What upstream sends on the session's channel comes out of these calls as
 * message bytes the caller carries to the other side. */

#define SHMB_FIPC_HANDLE_BYTES 12u /* Shm_object_handle: collection id u32, pool id u32, offset i32 */
#define SHMB_FIPC_MSG_MAX 320u     /* bytes: the largest session message (LendPool with a 255-byte name) */

/* A reference to a lent or borrowed object (all zero: empty). */
typedef struct shmb_fipc_object {
    void *addr;     /* the object in this process's mapping; NULL when empty */
    void *owner[2]; /* the shared_ptr (opaque) */
} shmb_fipc_object_t;

typedef struct shmb_fipc_lender shmb_fipc_lender_t;     /* opaque */
typedef struct shmb_fipc_borrower shmb_fipc_borrower_t; /* opaque */

/* The lender's side of a session over j (outliving it and its objects). */
int shmb_fipc_lender_create(shmb_fipc_jemalloc_t *j, shmb_fipc_lender_t **out) SHMB_NOEXCEPT;

/* Ends the session; objects still lent lose its reference. NULL: a no-op. */
int shmb_fipc_lender_destroy(shmb_fipc_lender_t *l) SHMB_NOEXCEPT;

/* Shm_session::lend_arena: the LendArena request into msg (cap >=
 * SHMB_FIPC_MSG_MAX). -EEXIST: lent already. */
int shmb_fipc_lender_lend_arena(shmb_fipc_lender_t *l, void *msg, size_t cap, size_t *len) SHMB_NOEXCEPT;

/* Shm_session::lend_shm_pool: the LendPool request of pool pool_id.
 * -ENOENT: no such pool; -EEXIST: lent already; -EINVAL: no lend_arena yet. */
int shmb_fipc_lender_lend_pool(shmb_fipc_lender_t *l, uint32_t pool_id, void *msg, size_t cap,
                               size_t *len) SHMB_NOEXCEPT;

/* The borrower's Response: 0, -EREMOTEIO (refused) or -EBADMSG. */
int shmb_fipc_lender_on_response(shmb_fipc_lender_t *l, const void *msg, size_t len) SHMB_NOEXCEPT;

/* Ipc_arena::construct into the empty *out: a shared_ptr whose deleter
 * dallocx's the block and counts the free. */
int shmb_fipc_lender_construct(shmb_fipc_lender_t *l, size_t bytes, shmb_fipc_object_t *out) SHMB_NOEXCEPT;

/* Shm_session::lend_object: a reference kept until the return, the handle
 * blob into blob. -ENOENT: its pool not lent; -EPIPE: disconnected. */
int shmb_fipc_lender_lend(shmb_fipc_lender_t *l, const shmb_fipc_object_t *obj, void *blob,
                          size_t cap, size_t *len) SHMB_NOEXCEPT;

/* The blob lend_object would write for offset in pool pool_id, nothing lent:
 * a driver's check of the lent pools. -EINVAL: offset above INT32_MAX. */
int shmb_fipc_lender_handle(const shmb_fipc_lender_t *l, uint32_t pool_id, uint64_t offset, void *blob,
                            size_t cap, size_t *len) SHMB_NOEXCEPT;

/* Shm_session::receive_object_return: deregisters (and maybe frees) the
 * object the message names. -ENOENT: not lent. */
int shmb_fipc_lender_on_return(shmb_fipc_lender_t *l, const void *msg, size_t len) SHMB_NOEXCEPT;

/* Shm_session::set_disconnected: later lends fail with -EPIPE. */
void shmb_fipc_lender_disconnect(shmb_fipc_lender_t *l) SHMB_NOEXCEPT;

/* How many objects the lender's deleter freed, and how many are lent now. */
uint64_t shmb_fipc_lender_frees(const shmb_fipc_lender_t *l) SHMB_NOEXCEPT;
size_t shmb_fipc_lender_lent(const shmb_fipc_lender_t *l) SHMB_NOEXCEPT;

/* The borrower's side of a session. */
int shmb_fipc_borrower_create(shmb_fipc_borrower_t **out) SHMB_NOEXCEPT;

/* Drops the caller's reference; the session lives until its last borrowed
 * object is released. NULL: a no-op. */
int shmb_fipc_borrower_destroy(shmb_fipc_borrower_t *b) SHMB_NOEXCEPT;

/* The borrower's set_disconnected: releases write no ReturnObject (*len 0). */
void shmb_fipc_borrower_disconnect(shmb_fipc_borrower_t *b) SHMB_NOEXCEPT;

/* Handles LendArena or LendPool (attaching the pool) and writes the Response
 * into reply; 0 even when it says failure. -EBADMSG: no such message. */
int shmb_fipc_borrower_receive(shmb_fipc_borrower_t *b, const void *msg, size_t len, void *reply,
                               size_t cap, size_t *reply_len) SHMB_NOEXCEPT;

/* Shm_session::borrow_object into the empty *out: the object in this
 * process's mapping. -EBADMSG: not a handle; -ENOENT: its pool not lent. */
int shmb_fipc_borrower_borrow(shmb_fipc_borrower_t *b, const void *blob, size_t len,
                              shmb_fipc_object_t *out) SHMB_NOEXCEPT;

/* Drops a reference; a borrowed object's deleter writes the ReturnObject
 * into msg (*len 0: none). -EINVAL: cap below SHMB_FIPC_MSG_MAX. */
int shmb_fipc_object_release(shmb_fipc_object_t *obj, void *msg, size_t cap, size_t *len) SHMB_NOEXCEPT;

/* One whole hand-off in this process, checked before timing: -EBADMSG (blob
 * or return names another place), -EFAULT (borrowed pointer wrong), -ESTALE
 * (freed early or not exactly once). */
int shmb_fipc_handoff_verify(shmb_fipc_jemalloc_t *j, size_t bytes) SHMB_NOEXCEPT;

/* A numeric mallctl setting (e.g. "arenas.tcache_max") widened into *out.
 * -ENOENT: no such setting. */
int shmb_fipc_jemalloc_setting(const char *name, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
