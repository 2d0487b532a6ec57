// shm_allocation_bench's allocators, and their paired run (--systems): the
// flags into shmb_alloc_config_t, the run and its report.
#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "bench_common.h"
#include "runs.h"
#include "shmbench/alloc_peer.h"
#include "shmbench/upstream.h"

DECLARE_string(allocator);
DECLARE_int64(pool_mb);

DEFINE_int64(num_iterations, 1000,
             "posix: buffers registered at each size, each timed one by one; when given (and --min_ops is not), "
             "also the pools' operations per step and size, if fewer than --min_ops");
DEFINE_int64(min_size_kb, 4, "Smallest allocation in KB (1 KB = 1024 bytes)");
DEFINE_int64(max_size_kb, 1024, "Largest allocation in KB; sizes double from min to max, max included");
DEFINE_int64(min_ops, SHMB_ALLOC_MIN_OPS,
             "Pools: operations timed per step and size, at least; rounds over the working set repeat "
             "until then (one round at least: a note says so when that is more)");
DEFINE_int64(working_set, SHMB_ALLOC_ARENA_MIN_BATCH,
             "Pools: blocks live at once in each round (allocated, freed in a random order, allocated "
             "again); a thread cache serves only a working set it can hold (the notes say its limits)");
DEFINE_bool(measure_mmap_only, false,
            "posix: create one segment per size untimed, and time only mmap and munmap (as cleanup)");
DEFINE_bool(cleanup, true, "Unlink the SHM segments after use; false leaves them in /dev/shm");
DEFINE_bool(touch, false, "Write one byte per page of every fresh block and time it (first touch)");
DEFINE_int32(threads, 1,
             "Threads running each allocator at once, each pinned to its own allowed CPU when there "
             "are enough (from --cpu on, if given); bipc and jemalloc share one pool, posix and "
             "arena do not");
DEFINE_bool(peer_process, false,
            "A second process (forked at start) takes what is allocated, as a receiver does: attaches each "
            "posix segment by name (rows attach, detach); attaches bipc's and jemalloc's pools and translates "
            "round 0's handles (rows attach, translate); the rows of this process keep their names");

namespace shmb {
namespace {

shmb_peer_t g_peer;

const char* KindName(int k)
{
    return shmb_alloc_kind_name(static_cast<shmb_alloc_kind_t>(k));
}

// --systems into cfg; run[] then only sizes the space: the allocators the
// systems use.
void PairedConfig(shmb_alloc_config_t* cfg)
{
    if (!(cfg->nsystems = Paired(cfg->systems, cfg->system_names)))
        return;
    std::fill(cfg->run, cfg->run + SHMB_ALLOC_KINDS, 0);
    for (size_t s = 0; s < cfg->nsystems; s++) {
        if (shmb_system_is_upstream(cfg->systems[s]))
            continue;  // upstream's allocators: no kind of run[], each maps what its model's pool maps
        const std::string kinds = shmb_alloc_system_allocators(shmb_system_name(static_cast<shmb_system_t>(cfg->systems[s])));
        for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
            cfg->run[k] |= InList(kinds, KindName(k));
    }
}

// The flags of one allocator run: counts, sizes and what runs beside them.
shmb_alloc_config_t Config()
{
    shmb_alloc_config_t cfg = {};
    cfg.num_iterations = CheckRange("num_iterations", FLAGS_num_iterations, 1, SHMB_ALLOC_MAX_ITERATIONS);
    cfg.min_size_kb = CheckRange("min_size_kb", FLAGS_min_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.max_size_kb = CheckRange("max_size_kb", FLAGS_max_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.min_ops = CheckRange("min_ops", FLAGS_min_ops, 1, SHMB_ALLOC_MAX_MIN_OPS);
    // The seed's --num_iterations is the run's count: given alone and below
    // the pools' minimum, it is theirs too (the notes say what a batch adds).
    cfg.count_given = !gflags::GetCommandLineFlagInfoOrDie("num_iterations").is_default;
    if (cfg.count_given && gflags::GetCommandLineFlagInfoOrDie("min_ops").is_default)
        cfg.min_ops = std::min<uint64_t>(cfg.min_ops, cfg.num_iterations);
    cfg.working_set = CheckRange("working_set", FLAGS_working_set, 1, SHMB_ALLOC_MAX_ITERATIONS);
    if (cfg.min_size_kb > cfg.max_size_kb)
        FlagError("min_size_kb", std::to_string(FLAGS_min_size_kb),
                  "must not exceed --max_size_kb=" + std::to_string(FLAGS_max_size_kb));
    const char* system_allocators = shmb_alloc_system_allocators(FLAGS_system.c_str());
    const std::string allocators = CheckVariants("allocator", FLAGS_allocator, JoinNames(SHMB_ALLOC_KINDS, KindName),
                                                 system_allocators ? system_allocators : "", "allocator");
    cfg.system_rows = !FLAGS_system.empty();
    cfg.upstream = FLAGS_system == SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME;
    if (cfg.upstream && FLAGS_peer_process)
        FlagError("peer_process", "true",
                  "not with --system=mooncake_upstream (upstream code covers the bare allocator's alloc_bare "
                  "and free_bare only)");
    if (cfg.system_rows && FLAGS_measure_mmap_only)
        FlagError("measure_mmap_only", "true", "cannot be combined with --system");
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        cfg.run[k] = InList(allocators, KindName(k));
    cfg.measure_mmap_only = FLAGS_measure_mmap_only;
    cfg.cleanup = FLAGS_cleanup;
    cfg.touch = FLAGS_touch;
    cfg.seed = FLAGS_seed;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.threads = static_cast<int>(CheckRange("threads", FLAGS_threads, 1, SHMB_ALLOC_MAX_THREADS));
    if (FLAGS_peer_process && cfg.threads > 1)
        FlagError("threads", std::to_string(FLAGS_threads),
                  "not supported with --peer_process (the peer serves one allocating thread)");
    if (FLAGS_peer_process && FLAGS_measure_mmap_only)
        FlagError("measure_mmap_only", "true",
                  "not supported with --peer_process (one segment per size: nothing new for the peer to attach)");
    if (FLAGS_peer_process && (cfg.min_ops + cfg.working_set - 1) / cfg.working_set > SHMB_ALLOC_PEER_MAX_ROUNDS)
        FlagError("working_set", std::to_string(FLAGS_working_set),
                  "too small for --peer_process: --min_ops / --working_set must not exceed " +
                      std::to_string(SHMB_ALLOC_PEER_MAX_ROUNDS) + " rounds");
    cfg.peer = FLAGS_peer_process ? &g_peer : nullptr;
    cfg.cpu = FLAGS_cpu;
    cfg.progress = Progress();
    return cfg;
}

}  // namespace

int RunAllocators()
{
    shmb_alloc_config_t cfg = Config();
    PairedConfig(&cfg);

    uint64_t need = 0;
    int ret = shmb_alloc_bench_shm_bytes(&cfg, FLAGS_repetitions, &need);
    if (ret == -EINVAL)
        FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                  "the arena cannot hold --working_set blocks of this size (16 TiB at most): "
                  "lower it or leave arena out of --allocator");
    if (ret < 0)
        FlagError("max_size_kb", std::to_string(FLAGS_max_size_kb),
                  "the pools of --working_set blocks of this size overflow");
    WarnIfOversubscribed(cfg.threads);
    CheckShmSpace("max_size_kb", need);

    shmb_peer_t* peer = cfg.peer ? StartPeer(shmb_alloc_peer_start, &g_peer) : nullptr;
    shmb_rows_t rows = {};
    uint64_t kept = 0;
    RunRepetitions(peer, "wrong allocation", "the allocation benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        return shmb_alloc_bench_run(&cfg, &rows, &kept, why, cap);
    });

    shmb_report_t report = NewReport("shm_alloc", FLAGS_system.empty() ? nullptr : FLAGS_system.c_str(),
                                     cfg.nsystems, "allocator");
    shmb_notes_t notes = {};
    if ((ret = shmb_notes_alloc(&report, &notes, &cfg)) < 0)
        Fail(ret, "planning the threads' CPUs");
    WriteReport(&report, &rows);
    ReportLeftSegments(kept);
    return 0;
}

// --allocator=space: offset, bipc and jemalloc over one pool of --pool_mb
// (docs/allocation.md, "Space").
int RunSpace()
{
    if (FLAGS_allocator != "space")
        FlagError("allocator", FLAGS_allocator, "space runs alone (it measures offset, bipc and jemalloc)");
    shmb_alloc_space_config_t cfg = {};
    cfg.pool_bytes = static_cast<uint64_t>(CheckRange("pool_mb", FLAGS_pool_mb, 1, 1 << 20)) << 20;
    cfg.rounds = SHMB_ALLOC_SPACE_ROUNDS;
    cfg.free_percent = SHMB_ALLOC_SPACE_FREE_PERCENT;
    cfg.seed = FLAGS_seed;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    CheckShmSpace("pool_mb", cfg.pool_bytes);
    const shmb_alloc_kind_t kinds[] = {SHMB_ALLOC_OFFSET, SHMB_ALLOC_BIPC, SHMB_ALLOC_JEMALLOC};
    shmb_rows_t rows = {};
    RunRepetitions(nullptr, "wrong allocation", "the space benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        for (shmb_alloc_kind_t k : kinds) {
            shmb_alloc_space_t r;
            if (int ret = shmb_alloc_space_run(&cfg, k, &r, &rows, why, cap); ret < 0)
                return ret;
        }
        return 0;
    });
    shmb_report_t report = NewReport("shm_alloc", nullptr, 0, "allocator");
    shmb_notes_t notes = {};
    if (const int ret = shmb_notes_alloc_space(&report, &notes); ret < 0)
        Fail(ret, "writing the notes");
    WriteReport(&report, &rows);
    return 0;
}

}  // namespace shmb
