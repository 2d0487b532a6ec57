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

#include "shmbench/lookup.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_FIPC_JEMALLOC_MAX_POOL (2ull << 30) /* bytes: the largest extent (retain_grow_limit) */

/* ---- repository ---- */

typedef struct shmb_fipc_repo shmb_fipc_repo_t; /* opaque */

/* An empty repository. Returns 0 or -ENOMEM. */
int shmb_fipc_repo_create(shmb_fipc_repo_t **out);

/* Frees the repository (not the pools it names). NULL is a no-op. */
void shmb_fipc_repo_destroy(shmb_fipc_repo_t *repo);

/* Enters pool `id` mapped at [base, base + size). Returns 0, -EEXIST (id
 * taken), -EINVAL (size 0, or overlapping a pool already entered) or
 * -ENOMEM. */
int shmb_fipc_repo_insert(shmb_fipc_repo_t *repo, uint32_t id, void *base, size_t size);

/* Removes pool `id`. Returns 0 or -ENOENT. */
int shmb_fipc_repo_erase(shmb_fipc_repo_t *repo, uint32_t id);

/* Shm_pool_repository::to_address: base of pool `id` + offset, or NULL when
 * the pool is unknown or [offset, offset + len) is not inside it (or len = 0). */
void *shmb_fipc_repo_to_address(shmb_fipc_repo_t *repo, uint32_t id, uint64_t offset,
                                uint64_t len);

/* The lender's from_address: the pool holding ptr and the offset in it.
 * Returns 0 or -ENOENT (no pool holds ptr). */
int shmb_fipc_repo_from_address(shmb_fipc_repo_t *repo, const void *ptr, uint32_t *id,
                                uint64_t *offset);

/* The timed loop: to_address of requests[0..n) (their id, offset and len);
 * returns the sum of the addresses (NULL counts 0). */
uint64_t shmb_fipc_repo_translate_batch(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests, size_t n);

/* The latency loop: to_address of requests[0..n) as a dependent chain, each
 * request's id and offset shifted by how far the previous translation landed
 * from expected[] (0 when it is right: shmbench/lookup.h, shmb_lookup_chain).
 * Returns the sum of the addresses (NULL counts 0). */
uint64_t shmb_fipc_repo_translate_chain(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests,
                                        const uint64_t *expected, size_t n);

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
int shmb_fipc_jemalloc_create(const char *prefix, int tcache, shmb_fipc_jemalloc_t **out);

/* Destroys the arena (and every thread's cache), unmaps every pool and unlinks
 * them when unlink_pools, else leaves them in /dev/shm on purpose. Adds the
 * number of pools left to *kept when kept is not NULL. Returns 0 or the first
 * error met after trying every pool. NULL is a no-op returning 0. */
int shmb_fipc_jemalloc_destroy(shmb_fipc_jemalloc_t *j, int unlink_pools, uint64_t *kept);

/* mallocx in the arena (through this thread's cache when made with tcache).
 * Returns 0 and the block in *out, -EINVAL for 0 bytes, -ENOSPC (a metadata
 * pool found /dev/shm full; recorded), or -ENOMEM (jemalloc could not get an
 * extent otherwise, or this thread's cache: the error is recorded). */
int shmb_fipc_jemalloc_alloc(shmb_fipc_jemalloc_t *j, size_t bytes, void **out);

/* dallocx of a block from shmb_fipc_jemalloc_alloc. Returns 0. */
int shmb_fipc_jemalloc_free(shmb_fipc_jemalloc_t *j, void *ptr);

/* The allocator's repository: every pool jemalloc got, by id. */
shmb_fipc_repo_t *shmb_fipc_jemalloc_repo(const shmb_fipc_jemalloc_t *j);

/* How many SHM pools exist now, and their total bytes (may be NULL). */
size_t shmb_fipc_jemalloc_pools(const shmb_fipc_jemalloc_t *j, uint64_t *bytes);

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
size_t shmb_fipc_jemalloc_pool_list(const shmb_fipc_jemalloc_t *j, shmb_fipc_pool_t *out, size_t cap);

/* Borrower_shm_pool_collection::open_shm_pool: shm_open(name, O_RDONLY) and
 * mmap of the `bytes` the lender told (PROT_READ, MAP_SHARED: a borrower
 * only reads what it is lent); the descriptor stays open, as upstream's
 * Shm_pool keeps it. *base and *fd receive the mapping and the descriptor.
 * Returns 0, -EINVAL (bytes 0) or -errno (the failing call recorded with
 * the name). */
int shmb_fipc_pool_attach(const char *name, uint64_t bytes, void **base, int *fd);

/* munmap + close of an attach. Returns 0 or the first -errno (recorded). */
int shmb_fipc_pool_detach(void *base, uint64_t bytes, int fd);

#ifdef __cplusplus
}
#endif

#endif
