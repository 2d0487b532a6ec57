// shm_address_lookup_bench: translating a peer's address into ours, through
// Mooncake's per-request relocate path and Flow-IPC's handle translation
// (systems), with scan, lower_bound, tree and arithmetic kernels as reference points.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.h"

SHMB_DEFINE_COMMON_FLAGS();
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

namespace {

// --systems: the paired run's systems into cfg, after refusing what cannot
// be paired; their names stay in *names (cfg points into them).
void PairedConfig(shmb_lookup_config_t* cfg, std::vector<std::string>* names)
{
    const std::vector<shmb_system_t> systems = shmb::PairedSystems(names);
    if (systems.empty())
        return;
    for (const char* flag : {"strategies", "sweep_segments"}) {
        const gflags::CommandLineFlagInfo info = gflags::GetCommandLineFlagInfoOrDie(flag);
        if (!info.is_default)
            shmb::FlagError(flag, info.current_value,
                            "cannot be combined with --systems (it lists the systems; one segment count a run)");
    }
    if (cfg->threads > 1)
        shmb::FlagError("threads", std::to_string(FLAGS_threads),
                        "must be 1 with --systems (a paired run alternates the systems on one thread)");
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++)
        cfg->run[s] = 0;
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        cfg->run_system[s] = 0;
    cfg->nsystems = systems.size();
    for (size_t s = 0; s < systems.size(); s++) {
        cfg->systems[s] = systems[s];
        cfg->system_names[s] = (*names)[s].c_str();
        cfg->run_system[systems[s]] = 1;
    }
}

}  // namespace

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM address translation: Mooncake's relocate path against Flow-IPC's handle translation, with scan, "
               "lower_bound, tree and arithmetic kernels as reference points.\nUsage: shm_address_lookup_bench [--flag=value ...]",
               __FILE__);

    shmb_lookup_config_t cfg = {};
    cfg.num_segments = shmb::CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    cfg.num_lookups = shmb::CheckRange("num_lookups", FLAGS_num_lookups, 1, SHMB_LOOKUP_MAX_LOOKUPS);
    cfg.segment_size_mb = shmb::CheckRange("segment_size_mb", FLAGS_segment_size_mb, 1,
                                           static_cast<int64_t>(SHMB_LOOKUP_SPAN_BYTES >> 20));
    cfg.lookup_len_kb = shmb::CheckRange("lookup_len_kb", FLAGS_lookup_len_kb, 1, FLAGS_segment_size_mb * 1024);
    cfg.min_time_ms = static_cast<double>(shmb::CheckRange("min_time_ms", FLAGS_min_time_ms, 0, 3600 * 1000));
    // The seed's --num_lookups is the run's count; an explicit --min_time_ms
    // asks for the timed mode instead (num_lookups per batch).
    cfg.count_given = !gflags::GetCommandLineFlagInfoOrDie("num_lookups").is_default &&
                      gflags::GetCommandLineFlagInfoOrDie("min_time_ms").is_default;
    cfg.sequential = shmb::CheckChoice("pattern", FLAGS_pattern, {"random", "sequential"});
    cfg.mode = static_cast<shmb_lookup_mode_t>(
        shmb::CheckChoice("lookup_mode", FLAGS_lookup_mode, {"throughput", "latency", "both"}));
    if (shmb_lookup_parse_placement(FLAGS_placement.c_str(), &cfg.placement) < 0)
        shmb::FlagError("placement", FLAGS_placement, "descending, ascending or random");
    const std::string paths = shmb::PathNames(SHMB_PATH_SYSTEM | SHMB_PATH_KERNEL);
    std::string strategies = shmb::CheckVariants("strategies", FLAGS_strategies, paths, FLAGS_system, "path");
    cfg.system_rows = !FLAGS_system.empty();
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++)
        cfg.run[s] = shmb::InList(strategies, shmb_lookup_strategy_name(static_cast<shmb_lookup_strategy_t>(s)));
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        cfg.run_system[s] = shmb::InList(strategies, shmb_system_name(static_cast<shmb_system_t>(s)));
    cfg.seed = FLAGS_seed;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.threads = static_cast<int>(shmb::CheckRange("threads", FLAGS_threads, 1, SHMB_LOOKUP_MAX_THREADS));
    cfg.peer_process = FLAGS_peer_process;
    if (cfg.peer_process && cfg.threads > 1)
        shmb::FlagError("threads", std::to_string(FLAGS_threads),
                        "--threads with --peer_process: not supported (the peer translates on one thread)");
    cfg.cpu = FLAGS_cpu;
    cfg.progress = shmb::Progress();
    std::vector<std::string> paired;
    PairedConfig(&cfg, &paired);
    shmb_handoff_bench_config_t handoff = {};
    // The hand-off is not paired: a paired run leaves it out (its header says so).
    const int handoffs = shmb_handoff_bench_config_from_lookup(&cfg, FLAGS_handoff && paired.empty(), &handoff);
    if (handoffs < 0)
        shmb::FlagError("lookup_len_kb", std::to_string(cfg.lookup_len_kb), "at most " +
                        std::to_string(SHMB_HANDOFF_MAX_OBJECT_KB) + " with --handoff=true (the hand-off's objects)");

    const std::vector<uint64_t> counts = FLAGS_sweep_segments.empty() ? std::vector<uint64_t>{cfg.num_segments}
        : shmb::CheckCounts("sweep_segments", FLAGS_sweep_segments, SHMB_LOOKUP_MAX_SEGMENTS, "segment counts");
    const char* count_flag = FLAGS_sweep_segments.empty() ? "num_segments" : "sweep_segments";
    for (uint64_t n : counts) {
        cfg.num_segments = n;
        if (shmb_lookup_bench_check(&cfg) == -EOVERFLOW)
            shmb::FlagError(count_flag, std::to_string(n), std::to_string(n) + " segments of --segment_size_mb=" +
                            std::to_string(FLAGS_segment_size_mb) +
                            " do not fit in the 64 TiB address range the peer's segments are spread over");
    }

    const bool kernels = std::any_of(cfg.run, cfg.run + SHMB_LOOKUP_STRATEGIES, [](int on) { return on != 0; });
    const uint64_t most = *std::max_element(counts.begin(), counts.end());
    // The peer keeps a descriptor per attached segment for the kernels too;
    // a paired run in one process keeps each mooncake instance's at once.
    const uint64_t instances = std::max<uint64_t>(
        1, cfg.peer_process ? 1 : std::count(cfg.systems, cfg.systems + cfg.nsystems, SHMB_SYSTEM_MOONCAKE));
    if (cfg.run_system[SHMB_SYSTEM_MOONCAKE] || (cfg.peer_process && kernels))
        shmb::CheckOpenFiles(count_flag, most * instances);
    cfg.num_segments = most;
    uint64_t need = 0;
    shmb_lookup_bench_shm_bytes(&cfg, &need);
    shmb::CheckShmSpace(count_flag, need);
    shmb::WarnIfOversubscribed(cfg.threads);

    shmb_rows_t rows = {};
    shmb::RunRepetitions(nullptr, "wrong translation", "the lookup benchmark", [&](int rep, char* why, size_t cap) {
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
                shmb::FailRun(ret, nullptr, why, "failed hand-off check", "the hand-off benchmark");
        }
        return ret;
    });

    shmb_report_t report = {};
    report.bench = "shm_lookup";
    report.system = shmb::SystemLine();
    // A system's rows have no variant ("-"): the short header "part", as the
    // transfer's, keeps the table within 120 columns.
    report.variant_label = report.system || cfg.nsystems ? "part" : "strategy";
    shmb_notes_t notes = {};
    int ret = shmb_notes_lookup(&report, &notes, &cfg);
    if (ret < 0)
        shmb::Fail(ret, "planning the threads' CPUs");
    if (handoffs > 0 && (ret = shmb_notes_handoff(&report, &notes, &handoff)) < 0)
        shmb::Fail(ret, "composing the hand-off's notes");
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);
    return 0;
}
