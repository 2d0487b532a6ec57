// fipc_jemalloc_lend: the lender's side of SHM-jemalloc's object hand-off
// (Shm_session: lend_arena, lend_shm_pool, construct, lend,
// receive_object_return; docs/models.md); the borrower's is
// fipc_jemalloc_borrow.cc. Below them, the in-process check of one hand-off.
#define BOOST_THREAD_DONT_PROVIDE_INTERRUPTIONS
#include <boost/thread/locks.hpp>
#include <boost/thread/shared_mutex.hpp>

#include "cxx_guard.hpp"
#include "fipc_internal.h"
#include "fipc_jemalloc_handoff.hpp"
#include "fipc_jemalloc_internal.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

using namespace shmb_fipc;

namespace {

std::atomic<Collection_id> next_collection_id{1}; // Ipc_arena::m_collection_id_counter

// What the lender knows of one of its pools (ipc::shm::arena_lend::Shm_pool).
struct Lent_pool {
    uint32_t id;
    unsigned char *base;
    size_t size;
    std::string name;
};

// The arena as its objects' deleters hold it (Ipc_arena: an id, and the
// pool map Shm_pool_collection::lookup_shm_pool searches).
struct Arena {
    shmb_fipc_jemalloc *j;
    Collection_id id;
    mutable boost::shared_mutex pool_map_mutex;
    std::map<const void *, std::shared_ptr<Lent_pool>> pool_map;
    std::atomic<uint64_t> frees{0};

    std::shared_ptr<Lent_pool> lookup_shm_pool(const void *address) const;
};

// Shm_pool_collection::lookup_shm_pool: a read lock, map::lower_bound, the
// entry before it unless the bound is the pool itself, and its range.
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

// Ipc_arena's Ipc_object_deleter_no_cache: holds the arena (a shared_ptr,
// as upstream's shared_from_this()) and deallocates into it.
struct Object_deleter {
    std::shared_ptr<Arena> arena;
    void operator()(void *p) const
    {
        jemalloc_free(arena->j, p);
        arena->frees.fetch_add(shmb_fipc_fault == SHMB_FIPC_FAULT_DOUBLE_FREE ? 2 : 1);
    }
};

// Lender_collection: its pools by id, each with its lent objects by offset
// (the object's shared_ptr and how many times it is lent).
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

// Lender_collection::register_object: the pool holding the object
// (lookup_shm_pool), its offset (Shm_pool::determine_offset), then the
// object's entry: a new one holding a copy of its shared_ptr, or one more
// use.
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

// Lender_collection::deregister_object: one use less; the last moves the
// object's shared_ptr out to *out (the caller lets it go). Returns whether
// the object was lent.
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

// Shm_session's lender half: Shm_session_data's m_lender_mutex and
// m_lender_collection_map, over one arena.
struct shmb_fipc_lender {
    std::atomic<bool> connected{true}; // Shm_session::m_connected
    std::shared_ptr<Arena> arena;
    mutable std::mutex lender_mutex;
    std::unordered_map<Collection_id, std::unique_ptr<Lender_collection>> lender_collection_map;

    int lend_pool(const shmb_fipc_pool_t &info, unsigned char *base);
    int lend(const Object_ptr &object, Object_handle *handle);
    bool deregister_lender_object(const Object_handle &h, Object_ptr *out);
};

// The arena's pool map gets the pool (upstream: Shm_pool_collection::
// register_shm_pool, in the extent hook, under the write lock), then the
// session: Shm_session_data::register_lender_shm_pool.
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

// Shm_session::lend_object_impl up to serialize_handle:
// Ipc_arena::get_collection_id (std::get_deleter), then
// Shm_session_data::register_lender_object under m_lender_mutex.
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

// Shm_session_data::deregister_lender_object.
bool shmb_fipc_lender::deregister_lender_object(const Object_handle &h, Object_ptr *out)
{
    std::lock_guard<std::mutex> lock(lender_mutex);
    auto it = lender_collection_map.find(h.collection_id);
    return it != lender_collection_map.end() && it->second->deregister_object(h.pool_id, h.pool_offset, out);
}

int shmb_fipc_lender_create(shmb_fipc_jemalloc_t *j, shmb_fipc_lender_t **out) noexcept
{
    if (!j || !out)
        return -EINVAL;
    return shmb::guard([&] {
        auto l = std::make_unique<shmb_fipc_lender>();
        l->arena = std::make_shared<Arena>();
        l->arena->j = j;
        l->arena->id = next_collection_id.fetch_add(1);
        *out = l.release();
        return 0;
    });
}

int shmb_fipc_lender_destroy(shmb_fipc_lender_t *l) noexcept
{
    delete l;
    return 0;
}

// Shm_session::lend_arena: register_lender_collection, the LendArena
// request.
int shmb_fipc_lender_lend_arena(shmb_fipc_lender_t *l, void *msg, size_t cap, size_t *len) noexcept
{
    if (!l || !msg || !len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    return shmb::guard([&] {
        std::lock_guard<std::mutex> lock(l->lender_mutex);
        auto collection = std::make_unique<Lender_collection>();
        collection->arena = l->arena;
        if (!l->lender_collection_map.emplace(l->arena->id, std::move(collection)).second)
            return -EEXIST;
        *len = write_msg(msg, Two_words{LEND_ARENA, l->arena->id});
        return 0;
    });
}

int shmb_fipc_lender_lend_pool(shmb_fipc_lender_t *l, uint32_t pool_id, void *msg, size_t cap,
                               size_t *len) noexcept
{
    if (!l || !msg || !len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    return shmb::guard([&] {
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
    });
}

int shmb_fipc_lender_on_response(shmb_fipc_lender_t *l, const void *msg, size_t len) noexcept
{
    Two_words m;
    if (!l || !read_msg(msg, len, RESPONSE, &m))
        return -EBADMSG;
    return m.value ? 0 : -EREMOTEIO;
}

int shmb_fipc_lender_construct(shmb_fipc_lender_t *l, size_t bytes, shmb_fipc_object_t *out) noexcept
{
    if (!l || !out || bytes == 0)
        return -EINVAL;
    void *p;
    int rc = jemalloc_alloc(l->arena->j, bytes, &p);
    if (rc < 0)
        return rc;
    return shmb::guard([&] {
        hold(out, Object_ptr(p, Object_deleter{l->arena}), p);
        return 0;
    });
}

// lend_object_impl: the registration, then serialize_handle (a Blob the
// handle is written into), whose bytes go into the caller's message.
int shmb_fipc_lender_lend(shmb_fipc_lender_t *l, const shmb_fipc_object_t *obj, void *blob,
                          size_t cap, size_t *len) noexcept
{
    if (!l || !obj || !obj->addr || !blob || !len || cap < SHMB_FIPC_HANDLE_BYTES)
        return -EINVAL;
    return shmb::guard([&] {
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
    });
}

// receive_object_return: the object's shared_ptr comes out of the maps and
// goes at the end of the statement, after the lender's mutex is released,
// as upstream's `return bool(deregister_lender_object(...))`.
int shmb_fipc_lender_on_return(shmb_fipc_lender_t *l, const void *msg, size_t len) noexcept
{
    Return_msg m;
    if (!l || !read_msg(msg, len, RETURN_OBJECT, &m))
        return -EBADMSG;
    return shmb::guard([&] {
        Object_ptr object;
        return l->deregister_lender_object(m.handle, &object) ? 0 : -ENOENT;
    });
}

void shmb_fipc_lender_disconnect(shmb_fipc_lender_t *l) noexcept
{
    if (l)
        l->connected = false;
}

uint64_t shmb_fipc_lender_frees(const shmb_fipc_lender_t *l) noexcept
{
    return l ? l->arena->frees.load() : 0;
}

size_t shmb_fipc_lender_lent(const shmb_fipc_lender_t *l) noexcept
{
    if (!l)
        return 0;
    return shmb::guard_or<size_t>(0, [l] {
        std::lock_guard<std::mutex> lock(l->lender_mutex);
        size_t n = 0;
        for (const auto &collection : l->lender_collection_map)
            for (const auto &pool : collection.second->pools)
                n += pool.second.objects.size();
        return n;
    });
}

uint32_t shmb_fipc::lender_collection_id(const shmb_fipc_lender_t *l)
{
    return l->arena->id;
}

// ---- the in-process check of a hand-off: a lender and a borrower of one
// session (fipc_jemalloc_borrow.cc) passing one object there and back ----

namespace {

// The two sides of one in-process session for shmb_fipc_handoff_verify,
// and the objects it holds, let go in any case.
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

    // One synchronous request: the lender's message, the borrower's
    // handler, the reply back.
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

};

bool same_handle(const shmb_fipc_handle_t &a, const shmb_fipc_handle_t &b)
{
    return a.collection_id == b.collection_id && a.pool_id == b.pool_id && a.pool_offset == b.pool_offset;
}

// The lend, borrow, release and return of v.lent, checked.
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
    want.collection_id = shmb_fipc::lender_collection_id(v.lender);
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
    const unsigned char *expected = shmb_fipc_borrower_address(v.borrower, &want);
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

int shmb_fipc_handoff_verify(shmb_fipc_jemalloc_t *j, size_t bytes) noexcept
{
    if (!j || bytes == 0)
        return -EINVAL;
    return shmb::guard([&] {
        Verify_run v;
        int rc = shmb_fipc_lender_create(j, &v.lender);
        if (rc < 0 || (rc = shmb_fipc_borrower_create(&v.borrower)) < 0 ||
            (rc = shmb_fipc_lender_construct(v.lender, bytes, &v.lent)) < 0 ||
            (rc = v.lend_all_pools(j)) < 0)
            return rc;
        return verify_steps(v, j, bytes);
    });
}
