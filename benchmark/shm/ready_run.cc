// shm_allocation_bench --allocator=ready: time to ready of a pool per
// --backing and --prefault, and with --grow_block_kb the grow rows; the
// flags into shmb_alloc_ready_config_t, the run and its report.
#include <string>
#include <vector>

#include "bench_common.h"
#include "runs.h"

DECLARE_string(allocator);

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

namespace shmb {
namespace {

// The items of a list flag of a library table's names, as flags to run.
template <int N>
void Select(const char* flag, const std::string& value, const char* (*name)(int), int (&run)[N])
{
    const std::string known = JoinNames(N, name);
    const std::string list = CheckListOrAll(flag, value, known, known);
    for (int k = 0; k < N; k++)
        run[k] = InList(list, name(k));
}

const char* BackingName(int k)
{
    return shmb_backing_name(static_cast<shmb_backing_kind_t>(k));
}

const char* PrefaultName(int k)
{
    return shmb_prefault_name(static_cast<shmb_prefault_t>(k));
}

shmb_alloc_ready_config_t Config()
{
    if (FLAGS_allocator != "ready")
        FlagError("allocator", FLAGS_allocator, "ready runs alone (its rows are pools, not block sizes)");
    shmb_alloc_ready_config_t cfg = {};
    Select("backing", FLAGS_backing, BackingName, cfg.backing);
    Select("prefault", FLAGS_prefault, PrefaultName, cfg.prefault);
    cfg.pool_bytes = CheckRange("pool_mb", FLAGS_pool_mb, 1, 1 << 20) << 20;
    cfg.threads = static_cast<int>(CheckRange("prefault_threads", FLAGS_prefault_threads, 1, SHMB_BACKING_MAX_THREADS));
    cfg.iterations = CheckRange("pool_iterations", FLAGS_pool_iterations, 1, SHMB_ALLOC_READY_MAX_ITERATIONS);
    cfg.hugepage_size = HugePageSize(FLAGS_hugepage_kb);
    cfg.shm_prefix = FLAGS_shm_prefix.c_str();
    cfg.progress = Progress();
    return cfg;
}

// The pools of the run, each checked against its limits; the lines saying them.
std::vector<std::string> CheckLimits(const shmb_alloc_ready_config_t& cfg)
{
    std::vector<PoolPlan> pools;
    for (int k = 0; k < SHMB_BACKING_KINDS; k++) {
        if (!cfg.backing[k])
            continue;
        PoolPlan pool = {static_cast<shmb_backing_kind_t>(k), 0, 0};
        shmb_backing_config_t bc = {pool.kind, cfg.shm_prefix, cfg.hugepage_size};
        if (shmb_alloc_ready_pool_bytes(&cfg, pool.kind, &pool.bytes) < 0 ||
            shmb_backing_page_size(&bc, &pool.page_size) < 0)
            FlagError("pool_mb", std::to_string(FLAGS_pool_mb), "too large");
        pools.push_back(pool);
    }
    return CheckPoolLimits("pool_mb", pools, shmb_alloc_ready_mappings(&cfg));
}

}  // namespace

int RunReady()
{
    shmb_alloc_ready_config_t cfg = Config();
    const uint64_t grow = CheckRange("grow_block_kb", FLAGS_grow_block_kb, 0, 1 << 20) << 10;
    if (grow && cfg.pool_bytes / grow > SHMB_ALLOC_GROW_MAX_BLOCKS)
        FlagError("grow_block_kb", std::to_string(FLAGS_grow_block_kb),
                  "too small for --pool_mb: at most " + std::to_string(SHMB_ALLOC_GROW_MAX_BLOCKS) + " blocks");
    WarnIfOversubscribed(cfg.threads, "prefault_threads");
    std::vector<std::string> lines = CheckLimits(cfg);
    if (grow)
        CheckShmSpace("pool_mb", cfg.pool_bytes);
    shmb_rows_t rows = {};
    RunRepetitions(nullptr, "wrong pool contents", "the time-to-ready benchmark", [&](int rep, char* why, size_t cap) {
        cfg.repetition = rep;
        int ret = shmb_alloc_ready_run(&cfg, &rows, why, cap);
        return ret < 0 || !grow ? ret : shmb_alloc_grow_rows(cfg.pool_bytes, grow, cfg.shm_prefix, rep, &rows);
    });
    shmb_report_t report = NewReport("shm_alloc", nullptr, 0, "allocator");
    std::vector<const char*> limits;
    for (const std::string& line : lines)
        limits.push_back(line.c_str());
    shmb_notes_t notes = {};
    const int ret = shmb_notes_alloc_ready(&report, &notes, static_cast<uint64_t>(grow >> 10), limits.data(),
                                           limits.size());
    if (ret < 0)
        Fail(ret, "writing the notes");
    WriteReport(&report, &rows);
    return 0;
}

}  // namespace shmb
