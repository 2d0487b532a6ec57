// fipc_jemalloc_internal: SHM-jemalloc's classes shared by its translation
// units (repository, arena and pools, lender), and the inline alloc and free
// they all use. C++ only, not installed.
#ifndef SHMBENCH_FIPC_JEMALLOC_INTERNAL_HPP
#define SHMBENCH_FIPC_JEMALLOC_INTERNAL_HPP

#include "shmbench/fipc_jemalloc.h"
#include "shmbench/segment.h"

#include <jemalloc/jemalloc.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace shmb_fipc {

// ipc::shm::arena_lend::Shm_pool (shm_pool.hpp): what the repository knows
// of a pool.
struct Pool {
    uint32_t id;
    unsigned char *base;
    size_t size; // bytes
};

// Shm_pool_holder (shm_pool_holder.hpp): the id map's value, a shared_ptr
// to the pool, so to_address chases one more pointer, as upstream's does.
struct Pool_holder {
    std::shared_ptr<const Pool> pool;
};

// Memory_manager::Extent_hooks_wrapper (jemalloc/memory_manager.hpp): the
// hooks jemalloc hands back to every hook, with their owner beside them.
struct Hooks_wrapper {
    extent_hooks_t hooks; // first: a hook casts its extent_hooks_t * back
    shmb_fipc_jemalloc *owner;
};

} // namespace shmb_fipc

// Shm_pool_repository (shm_pool_repository.hpp).
struct shmb_fipc_repo {
    mutable std::mutex mutex; // guards both maps
    std::unordered_map<uint32_t, shmb_fipc::Pool_holder> by_id;
    std::map<const unsigned char *, std::shared_ptr<const shmb_fipc::Pool>> by_base;

    int insert(uint32_t id, unsigned char *base, size_t size);
    int erase(uint32_t id);
    void *to_address(uint32_t id, uint64_t offset, uint64_t len) const;
    const shmb_fipc::Pool *from_address(const void *ptr) const;
};

struct shmb_fipc_jemalloc {
    shmb_fipc::Hooks_wrapper wrapper;
    std::string prefix;
    int flags = 0;          // mallocx/dallocx flags without a thread cache
    bool has_arena = false;
    unsigned arena = 0;
    bool use_tcache = false;
    uint64_t serial = 0;    // this allocator's number, never reused: keys this_thread_tcache
    std::mutex tcaches_mutex; // guards tcaches
    std::unordered_map<std::thread::id, unsigned> tcaches; // Thread_cache: each thread's tcache
    shmb_fipc_repo repo;
    mutable std::mutex pools_mutex; // guards the three below; taken before repo.mutex
    std::unordered_map<uint32_t, shmb_segment_t> pools;
    uint32_t next_id = 1;   // 0 names no pool, as upstream's pool ids
    uint64_t pool_bytes = 0;
    std::atomic<int> pool_error{0}; // -errno of the last pool jemalloc asked for in vain, 0: none

    void *create_pool(size_t size, size_t alignment);
    bool purge(const void *addr, size_t offset, size_t length);
    bool same_pool(const void *a, const void *b) const;
    bool thread_flags(int *out);
    int close_arena();
    int drop_pools(int unlink_pools, uint64_t *kept);
};

namespace shmb_fipc {

// Memory_manager::allocate_helper: mallocx with the arena and cache flags
// (the calling thread's cache). Inline: shmb_fipc_jemalloc_alloc and the
// lender's construct compile the same code, as they did in one file.
inline int jemalloc_alloc(shmb_fipc_jemalloc *j, size_t bytes, void **out)
{
    if (bytes == 0)
        return -EINVAL;
    int flags = j->flags;
    if (j->use_tcache && !j->thread_flags(&flags))
        return -ENOMEM;
    void *p = mallocx(bytes, flags);
    if (!p) {
        // /dev/shm full for a metadata pool: said as such (it is recorded)
        return j->pool_error.exchange(0) == -ENOSPC ? -ENOSPC : -ENOMEM;
    }
    *out = p;
    return 0;
}

// Memory_manager::deallocate_helper: dallocx with the same flags (this
// thread's cache; without one yet, tcache.create failed: no cache, as
// upstream's id_or_none fallback). Inline for the lender's deleter.
inline void jemalloc_free(shmb_fipc_jemalloc *j, void *ptr)
{
    if (!ptr)
        return;
    int flags = j->flags;
    if (j->use_tcache && !j->thread_flags(&flags))
        flags = j->flags;
    dallocx(ptr, flags);
}

} // namespace shmb_fipc

#endif
