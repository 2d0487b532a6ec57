// fipc_jemalloc_borrow: the borrower's side of SHM-jemalloc's object hand-off
// (receive_arena, receive_shm_pool, borrow_object, return_object) and the
// release of either side's object.
#include "cxx_guard.hpp"
#include "fipc_internal.h"
#include "fipc_jemalloc_handoff.hpp"

#include "shmbench/error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

int shmb_fipc_pool_attach(const char *name, uint64_t bytes, void **base, int *fd) noexcept
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

int shmb_fipc_pool_detach(void *base, uint64_t bytes, int fd) noexcept
{
    int rc = 0;
    if (munmap(base, static_cast<size_t>(bytes)) != 0)
        rc = shmb_error_record("munmap", errno, "a borrowed pool");
    if (close(fd) != 0 && rc == 0)
        rc = shmb_error_record("close", errno, "a borrowed pool");
    return rc;
}

namespace {

// What the borrower mapped of a lent pool (Borrower_shm_pool_collection's
// Shm_pool): unmapped when its last holder lets go.
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

// Borrower_collection: pools by id, each with its borrowed offsets and how
// many times each is borrowed.
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

// Where a deleter "sends" its ReturnObject: shmb_fipc_object_release
// hands it to the caller, who carries it to the lender.
struct Outbox {
    unsigned char bytes[SHMB_FIPC_MSG_MAX];
    size_t len;
};
thread_local Outbox outbox;

// Borrower_shm_pool_collection::Object_releaser: the deleter of a borrowed
// object, running the session's release callback.
struct Object_releaser {
    std::function<void(void *)> callback; // Release_callback
    void operator()(void *p) const { callback(p); }
};

// Shm_session's borrower half: Shm_session_data's m_borrower_mutex and
// m_borrower_collection_map; shared, as every borrowed object's deleter
// holds it.
struct Borrower_session : std::enable_shared_from_this<Borrower_session> {
    std::atomic<bool> connected{true};
    std::mutex borrower_mutex;
    std::unordered_map<Collection_id, std::unique_ptr<Borrower_collection>> borrower_collection_map;

    bool receive_arena(Collection_id id);
    bool receive_shm_pool(const Lend_pool_head &head, const std::string &name);
    unsigned char *register_borrower_object(const Object_handle &h);
    void return_object(const Object_handle &h) noexcept;
};

// Shm_session::receive_arena: register_borrower_collection.
bool Borrower_session::receive_arena(Collection_id id)
{
    std::lock_guard<std::mutex> lock(borrower_mutex);
    return borrower_collection_map.emplace(id, std::make_unique<Borrower_collection>()).second;
}

// Shm_session::receive_shm_pool: the pool opened and mapped (upstream's
// borrower repository, shm_open + mmap read-only), then
// register_borrower_shm_pool.
bool Borrower_session::receive_shm_pool(const Lend_pool_head &head, const std::string &name)
{
    void *base;
    int fd;
    if (shmb_fipc_pool_attach(name.c_str(), head.size, &base, &fd) < 0)
        return false;
    auto pool = shmb::undo_on_throw(
        [&] { return std::make_shared<Borrowed_pool>(head.pool_id, base, head.size, fd); },
        [&] { shmb_fipc_pool_detach(base, head.size, fd); });
    std::lock_guard<std::mutex> lock(borrower_mutex);
    auto it = borrower_collection_map.find(head.collection_id);
    return it != borrower_collection_map.end() &&
           it->second->pools.emplace(head.pool_id, Borrower_collection::Shm_pool_data{pool, {}}).second;
}

// Shm_session_data::construct_and_register_borrower_object up to the
// address: the lock, the collection, the pool, the offset counted in.
// Returns the object's address in this mapping, or NULL.
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

// Shm_session::return_object: deregister_borrower_object under the lock,
// then the ReturnObject message (send_message: here, into the outbox). It
// runs in a deleter, which must not throw: when the lock does, the object
// stays registered, no message is written, and the error is recorded.
void Borrower_session::return_object(const Object_handle &h) noexcept
{
    int rc = shmb::guard([&] {
        std::lock_guard<std::mutex> lock(borrower_mutex);
        auto it = borrower_collection_map.find(h.collection_id);
        return it != borrower_collection_map.end() && it->second->deregister_object(h.pool_id, h.pool_offset)
                   ? 0 : -ENOENT;
    });
    if (rc == -ENOENT)
        return;
    if (rc < 0) {
        shmb_error_record("return_object", -rc, "a borrowed object");
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

void shmb_fipc_borrower_disconnect(shmb_fipc_borrower_t *b) noexcept
{
    if (b)
        b->session->connected = false;
}

int shmb_fipc_borrower_create(shmb_fipc_borrower_t **out) noexcept
{
    if (!out)
        return -EINVAL;
    return shmb::guard([&] {
        auto b = std::make_unique<shmb_fipc_borrower>();
        b->session = std::make_shared<Borrower_session>();
        *out = b.release();
        return 0;
    });
}

int shmb_fipc_borrower_destroy(shmb_fipc_borrower_t *b) noexcept
{
    delete b;
    return 0;
}

// The handlers register_expected_messages installs for LendArena and
// LendPool, each answered with send_response.
int shmb_fipc_borrower_receive(shmb_fipc_borrower_t *b, const void *msg, size_t len, void *reply,
                               size_t cap, size_t *reply_len) noexcept
{
    if (!b || !msg || !reply || !reply_len || cap < SHMB_FIPC_MSG_MAX)
        return -EINVAL;
    return shmb::guard([&] {
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
    });
}

// borrow_object: the app's Blob of the received bytes,
// deserialize_handle (a size check and a memcpy), then
// construct_and_register_borrower_object with the release callback (a
// lambda holding the session and the handle, in a std::function). The
// shared_ptr is made after the lock (upstream: under it; the same work), so
// that its deleter, should making it throw, can take the lock.
int shmb_fipc_borrower_borrow(shmb_fipc_borrower_t *b, const void *blob, size_t len,
                              shmb_fipc_object_t *out) noexcept
{
    if (!b || !blob || !out)
        return -EINVAL;
    if (len != SHMB_FIPC_HANDLE_BYTES)
        return -EBADMSG;
    return shmb::guard([&] {
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
    });
}

int shmb_fipc_object_release(shmb_fipc_object_t *obj, void *msg, size_t cap, size_t *len) noexcept
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

int shmb_fipc_handle_decode(const void *blob, size_t len, shmb_fipc_handle_t *out) noexcept
{
    Object_handle h;
    if (!blob || !out || len != sizeof(h))
        return -EBADMSG;
    std::memcpy(&h, blob, sizeof(h));
    *out = shmb_fipc_handle_t{h.collection_id, h.pool_id, h.pool_offset};
    return 0;
}

int shmb_fipc_return_decode(const void *msg, size_t len, shmb_fipc_handle_t *out) noexcept
{
    Return_msg m;
    if (!out || len != sizeof(m) || !read_msg(msg, len, RETURN_OBJECT, &m))
        return -EBADMSG;
    *out = shmb_fipc_handle_t{m.handle.collection_id, m.handle.pool_id, m.handle.pool_offset};
    return 0;
}

const unsigned char *shmb_fipc_borrower_address(const shmb_fipc_borrower_t *b, const shmb_fipc_handle_t *h) noexcept
{
    Borrower_session &session = *b->session;
    std::lock_guard<std::mutex> lock(session.borrower_mutex);
    auto it = session.borrower_collection_map.find(h->collection_id);
    const Borrowed_pool *pool = it == session.borrower_collection_map.end()
                                    ? nullptr : it->second->find_shm_pool(h->pool_id);
    return pool ? pool->base + h->pool_offset : nullptr;
}
