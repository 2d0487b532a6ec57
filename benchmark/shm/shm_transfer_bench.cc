// shm_transfer_bench: copy bandwidth through SHM, the part neither design
// changes.
#include <vector>

#include "bench_common.h"
#include "runs.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_string(workload, "",
              "Replay a KV-cache workload instead of the size sweep: synthetic (Poisson arrivals, input lengths "
              "as Mooncake's conversation trace, --seed), or a trace file in Mooncake's JSONL format; per "
              "system (--system, each in turn, or --systems: paired request by request), rows per request "
              "(docs/workload.md)");

// The modes, picked once in main; each lists the flags it reads of those
// that some mode lists (a flag no mode lists: every mode reads it).
const std::vector<shmb::Mode> kModes = {
    {"the size sweep", "transfer_size_kb,max_transfer_size_mb,num_transfers,time_per_size_ms,verify_data,cold,peer_process,descriptors_per_submit",
     shmb::RunSweep},
    {"--systems (a paired sweep)", "transfer_size_kb,max_transfer_size_mb,num_transfers,time_per_size_ms,verify_data,zero_copy,descriptors_per_submit,submitters",
     shmb::RunSweep},
    {"--workload", "model,block_tokens,granularity,layout,tp,requests,write_trace,max_request_mb,reuse,arrivals,speed", shmb::RunWorkload},
    {"--systems --workload (a paired replay)", "model,block_tokens,granularity,layout,tp,requests,max_request_mb,reuse,arrivals", shmb::RunWorkload},
};

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM copy bandwidth: memcpy and other copy kernels between two SHM segments.\n"
               "Usage: shm_transfer_bench [--flag=value ...]",
               __FILE__);
    return shmb::RunMode(kModes, (FLAGS_workload.empty() ? 0 : 2) + (FLAGS_systems.empty() ? 0 : 1));
}
