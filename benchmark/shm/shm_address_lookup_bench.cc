// shm_address_lookup_bench: translating a peer's address into ours, through
// Mooncake's per-request relocate path and Flow-IPC's handle translation
// (systems), with scan, lower_bound, tree and arithmetic kernels as reference points.
#include <vector>

#include "bench_common.h"
#include "runs.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(num_segments, 100, "Number of SHM segments to simulate");
DEFINE_int64(num_lookups, 10000,
             "Number of lookups per row when given (batches of 4096, at least one; --min_time_ms then not "
             "applied); by default, per timed batch, batches repeating for --min_time_ms; requests come from a "
             "pool of at least 131072 distinct ones, so that no batch replays what the branch predictors learnt");
DEFINE_int64(segment_size_mb, 64, "Size of each segment in MB (1 MB = 1048576 bytes)");
DEFINE_string(strategies, "mooncake,flowipc_classic,flowipc_jemalloc,linear,lower_bound,tree,arithmetic",
              "Paths to measure. Systems: mooncake (relocateSharedMemoryAddress, on --mooncake_path), "
              "flowipc_classic (one pool, handle = offset), "
              "flowipc_jemalloc (Shm_pool_repository::to_address: lock + hash map + offset). "
              "Kernels (reference points, not lower bounds): linear, lower_bound, tree, arithmetic");
DEFINE_string(sweep_segments, "",
              "Comma-separated segment counts, e.g. 1,10,100,1000,10000: every strategy at every "
              "count (default: --num_segments only)");
DEFINE_int64(lookup_len_kb, 4, "Length of each request in KB");
DEFINE_string(pattern, "random", "Request pattern: random or sequential");
DEFINE_int64(min_time_ms, 50,
             "Time each strategy at least this long per segment count (unless --num_lookups is given alone); "
             "given with --num_lookups, --num_lookups is per batch again");
DEFINE_string(lookup_mode, "throughput",
              "What the rows measure: throughput (independent requests the CPU overlaps), latency "
              "(a dependent chain: each request waits for the previous translation; rows with step "
              "latency) or both");
DEFINE_int32(threads, 1,
             "Threads translating at once, each its own request stream over the shared metadata, "
             "pool and repository, each pinned to its own allowed CPU when there are enough (with "
             "--cpu=C: C and the next allowed CPUs); rows then carry /threads:N");
DEFINE_bool(peer_process, false,
            "Two processes: this one (the owner) creates the SHM objects and writes a tag at every "
            "request's word; a forked peer attaches them (mooncake: on each buffer's first request), "
            "translates, checks each tag through its translated pointer and times every row");
DEFINE_string(mooncake_path, "tent",
              "Mooncake's relocate path: tent (upstream's TENT ShmTransport: a walk of the mapped buffers "
              "under its RWSpinlock) or pr192 (PR #192's head, never merged: metadata lock, BufferDesc scan, "
              "remap cache)");
DEFINE_string(placement, "descending",
              "Order the peer registers its segments in, by address: descending (Mooncake's: each "
              "buffer a fresh mmap, which Linux places below the previous one), ascending, or random");
DEFINE_bool(handoff, true,
            "Also time Flow-IPC's object hand-off (rows step handoff, for each Flow-IPC system selected): "
            "lend, the handle message, borrow, release, the return message and the lender's free, on "
            "objects of --lookup_len_kb; with --peer_process the borrower is a second process");

// The modes and the flags each reads of those some mode names.
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
