#include "bench_common.h"

#include <glog/logging.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <vector>

namespace shmb {
namespace {

std::string g_program = "shmbench";
std::string g_main_file;
shmb_sysinfo_t g_sys;
int64_t g_start_time;
double g_timer_overhead_ns;
FILE* g_json_out;

[[noreturn]] void UsageError(const std::string& message)
{
    std::fprintf(stderr, "%s: %s\n", g_program.c_str(), message.c_str());
    shmb_segment_unlink_all();
    std::exit(2);
}

bool ParsesAs(const std::string& type, const std::string& value)
{
    if (type == "string")
        return true;  // each binary checks its strings itself
    if (value.empty())
        return false;
    const char* s = value.c_str();
    char* end = nullptr;
    errno = 0;
    if (type == "bool") {
        static const char* words[] = {"true", "false", "1", "0", "yes", "no", "t", "f", "y", "n"};
        for (const char* w : words)
            if (strcasecmp(s, w) == 0)
                return true;
        return false;
    }
    if (type == "int32" || type == "int64") {
        long long v = std::strtoll(s, &end, 10);
        if (type == "int32" && (v < INT32_MIN || v > INT32_MAX))
            return false;
        return errno == 0 && *end == '\0';
    }
    if (type == "uint32" || type == "uint64") {
        if (value.find('-') != std::string::npos)
            return false;
        unsigned long long v = std::strtoull(s, &end, 10);
        if (type == "uint32" && v > UINT32_MAX)
            return false;
        return errno == 0 && *end == '\0';
    }
    std::strtod(s, &end);  // double
    return errno == 0 && *end == '\0';
}

// Checks every flag before gflags sees it, so that every bad or unknown flag
// exits 2 with one line (gflags itself would exit 1).
void PrecheckArgs(int argc, char** argv)
{
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--")
            break;
        if (arg.size() < 2 || arg[0] != '-')
            UsageError("unexpected argument '" + arg + "' (flags are --name=value; see --helpshort)");
        std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
        size_t eq = body.find('=');
        std::string name = body.substr(0, eq);
        if (name == "helpshort" || name == "help") {
            // gflags would exit 1 after help; asking for help is no error.
            if (name == "helpshort")
                gflags::ShowUsageWithFlagsRestrict(argv[0], g_main_file.c_str());
            else
                gflags::ShowUsageWithFlags(argv[0]);
            std::exit(0);
        }
        gflags::CommandLineFlagInfo info;
        bool negated = false;
        if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
            negated = name.compare(0, 2, "no") == 0 &&
                      gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) &&
                      info.type == "bool";
            if (!negated)
                UsageError("unknown flag --" + name + " (see --helpshort)");
        }
        if (negated || (info.type == "bool" && eq == std::string::npos))
            continue;
        std::string value;
        if (eq != std::string::npos)
            value = body.substr(eq + 1);
        else if (i + 1 < argc)
            value = argv[++i];
        else
            UsageError("flag --" + name + " needs a value");
        if (!ParsesAs(info.type, value))
            UsageError("invalid --" + name + "=" + value + ": not a valid " + info.type);
    }
}

__attribute__((noreturn)) void FailureFunction()
{
    shmb_segment_unlink_all();
    std::abort();
}

std::string FlagsLine()
{
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);
    std::string line;
    for (const auto& f : flags) {
        if (f.filename != g_main_file || f.name == "json_out")
            continue;
        line += (line.empty() ? "" : " ") + f.name + "=" + f.current_value;
    }
    return line;
}

}  // namespace

double TimerOverheadNs()
{
    return g_timer_overhead_ns;
}

uint64_t CheckRange(const char* flag, int64_t value, int64_t lo, int64_t hi)
{
    if (value < lo || value > hi)
        FlagError(flag, std::to_string(value),
                  "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return static_cast<uint64_t>(value);
}

bool InList(const std::string& list, const std::string& item)
{
    std::stringstream ss(list);
    std::string part;
    while (std::getline(ss, part, ','))
        if (part == item)
            return true;
    return false;
}

std::string CheckList(const char* flag, const std::string& value, const std::string& allowed)
{
    std::stringstream ss(value);
    std::string part, seen;
    while (std::getline(ss, part, ',')) {
        if (!InList(allowed, part) || InList(seen, part))
            FlagError(flag, value, "a comma-separated list of distinct items of " + allowed);
        seen += (seen.empty() ? "" : ",") + part;
    }
    if (seen.empty() || value.back() == ',')
        FlagError(flag, value, "a comma-separated list of distinct items of " + allowed);
    return seen;
}

void FlagError(const char* flag, const std::string& value, const std::string& allowed)
{
    UsageError("invalid --" + std::string(flag) + "=" + value + ": " + allowed);
}

void Fail(int ret, const char* what)
{
    const shmb_error_t* e = shmb_error_last();
    int err = e->call ? e->err : -ret;
    std::string msg = g_program + ": ";
    if (e->call) {
        msg += std::string(e->call) + "(" + e->object + ") failed: " + std::strerror(err);
    } else {
        msg += std::string(what) + " failed: " + std::strerror(err);
    }
    const char* hint = shmb_error_hint(err);
    if (*hint)
        msg += "; " + std::string(hint);
    std::fprintf(stderr, "%s\n", msg.c_str());
    shmb_segment_unlink_all();
    std::exit(1);
}

void Init(int* argc, char*** argv, const char* usage, const char* main_file)
{
    const char* slash = std::strrchr((*argv)[0], '/');
    g_program = slash ? slash + 1 : (*argv)[0];
    g_main_file = main_file;
    g_start_time = static_cast<int64_t>(std::time(nullptr));
    gflags::SetUsageMessage(usage);
    gflags::SetVersionString(SHMB_VERSION);
    PrecheckArgs(*argc, *argv);
    gflags::ParseCommandLineFlags(argc, argv, true);
    if (*argc > 1)
        UsageError(std::string("unexpected argument '") + (*argv)[1] + "'");

    FLAGS_logtostderr = true;
    google::InitGoogleLogging(g_program.c_str());
    google::InstallFailureFunction(&FailureFunction);

    shmb_format_t format;
    if (shmb_report_parse_format(FLAGS_format.c_str(), &format) != 0)
        FlagError("format", FLAGS_format, "one of table, csv, json");
    CheckRange("repetitions", FLAGS_repetitions, 1, 1000);
    if (!FLAGS_system.empty() && !InList(kSystems, FLAGS_system))
        FlagError("system", FLAGS_system, std::string("one of ") + kSystems);
    int ret = shmb_segment_check_prefix(FLAGS_shm_prefix.c_str());
    if (ret < 0)
        FlagError("shm_prefix", FLAGS_shm_prefix,
                  "must start with '/', contain no other '/' and be at most " +
                      std::to_string(SHMB_SEGMENT_NAME_MAX - 48) + " characters");
    if (!FLAGS_json_out.empty() && !(g_json_out = std::fopen(FLAGS_json_out.c_str(), "w")))
        FlagError("json_out", FLAGS_json_out,
                  std::string("cannot be written: ") + std::strerror(errno));
    shmb_sysinfo_read(&g_sys);
    g_timer_overhead_ns = shmb_clock_overhead_ns();
    if (FLAGS_cpu != -1) {
        if (FLAGS_cpu < 0 || FLAGS_cpu >= g_sys.num_cpus)
            FlagError("cpu", std::to_string(FLAGS_cpu),
                      "-1 or a CPU between 0 and " + std::to_string(g_sys.num_cpus - 1));
        ret = shmb_sysinfo_pin_cpu(FLAGS_cpu);
        if (ret < 0)
            FlagError("cpu", std::to_string(FLAGS_cpu),
                      std::string("cannot pin to it: ") + std::strerror(-ret));
    }
    ret = shmb_segment_install_signal_cleanup();
    if (ret < 0)
        Fail(ret, "installing signal handlers");
}

void CheckShmSpace(const char* flag, uint64_t bytes)
{
    int64_t total, avail;
    if (shmb_sysinfo_fs_space("/dev/shm", &total, &avail) != 0 || static_cast<uint64_t>(avail) >= bytes)
        return;
    char need[32], have[32];
    shmb_sysinfo_format_bytes(static_cast<int64_t>(bytes), need, sizeof(need));
    shmb_sysinfo_format_bytes(avail, have, sizeof(have));
    std::fprintf(stderr, "%s: --%s needs %s in /dev/shm but only %s is free; lower --%s or free "
                 "space (df -h /dev/shm)\n", g_program.c_str(), flag, need, have, flag);
    shmb_segment_unlink_all();
    std::exit(1);
}

void WriteReport(shmb_report_t* report, const shmb_rows_t* rows)
{
    static std::string flags;
    flags = FlagsLine();
    shmb_format_t format = SHMB_FORMAT_TABLE;
    shmb_report_parse_format(FLAGS_format.c_str(), &format);
    report->program = g_program.c_str();
    report->version = SHMB_VERSION;
    report->executable = gflags::GetArgv0();
    report->flags = flags.c_str();
    report->sys = &g_sys;
    report->timer_overhead_ns = g_timer_overhead_ns;
    report->cpu = FLAGS_cpu;
    report->repetitions = FLAGS_repetitions;
    report->date = g_start_time;
    int ret = shmb_report_write(stdout, format, report, rows);
    if (ret < 0) {
        std::fprintf(stderr, "%s: writing the results failed: %s\n", g_program.c_str(),
                     std::strerror(-ret));
        std::exit(1);
    }
    if (!g_json_out)
        return;
    ret = shmb_report_write(g_json_out, SHMB_FORMAT_JSON, report, rows);
    if (std::fclose(g_json_out) != 0 && ret == 0)
        ret = -errno;
    g_json_out = nullptr;
    if (ret < 0) {
        std::fprintf(stderr, "%s: writing --json_out=%s failed: %s; check the directory exists and is writable\n",
                     g_program.c_str(), FLAGS_json_out.c_str(), std::strerror(-ret));
        std::exit(1);
    }
}

}  // namespace shmb
