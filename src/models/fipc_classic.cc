// fipc_classic: Flow-IPC's SHM-classic pool (docs/models.md): create,
// allocate, free, the borrower's attach and the translation loops
// (Flow-IPC/ipc_shm, src/ipc/shm/classic/pool_arena.{hpp,cpp}).
#include "cxx_guard.hpp"
#include "fipc_classic_internal.hpp"
#include "fipc_internal.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <new>

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

const char *shmb_fipc_classic_name(const shmb_fipc_classic_t *pool) noexcept
{
    return pool ? pool->segment.name() : "";
}

// The borrower's Pool_arena(open_only): basic_managed_shared_memory opens the
// object read-write, learns its size with fstat (shared_memory_object::
// get_size), maps all of it and closes the descriptor (a managed shared
// memory keeps only its mapped_region). The segment manager is already in
// the pool: a borrower only adds offsets to its base.
int shmb_fipc_classic_attach(const char *name, void **base, size_t *bytes) noexcept
{
    if (!name || !base || !bytes)
        return -EINVAL;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return shmb_error_record("shm_open", errno, name);
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0)
        rc = shmb_error_record("fstat", errno, name);
    else if (st.st_size <= 0)
        rc = -EINVAL;
    void *p = MAP_FAILED;
    if (rc == 0) {
        p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            rc = shmb_error_record("mmap", errno, name);
    }
    close(fd);
    if (rc < 0)
        return rc;
    *base = p;
    *bytes = static_cast<size_t>(st.st_size);
    return 0;
}

int shmb_fipc_classic_detach(void *base, size_t bytes) noexcept
{
    if (munmap(base, bytes) != 0)
        return shmb_error_record("munmap", errno, "a borrowed pool");
    return 0;
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
