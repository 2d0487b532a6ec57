// fipc_classic_objects: SHM-classic's object layer in its own process,
// Pool_arena::construct (Flow-IPC/ipc_shm, src/ipc/shm/classic/pool_arena.hpp).
#include "fipc_classic_internal.hpp"
#include "fipc_objects.hpp"

#include <boost/shared_ptr.hpp>

#include <atomic>
#include <cstdio>
#include <vector>

using namespace fipc_classic;

int shmb_fipc_object_fault = SHMB_FIPC_OBJECT_FAULT_NONE;

struct shmb_fipc_classic_objects {
    shmb_fipc_classic_t *pool;
    std::atomic<uint64_t> constructed{0}, freed{0};
    std::vector<boost::shared_ptr<void>> kept; // SHMB_FIPC_OBJECT_FAULT_KEEP's copies
};

namespace {

using Owner_ct = std::atomic<unsigned>; // Handle_in_shm::Atomic_owner_ct
using Handle = boost::shared_ptr<void>; // Pool_arena::Handle
static_assert(sizeof(Handle) == sizeof(shmb_fipc_classic_handle_t::handle),
              "shmb_fipc_classic_handle_t holds a boost::shared_ptr");

using Activator = shmb_fipc::Activator<shmb_fipc_classic_objects>; // Pool_arena_activator
using shmb_fipc::Object;

// Handle_in_shm<T>: the object first, its owner count after it.
size_t count_offset(size_t bytes)
{
    return (bytes + alignof(Owner_ct) - 1) / alignof(Owner_ct) * alignof(Owner_ct);
}

// handle_deleter_impl: the owner count - 1; the last owner destroys the
// object under the activator and deallocates. A deleter must not throw:
// a failed lock of the pool's mutex leaves the block allocated, uncounted.
void handle_deleter(shmb_fipc_classic_objects *a, Object *obj, Owner_ct *count) noexcept
{
    if (count->fetch_sub(1) != 1)
        return;
    {
        Activator ctx(a);
        obj->~Object();
    }
    count->~Owner_ct();
    int rc = shmb::guard([&] {
        a->pool->pool->deallocate(obj);
        return 0;
    });
    if (rc < 0) {
        shmb_error_record("deallocate", -rc, "an object's block");
        return;
    }
    a->freed.fetch_add(shmb_fipc_object_fault == SHMB_FIPC_OBJECT_FAULT_TWICE ? 2 : 1, std::memory_order_relaxed);
}

} // namespace

extern "C" {

int shmb_fipc_classic_objects_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_objects_t **out) noexcept
{
    if (!pool || !out)
        return -EINVAL;
    auto *o = new (std::nothrow) shmb_fipc_classic_objects;
    if (!o)
        return -ENOMEM;
    o->pool = pool;
    *out = o;
    return 0;
}

void shmb_fipc_classic_objects_destroy(shmb_fipc_classic_objects_t *o) noexcept
{
    delete o; // a kept copy's deleter frees its block here
}

// Pool_arena::construct: allocate (bipc::bad_alloc: -ENOMEM), the owner
// count made 1, T under the activator, the shared_ptr (its control block:
// operator new) aliased to the object. A throwing shared_ptr constructor
// ran the deleter: the block is freed.
int shmb_fipc_classic_object_new(shmb_fipc_classic_objects_t *o, size_t bytes, shmb_fipc_classic_handle_t *h) noexcept
{
    if (!o || !h || h->addr || bytes == 0 || bytes > shmb_fipc_classic_size(o->pool))
        return -EINVAL;
    return shmb::guard([&] {
        const size_t at = count_offset(bytes);
        void *raw = o->pool->pool->allocate(at + sizeof(Owner_ct));
        auto *count = new (static_cast<unsigned char *>(raw) + at) Owner_ct(1);
        Object *obj;
        {
            Activator ctx(o);
            obj = new (raw) Object();
        }
        boost::shared_ptr<Object> real(obj, [o, count](Object *p) { handle_deleter(o, p, count); });
        new (h->handle) Handle(std::move(real), raw);
        h->addr = raw;
        o->constructed.fetch_add(1, std::memory_order_relaxed);
        return 0;
    });
}

int shmb_fipc_classic_object_drop(shmb_fipc_classic_objects_t *o, shmb_fipc_classic_handle_t *h) noexcept
{
    return o ? shmb_fipc::object_drop(o->kept, h) : -EINVAL;
}

int shmb_fipc_classic_object_check(const shmb_fipc_classic_objects_t *o, const shmb_fipc_classic_handle_t *h,
                                   size_t bytes, char *why, size_t cap) noexcept
{
    if (!o || !h || !h->addr) {
        if (cap)
            std::snprintf(why, cap, "bipc_object: an empty handle");
        return -EPROTO;
    }
    const Handle &handle = shmb_fipc::handle_of<Handle>(h);
    auto *at = static_cast<unsigned char *>(h->addr), *base = o->pool->segment.base();
    const size_t size = o->pool->segment.size(), end = count_offset(bytes) + sizeof(Owner_ct);
    const char *wrong = nullptr;
    if (handle.get() != h->addr)
        wrong = "its shared_ptr points elsewhere";
    else if (at < base || end > size || size_t(at - base) > size - end)
        wrong = "it is not inside the pool";
    else if (handle.use_count() != 1)
        wrong = "its shared_ptr has other owners";
    else if (reinterpret_cast<Owner_ct *>(at + count_offset(bytes))->load() != 1)
        wrong = "its owner count in SHM is not 1";
    if (!wrong)
        return 0;
    if (cap)
        std::snprintf(why, cap, "bipc_object: object %p of %zu bytes: %s", h->addr, bytes, wrong);
    return -EPROTO;
}

void shmb_fipc_classic_objects_counts(const shmb_fipc_classic_objects_t *o, uint64_t *constructed,
                                      uint64_t *freed) noexcept
{
    *constructed = o ? o->constructed.load() : 0;
    *freed = o ? o->freed.load() : 0;
}

} // extern "C"
