/*
 * fipc_jemalloc: the model of Flow-IPC's SHM-jemalloc (repo
 * Flow-IPC/ipc_shm_arena_lend). The pool repository follows
 * ipc/shm/arena_lend/shm_pool_repository.hpp; the allocator follows
 * ipc/shm/arena_lend/jemalloc/memory_manager.cpp (arena, thread cache,
 * mallocx/dallocx) and jemalloc/shm_pool_collection.cpp (extent hooks: every
 * extent a new SHM pool). Deliberate differences from upstream are said where
 * they are made.
 */
#include "shmbench/fipc_jemalloc.h"

#include "shmbench/error.h"
#include "shmbench/segment.h"

#include <jemalloc/jemalloc.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

/* ipc::shm::arena_lend::Shm_pool (shm_pool.hpp): what the repository knows
 * of a pool. */
struct Pool {
    uint32_t id;
    unsigned char *base;
    size_t size; /* bytes */
};

/* Shm_pool_holder (shm_pool_holder.hpp): the id map's value, a shared_ptr
 * to the pool, so to_address chases one more pointer, as upstream's does. */
struct Pool_holder {
    std::shared_ptr<const Pool> pool;
};

bool overlaps(const Pool &a, uintptr_t base, size_t size)
{
    uintptr_t a_base = reinterpret_cast<uintptr_t>(a.base);
    return a_base < base + size && base < a_base + a.size;
}

} // namespace

/* Shm_pool_repository (shm_pool_repository.hpp). */
struct shmb_fipc_repo {
    mutable std::mutex mutex; /* guards both maps */
    std::unordered_map<uint32_t, Pool_holder> by_id;
    std::map<const unsigned char *, std::shared_ptr<const Pool>> by_base;

    int insert(uint32_t id, unsigned char *base, size_t size);
    int erase(uint32_t id);
    void *to_address(uint32_t id, uint64_t offset, uint64_t len) const;
    const Pool *from_address(const void *ptr) const;
};

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
    try {
        by_id.emplace(id, Pool_holder{pool});
    } catch (...) {
        by_base.erase(at);
        throw;
    }
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

/* Shm_pool_repository::to_address: the lock, unordered_map::find, base +
 * offset. Upstream's Shm_pool::to_address checks no bound on purpose (an
 * offset pointer may point past its pool); this model checks
 * [offset, offset + len) against the pool, as every lookup row does, at the
 * cost of two compares. */
void *shmb_fipc_repo::to_address(uint32_t id, uint64_t offset, uint64_t len) const
{
    std::lock_guard<std::mutex> lock(mutex);
    auto it = by_id.find(id);
    if (it == by_id.end())
        return nullptr;
    const Pool &pool = *it->second.pool;
    if (len == 0 || offset >= pool.size || len > pool.size - offset)
        return nullptr;
    return pool.base + offset;
}

/* Shm_pool_repository::from_address: the lock, map::lower_bound over the
 * bases, the entry before it when the bound is above ptr, then
 * Shm_pool::determine_offset's range check. */
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

int shmb_fipc_repo_create(shmb_fipc_repo_t **out)
{
    shmb_fipc_repo_t *repo = new (std::nothrow) shmb_fipc_repo_t;
    if (!repo)
        return -ENOMEM;
    *out = repo;
    return 0;
}

void shmb_fipc_repo_destroy(shmb_fipc_repo_t *repo)
{
    delete repo;
}

int shmb_fipc_repo_insert(shmb_fipc_repo_t *repo, uint32_t id, void *base, size_t size)
{
    try {
        return repo->insert(id, static_cast<unsigned char *>(base), size);
    } catch (...) {
        return -ENOMEM;
    }
}

int shmb_fipc_repo_erase(shmb_fipc_repo_t *repo, uint32_t id)
{
    try {
        return repo->erase(id);
    } catch (...) {
        return -ENOENT;
    }
}

void *shmb_fipc_repo_to_address(shmb_fipc_repo_t *repo, uint32_t id, uint64_t offset,
                                uint64_t len)
{
    try {
        return repo->to_address(id, offset, len);
    } catch (...) {
        return nullptr;
    }
}

int shmb_fipc_repo_from_address(shmb_fipc_repo_t *repo, const void *ptr, uint32_t *id,
                                uint64_t *offset)
{
    try {
        const Pool *pool = repo->from_address(ptr);
        if (!pool)
            return -ENOENT;
        *id = pool->id;
        *offset = reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(pool->base);
        return 0;
    } catch (...) {
        return -ENOENT;
    }
}

uint64_t shmb_fipc_repo_translate_batch(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += reinterpret_cast<uintptr_t>(
            shmb_fipc_repo_to_address(repo, requests[i].id, requests[i].offset, requests[i].len));
    return sum;
}

uint64_t shmb_fipc_repo_translate_chain(shmb_fipc_repo_t *repo,
                                        const shmb_lookup_request_t *requests,
                                        const uint64_t *expected, size_t n)
{
    uint64_t sum = 0, delta = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t got = reinterpret_cast<uintptr_t>(shmb_fipc_repo_to_address(
            repo, requests[i].id + static_cast<uint32_t>(delta), requests[i].offset + delta, requests[i].len));
        delta = got - expected[i];
        sum += got;
    }
    return sum;
}

/* ---- allocator ---- */

namespace {

/* Memory_manager::Extent_hooks_wrapper (jemalloc/memory_manager.hpp): the
 * hooks jemalloc hands back to every hook, with their owner beside them. */
struct Hooks_wrapper {
    extent_hooks_t hooks; /* first: a hook casts its extent_hooks_t * back */
    shmb_fipc_jemalloc *owner;
};

/* A created segment that is destroyed (munmap, close, shm_unlink) unless
 * handed over. */
struct Segment_guard {
    shmb_segment_t seg;
    bool armed = false;
    ~Segment_guard()
    {
        if (armed)
            shmb_segment_destroy(&seg, nullptr);
    }
};

} // namespace

struct shmb_fipc_jemalloc {
    Hooks_wrapper wrapper;
    std::string prefix;
    int flags = 0;          /* mallocx/dallocx flags without a thread cache */
    bool has_arena = false;
    unsigned arena = 0;
    bool use_tcache = false;
    uint64_t serial = 0;    /* this allocator's number, never reused: keys this_thread_tcache */
    std::mutex tcaches_mutex; /* guards tcaches */
    std::unordered_map<std::thread::id, unsigned> tcaches; /* Thread_cache: each thread's tcache */
    shmb_fipc_repo repo;
    mutable std::mutex pools_mutex; /* guards the three below; taken before repo.mutex */
    std::unordered_map<uint32_t, shmb_segment_t> pools;
    uint32_t next_id = 1;   /* 0 names no pool, as upstream's pool ids */
    uint64_t pool_bytes = 0;

    void *create_pool(size_t size, size_t alignment);
    bool purge(const void *addr, size_t offset, size_t length);
    bool same_pool(const void *a, const void *b) const;
    bool thread_flags(int *out);
    int close_arena();
    int drop_pools(int unlink_pools, uint64_t *kept);
};

namespace {

shmb_fipc_jemalloc *owner_of(extent_hooks_t *hooks)
{
    return reinterpret_cast<Hooks_wrapper *>(hooks)->owner;
}

/* Jemalloc_pages::map (jemalloc/jemalloc_pages.cpp, after jemalloc's
 * pages_map): map the object anywhere; if that is not aligned (jemalloc asks
 * 2 MiB alignment for its metadata blocks), reserve size + alignment - page
 * of anonymous memory, map the object over its aligned part and trim the
 * rest. */
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

/* The hooks, in Shm_pool_collection's order (jemalloc/
 * shm_pool_collection.cpp). jemalloc's convention: false is success. */

/* create_shm_pool_handler: a new pool of exactly the extent's size. An
 * address jemalloc names (new_addr) cannot be promised, so that request is
 * refused (jemalloc with retain never makes it). The mapping is read-write
 * from the start and tmpfs pages read as zero, so *commit and *zero are
 * true. */
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

/* optional_remove_shm_pool_handler: "always retain for now", so jemalloc
 * keeps the extent (and purges it) instead of giving it back. */
bool extent_dalloc(extent_hooks_t *, void *, size_t, bool, unsigned)
{
    return true;
}

/* purge_forced_memory_pages_handler: Jemalloc_pages::purge_forced,
 * fallocate(PUNCH_HOLE) of the range in the pool's object. */
bool extent_purge_forced(extent_hooks_t *hooks, void *addr, size_t, size_t offset, size_t length,
                         unsigned)
{
    return !owner_of(hooks)->purge(addr, offset, length);
}

/* split_memory_pages_handler: an extent never spans two pools, so any
 * split is allowed. */
bool extent_split(extent_hooks_t *, void *, size_t, size_t, size_t, bool, unsigned)
{
    return false;
}

/* merge_memory_pages_handler: only two halves of one pool merge (pools may
 * be adjacent in the address space, never one mapping). */
bool extent_merge(extent_hooks_t *hooks, void *addr_a, size_t, void *addr_b, size_t, bool,
                  unsigned)
{
    return !owner_of(hooks)->same_pool(addr_a, addr_b);
}

/* destroy: nullptr, the pools go as a whole in shmb_fipc_jemalloc_destroy
 * right after arena.<i>.destroy (upstream's remove_shm_pool unmaps a pool
 * once jemalloc destroyed all of it: the same end). commit, decommit:
 * nullptr, the mappings stay read-write and purge_forced releases the pages
 * (upstream's commit/decommit are no-ops where the OS overcommits, Linux's
 * default). purge_lazy: nullptr, as upstream (no MADV_FREE on SHM). */
const extent_hooks_t shm_pool_hooks = {
    extent_alloc,        /* alloc */
    extent_dalloc,       /* dalloc */
    nullptr,             /* destroy */
    nullptr,             /* commit */
    nullptr,             /* decommit */
    nullptr,             /* purge_lazy */
    extent_purge_forced, /* purge_forced */
    extent_split,        /* split */
    extent_merge,        /* merge */
};

} // namespace

/* Owner_shm_pool_collection::create_shm_pool (owner_shm_pool_collection.cpp):
 * shm_open O_EXCL + ftruncate, map, register. Pools above the offset
 * range of upstream's handles (int32 pool_offset_t, asserted upstream) are
 * refused. */
void *shmb_fipc_jemalloc::create_pool(size_t size, size_t alignment)
{
    try {
        if (size > SHMB_FIPC_JEMALLOC_MAX_POOL) {
            shmb_error_record("extent_alloc", EFBIG, prefix.c_str());
            return nullptr;
        }
        std::lock_guard<std::mutex> lock(pools_mutex);
        Segment_guard guard;
        if (shmb_segment_create(&guard.seg, prefix.c_str(), size, nullptr, nullptr) < 0)
            return nullptr;
        guard.armed = true;
        if (map_aligned(&guard.seg, alignment) < 0)
            return nullptr;
        uint32_t id = next_id;
        if (repo.insert(id, static_cast<unsigned char *>(guard.seg.addr), size) < 0)
            return nullptr;
        try {
            pools.emplace(id, guard.seg);
        } catch (...) {
            repo.erase(id);
            throw;
        }
        guard.armed = false;
        next_id++;
        pool_bytes += size;
        return guard.seg.addr;
    } catch (...) {
        shmb_error_record("extent_alloc", ENOMEM, prefix.c_str());
        return nullptr;
    }
}

bool shmb_fipc_jemalloc::purge(const void *addr, size_t offset, size_t length)
{
    try {
        std::lock_guard<std::mutex> lock(pools_mutex);
        const Pool *pool = repo.from_address(addr);
        if (!pool)
            return false;
        off_t at = static_cast<off_t>(static_cast<const unsigned char *>(addr) - pool->base + offset);
        return fallocate(pools.at(pool->id).fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at,
                         static_cast<off_t>(length)) == 0;
    } catch (...) {
        return false;
    }
}

bool shmb_fipc_jemalloc::same_pool(const void *a, const void *b) const
{
    try {
        const Pool *pa = repo.from_address(a);
        return pa && pa == repo.from_address(b);
    } catch (...) {
        return false;
    }
}

namespace {

/* The serial of the allocator whose tcache this thread used last, and the
 * flags naming it: Thread_cache::this_thread_cache() + id(arena)'s fast path,
 * one thread-local compare (upstream's is a thread-local registry and an
 * unordered_map find: this model's is cheaper, a bound). */
struct Thread_tcache {
    uint64_t serial;
    int flags;
};
thread_local Thread_tcache this_thread_tcache;

std::atomic<uint64_t> next_serial{1};

} // namespace

/* Thread_cache::id(arena): the calling thread's explicit tcache for this
 * arena, created with tcache.create the first time the thread allocates or
 * frees (a jemalloc tcache may serve one thread only). Returns false when
 * jemalloc refuses (recorded). */
bool shmb_fipc_jemalloc::thread_flags(int *out)
{
    if (this_thread_tcache.serial == serial) {
        *out = this_thread_tcache.flags;
        return true;
    }
    try {
        std::lock_guard<std::mutex> lock(tcaches_mutex);
        auto it = tcaches.find(std::this_thread::get_id());
        if (it == tcaches.end()) {
            unsigned id;
            size_t len = sizeof(id);
            int err = mallctl("tcache.create", &id, &len, nullptr, 0);
            if (err != 0) {
                shmb_error_record("mallctl", err, "tcache.create");
                return false;
            }
            it = tcaches.emplace(std::this_thread::get_id(), id).first;
        }
        this_thread_tcache = Thread_tcache{serial, MALLOCX_ARENA(arena) | MALLOCX_TCACHE(it->second)};
        *out = this_thread_tcache.flags;
        return true;
    } catch (...) {
        shmb_error_record("mallctl", ENOMEM, "tcache.create");
        return false;
    }
}

/* Memory_manager::destroy_thread_cache, then destroy_arena. Returns 0 or
 * -EIO (jemalloc refused: it may still use the pools). */
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

/* Unmaps every pool and unlinks it, or leaves it in /dev/shm counting it in
 * *kept. Returns 0 or the first error. */
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

int shmb_fipc_jemalloc_destroy(shmb_fipc_jemalloc_t *j, int unlink_pools, uint64_t *kept)
{
    if (!j)
        return 0;
    /* jemalloc's metadata for the arena lives in the pools and it keeps a
     * pointer to the hooks: if it refuses to let go, neither may go. */
    int ret = j->close_arena();
    if (ret < 0)
        return ret;
    ret = j->drop_pools(unlink_pools, kept);
    delete j;
    return ret;
}

namespace {

/* Memory_manager::create_arena: mallctl("arenas.create") with the hooks;
 * then the retain_grow_limit this model adds (upstream leaves jemalloc's
 * default, no limit, and asserts pools fit its int32 offsets); then, when
 * asked, the creating thread's cache (Thread_cache::id, see thread_flags). */
int open_arena(shmb_fipc_jemalloc *j, int tcache)
{
    extent_hooks_t *hooks = &j->wrapper.hooks;
    size_t len = sizeof(j->arena);
    int err = mallctl("arenas.create", &j->arena, &len, &hooks, sizeof(hooks));
    if (err != 0) {
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

int shmb_fipc_jemalloc_create(const char *prefix, int tcache, shmb_fipc_jemalloc_t **out)
{
    int ret = shmb_segment_check_prefix(prefix);
    if (ret < 0)
        return ret;
    try {
        std::unique_ptr<shmb_fipc_jemalloc> j(new shmb_fipc_jemalloc);
        j->wrapper = Hooks_wrapper{shm_pool_hooks, j.get()};
        j->prefix = prefix;
        j->serial = next_serial.fetch_add(1);
        ret = open_arena(j.get(), tcache);
        if (ret < 0) {
            /* Frees j, unless jemalloc still holds the arena (then leaked). */
            shmb_fipc_jemalloc_destroy(j.release(), 1, nullptr);
            return ret;
        }
        *out = j.release();
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

/* Memory_manager::allocate_helper: mallocx with the arena and cache flags
 * (the calling thread's cache). */
int shmb_fipc_jemalloc_alloc(shmb_fipc_jemalloc_t *j, size_t bytes, void **out)
{
    if (bytes == 0)
        return -EINVAL;
    int flags = j->flags;
    if (j->use_tcache && !j->thread_flags(&flags))
        return -ENOMEM;
    void *p = mallocx(bytes, flags);
    if (!p)
        return -ENOMEM;
    *out = p;
    return 0;
}

/* Memory_manager::deallocate_helper: dallocx with the same flags (this
 * thread's cache; without one yet, tcache.create failed: no cache, as
 * upstream's id_or_none fallback). */
int shmb_fipc_jemalloc_free(shmb_fipc_jemalloc_t *j, void *ptr)
{
    if (!ptr)
        return 0;
    int flags = j->flags;
    if (j->use_tcache && !j->thread_flags(&flags))
        flags = j->flags;
    dallocx(ptr, flags);
    return 0;
}

shmb_fipc_repo_t *shmb_fipc_jemalloc_repo(const shmb_fipc_jemalloc_t *j)
{
    return const_cast<shmb_fipc_repo_t *>(&j->repo);
}

size_t shmb_fipc_jemalloc_pools(const shmb_fipc_jemalloc_t *j, uint64_t *bytes)
{
    try {
        std::lock_guard<std::mutex> lock(j->pools_mutex);
        if (bytes)
            *bytes = j->pool_bytes;
        return j->pools.size();
    } catch (...) {
        return 0;
    }
}

size_t shmb_fipc_jemalloc_pool_list(const shmb_fipc_jemalloc_t *j, shmb_fipc_pool_t *out, size_t cap)
{
    try {
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
    } catch (...) {
        return 0;
    }
}

int shmb_fipc_pool_attach(const char *name, uint64_t bytes, void **base, int *fd)
{
    if (!name || !base || !fd || bytes == 0)
        return -EINVAL;
    int f = shm_open(name, O_RDONLY, 0);
    if (f < 0)
        return shmb_error_record("shm_open", errno, name);
    void *p = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_SHARED, f, 0);
    if (p == MAP_FAILED) {
        int rc = shmb_error_record("mmap", errno, name);
        close(f);
        return rc;
    }
    *base = p;
    *fd = f;
    return 0;
}

int shmb_fipc_pool_detach(void *base, uint64_t bytes, int fd)
{
    int rc = 0;
    if (munmap(base, static_cast<size_t>(bytes)) != 0)
        rc = shmb_error_record("munmap", errno, "a borrowed pool");
    if (close(fd) != 0 && rc == 0)
        rc = shmb_error_record("close", errno, "a borrowed pool");
    return rc;
}

/* ---- object hand-off (Shm_session) ----
 *
 * Upstream: Flow-IPC/ipc_shm_arena_lend, src/ipc/session/standalone/shm/
 * arena_lend/jemalloc/shm_session.{hpp,cpp} (lend_object_impl,
 * serialize_handle, deserialize_handle, borrow_object, return_object,
 * lend_shm_pool, receive_*), shm_session_data.{hpp,cpp} (the lender's and
 * borrower's mutexes and collection maps), lender_collection.cpp,
 * borrower_collection.cpp; src/ipc/shm/arena_lend/shm_pool_collection.cpp
 * (lookup_shm_pool); borrower_shm_pool_collection.hpp (construct,
 * Object_releaser); jemalloc/ipc_arena.hpp (construct,
 * get_collection_id).
 *
 * boost::shared_mutex is used header-only (libboost_thread is not a
 * dependency), so its lock_shared skips the interruption-point bookkeeping
 * upstream's linked boost.thread runs: this model's read lock is a bound. */
#define BOOST_THREAD_DONT_PROVIDE_INTERRUPTIONS
#include <boost/thread/locks.hpp>
#include <boost/thread/shared_mutex.hpp>

#include <cstring>
#include <functional>

#include "fipc_internal.h"

int shmb_fipc_fault = SHMB_FIPC_FAULT_NONE;

namespace {

using Collection_id = uint32_t;  /* ipc::shm::arena_lend::Collection_id */
using pool_offset_t = int32_t;   /* Shm_pool::size_t */
using Blob = std::unique_ptr<uint8_t[]>; /* flow::util::Blob: a heap buffer, not zeroed */

enum Msg_type : uint32_t { LEND_ARENA = 1, LEND_POOL = 2, RESPONSE = 3, RETURN_OBJECT = 4 };

/* Shm_session::Shm_object_handle, the blob's bytes. */
struct Object_handle {
    Collection_id collection_id;
    uint32_t pool_id;
    pool_offset_t pool_offset;
};
static_assert(sizeof(Object_handle) == SHMB_FIPC_HANDLE_BYTES, "the blob is the handle");

struct Return_msg {
    uint32_t type;
    Object_handle handle;
};
struct Lend_pool_head { /* then the pool's name, to the message's end */
    uint32_t type;
    Collection_id collection_id;
    uint32_t pool_id;
    uint32_t reserved; /* 0: no padding byte leaves this process unwritten */
    uint64_t size;
};
static_assert(sizeof(Lend_pool_head) == 24, "LendPool's name starts at byte 24");
struct Two_words {
    uint32_t type;
    uint32_t value; /* LendArena: the collection; Response: success */
};

template <typename T> bool read_msg(const void *msg, size_t len, uint32_t type, T *out)
{
    if (!msg || len < sizeof(T))
        return false;
    std::memcpy(out, msg, sizeof(T));
    return out->type == type;
}

template <typename T> size_t write_msg(void *msg, const T &m)
{
    std::memcpy(msg, &m, sizeof(T));
    return sizeof(T);
}

std::atomic<Collection_id> next_collection_id{1}; /* Ipc_arena::m_collection_id_counter */

/* What the lender knows of one of its pools (ipc::shm::arena_lend::Shm_pool). */
struct Lent_pool {
    uint32_t id;
    unsigned char *base;
    size_t size;
    std::string name;
};

/* The arena as its objects' deleters hold it (Ipc_arena: an id, and the
 * pool map Shm_pool_collection::lookup_shm_pool searches). */
struct Arena {
    shmb_fipc_jemalloc *j;
    Collection_id id;
    mutable boost::shared_mutex pool_map_mutex;
    std::map<const void *, std::shared_ptr<Lent_pool>> pool_map;
    std::atomic<uint64_t> frees{0};

    std::shared_ptr<Lent_pool> lookup_shm_pool(const void *address) const;
};

/* Shm_pool_collection::lookup_shm_pool: a read lock, map::lower_bound, the
 * entry before it unless the bound is the pool itself, and its range. */
std::shared_ptr<Lent_pool> Arena::lookup_shm_pool(const void *address) const
{
    boost::shared_lock<boost::shared_mutex> lock(pool_map_mutex);
    auto it = pool_map.lower_bound(address);
    if (it == pool_map.end() || it->first != address) {
        if (it == pool_map.begin())
            return nullptr;
        --it;
    }
    const std::shared_ptr<Lent_pool> &pool = it->second;
    uintptr_t at = reinterpret_cast<uintptr_t>(address), base = reinterpret_cast<uintptr_t>(pool->base);
    if (at < base || at - base >= pool->size)
        return nullptr;
    return pool;
}

/* Ipc_arena's Ipc_object_deleter_no_cache: holds the arena (a shared_ptr,
 * as upstream's shared_from_this()) and deallocates into it. */
struct Object_deleter {
    std::shared_ptr<Arena> arena;
    void operator()(void *p) const
    {
        shmb_fipc_jemalloc_free(arena->j, p);
        arena->frees.fetch_add(shmb_fipc_fault == SHMB_FIPC_FAULT_DOUBLE_FREE ? 2 : 1);
    }
};

using Object_ptr = std::shared_ptr<void>;
static_assert(sizeof(Object_ptr) == sizeof(static_cast<shmb_fipc_object_t *>(nullptr)->owner),
              "shmb_fipc_object_t holds a shared_ptr");

Object_ptr &owner_of(shmb_fipc_object_t *obj)
{
    return *std::launder(reinterpret_cast<Object_ptr *>(obj->owner));
}

const Object_ptr &owner_of(const shmb_fipc_object_t *obj)
{
    return *std::launder(reinterpret_cast<const Object_ptr *>(obj->owner));
}

/* Places p in an empty *obj. */
void hold(shmb_fipc_object_t *obj, Object_ptr &&p, void *addr)
{
    new (obj->owner) Object_ptr(std::move(p));
    obj->addr = addr;
}

/* Lender_collection: its pools by id, each with its lent objects by offset
 * (the object's shared_ptr and how many times it is lent). */
struct Lender_collection {
    struct Object_data {
        Object_ptr object;
        unsigned use_count;
    };
    struct Shm_pool_data {
        std::shared_ptr<Lent_pool> pool;
        std::unordered_map<pool_offset_t, Object_data> objects;
    };
    std::shared_ptr<Arena> arena;
    std::unordered_map<uint32_t, Shm_pool_data> pools;

    bool register_object(const Object_ptr &object, uint32_t *pool_id, pool_offset_t *offset);
    bool deregister_object(uint32_t pool_id, pool_offset_t offset, Object_ptr *out);
};

/* Lender_collection::register_object: the pool holding the object
 * (lookup_shm_pool), its offset (Shm_pool::determine_offset), then the
 * object's entry: a new one holding a copy of its shared_ptr, or one more
 * use. */
bool Lender_collection::register_object(const Object_ptr &object, uint32_t *pool_id,
                                        pool_offset_t *offset)
{
    std::shared_ptr<Lent_pool> pool = arena->lookup_shm_pool(object.get());
    if (!pool)
        return false;
    uintptr_t delta = reinterpret_cast<uintptr_t>(object.get()) - reinterpret_cast<uintptr_t>(pool->base);
    if (delta > static_cast<uintptr_t>(INT32_MAX))
        return false;
    auto it = pools.find(pool->id);
    if (it == pools.end())
        return false;
    pool_offset_t at = static_cast<pool_offset_t>(delta);
    Object_ptr kept = shmb_fipc_fault == SHMB_FIPC_FAULT_EARLY_FREE ? Object_ptr() : object;
    auto result = it->second.objects.emplace(at, Object_data{std::move(kept), 1});
    if (!result.second)
        ++result.first->second.use_count;
    *pool_id = pool->id;
    *offset = at;
    return true;
}

/* Lender_collection::deregister_object: one use less; the last moves the
 * object's shared_ptr out to *out (the caller lets it go). Returns whether
 * the object was lent. */
bool Lender_collection::deregister_object(uint32_t pool_id, pool_offset_t offset, Object_ptr *out)
{
    auto it = pools.find(pool_id);
    if (it == pools.end())
        return false;
    auto object_it = it->second.objects.find(offset);
    if (object_it == it->second.objects.end())
        return false;
    Object_data &data = object_it->second;
    if (data.use_count > 1) {
        --data.use_count;
        *out = data.object;
        return true;
    }
    *out = std::move(data.object);
    it->second.objects.erase(object_it);
    return true;
}

} // namespace

/* Shm_session's lender half: Shm_session_data's m_lender_mutex and
 * m_lender_collection_map, over one arena. */
struct shmb_fipc_lender {
    std::atomic<bool> connected{true}; /* Shm_session::m_connected */
    std::shared_ptr<Arena> arena;
    mutable std::mutex lender_mutex;
    std::unordered_map<Collection_id, std::unique_ptr<Lender_collection>> lender_collection_map;

    int lend_pool(const shmb_fipc_pool_t &info, unsigned char *base);
    int lend(const Object_ptr &object, Object_handle *handle);
    bool deregister_lender_object(const Object_handle &h, Object_ptr *out);
};

/* The arena's pool map gets the pool (upstream: Shm_pool_collection::
 * register_shm_pool, in the extent hook, under the write lock), then the
 * session: Shm_session_data::register_lender_shm_pool. */
int shmb_fipc_lender::lend_pool(const shmb_fipc_pool_t &info, unsigned char *base)
{
    std::shared_ptr<Lent_pool> pool;
    {
        boost::unique_lock<boost::shared_mutex> lock(arena->pool_map_mutex);
        auto it = arena->pool_map.find(base);
        if (it == arena->pool_map.end())
            it = arena->pool_map.emplace(base, std::make_shared<Lent_pool>(
                                                   Lent_pool{info.id, base, info.bytes, info.name})).first;
        pool = it->second;
    }
    std::lock_guard<std::mutex> lock(lender_mutex);
    auto it = lender_collection_map.find(arena->id);
    if (it == lender_collection_map.end())
        return -EINVAL;
    if (!it->second->pools.emplace(info.id, Lender_collection::Shm_pool_data{pool, {}}).second)
        return -EEXIST;
    return 0;
}

/* Shm_session::lend_object_impl up to serialize_handle:
 * Ipc_arena::get_collection_id (std::get_deleter), then
 * Shm_session_data::register_lender_object under m_lender_mutex. */
int shmb_fipc_lender::lend(const Object_ptr &object, Object_handle *handle)
{
    if (!connected.load())
        return -EPIPE;
    const Object_deleter *deleter = std::get_deleter<Object_deleter>(object);
    if (!deleter)
        return -EINVAL;
    Collection_id collection_id = deleter->arena->id;
    std::lock_guard<std::mutex> lock(lender_mutex);
    auto it = lender_collection_map.find(collection_id);
    if (it == lender_collection_map.end())
        return -EINVAL;
    if (!it->second->register_object(object, &handle->pool_id, &handle->pool_offset))
        return -ENOENT;
    handle->collection_id = collection_id;
    return 0;
}

/* Shm_session_data::deregister_lender_object. */
bool shmb_fipc_lender::deregister_lender_object(const Object_handle &h, Object_ptr *out)
{
    std::lock_guard<std::mutex> lock(lender_mutex);
    auto it = lender_collection_map.find(h.collection_id);
    return it != lender_collection_map.end() && it->second->deregister_object(h.pool_id, h.pool_offset, out);
}

namespace {

/* What the borrower mapped of a lent pool (Borrower_shm_pool_collection's
 * Shm_pool): unmapped when its last holder lets go. */
struct Borrowed_pool {
    uint32_t id;
    unsigned char *base;
    uint64_t size;
    int fd;
    Borrowed_pool(uint32_t id_, void *base_, uint64_t size_, int fd_)
        : id(id_), base(static_cast<unsigned char *>(base_)), size(size_), fd(fd_)
    {
    }
    Borrowed_pool(const Borrowed_pool &) = delete;
    Borrowed_pool &operator=(const Borrowed_pool &) = delete;
    ~Borrowed_pool() { shmb_fipc_pool_detach(base, size, fd); }
};

/* Borrower_collection: pools by id, each with its borrowed offsets and how
 * many times each is borrowed. */
struct Borrower_collection {
    struct Shm_pool_data {
        std::shared_ptr<Borrowed_pool> pool;
        std::unordered_map<pool_offset_t, unsigned> offsets;
    };
    std::unordered_map<uint32_t, Shm_pool_data> pools;

    const Borrowed_pool *find_shm_pool(uint32_t pool_id) const
    {
        auto it = pools.find(pool_id);
        return it == pools.end() ? nullptr : it->second.pool.get();
    }
    bool register_object(uint32_t pool_id, pool_offset_t offset)
    {
        auto it = pools.find(pool_id);
        if (it == pools.end())
            return false;
        auto result = it->second.offsets.emplace(offset, 1);
        if (!result.second)
            ++result.first->second;
        return true;
    }
    bool deregister_object(uint32_t pool_id, pool_offset_t offset)
    {
        auto it = pools.find(pool_id);
        if (it == pools.end())
            return false;
        auto at = it->second.offsets.find(offset);
        if (at == it->second.offsets.end())
            return false;
        if (at->second > 1)
            --at->second;
        else
            it->second.offsets.erase(at);
        return true;
    }
};

/* Where a deleter "sends" its ReturnObject: shmb_fipc_object_release
 * hands it to the caller, who carries it to the lender. */
struct Outbox {
    unsigned char bytes[SHMB_FIPC_MSG_MAX];
    size_t len;
};
thread_local Outbox outbox;

/* Borrower_shm_pool_collection::Object_releaser: the deleter of a borrowed
 * object, running the session's release callback. */
struct Object_releaser {
    std::function<void(void *)> callback; /* Release_callback */
    void operator()(void *p) const { callback(p); }
};

/* Shm_session's borrower half: Shm_session_data's m_borrower_mutex and
 * m_borrower_collection_map; shared, as every borrowed object's deleter
 * holds it. */
struct Borrower_session : std::enable_shared_from_this<Borrower_session> {
    std::atomic<bool> connected{true};
    std::mutex borrower_mutex;
    std::unordered_map<Collection_id, std::unique_ptr<Borrower_collection>> borrower_collection_map;

    bool receive_arena(Collection_id id);
    bool receive_shm_pool(const Lend_pool_head &head, const std::string &name);
    unsigned char *register_borrower_object(const Object_handle &h);
    void return_object(const Object_handle &h);
};

/* Shm_session::receive_arena: register_borrower_collection. */
bool Borrower_session::receive_arena(Collection_id id)
{
    std::lock_guard<std::mutex> lock(borrower_mutex);
    return borrower_collection_map.emplace(id, std::make_unique<Borrower_collection>()).second;
}

/* Shm_session::receive_shm_pool: the pool opened and mapped (upstream's
 * borrower repository, shm_open + mmap read-only), then
 * register_borrower_shm_pool. */
bool Borrower_session::receive_shm_pool(const Lend_pool_head &head, const std::string &name)
{
    void *base;
    int fd;
    if (shmb_fipc_pool_attach(name.c_str(), head.size, &base, &fd) < 0)
        return false;
    std::shared_ptr<Borrowed_pool> pool;
    try {
        pool = std::make_shared<Borrowed_pool>(head.pool_id, base, head.size, fd);
    } catch (...) {
        shmb_fipc_pool_detach(base, head.size, fd);
        throw;
    }
    std::lock_guard<std::mutex> lock(borrower_mutex);
    auto it = borrower_collection_map.find(head.collection_id);
    return it != borrower_collection_map.end() &&
           it->second->pools.emplace(head.pool_id, Borrower_collection::Shm_pool_data{pool, {}}).second;
}

/* Shm_session_data::construct_and_register_borrower_object up to the
 * address: the lock, the collection, the pool, the offset counted in.
 * Returns the object's address in this mapping, or NULL. */
unsigned char *Borrower_session::register_borrower_object(const Object_handle &h)
{
    std::lock_guard<std::mutex> lock(borrower_mutex);
    auto it = borrower_collection_map.find(h.collection_id);
    if (it == borrower_collection_map.end())
        return nullptr;
    const Borrowed_pool *pool = it->second->find_shm_pool(h.pool_id);
    if (!pool || h.pool_offset < 0 || static_cast<uint64_t>(h.pool_offset) >= pool->size ||
        !it->second->register_object(h.pool_id, h.pool_offset))
        return nullptr;
    return pool->base + h.pool_offset + (shmb_fipc_fault == SHMB_FIPC_FAULT_BORROW_ADDR ? 64 : 0);
}

/* Shm_session::return_object: deregister_borrower_object under the lock,
 * then the ReturnObject message (send_message: here, into the outbox). */
void Borrower_session::return_object(const Object_handle &h)
{
    {
        std::lock_guard<std::mutex> lock(borrower_mutex);
        auto it = borrower_collection_map.find(h.collection_id);
        if (it == borrower_collection_map.end() || !it->second->deregister_object(h.pool_id, h.pool_offset))
            return;
    }
    if (!connected.load())
        return;
    Return_msg m{RETURN_OBJECT, h};
    if (shmb_fipc_fault == SHMB_FIPC_FAULT_RETURN)
        m.handle.pool_offset += 64;
    outbox.len = write_msg(outbox.bytes, m);
}

} // namespace

struct shmb_fipc_borrower {
    std::shared_ptr<Borrower_session> session;
};

int shmb_fipc_lender_create(shmb_fipc_jemalloc_t *j, shmb_fipc_lender_t **out)
{
    if (!j || !out)
        return -EINVAL;
    try {
        auto l = std::make_unique<shmb_fipc_lender>();
        l->arena = std::make_shared<Arena>();
        l->arena->j = j;
        l->arena->id = next_collection_id.fetch_add(1);
        *out = l.release();
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

void shmb_fipc_lender_destroy(shmb_fipc_lender_t *l)
{
    delete l;
}

/* Shm_session::lend_arena: register_lender_collection, the LendArena
 * request. */
int shmb_fipc_lender_lend_arena(shmb_fipc_lender_t *l, void *msg, size_t cap, size_t *len)
{
    if (!l || !msg || !len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    try {
        std::lock_guard<std::mutex> lock(l->lender_mutex);
        auto collection = std::make_unique<Lender_collection>();
        collection->arena = l->arena;
        if (!l->lender_collection_map.emplace(l->arena->id, std::move(collection)).second)
            return -EEXIST;
        *len = write_msg(msg, Two_words{LEND_ARENA, l->arena->id});
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

int shmb_fipc_lender_lend_pool(shmb_fipc_lender_t *l, uint32_t pool_id, void *msg, size_t cap,
                               size_t *len)
{
    if (!l || !msg || !len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    try {
        std::vector<shmb_fipc_pool_t> pools(shmb_fipc_jemalloc_pool_list(l->arena->j, nullptr, 0));
        pools.resize(shmb_fipc_jemalloc_pool_list(l->arena->j, pools.data(), pools.size()));
        auto info = std::find_if(pools.begin(), pools.end(),
                                 [pool_id](const shmb_fipc_pool_t &p) { return p.id == pool_id; });
        void *base = shmb_fipc_repo_to_address(shmb_fipc_jemalloc_repo(l->arena->j), pool_id, 0, 1);
        if (info == pools.end() || !base)
            return -ENOENT;
        int rc = l->lend_pool(*info, static_cast<unsigned char *>(base));
        if (rc < 0)
            return rc;
        size_t name_len = std::strlen(info->name);
        size_t n = write_msg(msg, Lend_pool_head{LEND_POOL, l->arena->id, pool_id, 0, info->bytes});
        std::memcpy(static_cast<unsigned char *>(msg) + n, info->name, name_len);
        *len = n + name_len;
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

int shmb_fipc_lender_on_response(shmb_fipc_lender_t *l, const void *msg, size_t len)
{
    Two_words m;
    if (!l || !read_msg(msg, len, RESPONSE, &m))
        return -EBADMSG;
    return m.value ? 0 : -EREMOTEIO;
}

int shmb_fipc_lender_construct(shmb_fipc_lender_t *l, size_t bytes, shmb_fipc_object_t *out)
{
    if (!l || !out || bytes == 0)
        return -EINVAL;
    void *p;
    int rc = shmb_fipc_jemalloc_alloc(l->arena->j, bytes, &p);
    if (rc < 0)
        return rc;
    try {
        hold(out, Object_ptr(p, Object_deleter{l->arena}), p);
        return 0;
    } catch (...) {
        return -ENOMEM; /* the shared_ptr's constructor freed p through the deleter */
    }
}

/* lend_object_impl: the registration, then serialize_handle (a Blob the
 * handle is written into), whose bytes go into the caller's message. */
int shmb_fipc_lender_lend(shmb_fipc_lender_t *l, const shmb_fipc_object_t *obj, void *blob,
                          size_t cap, size_t *len)
{
    if (!l || !obj || !obj->addr || !blob || !len || cap < SHMB_FIPC_HANDLE_BYTES)
        return -EINVAL;
    try {
        Object_handle h;
        int rc = l->lend(owner_of(obj), &h);
        if (rc < 0)
            return rc;
        if (shmb_fipc_fault == SHMB_FIPC_FAULT_BLOB)
            h.pool_offset += 64;
        Blob serialized(new uint8_t[sizeof(h)]);
        std::memcpy(serialized.get(), &h, sizeof(h));
        std::memcpy(blob, serialized.get(), sizeof(h));
        *len = sizeof(h);
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

/* receive_object_return: the object's shared_ptr comes out of the maps and
 * goes at the end of the statement, after the lender's mutex is released,
 * as upstream's `return bool(deregister_lender_object(...))`. */
int shmb_fipc_lender_on_return(shmb_fipc_lender_t *l, const void *msg, size_t len)
{
    Return_msg m;
    if (!l || !read_msg(msg, len, RETURN_OBJECT, &m))
        return -EBADMSG;
    Object_ptr object;
    if (!l->deregister_lender_object(m.handle, &object))
        return -ENOENT;
    return 0;
}

void shmb_fipc_lender_disconnect(shmb_fipc_lender_t *l)
{
    if (l)
        l->connected = false;
}

void shmb_fipc_borrower_disconnect(shmb_fipc_borrower_t *b)
{
    if (b)
        b->session->connected = false;
}

uint64_t shmb_fipc_lender_frees(const shmb_fipc_lender_t *l)
{
    return l ? l->arena->frees.load() : 0;
}

size_t shmb_fipc_lender_lent(const shmb_fipc_lender_t *l)
{
    if (!l)
        return 0;
    std::lock_guard<std::mutex> lock(l->lender_mutex);
    size_t n = 0;
    for (const auto &collection : l->lender_collection_map)
        for (const auto &pool : collection.second->pools)
            n += pool.second.objects.size();
    return n;
}

int shmb_fipc_borrower_create(shmb_fipc_borrower_t **out)
{
    if (!out)
        return -EINVAL;
    try {
        auto b = std::make_unique<shmb_fipc_borrower>();
        b->session = std::make_shared<Borrower_session>();
        *out = b.release();
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

void shmb_fipc_borrower_destroy(shmb_fipc_borrower_t *b)
{
    delete b;
}

/* The handlers register_expected_messages installs for LendArena and
 * LendPool, each answered with send_response. */
int shmb_fipc_borrower_receive(shmb_fipc_borrower_t *b, const void *msg, size_t len, void *reply,
                               size_t cap, size_t *reply_len)
{
    if (!b || !msg || !reply || !reply_len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    try {
        bool ok;
        Two_words arena;
        Lend_pool_head head;
        if (read_msg(msg, len, LEND_ARENA, &arena)) {
            ok = b->session->receive_arena(arena.value);
        } else if (read_msg(msg, len, LEND_POOL, &head) && len - sizeof(head) <= SHMB_FIPC_POOL_NAME_MAX) {
            std::string name(static_cast<const char *>(msg) + sizeof(head), len - sizeof(head));
            ok = name.find('\0') == std::string::npos && b->session->receive_shm_pool(head, name);
        } else {
            return -EBADMSG;
        }
        *reply_len = write_msg(reply, Two_words{RESPONSE, ok ? 1u : 0u});
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

/* borrow_object: the app's Blob of the received bytes,
 * deserialize_handle (a size check and a memcpy), then
 * construct_and_register_borrower_object with the release callback (a
 * lambda holding the session and the handle, in a std::function). The
 * shared_ptr is made after the lock (upstream: under it; the same work), so
 * that its deleter, should making it throw, can take the lock. */
int shmb_fipc_borrower_borrow(shmb_fipc_borrower_t *b, const void *blob, size_t len,
                              shmb_fipc_object_t *out)
{
    if (!b || !blob || !out)
        return -EINVAL;
    if (len != SHMB_FIPC_HANDLE_BYTES)
        return -EBADMSG;
    try {
        Blob received(new uint8_t[len]);
        std::memcpy(received.get(), blob, len);
        Object_handle h;
        std::memcpy(&h, received.get(), sizeof(h));
        Borrower_session &session = *b->session;
        Object_releaser releaser{[session = session.shared_from_this(), h](void *) { session->return_object(h); }};
        unsigned char *addr = session.register_borrower_object(h);
        if (!addr)
            return -ENOENT;
        hold(out, Object_ptr(addr, std::move(releaser)), addr);
        return 0;
    } catch (...) {
        return -ENOMEM;
    }
}

int shmb_fipc_object_release(shmb_fipc_object_t *obj, void *msg, size_t cap, size_t *len)
{
    if (!obj || !msg || !len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    if (!obj->addr) {
        *len = 0;
        return 0;
    }
    outbox.len = 0;
    Object_ptr &owner = owner_of(obj);
    owner.reset();
    owner.~Object_ptr();
    obj->addr = nullptr;
    std::memcpy(msg, outbox.bytes, outbox.len);
    *len = outbox.len;
    return 0;
}

int shmb_fipc_handle_decode(const void *blob, size_t len, shmb_fipc_handle_t *out)
{
    Object_handle h;
    if (!blob || !out || len != sizeof(h))
        return -EBADMSG;
    std::memcpy(&h, blob, sizeof(h));
    *out = shmb_fipc_handle_t{h.collection_id, h.pool_id, h.pool_offset};
    return 0;
}

int shmb_fipc_return_decode(const void *msg, size_t len, shmb_fipc_handle_t *out)
{
    Return_msg m;
    if (!out || len != sizeof(m) || !read_msg(msg, len, RETURN_OBJECT, &m))
        return -EBADMSG;
    *out = shmb_fipc_handle_t{m.handle.collection_id, m.handle.pool_id, m.handle.pool_offset};
    return 0;
}

namespace {

/* The two sides of one in-process session for shmb_fipc_handoff_verify,
 * and the objects it holds, let go in any case. */
struct Verify_run {
    shmb_fipc_lender_t *lender = nullptr;
    shmb_fipc_borrower_t *borrower = nullptr;
    shmb_fipc_object_t lent{}, borrowed{};
    unsigned char msg[SHMB_FIPC_MSG_MAX], reply[SHMB_FIPC_MSG_MAX];
    ~Verify_run()
    {
        size_t len;
        shmb_fipc_object_release(&borrowed, msg, sizeof(msg), &len);
        shmb_fipc_object_release(&lent, msg, sizeof(msg), &len);
        shmb_fipc_lender_destroy(lender);
        shmb_fipc_borrower_destroy(borrower);
    }

    /* One synchronous request: the lender's message, the borrower's
     * handler, the reply back. */
    int round_trip(size_t len)
    {
        size_t reply_len;
        int rc = shmb_fipc_borrower_receive(borrower, msg, len, reply, sizeof(reply), &reply_len);
        return rc < 0 ? rc : shmb_fipc_lender_on_response(lender, reply, reply_len);
    }

    int lend_all_pools(shmb_fipc_jemalloc_t *j)
    {
        size_t len;
        int rc = shmb_fipc_lender_lend_arena(lender, msg, sizeof(msg), &len);
        if (rc < 0 || (rc = round_trip(len)) < 0)
            return rc;
        std::vector<shmb_fipc_pool_t> pools(shmb_fipc_jemalloc_pool_list(j, nullptr, 0));
        pools.resize(shmb_fipc_jemalloc_pool_list(j, pools.data(), pools.size()));
        for (const shmb_fipc_pool_t &pool : pools)
            if ((rc = shmb_fipc_lender_lend_pool(lender, pool.id, msg, sizeof(msg), &len)) < 0 ||
                (rc = round_trip(len)) < 0)
                return rc;
        return 0;
    }

    /* Where the borrower mapped the pool the handle names, or NULL. */
    const unsigned char *borrower_address(const shmb_fipc_handle_t &h) const
    {
        Borrower_session &session = *borrower->session;
        std::lock_guard<std::mutex> lock(session.borrower_mutex);
        auto it = session.borrower_collection_map.find(h.collection_id);
        const Borrowed_pool *pool = it == session.borrower_collection_map.end()
                                        ? nullptr : it->second->find_shm_pool(h.pool_id);
        return pool ? pool->base + h.pool_offset : nullptr;
    }
};

bool same_handle(const shmb_fipc_handle_t &a, const shmb_fipc_handle_t &b)
{
    return a.collection_id == b.collection_id && a.pool_id == b.pool_id && a.pool_offset == b.pool_offset;
}

/* The lend, borrow, release and return of v.lent, checked. */
int verify_steps(Verify_run &v, shmb_fipc_jemalloc_t *j, size_t bytes)
{
    unsigned char blob[SHMB_FIPC_HANDLE_BYTES];
    size_t blob_len, len;
    shmb_fipc_handle_t want, got;
    std::memset(v.lent.addr, 0xa5, bytes);
    int rc = shmb_fipc_lender_lend(v.lender, &v.lent, blob, sizeof(blob), &blob_len);
    if (rc < 0)
        return rc;
    uint64_t offset;
    want.collection_id = v.lender->arena->id;
    if (shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(j), v.lent.addr, &want.pool_id, &offset) < 0)
        return -EFAULT;
    want.pool_offset = static_cast<int32_t>(offset);
    if (shmb_fipc_handle_decode(blob, blob_len, &got) < 0 || !same_handle(got, want))
        return -EBADMSG;
    if ((rc = shmb_fipc_object_release(&v.lent, v.msg, sizeof(v.msg), &len)) < 0)
        return rc;
    if (len != 0 || shmb_fipc_lender_frees(v.lender) != 0)
        return -ESTALE;
    if ((rc = shmb_fipc_borrower_borrow(v.borrower, blob, blob_len, &v.borrowed)) < 0)
        return rc;
    const unsigned char *expected = v.borrower_address(want);
    const unsigned char *p = static_cast<const unsigned char *>(v.borrowed.addr);
    if (p != expected || std::count(p, p + bytes, 0xa5) != static_cast<std::ptrdiff_t>(bytes))
        return -EFAULT;
    if ((rc = shmb_fipc_object_release(&v.borrowed, v.msg, sizeof(v.msg), &len)) < 0)
        return rc;
    if (shmb_fipc_return_decode(v.msg, len, &got) < 0 || !same_handle(got, want))
        return -EBADMSG;
    if (shmb_fipc_lender_frees(v.lender) != 0)
        return -ESTALE;
    if ((rc = shmb_fipc_lender_on_return(v.lender, v.msg, len)) < 0)
        return rc;
    return shmb_fipc_lender_frees(v.lender) == 1 && shmb_fipc_lender_lent(v.lender) == 0 ? 0 : -ESTALE;
}

} // namespace

int shmb_fipc_handoff_verify(shmb_fipc_jemalloc_t *j, size_t bytes)
{
    if (!j || bytes == 0)
        return -EINVAL;
    try {
        Verify_run v;
        int rc = shmb_fipc_lender_create(j, &v.lender);
        if (rc < 0 || (rc = shmb_fipc_borrower_create(&v.borrower)) < 0 ||
            (rc = shmb_fipc_lender_construct(v.lender, bytes, &v.lent)) < 0 ||
            (rc = v.lend_all_pools(j)) < 0)
            return rc;
        return verify_steps(v, j, bytes);
    } catch (...) {
        return -ENOMEM;
    }
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
