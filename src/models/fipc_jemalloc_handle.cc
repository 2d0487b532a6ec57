// fipc_jemalloc_handle: the handle blob of a place in a lender's arena, as
// Shm_session::lend_object writes it (Flow-IPC/ipc_shm_arena_lend,
// src/ipc/session/standalone/shm/arena_lend/jemalloc/shm_session.cpp), for
// a driver that checks what a borrower reaches through the pools lent to
// it (the lookup's first attach) without lending an object there.
#include "fipc_jemalloc_handoff.hpp"

#include <cerrno>
#include <cstdint>

int shmb_fipc_lender_handle(const shmb_fipc_lender_t *l, uint32_t pool_id, uint64_t offset, void *blob, size_t cap,
                            size_t *len) noexcept
{
    if (!l || !blob || !len || cap < SHMB_FIPC_HANDLE_BYTES || offset > INT32_MAX)
        return -EINVAL;
    const Object_handle h{shmb_fipc::lender_collection_id(l), pool_id, static_cast<pool_offset_t>(offset)};
    *len = write_msg(blob, h);
    return 0;
}
