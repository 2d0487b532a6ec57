// fipc_repo: SHM-jemalloc's Shm_pool_repository: pools by id for
// to_address, by base for from_address, and the timed loops over it.
#include "cxx_guard.hpp"
#include "fipc_internal.h"
#include "fipc_jemalloc_internal.hpp"

#include <cerrno>
#include <iterator>
#include <new>

// The fault the next hand-offs carry (fipc_internal.h), both flavours':
// here, in the file every hand-off file sits above.
int shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;

using shmb_fipc::Pool;
using shmb_fipc::Pool_holder;

namespace {

bool overlaps(const Pool &a, uintptr_t base, size_t size)
{
    uintptr_t a_base = reinterpret_cast<uintptr_t>(a.base);
    return a_base < base + size && base < a_base + a.size;
}

} // namespace

int shmb_fipc_repo::insert(uint32_t id, unsigned char *base, size_t size)
{
    uintptr_t start = reinterpret_cast<uintptr_t>(base);
    if (size == 0 || start + size < start)
        return -EINVAL;
    auto pool = std::make_shared<const Pool>(Pool{id, base, size});
    std::lock_guard<std::mutex> lock(mutex);
    if (by_id.count(id) != 0)
        return -EEXIST;
    auto next = by_base.lower_bound(base);
    if (next != by_base.end() && overlaps(*next->second, start, size))
        return -EINVAL;
    if (next != by_base.begin() && overlaps(*std::prev(next)->second, start, size))
        return -EINVAL;
    auto at = by_base.emplace_hint(next, base, pool);
    shmb::undo_on_throw([&] { by_id.emplace(id, Pool_holder{pool}); }, [&] { by_base.erase(at); });
    return 0;
}

int shmb_fipc_repo::erase(uint32_t id)
{
    std::lock_guard<std::mutex> lock(mutex);
    auto it = by_id.find(id);
    if (it == by_id.end())
        return -ENOENT;
    by_base.erase(it->second.pool->base);
    by_id.erase(it);
    return 0;
}

// Shm_pool_repository::to_address: the lock, unordered_map::find, base +
// offset. Upstream's Shm_pool::to_address checks no bound on purpose (an
// offset pointer may point past its pool); this model checks
// [offset, offset + len) against the pool, as every lookup row does, at the
// cost of two compares.
namespace {

inline void *address_of(const shmb_fipc_repo &repo, uint32_t id, uint64_t offset, uint64_t len)
{
    std::lock_guard<std::mutex> lock(repo.mutex);
    auto it = repo.by_id.find(id);
    if (it == repo.by_id.end())
        return nullptr;
    const Pool &pool = *it->second.pool;
    if (len == 0 || offset >= pool.size || len > pool.size - offset)
        return nullptr;
    return pool.base + offset;
}

} // namespace

// Out of line, as gcc compiled it when this file was one with the
// allocator's: the timed loops below call it once per translation (and
// shmb_fipc_repo_to_address, called alone, has it inline), so that the
// lookup rows measure the code the figures recorded before did.
[[gnu::noinline]] void *shmb_fipc_repo::to_address(uint32_t id, uint64_t offset, uint64_t len) const
{
    return address_of(*this, id, offset, len);
}

// Shm_pool_repository::from_address: the lock, map::lower_bound over the
// bases, the entry before it when the bound is above ptr, then
// Shm_pool::determine_offset's range check.
const Pool *shmb_fipc_repo::from_address(const void *ptr) const
{
    const unsigned char *p = static_cast<const unsigned char *>(ptr);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = by_base.lower_bound(p);
    if (it == by_base.end() || it->first != p) {
        if (it == by_base.begin())
            return nullptr;
        --it;
    }
    const Pool &pool = *it->second;
    uintptr_t at = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(pool.base);
    if (at < base || at - base >= pool.size)
        return nullptr;
    return &pool;
}

int shmb_fipc_repo_create(shmb_fipc_repo_t **out) noexcept
{
    shmb_fipc_repo_t *repo = new (std::nothrow) shmb_fipc_repo_t;
    if (!repo)
        return -ENOMEM;
    *out = repo;
    return 0;
}

int shmb_fipc_repo_destroy(shmb_fipc_repo_t *repo) noexcept
{
    delete repo;
    return 0;
}

int shmb_fipc_repo_insert(shmb_fipc_repo_t *repo, uint32_t id, void *base, size_t size) noexcept
{
    return shmb::guard([&] {
        return repo->insert(id, static_cast<unsigned char *>(base), size);
    });
}

int shmb_fipc_repo_erase(shmb_fipc_repo_t *repo, uint32_t id) noexcept
{
    return shmb::guard([&] {
        return repo->erase(id);
    });
}

void *shmb_fipc_repo_to_address(shmb_fipc_repo_t *repo, uint32_t id, uint64_t offset,
                                uint64_t len) noexcept
{
    return shmb::guard_or<void *>(nullptr, [&] {
        return address_of(*repo, id, offset, len);
    });
}

namespace {

// shmb_fipc_repo_to_address as the loops inline it.
inline void *loop_to_address(shmb_fipc_repo_t *repo, uint32_t id, uint64_t offset, uint64_t len)
{
    return shmb::guard_or<void *>(nullptr, [&] {
        return repo->to_address(id, offset, len);
    });
}

} // namespace

int shmb_fipc_repo_from_address(shmb_fipc_repo_t *repo, const void *ptr, uint32_t *id,
                                uint64_t *offset) noexcept
{
    return shmb::guard([&] {
        const Pool *pool = repo->from_address(ptr);
        if (!pool)
            return -ENOENT;
        *id = pool->id;
        *offset = reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(pool->base);
        return 0;
    });
}

uint64_t shmb_fipc_repo_translate_batch(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests, size_t n) noexcept
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += reinterpret_cast<uintptr_t>(
            loop_to_address(repo, requests[i].id, requests[i].offset, requests[i].len));
    return sum;
}

uint64_t shmb_fipc_repo_translate_chain(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests,
                                        const uint64_t *expected, size_t n) noexcept
{
    uint64_t sum = 0, delta = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t got = reinterpret_cast<uintptr_t>(loop_to_address(
            repo, requests[i].id + static_cast<uint32_t>(delta), requests[i].offset + delta, requests[i].len));
        delta = got - expected[i];
        sum += got;
    }
    return sum;
}
