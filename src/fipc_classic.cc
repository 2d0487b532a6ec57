// fipc_classic: Flow-IPC's SHM-classic pool (a system model, C++17 behind
// shmbench/fipc_classic.h).
//
// Upstream: Flow-IPC/ipc_shm, src/ipc/shm/classic/pool_arena.{hpp,cpp}.
// Pool_arena holds std::optional<Pool> m_pool, Pool being
// bipc::basic_managed_shared_memory<char, rbtree_best_fit<mutex_family>,
// null_index>; allocate(n) is m_pool->allocate(n), which throws
// bipc::bad_alloc when the pool cannot serve n, deallocate(p) is
// m_pool->deallocate(p); lend_object / borrow_object turn a block into its
// offset from the pool's base and back.
//
// The suite only ever opens SHM it created itself (O_CREAT|O_EXCL, 0600,
// registered so that a signal unlinks it), so the segment comes from
// shmbench/segment.h and the manager is placed in it with
// basic_managed_external_buffer<char, rbtree_best_fit<mutex_family>,
// null_index>: the same segment_manager, the same allocation algorithm, the
// same interprocess mutex around every allocate and deallocate. As
// managed_shared_memory does, the manager starts ManagedOpenOrCreateUserOffset
// bytes into the mapping (where boost keeps its initialisation word) and the
// descriptor is closed once the segment is mapped.
#include "shmbench/fipc_classic.h"

#include "shmbench/error.h"
#include "shmbench/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/indexes/null_index.hpp>
#include <boost/interprocess/managed_external_buffer.hpp>
#include <boost/interprocess/managed_shared_memory.hpp>
#include <boost/interprocess/mem_algo/rbtree_best_fit.hpp>
#include <boost/interprocess/sync/mutex_family.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>

namespace {

namespace bipc = boost::interprocess;

using Algorithm = bipc::rbtree_best_fit<bipc::mutex_family>;
using Pool = bipc::basic_managed_external_buffer<char, Algorithm, bipc::null_index>;

// Where basic_managed_shared_memory puts its segment manager in the mapping.
constexpr size_t kManagerOffset =
    bipc::ipcdetail::shmem_open_or_create<Algorithm>::type::ManagedOpenOrCreateUserOffset;

// The pool's SHM segment: destroyed (unmapped, unlinked) with its owner
// unless handed over to destroy().
class Segment {
public:
    Segment() = default;
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;
    ~Segment()
    {
        if (live_)
            shmb_segment_destroy(&seg_, nullptr);
    }

    int create(const char *prefix, size_t bytes)
    {
        int rc = shmb_segment_create(&seg_, prefix, bytes, nullptr, nullptr);
        if (rc < 0)
            return rc;
        live_ = true;
        if ((rc = reserve_headers()) < 0)
            return rc;
        rc = shmb_segment_map(&seg_, nullptr);
        if (rc < 0)
            return rc;
        return shmb_segment_close(&seg_, nullptr);
    }

    // Unmaps, and unlinks or leaves the name in /dev/shm.
    int end(bool unlink_name)
    {
        live_ = false;
        return unlink_name ? shmb_segment_destroy(&seg_, nullptr) : shmb_segment_release(&seg_);
    }

    unsigned char *base() const { return static_cast<unsigned char *>(seg_.addr); }
    size_t size() const { return seg_.size; }
    const char *name() const { return seg_.name; }

private:
    // The pages the manager writes when it is built: its header at the start,
    // rbtree_best_fit's end block in the last page. Reserved (posix_fallocate,
    // a deliberate difference from upstream), so that a full /dev/shm is
    // -ENOSPC here, not a SIGBUS inside boost. The blocks' pages stay sparse:
    // their first write is the caller's (timed by --touch, guarded there).
    int reserve_headers()
    {
        const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const size_t head = (kManagerOffset + sizeof(Pool::segment_manager) + 2 * page - 1) / page * page;
        const size_t tail = seg_.size > head ? (seg_.size - 1) / page * page : seg_.size;
        int err = posix_fallocate(seg_.fd, 0, static_cast<off_t>(std::min(head, seg_.size)));
        if (err == 0 && tail < seg_.size)
            err = posix_fallocate(seg_.fd, static_cast<off_t>(tail), static_cast<off_t>(seg_.size - tail));
        return err ? shmb_error_record("posix_fallocate", err, seg_.name) : 0;
    }

    shmb_segment_t seg_{};
    bool live_ = false;
};

} // namespace

struct shmb_fipc_classic {
    Segment segment;
    std::optional<Pool> pool; // Pool_arena::m_pool
};

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

// The entry points catch every exception; they cannot be declared noexcept
// because the C header's declarations are not.
extern "C" {

int shmb_fipc_classic_create(const char *prefix, size_t pool_bytes, shmb_fipc_classic_t **out)
{
    if (!out || pool_bytes < kManagerOffset + Pool::segment_manager::get_min_size())
        return -EINVAL;
    try {
        return build(prefix, pool_bytes, out);
    } catch (const std::bad_alloc &) {
        return -ENOMEM;
    } catch (...) {
        return -EINVAL; // the manager did not fit
    }
}

int shmb_fipc_classic_destroy(shmb_fipc_classic_t *pool, int unlink_pool)
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
int shmb_fipc_classic_alloc(shmb_fipc_classic_t *pool, size_t bytes, void **out)
{
    if (!pool || !out || bytes == 0)
        return -EINVAL;
    if (bytes > pool->segment.size())
        return -ENOMEM;
    try {
        *out = pool->pool->allocate(bytes);
        return 0;
    } catch (...) {
        return -ENOMEM; // bipc::bad_alloc
    }
}

// Pool_arena::deallocate (pool_arena.cpp), with logging off. The range check
// is ours: upstream only asserts that the pointer is not null.
int shmb_fipc_classic_free(shmb_fipc_classic_t *pool, void *ptr)
{
    if (!pool || !ptr || !inside(pool, ptr))
        return -EINVAL;
    pool->pool->deallocate(ptr);
    return 0;
}

void *shmb_fipc_classic_base(const shmb_fipc_classic_t *pool)
{
    return pool ? pool->segment.base() : nullptr;
}

size_t shmb_fipc_classic_size(const shmb_fipc_classic_t *pool)
{
    return pool ? pool->segment.size() : 0;
}

const char *shmb_fipc_classic_name(const shmb_fipc_classic_t *pool)
{
    return pool ? pool->segment.name() : "";
}

// The borrower's Pool_arena(open_only): basic_managed_shared_memory opens the
// object read-write, learns its size with fstat (shared_memory_object::
// get_size), maps all of it and closes the descriptor (a managed shared
// memory keeps only its mapped_region). The segment manager is already in
// the pool: a borrower only adds offsets to its base.
int shmb_fipc_classic_attach(const char *name, void **base, size_t *bytes)
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

int shmb_fipc_classic_detach(void *base, size_t bytes)
{
    if (munmap(base, bytes) != 0)
        return shmb_error_record("munmap", errno, "a borrowed pool");
    return 0;
}

// Pool_arena::borrow_object's arithmetic: the pool's base plus the offset
// the lender sent. Upstream checks nothing (it trusts its peer); the bounds
// check is ours. Upstream then wraps the block in a boost::shared_ptr with a
// custom deleter, which is not modelled here.
void *shmb_fipc_classic_to_address(void *base, size_t pool_bytes, uint64_t offset, uint64_t len)
{
    if (len == 0 || offset > pool_bytes || len > pool_bytes - offset)
        return nullptr;
    return static_cast<unsigned char *>(base) + offset;
}

uint64_t shmb_fipc_classic_translate_batch(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += reinterpret_cast<uintptr_t>(
            shmb_fipc_classic_to_address(base, pool_bytes, requests[i].pool_offset, requests[i].len));
    return sum;
}

uint64_t shmb_fipc_classic_translate_chain(void *base, size_t pool_bytes,
                                           const shmb_lookup_request_t *requests,
                                           const uint64_t *expected, size_t n)
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

// ---- object hand-off (Pool_arena::lend_object / borrow_object) ----
//
// Upstream: Flow-IPC/ipc_shm, src/ipc/shm/classic/pool_arena.hpp
// (Handle_in_shm, construct, lend_object, borrow_object,
// handle_deleter_impl) and pool_arena.cpp (deallocate);
// src/ipc/session/detail/shm/classic/session_impl.hpp (lend_object and
// borrow_object: the scope id after the arena's blob).

#include <boost/shared_ptr.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "fipc_internal.h"

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
    // the pool's mutex).
    void handle_deleter(Handle_state *state)
    {
        if (state->owner_ct.fetch_sub(1) != 1)
            return;
        state->owner_ct.~Owner_ct();
        pool->deallocate(state);
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

int shmb_fipc_classic_arena_create(shmb_fipc_classic_t *pool, shmb_fipc_classic_arena_t **out)
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

int shmb_fipc_classic_arena_open(const char *name, shmb_fipc_classic_arena_t **out)
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
    try {
        auto a = std::make_unique<shmb_fipc_classic_arena>();
        a->base = static_cast<unsigned char *>(base);
        a->bytes = bytes;
        a->own_pool.emplace(bipc::open_only, a->base + kManagerOffset, bytes - kManagerOffset);
        a->pool = &*a->own_pool;
        *out = a.release();
        return 0;
    } catch (...) {
        shmb_fipc_classic_detach(base, bytes);
        return -ENOMEM;
    }
}

void shmb_fipc_classic_arena_destroy(shmb_fipc_classic_arena_t *a)
{
    delete a;
}

// Pool_arena::construct: allocate, the owner count made 1, the handle.
int shmb_fipc_classic_construct(shmb_fipc_classic_arena_t *a, size_t bytes,
                                shmb_fipc_classic_object_t *out)
{
    if (!a || !out || bytes == 0 || bytes > a->bytes)
        return -EINVAL;
    void *raw;
    try {
        raw = a->pool->allocate(kObjectOffset + bytes);
    } catch (...) {
        return -ENOMEM; // bipc::bad_alloc
    }
    auto *state = new (raw) Handle_state{{1}};
    void *object = static_cast<unsigned char *>(raw) + kObjectOffset;
    try {
        new (out->owner) Handle(a->make_handle(state, object));
    } catch (...) {
        return -ENOMEM; // the shared_ptr's constructor ran the deleter: freed
    }
    out->addr = object;
    return 0;
}

// Session_impl::lend_object: is_handle_in_arena, then Pool_arena::
// lend_object (++owner count, the offset's Blob), then the Blob with the
// scope id after it.
int shmb_fipc_classic_lend(shmb_fipc_classic_arena_t *a, const shmb_fipc_classic_object_t *obj,
                           void *blob, size_t cap, size_t *len)
{
    if (!a || !obj || !obj->addr || !blob || !len || cap < SHMB_FIPC_CLASSIC_BLOB_BYTES ||
        !a->inside(obj->addr))
        return -EINVAL;
    try {
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
    } catch (...) {
        return -ENOMEM;
    }
}

int shmb_fipc_classic_blob_decode(const void *blob, size_t len, uint64_t *offset)
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
                             shmb_fipc_classic_object_t *out)
{
    if (!a || !blob || !out)
        return -EINVAL;
    try {
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
    } catch (...) {
        return -ENOMEM;
    }
}

void shmb_fipc_classic_release(shmb_fipc_classic_object_t *obj)
{
    if (!obj || !obj->addr)
        return;
    Handle &owner = owner_of(obj);
    owner.reset();
    owner.~Handle();
    obj->addr = nullptr;
}

unsigned shmb_fipc_classic_owners(const shmb_fipc_classic_object_t *obj)
{
    return obj && obj->addr ? state_of(obj->addr)->owner_ct.load() : 0;
}

uint64_t shmb_fipc_classic_frees(const shmb_fipc_classic_arena_t *a)
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

extern "C" int shmb_fipc_classic_handoff_verify(shmb_fipc_classic_t *pool, size_t bytes)
{
    if (!pool || bytes == 0)
        return -EINVAL;
    try {
        Verify_run v;
        int rc = shmb_fipc_classic_arena_create(pool, &v.lender);
        if (rc < 0 || (rc = shmb_fipc_classic_arena_open(pool->segment.name(), &v.borrower)) < 0)
            return rc;
        size_t free_before = v.lender->pool->get_free_memory();
        if ((rc = shmb_fipc_classic_construct(v.lender, bytes, &v.lent)) < 0)
            return rc;
        return verify_steps(v, bytes, free_before);
    } catch (...) {
        return -ENOMEM;
    }
}
