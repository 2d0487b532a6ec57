// shm_address_lookup_bench: translating a peer's address into ours, through
// Mooncake's per-request relocate path and Flow-IPC's handle translation
// (systems), with scan, lower_bound, tree and arithmetic kernels as reference points.
#include <vector>

#include "bench_common.h"
#include "runs.h"

SHMB_DEFINE_COMMON_FLAGS();

// The modes, picked once in main; each lists the flags it reads of those
// that some mode lists (a flag no mode lists: every mode reads it).
const std::vector<shmb::Mode> kModes = {
    {"the strategies", "strategies,sweep_segments,threads", shmb::RunLookup},
    {"--systems (a paired run)", "", shmb::RunLookup},
};

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM address translation: Mooncake's relocate path against Flow-IPC's handle translation, with scan, "
               "lower_bound, tree and arithmetic kernels as reference points.\nUsage: shm_address_lookup_bench [--flag=value ...]",
               __FILE__);
    return shmb::RunMode(kModes, FLAGS_systems.empty() ? 0 : 1);
}
