// shm_transfer_bench --workload, and its paired replay (--systems): the
// KV-cache replay's flags checked, its stream read, the library's replay run
// per system (or paired) and its report (shmbench/workload.h; docs/workload.md).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_common.h"
#include "bench_internal.h"
#include "runs.h"

DECLARE_string(workload);
DECLARE_string(methods);
DECLARE_int32(threads);
DECLARE_int64(num_segments);
DECLARE_string(backing);
DECLARE_int64(hugepage_kb);

DEFINE_string(model, "llama3_8b",
              "With --workload: the model whose KV cache moves: llama3_8b, llama31_70b, qwen3_8b, deepseek_v3 or "
              "deepseek_v3_fp8");
DEFINE_int64(block_tokens, 512,
             "With --workload: tokens per KV block (512: Mooncake's KVCache block and trace hash ids; --layout=vllm "
             "without it: 16, vLLM's block; --layout=sglang: a run of contiguous pages)");
DEFINE_string(granularity, "layer",
              "With --workload --layout=layer: a descriptor per (block, layer), K and V together (layer), or per "
              "block holding all layers (block)");
DEFINE_string(layout, "layer",
              "With --workload: whose descriptors: layer (--granularity's), vllm (per layer, K|V and 16-token block "
              "of one TP rank's KV heads, as vLLM's NIXL connector) or sglang (per layer, K|V and run of contiguous "
              "pages, as SGLang's Mooncake sender)");
DEFINE_int64(tp, 1, "With --workload --layout=vllm or sglang: tensor-parallel ranks; the replay moves one rank's "
                    "KV heads (MLA: the whole latent, replicated on every rank)");
DEFINE_int64(requests, 100,
             "With --workload: requests to replay, at most (synthetic: exactly; a trace: its first N, 0: all)");
DEFINE_string(write_trace, "",
              "With --workload: write the stream to this file in Mooncake's JSONL format (hash ids numbered from 0) "
              "and exit without measuring; traces/sample.jsonl is --workload=synthetic --requests=300 output");
DEFINE_int64(max_request_mb, 256,
             "With --workload: a request moves at most this many MB (whole blocks; the rest is cut and counted); "
             "src and dst are the largest request's size");
DEFINE_string(reuse, "off",
              "With --workload: on: a trace's hash ids seen on an earlier line are prefix-cache hits and only a "
              "request's missed blocks move; the header gives the hit share (off: every block moves)");
DEFINE_string(arrivals, "closed",
              "With --workload: closed (requests back to back) or trace (open loop: issued at their timestamps / "
              "--speed by an issuing thread; latency from each request's intended start)");
DEFINE_double(speed, 1.0, "With --workload --arrivals=trace: how much faster than the trace's timestamps to issue");

namespace shmb {

namespace {

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

// "1.50 MiB": a size in the replay's refusals.
std::string Mib(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / 1048576.0);
    return buf;
}

// --write_trace: the stream as a trace file, into the output opened before
// the stream was read (a bad FILE is a bad flag value, exit 2); a failed
// write is exit 1 naming FILE, which stays as it was.
int WriteTrace(const shmb_workload_stream_t& stream, shmb_file_out_t* out)
{
    uint64_t next_id = 0;
    int ret = 0;
    for (size_t i = 0; i < stream.n && ret == 0; i++) {
        ret = shmb_workload_write_line(out->f, &stream.v[i], next_id);
        next_id += stream.v[i].hash_ids;
    }
    CommitOutput("write_trace", FLAGS_write_trace, out, ret);
    return 0;
}

// Refuses a tmpfs run whose src and dst do not fit in /dev/shm's free
// space, or in what the memory cgroup may still charge (SHM pages count
// there too); the other backings are checked by shmb::Backing.
void CheckWorkloadSpace(uint64_t need)
{
    int64_t total, avail;
    const char* where = nullptr;
    if (shmb_sysinfo_fs_space("/dev/shm", &total, &avail) == 0 && static_cast<uint64_t>(avail) < need)
        where = "of /dev/shm";
    else if ((avail = shmb_sysinfo_cgroup_memory_free()) >= 0 && static_cast<uint64_t>(avail) < need)
        where = "of memory in this process's cgroup (its limit - its usage)";
    if (where)
        shmb::FlagError("max_request_mb", std::to_string(FLAGS_max_request_mb),
                        "the replay needs " + Mib(static_cast<double>(need)) + " " + where +
                            " (src and dst of the largest request) but only " + Mib(static_cast<double>(avail)) +
                            " is free; lower it");
}

}  // namespace

int RunWorkload()
{
    shmb_workload_config_t wc = {};
    wc.nsystems = Paired(wc.systems);
    for (size_t s = 0; s < wc.nsystems; s++)
        if (wc.systems[s] == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
            shmb::FlagError("systems", FLAGS_systems, "mooncake_upstream is not covered by the workload replay "
                                                      "(upstream code answers the sweep's translate and submit)");
        else if (wc.systems[s] == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM)
            shmb::FlagError("systems", FLAGS_systems, "flowipc_jemalloc_upstream is not covered by the workload "
                                                      "replay (upstream code answers the sweep's translate)");
    if (!(wc.shape.model = shmb_workload_model_find(FLAGS_model.c_str())))
        shmb::FlagError("model", FLAGS_model, "llama3_8b, llama31_70b, qwen3_8b, deepseek_v3 or deepseek_v3_fp8");
    const int layout = shmb_workload_layout_parse(FLAGS_layout.c_str());
    if (layout < 0)
        shmb::FlagError("layout", FLAGS_layout, "layer, vllm or sglang");
    wc.shape.layout = static_cast<shmb_workload_layout_t>(layout);
    const bool engine = wc.shape.layout != SHMB_WORKLOAD_LAYOUT_LAYER;
    const bool given = !gflags::GetCommandLineFlagInfoOrDie("block_tokens").is_default;
    wc.shape.block_tokens = wc.shape.layout == SHMB_WORKLOAD_LAYOUT_VLLM && !given
                                ? 16
                                : shmb::CheckRange("block_tokens", FLAGS_block_tokens, 1, 1 << 20);
    const int g = shmb_workload_granularity_parse(FLAGS_granularity.c_str());
    if (g < 0)
        shmb::FlagError("granularity", FLAGS_granularity, "layer or block");
    if (engine && !gflags::GetCommandLineFlagInfoOrDie("granularity").is_default)
        shmb::FlagError("granularity", FLAGS_granularity, "only with --layout=layer (vllm and sglang set their own)");
    wc.shape.granularity = static_cast<shmb_workload_granularity_t>(g);
    wc.shape.tp = static_cast<uint32_t>(shmb::CheckRange("tp", FLAGS_tp, 1, 1024));
    const uint32_t heads = wc.shape.model->kv_heads;
    if (wc.shape.tp > 1 && !engine)
        shmb::FlagError("tp", std::to_string(FLAGS_tp), "only with --layout=vllm or sglang");
    if (heads && heads % wc.shape.tp != 0 && wc.shape.tp % heads != 0)
        shmb::FlagError("tp", std::to_string(FLAGS_tp),
                        "must divide " + FLAGS_model + "'s " + std::to_string(heads) + " KV heads or be a multiple of them");
    wc.shape.max_request_bytes = shmb::CheckRange("max_request_mb", FLAGS_max_request_mb, 1, 1 << 20) << 20;
    const std::string methods = CopyMethods();
    if (methods.find(',') != std::string::npos)
        shmb::FlagError("methods", FLAGS_methods, "one method with --workload");
    wc.method = SHMB_COPY_MEMCPY;
    for (int m = 0; m < SHMB_COPY_METHODS; m++)
        if (methods == shmb_copy_method_name(static_cast<shmb_copy_method_t>(m)))
            wc.method = static_cast<shmb_copy_method_t>(m);
    wc.threads = static_cast<int>(shmb::CheckRange("threads", FLAGS_threads, 1, SHMB_TRANSFER_MAX_THREADS));
    wc.cpu = FLAGS_cpu;
    wc.num_segments = shmb::CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    wc.timer_overhead_ns = shmb::TimerOverheadNs();
    wc.shm_prefix = FLAGS_shm_prefix.c_str();
    const uint64_t requests = shmb::CheckRange("requests", FLAGS_requests, 0, 100000000);
    if (FLAGS_reuse != "on" && FLAGS_reuse != "off")
        shmb::FlagError("reuse", FLAGS_reuse, "on or off");
    wc.shape.reuse = FLAGS_reuse == "on";
    if (FLAGS_arrivals != "closed" && FLAGS_arrivals != "trace")
        shmb::FlagError("arrivals", FLAGS_arrivals, "closed or trace");
    wc.open_loop = FLAGS_arrivals == "trace";
    wc.speed = FLAGS_speed;
    if (!(FLAGS_speed > 0 && FLAGS_speed <= 1e6))
        shmb::FlagError("speed", gflags::GetCommandLineFlagInfoOrDie("speed").current_value, "above 0, at most 1e6");
    if (!wc.open_loop && !gflags::GetCommandLineFlagInfoOrDie("speed").is_default)
        shmb::FlagError("speed", gflags::GetCommandLineFlagInfoOrDie("speed").current_value,
                        "only with --arrivals=trace");
    if (wc.open_loop && wc.nsystems)
        shmb::FlagError("arrivals", FLAGS_arrivals, "one system at a time (not with --systems)");
    if (wc.shape.reuse && !FLAGS_write_trace.empty())
        shmb::FlagError("reuse", FLAGS_reuse, "cannot be combined with --write_trace, which numbers hash ids afresh");

    shmb_file_out_t trace = {};
    if (!FLAGS_write_trace.empty()) {
        // the run writes the stream and ends: a JSON file would stay empty
        if (!FLAGS_json_out.empty())
            shmb::FlagError("json_out", shmb::internal::Printable(FLAGS_json_out),
                            "cannot be combined with --write_trace, which writes the stream and measures nothing");
        OpenOutput("write_trace", FLAGS_write_trace, &trace);
    }
    shmb_workload_stream_t stream = {};
    ReadStream(&stream, requests);
    if (trace.f)
        return WriteTrace(stream, &trace);
    shmb_workload_totals_t totals;
    const int counted = shmb_workload_totals(&wc.shape, &stream, &totals);
    if (counted == -ENODATA)
        shmb::FlagError("reuse", FLAGS_reuse, "every request's blocks hit: nothing to move");
    if (counted == -E2BIG)
        shmb::FlagError("max_request_mb", std::to_string(FLAGS_max_request_mb),
                        "one block of " + FLAGS_model + " (--block_tokens=" + std::to_string(wc.shape.block_tokens) +
                            ", all layers) does not fit: raise it or lower --block_tokens");
    const int named = shmb_path_system(FLAGS_system.c_str());
    const bool flowipc = (!wc.nsystems && named != SHMB_SYSTEM_MOONCAKE) || AnyFlowIpc(wc.systems, wc.nsystems);
    wc.backing = shmb::Backing(FLAGS_backing, FLAGS_hugepage_kb, flowipc, "max_request_mb", totals.max_bytes, 2);
    shmb_backing_residency_t granted = {};
    if (wc.backing.kind == SHMB_BACKING_TMPFS)
        CheckWorkloadSpace(shmb_workload_shm_bytes(&totals));
    else
        wc.granted = &granted;

    shmb::WarnIfOversubscribed(wc.threads);
    wc.progress = shmb::Progress();
    shmb_rows_t rows = {};
    shmb::RunRepetitions(nullptr, "a check failed", "the workload replay", [&](int rep, char* why, size_t cap) {
        wc.repetition = rep;
        if (wc.nsystems)  // every system in one replay, request by request
            return shmb_workload_run(&wc, &stream, &rows, why, cap);
        const int first = named >= 0 ? named : 0, last = named >= 0 ? named + 1 : SHMB_SYSTEMS;
        for (int s = first; s < last; s++) {
            shmb_progress_outer(wc.progress, static_cast<uint64_t>(rep * (last - first) + s - first),
                                static_cast<uint64_t>(FLAGS_repetitions * (last - first)));
            wc.system = static_cast<shmb_system_t>(s);
            wc.name_system = named < 0;
            int ret = shmb_workload_run(&wc, &stream, &rows, why, cap);
            if (ret < 0)
                return ret;
        }
        return 0;
    });
    shmb_workload_stream_free(&stream);

    shmb_report_t report = NewReport("shm_transfer/workload", shmb::SystemLine(), 0, "part");
    report.rate_is_bytes = 1;
    shmb_notes_t store = {};
    const std::string path = shmb::internal::Printable(FLAGS_workload);
    const char* source = FLAGS_workload == "synthetic" ? nullptr : path.c_str();
    int noted = shmb_notes_workload(&report, &store, &wc, &totals, source, FLAGS_seed, FLAGS_backing.c_str());
    if (noted >= 0 && wc.nsystems)
        noted = shmb_notes_transfer_paired(&report, &store, wc.systems, wc.nsystems);
    if (noted < 0)
        shmb::Fail(noted, "composing the notes");
    shmb::WriteReport(&report, &rows);
    return 0;
}

}  // namespace shmb
