// Code the three mains share, one header for all of it (every main uses
// every part): start-up (init.cc), the command line and flag checks
// (flags.cc, help.cc), error exits (exits.cc), preflight checks
// (preflight.cc) and the output (output.cc). The mains are C++ only because
// gflags and glog are; everything that measures lives in the C library.
#ifndef SHMBENCH_BENCH_COMMON_H
#define SHMBENCH_BENCH_COMMON_H

#include <gflags/gflags.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shmbench/shmbench.h"

// Defines the flags every binary has. Expanded in each main's own file, so
// that gflags' --helpshort (flags of the file named after the binary) lists
// them with the binary's own flags.
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

// Opens /dev/null on a closed fd 0, 1 or 2 (read-only for stdout, so that
// results written to a closed stdout fail with EBADF instead of landing in a
// file opened later). Parses the command line: bad or unknown flags, a
// --noFLAG=value, control characters in any value and stray arguments exit 2
// with one line naming the flag, whether they come from the command line,
// a --flagfile (unreadable: exit 2 too), --fromenv or --tryfromenv; --help,
// --helpshort, --helpfull, --helpon, --helpmatch, --helppackage, --helpxml
// and --version print and exit 0. Then installs the signal handlers that
// unlink our segments, checks the common flags, creates --json_out's
// temporary file, starts glog on stderr and pins the thread if --cpu asks
// (a CPU of the allowed set, else exit 2). main_file is the main's __FILE__
// (its flags are the binary's own).
void Init(int* argc, char*** argv, const char* usage, const char* main_file);

// The run's progress line for the library's drivers (their config's
// progress): on stderr when it is a terminal, silent otherwise; every exit
// through this code clears it before its message.
shmb_progress_t* Progress();

// --- flags.cc: modes, and checks of the mains' own flags ----------------------

// A mode of a binary: one driver, picked once by main. `flags` lists the
// flags it reads of those that some mode of the binary names (a flag no
// mode names is read by every mode).
struct Mode {
    const char* name;   // how the user asks for it, for messages: "--allocator=ready"
    const char* flags;  // comma-separated
    int (*run)();       // checks its flags, runs, writes the report; main's exit status
};

// Runs modes[pick] after refusing, one line and exit 2, the first flag given
// (command line, --flagfile or environment) that another mode names and it
// does not: "invalid --F=V: not read by MODE, only by OTHER or OTHER".
int RunMode(const std::vector<Mode>& modes, size_t pick);


// Checks lo <= value <= hi for an integer flag, else FlagError.
uint64_t CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi);

// The index of `value` among `choices`, else FlagError naming them
// ("a, b or c").
int CheckChoice(const char* flag, const std::string& value, const std::vector<std::string>& choices);

// The items of a comma-separated list flag, in order. An item `valid`
// refuses or that repeats: FlagError(flag, value, allowed); then no item or
// a trailing comma: FlagError(flag, value, empty).
std::vector<std::string> CheckItems(const char* flag, const std::string& value,
                                    const std::function<bool(const std::string&)>& valid,
                                    const std::string& allowed, const std::string& empty);

// A list whose every item is one of `allowed` (comma-separated), no item
// repeated, not empty. Returns the items in the order given.
std::string CheckList(const char* flag, const std::string& value, const std::string& allowed);

// --flag=all: `available`; else CheckList's list of `known` items, each of
// them also `available` (else a line naming the first, in `known`'s order,
// that this machine lacks).
std::string CheckListOrAll(const char* flag, const std::string& value, const std::string& known,
                           const std::string& available);

// CheckList's list of variants; with --system, the flag must be left at its
// default (else "cannot be combined with --system (it selects the <what>)")
// and the list is `system_variant`.
std::string CheckVariants(const char* flag, const std::string& value, const std::string& allowed,
                          const std::string& system_variant, const char* what);

// A list of distinct counts, digits only, each 1..max; `what` names them in
// the message ("segment counts"). Returns them in the order given.
std::vector<uint64_t> CheckCounts(const char* flag, const std::string& value, uint64_t max, const char* what);

// The names of the translation paths of `kinds` (SHMB_PATH_SYSTEM,
// SHMB_PATH_KERNEL or both), comma-separated, from the library's table.
std::string PathNames(unsigned kinds);

// name(0), .., name(count - 1), comma-separated, leaving out those that are
// NULL: a library table's names (shmb_alloc_kind_name, ...) as a list.
std::string JoinNames(int count, const std::function<const char*(int)>& name);

// True if `item` is in the comma-separated `list`.
bool InList(const std::string& list, const std::string& item);

// --- exits.cc ----------------------------------------------------------------

// One line "<program>: invalid --<flag>=<value>: <allowed>" on stderr, exit 2.
[[noreturn]] void FlagError(const char* flag, const std::string& value, const std::string& allowed);

// --systems: the systems of a paired run, the baseline first and its
// control (the baseline again) last, in *names ("mooncake",
// "flowipc_classic", "mooncake_control"); empty without --systems. Exits 2
// for an unknown or repeated name, fewer than two, or --system or
// --repetitions beside it (a paired run's rounds are its repetitions).
std::vector<shmb_system_t> PairedSystems(std::vector<std::string>* names);

// For a failed library call: one line naming the system call, the errno text
// and what to try, on stderr; unlinks our segments; exit 1.
[[noreturn]] void Fail(int ret, const char* what);

// If `ret` is the death of the peer process (-EPIPE, recorded in `err` as the
// call "peer process" with what ended it): unlinks our segments, one line
// "<program>: the peer process died: <what>; nothing is left behind", exit 1
// (no line when the peer ran out of shared memory: its fault line said it).
// Otherwise returns. Call it once the peer is stopped.
void ExitIfPeerDied(int ret, const shmb_error_t& err);

// Exits 1 after a failed run: stops a started peer first (NULL: none), the
// run's error kept for the message. A dead peer is ExitIfPeerDied's line; a
// failed check (-EPROTO with a reason in `why`) is "<program>: <check>, no
// number reported: <why>"; anything else Fail(ret, what).
[[noreturn]] void FailRun(int ret, shmb_peer_t* peer, const char* why, const char* check, const char* what);

// Starts the peer process with `start` (a module's peer_start) under
// --shm_prefix; returns `peer`, or exits through Fail.
shmb_peer_t* StartPeer(int (*start)(shmb_peer_t*, const char*), shmb_peer_t* peer);

// Runs run(rep, why, cap) for rep = 0 .. --repetitions - 1, why empty each
// time; the first failure is FailRun's exit (with peer, check and what).
// Then stops a started peer (NULL: none); a failed stop is FailRun's exit.
// The progress line (Progress()) is told each repetition and cleared after
// the last.
void RunRepetitions(shmb_peer_t* peer, const char* check, const char* what,
                    const std::function<int(int rep, char* why, size_t cap)>& run);

// --- preflight.cc --------------------------------------------------------------

// The clock's overhead in ns, measured once in Init.
double TimerOverheadNs();

// Warns, one line each on stderr, when the machine is oversubscribed: when
// the load average read at start exceeds the CPU count (other work competes
// for the CPUs), and when `threads` measuring threads exceed the CPUs this
// process may use (time-sliced: every per-thread figure includes waiting for
// a CPU); `flag` is the flag that set them, named in that line. Every main
// calls it once its flags are checked, so that a usage error stays one line.
void WarnIfOversubscribed(int threads, const char* flag = "threads");

// Checks that `bytes` fit in the free space of /dev/shm and in what the
// memory cgroup (v2) of this process may still charge (memory.max -
// memory.current, SHM pages included), else one line naming `flag`, the
// space needed and the space free, exit 1.
void CheckShmSpace(const char* flag, uint64_t bytes);

// One pool a run will create: its backing and its bytes (rounded to the
// backing's page), and that page.
struct PoolPlan {
    shmb_backing_kind_t kind;
    uint64_t bytes;
    uint64_t page_size;
};

// The limits a pool run must fit, checked before anything is measured:
// free huge pages of the page size (hugetlb), /dev/shm's free space
// (tmpfs), MemAvailable and the memory cgroup (the shmem kinds; huge pages
// are reserved apart), and vm.max_map_count against the mappings the
// process has plus `mappings`. A run that cannot fit: one line naming
// `flag`, the number needed and the number available (and, for huge pages,
// the command that reserves them), exit 2. Returns the header lines that
// state each limit.
std::vector<std::string> CheckPoolLimits(const char* flag, const std::vector<PoolPlan>& pools, uint64_t mappings);

// The backing of src and dst (shm_transfer_bench's sweep and its replay)
// from --backing and --hugepage_kb (`name`, `hugepage_kb`: their values),
// checked before anything is measured: a bad value exits 2 naming its flag;
// a backing other than tmpfs exits 2 when `flowipc` (a Flow-IPC system
// runs: its pools are shm_open'd and lent by name), else is checked by
// CheckPoolLimits for `live` buffers of `bytes` each, each rounded up to the
// backing's page, under `flag` (the flag that sized them). tmpfs is left to
// the caller's /dev/shm check.
shmb_backing_config_t Backing(const std::string& name, int64_t hugepage_kb, bool flowipc, const char* flag,
                              uint64_t bytes, uint64_t live);

// Mooncake keeps the descriptor of every buffer it attached open: raises the
// soft open-files limit towards `segments` + 64 (up to the hard one), as a
// server would, else FlagError on `flag`.
void CheckOpenFiles(const char* flag, uint64_t segments);

// --- output.cc -----------------------------------------------------------------

// Opens FILE, the value of --flag, for output (shmbench/file.h): a symbolic
// link to neither a device nor a FIFO, a directory, a socket or a block
// device, or a FILE that cannot be created, is FlagError's exit 2.
void OpenOutput(const char* flag, const std::string& path, shmb_file_out_t* out);

// Ends an output opened by OpenOutput, whose writes returned `written` (0
// or the -errno of the first that failed): renamed into place or flushed to
// its device; a failed write, fsync, close or rename is one line naming
// --flag=FILE and the errno text, exit 1 (the temporary file removed, FILE
// as it was).
void CommitOutput(const char* flag, const std::string& path, shmb_file_out_t* out, int written);

// A report of `bench` for --system (nullptr: none) whose variant column is
// `variant`, or "part" when the rows are a system's (--system, --systems:
// they have no variant, and the short header keeps the table within 120
// columns).
shmb_report_t NewReport(const char* bench, const char* system, size_t nsystems, const char* variant);

// Adds `lines` after the report's notes (they must outlive WriteReport).
void AddNotes(shmb_report_t* report, const std::vector<std::string>& lines);

// Fills the parts of a report that every binary shares (context, flags,
// repetitions, CPU), writes the rows to stdout in --format, and as JSON
// to --json_out if given (written to a temporary file beside it, renamed into
// place only now; any failure or signal before removes the temporary file
// and leaves FILE as it was), and frees the rows. Exits 1 with the errno
// text (ENOSPC, EBADF) if an output cannot be written.
void WriteReport(shmb_report_t* report, shmb_rows_t* rows);

// The report's system line: nullptr without --system; else the system, and
// for --system=mooncake on a relocate path other than the default, the path
// too ("mooncake (mooncake_path=pr192)"). Valid until the next call.
const char* SystemLine(shmb_mooncake_path_t mooncake_path);

// With kept > 0 (--cleanup=false), tells on stderr how many segments stay in
// /dev/shm and the command that removes them.
void ReportLeftSegments(uint64_t kept);

}  // namespace shmb

#endif
