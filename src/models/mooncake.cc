// mooncake: the entry points of Mooncake's model (docs/models.md): the
// relocate path of TENT's ShmTransport (mooncake_relocate.hpp) and one request
// sent through TENT's engine (mooncake_engine.hpp), in one translation unit.
#include "shmbench/mooncake.h"

#include "cxx_guard.hpp"
#include "mooncake_engine.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

struct shmb_mooncake {
    explicit shmb_mooncake(std::shared_ptr<tent::SegmentManager> metadata, const shmb_mooncake_ops_t &ops)
        : tent(std::move(metadata), ops)
    {
    }
    tent::ShmTransport tent;
};

struct shmb_mooncake_engine {
    explicit shmb_mooncake_engine(std::shared_ptr<tent::SegmentManager> metadata) : engine(std::move(metadata)) {}
    tent::TransferEngine engine;
};

namespace {

bool valid_buffers(const shmb_mooncake_buffer_t *buffers, size_t n)
{
    if (!buffers || n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (buffers[i].length == 0 || !buffers[i].shm_path)
            return false;
    return true;
}

int relocate_one(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len, void **out) noexcept
{
    return shmb::guard([&] {
        uint64_t dest = addr;
        tent::Status status = m->tent.relocateSharedMemoryAddress(dest, len, target_id);
        if (!status.ok())
            return status.errnum();
        *out = reinterpret_cast<void *>(dest);
        return 0;
    });
}

// A C caller may store any int in the opcode; loading an enum outside its
// enumerators' range is undefined in C++, so it is read as the int it is.
unsigned opcode_of(const shmb_mooncake_request_t *req)
{
    static_assert(sizeof(shmb_mooncake_opcode_t) == sizeof(int), "a C enum is an int");
    int op;
    std::memcpy(&op, &req->opcode, sizeof(op));
    return unsigned(op);
}

// Why a request failed: the translation's error, an unknown segment, or no
// registered buffer holding the target. Only a failed request asks.
int failure(tent::TransferEngine &engine, uint64_t target_id)
{
    if (engine.shm().call().last_error < 0)
        return engine.shm().call().last_error;
    return engine.segments().known(target_id) ? -EINVAL : -ENOENT;
}

// Descriptors as a caller of TENT sends them (SGLang's batch_transfer_sync):
// one batch of n, one submitTransfer of the vector, each task polled once
// (the SHM copy is synchronous), the batch freed.
int submit_n(tent::TransferEngine &engine, const shmb_mooncake_request_t *reqs, size_t n,
             const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out)
{
    tent::BatchID batch = engine.allocateBatch(n);
    if (!batch)
        return -ENOMEM;
    std::vector<tent::Request> request_list(n);
    for (size_t i = 0; i < n; i++) {
        tent::Request &request = request_list[i];
        request.opcode = opcode_of(&reqs[i]) == unsigned(SHMB_MOONCAKE_READ) ? tent::Request::READ
                                                                             : tent::Request::WRITE;
        request.source = reqs[i].source;
        request.target_id = reqs[i].target_id;
        request.target_offset = reqs[i].target_offset;
        request.length = size_t(reqs[i].length);
    }
    tent::ShmSubmitTransport::Call &call = engine.shm().call();
    call.hooks = hooks;
    call.last_error = 0;
    call.targets.clear();
    tent::Status status = engine.submitTransfer(batch, request_list);
    int ret = status.ok() ? 0 : status.errnum();
    for (size_t i = 0; i < n && ret == 0; i++) {
        tent::TransferStatus transfer{tent::PENDING, 0};
        status = engine.getTransferStatus(batch, int(i), transfer);
        if (!status.ok())
            ret = status.errnum();
        else if (transfer.s != tent::COMPLETED)
            ret = failure(engine, reqs[i].target_id);
        else if (out) {
            const auto &t = call.targets;
            out[i].target = reinterpret_cast<void *>(i < t.size() ? t[i] : 0);
            out[i].buffer_addr = engine.selected_buffer();
            out[i].transferred_bytes = transfer.transferred_bytes;
        }
    }
    engine.freeBatch(batch);
    return ret;
}

} // namespace

extern "C" {

int shmb_mooncake_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id, size_t other_segments,
                         const shmb_mooncake_ops_t *ops, shmb_mooncake_t **out) noexcept
{
    if (!valid_buffers(buffers, n) || !ops || !ops->attach || !out)
        return -EINVAL;
    return shmb::guard([&] {
        *out = new shmb_mooncake(tent::make_metadata(buffers, n, target_id, other_segments, nullptr, 0), *ops);
        return 0;
    });
}

void shmb_mooncake_destroy(shmb_mooncake_t *m) noexcept
{
    delete m;
}

int shmb_mooncake_relocate(shmb_mooncake_t *m, uint64_t target_id, uint64_t addr, uint64_t len,
                           void **out) noexcept
{
    if (!m || !out || len == 0)
        return -EINVAL;
    return relocate_one(m, target_id, addr, len, out);
}

uint64_t shmb_mooncake_relocate_batch(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests, size_t n) noexcept
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        void *p;
        if (shmb_mooncake_relocate(m, target_id, requests[i].addr, requests[i].len, &p) == 0)
            sum += reinterpret_cast<uint64_t>(p);
    }
    return sum;
}

uint64_t shmb_mooncake_relocate_chain(shmb_mooncake_t *m, uint64_t target_id,
                                      const shmb_lookup_request_t *requests,
                                      const uint64_t *expected, size_t n) noexcept
{
    uint64_t sum = 0, delta = 0;
    for (size_t i = 0; i < n; i++) {
        void *p = nullptr;
        shmb_mooncake_relocate(m, target_id, requests[i].addr + delta, requests[i].len, &p);
        const uint64_t got = reinterpret_cast<uint64_t>(p);
        delta = got - expected[i];
        sum += got;
    }
    return sum;
}

size_t shmb_mooncake_attached(const shmb_mooncake_t *m) noexcept
{
    return m ? m->tent.attached() : 0;
}

int shmb_mooncake_translate(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local) noexcept
{
    return shmb_mooncake_relocate(static_cast<shmb_mooncake_t *>(ctx), target_id, addr, len, local);
}

int shmb_mooncake_engine_create(const shmb_mooncake_buffer_t *buffers, size_t n, uint64_t target_id,
                                size_t other_segments, void *local_addr, uint64_t local_length,
                                shmb_mooncake_engine_t **out) noexcept
{
    if (!valid_buffers(buffers, n) || target_id == tent::LOCAL_SEGMENT_ID || (local_length && !local_addr) || !out)
        return -EINVAL;
    return shmb::guard([&] {
        *out = new shmb_mooncake_engine(
            tent::make_metadata(buffers, n, target_id, other_segments, local_addr, local_length));
        return 0;
    });
}

size_t shmb_mooncake_engine_buffers(shmb_mooncake_engine_t *e, uint64_t target_id) noexcept
{
    return !e ? 0 : shmb::guard_or<size_t>(0, [&] {
        size_t n = 0;
        tent::SegmentDescRef pin;
        e->engine.segments().withCachedSegment(target_id, pin, [&](tent::SegmentDesc *segment) {
            n = segment->getMemory().buffers.size();
            return tent::Status();
        });
        return n;
    });
}

void shmb_mooncake_engine_destroy(shmb_mooncake_engine_t *e) noexcept
{
    delete e;
}

int shmb_mooncake_engine_submit(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *req,
                                const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out) noexcept
{
    return shmb_mooncake_engine_submit_n(e, req, 1, hooks, out);
}

int shmb_mooncake_engine_submit_n(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *reqs, size_t n,
                                  const shmb_mooncake_hooks_t *hooks, shmb_mooncake_submitted_t *out) noexcept
{
    if (!e || !reqs || n == 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (reqs[i].length == 0 || opcode_of(&reqs[i]) > unsigned(SHMB_MOONCAKE_WRITE))
            return -EINVAL;
    return shmb::guard([&] { return submit_n(e->engine, reqs, n, hooks, out); });
}

uint64_t shmb_mooncake_engine_submit_batch(shmb_mooncake_engine_t *e, const shmb_mooncake_request_t *requests,
                                           size_t n, const shmb_mooncake_hooks_t *hooks) noexcept
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        shmb_mooncake_submitted_t done;
        if (shmb_mooncake_engine_submit(e, &requests[i], hooks, &done) == 0)
            sum += reinterpret_cast<uint64_t>(done.target) + done.buffer_addr;
    }
    return sum;
}

} // extern "C"
