// shm_allocation_bench: what one SHM allocation costs, Mooncake's shm_open +
// ftruncate + mmap + close per buffer against Flow-IPC's pool allocators
// (boost.interprocess in one SHM pool; jemalloc over SHM pools), with an
// ideal arena as the lower bound.
#include <glog/logging.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "shmbench/alloc_peer.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(num_iterations, 1000, "Number of allocations at each size");
DEFINE_int64(min_size_kb, 4, "Smallest allocation in KB (1 KB = 1024 bytes)");
DEFINE_int64(max_size_kb, 1024, "Largest allocation in KB; sizes double from min to max, max included");
DEFINE_int64(min_ops, SHMB_ALLOC_MIN_OPS,
             "Pools: operations timed per step and size, at least; rounds over the working set repeat "
             "until then");
DEFINE_bool(measure_mmap_only, false,
            "posix: create one segment per size untimed, and time only mmap and munmap (as cleanup)");
DEFINE_bool(cleanup, true, "Unlink the SHM segments after use; false leaves them in /dev/shm");
DEFINE_string(allocator, "posix,arena,bipc,jemalloc,jemalloc_tcache",
              "Allocators to run: posix (Mooncake: shm_open+ftruncate+mmap+close per buffer), "
              "arena (ideal lock-free pool: the lower bound), bipc (Flow-IPC SHM-classic: "
              "boost.interprocess rbtree_best_fit in one SHM pool), jemalloc (Flow-IPC "
              "SHM-jemalloc, no thread cache), jemalloc_tcache (with a thread cache)");
DEFINE_bool(touch, false, "Write one byte per page of every fresh block and time it (first touch)");
DEFINE_int32(threads, 1,
             "Threads running each allocator at once, each pinned to its own allowed CPU when there "
             "are enough (from --cpu on, if given); bipc and jemalloc share one pool, posix and "
             "arena do not");
DEFINE_bool(peer_process, false,
            "A second process (forked at start) takes what is allocated, as a receiver does: attaches each "
            "posix segment by name (rows attach, detach); attaches bipc's and jemalloc's pools and translates "
            "round 0's handles (rows attach, translate); the rows of this process keep their names");

namespace {

const char* kAllocators = "posix,arena,bipc,jemalloc,jemalloc_tcache";

// The allocator of each real system (--system).
shmb_alloc_kind_t SystemAllocator(const std::string& system)
{
    if (system == "mooncake")
        return SHMB_ALLOC_POSIX;
    if (system == "flowipc_classic")
        return SHMB_ALLOC_BIPC;
    return SHMB_ALLOC_JEMALLOC;  // Ipc_arena::allocate: MALLOCX_TCACHE_NONE
}

// The CPUs and their list, "0,1", or "" when the threads are not pinned.
std::string CpuList(const int* cpus, int n)
{
    std::string list;
    for (int i = 0; i < n; i++)
        list += (i ? "," : "") + std::to_string(cpus[i]);
    return list;
}

// The notes on how the rows were measured, for the mode the flags select.
void AddNotes(shmb_report_t* report, const shmb_alloc_config_t& cfg, const std::string& threads_note)
{
    int note = 0;
    if (cfg.peer) {
        report->notes[note++] = "peer_process: attach, detach and translate were measured in a second process, the "
                                "rest here; after each posix allocation (and touch) this process wrote a tag at the "
                                "segment's first byte (untimed), the peer attached it by name (attach = "
                                "shm_open O_RDWR + fstat size check + mmap), read the tag, detached it (detach = "
                                "munmap + close), then this process cleaned it up";
        report->notes[note++] = "peer_process pools (bipc, jemalloc): after round 0's alloc this process tagged every "
                                "block and sent its handle (bipc offset; jemalloc pool id + offset) and the pool "
                                "names; the peer attached a pool on the first handle naming it (attach: one sample "
                                "per pool, bipc shm_open O_RDWR + fstat + mmap, jemalloc shm_open O_RDONLY + mmap + "
                                "repository insert), checked every block's tag through its translation, then timed "
                                "translate (batch means, ns per handle; jemalloc: to_address under the repository "
                                "mutex); speedup of translate = posix attach p50 / its p50; arena: no peer rows (one "
                                "process by design); detach of pools untimed";
    }
    if (report->system) {
        report->notes[note++] = "rows of the system's allocator: alloc and free per block; posix (mooncake): "
                                "alloc = shm_open + ftruncate + mmap + close, free = munmap + shm_unlink; "
                                "- = a step this system does not have";
    } else if (cfg.measure_mmap_only) {
        report->notes[note++] = "posix (--measure_mmap_only): one segment per size, shm_open and ftruncate "
                                "untimed; mmap = mmap of it, cleanup = munmap of it, timed one by one; "
                                "no shm_open, ftruncate, close or shm_unlink is timed";
        report->notes[note++] = "speedup = posix mmap p50 / the pool row's p50 (free: posix munmap p50): "
                                "pools against mmap alone, not against createSharedMemory";
    } else {
        report->notes[note++] = "posix (system: mooncake's createSharedMemory): total = shm_open + ftruncate + "
                                "mmap + close; cleanup = munmap + shm_unlink; one buffer alive at a time";
        report->notes[note++] = cfg.cleanup ? "speedup = posix total p50 / the pool row's p50 (free: posix "
                                              "cleanup p50)"
                                            : "speedup = posix total p50 / the pool row's p50 (free: none, "
                                              "--cleanup=false times no cleanup)";
    }
    if (!report->system)
        report->notes[note++] = "bipc (system: flowipc_classic), jemalloc (system: flowipc_jemalloc; "
                                "jemalloc_tcache: its thread-cached variant), arena (kernel: ideal "
                                "lock-free pool, the lower bound)";
    report->notes[note++] = "pools: alloc, free, alloc_reuse, touch_reuse are batch means (ns per op) over "
                            "rounds; every block checked inside its SHM and not overlapping before any "
                            "figure counts";
    if (cfg.threads > 1) {
        report->notes[note++] = threads_note.c_str();
        report->notes[note++] = "threads: ns = per thread per op (percentiles over every thread's samples), "
                                "iterations = all threads' ops; ops_per_s = all threads' ops / wall time of "
                                "the phases (posix: on total, touch, cleanup only); posix: own segments per "
                                "thread; bipc, jemalloc, jemalloc_tcache: ONE pool shared by all (jemalloc_tcache: "
                                "a tcache per thread); arena: one arena per thread (no sharing, the bound)";
    }
}

shmb_peer_t g_peer;
bool g_peer_started;

}  // namespace

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM allocation cost: Mooncake's shm_open + ftruncate + mmap + close per buffer "
               "against Flow-IPC's pool allocators and an ideal arena.\n"
               "Usage: shm_allocation_bench [--flag=value ...]",
               __FILE__);

    shmb_alloc_config_t cfg = {};
    cfg.num_iterations = shmb::CheckRange("num_iterations", FLAGS_num_iterations, 1,
                                          SHMB_ALLOC_MAX_ITERATIONS);
    cfg.min_size_kb = shmb::CheckRange("min_size_kb", FLAGS_min_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.max_size_kb = shmb::CheckRange("max_size_kb", FLAGS_max_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.min_ops = shmb::CheckRange("min_ops", FLAGS_min_ops, 1, SHMB_ALLOC_MAX_MIN_OPS);
    if (cfg.min_size_kb > cfg.max_size_kb)
        shmb::FlagError("min_size_kb", std::to_string(FLAGS_min_size_kb),
                        "must not exceed --max_size_kb=" + std::to_string(FLAGS_max_size_kb));
    std::string allocators = shmb::CheckList("allocator", FLAGS_allocator, kAllocators);
    if (!FLAGS_system.empty()) {
        if (!gflags::GetCommandLineFlagInfoOrDie("allocator").is_default)
            shmb::FlagError("allocator", FLAGS_allocator, "cannot be combined with --system (it selects the allocator)");
        if (FLAGS_measure_mmap_only)
            shmb::FlagError("measure_mmap_only", "true", "cannot be combined with --system");
        allocators = shmb_alloc_kind_name(SystemAllocator(FLAGS_system));
        cfg.system_rows = 1;
    }
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        cfg.run[k] = shmb::InList(allocators, shmb_alloc_kind_name(static_cast<shmb_alloc_kind_t>(k)));
    cfg.measure_mmap_only = FLAGS_measure_mmap_only;
    cfg.cleanup = FLAGS_cleanup;
    cfg.touch = FLAGS_touch;
    cfg.seed = FLAGS_seed;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.threads = static_cast<int>(shmb::CheckRange("threads", FLAGS_threads, 1, SHMB_ALLOC_MAX_THREADS));
    if (FLAGS_peer_process && cfg.threads > 1)
        shmb::FlagError("threads", std::to_string(FLAGS_threads),
                        "not supported with --peer_process (the peer serves one allocating thread)");
    if (FLAGS_peer_process && FLAGS_measure_mmap_only)
        shmb::FlagError("measure_mmap_only", "true",
                        "not supported with --peer_process (one segment per size: nothing new for the peer to attach)");
    if (FLAGS_peer_process)
        cfg.peer = &g_peer;
    cfg.cpu = FLAGS_cpu;
    std::string threads_note;
    if (cfg.threads > 1) {
        std::vector<int> cpus(cfg.threads);
        int pinned = shmb_sysinfo_plan_cpus(cfg.cpu, cfg.threads, cpus.data());
        if (pinned < 0)
            shmb::Fail(pinned, "reading the allowed CPUs");
        threads_note = "threads: " + std::to_string(cfg.threads) + " at once per allocator and size, " +
                       (pinned ? "pinned to CPUs " + CpuList(cpus.data(), cfg.threads)
                               : std::string("not pinned (more threads than allowed CPUs)")) +
                       "; a barrier starts every timed phase";
    }

    uint64_t need = 0;
    int ret = shmb_alloc_bench_shm_bytes(&cfg, FLAGS_repetitions, &need);
    if (ret == -EINVAL)
        shmb::FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                        "the arena cannot hold --num_iterations (at least 2048) blocks of this size "
                        "(16 TiB at most): lower it or leave arena out of --allocator");
    if (ret < 0)
        shmb::FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                        "the pools of --num_iterations blocks of this size overflow");
    shmb::WarnIfOversubscribed(cfg.threads);
    shmb::CheckShmSpace("max_size_kb", need);

    if (FLAGS_peer_process) {
        ret = shmb_alloc_peer_start(&g_peer, cfg.shm_prefix);
        if (ret < 0)
            shmb::Fail(ret, "starting the peer process");
        g_peer_started = true;
    }
    shmb_rows_t rows = {};
    uint64_t kept = 0;
    for (int rep = 0; rep < FLAGS_repetitions; rep++) {
        cfg.repetition = rep;
        char why[256] = "";
        ret = shmb_alloc_bench_run(&cfg, &rows, &kept, why, sizeof(why));
        if (ret < 0)
            shmb::FailRun(ret, g_peer_started ? &g_peer : nullptr, why, "wrong allocation", "the allocation benchmark");
    }
    if (g_peer_started) {
        ret = shmb_peer_stop(&g_peer);
        g_peer_started = false;
        if (ret < 0)
            shmb::FailRun(ret, nullptr, "", "wrong allocation", "the allocation benchmark");
    }

    shmb_report_t report = {};
    report.bench = "shm_alloc";
    report.system = FLAGS_system.empty() ? nullptr : FLAGS_system.c_str();
    report.variant_label = report.system ? nullptr : "allocator";
    report.speedup_label = "speedup_vs_posix";
    AddNotes(&report, cfg, threads_note);
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);

    if (kept > 0) {
        char clean[4 * SHMB_ERROR_OBJECT_MAX + 40];
        shmb_error_clean_command(FLAGS_shm_prefix.c_str(), clean, sizeof(clean));
        std::fprintf(stderr,
                     "%s: left %llu segment%s in /dev/shm (--cleanup=false); once this process has "
                     "exited, remove them with: %s\n",
                     argv[0], static_cast<unsigned long long>(kept), kept == 1 ? "" : "s", clean);
    }
    return 0;
}
