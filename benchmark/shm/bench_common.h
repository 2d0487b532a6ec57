// What the mains and their modes share: start-up (init.cc), modes and flag
// checks (flags.cc, help.cc), exits (exits.cc), preflight checks
// (preflight.cc) and output (output.cc). C++ only because gflags and glog
// are; everything that measures lives in the C library.
#ifndef SHMBENCH_BENCH_COMMON_H
#define SHMBENCH_BENCH_COMMON_H

#include <gflags/gflags.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shmbench/shmbench.h"

// Defines the flags every binary has. Expanded in each main's own file, so
// that --help lists them under the binary's name; the modes' flags are
// defined in their files (alloc_run.cc, ...).
#define SHMB_DEFINE_COMMON_FLAGS()                                                          \
    DEFINE_string(format, "table", "Output format: table, csv or json");                    \
    DEFINE_int32(repetitions, 1,                                                            \
                 "Run the whole measurement this many times; with more than one, each "      \
                 "row is followed by its mean, median, stddev and cv");                     \
    DEFINE_uint64(seed, 42, "Seed of every random input (free order, addresses, requests)"); \
    DEFINE_string(shm_prefix, "/mooncake_bench_",                                           \
                  "Name prefix of the SHM segments (one leading '/', no other '/')");       \
    DEFINE_int32(cpu, -1, "Pin the measuring thread to this CPU (-1: do not pin)");          \
    DEFINE_string(json_out, "", "Also write the results as JSON to this file (one run, two outputs)"); \
    DEFINE_string(system, "",                                                               \
                  "Measure one real system's path only, with row names that leave the "     \
                  "system out (it is in the header), so two runs pair row by row: "          \
                  "mooncake, flowipc_classic or flowipc_jemalloc (default: every variant)");  \
    DEFINE_string(systems, "",                                                              \
                  "Paired run: measure these systems (comma-separated, the first the "       \
                  "baseline) in one process, alternating slice by slice, with the baseline's " \
                  "A/A control; rows end /system:NAME, ratios /vs:BASELINE (docs/methodology.md)")

DECLARE_string(format);
DECLARE_int32(repetitions);
DECLARE_uint64(seed);
DECLARE_string(shm_prefix);
DECLARE_int32(cpu);
DECLARE_string(json_out);
DECLARE_string(system);
DECLARE_string(systems);

namespace shmb {

// --- init.cc ---------------------------------------------------------------

// Start-up, every failure one line: fds 0-2 opened (stdout read-only: a
// closed stdout fails with EBADF), every argument checked (command line,
// --flagfile, --fromenv: exit 2 naming the flag), help flags and --version
// served (exit 0), signal handlers that unlink our segments, the common
// flags, --json_out's temporary file, glog on stderr, --cpu's pinning.
// main_file: the main's __FILE__ (its folder's flags are the binary's own).
void Init(int* argc, char*** argv, const char* usage, const char* main_file);

// The progress line for the library's drivers: on stderr when it is a
// terminal, else silent; every exit through this code clears it first.
shmb_progress_t* Progress();

// --- flags.cc: modes, and checks of the flags ---------------------------------

// A mode of a binary: one driver, picked once by main. `flags` lists the
// flags it reads of those some mode of the binary lists (a flag no mode
// lists is read by every mode).
struct Mode {
    const char* name;   // how the user asks for it, for messages: "--allocator=ready"
    const char* flags;  // comma-separated
    int (*run)();       // checks its flags, runs, writes the report; main's exit status
};

// Runs modes[pick] after refusing the first flag given (on the command line,
// in a --flagfile or the environment) that another mode lists and it does
// not: "invalid --F=V: not read by MODE, only by OTHER or OTHER", exit 2.
int RunMode(const std::vector<Mode>& modes, size_t pick);

// lo <= value <= hi, else FlagError.
uint64_t CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi);

// The index of `value` among `choices`, else FlagError naming them ("a, b or c").
int CheckChoice(const char* flag, const std::string& value, const std::vector<std::string>& choices);

// The items of a comma-separated list, in order: an item `valid` refuses or
// that repeats is FlagError(allowed); no item or a trailing comma, FlagError(empty).
std::vector<std::string> CheckItems(const char* flag, const std::string& value,
                                    const std::function<bool(const std::string&)>& valid,
                                    const std::string& allowed, const std::string& empty);

// A non-empty list of distinct items of `allowed` (comma-separated), in order.
std::string CheckList(const char* flag, const std::string& value, const std::string& allowed);

// "all": `available`; else CheckList of `known`, each item also `available`
// (else a line naming the first, in `known`'s order, this machine lacks).
std::string CheckListOrAll(const char* flag, const std::string& value, const std::string& known,
                           const std::string& available);

// CheckList of variants; with --system, the flag must not be given ("cannot
// be combined with --system (it selects the <what>)") and the list is `system_variant`.
std::string CheckVariants(const char* flag, const std::string& value, const std::string& allowed,
                          const std::string& system_variant, const char* what);

// Distinct counts, digits only, each 1..max, in order; `what` names them ("segment counts").
std::vector<uint64_t> CheckCounts(const char* flag, const std::string& value, uint64_t max, const char* what);

// The translation paths of `kinds` (SHMB_PATH_SYSTEM, SHMB_PATH_KERNEL), comma-separated.
std::string PathNames(unsigned kinds);

// name(0) .. name(count - 1), comma-separated, those that are NULL left out.
std::string JoinNames(int count, const std::function<const char*(int)>& name);

// True if `item` is in the comma-separated `list`.
bool InList(const std::string& list, const std::string& item);

// --systems: the baseline first, the others, then its control (the baseline
// again, named "<baseline>_control"), names in *names; empty without it.
// Exit 2 for an unknown or repeated name, fewer than two, --system beside
// it, or --repetitions above 1 (a paired run's rounds are its repetitions).
std::vector<shmb_system_t> PairedSystems(std::vector<std::string>* names);

// PairedSystems into a config's systems[] and, when given, names[] (kept
// until exit); returns how many (0: not paired).
template <class System>
size_t Paired(System* systems, const char** names = nullptr)
{
    static std::vector<std::string> kept;
    const std::vector<shmb_system_t> paired = PairedSystems(&kept);
    for (size_t s = 0; s < paired.size(); s++) {
        systems[s] = static_cast<System>(paired[s]);
        if (names)
            names[s] = kept[s].c_str();
    }
    return paired.size();
}

// --- exits.cc: one line on stderr, our segments unlinked, exit ----------------

// "<program>: invalid --<flag>=<value>: <allowed>", exit 2.
[[noreturn]] void FlagError(const char* flag, const std::string& value, const std::string& allowed);

// A failed library call: the system call, the errno text and what to try, exit 1.
[[noreturn]] void Fail(int ret, const char* what);

// If `ret` is the peer process's death (-EPIPE, `err` the call "peer
// process"): "<program>: the peer process died: <what>; nothing is left
// behind" (no line when it ran out of shared memory: its fault line said
// so), exit 1. Else returns. Call it once the peer is stopped.
void ExitIfPeerDied(int ret, const shmb_error_t& err);

// Exit 1 after a failed run, a started peer (or NULL) stopped first: a dead
// peer is ExitIfPeerDied's line; a failed check (-EPROTO, `why` set)
// "<program>: <check>, no number reported: <why>"; else Fail(ret, what).
[[noreturn]] void FailRun(int ret, shmb_peer_t* peer, const char* why, const char* check, const char* what);

// Starts the peer process with `start` under --shm_prefix; `peer`, or Fail's exit.
shmb_peer_t* StartPeer(int (*start)(shmb_peer_t*, const char*), shmb_peer_t* peer);

// run(rep, why, cap) for each of --repetitions (why empty each time), the
// progress line told; the first failure is FailRun's exit. Then stops a
// started peer (NULL: none), a failed stop FailRun's exit too.
void RunRepetitions(shmb_peer_t* peer, const char* check, const char* what,
                    const std::function<int(int rep, char* why, size_t cap)>& run);

// --- preflight.cc: what the machine allows, checked before measuring ----------

// The clock's overhead in ns, measured once in Init.
double TimerOverheadNs();

// A warning line each when the load average at start exceeds the CPUs, and
// when `threads` (set by --`flag`) exceed the CPUs this process may use
// (every figure then includes waiting for one). Call it after the flags'
// checks, so that a usage error stays one line.
void WarnIfOversubscribed(int threads, const char* flag = "threads");

// `bytes` must fit in /dev/shm's free space and in what the memory cgroup
// may still charge (SHM pages count there), else one line naming --`flag`,
// the space needed and free, exit 1.
void CheckShmSpace(const char* flag, uint64_t bytes);

// `bytes` that will all be resident at once must fit in MemAvailable, else
// "--`flag` needs X of memory `what` but only Y is available ...; lower
// `lower`", exit 2.
void CheckResident(const char* flag, uint64_t bytes, const std::string& what, const std::string& lower);

// One pool a run will create: its backing, bytes (rounded to its page) and page.
struct PoolPlan {
    shmb_backing_kind_t kind;
    uint64_t bytes;
    uint64_t page_size;
};

// The pools against free huge pages (hugetlb), /dev/shm (tmpfs),
// MemAvailable and the memory cgroup (shmem kinds), and vm.max_map_count
// against the mappings there plus `mappings`; one that cannot fit is one
// line naming --`flag`, needed and available (for huge pages, the command
// that reserves them), exit 2. Returns the header lines stating each limit.
std::vector<std::string> CheckPoolLimits(const char* flag, const std::vector<PoolPlan>& pools, uint64_t mappings);

// --hugepage_kb in bytes: 2048 or 1048576 KB, else FlagError.
uint64_t HugePageSize(int64_t hugepage_kb);

// src and dst's backing (shm_transfer_bench) from --backing and --hugepage_kb
// (`name`, `hugepage_kb`): a bad value exits 2; a backing other than tmpfs
// exits 2 when `flowipc` (a Flow-IPC system runs: its pools are lent by
// name), else is CheckPoolLimits' for `live` buffers of `bytes` under
// --`flag`. tmpfs: the caller's CheckShmSpace.
shmb_backing_config_t Backing(const std::string& name, int64_t hugepage_kb, bool flowipc, const char* flag,
                              uint64_t bytes, uint64_t live);

// Mooncake keeps a descriptor open per attached buffer: raises the soft
// open-files limit towards `segments` + 64 (up to the hard one), as a server
// would, else FlagError on `flag`.
void CheckOpenFiles(const char* flag, uint64_t segments);

// --- output.cc ---------------------------------------------------------------

// Opens --`flag`=`path` for output (shmbench/file.h): a symbolic link to
// neither a device nor a FIFO, a directory, a socket, a block device or a
// file that cannot be created is FlagError's exit 2.
void OpenOutput(const char* flag, const std::string& path, shmb_file_out_t* out);

// Ends an OpenOutput whose writes returned `written` (0 or the first
// -errno): renamed into place or flushed; a failure is one line naming
// --flag=FILE and the errno text, exit 1 (FILE as it was).
void CommitOutput(const char* flag, const std::string& path, shmb_file_out_t* out, int written);

// A report of `bench` for --system (nullptr: none); its variant column is
// `variant`, or "part" for a system's rows (--system, --systems: no
// variant, and the short header keeps the table within 120 columns).
shmb_report_t NewReport(const char* bench, const char* system, size_t nsystems, const char* variant);

// Adds `lines` after the report's notes (they must outlive WriteReport).
void AddNotes(shmb_report_t* report, const std::vector<std::string>& lines);

// Fills what every report shares (context, flags, repetitions, CPU), writes
// the rows to stdout in --format and as JSON to --json_out (FILE replaced
// only now, whole), frees them. A failed write: its errno text, exit 1.
void WriteReport(shmb_report_t* report, shmb_rows_t* rows);

// The report's system line: nullptr without --system; else the system.
const char* SystemLine();

// With kept > 0 (--cleanup=false): how many segments stay in /dev/shm and
// the command that removes them, on stderr.
void ReportLeftSegments(uint64_t kept);

}  // namespace shmb

#endif
