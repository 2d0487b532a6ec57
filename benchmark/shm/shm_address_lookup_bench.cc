// shm_address_lookup_bench: translating a peer's address into ours, by linear
// scan (today), lower_bound over a sorted vector or a tree, and O(1) handle
// arithmetic (Flow-IPC).
#include <glog/logging.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "bench_common.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(num_segments, 100, "Number of SHM segments to simulate");
DEFINE_int64(num_lookups, 10000,
             "Number of lookups per timed batch (at least 4096); requests come from a pool of at "
             "least 131072 distinct ones, so that no batch replays what the branch predictors learnt");
DEFINE_int64(segment_size_mb, 64, "Size of each segment in MB (1 MB = 1048576 bytes)");
DEFINE_string(strategies, "linear,lower_bound,tree,arithmetic", "Strategies to measure");
DEFINE_string(sweep_segments, "",
              "Comma-separated segment counts, e.g. 1,10,100,1000,10000: every strategy at every "
              "count (default: --num_segments only)");
DEFINE_int64(lookup_len_kb, 4, "Length of each request in KB");
DEFINE_string(pattern, "random", "Request pattern: random or sequential");
DEFINE_int64(min_time_ms, 50, "Time each strategy at least this long per segment count");

namespace {

const char* kStrategies = "linear,lower_bound,tree,arithmetic";

std::vector<uint64_t> SegmentCounts()
{
    if (FLAGS_sweep_segments.empty())
        return {static_cast<uint64_t>(FLAGS_num_segments)};
    std::vector<uint64_t> counts;
    std::stringstream ss(FLAGS_sweep_segments);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        unsigned long long v = std::strtoull(item.c_str(), &end, 10);
        if (item.empty() || item[0] == '-' || *end != '\0' || v == 0 || v > SHMB_LOOKUP_MAX_SEGMENTS)
            shmb::FlagError("sweep_segments", FLAGS_sweep_segments,
                            "a comma-separated list of segment counts between 1 and " +
                                std::to_string(SHMB_LOOKUP_MAX_SEGMENTS));
        counts.push_back(v);
    }
    if (counts.empty() || FLAGS_sweep_segments.back() == ',')
        shmb::FlagError("sweep_segments", FLAGS_sweep_segments, "a comma-separated list of segment counts");
    return counts;
}

}  // namespace

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM address translation: linear scan against lower_bound, tree and O(1) handle "
               "arithmetic.\nUsage: shm_address_lookup_bench [--flag=value ...]",
               __FILE__);

    shmb_lookup_config_t cfg = {};
    cfg.num_segments = shmb::CheckRange("num_segments", FLAGS_num_segments, 1, SHMB_LOOKUP_MAX_SEGMENTS);
    cfg.num_lookups = shmb::CheckRange("num_lookups", FLAGS_num_lookups, 1, SHMB_LOOKUP_MAX_LOOKUPS);
    cfg.segment_size_mb = shmb::CheckRange("segment_size_mb", FLAGS_segment_size_mb, 1,
                                           static_cast<int64_t>(SHMB_LOOKUP_SPAN_BYTES >> 20));
    cfg.lookup_len_kb = shmb::CheckRange("lookup_len_kb", FLAGS_lookup_len_kb, 1,
                                         FLAGS_segment_size_mb * 1024);
    shmb::CheckRange("min_time_ms", FLAGS_min_time_ms, 0, 3600 * 1000);
    cfg.min_time_ms = static_cast<double>(FLAGS_min_time_ms);
    if (FLAGS_pattern != "random" && FLAGS_pattern != "sequential")
        shmb::FlagError("pattern", FLAGS_pattern, "random or sequential");
    cfg.sequential = FLAGS_pattern == "sequential";
    std::string strategies = shmb::CheckList("strategies", FLAGS_strategies, kStrategies);
    for (int s = 0; s < SHMB_LOOKUP_STRATEGIES; s++)
        cfg.run[s] = shmb::InList(strategies, shmb_lookup_strategy_name(static_cast<shmb_lookup_strategy_t>(s)));
    cfg.seed = FLAGS_seed;

    std::vector<uint64_t> counts = SegmentCounts();
    const char* count_flag = FLAGS_sweep_segments.empty() ? "num_segments" : "sweep_segments";
    for (uint64_t n : counts) {
        cfg.num_segments = n;
        if (shmb_lookup_bench_check(&cfg) == -EOVERFLOW)
            shmb::FlagError(count_flag, std::to_string(n),
                            std::to_string(n) + " segments of --segment_size_mb=" +
                                std::to_string(FLAGS_segment_size_mb) +
                                " do not fit in the 64 TiB address range the peer's segments are spread over");
    }

    shmb_rows_t rows = {};
    for (int rep = 0; rep < FLAGS_repetitions; rep++) {
        cfg.repetition = rep;
        for (uint64_t n : counts) {
            cfg.num_segments = n;
            char why[256] = "";
            int ret = shmb_lookup_bench_run(&cfg, &rows, why, sizeof(why));
            if (ret == -EPROTO) {
                std::fprintf(stderr, "%s: wrong translation, no number reported: %s\n", argv[0], why);
                return 1;
            }
            if (ret < 0)
                shmb::Fail(ret, "the lookup benchmark");
        }
    }

    static std::string setup;
    setup = "segments of " + std::to_string(FLAGS_segment_size_mb) + " MB, requests of " +
            std::to_string(FLAGS_lookup_len_kb) + " KB, " + FLAGS_pattern +
            " pattern; every translation verified before timing";
    shmb_report_t report = {};
    report.bench = "shm_lookup";
    report.variant_label = "strategy";
    report.speedup_label = "speedup_vs_linear";
    report.notes[0] = setup.c_str();
    report.notes[1] = "ns per lookup = batch time / lookups in the batch (>= 4096), batches walking through "
                      "a pool of >= 131072 distinct requests; p50, p99, max over batches";
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);
    return 0;
}
