// shm_address_lookup_bench, and its paired run (--systems): the flags into
// shmb_lookup_config_t (and the hand-off's), the run over the segment counts
// and its report.
#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "bench_common.h"
#include "runs.h"

DEFINE_int64(num_segments, 100, "Number of SHM segments to simulate");
DEFINE_int64(num_lookups, 10000,
             "Number of lookups per row when given (batches of 4096, at least one; --min_time_ms then not "
             "applied); by default, per timed batch, batches repeating for --min_time_ms; requests come from a "
             "pool of at least 131072 distinct ones, so that no batch replays what the branch predictors learnt");
DEFINE_int64(segment_size_mb, 64, "Size of each segment in MB (1 MB = 1048576 bytes)");
DEFINE_string(strategies, "mooncake,flowipc_classic,flowipc_jemalloc,linear,lower_bound,tree,arithmetic",
              "Paths to measure. Systems: mooncake (relocateSharedMemoryAddress), "
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
DEFINE_string(placement, "descending",
              "Order the peer registers its segments in, by address: descending (Mooncake's: each "
              "buffer a fresh mmap, which Linux places below the previous one), ascending, or random");
DEFINE_bool(handoff, true,
            "Also time Flow-IPC's object hand-off (rows step handoff, for each Flow-IPC system selected): "
            "lend, the handle message, borrow, release, the return message and the lender's free, on "
            "objects of --lookup_len_kb; with --peer_process the borrower is a second process");

namespace shmb {
namespace {

// --systems into cfg: the systems alone run.
void PairedConfig(shmb_lookup_config_t* cfg)
{
    if (!(cfg->nsystems = Paired(cfg->systems, cfg->system_names)))
        return;
    std::fill(cfg->run, cfg->run + SHMB_LOOKUP_STRATEGIES, 0);
    std::fill(cfg->run_system, cfg->run_system + SHMB_SYSTEMS, 0);
    for (size_t s = 0; s < cfg->nsystems; s++)
        cfg->run_system[cfg->systems[s]] = 1;
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
    PairedConfig(&cfg);
    shmb_handoff_bench_config_t handoff = {};
    // The hand-off is not paired: a paired run leaves it out (its header says so).
    const int handoffs = shmb_handoff_bench_config_from_lookup(&cfg, FLAGS_handoff && !cfg.nsystems, &handoff);
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

    shmb_report_t report = NewReport("shm_lookup", SystemLine(), cfg.nsystems, "strategy");
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
