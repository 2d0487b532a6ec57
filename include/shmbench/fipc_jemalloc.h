/*
 * fipc_jemalloc: a model of Flow-IPC's SHM-jemalloc (repo
 * Flow-IPC/ipc_shm_arena_lend): jemalloc arenas whose extents are SHM pools,
 * and the pool repository a peer translates handles with (a system model:
 * C++17 inside, this C header outside).
 *
 * Allocator: an arena made with mallctl("arenas.create") and custom extent
 * hooks. Every extent jemalloc asks for is a new SHM pool, created through
 * shmbench/segment.h (O_CREAT|O_EXCL, mode 0600, registered for clean-up on a
 * signal), mapped, and entered in the allocator's pool repository; the
 * arena's retain_grow_limit caps an extent at SHMB_FIPC_JEMALLOC_MAX_POOL.
 * Allocation is mallocx(size, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE), or
 * with an explicit thread cache (MALLOCX_TCACHE(id), from tcache.create)
 * when made with tcache = 1; freeing is dallocx with the same cache flag.
 * A jemalloc tcache serves one thread only, so, as Flow-IPC's Thread_cache,
 * each thread gets its own, created the first time it allocates or frees
 * (the creating thread's at create). Several threads may allocate and free
 * at once (the arena's locks, and pools_mutex around pool creation in the
 * extent hooks); create and destroy must not overlap any other call.
 *
 * jemalloc comes from libshmb_jemalloc.so, built from Debian's
 * libjemalloc_pic.a exporting only mallocx, dallocx, sallocx and mallctl: the
 * process's malloc stays glibc's.
 *
 * Repository (Shm_pool_repository): pools by id. A handle is (pool id,
 * offset). to_address takes a std::lock_guard<std::mutex>, finds the pool in
 * a std::unordered_map<pool_id, pool> and returns base + offset;
 * from_address (lender side) takes the same lock and runs std::map::
 * lower_bound over the pool bases.
 *
 * Sizes in bytes. Functions return 0 or -errno; no C++ exception crosses
 * this header.
 */
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

/* Frees the repository (not the pools it names). Returns 0 (NULL: a no-op
 * returning 0). */
int shmb_fipc_repo_destroy(shmb_fipc_repo_t *repo) SHMB_NOEXCEPT;

/* Enters pool `id` mapped at [base, base + size). Returns 0, -EEXIST (id
 * taken), -EINVAL (size 0, or overlapping a pool already entered) or
 * -ENOMEM. */
int shmb_fipc_repo_insert(shmb_fipc_repo_t *repo, uint32_t id, void *base, size_t size) SHMB_NOEXCEPT;

/* Removes pool `id`. Returns 0 or -ENOENT. */
int shmb_fipc_repo_erase(shmb_fipc_repo_t *repo, uint32_t id) SHMB_NOEXCEPT;

/* Shm_pool_repository::to_address: base of pool `id` + offset, or NULL when
 * the pool is unknown or [offset, offset + len) is not inside it (or len = 0). */
void *shmb_fipc_repo_to_address(shmb_fipc_repo_t *repo, uint32_t id, uint64_t offset,
                                uint64_t len) SHMB_NOEXCEPT;

/* The lender's from_address: the pool holding ptr and the offset in it.
 * Returns 0 or -ENOENT (no pool holds ptr). */
int shmb_fipc_repo_from_address(shmb_fipc_repo_t *repo, const void *ptr, uint32_t *id,
                                uint64_t *offset) SHMB_NOEXCEPT;

/* The timed loop: to_address of requests[0..n) (their id, offset and len);
 * returns the sum of the addresses (NULL counts 0). */
uint64_t shmb_fipc_repo_translate_batch(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests, size_t n) SHMB_NOEXCEPT;

/* The latency loop: to_address of requests[0..n) as a dependent chain, each
 * request's id and offset shifted by how far the previous translation landed
 * from expected[] (0 when it is right: shmbench/lookup.h, shmb_lookup_chain).
 * Returns the sum of the addresses (NULL counts 0). */
uint64_t shmb_fipc_repo_translate_chain(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests,
                                        const uint64_t *expected, size_t n) SHMB_NOEXCEPT;

/* ---- allocator ---- */

typedef struct shmb_fipc_jemalloc shmb_fipc_jemalloc_t; /* opaque */

/* Creates an arena over SHM pools named after prefix (no pool exists until
 * jemalloc asks for an extent), with explicit thread caches when tcache is
 * non-zero (the creating thread's made now). The pools jemalloc keeps its own
 * metadata in (the first one, made now, and later ones) are reserved with
 * posix_fallocate, so that jemalloc never writes an unreserved page; the
 * pools of blocks are not. Returns 0, -ENOMEM, the error of the first pool
 * (-ENOSPC: /dev/shm is full, recorded as "posix_fallocate"), or -EIO when
 * jemalloc refuses (mallctl's error recorded with shmbench/error.h). */
int shmb_fipc_jemalloc_create(const char *prefix, int tcache, shmb_fipc_jemalloc_t **out) SHMB_NOEXCEPT;

/* Destroys the arena (and every thread's cache), unmaps every pool and unlinks
 * them when unlink_pools, else leaves them in /dev/shm on purpose. Adds the
 * number of pools left to *kept when kept is not NULL. Returns 0 or the first
 * error met after trying every pool. NULL is a no-op returning 0. */
int shmb_fipc_jemalloc_destroy(shmb_fipc_jemalloc_t *j, int unlink_pools, uint64_t *kept) SHMB_NOEXCEPT;

/* mallocx in the arena (through this thread's cache when made with tcache).
 * Returns 0 and the block in *out, -EINVAL for 0 bytes, -ENOSPC (a metadata
 * pool found /dev/shm full; recorded), or -ENOMEM (jemalloc could not get an
 * extent otherwise, or this thread's cache: the error is recorded). */
int shmb_fipc_jemalloc_alloc(shmb_fipc_jemalloc_t *j, size_t bytes, void **out) SHMB_NOEXCEPT;

/* dallocx of a block from shmb_fipc_jemalloc_alloc. Returns 0. */
int shmb_fipc_jemalloc_free(shmb_fipc_jemalloc_t *j, void *ptr) SHMB_NOEXCEPT;

/* An arena as shmb_fipc_jemalloc_create makes it (no thread cache), then n
 * blocks of `bytes` allocated in it and never touched: the pools its extent
 * hooks make for them exist (what registering n such blocks costs, and how
 * many pools they take). The blocks go with the arena: the caller destroys
 * it. On an error nothing is left and *out is NULL. */
int shmb_fipc_jemalloc_create_filled(const char *prefix, uint64_t n, size_t bytes,
                                     shmb_fipc_jemalloc_t **out) SHMB_NOEXCEPT;

/* ---- the object layer: Ipc_arena::construct<T> in its own process ----
 *
 * What the allocation benchmark's alloc / free rows of SHM-jemalloc time
 * (repo Flow-IPC/ipc_shm_arena_lend, src/ipc/shm/arena_lend/jemalloc/
 * ipc_arena.hpp: construct, construct_impl without a thread cache,
 * Ipc_object_deleter_no_cache; owner_shm_pool_collection.hpp:
 * construct_helper; shm_pool_collection.hpp: Object_deleter_no_cache).
 * construct<T>: the arena's one id (get_arena_id: the first of a std::set),
 * an Ipc_arena_activator (a thread_local arena pointer set and restored),
 * mallocx(sizeof(T), MALLOCX_ARENA | MALLOCX_TCACHE_NONE), the deleter
 * holding the arena (shared_from_this: an atomic increment) and the arena
 * id, T placed, and a std::shared_ptr with that deleter (its control block
 * from this process's heap: std::allocator). Dropping the last handle runs
 * the deleter: an activator over static_pointer_cast<Ipc_arena> of the
 * arena (a shared_ptr copy made and dropped), ~T, dallocx; then the control
 * block destroys the deleter (the arena's count - 1) and is freed. T is a
 * buffer of `bytes` whose constructor leaves its bytes as they are.
 * Logging is off (Memory_manager's FLOW_LOG_DATA lines are left out). */

typedef struct shmb_fipc_jemalloc_objects shmb_fipc_jemalloc_objects_t; /* opaque: an Ipc_arena */

/* One handle: addr (the object; NULL when empty), and a std::shared_ptr
 * (C++ only: never copy or touch it). */
typedef struct shmb_fipc_jemalloc_handle {
    void *addr;
    void *handle[2];
} shmb_fipc_jemalloc_handle_t;

/* An Ipc_arena over j's arena (j must outlive it and have no thread
 * cache). Returns 0, -EINVAL or -ENOMEM. */
int shmb_fipc_jemalloc_objects_create(shmb_fipc_jemalloc_t *j, shmb_fipc_jemalloc_objects_t **out) SHMB_NOEXCEPT;

/* Releases the arena; its objects must be dropped first. NULL is a no-op. */
void shmb_fipc_jemalloc_objects_destroy(shmb_fipc_jemalloc_objects_t *o) SHMB_NOEXCEPT;

/* Ipc_arena::construct of a bytes-long object into *h (which must be
 * empty). Returns 0, -EINVAL, -ENOSPC or -ENOMEM (as shmb_fipc_jemalloc_alloc). */
int shmb_fipc_jemalloc_object_new(shmb_fipc_jemalloc_objects_t *o, size_t bytes,
                                  shmb_fipc_jemalloc_handle_t *h) SHMB_NOEXCEPT;

/* Drops the handle of an object of o (its last owner: the deleter runs);
 * *h is empty afterwards. Returns 0 or -EINVAL (NULL or empty). */
int shmb_fipc_jemalloc_object_drop(shmb_fipc_jemalloc_objects_t *o, shmb_fipc_jemalloc_handle_t *h) SHMB_NOEXCEPT;

/* The check before timing, of a live handle: its shared_ptr points at addr
 * and has one owner, its deleter holds this arena and its id. (That the
 * object lies in one of the arena's pools is the caller's check: the
 * repository's.) Returns 0, or -EPROTO with why written. */
int shmb_fipc_jemalloc_object_check(const shmb_fipc_jemalloc_objects_t *o, const shmb_fipc_jemalloc_handle_t *h,
                                    char *why, size_t why_cap) SHMB_NOEXCEPT;

/* How many objects the arena constructed, and how many its deleters freed. */
void shmb_fipc_jemalloc_objects_counts(const shmb_fipc_jemalloc_objects_t *o, uint64_t *constructed,
                                       uint64_t *freed) SHMB_NOEXCEPT;

/* The allocator's repository: every pool jemalloc got, by id. */
shmb_fipc_repo_t *shmb_fipc_jemalloc_repo(const shmb_fipc_jemalloc_t *j) SHMB_NOEXCEPT;

/* How many SHM pools exist now, and their total bytes (may be NULL). */
size_t shmb_fipc_jemalloc_pools(const shmb_fipc_jemalloc_t *j, uint64_t *bytes) SHMB_NOEXCEPT;

/* ---- borrower (the process a block is lent to) ---- */

#define SHMB_FIPC_POOL_NAME_MAX 255 /* bytes of a pool's SHM name, without the NUL */

/* What a lender tells a borrower of one pool: its id, size and SHM name. */
typedef struct shmb_fipc_pool {
    uint32_t id;
    uint64_t bytes;
    char name[SHMB_FIPC_POOL_NAME_MAX + 1];
} shmb_fipc_pool_t;

/* The allocator's pools by ascending id: the first min(count, cap) into out
 * (may be NULL when cap is 0). Returns how many pools there are. */
size_t shmb_fipc_jemalloc_pool_list(const shmb_fipc_jemalloc_t *j, shmb_fipc_pool_t *out, size_t cap) SHMB_NOEXCEPT;

/* Borrower_shm_pool_collection::open_shm_pool: shm_open(name, O_RDONLY) and
 * mmap of the `bytes` the lender told (PROT_READ, MAP_SHARED: a borrower
 * only reads what it is lent); the descriptor stays open, as upstream's
 * Shm_pool keeps it. *base and *fd receive the mapping and the descriptor.
 * Returns 0, -EINVAL (bytes 0) or -errno (the failing call recorded with
 * the name). */
int shmb_fipc_pool_attach(const char *name, uint64_t bytes, void **base, int *fd) SHMB_NOEXCEPT;

/* munmap + close of an attach. Returns 0 or the first -errno (recorded). */
int shmb_fipc_pool_detach(void *base, uint64_t bytes, int fd) SHMB_NOEXCEPT;


/* ---- object hand-off (Shm_session: lend, borrow, return) ----
 *
 * Flow-IPC's object API between two processes, as upstream's
 * ipc::session::shm::arena_lend::jemalloc::Shm_session does it (repo
 * Flow-IPC/ipc_shm_arena_lend, src/ipc/session/standalone/shm/arena_lend/:
 * jemalloc/shm_session.{hpp,cpp}, shm_session_data.{hpp,cpp},
 * lender_collection.cpp, borrower_collection.cpp). A lender (the process
 * whose arena made the object) and a borrower each hold one side of the
 * session; what upstream sends on the session's channel comes out of these
 * calls as message bytes, which the caller carries to the other side
 * (shmbench/channel.h across processes, or straight across in one).
 *
 * One-time, per session: lend_arena, and lend_pool for every pool of the
 * arena (upstream: the extent hook's new pool is lent to each peer by a
 * synchronous request, Shm_session::lend_shm_pool + send_sync_request). A
 * real round trip is: the lender's message -> the borrower's
 * shmb_fipc_borrower_receive (attaches the pool) -> its reply -> the
 * lender's shmb_fipc_lender_on_response, the lender waiting for the reply
 * before the pool may be used; a driver times that as `register` or
 * `attach`, once per pool and peer.
 *
 * Per object (the `handoff`):
 *   lender:   construct (Ipc_arena::construct: mallocx + a shared_ptr whose
 *             deleter dallocx's; an allocation, not part of the hand-off),
 *             lend -> handle blob, drop its own reference;
 *   message:  the blob to the borrower;
 *   borrower: borrow(blob) -> the object in its mapping, use it, release ->
 *             the ReturnObject message;
 *   message:  the return to the lender;
 *   lender:   on_return: deregisters the object, whose last reference goes:
 *             dallocx.
 * Not modelled, each making upstream dearer than this model: capnp's
 * building and reading of the control messages (a heap segment each),
 * flow's logging, and the task-loop hops upstream takes to handle a
 * message (ReturnObject is posted to a thread pool, LendPool to a serial
 * loop); a driver runs the handlers inline.
 *
 * Objects are shared_ptrs inside; C holds them in shmb_fipc_object_t.
 */

#define SHMB_FIPC_HANDLE_BYTES 12u /* Shm_object_handle: collection id u32, pool id u32, offset i32 */
#define SHMB_FIPC_MSG_MAX 320u     /* bytes: the largest session message (LendPool with a 255-byte name) */

/* A process's reference to a lent or borrowed object: addr, and a
 * std::shared_ptr<void> inside owner (C++ only: never copy or touch it; an
 * all-zero struct is empty). */
typedef struct shmb_fipc_object {
    void *addr;     /* the object in this process's mapping; NULL when empty */
    void *owner[2]; /* the shared_ptr (opaque) */
} shmb_fipc_object_t;

typedef struct shmb_fipc_lender shmb_fipc_lender_t;     /* opaque */
typedef struct shmb_fipc_borrower shmb_fipc_borrower_t; /* opaque */

/* The lender's side of a session over allocator j (which must outlive it
 * and every object it makes). Returns 0, -EINVAL or -ENOMEM. */
int shmb_fipc_lender_create(shmb_fipc_jemalloc_t *j, shmb_fipc_lender_t **out) SHMB_NOEXCEPT;

/* Ends the session: objects still lent lose the session's reference (freed
 * when no other remains). Returns 0 (NULL: a no-op returning 0). */
int shmb_fipc_lender_destroy(shmb_fipc_lender_t *l) SHMB_NOEXCEPT;

/* Shm_session::lend_arena: registers the arena as lent and writes the
 * LendArena request into msg (cap >= SHMB_FIPC_MSG_MAX) and its length into
 * *len. Returns 0, -EEXIST (lent already) or -EINVAL. */
int shmb_fipc_lender_lend_arena(shmb_fipc_lender_t *l, void *msg, size_t cap, size_t *len) SHMB_NOEXCEPT;

/* Shm_session::lend_shm_pool: enters pool pool_id of the allocator in the
 * arena's pool map (upstream does that in the extent hook) and in the
 * session's lent pools, and writes the LendPool request (collection, pool
 * id, size, name). Returns 0, -ENOENT (no such pool), -EEXIST (lent
 * already), -EINVAL (no lend_arena yet, or cap too small) or -ENOMEM. */
int shmb_fipc_lender_lend_pool(shmb_fipc_lender_t *l, uint32_t pool_id, void *msg, size_t cap,
                               size_t *len) SHMB_NOEXCEPT;

/* send_sync_request's end: the borrower's Response. Returns 0 (success),
 * -EREMOTEIO (the borrower refused) or -EBADMSG (not a Response). */
int shmb_fipc_lender_on_response(shmb_fipc_lender_t *l, const void *msg, size_t len) SHMB_NOEXCEPT;

/* Ipc_arena::construct: bytes from the allocator (mallocx) in a shared_ptr
 * whose deleter frees them (dallocx) and counts the free. *out must be
 * empty. Returns 0, -EINVAL or -ENOMEM. */
int shmb_fipc_lender_construct(shmb_fipc_lender_t *l, size_t bytes, shmb_fipc_object_t *out) SHMB_NOEXCEPT;

/* Shm_session::lend_object: the lender's mutex, its maps, the pool lookup
 * (boost::shared_mutex read lock, std::map::lower_bound), a shared_ptr copy
 * kept until the return, and the handle blob (SHMB_FIPC_HANDLE_BYTES into
 * blob, cap bytes). Returns 0, -ENOENT (the object's pool is not lent),
 * -EINVAL (not this arena's object, cap too small), -EPIPE (disconnected)
 * or -ENOMEM. */
int shmb_fipc_lender_lend(shmb_fipc_lender_t *l, const shmb_fipc_object_t *obj, void *blob,
                          size_t cap, size_t *len) SHMB_NOEXCEPT;

/* The handle blob (SHMB_FIPC_HANDLE_BYTES into blob, cap bytes) that
 * lend_object would write for an object at offset in pool pool_id of the
 * lender's arena: a borrower's shmb_fipc_borrower_borrow of it reaches that
 * place through its mapping of the pool, once the pool is lent to it. For
 * a driver's check of the lent pools; nothing is registered as lent.
 * Returns 0 or -EINVAL (offset above INT32_MAX, the handle's range; cap too
 * small). */
int shmb_fipc_lender_handle(const shmb_fipc_lender_t *l, uint32_t pool_id, uint64_t offset, void *blob,
                            size_t cap, size_t *len) SHMB_NOEXCEPT;

/* Shm_session::receive_object_return: deregisters the object the
 * ReturnObject message names; when that was the last reference, the object
 * is freed now. Returns 0, -ENOENT (not lent) or -EBADMSG. */
int shmb_fipc_lender_on_return(shmb_fipc_lender_t *l, const void *msg, size_t len) SHMB_NOEXCEPT;

/* Shm_session::set_disconnected, for when the channel to the borrower
 * failed (-EPIPE): lends fail with -EPIPE from then on; what is lent stays
 * until the session ends. */
void shmb_fipc_lender_disconnect(shmb_fipc_lender_t *l) SHMB_NOEXCEPT;

/* How many objects the lender's deleter freed, and how many are lent now. */
uint64_t shmb_fipc_lender_frees(const shmb_fipc_lender_t *l) SHMB_NOEXCEPT;
size_t shmb_fipc_lender_lent(const shmb_fipc_lender_t *l) SHMB_NOEXCEPT;

/* The borrower's side of a session. Returns 0 or -ENOMEM. */
int shmb_fipc_borrower_create(shmb_fipc_borrower_t **out) SHMB_NOEXCEPT;

/* Drops the caller's reference; the session (and its pool mappings) lives
 * until the last borrowed object is released, as upstream's deleters hold
 * it (shared_from_this). Returns 0 (NULL: a no-op returning 0). */
int shmb_fipc_borrower_destroy(shmb_fipc_borrower_t *b) SHMB_NOEXCEPT;

/* Shm_session::set_disconnected on the borrower's side: releases still
 * deregister but write no ReturnObject message (*len 0). */
void shmb_fipc_borrower_disconnect(shmb_fipc_borrower_t *b) SHMB_NOEXCEPT;

/* The borrower's handlers of LendArena (receive_arena) and LendPool
 * (receive_shm_pool: shm_open + mmap of the pool, read-only, through
 * shmb_fipc_pool_attach): writes the Response into reply (cap >=
 * SHMB_FIPC_MSG_MAX). Returns 0 (whether the Response says success or not:
 * a failure is the lender's to see), -EBADMSG (not such a message) or
 * -EINVAL. */
int shmb_fipc_borrower_receive(shmb_fipc_borrower_t *b, const void *msg, size_t len, void *reply,
                               size_t cap, size_t *reply_len) SHMB_NOEXCEPT;

/* Shm_session::borrow_object: deserializes the blob, takes the borrower's
 * mutex, finds the collection and pool, counts the offset in, and makes a
 * shared_ptr to the object in this process's mapping whose deleter returns
 * it (see shmb_fipc_object_release). *out must be empty. Returns 0,
 * -EBADMSG (not a handle), -ENOENT (pool or arena not lent to this side) or
 * -ENOMEM. */
int shmb_fipc_borrower_borrow(shmb_fipc_borrower_t *b, const void *blob, size_t len,
                              shmb_fipc_object_t *out) SHMB_NOEXCEPT;

/* Drops a reference (lender's or borrower's; empty: a no-op). For a
 * borrowed object the deleter runs Shm_session::return_object: it
 * deregisters the object on this side and writes the ReturnObject message
 * into msg, its length into *len (0 when there is none: a lender's object,
 * freed here when that was its last reference). msg needs
 * SHMB_FIPC_MSG_MAX bytes. The object is empty afterwards. Returns 0 or
 * -EINVAL (cap too small: nothing dropped). */
int shmb_fipc_object_release(shmb_fipc_object_t *obj, void *msg, size_t cap, size_t *len) SHMB_NOEXCEPT;

/* One whole hand-off of a bytes-long object in this process, checked step
 * by step (run it before timing hand-offs): lender and borrower sessions,
 * every pool lent and attached, an object with a pattern lent, borrowed,
 * released and returned. Checks that the blob names the object's pool and
 * offset (-EBADMSG otherwise), that the borrowed pointer is that offset in
 * the borrower's own mapping of the pool and reads the pattern (-EFAULT),
 * that the return message names the lent object (-EBADMSG), that nothing
 * was freed before the return and the object exactly once after (-ESTALE).
 * Returns 0, one of those, or the calls' errors. */
int shmb_fipc_handoff_verify(shmb_fipc_jemalloc_t *j, size_t bytes) SHMB_NOEXCEPT;

/* A numeric jemalloc setting read through mallctl, e.g. "arenas.tcache_max"
 * (size_t), "arenas.bin.3.nregs" (uint32_t), "opt.tcache_nslots_large"
 * (unsigned), "opt.lg_tcache_nslots_mul" (ssize_t), "opt.tcache" (bool),
 * widened into *out. Returns 0, -EINVAL (name or out NULL, or no width
 * fits) or -ENOENT (no such setting). */
int shmb_fipc_jemalloc_setting(const char *name, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
