// fipc_jemalloc: Flow-IPC's SHM-jemalloc allocator (docs/models.md): the
// arena and mallocx/dallocx (jemalloc/memory_manager.cpp; the thread caches
// and the pool list are in fipc_jemalloc_cache.cc), and its extent hooks,
// every extent a new SHM pool entered in the repository
// (jemalloc/shm_pool_collection.cpp, fipc_repo.cc).
#include "cxx_guard.hpp"
#include "fipc_internal.h"
#include "fipc_jemalloc_internal.hpp"

#include "shmbench/error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

using shmb_fipc::Hooks_wrapper;
using shmb_fipc::Pool;

namespace {

// A created segment that is destroyed (munmap, close, shm_unlink) unless
// handed over.
struct Segment_guard {
    shmb_segment_t seg;
    bool armed = false;
    ~Segment_guard()
    {
        if (armed)
            shmb_segment_destroy(&seg, nullptr);
    }
};

shmb_fipc_jemalloc *owner_of(extent_hooks_t *hooks)
{
    return reinterpret_cast<Hooks_wrapper *>(hooks)->owner;
}

// Jemalloc_pages::map (jemalloc/jemalloc_pages.cpp, after jemalloc's
// pages_map): map the object anywhere; if that is not aligned (jemalloc asks
// 2 MiB alignment for its metadata blocks), reserve size + alignment - page
// of anonymous memory, map the object over its aligned part and trim the
// rest.
int map_aligned(shmb_segment_t *seg, size_t alignment)
{
    int ret = shmb_segment_map(seg, nullptr);
    if (ret < 0 || reinterpret_cast<uintptr_t>(seg->addr) % alignment == 0)
        return ret;
    ret = shmb_segment_unmap(seg, nullptr);
    if (ret < 0)
        return ret;
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t span = seg->size + alignment - page;
    void *raw = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return shmb_error_record("mmap", errno, seg->name);
    uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (start + alignment - 1) & ~(uintptr_t)(alignment - 1);
    void *p = mmap(reinterpret_cast<void *>(aligned), seg->size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, seg->fd, 0);
    if (p == MAP_FAILED) {
        ret = shmb_error_record("mmap", errno, seg->name);
        munmap(raw, span);
        return ret;
    }
    if (aligned > start)
        munmap(raw, aligned - start);
    size_t tail = start + span - (aligned + seg->size);
    if (tail > 0)
        munmap(reinterpret_cast<void *>(aligned + seg->size), tail);
    seg->addr = p;
    return 0;
}

// The hooks, in Shm_pool_collection's order (jemalloc/
// shm_pool_collection.cpp). jemalloc's convention: false is success.

// create_shm_pool_handler: a new pool of exactly the extent's size. An
// address jemalloc names (new_addr) cannot be promised, so that request is
// refused (jemalloc with retain never makes it). The mapping is read-write
// from the start and tmpfs pages read as zero, so *commit and *zero are
// true.
void *extent_alloc(extent_hooks_t *hooks, void *new_addr, size_t size, size_t alignment,
                   bool *zero, bool *commit, unsigned)
{
    if (new_addr)
        return nullptr;
    void *p = owner_of(hooks)->create_pool(size, alignment);
    if (p) {
        *zero = true;
        *commit = true;
    }
    return p;
}

// optional_remove_shm_pool_handler: "always retain for now", so jemalloc
// keeps the extent (and purges it) instead of giving it back.
bool extent_dalloc(extent_hooks_t *, void *, size_t, bool, unsigned)
{
    return true;
}

// purge_forced_memory_pages_handler: Jemalloc_pages::purge_forced,
// fallocate(PUNCH_HOLE) of the range in the pool's object.
bool extent_purge_forced(extent_hooks_t *hooks, void *addr, size_t, size_t offset, size_t length,
                         unsigned)
{
    return !owner_of(hooks)->purge(addr, offset, length);
}

// split_memory_pages_handler: an extent never spans two pools, so any
// split is allowed.
bool extent_split(extent_hooks_t *, void *, size_t, size_t, size_t, bool, unsigned)
{
    return false;
}

// merge_memory_pages_handler: only two halves of one pool merge (pools may
// be adjacent in the address space, never one mapping).
bool extent_merge(extent_hooks_t *hooks, void *addr_a, size_t, void *addr_b, size_t, bool,
                  unsigned)
{
    return !owner_of(hooks)->same_pool(addr_a, addr_b);
}

// destroy: nullptr, the pools go as a whole in shmb_fipc_jemalloc_destroy
// right after arena.<i>.destroy (upstream's remove_shm_pool unmaps a pool
// once jemalloc destroyed all of it: the same end). commit, decommit:
// nullptr, the mappings stay read-write and purge_forced releases the pages
// (upstream's commit/decommit are no-ops where the OS overcommits, Linux's
// default). purge_lazy: nullptr, as upstream (no MADV_FREE on SHM).
const extent_hooks_t shm_pool_hooks = {
    extent_alloc,        // alloc
    extent_dalloc,       // dalloc
    nullptr,             // destroy
    nullptr,             // commit
    nullptr,             // decommit
    nullptr,             // purge_lazy
    extent_purge_forced, // purge_forced
    extent_split,        // split
    extent_merge,        // merge
};

} // namespace

// Owner_shm_pool_collection::create_shm_pool (owner_shm_pool_collection.cpp):
// shm_open O_EXCL + ftruncate, map, register. Pools above the offset
// range of upstream's handles (int32 pool_offset_t, asserted upstream) are
// refused.
//
// jemalloc writes its own metadata (base blocks: the arena, every extent's
// edata and slab bitmaps) into pools it asks for through this hook, and only
// those come with an alignment above a page (jemalloc 5.3 base_map asks
// HUGEPAGE, later releases BASE_BLOCK_MIN_ALIGN, 2 MiB either way; data
// extents are asked PAGE-aligned, and told zeroed so that jemalloc never
// writes them). Those pools are reserved (posix_fallocate) here, a deliberate
// difference from upstream: a /dev/shm that fills mid-run is then -ENOSPC
// from create or alloc, not a SIGBUS inside jemalloc. Data pools stay
// unreserved: their first write is the caller's (--touch times it, guarded).
void *shmb_fipc_jemalloc::create_pool(size_t size, size_t alignment)
{
    void *addr = nullptr;
    const int rc = shmb::guard([&] {
        if (size > SHMB_FIPC_JEMALLOC_MAX_POOL) {
            pool_error = shmb_error_record("extent_alloc", EFBIG, prefix.c_str());
            return 0;
        }
        std::lock_guard<std::mutex> lock(pools_mutex);
        Segment_guard guard;
        int ret = shmb_segment_create(&guard.seg, prefix.c_str(), size, nullptr, nullptr);
        guard.armed = ret == 0;
        const bool metadata = alignment > static_cast<size_t>(sysconf(_SC_PAGESIZE));
        if (ret == 0 && metadata)
            ret = shmb_segment_reserve(&guard.seg);
        if (ret == 0)
            ret = map_aligned(&guard.seg, alignment);
        if (ret < 0) {
            pool_error = ret;
            return 0;
        }
        uint32_t id = next_id;
        if (repo.insert(id, static_cast<unsigned char *>(guard.seg.addr), size) < 0)
            return 0;
        shmb::undo_on_throw([&] { pools.emplace(id, guard.seg); }, [&] { repo.erase(id); });
        guard.armed = false;
        next_id++;
        pool_bytes += size;
        addr = guard.seg.addr;
        return 0;
    });
    if (rc < 0)
        pool_error = shmb_error_record("extent_alloc", ENOMEM, prefix.c_str());
    return addr;
}

bool shmb_fipc_jemalloc::purge(const void *addr, size_t offset, size_t length)
{
    return shmb::guard_or(false, [&] {
        std::lock_guard<std::mutex> lock(pools_mutex);
        const Pool *pool = repo.from_address(addr);
        if (!pool)
            return false;
        off_t at = static_cast<off_t>(static_cast<const unsigned char *>(addr) - pool->base + offset);
        return fallocate(pools.at(pool->id).fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at,
                         static_cast<off_t>(length)) == 0;
    });
}

bool shmb_fipc_jemalloc::same_pool(const void *a, const void *b) const
{
    return shmb::guard_or(false, [&] {
        const Pool *pa = repo.from_address(a);
        return pa && pa == repo.from_address(b);
    });
}

namespace {

std::atomic<uint64_t> next_serial{1};

} // namespace

// Memory_manager::destroy_thread_cache, then destroy_arena. Returns 0 or
// -EIO (jemalloc refused: it may still use the pools).
int shmb_fipc_jemalloc::close_arena()
{
    std::lock_guard<std::mutex> lock(tcaches_mutex);
    for (auto it = tcaches.begin(); it != tcaches.end(); it = tcaches.erase(it)) {
        int err = mallctl("tcache.destroy", nullptr, nullptr, &it->second, sizeof(it->second));
        if (err != 0) {
            shmb_error_record("mallctl", err, "tcache.destroy");
            return -EIO;
        }
    }
    if (has_arena) {
        char name[64];
        snprintf(name, sizeof(name), "arena.%u.destroy", arena);
        int err = mallctl(name, nullptr, nullptr, nullptr, 0);
        if (err != 0) {
            shmb_error_record("mallctl", err, name);
            return -EIO;
        }
        has_arena = false;
    }
    return 0;
}

// Unmaps every pool and unlinks it, or leaves it in /dev/shm counting it in
// *kept. Returns 0 or the first error.
int shmb_fipc_jemalloc::drop_pools(int unlink_pools, uint64_t *kept)
{
    int ret = 0;
    uint64_t n_kept = 0;
    for (auto &entry : pools) {
        int rc = unlink_pools ? shmb_segment_destroy(&entry.second, nullptr)
                              : shmb_segment_release(&entry.second);
        n_kept += !unlink_pools;
        if (rc < 0 && ret == 0)
            ret = rc;
    }
    pools.clear();
    pool_bytes = 0;
    if (kept)
        *kept += n_kept;
    return ret;
}

int shmb_fipc_jemalloc_destroy(shmb_fipc_jemalloc_t *j, int unlink_pools, uint64_t *kept) noexcept
{
    if (!j)
        return 0;
    // jemalloc's metadata for the arena lives in the pools and it keeps a
    // pointer to the hooks: if it refuses to let go, neither may go.
    int ret = shmb::guard([j] { return j->close_arena(); });
    if (ret < 0)
        return ret;
    ret = j->drop_pools(unlink_pools, kept);
    delete j;
    return ret;
}

namespace {

// Memory_manager::create_arena: mallctl("arenas.create") with the hooks;
// then the retain_grow_limit this model adds (upstream leaves jemalloc's
// default, no limit, and asserts pools fit its int32 offsets); then, when
// asked, the creating thread's cache (Thread_cache::id, see thread_flags).
int open_arena(shmb_fipc_jemalloc *j, int tcache)
{
    extent_hooks_t *hooks = &j->wrapper.hooks;
    size_t len = sizeof(j->arena);
    int err = mallctl("arenas.create", &j->arena, &len, &hooks, sizeof(hooks));
    if (err != 0) {
        const int pool = j->pool_error.exchange(0);
        if (pool < 0) // its first pool (its metadata) failed: that error, as recorded
            return pool;
        shmb_error_record("mallctl", err, "arenas.create");
        return -EIO;
    }
    j->has_arena = true;
    char name[64];
    snprintf(name, sizeof(name), "arena.%u.retain_grow_limit", j->arena);
    size_t limit = SHMB_FIPC_JEMALLOC_MAX_POOL;
    err = mallctl(name, nullptr, nullptr, &limit, sizeof(limit));
    if (err != 0) {
        shmb_error_record("mallctl", err, name);
        return -EIO;
    }
    j->flags = MALLOCX_ARENA(j->arena) | MALLOCX_TCACHE_NONE;
    j->use_tcache = tcache != 0;
    int flags;
    if (j->use_tcache && !j->thread_flags(&flags))
        return -EIO;
    return 0;
}

} // namespace

int shmb_fipc_jemalloc_create(const char *prefix, int tcache, shmb_fipc_jemalloc_t **out) noexcept
{
    int ret = shmb_segment_check_prefix(prefix);
    if (ret < 0)
        return ret;
    return shmb::guard([&] {
        std::unique_ptr<shmb_fipc_jemalloc> j(new shmb_fipc_jemalloc);
        j->wrapper = Hooks_wrapper{shm_pool_hooks, j.get()};
        j->prefix = prefix;
        j->serial = next_serial.fetch_add(1);
        ret = open_arena(j.get(), tcache);
        if (ret < 0) {
            // Frees j, unless jemalloc still holds the arena (then leaked).
            shmb_fipc_jemalloc_destroy(j.release(), 1, nullptr);
            return ret;
        }
        *out = j.release();
        return 0;
    });
}

int shmb_fipc_jemalloc_alloc(shmb_fipc_jemalloc_t *j, size_t bytes, void **out) noexcept
{
    return shmb_fipc::jemalloc_alloc(j, bytes, out);
}

int shmb_fipc_jemalloc_free(shmb_fipc_jemalloc_t *j, void *ptr) noexcept
{
    shmb_fipc::jemalloc_free(j, ptr);
    return 0;
}

int shmb_fipc_jemalloc_create_filled(const char *prefix, uint64_t n, size_t bytes, shmb_fipc_jemalloc_t **out) noexcept
{
    if (!out)
        return -EINVAL;
    *out = nullptr;
    shmb_fipc_jemalloc_t *j = nullptr;
    int ret = shmb_fipc_jemalloc_create(prefix, 0, &j);
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        void *block;
        ret = shmb_fipc_jemalloc_alloc(j, bytes, &block);
    }
    if (ret < 0) {
        shmb_fipc_jemalloc_destroy(j, 1, nullptr);
        return ret;
    }
    *out = j;
    return 0;
}

int shmb_fipc_jemalloc_setting(const char *name, int64_t *out)
{
    if (!name || !out)
        return -EINVAL;
    // jemalloc answers EINVAL (and copies part of the value) when the length
    // is not the setting's own: try the widths its settings have.
    for (size_t width : {sizeof(uint64_t), sizeof(uint32_t), sizeof(bool)}) {
        unsigned char v[sizeof(uint64_t)] = {};
        size_t len = width;
        int err = mallctl(name, v, &len, nullptr, 0);
        if (err == EINVAL)
            continue;
        if (err != 0)
            return -err;
        int64_t value = 0;
        if (width == sizeof(uint64_t)) {
            std::memcpy(&value, v, sizeof(value));
        } else if (width == sizeof(uint32_t)) {
            uint32_t u;
            std::memcpy(&u, v, sizeof(u));
            value = u;
        } else {
            value = v[0] != 0;
        }
        *out = value;
        return 0;
    }
    return -EINVAL;
}
