// shm_transfer_bench: copy bandwidth through SHM, the part neither design
// changes.
#include <algorithm>
#include <string>
#include <vector>

#include "bench_common.h"
#include "workload_run.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(transfer_size_kb, 4, "Transfer size in KB: the first size of the sweep");
DEFINE_int64(max_transfer_size_mb, 64, "Maximum transfer size for the sweep in MB (sizes double up to it, included)");
DEFINE_int64(max_transfer_size_kb, 0,
             "Maximum transfer size in KB, instead of --max_transfer_size_mb (0: use that); for a last size "
             "below 1 MB, e.g. --transfer_size_kb=4 --max_transfer_size_kb=4 runs 4 KB alone");
DEFINE_int64(num_transfers, 1000,
             "Number of transfers per size and method, exactly (fewer only if --time_per_size_ms runs out; "
             "with --system, request_path and translate time at least one batch of 100x the timer overhead, "
             "and by default at least 31 batches)");
DEFINE_bool(use_memcpy, true, "Use memcpy for transfers; false selects the plain C loop (when --methods is not given)");
DEFINE_bool(verify_data, false, "Verify dst against the pattern after each size and method (a transfer is always verified before timing)");
DEFINE_string(methods, "",
              "Copy methods: memcpy, loop, nt (non-temporal stores), movsb (rep movsb), or all "
              "(default: memcpy, or loop with --use_memcpy=false)");
DEFINE_int32(threads, 1,
             "Split each transfer across this many threads; with --cpu, pinned to it and the next allowed CPUs");
DEFINE_bool(cold, false, "Add rows where each transfer writes a fresh SHM segment (first-touch page faults timed)");
DEFINE_int64(time_per_size_ms, 1000, "Time budget per size and method in ms; at least one batch is always timed");
DEFINE_int64(num_segments, 100,
             "With --system: blocks of dst's size the peer registered, dst the middle one: mooncake's "
             "buffers; the request path of a Flow-IPC flavour walks the pools holding them (flowipc_classic "
             "one, flowipc_jemalloc what its arena makes), its to_address as many pools as blocks");
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

namespace {

// --methods: all, or methods available on this machine; none: memcpy, or
// loop with --use_memcpy=false.
std::string Methods()
{
    if (FLAGS_methods.empty())
        return FLAGS_use_memcpy ? "memcpy" : "loop";
    auto name = [](int m) { return shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)); };
    auto here = [&](int m) { return shmb_copy_kernel(static_cast<shmb_copy_method_t>(m)) ? name(m) : nullptr; };
    return shmb::CheckListOrAll("methods", FLAGS_methods, shmb::JoinNames(SHMB_COPY_METHODS, name),
                                shmb::JoinNames(SHMB_COPY_METHODS, here));
}

// The last size in KB: --max_transfer_size_kb if given, else
// --max_transfer_size_mb; returns the flag that set it in *flag.
uint64_t MaxSizeKb(const char** flag)
{
    const bool mb_given = !gflags::GetCommandLineFlagInfoOrDie("max_transfer_size_mb").is_default;
    if (FLAGS_max_transfer_size_kb != 0) {
        if (mb_given)
            shmb::FlagError("max_transfer_size_kb", std::to_string(FLAGS_max_transfer_size_kb),
                            "give it or --max_transfer_size_mb, not both");
        *flag = "max_transfer_size_kb";
        return shmb::CheckRange("max_transfer_size_kb", FLAGS_max_transfer_size_kb, 1,
                                static_cast<int64_t>(SHMB_TRANSFER_MAX_KB));
    }
    *flag = "max_transfer_size_mb";
    if (FLAGS_max_transfer_size_mb == 0)
        shmb::FlagError("max_transfer_size_mb", "0",
                        "must be between 1 and " + std::to_string(SHMB_TRANSFER_MAX_KB / 1024) +
                            "; for a last size below 1 MB use --max_transfer_size_kb");
    return 1024 * shmb::CheckRange("max_transfer_size_mb", FLAGS_max_transfer_size_mb, 1,
                                   static_cast<int64_t>(SHMB_TRANSFER_MAX_KB / 1024));
}

shmb_peer_t g_peer;

// The replay's flags mean nothing to the size sweep: each one set without
// --workload is refused by name, rather than a sweep run that ignores it.
void RefuseWorkloadFlags()
{
    for (const char* flag : {"model", "block_tokens", "granularity", "requests", "write_trace", "max_request_mb"}) {
        const gflags::CommandLineFlagInfo info = gflags::GetCommandLineFlagInfoOrDie(flag);
        if (!info.is_default)
            shmb::FlagError(flag, info.current_value,
                            "only with --workload (synthetic or a trace file); the size sweep does not read it");
    }
}

// --systems: the paired run's refusals, one line each: it runs warm rows in
// this process; Flow-IPC's pools need names in /dev/shm.
void RefuseUnpaired(const std::vector<shmb_system_t>& systems)
{
    if (FLAGS_cold)
        shmb::FlagError("cold", "true", "cannot be combined with --systems (a paired run times warm rows only)");
    if (FLAGS_peer_process)
        shmb::FlagError("peer_process", "true",
                        "cannot be combined with --systems (a paired run measures its systems in this process)");
    shmb::RefuseFlowIpcBacking(systems, FLAGS_backing);
}

}  // namespace

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM copy bandwidth: memcpy and other copy kernels between two SHM segments.\n"
               "Usage: shm_transfer_bench [--flag=value ...]",
               __FILE__);
    if (!FLAGS_workload.empty())
        return shmb::RunWorkload(Methods());
    RefuseWorkloadFlags();
    std::vector<std::string> names;
    const std::vector<shmb_system_t> paired = shmb::PairedSystems(&names);
    if (!paired.empty())
        RefuseUnpaired(paired);

    shmb_transfer_config_t cfg = {};
    const char* max_flag = nullptr;
    cfg.max_transfer_size_kb = MaxSizeKb(&max_flag);
    cfg.transfer_size_kb = shmb::CheckRange("transfer_size_kb", FLAGS_transfer_size_kb, 1,
                                            static_cast<int64_t>(SHMB_TRANSFER_MAX_KB));
    if (cfg.transfer_size_kb > cfg.max_transfer_size_kb)
        shmb::FlagError("transfer_size_kb", std::to_string(FLAGS_transfer_size_kb),
                        "must not exceed the last size, --" + std::string(max_flag) + " (" +
                            std::to_string(cfg.max_transfer_size_kb) + " KB)");
    cfg.num_transfers = shmb::CheckRange("num_transfers", FLAGS_num_transfers, 1,
                                         static_cast<int64_t>(SHMB_TRANSFER_MAX_TRANSFERS));
    // The seed's --num_transfers is the run's count, for the parts that move no bytes too.
    cfg.count_given = !gflags::GetCommandLineFlagInfoOrDie("num_transfers").is_default;
    cfg.threads = static_cast<int>(shmb::CheckRange("threads", FLAGS_threads, 1, SHMB_TRANSFER_MAX_THREADS));
    cfg.time_per_size_ms = static_cast<double>(shmb::CheckRange("time_per_size_ms", FLAGS_time_per_size_ms, 1,
                                                                3600 * 1000));
    std::string methods = Methods();
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        cfg.run[m] = shmb::InList(methods, shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)));
    cfg.cpu = FLAGS_cpu;
    cfg.progress = shmb::Progress();
    cfg.cold = FLAGS_cold;
    cfg.verify = FLAGS_verify_data;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.timer_overhead_ns = shmb::TimerOverheadNs();
    cfg.num_segments = shmb::CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    const int system = shmb_path_system(FLAGS_system.c_str());
    cfg.translate = system >= 0;
    cfg.system = static_cast<shmb_system_t>(system >= 0 ? system : 0);
    if (cfg.translate && cfg.cold)
        shmb::FlagError("cold", "true", "cannot be combined with --system (a fresh segment is no registered buffer)");
    if (FLAGS_zero_copy && paired.empty())
        shmb::FlagError("zero_copy", "true", "only with --systems (its rows are paired against mooncake)");
    cfg.zero_copy = FLAGS_zero_copy;
    cfg.nsystems = paired.size();
    std::copy(paired.begin(), paired.end(), cfg.systems);
    shmb_backing_residency_t granted = {};
    cfg.backing = shmb::Backing(FLAGS_backing, FLAGS_hugepage_kb, cfg.translate && cfg.system != SHMB_SYSTEM_MOONCAKE,
                                max_flag, cfg.max_transfer_size_kb << 10, cfg.cold ? 3 : 2);
    cfg.granted = cfg.backing.kind != SHMB_BACKING_TMPFS ? &granted : nullptr;
    shmb::WarnIfOversubscribed(cfg.threads);

    if (FLAGS_peer_process)
        cfg.peer = &g_peer;
    uint64_t need = 0;
    shmb_transfer_bench_shm_bytes(&cfg, &need);
    shmb::CheckShmSpace(max_flag, need);

    shmb_peer_t* peer = FLAGS_peer_process ? shmb::StartPeer(shmb_transfer_bench_peer_start, &g_peer) : nullptr;
    shmb_rows_t rows = {};
    shmb::RunRepetitions(peer, "a check failed", "the transfer benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        return shmb_transfer_bench_run(&cfg, &rows, why, cap);
    });

    shmb_report_t report = {};
    report.bench = "shm_transfer";
    report.system = shmb::SystemLine();
    report.variant_label = report.system || cfg.nsystems ? "part" : "method";
    report.rate_is_bytes = 1;
    shmb_notes_t notes = {};
    int ret = shmb_notes_transfer(&report, &notes, &cfg);
    if (ret < 0)
        shmb::Fail(ret, "composing the notes");
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);
    return 0;
}
