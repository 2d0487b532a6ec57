// shm_address_lookup_bench, and its paired run (--systems): the flags into
// shmb_lookup_config_t (and the hand-off's), the run over the segment counts
// and its report.
#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "bench_common.h"
#include "runs.h"

DECLARE_int64(num_segments);
DECLARE_int64(num_lookups);
DECLARE_int64(segment_size_mb);
DECLARE_string(strategies);
DECLARE_string(sweep_segments);
DECLARE_int64(lookup_len_kb);
DECLARE_string(pattern);
DECLARE_int64(min_time_ms);
DECLARE_string(lookup_mode);
DECLARE_int32(threads);
DECLARE_bool(peer_process);
DECLARE_string(mooncake_path);
DECLARE_string(placement);
DECLARE_bool(handoff);

namespace shmb {
namespace {

// --systems into cfg: the systems alone run; their names stay in *names
// (cfg points into them).
void PairedConfig(shmb_lookup_config_t* cfg, std::vector<std::string>* names)
{
    const std::vector<shmb_system_t> systems = PairedSystems(names);
    if (systems.empty())
        return;
    std::fill(cfg->run, cfg->run + SHMB_LOOKUP_STRATEGIES, 0);
    std::fill(cfg->run_system, cfg->run_system + SHMB_SYSTEMS, 0);
    cfg->nsystems = systems.size();
    for (size_t s = 0; s < systems.size(); s++) {
        cfg->systems[s] = systems[s];
        cfg->system_names[s] = (*names)[s].c_str();
        cfg->run_system[systems[s]] = 1;
    }
}

// The flags of the translation paths into a config.
shmb_lookup_config_t Config()
{
    shmb_lookup_config_t cfg = {};
    cfg.num_segments = CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    cfg.num_lookups = CheckRange("num_lookups", FLAGS_num_lookups, 1, SHMB_LOOKUP_MAX_LOOKUPS);
    cfg.segment_size_mb = CheckRange("segment_size_mb", FLAGS_segment_size_mb, 1,
                                     static_cast<int64_t>(SHMB_LOOKUP_SPAN_BYTES >> 20));
    cfg.lookup_len_kb = CheckRange("lookup_len_kb", FLAGS_lookup_len_kb, 1, FLAGS_segment_size_mb * 1024);
    cfg.min_time_ms = static_cast<double>(CheckRange("min_time_ms", FLAGS_min_time_ms, 0, 3600 * 1000));
    // The seed's --num_lookups is the run's count; an explicit --min_time_ms
    // asks for the timed mode instead (num_lookups per batch).
    cfg.count_given = !gflags::GetCommandLineFlagInfoOrDie("num_lookups").is_default &&
                      gflags::GetCommandLineFlagInfoOrDie("min_time_ms").is_default;
    cfg.sequential = CheckChoice("pattern", FLAGS_pattern, {"random", "sequential"});
    cfg.mode = static_cast<shmb_lookup_mode_t>(
        CheckChoice("lookup_mode", FLAGS_lookup_mode, {"throughput", "latency", "both"}));
    if (shmb_lookup_parse_placement(FLAGS_placement.c_str(), &cfg.placement) < 0)
        FlagError("placement", FLAGS_placement, "descending, ascending or random");
    if (shmb_mooncake_path_parse(FLAGS_mooncake_path.c_str(), &cfg.mooncake_path) < 0)
        FlagError("mooncake_path", FLAGS_mooncake_path, "tent or pr192");
    const std::string paths = PathNames(SHMB_PATH_SYSTEM | SHMB_PATH_KERNEL);
    std::string strategies = CheckVariants("strategies", FLAGS_strategies, paths, FLAGS_system, "path");
    cfg.system_rows = !FLAGS_system.empty();
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++)
        cfg.run[s] = InList(strategies, shmb_lookup_strategy_name(static_cast<shmb_lookup_strategy_t>(s)));
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        cfg.run_system[s] = InList(strategies, shmb_system_name(static_cast<shmb_system_t>(s)));
    cfg.seed = FLAGS_seed;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.threads = static_cast<int>(CheckRange("threads", FLAGS_threads, 1, SHMB_LOOKUP_MAX_THREADS));
    cfg.peer_process = FLAGS_peer_process;
    if (cfg.peer_process && cfg.threads > 1)
        FlagError("threads", std::to_string(FLAGS_threads),
                  "--threads with --peer_process: not supported (the peer translates on one thread)");
    cfg.cpu = FLAGS_cpu;
    cfg.progress = Progress();
    return cfg;
}

}  // namespace

int RunLookup()
{
    shmb_lookup_config_t cfg = Config();
    std::vector<std::string> paired;
    PairedConfig(&cfg, &paired);
    shmb_handoff_bench_config_t handoff = {};
    // The hand-off is not paired: a paired run leaves it out (its header says so).
    const int handoffs = shmb_handoff_bench_config_from_lookup(&cfg, FLAGS_handoff && paired.empty(), &handoff);
    if (handoffs < 0)
        FlagError("lookup_len_kb", std::to_string(cfg.lookup_len_kb),
                  "at most " + std::to_string(SHMB_HANDOFF_MAX_OBJECT_KB) + " with --handoff=true (the hand-off's objects)");

    const std::vector<uint64_t> counts = FLAGS_sweep_segments.empty() ? std::vector<uint64_t>{cfg.num_segments}
        : CheckCounts("sweep_segments", FLAGS_sweep_segments, SHMB_LOOKUP_MAX_SEGMENTS, "segment counts");
    const char* count_flag = FLAGS_sweep_segments.empty() ? "num_segments" : "sweep_segments";
    for (uint64_t n : counts) {
        cfg.num_segments = n;
        if (shmb_lookup_bench_check(&cfg) == -EOVERFLOW)
            FlagError(count_flag, std::to_string(n),
                      std::to_string(n) + " segments of --segment_size_mb=" + std::to_string(FLAGS_segment_size_mb) +
                          " do not fit in the 64 TiB address range the peer's segments are spread over");
    }

    const bool kernels = std::any_of(cfg.run, cfg.run + SHMB_LOOKUP_STRATEGIES, [](int on) { return on != 0; });
    const uint64_t most = *std::max_element(counts.begin(), counts.end());
    // The peer keeps a descriptor per attached segment for the kernels too;
    // a paired run in one process keeps each mooncake instance's at once.
    const uint64_t instances = std::max<uint64_t>(
        1, cfg.peer_process ? 1 : std::count(cfg.systems, cfg.systems + cfg.nsystems, SHMB_SYSTEM_MOONCAKE));
    if (cfg.run_system[SHMB_SYSTEM_MOONCAKE] || (cfg.peer_process && kernels))
        CheckOpenFiles(count_flag, most * instances);
    cfg.num_segments = most;
    uint64_t need = 0;
    shmb_lookup_bench_shm_bytes(&cfg, &need);
    CheckShmSpace(count_flag, need);
    WarnIfOversubscribed(cfg.threads);

    shmb_rows_t rows = {};
    RunRepetitions(nullptr, "wrong translation", "the lookup benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        int ret = 0;
        for (size_t i = 0; i < counts.size() && ret == 0; i++) {
            cfg.num_segments = counts[i];
            shmb_progress_outer(cfg.progress, rep * counts.size() + i, FLAGS_repetitions * counts.size());
            ret = shmb_lookup_bench_run(&cfg, &rows, why, cap);
            if (ret < 0 || handoffs <= 0)
                continue;
            handoff.segments = counts[i];
            handoff.repetition = rep;
            ret = shmb_handoff_bench_run(&handoff, &rows, why, cap);
            if (ret < 0)
                FailRun(ret, nullptr, why, "failed hand-off check", "the hand-off benchmark");
        }
        return ret;
    });

    shmb_report_t report = NewReport("shm_lookup", SystemLine(cfg.mooncake_path), cfg.nsystems, "strategy");
    shmb_notes_t notes = {};
    int ret = shmb_notes_lookup(&report, &notes, &cfg);
    if (ret < 0)
        Fail(ret, "planning the threads' CPUs");
    if (handoffs > 0 && (ret = shmb_notes_handoff(&report, &notes, &handoff)) < 0)
        Fail(ret, "composing the hand-off's notes");
    WriteReport(&report, &rows);
    return 0;
}

}  // namespace shmb
