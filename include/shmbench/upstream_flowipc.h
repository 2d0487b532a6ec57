/* upstream_flowipc: Flow-IPC's own code compiled from the user's source
 * (-DSHMB_FLOWIPC_SOURCE, docs/upstream.md) against a private Boost 1.81,
 * in libshmb_flowipc_upstream.so, which exports only these functions (its
 * Boost never meets the suite's). Built without it, every call returns
 * -ENOTSUP. Functions return 0 or -errno and let no exception through. */
#ifndef SHMBENCH_UPSTREAM_FLOWIPC_H
#define SHMBENCH_UPSTREAM_FLOWIPC_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the library was built against a Flow-IPC source, else 0. */
int shmb_upstream_flowipc_available(void) SHMB_NOEXCEPT;

/* The commits compiled ("flow <hex>, ipc_core <hex>, ipc_shm <hex>,
 * ipc_shm_arena_lend <hex>"); "" without. */
const char *shmb_upstream_flowipc_commits(void) SHMB_NOEXCEPT;

/* SHM-classic: upstream's ipc::shm::classic::Pool_arena, the pool it
 * creates itself. */
typedef struct shmb_upstream_classic shmb_upstream_classic_t;

/* Pool_arena(CREATE_ONLY) of `bytes` named `name` ("/..."). -EINVAL: NULL,
 * bytes 0; -EEXIST: the name is taken; -errno: upstream's error. */
int shmb_upstream_classic_create(const char *name, size_t bytes, shmb_upstream_classic_t **out) SHMB_NOEXCEPT;

/* Closes the arena, then removes its pool (Pool_arena::remove_persistent),
 * even if a block is live. NULL: 0. -errno: the removal failed. */
int shmb_upstream_classic_destroy(shmb_upstream_classic_t *c) SHMB_NOEXCEPT;

/* Where the pool is mapped here, and its bytes. */
void *shmb_upstream_classic_base(const shmb_upstream_classic_t *c) SHMB_NOEXCEPT;
size_t shmb_upstream_classic_size(const shmb_upstream_classic_t *c) SHMB_NOEXCEPT;

/* Pool_arena::allocate; -ENOMEM: no room. */
int shmb_upstream_classic_alloc(shmb_upstream_classic_t *c, size_t bytes, void **addr) SHMB_NOEXCEPT;

/* Pool_arena::deallocate; -EINVAL: NULL, or upstream refused it. */
int shmb_upstream_classic_free(shmb_upstream_classic_t *c, void *addr) SHMB_NOEXCEPT;

/* Checks before timing: every addr[i] in the pool by upstream's own test
 * (is_handle_in_arena), else -EFAULT; n 0: every block freed (the pool's
 * free bytes as at creation), else -EBUSY. */
int shmb_upstream_classic_check(const shmb_upstream_classic_t *c, void *const *addr, uint32_t n) SHMB_NOEXCEPT;

/* SHM-jemalloc: upstream's Borrower_shm_pool_repository (ipc_shm_arena_lend
 * borrower_shm_pool_repository.hpp over shm_pool_repository.hpp): the pools
 * a borrower was lent, by id, for to_address. */
typedef struct shmb_upstream_jemalloc_repo shmb_upstream_jemalloc_repo_t;

/* An empty repository. -ENOMEM. */
int shmb_upstream_jemalloc_repo_create(shmb_upstream_jemalloc_repo_t **out) SHMB_NOEXCEPT;

/* The repository and its Shm_pool records (the memory is the caller's). NULL: a no-op. */
void shmb_upstream_jemalloc_repo_destroy(shmb_upstream_jemalloc_repo_t *r) SHMB_NOEXCEPT;

/* insert(Shm_pool(id, name, base, bytes, fd)): the record only, nothing
 * mapped or read. -EEXIST: upstream refused it (the id or base is taken);
 * -EINVAL: bytes 0 or above upstream's 32-bit offsets. */
int shmb_upstream_jemalloc_repo_insert(shmb_upstream_jemalloc_repo_t *r, uint32_t id, const char *name, void *base,
                                       size_t bytes, int fd) SHMB_NOEXCEPT;

/* Shm_pool_repository::to_address(id, offset): base + offset (upstream
 * checks no bound), NULL when no pool has the id. */
void *shmb_upstream_jemalloc_to_address(const shmb_upstream_jemalloc_repo_t *r, uint32_t id,
                                        uint32_t offset) SHMB_NOEXCEPT;

/* from_address: the pool and offset upstream finds for addr (the check of a
 * to_address); -ENOENT: in no pool. */
int shmb_upstream_jemalloc_from_address(const shmb_upstream_jemalloc_repo_t *r, const void *addr, uint32_t *id,
                                        uint32_t *offset) SHMB_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
