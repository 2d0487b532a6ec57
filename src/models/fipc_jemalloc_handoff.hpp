// fipc_jemalloc_handoff: what both sides of SHM-jemalloc's object hand-off
// share: the session's messages, the handle blob, and the shared_ptr a
// shmb_fipc_object_t holds. C++ only, not installed.
#ifndef SHMBENCH_FIPC_JEMALLOC_HANDOFF_HPP
#define SHMBENCH_FIPC_JEMALLOC_HANDOFF_HPP

#include "shmbench/fipc_jemalloc.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

// An anonymous namespace, as when both sides were one file: the members
// that take these types keep internal linkage, so gcc still inlines them
// into the timed entry points (lend, on_return) as before the split.
namespace {

using Collection_id = uint32_t;  // ipc::shm::arena_lend::Collection_id
using pool_offset_t = int32_t;   // Shm_pool::size_t
using Blob = std::unique_ptr<uint8_t[]>; // flow::util::Blob: a heap buffer, not zeroed

enum Msg_type : uint32_t { LEND_ARENA = 1, LEND_POOL = 2, RESPONSE = 3, RETURN_OBJECT = 4 };

// Shm_session::Shm_object_handle, the blob's bytes.
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
struct Lend_pool_head { // then the pool's name, to the message's end
    uint32_t type;
    Collection_id collection_id;
    uint32_t pool_id;
    uint32_t reserved; // 0: no padding byte leaves this process unwritten
    uint64_t size;
};
static_assert(sizeof(Lend_pool_head) == 24, "LendPool's name starts at byte 24");
struct Two_words {
    uint32_t type;
    uint32_t value; // LendArena: the collection; Response: success
};

template <typename T> inline bool read_msg(const void *msg, size_t len, uint32_t type, T *out)
{
    if (!msg || len < sizeof(T))
        return false;
    std::memcpy(out, msg, sizeof(T));
    return out->type == type;
}

template <typename T> inline size_t write_msg(void *msg, const T &m)
{
    std::memcpy(msg, &m, sizeof(T));
    return sizeof(T);
}

using Object_ptr = std::shared_ptr<void>;
static_assert(sizeof(Object_ptr) == sizeof(static_cast<shmb_fipc_object_t *>(nullptr)->owner),
              "shmb_fipc_object_t holds a shared_ptr");

inline Object_ptr &owner_of(shmb_fipc_object_t *obj)
{
    return *std::launder(reinterpret_cast<Object_ptr *>(obj->owner));
}

inline const Object_ptr &owner_of(const shmb_fipc_object_t *obj)
{
    return *std::launder(reinterpret_cast<const Object_ptr *>(obj->owner));
}

// Places p in an empty *obj.
inline void hold(shmb_fipc_object_t *obj, Object_ptr &&p, void *addr)
{
    new (obj->owner) Object_ptr(std::move(p));
    obj->addr = addr;
}

} // namespace

namespace shmb_fipc {

// The collection (arena) id of the lender's session, for the verification.
uint32_t lender_collection_id(const shmb_fipc_lender_t *l);


} // namespace shmb_fipc

#endif
