// shm_allocation_bench: what one SHM allocation costs, Mooncake's shm_open +
// ftruncate + mmap + close per buffer against Flow-IPC's pool allocators
// (boost.interprocess in one SHM pool; jemalloc over SHM pools), with an
// ideal arena as a reference point; and, with --allocator=ready, how long a
// pool takes to be ready on each backing and prefault method.
#include <vector>

#include "bench_common.h"
#include "runs.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(num_iterations, 1000,
             "posix: buffers registered at each size, each timed one by one; when given (and --min_ops is not), "
             "also the pools' operations per step and size, if fewer than --min_ops");
DEFINE_int64(min_size_kb, 4, "Smallest allocation in KB (1 KB = 1024 bytes)");
DEFINE_int64(max_size_kb, 1024, "Largest allocation in KB; sizes double from min to max, max included");
DEFINE_int64(min_ops, SHMB_ALLOC_MIN_OPS,
             "Pools: operations timed per step and size, at least; rounds over the working set repeat "
             "until then (one round at least: a note says so when that is more)");
DEFINE_int64(working_set, SHMB_ALLOC_ARENA_MIN_BATCH,
             "Pools: blocks live at once in each round (allocated, freed in a random order, allocated "
             "again); a thread cache serves only a working set it can hold (the notes say its limits)");
DEFINE_bool(measure_mmap_only, false,
            "posix: create one segment per size untimed, and time only mmap and munmap (as cleanup)");
DEFINE_bool(cleanup, true, "Unlink the SHM segments after use; false leaves them in /dev/shm");
DEFINE_string(allocator, "posix,offset,arena,bipc,jemalloc,offset_bare,bipc_object,jemalloc_object",
              "Allocators to run: posix (Mooncake's registration: shm_open+ftruncate+mmap+close per "
              "buffer), offset (Mooncake Store's per-object OffsetBufferAllocator with its AllocatedBuffer inside "
              "one registered segment), arena (ideal lock-free pool: a reference point, not a bound), bipc "
              "(Flow-IPC SHM-classic's allocator: boost.interprocess rbtree_best_fit in one SHM pool), jemalloc "
              "(Flow-IPC SHM-jemalloc's allocator: mallocx, no thread cache), offset_bare (Mooncake's "
              "OffsetAllocator alone), bipc_object (SHM-classic's Pool_arena::construct: the object and its "
              "shared_ptr), jemalloc_object (SHM-jemalloc's Ipc_arena::construct); by name only: "
              "jemalloc_tcache (with a thread cache), and ready (alone: time to ready of a pool of --pool_mb per "
              "--backing and --prefault)");
DEFINE_bool(touch, false, "Write one byte per page of every fresh block and time it (first touch)");
DEFINE_int32(threads, 1,
             "Threads running each allocator at once, each pinned to its own allowed CPU when there "
             "are enough (from --cpu on, if given); bipc and jemalloc share one pool, posix and "
             "arena do not");
DEFINE_bool(peer_process, false,
            "A second process (forked at start) takes what is allocated, as a receiver does: attaches each "
            "posix segment by name (rows attach, detach); attaches bipc's and jemalloc's pools and translates "
            "round 0's handles (rows attach, translate); the rows of this process keep their names");

DEFINE_string(backing, "tmpfs",
              "ready: what backs the pool, a comma-separated list of tmpfs (shm_open in /dev/shm), memfd "
              "(memfd_create, no name), thp (memfd + MADV_HUGEPAGE: 2 MB pages where shmem_enabled allows), "
              "hugetlb (memfd_create(MFD_HUGETLB): the reserved huge page pool), or all");
DEFINE_string(prefault, "all",
              "ready: how the pages come to exist, a comma-separated list of none, touch (a write per page), "
              "populate (MAP_POPULATE), populate_write (MADV_POPULATE_WRITE), fallocate, or all");
DEFINE_int64(pool_mb, 256, "ready: pool size in MB (1 MB = 1048576 bytes), rounded up to the backing's page");
DEFINE_int32(prefault_threads, 1, "ready: threads splitting the prefault (touch, populate_write, fallocate)");
DEFINE_int64(hugepage_kb, 2048, "ready: huge page size of the hugetlb backing in KB: 2048 or 1048576");
DEFINE_int64(pool_iterations, 3, "ready: pools made ready per backing and prefault, each timed");
DEFINE_int64(grow_block_kb, 0,
             "ready: also reach --pool_mb of live blocks of this many KB through Flow-IPC's jemalloc pools "
             "(they grow extent by extent) beside Mooncake's one segment, each page written once: rows "
             "flowipc_jemalloc/grow and mooncake/grow with pools, mappings and page faults (0: not run)");

// The modes and the flags each reads of those some mode names: --allocator=ready
// runs alone; --systems runs the pairs the systems use.
const std::vector<shmb::Mode> kModes = {
    {"the allocators",
     "allocator,num_iterations,min_size_kb,max_size_kb,min_ops,working_set,system,measure_mmap_only,cleanup,touch,"
     "threads,peer_process",
     shmb::RunAllocators},
    {"--allocator=ready", "allocator,backing,prefault,pool_mb,prefault_threads,hugepage_kb,pool_iterations,grow_block_kb",
     shmb::RunReady},
    {"--systems (a paired run)", "systems,system,num_iterations,min_size_kb,max_size_kb,min_ops,working_set",
     shmb::RunAllocators},
};

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM allocation cost: Mooncake's shm_open + ftruncate + mmap + close per buffer "
               "against Flow-IPC's pool allocators and an ideal arena.\n"
               "Usage: shm_allocation_bench [--flag=value ...]",
               __FILE__);
    return shmb::RunMode(kModes, shmb::InList(FLAGS_allocator, "ready") ? 1 : FLAGS_systems.empty() ? 0 : 2);
}
