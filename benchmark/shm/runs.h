// The drivers of the binaries' modes, a file each (alloc_run.cc,
// ready_run.cc, lookup_run.cc, sweep_run.cc, workload_run.cc): each checks
// its flags into its library config, runs, writes the report and returns
// main's exit status; a bad flag exits 2, a failure 1.
#ifndef SHMBENCH_RUNS_H
#define SHMBENCH_RUNS_H

#include <algorithm>
#include <string>

#include "shmbench/shmbench.h"

namespace shmb {

int RunAllocators();  // shm_allocation_bench, and its paired run (--systems)
int RunReady();       // shm_allocation_bench --allocator=ready (with --grow_block_kb)
int RunSpace();       // shm_allocation_bench --allocator=space
int RunLookup();      // shm_address_lookup_bench, and its paired run
int RunSweep();       // shm_transfer_bench's size sweep, and its paired run
int RunWorkload();    // shm_transfer_bench --workload, and its paired replay

// shm_transfer_bench: the copy methods to run, checked (sweep_run.cc).
std::string CopyMethods();

// True if a Flow-IPC system is among the n `systems` (--systems).
inline bool AnyFlowIpc(const shmb_system_t* systems, size_t n)
{
    return std::any_of(systems, systems + n, [](shmb_system_t s) { return s != SHMB_SYSTEM_MOONCAKE; });
}

}  // namespace shmb

#endif
