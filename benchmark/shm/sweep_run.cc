// shm_transfer_bench's size sweep, and its paired run (--systems): the
// flags into shmb_transfer_config_t, the run and its report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sched.h>
#include <string>
#include <vector>

#include "bench_common.h"
#include "runs.h"
#include "shmbench/upstream.h"
#include "shmbench/upstream_flowipc.h"

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
DEFINE_bool(peer_process, false,
            "Do the copies in a second process (forked at start) that attaches src and dst (by name; by "
            "descriptor over a Unix socket for --backing other than tmpfs) and times them; this process creates and fills them and checks dst after each size and method. Rows keep "
            "their names, so compare.sh pairs them with an in-process run");
DEFINE_bool(zero_copy, false,
            "With --systems: the zero-copy rows alone: per size (--transfer_size_kb to the last size, x4), "
            "Mooncake's whole request against each Flow-IPC flavour's object hand-off to a borrower process, no "
            "copy (rows zero_copy/size_kb:N/system:NAME)");
DEFINE_string(backing, "tmpfs",
              "Pages of src, dst and the cold buffers: tmpfs (shm_open in /dev/shm), memfd (memfd_create), thp "
              "(memfd + MADV_HUGEPAGE before the first touch) or hugetlb (memfd_create(MFD_HUGETLB), the reserved "
              "pool); buffers are rounded up to the backing's page; the peer gets memfd kinds over a Unix socket");
DEFINE_int64(descriptors_per_submit, 1,
             "With --system or --systems: each request and request_path row submits this many descriptors of the "
             "size in one batch through TENT's submitTransfer (SGLang's batch_transfer_sync), each translated and "
             "copied; rows per descriptor, named .../size_kb:N/per_submit:M/... when above 1");
DEFINE_int32(submitters, 1,
             "With --systems: threads submitting at once: each round, each system's batch is run by this many "
             "threads (pinned from --cpu on) over its one registrations, engine and translation, each into its "
             "own part of dst; rows per request one submitter sees, named .../threads:N/... when above 1; at "
             "most the CPUs allowed; flowipc_jemalloc: a borrower process per submitter, on its CPU");
DEFINE_int64(hugepage_kb, 2048, "Huge page size of the hugetlb backing in KB: 2048 or 1048576");

namespace shmb {
namespace {

shmb_peer_t g_peer;

// The double as the user would write it (gflags keeps 17 digits: 0.3 is 0.29999999999999999).
std::string Shortest(double v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%.15g", v);
    return buf;
}

// --max_transfer_size_mb in KB: a whole number of them, so that a fraction
// gives a last size below 1 MB (fast runs: 0.0625 is 64 KB).
uint64_t MaxSizeKb()
{
    const double kb = FLAGS_max_transfer_size_mb * 1024;
    if (!(kb >= 1 && kb <= static_cast<double>(SHMB_TRANSFER_MAX_KB)) || kb != std::floor(kb))
        FlagError("max_transfer_size_mb", Shortest(FLAGS_max_transfer_size_mb),
                  "a whole number of KB between 1 KB (0.0009765625) and " + std::to_string(SHMB_TRANSFER_MAX_KB / 1024) +
                      "; a fraction gives a last size below 1 MB: 0.0625 is 64 KB");
    return static_cast<uint64_t>(kb);
}

// --submitters, checked against the CPUs this process may use and the flags
// it cannot be combined with (the mode's list refuses it elsewhere).
int Submitters(shmb_transfer_config_t& cfg)
{
    const int n = static_cast<int>(CheckRange("submitters", FLAGS_submitters, 1, SHMB_TRANSFER_MAX_THREADS));
    std::vector<int> cpus(CPU_SETSIZE);
    const int allowed = shmb_sysinfo_allowed_cpus(cpus.data(), CPU_SETSIZE);
    const std::string value = std::to_string(FLAGS_submitters);
    if (allowed > 0 && n > allowed)
        FlagError("submitters", value,
                  "at most the " + std::to_string(allowed) +
                      " CPUs this process may use (a submitter per CPU; more would time waiting for one)");
    if (n > 1 && (cfg.threads > 1 || cfg.zero_copy))
        FlagError("submitters", value, "cannot be combined with --threads above 1 or --zero_copy");
    if (n > 1 && cfg.systems[0] == SHMB_SYSTEM_FLOWIPC_JEMALLOC)
        FlagError("submitters", value,
                  "flowipc_jemalloc cannot be the baseline with submitters above 1: put another system first");
    for (size_t i = 0; n > 1 && i < cfg.nsystems; i++)
        if (cfg.systems[i] == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
            FlagError("submitters", value,
                      "cannot be combined with mooncake_upstream (its engines serve one thread here)");
    return n;
}

}  // namespace

std::string CopyMethods()
{
    if (FLAGS_methods.empty())
        return FLAGS_use_memcpy ? "memcpy" : "loop";
    if (!gflags::GetCommandLineFlagInfoOrDie("use_memcpy").is_default)
        FlagError("use_memcpy", FLAGS_use_memcpy ? "true" : "false",
                  "give it or --methods, not both (--use_memcpy=false is --methods=loop)");
    auto name = [](int m) { return shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)); };
    auto here = [&](int m) { return shmb_copy_kernel(static_cast<shmb_copy_method_t>(m)) ? name(m) : nullptr; };
    return CheckListOrAll("methods", FLAGS_methods, JoinNames(SHMB_COPY_METHODS, name),
                          JoinNames(SHMB_COPY_METHODS, here));
}

int RunSweep()
{
    shmb_transfer_config_t cfg = {};
    cfg.nsystems = Paired(cfg.systems);
    cfg.max_transfer_size_kb = MaxSizeKb();
    cfg.transfer_size_kb = CheckRange("transfer_size_kb", FLAGS_transfer_size_kb, 1,
                                      static_cast<int64_t>(SHMB_TRANSFER_MAX_KB));
    if (cfg.transfer_size_kb > cfg.max_transfer_size_kb)
        FlagError("transfer_size_kb", std::to_string(FLAGS_transfer_size_kb),
                  "must not exceed the last size, --max_transfer_size_mb (" + std::to_string(cfg.max_transfer_size_kb) +
                      " KB)");
    cfg.num_transfers = CheckRange("num_transfers", FLAGS_num_transfers, 1,
                                   static_cast<int64_t>(SHMB_TRANSFER_MAX_TRANSFERS));
    // The seed's --num_transfers is the run's count, for the parts that move no bytes too.
    cfg.count_given = !gflags::GetCommandLineFlagInfoOrDie("num_transfers").is_default;
    cfg.threads = static_cast<int>(CheckRange("threads", FLAGS_threads, 1, SHMB_TRANSFER_MAX_THREADS));
    cfg.time_per_size_ms = static_cast<double>(CheckRange("time_per_size_ms", FLAGS_time_per_size_ms, 1, 3600 * 1000));
    const std::string methods = CopyMethods();
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        cfg.run[m] = InList(methods, shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)));
    cfg.cpu = FLAGS_cpu;
    cfg.progress = Progress();
    cfg.cold = FLAGS_cold;
    cfg.verify = FLAGS_verify_data;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.timer_overhead_ns = TimerOverheadNs();
    cfg.num_segments = CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    const int system = shmb_path_system(FLAGS_system.c_str());
    cfg.translate = system >= 0;
    cfg.system = static_cast<shmb_system_t>(system >= 0 ? system : 0);
    if (cfg.translate && cfg.cold)
        FlagError("cold", "true", "cannot be combined with --system (a fresh segment is no registered buffer)");
    cfg.zero_copy = FLAGS_zero_copy;
    const bool upstream = std::find(cfg.systems, cfg.systems + cfg.nsystems, SHMB_SYSTEM_MOONCAKE_UPSTREAM) !=
                          cfg.systems + cfg.nsystems;
    if (upstream && cfg.zero_copy)
        FlagError("zero_copy", "true", "not with mooncake_upstream (upstream code covers translate and submit)");
    if (upstream && cfg.systems[0] != SHMB_SYSTEM_MOONCAKE)
        FlagError("systems", FLAGS_systems, "with mooncake_upstream the baseline (first) must be mooncake, the model "
                                            "it is held against");
    const bool fipc_upstream = std::find(cfg.systems, cfg.systems + cfg.nsystems,
                                         SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM) != cfg.systems + cfg.nsystems;
    if (fipc_upstream && cfg.zero_copy)
        FlagError("zero_copy", "true", "not with flowipc_jemalloc_upstream (upstream code covers translate)");
    cfg.descriptors_per_submit = static_cast<uint64_t>(
        CheckRange("descriptors_per_submit", FLAGS_descriptors_per_submit, 1, SHMB_TRANSFER_MAX_PER_SUBMIT));
    if (cfg.descriptors_per_submit > 1 && !cfg.translate && !cfg.nsystems)
        FlagError("descriptors_per_submit", std::to_string(FLAGS_descriptors_per_submit),
                  "needs --system or --systems (it batches the request path's descriptors)");
    if (cfg.descriptors_per_submit > 1 && (FLAGS_peer_process || cfg.zero_copy))
        FlagError("descriptors_per_submit", std::to_string(FLAGS_descriptors_per_submit),
                  "cannot be combined with --peer_process or --zero_copy");
    cfg.submitters = Submitters(cfg);
    shmb_backing_residency_t granted = {};
    const bool flowipc = (cfg.translate && cfg.system != SHMB_SYSTEM_MOONCAKE) || AnyFlowIpc(cfg.systems, cfg.nsystems);
    cfg.backing = Backing(FLAGS_backing, FLAGS_hugepage_kb, flowipc, "max_transfer_size_mb",
                          (cfg.max_transfer_size_kb << 10) * cfg.descriptors_per_submit * cfg.submitters,
                          cfg.cold ? 3 : 2);
    cfg.granted = cfg.backing.kind != SHMB_BACKING_TMPFS ? &granted : nullptr;
    WarnIfOversubscribed(cfg.threads);

    cfg.peer = FLAGS_peer_process ? &g_peer : nullptr;
    uint64_t need = 0;
    if (shmb_transfer_bench_shm_bytes(&cfg, &need) < 0)
        need = UINT64_MAX;
    if (upstream) // all of it written before timing: TENT's buffers as the suite's src and dst
        CheckResident("num_segments", need,
                      "with mooncake_upstream (TENT writes every page of the " + std::to_string(cfg.num_segments + 1) +
                          " SHM buffers it registers, beside this run's src and dst)",
                      "--num_segments or --max_transfer_size_mb");
    CheckShmSpace(upstream ? "num_segments" : "max_transfer_size_mb", need);

    shmb_peer_t* peer = cfg.peer ? StartPeer(shmb_transfer_bench_peer_start, &g_peer) : nullptr;
    shmb_rows_t rows = {};
    RunRepetitions(peer, "a check failed", "the transfer benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        return shmb_transfer_bench_run(&cfg, &rows, why, cap);
    });

    shmb_report_t report = NewReport("shm_transfer", SystemLine(), cfg.nsystems, "method");
    report.rate_is_bytes = 1;
    shmb_notes_t notes = {};
    const int ret = shmb_notes_transfer(&report, &notes, &cfg);
    if (ret < 0)
        Fail(ret, "composing the notes");
    // The commit whose TENT the mooncake_upstream rows ran (kept until the report is written).
    std::vector<std::string> upstream_note;
    if (upstream)
        upstream_note.push_back(
            "mooncake_upstream: Mooncake's own TENT (translate: ShmTransport::relocateSharedMemoryAddress; submit: "
            "allocateBatch, submitTransfer, getTransferStatus, freeBatch, its copy a no-op; its other rows not "
            "covered; mooncake's submit: the model's request path calling its translation, no copy) over " +
            std::to_string(cfg.num_segments) +
            " SHM buffers (translate and submit, for mooncake and its control too: request i to buffer i mod " +
            std::to_string(cfg.num_segments) +
            ", so that each row is the mean over every buffer's place in the hit path's walk of the mapped buffers, "
            "an unordered_map whose order the addresses decide), compiled from commit " +
            shmb_upstream_commit() + " (docs/upstream.md)");
    if (fipc_upstream)
        upstream_note.push_back(
            "flowipc_jemalloc_upstream: Flow-IPC's own borrower pool repository (translate: "
            "Borrower_shm_pool_repository::to_address of dst's pool and offset, over the " +
            std::to_string(cfg.num_segments) +
            " pools the model's repository holds; its other rows not covered; labelled as the model's translate: a "
            "borrower maps a lent pool read-only, so to_address is no write path upstream; Boost 1.81, Flow's "
            "logging stood in for by a logger that never logs), compiled from " +
            std::string(shmb_upstream_flowipc_commits()) + " (docs/upstream.md)");
    AddNotes(&report, upstream_note);
    WriteReport(&report, &rows);
    return 0;
}

}  // namespace shmb
