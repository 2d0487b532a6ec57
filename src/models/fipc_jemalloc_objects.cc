// fipc_jemalloc_objects: SHM-jemalloc's object layer in its own process,
// Ipc_arena::construct (Flow-IPC/ipc_shm_arena_lend, jemalloc/ipc_arena.hpp).
#include "fipc_jemalloc_internal.hpp"
#include "fipc_objects.hpp"

#include <atomic>
#include <cstdio>
#include <memory>
#include <set>
#include <vector>

namespace {

// Ipc_arena as its objects' deleters hold it: owned by a shared_ptr
// (create() returns one), its arena ids a std::set.
struct Ipc_arena : std::enable_shared_from_this<Ipc_arena> {
    shmb_fipc_jemalloc *j = nullptr;
    std::set<unsigned> arena_ids;
    std::atomic<uint64_t> constructed{0}, freed{0};

    unsigned get_arena_id() const { return *arena_ids.begin(); }
};

using Activator = shmb_fipc::Activator<Ipc_arena>; // Ipc_arena_activator
using shmb_fipc::Object;

// Ipc_object_deleter_no_cache over Object_deleter_no_cache: the arena (a
// shared_ptr) and its id; the free is Memory_manager::deallocate's dallocx.
struct Deleter {
    std::shared_ptr<Ipc_arena> pool_collection;
    unsigned arena_id;

    void operator()(Object *p) const
    {
        Activator ctx(std::static_pointer_cast<Ipc_arena>(pool_collection).get());
        p->~Object();
        (void)arena_id; // upstream asserts it is one of the collection's
        shmb_fipc::jemalloc_free(pool_collection->j, p);
        pool_collection->freed.fetch_add(shmb_fipc_object_fault == SHMB_FIPC_OBJECT_FAULT_TWICE ? 2 : 1,
                                         std::memory_order_relaxed);
    }
};

using Handle = std::shared_ptr<Object>; // Ipc_arena::Handle<T>
static_assert(sizeof(Handle) == sizeof(shmb_fipc_jemalloc_handle_t::handle),
              "shmb_fipc_jemalloc_handle_t holds a std::shared_ptr");

} // namespace

struct shmb_fipc_jemalloc_objects {
    std::shared_ptr<Ipc_arena> arena;
    std::vector<Handle> kept; // SHMB_FIPC_OBJECT_FAULT_KEEP's copies
};

extern "C" {

int shmb_fipc_jemalloc_objects_create(shmb_fipc_jemalloc_t *j, shmb_fipc_jemalloc_objects_t **out) noexcept
{
    if (!j || !out || !j->has_arena || j->use_tcache)
        return -EINVAL;
    return shmb::guard([&] {
        auto o = std::make_unique<shmb_fipc_jemalloc_objects>();
        o->arena = std::make_shared<Ipc_arena>();
        o->arena->j = j;
        o->arena->arena_ids.insert(j->arena);
        *out = o.release();
        return 0;
    });
}

void shmb_fipc_jemalloc_objects_destroy(shmb_fipc_jemalloc_objects_t *o) noexcept
{
    delete o; // a kept copy's deleter frees its block here
}

// Ipc_arena::construct_impl(use_cache = false) and construct_helper. A
// throwing shared_ptr constructor ran the deleter: the block is freed.
int shmb_fipc_jemalloc_object_new(shmb_fipc_jemalloc_objects_t *o, size_t bytes, shmb_fipc_jemalloc_handle_t *h) noexcept
{
    if (!o || !h || h->addr || bytes == 0)
        return -EINVAL;
    Ipc_arena *arena = o->arena.get();
    const unsigned arena_id = arena->get_arena_id();
    Activator ctx(arena);
    void *raw = nullptr;
    int rc = shmb_fipc::jemalloc_alloc(arena->j, bytes, &raw);
    if (rc < 0)
        return rc;
    return shmb::guard([&] {
        Deleter deleter{arena->shared_from_this(), arena_id};
        Object *obj = new (raw) Object();
        new (h->handle) Handle(obj, std::move(deleter));
        h->addr = raw;
        arena->constructed.fetch_add(1, std::memory_order_relaxed);
        return 0;
    });
}

int shmb_fipc_jemalloc_object_drop(shmb_fipc_jemalloc_objects_t *o, shmb_fipc_jemalloc_handle_t *h) noexcept
{
    return o ? shmb_fipc::object_drop(o->kept, h) : -EINVAL;
}

int shmb_fipc_jemalloc_object_check(const shmb_fipc_jemalloc_objects_t *o, const shmb_fipc_jemalloc_handle_t *h,
                                    char *why, size_t cap) noexcept
{
    const char *wrong = nullptr;
    if (!o || !h || !h->addr) {
        wrong = "an empty handle";
    } else {
        const Handle &handle = shmb_fipc::handle_of<Handle>(h);
        const Deleter *d = std::get_deleter<Deleter>(handle);
        if (handle.get() != h->addr)
            wrong = "its shared_ptr points elsewhere";
        else if (handle.use_count() != 1)
            wrong = "its shared_ptr has other owners";
        else if (!d || d->pool_collection != o->arena || d->arena_id != o->arena->get_arena_id())
            wrong = "its deleter does not hold this arena";
    }
    if (!wrong)
        return 0;
    if (cap)
        std::snprintf(why, cap, "jemalloc_object: object %p: %s", h ? h->addr : nullptr, wrong);
    return -EPROTO;
}

void shmb_fipc_jemalloc_objects_counts(const shmb_fipc_jemalloc_objects_t *o, uint64_t *constructed,
                                       uint64_t *freed) noexcept
{
    *constructed = o ? o->arena->constructed.load() : 0;
    *freed = o ? o->arena->freed.load() : 0;
}

} // extern "C"
