// shm_allocation_bench: what one SHM allocation costs, Mooncake's shm_open +
// ftruncate + mmap + close per buffer against Flow-IPC's pool allocators
// (boost.interprocess in one SHM pool; jemalloc over SHM pools), with an
// ideal arena as a reference point; and, with --allocator=ready, how long a
// pool takes to be ready on each backing and prefault method.
#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "bench_common.h"
#include "shmbench/upstream.h"
#include "shmbench/alloc_peer.h"

SHMB_DEFINE_COMMON_FLAGS();
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
DEFINE_string(allocator, "posix,offset,arena,bipc,jemalloc,offset_bare,bipc_object,jemalloc_object",
              "Allocators to run: posix (Mooncake's registration: shm_open+ftruncate+mmap+close per "
              "buffer), offset (Mooncake Store's per-object OffsetBufferAllocator with its AllocatedBuffer inside "
              "one registered segment), arena (ideal lock-free pool: a reference point, not a bound), bipc "
              "(Flow-IPC SHM-classic's allocator: boost.interprocess rbtree_best_fit in one SHM pool), jemalloc "
              "(Flow-IPC SHM-jemalloc's allocator: mallocx, no thread cache), offset_bare (Mooncake's "
              "OffsetAllocator alone), bipc_object (SHM-classic's Pool_arena::construct: the object and its "
              "shared_ptr), jemalloc_object (SHM-jemalloc's Ipc_arena::construct); by name only: "
              "jemalloc_tcache (with a thread cache), and ready (alone: time to ready of a pool of --pool_mb per "
              "--backing and --prefault)");
DEFINE_bool(touch, false, "Write one byte per page of every fresh block and time it (first touch)");
DEFINE_int32(threads, 1,
             "Threads running each allocator at once, each pinned to its own allowed CPU when there "
             "are enough (from --cpu on, if given); bipc and jemalloc share one pool, posix and "
             "arena do not");
DEFINE_bool(peer_process, false,
            "A second process (forked at start) takes what is allocated, as a receiver does: attaches each "
            "posix segment by name (rows attach, detach); attaches bipc's and jemalloc's pools and translates "
            "round 0's handles (rows attach, translate); the rows of this process keep their names");

DEFINE_string(backing, "tmpfs",
              "ready: what backs the pool, a comma-separated list of tmpfs (shm_open in /dev/shm), memfd "
              "(memfd_create, no name), thp (memfd + MADV_HUGEPAGE: 2 MB pages where shmem_enabled allows), "
              "hugetlb (memfd_create(MFD_HUGETLB): the reserved huge page pool), or all");
DEFINE_string(prefault, "all",
              "ready: how the pages come to exist, a comma-separated list of none, touch (a write per page), "
              "populate (MAP_POPULATE), populate_write (MADV_POPULATE_WRITE), fallocate, or all");
DEFINE_int64(pool_mb, 256, "ready: pool size in MB (1 MB = 1048576 bytes), rounded up to the backing's page");
DEFINE_int32(prefault_threads, 1, "ready: threads splitting the prefault (touch, populate_write, fallocate)");
DEFINE_int64(hugepage_kb, 2048, "ready: huge page size of the hugetlb backing in KB: 2048 or 1048576");
DEFINE_int64(pool_iterations, 3, "ready: pools made ready per backing and prefault, each timed");
DEFINE_int64(grow_block_kb, 0,
             "ready: also reach --pool_mb of live blocks of this many KB through Flow-IPC's jemalloc pools "
             "(they grow extent by extent) beside Mooncake's one segment, each page written once: rows "
             "flowipc_jemalloc/grow and mooncake/grow with pools, mappings and page faults (0: not run)");

namespace {

shmb_peer_t g_peer;

// The items of a list flag of a library table's names, as flags to run.
template <int N>
void Select(const char* flag, const std::string& value, const char* (*name)(int), int (&run)[N])
{
    const std::string known = shmb::JoinNames(N, name);
    const std::string list = shmb::CheckListOrAll(flag, value, known, known);
    for (int k = 0; k < N; k++)
        run[k] = shmb::InList(list, name(k));
}

const char* BackingName(int k)
{
    return shmb_backing_name(static_cast<shmb_backing_kind_t>(k));
}

const char* PrefaultName(int k)
{
    return shmb_prefault_name(static_cast<shmb_prefault_t>(k));
}

// The flags of the other allocators mean nothing to ready: each one set is
// refused by name.
void CheckReadyAlone()
{
    if (FLAGS_allocator != "ready")
        shmb::FlagError("allocator", FLAGS_allocator, "ready runs alone (its rows are pools, not block sizes)");
    if (!FLAGS_system.empty())
        shmb::FlagError("system", FLAGS_system, "cannot be combined with --allocator=ready");
    if (!FLAGS_systems.empty())
        shmb::FlagError("systems", FLAGS_systems, "cannot be combined with --allocator=ready (it times pools per "
                                                  "backing, not systems)");
    const char* const others[] = {"peer_process", "measure_mmap_only", "touch", "threads", "cleanup"};
    for (const char* flag : others) {
        const gflags::CommandLineFlagInfo info = gflags::GetCommandLineFlagInfoOrDie(flag);
        if (info.current_value != info.default_value)
            shmb::FlagError(flag, info.current_value,
                            "not with --allocator=ready (it times whole pools in this process, each "
                            "destroyed after it is timed; --prefault_threads sets its threads)");
    }
}

// ready's flags mean nothing to the allocators: each one set without
// --allocator=ready is refused by name, rather than a run that ignores it.
void RefuseReadyFlags()
{
    for (const char* flag :
         {"prefault", "pool_mb", "prefault_threads", "hugepage_kb", "pool_iterations", "grow_block_kb"}) {
        const gflags::CommandLineFlagInfo info = gflags::GetCommandLineFlagInfoOrDie(flag);
        if (!info.is_default)
            shmb::FlagError(flag, info.current_value, "only with --allocator=ready (time to ready of a pool)");
    }
}

shmb_alloc_ready_config_t ReadyConfig()
{
    CheckReadyAlone();
    shmb_alloc_ready_config_t cfg = {};
    Select("backing", FLAGS_backing, BackingName, cfg.backing);
    Select("prefault", FLAGS_prefault, PrefaultName, cfg.prefault);
    cfg.pool_bytes = shmb::CheckRange("pool_mb", FLAGS_pool_mb, 1, 1 << 20) << 20;
    cfg.threads = static_cast<int>(
        shmb::CheckRange("prefault_threads", FLAGS_prefault_threads, 1, SHMB_BACKING_MAX_THREADS));
    cfg.iterations = shmb::CheckRange("pool_iterations", FLAGS_pool_iterations, 1, SHMB_ALLOC_READY_MAX_ITERATIONS);
    if (FLAGS_hugepage_kb != 2048 && FLAGS_hugepage_kb != 1048576)
        shmb::FlagError("hugepage_kb", std::to_string(FLAGS_hugepage_kb), "2048 or 1048576");
    cfg.hugepage_size = static_cast<uint64_t>(FLAGS_hugepage_kb) << 10;
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.progress = shmb::Progress();
    return cfg;
}

// The pools of the run, each checked against its limits; the lines saying them.
std::vector<std::string> CheckReadyLimits(const shmb_alloc_ready_config_t& cfg)
{
    std::vector<shmb::PoolPlan> pools;
    for (int k = 0; k < SHMB_BACKING_KINDS; k++) {
        if (!cfg.backing[k])
            continue;
        shmb::PoolPlan pool = {static_cast<shmb_backing_kind_t>(k), 0, 0};
        shmb_backing_config_t bc = {pool.kind, cfg.shm_prefix, cfg.hugepage_size};
        if (shmb_alloc_ready_pool_bytes(&cfg, pool.kind, &pool.bytes) < 0 ||
            shmb_backing_page_size(&bc, &pool.page_size) < 0)
            shmb::FlagError("pool_mb", std::to_string(FLAGS_pool_mb), "too large");
        pools.push_back(pool);
    }
    return shmb::CheckPoolLimits("pool_mb", pools, shmb_alloc_ready_mappings(&cfg));
}

int RunReady()
{
    shmb_alloc_ready_config_t cfg = ReadyConfig();
    const uint64_t grow = shmb::CheckRange("grow_block_kb", FLAGS_grow_block_kb, 0, 1 << 20) << 10;
    if (grow && cfg.pool_bytes / grow > SHMB_ALLOC_GROW_MAX_BLOCKS)
        shmb::FlagError("grow_block_kb", std::to_string(FLAGS_grow_block_kb),
                        "too small for --pool_mb: at most " + std::to_string(SHMB_ALLOC_GROW_MAX_BLOCKS) + " blocks");
    shmb::WarnIfOversubscribed(cfg.threads, "prefault_threads");
    std::vector<std::string> lines = CheckReadyLimits(cfg);
    if (grow)
        shmb::CheckShmSpace("pool_mb", cfg.pool_bytes);
    shmb_rows_t rows = {};
    shmb::RunRepetitions(nullptr, "wrong pool contents", "the time-to-ready benchmark",
                         [&](int rep, char* why, size_t cap) {
                             cfg.repetition = rep;
                             int ret = shmb_alloc_ready_run(&cfg, &rows, why, cap);
                             return ret < 0 || !grow ? ret
                                                     : shmb_alloc_grow_rows(cfg.pool_bytes, grow, cfg.shm_prefix,
                                                                            rep, &rows);
                         });
    lines.insert(lines.begin(),
                 "ready: ns per pool from create to prefaulted; note: GB/s = pool / p50, then the first "
                 "pool's page faults and its share resident and mapped by huge pages after it (smaps), "
                 "verified through a second mapping; none only maps, fallocate allocates the pages but maps "
                 "none (the first touches still fault, as minor faults)");
    if (grow)
        lines.push_back("grow: ns to reach pool_mb of live bytes, each 4 KiB page written once: mooncake one "
                        "segment (shm_open + ftruncate + mmap); flowipc_jemalloc blocks of " +
                        std::to_string(FLAGS_grow_block_kb) + " KB from the SHM-jemalloc model, a new SHM pool per "
                        "extent jemalloc asks; note: pools made, their mappings (/proc/self/maps), page faults "
                        "(getrusage), counted with everything live");
    shmb_report_t report = {};
    report.bench = "shm_alloc";
    report.variant_label = "allocator";
    for (size_t i = 0; i < lines.size() && i < SHMB_REPORT_MAX_NOTES; i++)
        report.notes[i] = lines[i].c_str();
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);
    return 0;
}

// --systems: the paired run's systems into cfg, after refusing what cannot
// be paired; their names stay in *names (cfg points into them).
void PairedConfig(shmb_alloc_config_t* cfg, std::vector<std::string>* names)
{
    const std::vector<shmb_system_t> systems = shmb::PairedSystems(names);
    if (systems.empty())
        return;
    if (!gflags::GetCommandLineFlagInfoOrDie("allocator").is_default)
        shmb::FlagError("allocator", FLAGS_allocator,
                        "cannot be combined with --systems (each system selects its allocators)");
    if (cfg->threads > 1)
        shmb::FlagError("threads", std::to_string(FLAGS_threads),
                        "must be 1 with --systems (a paired run alternates the systems on one thread)");
    for (const char* flag : {"peer_process", "touch", "measure_mmap_only", "cleanup"}) {
        const gflags::CommandLineFlagInfo info = gflags::GetCommandLineFlagInfoOrDie(flag);
        if (info.current_value != info.default_value)
            shmb::FlagError(flag, info.current_value,
                            "not with --systems (a paired run times register, alloc, free and alloc_reuse; the "
                            "receiver's first attach is shm_address_lookup_bench --systems --peer_process; "
                            "--system=NAME runs the rest)");
    }
    // run[] now only sizes the space: the allocators the systems use.
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        cfg->run[k] = 0;
    cfg->nsystems = systems.size();
    for (size_t s = 0; s < systems.size(); s++) {
        cfg->systems[s] = systems[s];
        cfg->system_names[s] = (*names)[s].c_str();
        if (systems[s] == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
            continue;  // upstream's OffsetAllocator: no kind of run[], it maps what offset_bare maps
        const std::string kinds = shmb_alloc_system_allocators(shmb_system_name(systems[s]));
        for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
            cfg->run[k] |= shmb::InList(kinds, shmb_alloc_kind_name(static_cast<shmb_alloc_kind_t>(k)));
    }
}

// The note naming the Mooncake commit whose code the mooncake_upstream rows
// ran, into *note and the first free note line; nothing when none ran. The
// caller keeps *note while the report is written.
void UpstreamNote(const shmb_alloc_config_t& cfg, std::string* note, shmb_report_t* report)
{
    bool ran = cfg.upstream;
    for (size_t s = 0; s < cfg.nsystems; s++)
        ran |= cfg.systems[s] == static_cast<int>(SHMB_SYSTEM_MOONCAKE_UPSTREAM);
    if (!ran)
        return;
    *note = std::string("mooncake_upstream: Mooncake's own OffsetAllocator (alloc_bare, free_bare; its other "
                        "rows not covered), compiled from commit ") +
            shmb_upstream_commit() + " (docs/upstream.md)";
    for (int i = 0; i < SHMB_REPORT_MAX_NOTES; i++) {
        if (!report->notes[i]) {
            report->notes[i] = note->c_str();
            report->notes[i + 1] = nullptr;
            return;
        }
    }
}

}  // namespace

int main(int argc, char** argv)
{
    shmb::Init(&argc, &argv,
               "SHM allocation cost: Mooncake's shm_open + ftruncate + mmap + close per buffer "
               "against Flow-IPC's pool allocators and an ideal arena.\n"
               "Usage: shm_allocation_bench [--flag=value ...]",
               __FILE__);
    if (shmb::InList(FLAGS_allocator, "ready"))
        return RunReady();
    RefuseReadyFlags();

    if (FLAGS_backing != "tmpfs")
        shmb::FlagError("backing", FLAGS_backing,
                        "only --allocator=ready takes another backing: the allocators' and the systems' buffers and "
                        "pools are created by name in /dev/shm (Mooncake's createSharedMemory, Flow-IPC's bipc and "
                        "jemalloc pools: shm_open) and a peer attaches them by that name");
    shmb_alloc_config_t cfg = {};
    cfg.num_iterations = shmb::CheckRange("num_iterations", FLAGS_num_iterations, 1,
                                          SHMB_ALLOC_MAX_ITERATIONS);
    cfg.min_size_kb = shmb::CheckRange("min_size_kb", FLAGS_min_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.max_size_kb = shmb::CheckRange("max_size_kb", FLAGS_max_size_kb, 1, SHMB_ALLOC_MAX_SIZE_KB);
    cfg.min_ops = shmb::CheckRange("min_ops", FLAGS_min_ops, 1, SHMB_ALLOC_MAX_MIN_OPS);
    // The seed's --num_iterations is the run's count: given alone and below
    // the pools' minimum, it is theirs too (the notes say what a batch adds).
    cfg.count_given = !gflags::GetCommandLineFlagInfoOrDie("num_iterations").is_default;
    if (cfg.count_given && gflags::GetCommandLineFlagInfoOrDie("min_ops").is_default)
        cfg.min_ops = std::min<uint64_t>(cfg.min_ops, cfg.num_iterations);
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
    cfg.upstream = FLAGS_system == SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME;
    if (cfg.upstream && FLAGS_peer_process)
        shmb::FlagError("peer_process", "true",
                        "not with --system=mooncake_upstream (upstream code covers the bare allocator's alloc_bare "
                        "and free_bare only)");
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
    cfg.progress = shmb::Progress();
    std::vector<std::string> paired;
    PairedConfig(&cfg, &paired);

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
    // A system's rows have no variant ("-"): the short header "part", as the
    // transfer's, keeps the table within 120 columns.
    report.variant_label = report.system || cfg.nsystems ? "part" : "allocator";
    shmb_notes_t notes = {};
    ret = shmb_notes_alloc(&report, &notes, &cfg);
    if (ret < 0)
        shmb::Fail(ret, "planning the threads' CPUs");
    std::string upstream;
    UpstreamNote(cfg, &upstream, &report);
    shmb::WriteReport(&report, &rows);
    shmb_rows_free(&rows);

    shmb::ReportLeftSegments(kept);
    return 0;
}
