// What is checked before anything is measured, so that a run that cannot
// succeed stops at once with a line saying why.
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_common.h"
#include "bench_internal.h"

namespace shmb {

using internal::g_run;

namespace internal {

// fds 0, 1 and 2 open before anything else opens a file, so that a file we
// open never becomes stdout (>&- would send the table into --json_out).
// A closed stdout becomes /dev/null opened read-only: writing the results
// then fails (EBADF), and the run says so.
void EnsureStandardFds()
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        int got = open("/dev/null", fd == 2 ? O_WRONLY : O_RDONLY);
        if (got != fd)
            std::_Exit(1);  // nothing to tell it on: every lower fd is open
    }
}

void ReadMachine()
{
    shmb_sysinfo_read(&g_run.sys);
    g_run.timer_overhead_ns = shmb_clock_overhead_ns();
    std::vector<int> allowed(CPU_SETSIZE);
    g_run.allowed_cpus = shmb_sysinfo_allowed_cpus(allowed.data(), CPU_SETSIZE);
}

// --cpu must name a CPU this process may run on (a cpuset or taskset may
// allow fewer than the machine has).
void PinToCpu(int cpu)
{
    std::vector<int> cpus(CPU_SETSIZE);
    int n = shmb_sysinfo_allowed_cpus(cpus.data(), CPU_SETSIZE);
    bool allowed = false;
    for (int i = 0; i < n; i++)
        allowed |= cpus[i] == cpu;
    if (n > 0 && !allowed) {
        char list[1024];
        shmb_sysinfo_format_cpu_list(cpus.data(), n, list, sizeof(list));
        FlagError("cpu", std::to_string(cpu),
                  std::string("-1 or a CPU this process may use: ") + list + " (taskset, cpuset)");
    }
    int ret = shmb_sysinfo_pin_cpu(cpu);
    if (ret < 0)
        FlagError("cpu", std::to_string(cpu), std::string("cannot pin to it: ") + std::strerror(-ret));
}

}  // namespace internal

double TimerOverheadNs()
{
    return g_run.timer_overhead_ns;
}

void WarnIfOversubscribed(int threads, const char* flag)
{
    const char* program = g_run.program.c_str();
    if (shmb_sysinfo_overloaded(&g_run.sys))
        std::fprintf(stderr, "%s: warning: the load average at start (%.2f) exceeds the %d CPUs; other "
                     "work competes for them, so pin (--cpu) and repeat the run (--repetitions; a --systems run: "
                     "again) and compare medians\n",
                     program, g_run.sys.load_avg[0], g_run.sys.num_cpus);
    int cpus = g_run.allowed_cpus > 0 ? g_run.allowed_cpus : g_run.sys.num_cpus;
    if (cpus > 0 && threads > cpus)
        std::fprintf(stderr, "%s: warning: --%s=%d exceeds the %d CPUs this process may use; the "
                     "threads share CPUs and every figure includes waiting for one\n",
                     program, flag, threads, cpus);
}

// Exits 1 with the line already on stderr.
[[noreturn]] static void NoSpace()
{
    shmb_segment_unlink_all();
    std::exit(1);
}

void CheckShmSpace(const char* flag, uint64_t bytes)
{
    char need[32], have[32];
    shmb_sysinfo_format_bytes(static_cast<int64_t>(bytes), need, sizeof(need));
    int64_t total, avail;
    if (shmb_sysinfo_fs_space("/dev/shm", &total, &avail) == 0 && static_cast<uint64_t>(avail) < bytes) {
        shmb_sysinfo_format_bytes(avail, have, sizeof(have));
        std::fprintf(stderr, "%s: --%s needs %s in /dev/shm but only %s is free; lower --%s or free "
                     "space (df -h /dev/shm; scripts/clean_shm.sh removes segments of dead runs)\n",
                     g_run.program.c_str(), flag, need, have, flag);
        NoSpace();
    }
    // SHM pages are charged to the memory cgroup of the process that touches them.
    int64_t cgroup_free = shmb_sysinfo_cgroup_memory_free();
    if (cgroup_free >= 0 && static_cast<uint64_t>(cgroup_free) < bytes) {
        shmb_sysinfo_format_bytes(cgroup_free, have, sizeof(have));
        std::fprintf(stderr, "%s: --%s needs %s of SHM but the memory cgroup of this process has "
                     "only %s left (its limit - its usage, charged for SHM pages too); "
                     "lower --%s or raise memory.max\n",
                     g_run.program.c_str(), flag, need, have, flag);
        NoSpace();
    }
}

void CheckOpenFiles(const char* flag, uint64_t segments)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return;
    const rlim_t need = static_cast<rlim_t>(segments) + 64;
    if (r.rlim_cur < need && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max < need ? r.rlim_max : need;
        setrlimit(RLIMIT_NOFILE, &r);
    }
    if (r.rlim_cur < need)
        FlagError(flag, std::to_string(segments),
                  "mooncake keeps a descriptor open per buffer, and the open-files limit is " +
                      std::to_string(r.rlim_cur) + ": raise ulimit -n (hard limit) or lower the count");
}

namespace {

std::string Bytes(int64_t bytes)
{
    char out[32];
    shmb_sysinfo_format_bytes(bytes, out, sizeof(out));
    return out;
}

// "<program>: --flag ... needs X but only Y ...; what to do", exit 2.
[[noreturn]] void Refuse(const char* flag, const std::string& what)
{
    internal::UsageError("--" + std::string(flag) + " " + what);
}

// hugetlb: the pool of its page size must have the pages free; the line
// says how many to reserve so that it does (the pages in use stay in use).
std::string CheckHugePages(const char* flag, const PoolPlan& pool)
{
    int64_t total = 0, free_pages = 0;
    std::string size = std::to_string(pool.page_size / 1024) + " kB";
    if (shmb_sysinfo_hugepages(pool.page_size, &total, &free_pages) < 0)
        Refuse(flag, "needs huge pages of " + size + " but this kernel has no pool of that size "
                     "(/sys/kernel/mm/hugepages)");
    const uint64_t need = pool.bytes / pool.page_size;
    if (static_cast<uint64_t>(free_pages) < need) {
        const std::string file = pool.page_size == SHMB_BACKING_HUGE_2MB
                                     ? "/proc/sys/vm/nr_hugepages"
                                     : "/sys/kernel/mm/hugepages/hugepages-" + std::to_string(pool.page_size / 1024) +
                                           "kB/nr_hugepages";
        Refuse(flag, "needs " + std::to_string(need) + " free huge pages of " + size + " (" +
                         Bytes(static_cast<int64_t>(pool.bytes)) + ") but " + std::to_string(free_pages) +
                         " are free of " + std::to_string(total) + " reserved; reserve them as root: echo " +
                         std::to_string(total + static_cast<int64_t>(need) - free_pages) + " > " + file);
    }
    return "huge pages of " + size + ": " + std::to_string(free_pages) + " free of " + std::to_string(total) +
           " reserved (" + Bytes(free_pages * static_cast<int64_t>(pool.page_size)) + "), " + std::to_string(need) +
           " needed";
}

// The shmem kinds' pages come out of memory (and /dev/shm for tmpfs).
void CheckMemory(const char* flag, const PoolPlan& pool)
{
    const std::string need = Bytes(static_cast<int64_t>(pool.bytes));
    const char* name = shmb_backing_name(pool.kind);
    int64_t total, avail;
    if (pool.kind == SHMB_BACKING_TMPFS && shmb_sysinfo_fs_space("/dev/shm", &total, &avail) == 0 &&
        static_cast<uint64_t>(avail) < pool.bytes)
        Refuse(flag, "needs " + need + " in /dev/shm for a " + name + " pool but only " + Bytes(avail) +
                         " is free (df -h /dev/shm)");
    int64_t mem = shmb_sysinfo_mem_available();
    if (mem >= 0 && static_cast<uint64_t>(mem) < pool.bytes)
        Refuse(flag, "needs " + need + " of memory for a " + name + " pool but only " + Bytes(mem) +
                         " is available (MemAvailable in /proc/meminfo)");
    int64_t cgroup = shmb_sysinfo_cgroup_memory_free();
    if (cgroup >= 0 && static_cast<uint64_t>(cgroup) < pool.bytes)
        Refuse(flag, "needs " + need + " for a " + name + " pool but the memory cgroup of this process has only " +
                         Bytes(cgroup) + " left (its limit - its usage)");
}

}  // namespace

void CheckResident(const char* flag, uint64_t bytes, const std::string& what, const std::string& lower)
{
    const int64_t mem = shmb_sysinfo_mem_available();
    if (mem >= 0 && static_cast<uint64_t>(mem) < bytes)
        Refuse(flag, "needs " + Bytes(static_cast<int64_t>(bytes)) + " of memory " + what + " but only " + Bytes(mem) +
                         " is available (MemAvailable in /proc/meminfo); lower " + lower);
}

std::vector<std::string> CheckPoolLimits(const char* flag, const std::vector<PoolPlan>& pools, uint64_t mappings)
{
    std::vector<std::string> lines;
    uint64_t shmem = 0;
    for (const PoolPlan& pool : pools) {
        if (pool.kind == SHMB_BACKING_HUGETLB) {
            lines.push_back(CheckHugePages(flag, pool));
        } else {
            CheckMemory(flag, pool);
            shmem = pool.bytes > shmem ? pool.bytes : shmem;
        }
    }
    if (shmem > 0) {
        int64_t mem = shmb_sysinfo_mem_available(), cgroup = shmb_sysinfo_cgroup_memory_free();
        lines.push_back("memory: " + (mem < 0 ? std::string("unknown") : Bytes(mem)) + " available, memory cgroup " +
                        (cgroup < 0 ? std::string("without a limit") : Bytes(cgroup) + " left") + ", " +
                        Bytes(static_cast<int64_t>(shmem)) + " needed");
    }
    int64_t max = shmb_sysinfo_max_map_count(), now = shmb_sysinfo_map_count();
    if (max >= 0 && now >= 0 && static_cast<uint64_t>(now) + mappings > static_cast<uint64_t>(max))
        Refuse(flag, "needs " + std::to_string(now + static_cast<int64_t>(mappings)) +
                         " mappings but vm.max_map_count is " + std::to_string(max) +
                         " (sysctl -w vm.max_map_count=N)");
    lines.push_back("vm.max_map_count: " + std::to_string(max) + ", mappings: " + std::to_string(now) +
                    " now, " + std::to_string(mappings) + " more at most");
    return lines;
}

uint64_t HugePageSize(int64_t hugepage_kb)
{
    if (hugepage_kb != 2048 && hugepage_kb != 1048576)
        FlagError("hugepage_kb", std::to_string(hugepage_kb), "2048 or 1048576");
    return static_cast<uint64_t>(hugepage_kb) << 10;
}

shmb_backing_config_t Backing(const std::string& name, int64_t hugepage_kb, bool flowipc, const char* flag,
                              uint64_t bytes, uint64_t live)
{
    shmb_backing_config_t backing = {};
    if (shmb_backing_parse(name.c_str(), &backing.kind) < 0)
        FlagError("backing", name, "tmpfs, memfd, thp or hugetlb");
    backing.hugepage_size = HugePageSize(hugepage_kb);
    if (backing.kind == SHMB_BACKING_TMPFS)
        return backing;
    const std::string lent = " are created and lent by name in /dev/shm (shm_open): tmpfs only";
    if (flowipc)
        FlagError("backing", name,
                  !FLAGS_systems.empty() ? "Flow-IPC's pools (--systems=" + FLAGS_systems + ")" + lent
                  : FLAGS_system.empty() ? "without --system Flow-IPC's pools run too, and they" + lent +
                                               "; add --system=mooncake"
                                         : "Flow-IPC's pools (--system=" + FLAGS_system + ")" + lent);
    PoolPlan buffer = {backing.kind, 0, 0};
    if (shmb_backing_round(&backing, bytes, &buffer.bytes) < 0 ||
        shmb_backing_page_size(&backing, &buffer.page_size) < 0)
        FlagError(flag, std::to_string(bytes >> 10) + " KB", "too large");
    buffer.bytes *= live;
    CheckPoolLimits(flag, {buffer}, live);
    return backing;
}

}  // namespace shmb
