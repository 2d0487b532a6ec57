// shm_allocation_bench: what one SHM allocation costs, Mooncake's shm_open +
// ftruncate + mmap + close per buffer against Flow-IPC's pool allocators
// (boost.interprocess in one SHM pool; jemalloc over SHM pools), with an
// ideal arena as the lower bound.
#include <cerrno>
#include <string>

#include "bench_common.h"
#include "shmbench/alloc_peer.h"

SHMB_DEFINE_COMMON_FLAGS();
DEFINE_int64(num_iterations, 1000, "posix: buffers registered at each size, each timed one by one");
DEFINE_int64(min_size_kb, 4, "Smallest allocation in KB (1 KB = 1024 bytes)");
DEFINE_int64(max_size_kb, 1024, "Largest allocation in KB; sizes double from min to max, max included");
DEFINE_int64(min_ops, SHMB_ALLOC_MIN_OPS,
             "Pools: operations timed per step and size, at least; rounds over the working set repeat "
             "until then");
DEFINE_int64(working_set, SHMB_ALLOC_ARENA_MIN_BATCH,
             "Pools: blocks live at once in each round (allocated, freed in a random order, allocated "
             "again); a thread cache serves only a working set it can hold (the notes say its limits)");
DEFINE_bool(measure_mmap_only, false,
            "posix: create one segment per size untimed, and time only mmap and munmap (as cleanup)");
DEFINE_bool(cleanup, true, "Unlink the SHM segments after use; false leaves them in /dev/shm");
DEFINE_string(allocator, "posix,offset,arena,bipc,jemalloc",
              "Allocators to run: posix (Mooncake's registration: shm_open+ftruncate+mmap+close per "
              "buffer), offset (Mooncake Store's per-block OffsetBufferAllocator inside one registered "
              "segment), arena (ideal lock-free pool: the lower bound), bipc (Flow-IPC SHM-classic: "
              "boost.interprocess rbtree_best_fit in one SHM pool), jemalloc (Flow-IPC SHM-jemalloc, no "
              "thread cache); by name only: jemalloc_tcache (with a thread cache)");
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

shmb_peer_t g_peer;

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
    cfg.working_set = shmb::CheckRange("working_set", FLAGS_working_set, 1, SHMB_ALLOC_MAX_ITERATIONS);
    if (cfg.min_size_kb > cfg.max_size_kb)
        shmb::FlagError("min_size_kb", std::to_string(FLAGS_min_size_kb),
                        "must not exceed --max_size_kb=" + std::to_string(FLAGS_max_size_kb));
    const char* system_allocators = shmb_alloc_system_allocators(FLAGS_system.c_str());
    const std::string kinds = shmb::JoinNames(
        SHMB_ALLOC_KINDS, [](int k) { return shmb_alloc_kind_name(static_cast<shmb_alloc_kind_t>(k)); });
    std::string allocators = shmb::CheckVariants("allocator", FLAGS_allocator, kinds,
                                                 system_allocators ? system_allocators : "", "allocator");
    cfg.system_rows = !FLAGS_system.empty();
    if (cfg.system_rows && FLAGS_measure_mmap_only)
        shmb::FlagError("measure_mmap_only", "true", "cannot be combined with --system");
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
    if (FLAGS_peer_process && (cfg.min_ops + cfg.working_set - 1) / cfg.working_set > SHMB_ALLOC_PEER_MAX_ROUNDS)
        shmb::FlagError("working_set", std::to_string(FLAGS_working_set),
                        "too small for --peer_process: --min_ops / --working_set must not exceed " +
                            std::to_string(SHMB_ALLOC_PEER_MAX_ROUNDS) + " rounds");
    if (FLAGS_peer_process)
        cfg.peer = &g_peer;
    cfg.cpu = FLAGS_cpu;

    uint64_t need = 0;
    int ret = shmb_alloc_bench_shm_bytes(&cfg, FLAGS_repetitions, &need);
    if (ret == -EINVAL)
        shmb::FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                        "the arena cannot hold --working_set blocks of this size (16 TiB at most): "
                        "lower it or leave arena out of --allocator");
    if (ret < 0)
        shmb::FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                        "the pools of --working_set blocks of this size overflow");
    shmb::WarnIfOversubscribed(cfg.threads);
    shmb::CheckShmSpace("max_size_kb", need);

    shmb_peer_t* peer = FLAGS_peer_process ? shmb::StartPeer(shmb_alloc_peer_start, &g_peer) : nullptr;
    shmb_rows_t rows = {};
    uint64_t kept = 0;
    shmb::RunRepetitions(peer, "wrong allocation", "the allocation benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        return shmb_alloc_bench_run(&cfg, &rows, &kept, why, cap);
    });

    shmb_report_t report = {};
    report.bench = "shm_alloc";
    report.system = FLAGS_system.empty() ? nullptr : FLAGS_system.c_str();
    report.variant_label = report.system ? nullptr : "allocator";
    report.speedup_label = "speedup_vs_mooncake";
    shmb_notes_t notes = {};
    ret = shmb_notes_alloc(&report, &notes, &cfg);
    if (ret < 0)
        shmb::Fail(ret, "planning the threads' CPUs");
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);

    shmb::ReportLeftSegments(kept);
    return 0;
}
