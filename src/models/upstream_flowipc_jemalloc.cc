// upstream_flowipc_jemalloc: Flow-IPC SHM-jemalloc's own borrower pool
// repository (ipc_shm_arena_lend src/ipc/shm/arena_lend/
// borrower_shm_pool_repository.{hpp,cpp}, shm_pool_repository.hpp, shm_pool.cpp)
// behind shmbench/upstream_flowipc.h, in libshmb_flowipc_upstream.so.
#include "shmbench/upstream_flowipc.h"

#include "ipc/shm/arena_lend/borrower_shm_pool_repository.hpp"

#include "cxx_guard.hpp"

#include <cerrno>
#include <cstdint>
#include <memory>

#define SHMB_API extern "C" __attribute__((visibility("default")))

namespace arena_lend = ipc::shm::arena_lend;

struct shmb_upstream_jemalloc_repo {
    arena_lend::Borrower_shm_pool_repository repo;
};

SHMB_API int shmb_upstream_jemalloc_repo_create(shmb_upstream_jemalloc_repo_t **out) noexcept
{
    if (!out)
        return -EINVAL;
    return shmb::guard([&] {
        *out = new shmb_upstream_jemalloc_repo;
        return 0;
    });
}

SHMB_API void shmb_upstream_jemalloc_repo_destroy(shmb_upstream_jemalloc_repo_t *r) noexcept { delete r; }

SHMB_API int shmb_upstream_jemalloc_repo_insert(shmb_upstream_jemalloc_repo_t *r, uint32_t id, const char *name,
                                                void *base, size_t bytes, int fd) noexcept
{
    if (!r || !name || !base || bytes == 0 || bytes > (size_t)INT32_MAX)
        return -EINVAL;
    return shmb::guard([&] {
        auto pool = std::make_shared<arena_lend::Shm_pool>(id, name, base, (arena_lend::Shm_pool::size_t)bytes, fd);
        return r->repo.insert(pool) ? 0 : -EEXIST;
    });
}

// The timed call: upstream's lock, unordered_map::find, Shm_pool::to_address.
SHMB_API void *shmb_upstream_jemalloc_to_address(const shmb_upstream_jemalloc_repo_t *r, uint32_t id,
                                                 uint32_t offset) noexcept
{
    return shmb::guard_or<void *>(nullptr, [&] {
        return r->repo.to_address(id, (arena_lend::Shm_pool::size_t)offset);
    });
}

SHMB_API int shmb_upstream_jemalloc_from_address(const shmb_upstream_jemalloc_repo_t *r, const void *addr,
                                                 uint32_t *id, uint32_t *offset) noexcept
{
    if (!r || !id || !offset)
        return -EINVAL;
    return shmb::guard([&] {
        std::shared_ptr<arena_lend::Shm_pool> pool;
        arena_lend::Shm_pool::size_t off = 0;
        r->repo.from_address(addr, pool, off);
        if (!pool)
            return -ENOENT;
        *id = pool->get_id();
        *offset = (uint32_t)off;
        return 0;
    });
}
