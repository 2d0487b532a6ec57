// What the shared files share with each other and not with the modes: the
// facts Init gathers and the helpers of their messages.
#ifndef SHMBENCH_BENCH_INTERNAL_H
#define SHMBENCH_BENCH_INTERNAL_H

#include <cstdint>
#include <string>

#include "shmbench/shmbench.h"

namespace shmb {
namespace internal {

// Set once by Init, read-only after.
struct RunFacts {
    std::string program = "shmbench";  // argv[0]'s last part: the first word of every message
    std::string main_file;             // the main's __FILE__: its flags are the binary's own
    shmb_sysinfo_t sys;
    int64_t start_time = 0;            // seconds since the epoch
    double timer_overhead_ns = 0;
    int allowed_cpus = 0;              // CPUs this process may use, read before --cpu pins the main thread
    shmb_progress_t progress = {};     // on stderr when it is a terminal, else silent
};
extern RunFacts g_run;

// exits.cc: "<program>: message" on stderr, our segments unlinked, exit 2.
[[noreturn]] void UsageError(const std::string& message);

// exits.cc: value with its control characters written as \xNN, so that it
// stays on one line of a message.
std::string Printable(const std::string& value);

// flags.cc: checks every argument (command line, --flagfile, --fromenv,
// --tryfromenv), parses them, serves the help flags and --version, and
// refuses stray arguments; then checks the flags every binary has.
void ParseFlags(int* argc, char*** argv, const char* usage);
void CheckCommonFlags();

// flags.cc: a flag defined in `file` is the binary's own: the main's and
// its modes' (benchmark/shm/), not glog's or gflags'.
bool OwnFlag(const std::string& file);

// flags.cc: "name=value ..." of the binary's own flags, by name, for the report.
std::string FlagsLine();

// help.cc: prints and exits 0 if a help flag or --version was given.
void HandleHelp(const char* argv0);

// output.cc: creates --json_out's temporary file.
void OpenJsonOut();

// preflight.cc: fds 0, 1 and 2 open; the machine's facts; --cpu's pinning.
void EnsureStandardFds();
void ReadMachine();
void PinToCpu(int cpu);

}  // namespace internal
}  // namespace shmb

#endif
