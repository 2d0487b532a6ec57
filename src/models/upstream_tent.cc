// upstream_tent: TENT's own engine and SHM transport compiled from the user's
// Mooncake source (-DSHMB_MOONCAKE_TENT=ON) behind shmbench/upstream.h: a
// target and an initiator TransferEngineImpl in this process, the RPC agent
// and the copy stand-ins of upstream/stubs/tent/ (docs/upstream.md).
#include "shmbench/upstream.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tent/common/config.h"
#include "tent/runtime/control_plane.h"
#include "tent/runtime/transfer_engine_impl.h"
#include "tent/transport/shm/shm_transport.h"

#include "cxx_guard.hpp"
#include "shmbench/segment.h"

namespace mooncake::tent {
extern thread_local void *shmb_last_copy_dst; // upstream/stubs/tent/cpu_copy.cc
extern thread_local size_t shmb_last_copy_len;
} // namespace mooncake::tent

namespace mt = mooncake::tent;

namespace mooncake::tent {
// The test peer ShmTransport befriends (shm_transport.h) for its unit tests:
// the one way to call relocateSharedMemoryAddress on its own. Upstream
// defines it only in its test sources, none of which is compiled here.
class ShmTransportTestPeer {
   public:
    static Status relocate(ShmTransport &shm, uint64_t &addr, uint64_t length, uint64_t target_id)
    {
        return shm.relocateSharedMemoryAddress(addr, length, target_id);
    }
};
} // namespace mooncake::tent

struct shmb_upstream_tent {
    std::unique_ptr<mt::TransferEngineImpl> target;
    std::unique_ptr<mt::TransferEngineImpl> initiator;
    std::vector<void *> buffers; // in the target
    std::vector<int> slots;      // their names' and the source's in the segment registry (a
                                 // fatal signal unlinks them: TENT names them, not --shm_prefix)
    size_t buffer_bytes = 0;
    void *source = nullptr; // the initiator's registered source buffer
    size_t source_bytes = 0;
    mt::SegmentID segment = 0; // the target's segment, opened by the initiator
    // Relocation alone: an SHM transport of the initiator's kind, installed
    // over a control service of its own that has opened the target's segment
    // (the engine's transports are not reachable from outside).
    std::shared_ptr<mt::ControlService> control;
    std::unique_ptr<mt::ShmTransport> shm;
    mt::SegmentID shm_segment = 0;

    ~shmb_upstream_tent()
    {
        shm.reset();
        control.reset();
        if (initiator && source) {
            initiator->unregisterLocalMemory(source, source_bytes);
            initiator->freeLocalMemory(source);
        }
        if (target)
            for (void *b : buffers) {
                target->unregisterLocalMemory(b, buffer_bytes);
                target->freeLocalMemory(b);
            }
        initiator.reset();
        target.reset();
        for (int slot : slots)
            shmb_segment_disown(slot);
    }
};

// An engine as a Mooncake process on this machine would make it: p2p
// metadata (no metadata server), its RPC on the loopback address, the SHM
// transport enabled (with TCP, upstream's default).
static std::unique_ptr<mt::TransferEngineImpl> engine()
{
    auto conf = std::make_shared<mt::Config>();
    conf->set("metadata_type", std::string("p2p"));
    conf->set("rpc_server_hostname", std::string("127.0.0.1"));
    conf->set("log_level", std::string("warning"));
    // Opt-in upstream (transport_loader.cpp), as a deployment that uses it sets.
    conf->set("transports/shm/enable", true);
    auto e = std::make_unique<mt::TransferEngineImpl>(conf);
    return e->available() ? std::move(e) : nullptr;
}

// A registered buffer of `bytes` on CPU node 0, by the SHM transport: the
// options allocateLocalMemory fills (the buffer's shm_path) go to
// registerLocalMemory, without which ShmTransport::addMemoryBuffer does not
// list the buffer as reachable by SHM. Its name enters `slots` at once.
static int shm_buffer(mt::TransferEngineImpl &e, size_t bytes, void **addr, std::vector<int> &slots)
{
    mt::MemoryOptions options;
    options.type = mt::SHM;
    options.location = "cpu:0";
    // Created and adopted with the cleanup signals held, as the suite's own
    // segments are: no signal between TENT's shm_open and the registry.
    shmb_segment_hold_signals();
    const bool made = e.allocateLocalMemory(addr, bytes, options).ok();
    const int slot = made ? shmb_segment_adopt(options.shm_path.c_str()) : -ENOMEM;
    shmb_segment_release_signals();
    if (!made)
        return -ENOMEM;
    if (slot < 0) {
        e.freeLocalMemory(*addr);
        return slot;
    }
    slots.push_back(slot);
    if (!e.registerLocalMemory({*addr}, {bytes}, options).ok()) {
        e.freeLocalMemory(*addr);
        shmb_segment_disown(slot);
        slots.pop_back();
        return -EIO;
    }
    return 0;
}

extern "C" int shmb_upstream_tent_available(void) noexcept { return 1; }

extern "C" int shmb_upstream_tent_create(uint32_t buffers, size_t buffer_bytes, size_t source_bytes,
                                         shmb_upstream_tent_t **out) noexcept
{
    if (!out || buffers == 0 || buffer_bytes == 0 || source_bytes == 0)
        return -EINVAL;
    return shmb::guard([&] {
        auto t = std::make_unique<shmb_upstream_tent>();
        t->buffer_bytes = buffer_bytes;
        t->source_bytes = source_bytes;
        if (!(t->target = engine()) || !(t->initiator = engine()))
            return -EIO;
        t->buffers.reserve(buffers);
        t->slots.reserve(size_t(buffers) + 1);
        for (uint32_t i = 0; i < buffers; i++) {
            void *b = nullptr;
            int ret = shm_buffer(*t->target, buffer_bytes, &b, t->slots);
            if (ret)
                return ret;
            t->buffers.push_back(b);
        }
        int ret = shm_buffer(*t->initiator, source_bytes, &t->source, t->slots);
        if (ret)
            return ret;
        if (!t->initiator->openSegment(t->segment, t->target->getSegmentName()).ok())
            return -EIO;
        // Started and given its RPC address like an engine's
        // (setupLocalSegment), so that the segment cache subscribes to the
        // target's updates as upstream's does.
        t->control = std::make_shared<mt::ControlService>("p2p", "", nullptr);
        uint16_t port = 0;
        if (!t->control->start(port).ok())
            return -EIO;
        auto &manager = t->control->segmentManager();
        if (!manager
                 .updateLocal([&](mt::SegmentDesc &local) {
                     local.rpc_server_addr = "127.0.0.1:" + std::to_string(port);
                     return mt::Status::OK();
                 })
                 .ok() ||
            !manager.openRemote(t->shm_segment, t->target->getSegmentName()).ok())
            return -EIO;
        t->shm = std::make_unique<mt::ShmTransport>();
        std::string name = t->initiator->getSegmentName();
        if (!t->shm->install(name, t->control, t->initiator->getLocalTopology(), std::make_shared<mt::Config>()).ok())
            return -EIO;
        *out = t.release();
        return 0;
    });
}

extern "C" void shmb_upstream_tent_destroy(shmb_upstream_tent_t *t) noexcept
{
    shmb::guard_or(0, [&] {
        delete t;
        return 0;
    });
}

extern "C" void *shmb_upstream_tent_buffer(const shmb_upstream_tent_t *t, uint32_t buffer) noexcept
{
    return t && buffer < t->buffers.size() ? t->buffers[buffer] : nullptr;
}

extern "C" int shmb_upstream_tent_submit(shmb_upstream_tent_t *t, const uint32_t *buffer, const uint64_t *offset,
                                         uint32_t n, size_t bytes, void **landed) noexcept
{
    if (!t || !buffer || !offset || n == 0 || bytes == 0 || bytes > t->source_bytes)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (buffer[i] >= t->buffers.size() || offset[i] > t->buffer_bytes || bytes > t->buffer_bytes - offset[i])
            return -ERANGE;
    return shmb::guard([&] {
        // A thread's request vector, reused: the caller's side of the API,
        // not TENT's path, so it adds no allocation per call.
        thread_local std::vector<mt::Request> requests;
        requests.resize(n);
        for (uint32_t i = 0; i < n; i++) {
            auto &r = requests[i];
            r = mt::Request{};
            r.opcode = mt::Request::WRITE;
            r.source = t->source;
            r.target_id = t->segment;
            r.target_offset = (uint64_t)(uintptr_t)t->buffers[buffer[i]] + offset[i];
            r.length = bytes;
        }
        // Cleared first, so that a request the SHM copy never saw (another
        // transport chosen) lands nowhere rather than where the last did.
        mt::shmb_last_copy_dst = nullptr;
        mt::shmb_last_copy_len = 0;
        mt::BatchID batch = t->initiator->allocateBatch(n);
        if (!batch)
            return -ENOMEM;
        int ret = 0;
        if (!t->initiator->submitTransfer(batch, requests).ok())
            ret = -EIO;
        mt::TransferStatus status{};
        while (!ret) {
            if (!t->initiator->getTransferStatus(batch, status).ok() || status.s == mt::FAILED ||
                status.s == mt::CANCELED || status.s == mt::INVALID || status.s == mt::TIMEOUT)
                ret = -EIO;
            else if (status.s == mt::COMPLETED)
                break;
        }
        if (!t->initiator->freeBatch(batch).ok() && !ret)
            ret = -EIO;
        if (!ret && landed)
            *landed = mt::shmb_last_copy_len == bytes ? mt::shmb_last_copy_dst : nullptr;
        return ret;
    });
}

extern "C" int shmb_upstream_tent_relocate(shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset, size_t bytes,
                                           void **local) noexcept
{
    if (!t || !local || bytes == 0)
        return -EINVAL;
    if (buffer >= t->buffers.size() || offset > t->buffer_bytes || bytes > t->buffer_bytes - offset)
        return -ERANGE;
    return shmb::guard([&] {
        uint64_t addr = (uint64_t)(uintptr_t)t->buffers[buffer] + offset;
        if (!mt::ShmTransportTestPeer::relocate(*t->shm, addr, bytes, t->shm_segment).ok())
            return -EIO;
        *local = (void *)(uintptr_t)addr;
        return 0;
    });
}

extern "C" int shmb_upstream_tent_check(const shmb_upstream_tent_t *t, uint32_t buffer, uint64_t offset,
                                        const void *landed) noexcept
{
    if (!t || buffer >= t->buffers.size() || offset >= t->buffer_bytes)
        return -EINVAL;
    if (!landed)
        return -EFAULT;
    // Two fresh tags written through the target's own mapping of the buffer
    // must read back through the address the request landed on: the same
    // byte of the same shared memory.
    static thread_local uint8_t tag = 0x5a;
    volatile uint8_t *mine = (volatile uint8_t *)t->buffers[buffer] + offset;
    const volatile uint8_t *theirs = (const volatile uint8_t *)landed;
    for (int k = 0; k < 2; k++) {
        tag = (uint8_t)(tag * 33 + 17);
        *mine = tag;
        if (*theirs != tag)
            return -EFAULT;
    }
    return 0;
}
