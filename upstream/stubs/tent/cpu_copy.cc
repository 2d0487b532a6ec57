// Stand-in, written for shmbench, for TENT's CPU platform's allocate, free
// and copy (kvcache-ai/Mooncake, mooncake-transfer-engine/tent/src/platform/
// cpu_allocator.cpp), compiled instead of that file when TENT is built from
// the user's Mooncake (docs/upstream.md). copy, which the
// SHM transport calls for every request (ShmTransport::startTransfer), does
// not move the bytes: the suite times the request path and relocation apart
// from the copy, which its copy rows measure. It consumes both addresses, so
// the compiler cannot drop the relocation that produced them, and records
// the last destination so that a test can check where a request landed.
#include "tent/common/status.h"
#include "tent/platform/cpu.h"

namespace mooncake {
namespace tent {

// The destination and length of the last copy (read by src/upstream_tent.cc).
thread_local void *shmb_last_copy_dst = nullptr;
thread_local size_t shmb_last_copy_len = 0;

// TENT's own allocations of DRAM (staging buffers) are not on the measured
// path; a call says so rather than allocating differently from upstream.
Status CpuPlatform::allocate(void **pptr, size_t size, MemoryOptions &options)
{
    (void)pptr, (void)size, (void)options;
    return Status::NotImplemented("CpuPlatform::allocate is not part of shmbench's TENT subset" LOC_MARK);
}

Status CpuPlatform::free(void *ptr, size_t size)
{
    (void)ptr, (void)size;
    return Status::NotImplemented("CpuPlatform::free is not part of shmbench's TENT subset" LOC_MARK);
}

Status CpuPlatform::copy(void *dst, void *src, size_t length)
{
    asm volatile("" : : "r"(dst), "r"(src), "r"(length) : "memory");
    shmb_last_copy_dst = dst;
    shmb_last_copy_len = length;
    return Status::OK();
}

} // namespace tent
} // namespace mooncake
