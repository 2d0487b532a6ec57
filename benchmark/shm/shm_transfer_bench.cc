// shm_transfer_bench: copy bandwidth through SHM, the part neither design
// changes.
#include <vector>

#include "bench_common.h"
#include "runs.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(transfer_size_kb, 4, "Transfer size in KB: the first size of the sweep");
DEFINE_double(max_transfer_size_mb, 64,
              "Maximum transfer size for the sweep in MB (sizes double up to it, included); a whole number of KB: "
              "a fraction gives a last size below 1 MB, e.g. --transfer_size_kb=4 --max_transfer_size_mb=0.00390625 "
              "runs 4 KB alone");
DEFINE_int64(num_transfers, 1000,
             "Number of transfers per size and method, exactly (fewer only if --time_per_size_ms runs out; "
             "with --system, request_path and translate time at least one batch of 100x the timer overhead, "
             "and by default at least 31 batches)");
DEFINE_bool(use_memcpy, true, "Use memcpy for transfers; false selects the plain C loop (--methods=loop; not with --methods)");
DEFINE_bool(verify_data, false, "Verify dst against the pattern after each size and method (a transfer is always verified before timing)");
DEFINE_string(methods, "",
              "Copy methods: memcpy, loop, nt (non-temporal stores), movsb (rep movsb), or all "
              "(default: memcpy, or loop with --use_memcpy=false; not with --use_memcpy)");
DEFINE_int32(threads, 1,
             "Split each transfer across this many threads; with --cpu, pinned to it and the next allowed CPUs");
DEFINE_bool(cold, false, "Add rows where each transfer writes a fresh SHM segment (first-touch page faults timed)");
DEFINE_int64(time_per_size_ms, 1000, "Time budget per size and method in ms; at least one batch is always timed");
DEFINE_int64(num_segments, 100,
             "With --system: blocks of dst's size the peer registered, dst the middle one: mooncake's "
             "buffers; the request path of a Flow-IPC flavour walks the pools holding them (flowipc_classic "
             "one, flowipc_jemalloc what its arena makes), its to_address as many pools as blocks");
DEFINE_string(mooncake_path, "tent",
              "With --system=mooncake, its relocate path: tent (upstream's TENT ShmTransport) or pr192 (PR #192's "
              "head, never merged)");
DEFINE_bool(peer_process, false,
            "Do the copies in a second process (forked at start) that attaches src and dst (by name; by "
            "descriptor over a Unix socket for --backing other than tmpfs) and times them; this process creates and fills them and checks dst after each size and method. Rows keep "
            "their names, so compare.sh pairs them with an in-process run");
DEFINE_string(workload, "",
              "Replay a KV-cache workload instead of the size sweep: synthetic (Poisson arrivals, input lengths "
              "as Mooncake's conversation trace, --seed), or a trace file in Mooncake's JSONL format; per "
              "system (--system, each in turn, or --systems: paired request by request), rows per request "
              "(docs/workload.md)");
DEFINE_string(model, "llama3_8b",
              "With --workload: the model whose KV cache moves: llama3_8b, llama31_70b or deepseek_v3");
DEFINE_int64(block_tokens, 512,
             "With --workload: tokens per KV block (512: Mooncake's KVCache block and trace hash ids)");
DEFINE_string(granularity, "layer",
              "With --workload: a descriptor per (block, layer), as SGLang sends to Mooncake (layer), or per block "
              "holding all layers (block)");
DEFINE_int64(requests, 100,
             "With --workload: requests to replay, at most (synthetic: exactly; a trace: its first N, 0: all)");
DEFINE_string(write_trace, "",
              "With --workload: write the stream to this file in Mooncake's JSONL format (hash ids numbered from 0) "
              "and exit without measuring; traces/sample.jsonl is --workload=synthetic --requests=300 output");
DEFINE_int64(max_request_mb, 256,
             "With --workload: a request moves at most this many MB (whole blocks; the rest is cut and counted); "
             "src and dst are the largest request's size");

DEFINE_bool(zero_copy, false,
            "With --systems: the zero-copy rows alone: per size (--transfer_size_kb to the last size, x4), "
            "Mooncake's whole request against each Flow-IPC flavour's object hand-off to a borrower process, no "
            "copy (rows zero_copy/size_kb:N/system:NAME)");
DEFINE_string(backing, "tmpfs",
              "Pages of src, dst and the cold buffers: tmpfs (shm_open in /dev/shm), memfd (memfd_create), thp "
              "(memfd + MADV_HUGEPAGE before the first touch) or hugetlb (memfd_create(MFD_HUGETLB), the reserved "
              "pool); buffers are rounded up to the backing's page; the peer gets memfd kinds over a Unix socket");
DEFINE_int64(hugepage_kb, 2048, "Huge page size of the hugetlb backing in KB: 2048 or 1048576");

// The modes and the flags each reads of those some mode names.
const std::vector<shmb::Mode> kModes = {
    {"the size sweep", "transfer_size_kb,max_transfer_size_mb,num_transfers,time_per_size_ms,verify_data,cold,peer_process",
     shmb::RunSweep},
    {"--systems (a paired sweep)", "transfer_size_kb,max_transfer_size_mb,num_transfers,time_per_size_ms,verify_data,zero_copy",
     shmb::RunSweep},
    {"--workload", "model,block_tokens,granularity,requests,write_trace,max_request_mb", shmb::RunWorkload},
    {"--systems --workload (a paired replay)", "model,block_tokens,granularity,requests,max_request_mb", shmb::RunWorkload},
};

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM copy bandwidth: memcpy and other copy kernels between two SHM segments.\n"
               "Usage: shm_transfer_bench [--flag=value ...]",
               __FILE__);
    return shmb::RunMode(kModes, (FLAGS_workload.empty() ? 0 : 2) + (FLAGS_systems.empty() ? 0 : 1));
}
