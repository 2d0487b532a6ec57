// fipc_classic_lend: SHM-classic's object hand-off over its pool
// (pool_arena.hpp's lend_object / borrow_object, session_impl.hpp's scope id)
// and the borrower's attach of the pool by name.
#include "cxx_guard.hpp"
#include "fipc_classic_internal.hpp"
#include "fipc_internal.h"

#include <boost/shared_ptr.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <optional>

using namespace fipc_classic;

namespace {

using Owner_ct = std::atomic<unsigned>; // Handle_in_shm::Atomic_owner_ct
using scope_id_t = uint64_t;
constexpr scope_id_t kScopeSession = 0x01; // Session_impl::S_SCOPE_ID_SESSION
using Blob = std::unique_ptr<uint8_t[]>;   // flow::util::Blob: a heap buffer, not zeroed
using Handle = boost::shared_ptr<void>;    // Pool_arena::Handle
static_assert(sizeof(Handle) == sizeof(static_cast<shmb_fipc_classic_object_t *>(nullptr)->owner),
              "shmb_fipc_classic_object_t holds a boost::shared_ptr");

// Handle_in_shm: the owner count and the object. Upstream puts the count
// after the object, whose type fixes its size; a byte buffer's size is not
// fixed, so here the count comes first and the bytes start kObjectOffset
// into the block (one allocation either way; the blob names the block).
struct Handle_state {
    Owner_ct owner_ct;
};
constexpr size_t kObjectOffset = 16;

Handle &owner_of(shmb_fipc_classic_object_t *obj)
{
    return *std::launder(reinterpret_cast<Handle *>(obj->owner));
}

Handle_state *state_of(const void *object)
{
    return reinterpret_cast<Handle_state *>(static_cast<unsigned char *>(const_cast<void *>(object)) -
                                            kObjectOffset);
}

} // namespace

// A process's Pool_arena over the pool: the lender's over the pool it
// created, a borrower's over its own mapping of it.
struct shmb_fipc_classic_arena {
    unsigned char *base = nullptr;
    size_t bytes = 0;
    Pool *pool = nullptr;      // the segment manager: the creator's, or own_pool
    std::optional<Pool> own_pool;
    std::atomic<uint64_t> frees{0};

    ~shmb_fipc_classic_arena()
    {
        if (own_pool) {
            own_pool.reset();
            shmb_fipc_classic_detach(base, bytes);
        }
    }

    // handle_deleter_impl: the owner count - 1; the last owner destroys the
    // object and deallocates (Pool_arena::deallocate: bipc deallocate under
    // the pool's mutex). A deleter must not throw: when the mutex's lock
    // does, the block stays allocated, uncounted, and the error is recorded.
    void handle_deleter(Handle_state *state) noexcept
    {
        if (state->owner_ct.fetch_sub(1) != 1)
            return;
        state->owner_ct.~Owner_ct();
        int rc = shmb::guard([&] {
            pool->deallocate(state);
            return 0;
        });
        if (rc < 0) {
            shmb_error_record("deallocate", -rc, "an object's block");
            return;
        }
        frees.fetch_add(shmb_fipc_fault == SHMB_FIPC_FAULT_DOUBLE_FREE ? 2 : 1);
    }

    // A boost::shared_ptr owning the block with handle_deleter, aliased to
    // the object's bytes, as construct and borrow_object return it.
    Handle make_handle(Handle_state *state, void *object)
    {
        boost::shared_ptr<Handle_state> real(state, [this](Handle_state *s) { handle_deleter(s); });
        return Handle(std::move(real), object);
    }

    bool inside(const void *p) const
    {
        auto at = static_cast<const unsigned char *>(p);
        return at >= base && at < base + bytes;
    }
};

extern "C" {

int shmb_fipc_classic_arena_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_arena_t **out) noexcept
{
    if (!pool || !out)
        return -EINVAL;
    auto *a = new (std::nothrow) shmb_fipc_classic_arena;
    if (!a)
        return -ENOMEM;
    a->base = pool->segment.base();
    a->bytes = pool->segment.size();
    a->pool = &*pool->pool;
    *out = a;
    return 0;
}

int shmb_fipc_classic_arena_open(const char *name, shmb_fipc_classic_arena_t **out) noexcept
{
    if (!name || !out)
        return -EINVAL;
    void *base = nullptr;
    size_t bytes = 0;
    int rc = shmb_fipc_classic_attach(name, &base, &bytes);
    if (rc < 0)
        return rc;
    if (bytes < kManagerOffset + Pool::segment_manager::get_min_size()) {
        shmb_fipc_classic_detach(base, bytes);
        return -EINVAL;
    }
    rc = shmb::guard([&] {
        auto a = std::make_unique<shmb_fipc_classic_arena>();
        a->base = static_cast<unsigned char *>(base);
        a->bytes = bytes;
        a->own_pool.emplace(bipc::open_only, a->base + kManagerOffset, bytes - kManagerOffset);
        a->pool = &*a->own_pool;
        *out = a.release();
        return 0;
    });
    if (rc < 0)
        shmb_fipc_classic_detach(base, bytes);
    return rc;
}

int shmb_fipc_classic_arena_destroy(shmb_fipc_classic_arena_t *a) noexcept
{
    if (!a)
        return 0;
    int rc = 0;
    if (a->own_pool) {
        a->own_pool.reset();
        rc = shmb_fipc_classic_detach(a->base, a->bytes);
    }
    delete a;
    return rc;
}

// Pool_arena::construct: allocate, the owner count made 1, the handle.
int shmb_fipc_classic_construct(shmb_fipc_classic_arena_t *a, size_t bytes,
                                shmb_fipc_classic_object_t *out) noexcept
{
    if (!a || !out || bytes == 0 || bytes > a->bytes)
        return -EINVAL;
    void *raw = nullptr;
    int rc = shmb::guard([&] {
        raw = a->pool->allocate(kObjectOffset + bytes); // bipc::bad_alloc: -ENOMEM
        return 0;
    });
    if (rc < 0)
        return rc;
    auto *state = new (raw) Handle_state{{1}};
    void *object = static_cast<unsigned char *>(raw) + kObjectOffset;
    rc = shmb::guard([&] {
        new (out->owner) Handle(a->make_handle(state, object)); // throwing, it ran the deleter: freed
        return 0;
    });
    if (rc < 0)
        return rc;
    out->addr = object;
    return 0;
}

// Session_impl::lend_object: is_handle_in_arena, then Pool_arena::
// lend_object (++owner count, the offset's Blob), then the Blob with the
// scope id after it.
int shmb_fipc_classic_lend(shmb_fipc_classic_arena_t *a, const shmb_fipc_classic_object_t *obj,
                           void *blob, size_t cap, size_t *len) noexcept
{
    if (!a || !obj || !obj->addr || !blob || !len || cap < SHMB_FIPC_CLASSIC_BLOB_BYTES ||
        !a->inside(obj->addr))
        return -EINVAL;
    return shmb::guard([&] {
        Handle_state *state = state_of(obj->addr);
        if (shmb_fipc_fault != SHMB_FIPC_FAULT_EARLY_FREE)
            ++state->owner_ct;
        ptrdiff_t offset = reinterpret_cast<unsigned char *>(state) - a->base;
        if (shmb_fipc_fault == SHMB_FIPC_FAULT_BLOB)
            offset += 64;
        Blob serialization(new uint8_t[sizeof(offset)]);
        std::memcpy(serialization.get(), &offset, sizeof(offset));
        Blob real(new uint8_t[sizeof(offset) + sizeof(scope_id_t)]);
        std::memcpy(real.get(), serialization.get(), sizeof(offset));
        std::memcpy(real.get() + sizeof(offset), &kScopeSession, sizeof(kScopeSession));
        std::memcpy(blob, real.get(), SHMB_FIPC_CLASSIC_BLOB_BYTES);
        *len = SHMB_FIPC_CLASSIC_BLOB_BYTES;
        return 0;
    });
}

int shmb_fipc_classic_blob_decode(const void *blob, size_t len, uint64_t *offset) noexcept
{
    ptrdiff_t at;
    scope_id_t scope;
    if (!blob || !offset || len != SHMB_FIPC_CLASSIC_BLOB_BYTES)
        return -EBADMSG;
    std::memcpy(&at, blob, sizeof(at));
    std::memcpy(&scope, static_cast<const unsigned char *>(blob) + sizeof(at), sizeof(scope));
    if (scope != kScopeSession || at < 0)
        return -EBADMSG;
    *offset = static_cast<uint64_t>(at);
    return 0;
}

// Session_impl::borrow_object (a copy of the Blob, the scope id read), then
// Pool_arena::borrow_object: base + offset and a handle like construct's.
// The range check is ours (upstream trusts its peer).
int shmb_fipc_classic_borrow(shmb_fipc_classic_arena_t *a, const void *blob, size_t len,
                             shmb_fipc_classic_object_t *out) noexcept
{
    if (!a || !blob || !out)
        return -EINVAL;
    return shmb::guard([&] {
        if (len != SHMB_FIPC_CLASSIC_BLOB_BYTES)
            return -EBADMSG;
        Blob real(new uint8_t[len]);
        std::memcpy(real.get(), blob, len);
        uint64_t offset;
        if (shmb_fipc_classic_blob_decode(real.get(), len, &offset) < 0 ||
            offset < kManagerOffset || offset + kObjectOffset >= a->bytes)
            return -EBADMSG;
        auto *state = reinterpret_cast<Handle_state *>(a->base + offset);
        unsigned char *object = a->base + offset + kObjectOffset +
                                (shmb_fipc_fault == SHMB_FIPC_FAULT_BORROW_ADDR ? 64 : 0);
        new (out->owner) Handle(a->make_handle(state, object));
        out->addr = object;
        return 0;
    });
}

void shmb_fipc_classic_release(shmb_fipc_classic_object_t *obj) noexcept
{
    if (!obj || !obj->addr)
        return;
    Handle &owner = owner_of(obj);
    owner.reset();
    owner.~Handle();
    obj->addr = nullptr;
}

unsigned shmb_fipc_classic_owners(const shmb_fipc_classic_object_t *obj) noexcept
{
    return obj && obj->addr ? state_of(obj->addr)->owner_ct.load() : 0;
}

uint64_t shmb_fipc_classic_frees(const shmb_fipc_classic_arena_t *a) noexcept
{
    return a ? a->frees.load() : 0;
}

} // extern "C"

namespace {

// The two arenas and two handles of shmb_fipc_classic_handoff_verify, let
// go in any case.
struct Verify_run {
    shmb_fipc_classic_arena_t *lender = nullptr, *borrower = nullptr;
    shmb_fipc_classic_object_t lent{}, borrowed{};
    ~Verify_run()
    {
        shmb_fipc_classic_release(&lent);
        shmb_fipc_classic_release(&borrowed);
        shmb_fipc_classic_arena_destroy(borrower);
        shmb_fipc_classic_arena_destroy(lender);
    }
};

// Lend, borrow, the lender's release, the borrower's, each checked.
int verify_steps(Verify_run &v, size_t bytes, size_t free_before)
{
    std::memset(v.lent.addr, 0xc3, bytes);
    unsigned char blob[SHMB_FIPC_CLASSIC_BLOB_BYTES];
    size_t len;
    uint64_t offset;
    int rc = shmb_fipc_classic_lend(v.lender, &v.lent, blob, sizeof(blob), &len);
    if (rc < 0)
        return rc;
    auto *block = reinterpret_cast<unsigned char *>(state_of(v.lent.addr));
    if (shmb_fipc_classic_blob_decode(blob, len, &offset) < 0 ||
        offset != static_cast<uint64_t>(block - v.lender->base))
        return -EBADMSG;
    if (shmb_fipc_classic_owners(&v.lent) != 2)
        return -ESTALE;
    if ((rc = shmb_fipc_classic_borrow(v.borrower, blob, len, &v.borrowed)) < 0)
        return rc;
    auto *p = static_cast<const unsigned char *>(v.borrowed.addr);
    if (p != v.borrower->base + offset + kObjectOffset ||
        std::count(p, p + bytes, 0xc3) != static_cast<std::ptrdiff_t>(bytes))
        return -EFAULT;
    shmb_fipc_classic_release(&v.lent);
    if (shmb_fipc_classic_owners(&v.borrowed) != 1 || shmb_fipc_classic_frees(v.lender) != 0 ||
        v.lender->pool->get_free_memory() >= free_before)
        return -ESTALE;
    shmb_fipc_classic_release(&v.borrowed);
    if (shmb_fipc_classic_frees(v.borrower) != 1 || shmb_fipc_classic_frees(v.lender) != 0 ||
        v.lender->pool->get_free_memory() != free_before)
        return -ESTALE;
    return 0;
}

} // namespace

extern "C" int shmb_fipc_classic_handoff_verify(shmb_fipc_classic_t *pool, size_t bytes) noexcept
{
    if (!pool || bytes == 0)
        return -EINVAL;
    return shmb::guard([&] {
        Verify_run v;
        int rc = shmb_fipc_classic_arena_create(pool, &v.lender);
        if (rc < 0 || (rc = shmb_fipc_classic_arena_open(pool->segment.name(), &v.borrower)) < 0)
            return rc;
        size_t free_before = v.lender->pool->get_free_memory();
        if ((rc = shmb_fipc_classic_construct(v.lender, bytes, &v.lent)) < 0)
            return rc;
        return verify_steps(v, bytes, free_before);
    });
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
