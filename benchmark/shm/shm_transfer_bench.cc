// shm_transfer_bench: copy bandwidth through SHM, the part neither design
// changes.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_internal.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(transfer_size_kb, 4, "Transfer size in KB: the first size of the sweep");
DEFINE_int64(max_transfer_size_mb, 64, "Maximum transfer size for the sweep in MB (sizes double up to it, included)");
DEFINE_int64(max_transfer_size_kb, 0,
             "Maximum transfer size in KB, instead of --max_transfer_size_mb (0: use that); for a last size "
             "below 1 MB, e.g. --transfer_size_kb=4 --max_transfer_size_kb=4 runs 4 KB alone");
DEFINE_int64(num_transfers, 1000,
             "Number of transfers per size and method, exactly (fewer only if --time_per_size_ms runs out)");
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
             "With --system: buffers (mooncake) or pools (flowipc_jemalloc) the peer registered; dst is the "
             "middle one");
DEFINE_string(mooncake_path, "tent",
              "With --system=mooncake, its relocate path: tent (upstream's TENT ShmTransport) or pr192 (PR #192's "
              "head, never merged)");
DEFINE_bool(peer_process, false,
            "Do the copies in a second process (forked at start) that attaches src and dst by name and times "
            "them; this process creates and fills them and checks dst after each size and method. Rows keep "
            "their names, so compare.sh pairs them with an in-process run");
DEFINE_string(workload, "",
              "Replay a KV-cache workload instead of the size sweep: synthetic (Poisson arrivals, input lengths "
              "as Mooncake's conversation trace, --seed), or a trace file in Mooncake's JSONL format; per "
              "system (--system, or each in turn), rows per request (docs/workload.md)");
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

// --- --workload: the KV-cache replay (shmbench/workload.h) ---

// Sweep flags that mean nothing to a replay: refused when given.
void RefuseSweepFlags()
{
    for (const char* flag : {"transfer_size_kb", "max_transfer_size_mb", "max_transfer_size_kb", "num_transfers",
                             "time_per_size_ms", "cold", "peer_process", "verify_data"})
        if (!gflags::GetCommandLineFlagInfoOrDie(flag).is_default)
            shmb::FlagError(flag, gflags::GetCommandLineFlagInfoOrDie(flag).current_value,
                            "cannot be combined with --workload (every descriptor is verified; sizes come from "
                            "the requests)");
}

// The stream: synthetic, or the trace's first --requests lines; a bad line
// is "<file>:<line>: <what>", exit 2.
void ReadStream(shmb_workload_stream_t* stream, uint64_t requests)
{
    if (FLAGS_workload == "synthetic") {
        if (requests == 0)
            shmb::FlagError("requests", "0", "a synthetic stream needs at least 1");
        if (shmb_workload_synthetic(FLAGS_seed, requests, stream) < 0)
            shmb::Fail(-ENOMEM, "generating the synthetic stream");
        return;
    }
    FILE* in = std::fopen(FLAGS_workload.c_str(), "r");
    if (!in)
        shmb::FlagError("workload", FLAGS_workload,
                        std::string("synthetic, or a trace file; this one cannot be read: ") + std::strerror(errno));
    shmb_workload_error_t err;
    int ret = shmb_workload_read(in, requests, stream, &err);
    std::fclose(in);
    if (ret == -EINVAL)
        shmb::internal::UsageError(shmb::internal::Printable(FLAGS_workload) +
                                   (err.line ? ":" + std::to_string(err.line) : std::string()) + ": " + err.what);
    if (ret == -ENOMEM)
        shmb::Fail(ret, "reading the trace");
    if (ret < 0)
        shmb::FlagError("workload", FLAGS_workload,
                        std::string("synthetic, or a trace file; reading this one failed: ") + std::strerror(-ret));
}

std::string Fixed(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return buf;
}

std::string Mib(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / 1048576.0);
    return buf;
}

// The run's facts, one per header line (and in the JSON context's notes).
std::vector<std::string> WorkloadNotes(const shmb_workload_config_t& wc, const shmb_workload_totals_t& t)
{
    const shmb_workload_model_t* m = wc.shape.model;
    const std::string shape = m->latent_dim
                                  ? "MLA latent " + std::to_string(m->latent_dim)
                                  : std::to_string(m->kv_heads) + " KV heads x " + std::to_string(m->head_dim);
    const std::string source = FLAGS_workload == "synthetic" ? "synthetic (seed " + std::to_string(FLAGS_seed) + ")"
                                                             : "trace " + shmb::internal::Printable(FLAGS_workload);
    return {
        "workload: " + source + ": " + std::to_string(t.requests) + " requests, arrivals over " +
            std::to_string(t.span_ms) + " ms, replayed back to back (arrivals order them; nothing waits)",
        "model: " + std::string(m->name) + " (" + std::to_string(m->layers) + " layers, " + shape + ", " +
            std::to_string(m->dtype_bytes) + " B per element: " + std::to_string(shmb_workload_token_layer_bytes(m)) +
            " B per token per layer; " + m->source + ")",
        "fan-out: block_tokens=" + std::to_string(wc.shape.block_tokens) + " granularity=" +
            shmb_workload_granularity_name(wc.shape.granularity) + ": every block of a request's input moves whole; " +
            std::to_string(t.clipped) + " of " + std::to_string(t.requests) + " requests cut to --max_request_mb=" +
            std::to_string(wc.shape.max_request_bytes >> 20),
        "per request: descriptors mean " + Fixed(t.descriptors_mean) + ", bytes mean " + Mib(t.bytes_mean) +
            ", largest " + Mib(static_cast<double>(t.max_bytes)),
        "rows: ns per request (p50, p99, p999 over requests); request_path: TENT's submit path per descriptor, no "
        "translation, no copy; translate: the system's translation of every descriptor; copy: every descriptor's "
        "copy; request: the request path calling both per descriptor; note: share of the request p50",
        "GB_s = bytes of all requests / their time; dst poisoned before copy and request and every descriptor's "
        "bytes verified after each, every translation checked (untimed)",
    };
}

// --write_trace: the stream as a trace file (a temporary file renamed into
// place, so that a failed write leaves no half file).
int WriteTrace(const shmb_workload_stream_t& stream)
{
    const std::string tmp = FLAGS_write_trace + ".tmp";
    FILE* out = std::fopen(tmp.c_str(), "w");
    if (!out)
        shmb::FlagError("write_trace", FLAGS_write_trace, std::string("cannot be written: ") + std::strerror(errno));
    uint64_t next_id = 0;
    int ret = 0;
    for (size_t i = 0; i < stream.n && ret == 0; i++) {
        ret = shmb_workload_write_line(out, &stream.v[i], next_id);
        next_id += stream.v[i].hash_ids;
    }
    if (std::fclose(out) != 0 || ret < 0 || std::rename(tmp.c_str(), FLAGS_write_trace.c_str()) != 0) {
        std::remove(tmp.c_str());
        shmb::FlagError("write_trace", FLAGS_write_trace, "writing it failed (no space, or no permission?)");
    }
    return 0;
}

// Refuses a run whose src and dst do not fit in /dev/shm's free space, or
// in what the memory cgroup may still charge (SHM pages count there too).
void CheckWorkloadSpace(uint64_t need)
{
    int64_t total, avail;
    const char* where = nullptr;
    if (shmb_sysinfo_fs_space("/dev/shm", &total, &avail) == 0 && static_cast<uint64_t>(avail) < need)
        where = "of /dev/shm";
    else if ((avail = shmb_sysinfo_cgroup_memory_free()) >= 0 && static_cast<uint64_t>(avail) < need)
        where = "of memory in this process's cgroup (memory.max - memory.current)";
    if (where)
        shmb::FlagError("max_request_mb", std::to_string(FLAGS_max_request_mb),
                        "the replay needs " + Mib(static_cast<double>(need)) + " " + where +
                            " (src and dst of the largest request) but only " + Mib(static_cast<double>(avail)) +
                            " is free; lower it");
}

int RunWorkload(const std::string& methods)
{
    RefuseSweepFlags();
    shmb_workload_config_t wc = {};
    if (!(wc.shape.model = shmb_workload_model_find(FLAGS_model.c_str())))
        shmb::FlagError("model", FLAGS_model, "llama3_8b, llama31_70b or deepseek_v3");
    wc.shape.block_tokens = shmb::CheckRange("block_tokens", FLAGS_block_tokens, 1, 1 << 20);
    const int g = shmb_workload_granularity_parse(FLAGS_granularity.c_str());
    if (g < 0)
        shmb::FlagError("granularity", FLAGS_granularity, "layer or block");
    wc.shape.granularity = static_cast<shmb_workload_granularity_t>(g);
    wc.shape.max_request_bytes = shmb::CheckRange("max_request_mb", FLAGS_max_request_mb, 1, 1 << 20) << 20;
    if (methods.find(',') != std::string::npos)
        shmb::FlagError("methods", FLAGS_methods, "one method with --workload");
    wc.method = SHMB_COPY_MEMCPY;
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        if (methods == shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)))
            wc.method = static_cast<shmb_copy_method_t>(m);
    wc.threads = static_cast<int>(shmb::CheckRange("threads", FLAGS_threads, 1, SHMB_TRANSFER_MAX_THREADS));
    wc.cpu = FLAGS_cpu;
    wc.num_segments = shmb::CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    if (shmb_mooncake_path_parse(FLAGS_mooncake_path.c_str(), &wc.mooncake_path) < 0)
        shmb::FlagError("mooncake_path", FLAGS_mooncake_path, "tent or pr192");
    wc.timer_overhead_ns = shmb::TimerOverheadNs();
    wc.shm_prefix = FLAGS_shm_prefix.c_str();
    const uint64_t requests = shmb::CheckRange("requests", FLAGS_requests, 0, 100000000);

    shmb_workload_stream_t stream = {};
    ReadStream(&stream, requests);
    if (!FLAGS_write_trace.empty())
        return WriteTrace(stream);
    shmb_workload_totals_t totals;
    if (shmb_workload_totals(&wc.shape, &stream, &totals) == -E2BIG)
        shmb::FlagError("max_request_mb", std::to_string(FLAGS_max_request_mb),
                        "one block of " + FLAGS_model + " (--block_tokens=" + std::to_string(FLAGS_block_tokens) +
                            ", all layers) does not fit: raise it or lower --block_tokens");
    CheckWorkloadSpace(shmb_workload_shm_bytes(&totals));

    shmb::WarnIfOversubscribed(wc.threads);
    const int named = shmb_path_system(FLAGS_system.c_str());
    shmb_rows_t rows = {};
    shmb::RunRepetitions(nullptr, "a check failed", "the workload replay", [&](int rep, char* why, size_t cap) {
        for (int s = named >= 0 ? named : 0; s < (named >= 0 ? named + 1 : SHMB_LOOKUP_SYSTEMS); s++) {
            wc.system = static_cast<shmb_lookup_system_t>(s);
            wc.name_system = named < 0;
            wc.repetition = rep;
            int ret = shmb_workload_run(&wc, &stream, &rows, why, cap);
            if (ret < 0)
                return ret;
        }
        return 0;
    });
    shmb_workload_stream_free(&stream);

    std::vector<std::string> notes = WorkloadNotes(wc, totals);
    shmb_report_t report = {};
    report.bench = "shm_transfer/workload";
    report.system = shmb::SystemLine(wc.mooncake_path);
    report.variant_label = "part";
    report.speedup_label = "speedup";
    report.rate_is_bytes = 1;
    for (size_t i = 0; i < notes.size() && i < SHMB_REPORT_MAX_NOTES; i++)
        report.notes[i] = notes[i].c_str();
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);
    return 0;
}

shmb_peer_t g_peer;

}  // namespace

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM copy bandwidth: memcpy and other copy kernels between two SHM segments.\n"
               "Usage: shm_transfer_bench [--flag=value ...]",
               __FILE__);
    if (!FLAGS_workload.empty())
        return RunWorkload(Methods());

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
    cfg.threads = static_cast<int>(shmb::CheckRange("threads", FLAGS_threads, 1, SHMB_TRANSFER_MAX_THREADS));
    cfg.time_per_size_ms = static_cast<double>(shmb::CheckRange("time_per_size_ms", FLAGS_time_per_size_ms, 1,
                                                                3600 * 1000));
    std::string methods = Methods();
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        cfg.run[m] = shmb::InList(methods, shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)));
    cfg.cpu = FLAGS_cpu;
    cfg.cold = FLAGS_cold;
    cfg.verify = FLAGS_verify_data;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.timer_overhead_ns = shmb::TimerOverheadNs();
    cfg.num_segments = shmb::CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    const int system = shmb_path_system(FLAGS_system.c_str());
    cfg.translate = system >= 0;
    cfg.system = static_cast<shmb_lookup_system_t>(system >= 0 ? system : 0);
    if (shmb_mooncake_path_parse(FLAGS_mooncake_path.c_str(), &cfg.mooncake_path) < 0)
        shmb::FlagError("mooncake_path", FLAGS_mooncake_path, "tent or pr192");
    if (cfg.translate && cfg.cold)
        shmb::FlagError("cold", "true", "cannot be combined with --system (a fresh segment is no registered buffer)");
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
    report.system = shmb::SystemLine(cfg.mooncake_path);
    report.variant_label = report.system ? "part" : "method";
    report.speedup_label = "speedup_vs_memcpy";
    report.rate_is_bytes = 1;
    shmb_notes_t notes = {};
    int ret = shmb_notes_transfer(&report, &notes, &cfg);
    if (ret < 0)
        shmb::Fail(ret, "composing the notes");
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);
    return 0;
}
