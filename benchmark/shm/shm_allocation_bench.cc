// shm_allocation_bench: what one SHM allocation costs, shm_open + ftruncate +
// mmap per buffer (today) against a pre-mapped arena (Flow-IPC).
#include <glog/logging.h>

#include <cstdio>

#include "bench_common.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(num_iterations, 1000, "Number of allocations at each size");
DEFINE_int64(min_size_kb, 4, "Smallest allocation in KB (1 KB = 1024 bytes)");
DEFINE_int64(max_size_kb, 1024, "Largest allocation in KB; sizes double from min to max, max included");
DEFINE_bool(measure_mmap_only, false,
            "Create one segment per size untimed, and time only mmap and munmap (as cleanup)");
DEFINE_bool(cleanup, true, "Unlink the SHM segments after use; false leaves them in /dev/shm");
DEFINE_string(allocator, "posix,arena", "Allocators to run: posix (shm_open+ftruncate+mmap), arena");
DEFINE_bool(touch, false, "Write one byte per page of every fresh block and time it (first touch)");

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM allocation cost: shm_open + ftruncate + mmap per buffer against a "
               "pre-mapped arena.\nUsage: shm_allocation_bench [--flag=value ...]",
               __FILE__);

    shmb_alloc_config_t cfg = {};
    cfg.num_iterations = shmb::CheckRange("num_iterations", FLAGS_num_iterations, 1,
                                          SHMB_ALLOC_MAX_ITERATIONS);
    cfg.min_size_kb = shmb::CheckRange("min_size_kb", FLAGS_min_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.max_size_kb = shmb::CheckRange("max_size_kb", FLAGS_max_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    if (cfg.min_size_kb > cfg.max_size_kb)
        shmb::FlagError("min_size_kb", std::to_string(FLAGS_min_size_kb),
                        "must not exceed --max_size_kb=" + std::to_string(FLAGS_max_size_kb));
    std::string allocators = shmb::CheckList("allocator", FLAGS_allocator, "posix,arena");
    cfg.posix = shmb::InList(allocators, "posix");
    cfg.arena = shmb::InList(allocators, "arena");
    cfg.measure_mmap_only = FLAGS_measure_mmap_only;
    cfg.cleanup = FLAGS_cleanup;
    cfg.touch = FLAGS_touch;
    cfg.seed = FLAGS_seed;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();

    uint64_t need = 0;
    if (shmb_alloc_bench_shm_bytes(&cfg, &need) < 0)
        shmb::FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                        "the arena of --num_iterations blocks of this size overflows");
    shmb::CheckShmSpace(cfg.arena ? "num_iterations" : "max_size_kb", need);

    shmb_rows_t rows = {};
    uint64_t kept = 0;
    for (int rep = 0; rep < FLAGS_repetitions; rep++) {
        cfg.repetition = rep;
        int ret = shmb_alloc_bench_run(&cfg, &rows, &kept);
        if (ret < 0)
            shmb::Fail(ret, "the allocation benchmark");
    }

    shmb_report_t report = {};
    report.bench = "shm_alloc";
    report.variant_label = "allocator";
    report.speedup_label = "speedup_vs_posix";
    report.notes[0] = "posix: each allocation is cleaned up before the next; total = shm_open + ftruncate + mmap";
    report.notes[1] = "arena: alloc, free, alloc_reuse, touch_reuse are batch means (ns per op); "
                      "speedup = posix total (free: posix cleanup) / arena";
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);

    if (kept > 0)
        std::fprintf(stderr,
                     "%s: left %llu segments in /dev/shm (--cleanup=false); remove them with: "
                     "rm -f /dev/shm%s*\n",
                     argv[0], static_cast<unsigned long long>(kept), FLAGS_shm_prefix.c_str());
    return 0;
}
