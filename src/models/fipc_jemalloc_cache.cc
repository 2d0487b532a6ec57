// fipc_jemalloc_cache: what SHM-jemalloc's users read of an arena without
// making pools: the calling thread's cache (Thread_cache), the repository
// and the list of its pools.
#include "cxx_guard.hpp"
#include "fipc_internal.h"
#include "fipc_jemalloc_internal.hpp"

#include "shmbench/error.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

// The serial of the allocator whose tcache this thread used last, and the
// flags naming it: Thread_cache::this_thread_cache() + id(arena)'s fast path,
// one thread-local compare (upstream's is a thread-local registry and an
// unordered_map find: this model's is cheaper, a bound).
struct Thread_tcache {
    uint64_t serial;
    int flags;
};
thread_local Thread_tcache this_thread_tcache;

} // namespace

// Thread_cache::id(arena): the calling thread's explicit tcache for this
// arena, created with tcache.create the first time the thread allocates or
// frees (a jemalloc tcache may serve one thread only). Returns false when
// jemalloc refuses (recorded).
bool shmb_fipc_jemalloc::thread_flags(int *out)
{
    if (this_thread_tcache.serial == serial) {
        *out = this_thread_tcache.flags;
        return true;
    }
    const int rc = shmb::guard([&] {
        std::lock_guard<std::mutex> lock(tcaches_mutex);
        auto it = tcaches.find(std::this_thread::get_id());
        if (it == tcaches.end()) {
            unsigned id;
            size_t len = sizeof(id);
            int err = mallctl("tcache.create", &id, &len, nullptr, 0);
            if (err != 0) {
                shmb_error_record("mallctl", err, "tcache.create");
                return 0;
            }
            it = tcaches.emplace(std::this_thread::get_id(), id).first;
        }
        this_thread_tcache = Thread_tcache{serial, MALLOCX_ARENA(arena) | MALLOCX_TCACHE(it->second)};
        *out = this_thread_tcache.flags;
        return 1;
    });
    if (rc < 0)
        shmb_error_record("mallctl", ENOMEM, "tcache.create");
    return rc > 0;
}

shmb_fipc_repo_t *shmb_fipc_jemalloc_repo(const shmb_fipc_jemalloc_t *j) noexcept
{
    return const_cast<shmb_fipc_repo_t *>(&j->repo);
}

size_t shmb_fipc_jemalloc_pools(const shmb_fipc_jemalloc_t *j, uint64_t *bytes) noexcept
{
    return shmb::guard_or<size_t>(0, [&] {
        std::lock_guard<std::mutex> lock(j->pools_mutex);
        if (bytes)
            *bytes = j->pool_bytes;
        return j->pools.size();
    });
}

size_t shmb_fipc_jemalloc_pool_list(const shmb_fipc_jemalloc_t *j, shmb_fipc_pool_t *out, size_t cap) noexcept
{
    return shmb::guard_or<size_t>(0, [&] {
        std::lock_guard<std::mutex> lock(j->pools_mutex);
        std::vector<uint32_t> ids;
        ids.reserve(j->pools.size());
        for (const auto &entry : j->pools)
            ids.push_back(entry.first);
        std::sort(ids.begin(), ids.end());
        for (size_t i = 0; i < ids.size() && i < cap; i++) {
            const shmb_segment_t &seg = j->pools.at(ids[i]);
            out[i].id = ids[i];
            out[i].bytes = seg.size;
            snprintf(out[i].name, sizeof(out[i].name), "%s", seg.name);
        }
        return ids.size();
    });
}
