// shm_allocation_bench: what one SHM allocation costs, Mooncake's shm_open +
// ftruncate + mmap + close per buffer against Flow-IPC's pool allocators
// (boost.interprocess in one SHM pool; jemalloc over SHM pools), with an
// ideal arena as a reference point; and, with --allocator=ready, how long a
// pool takes to be ready on each backing and prefault method.
#include <vector>

#include "bench_common.h"
#include "runs.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_string(allocator, "posix,offset,arena,bipc,jemalloc,offset_bare,bipc_object,jemalloc_object",
              "Allocators to run: posix (Mooncake's registration: shm_open+ftruncate+mmap+close per "
              "buffer), offset (Mooncake Store's per-object OffsetBufferAllocator with its AllocatedBuffer inside "
              "one registered segment), arena (ideal lock-free pool: a reference point, not a bound), bipc "
              "(Flow-IPC SHM-classic's allocator: boost.interprocess rbtree_best_fit in one SHM pool), jemalloc "
              "(Flow-IPC SHM-jemalloc's allocator: mallocx, no thread cache), offset_bare (Mooncake's "
              "OffsetAllocator alone), bipc_object (SHM-classic's Pool_arena::construct: the object and its "
              "shared_ptr), jemalloc_object (SHM-jemalloc's Ipc_arena::construct); by name only: "
              "jemalloc_tcache (with a thread cache), ready (alone: time to ready of a pool of --pool_mb per "
              "--backing and --prefault), and space (alone: what offset, bipc and jemalloc hold of a pool of "
              "--pool_mb under Mooncake Store's KV mix, beside the ns of the same run)");

// The modes, picked once in main; each lists the flags it reads of those
// that some mode lists (a flag no mode lists: every mode reads it).
const std::vector<shmb::Mode> kModes = {
    {"the allocators",
     "allocator,num_iterations,min_size_kb,max_size_kb,min_ops,working_set,system,measure_mmap_only,cleanup,touch,"
     "threads,peer_process",
     shmb::RunAllocators},
    {"--allocator=ready", "allocator,backing,prefault,pool_mb,prefault_threads,hugepage_kb,pool_iterations,grow_block_kb",
     shmb::RunReady},
    {"--systems (a paired run)", "systems,system,num_iterations,min_size_kb,max_size_kb,min_ops,working_set",
     shmb::RunAllocators},
    {"--allocator=space", "allocator,pool_mb", shmb::RunSpace},
};

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM allocation cost: Mooncake's shm_open + ftruncate + mmap + close per buffer "
               "against Flow-IPC's pool allocators and an ideal arena.\n"
               "Usage: shm_allocation_bench [--flag=value ...]",
               __FILE__);
    return shmb::RunMode(kModes, shmb::InList(FLAGS_allocator, "ready")   ? 1
                              : shmb::InList(FLAGS_allocator, "space") ? 3
                              : FLAGS_systems.empty()                  ? 0
                                                                       : 2);
}
