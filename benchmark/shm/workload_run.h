// shm_transfer_bench --workload (workload_run.cc), and what it shares with
// the size sweep.
#ifndef SHMBENCH_WORKLOAD_RUN_H
#define SHMBENCH_WORKLOAD_RUN_H

#include <string>
#include <vector>

#include "shmbench/shmbench.h"

namespace shmb {

// --systems with a Flow-IPC system on a backing other than tmpfs (`backing`,
// --backing's value): exit 2 with one line; Flow-IPC's pools are created and
// lent by name in /dev/shm. A bad backing name is left to shmb::Backing.
void RefuseFlowIpcBacking(const std::vector<shmb_system_t>& systems, const std::string& backing);

// Runs the KV-cache replay the --workload flags ask for, with `methods`
// (--methods as checked: one method), writes its rows and returns 0 (main's
// exit status); bad flags or a bad trace exit 2, failures exit 1.
int RunWorkload(const std::string& methods);

}  // namespace shmb

#endif
