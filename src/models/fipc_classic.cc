// fipc_classic: Flow-IPC's SHM-classic pool (docs/models.md): create,
// allocate, free, the borrower's attach, the translation loops and the
// object layer (Flow-IPC/ipc_shm, src/ipc/shm/classic/pool_arena.{hpp,cpp}),
// one translation unit so that the pool's allocate inlines as it always did.
#include "cxx_guard.hpp"
#include "fipc_classic_internal.hpp"
#include "fipc_internal.h"
#include "fipc_objects.hpp"

#include <boost/shared_ptr.hpp>

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <vector>

using namespace fipc_classic;

namespace {

int build(const char *prefix, size_t pool_bytes, shmb_fipc_classic_t **out)
{
    auto p = std::make_unique<shmb_fipc_classic>();
    int rc = p->segment.create(prefix, pool_bytes);
    if (rc < 0)
        return rc;
    // Pool_arena(): m_pool.emplace(create_only, name, pool_sz, ...)
    p->pool.emplace(bipc::create_only, p->segment.base() + kManagerOffset, pool_bytes - kManagerOffset);
    *out = p.release();
    return 0;
}

bool inside(const shmb_fipc_classic_t *pool, const void *ptr)
{
    auto p = static_cast<const unsigned char *>(ptr);
    return p >= pool->segment.base() && p < pool->segment.base() + pool->segment.size();
}

} // namespace

extern "C" {

int shmb_fipc_classic_create(const char *prefix, size_t pool_bytes, shmb_fipc_classic_t **out) noexcept
{
    if (!out || pool_bytes < kManagerOffset + Pool::segment_manager::get_min_size())
        return -EINVAL;
    return shmb::guard([&] {
        return build(prefix, pool_bytes, out);
    });
}

int shmb_fipc_classic_destroy(shmb_fipc_classic_t *pool, int unlink_pool) noexcept
{
    if (!pool)
        return 0;
    // Pool_arena::~Pool_arena: the manager stays in the segment for others.
    pool->pool.reset();
    int rc = pool->segment.end(unlink_pool != 0);
    delete pool;
    return rc;
}

// Pool_arena::allocate (pool_arena.cpp), with logging off. The size check
// is ours: boost 1.74's rbtree_best_fit rounds SIZE_MAX up past zero and
// returns a small block for it.
int shmb_fipc_classic_alloc(shmb_fipc_classic_t *pool, size_t bytes, void **out) noexcept
{
    if (!pool || !out || bytes == 0)
        return -EINVAL;
    if (bytes > pool->segment.size())
        return -ENOMEM;
    return shmb::guard([&] {
        *out = pool->pool->allocate(bytes);
        return 0;
    });
}

// Pool_arena::deallocate (pool_arena.cpp), with logging off. The range check
// is ours: upstream only asserts that the pointer is not null.
int shmb_fipc_classic_free(shmb_fipc_classic_t *pool, void *ptr) noexcept
{
    if (!pool || !ptr || !inside(pool, ptr))
        return -EINVAL;
    return shmb::guard([&] {
        pool->pool->deallocate(ptr); // its interprocess mutex's lock may throw
        return 0;
    });
}

void *shmb_fipc_classic_base(const shmb_fipc_classic_t *pool) noexcept
{
    return pool ? pool->segment.base() : nullptr;
}

size_t shmb_fipc_classic_size(const shmb_fipc_classic_t *pool) noexcept
{
    return pool ? pool->segment.size() : 0;
}

size_t shmb_fipc_classic_free_bytes(const shmb_fipc_classic_t *pool) noexcept
{
    return pool && pool->pool ? pool->pool->get_free_memory() : 0;
}

const char *shmb_fipc_classic_name(const shmb_fipc_classic_t *pool) noexcept
{
    return pool ? pool->segment.name() : "";
}

// Pool_arena::borrow_object's arithmetic: the pool's base plus the offset
// the lender sent. Upstream checks nothing (it trusts its peer); the bounds
// check is ours. Upstream then wraps the block in a boost::shared_ptr with a
// custom deleter, which is not modelled here.
void *shmb_fipc_classic_to_address(void *base, size_t pool_bytes, uint64_t offset, uint64_t len) noexcept
{
    if (len == 0 || offset > pool_bytes || len > pool_bytes - offset)
        return nullptr;
    return static_cast<unsigned char *>(base) + offset;
}

uint64_t shmb_fipc_classic_translate_batch(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests, size_t n) noexcept
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += reinterpret_cast<uintptr_t>(
            shmb_fipc_classic_to_address(base, pool_bytes, requests[i].pool_offset, requests[i].len));
    return sum;
}

uint64_t shmb_fipc_classic_translate_chain(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests,
                                           const uint64_t *expected, size_t n) noexcept
{
    uint64_t sum = 0, delta = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t got = reinterpret_cast<uintptr_t>(shmb_fipc_classic_to_address(
            base, pool_bytes, requests[i].pool_offset + delta, requests[i].len));
        delta = got - expected[i];
        sum += got;
    }
    return sum;
}

} // extern "C"

namespace {

// The pool's interprocess mutex (boost 1.74: the segment manager's first
// subobject is rbtree_best_fit's header, which derives from the mutex, a
// posix_mutex holding one pthread_mutex_t).
pthread_mutex_t *pool_mutex(shmb_fipc_classic_t *pool)
{
    static_assert(sizeof(bipc::interprocess_mutex) == sizeof(pthread_mutex_t),
                  "boost's interprocess_mutex is a pthread mutex");
    return reinterpret_cast<pthread_mutex_t *>(pool->pool->get_segment_manager());
}

// pthread_mutex_init of m as boost makes it (process-shared), or of the
// given type.
int remake_mutex(pthread_mutex_t *m, int type)
{
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);
    if (err != 0)
        return -err;
    err = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    if (err == 0)
        err = pthread_mutexattr_settype(&attr, type);
    if (err == 0 && (err = pthread_mutex_destroy(m)) == 0)
        err = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return -err;
}

} // namespace

extern "C" int shmb_fipc_classic_break_lock(shmb_fipc_classic_t *pool)
{
    pthread_mutex_t *m = pool_mutex(pool);
    int rc = remake_mutex(m, PTHREAD_MUTEX_ERRORCHECK);
    return rc < 0 ? rc : -pthread_mutex_lock(m);
}

extern "C" int shmb_fipc_classic_mend_lock(shmb_fipc_classic_t *pool)
{
    pthread_mutex_t *m = pool_mutex(pool);
    int err = pthread_mutex_unlock(m);
    return err != 0 ? -err : remake_mutex(m, PTHREAD_MUTEX_DEFAULT);
}

// ---- the object layer: Pool_arena::construct (pool_arena.hpp) ----

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
