// shm_transfer_bench --workload, and its paired replay (--systems): the
// KV-cache replay's flags checked, its stream read, the library's replay run
// per system (or paired) and its report (shmbench/workload.h; docs/workload.md).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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

// "<=32 KiB" for the class (16 KiB, 32 KiB] of shmb_workload_totals_t's sizes.
std::string SizeClass(unsigned i)
{
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    return "<=" + std::to_string(1ull << (i % 10)) + " " + units[i / 10];
}

// sglang's submits: one per request, split where a request has more
// descriptors than one submit takes.
std::string SglangSubmits(const shmb_workload_totals_t& t)
{
    const uint64_t per = SHMB_TRANSFER_MAX_PER_SUBMIT;
    std::string s = "submits: one per request (sglang): request_path and request give all of a request's descriptors "
                    "to one submit (shmb_mooncake_engine_submit_n), each translated and copied by the system, odd ones "
                    "read from 64 B before their place so that TENT merges none; SHM-jemalloc's request: its write "
                    "path, a submit per descriptor";
    if (t.descriptors_max > per)
        s += "; at most " + std::to_string(per) + " descriptors per submit: a request of more takes as many submits "
             "as that needs (the largest: " + std::to_string((t.descriptors_max + per - 1) / per) + ")";
    return s;
}

// The engines' layouts, in as many lines as the layer layout's (a paired
// run's notes fill the report's 15): what a descriptor is, how the replay
// submits them (vllm one per batch, where vLLM posts a request's as one;
// sglang a request's in one, as SGLang does), descriptors per request and
// their sizes.
std::vector<std::string> LayoutNotes(const shmb_workload_config_t& wc, const shmb_workload_totals_t& t)
{
    const shmb_workload_shape_t& sh = wc.shape;
    const shmb_workload_model_t* m = sh.model;
    const bool vllm = sh.layout == SHMB_WORKLOAD_LAYOUT_VLLM;
    const std::string tp = std::to_string(sh.tp);
    const std::string heads = m->latent_dim ? "MLA: the whole latent, replicated on every TP rank"
                                            : "one TP rank's KV heads (" +
                                                  std::to_string(m->kv_heads >= sh.tp ? m->kv_heads / sh.tp : 1) +
                                                  " of " + std::to_string(m->kv_heads) + ")";
    std::string sizes = "descriptor sizes (all requests): mean " + Fixed(t.bytes_mean / t.descriptors_mean) + " B;";
    uint64_t all = 0;
    for (uint64_t n : t.sizes)
        all += n;
    for (unsigned i = 0; i < 65; i++)
        if (t.sizes[i])
            sizes += " " + SizeClass(i) + ": " + std::to_string(t.sizes[i]) + " (" +
                     Fixed(100.0 * static_cast<double>(t.sizes[i]) / static_cast<double>(all)) + "%)";
    return {
        "fan-out: layout=" + std::string(shmb_workload_layout_name(sh.layout)) + " block_tokens=" +
            std::to_string(sh.block_tokens) + " tp=" + tp + ": a descriptor per (layer, " +
            (m->latent_dim ? "" : "K|V, ") + (vllm ? "block" : "run of block_tokens contiguous tokens") + "), " +
            heads + (vllm ? "; as vLLM's NIXL connector registers and reads them; every block moves whole; "
                          : "; as SGLang's Mooncake sender merges contiguous pages; the last run only its tokens; ") +
            std::to_string(t.clipped) + " of " + std::to_string(t.requests) + " requests cut to --max_request_mb=" +
            std::to_string(sh.max_request_bytes >> 20) + "; submit: " +
            (vllm ? "vLLM posts a request's descriptors as one NIXL transfer; this replay submits each descriptor as "
                    "its own batch of one (the engine model takes one per call), so request_path pays a batch's fixed "
                    "costs per descriptor: an upper bound"
                  : "SGLang submits a request's descriptors in one batch_transfer_sync; " + SglangSubmits(t)),
        "per request: descriptors mean " + Fixed(t.descriptors_mean) + " (min " + std::to_string(t.descriptors_min) +
            ", max " + std::to_string(t.descriptors_max) + "), bytes mean " + Mib(t.bytes_mean) + ", largest " +
            Mib(static_cast<double>(t.max_bytes)) + "; " + sizes,
    };
}

bool Batched(const shmb_workload_config_t& wc)
{
    return shmb_workload_per_submit(&wc.shape) > 1;
}

// The header line of src and dst: on tmpfs as the sweep's, on another
// backing the sweep's backing note with what the kernel granted.
std::string BackingNote(const shmb_workload_config_t& wc)
{
    if (wc.backing.kind == SHMB_BACKING_TMPFS)
        return "backing: tmpfs (shm_open in /dev/shm, 4 KiB pages): src, dst reserved with posix_fallocate, touched "
               "before timing";
    shmb_notes_t store = {};
    const std::string how = std::string("descriptor k copies src[k*d,(k+1)*d) to dst at the same offset") +
                            (Batched(wc) ? " (sglang's request: odd k from 64 B before)" : "");
    const char* note = shmb_notes_backing(&store, &wc.backing, wc.granted, how.c_str());
    return note ? note : "backing: " + FLAGS_backing;
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
    char speed[32];
    std::snprintf(speed, sizeof(speed), "%g", wc.speed);
    const std::string how =
        wc.open_loop ? std::string("arrivals=trace: issued open-loop at timestamp / ") + speed +
                           " by an issuing thread, served in order by one worker; latency from each request's intended "
                           "start (no coordinated omission); the worker poisons dst before a request and verifies it "
                           "after (untimed, but a request already due waits for them)"
                     : "replayed back to back (arrivals order them; nothing waits)";
    std::vector<std::string> notes = {
        "workload: " + source + ": " + std::to_string(t.requests) + " requests, arrivals over " +
            std::to_string(t.span_ms) + " ms, " + how,
        "model: " + std::string(m->name) + " (" + std::to_string(m->layers) + " layers, " + shape + ", " +
            std::to_string(m->dtype_bytes) + " B per element: " + std::to_string(shmb_workload_token_layer_bytes(m)) +
            " B per token per layer; " + m->source + ")",
    };
    std::vector<std::string> fanout = {
        "fan-out: block_tokens=" + std::to_string(wc.shape.block_tokens) + " granularity=" +
            shmb_workload_granularity_name(wc.shape.granularity) + ": every block of a request's input moves whole; " +
            std::to_string(t.clipped) + " of " + std::to_string(t.requests) + " requests cut to --max_request_mb=" +
            std::to_string(wc.shape.max_request_bytes >> 20),
        "per request: descriptors mean " + Fixed(t.descriptors_mean) + ", bytes mean " + Mib(t.bytes_mean) +
            ", largest " + Mib(static_cast<double>(t.max_bytes)),
    };
    if (wc.shape.layout != SHMB_WORKLOAD_LAYOUT_LAYER)
        fanout = LayoutNotes(wc, t);
    notes.insert(notes.end(), fanout.begin(), fanout.end());
    if (wc.shape.reuse)
        notes.push_back("reuse: on: " + std::to_string(t.hits) + " of " + std::to_string(t.hash_ids) +
                        " blocks (hash ids) hit, seen on an earlier line (" +
                        Fixed(t.hash_ids ? 100.0 * static_cast<double>(t.hits) / static_cast<double>(t.hash_ids) : 0) +
                        "%); a request moves only its missed blocks (input_length - hits x 512 tokens), the figures "
                        "above are of those; " + std::to_string(t.wholly_hit) +
                        " requests wholly hit move nothing and are not replayed");
    const bool batched = Batched(wc);
    notes.insert(notes.end(), {
        BackingNote(wc),
        wc.open_loop
            ? "rows: ns per request (p50, p99, p999 over requests); request: its service, " +
                  std::string(batched ? "one submit of the request's descriptors through the request path"
                                      : "one pass of the request path") +
                  " calling translation and copy per descriptor (SHM-jemalloc: its write path, each descriptor handed "
                  "over), start to done; latency: done - the request's intended start"
            : "rows: ns per request (p50, p99, p999 over requests); request_path: TENT's submit path " +
                  std::string(batched ? "(one submit of the request's descriptors)" : "per descriptor") +
                  ", no translation, no copy; translate: the system's translation of every descriptor; copy: every "
                  "descriptor's copy; request: the request path calling both per descriptor; note: share of the "
                  "request p50",
        wc.open_loop ? "GB_s = bytes of all requests / their service time; dst poisoned before each request and "
                       "every descriptor's bytes verified after it, every translation checked (untimed)"
                     : "GB_s = bytes of all requests / their time; dst poisoned before copy and request and every "
                       "descriptor's bytes verified after each, every translation checked (untimed)",
    });
    return notes;
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

    std::vector<std::string> notes = WorkloadNotes(wc, totals);
    shmb_report_t report = NewReport("shm_transfer/workload", shmb::SystemLine(), 0, "part");
    report.rate_is_bytes = 1;
    AddNotes(&report, notes);
    shmb_notes_t store = {};
    const int noted = wc.nsystems ? shmb_notes_transfer_paired(&report, &store, wc.systems, wc.nsystems) : 0;
    if (noted < 0)
        shmb::Fail(noted, "composing the notes");
    shmb::WriteReport(&report, &rows);
    return 0;
}

}  // namespace shmb
