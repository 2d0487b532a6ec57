// shm_transfer_bench --workload (workload_run.cc).
#ifndef SHMBENCH_WORKLOAD_RUN_H
#define SHMBENCH_WORKLOAD_RUN_H

#include <string>

namespace shmb {

// Runs the KV-cache replay the --workload flags ask for, with `methods`
// (--methods as checked: one method), writes its rows and returns 0 (main's
// exit status); bad flags or a bad trace exit 2, failures exit 1.
int RunWorkload(const std::string& methods);

}  // namespace shmb

#endif
