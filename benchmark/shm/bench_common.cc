#include "bench_common.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <signal.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

namespace shmb {
namespace {

std::string g_program = "shmbench";
std::string g_main_file;
shmb_sysinfo_t g_sys;
int64_t g_start_time;
double g_timer_overhead_ns;
int g_allowed_cpus;  // CPUs this process may use, read before --cpu pins the main thread
FILE* g_json_out;
std::string g_json_tmp;     // --json_out is written here, renamed into place on success
std::string g_json_target;  // where it is renamed to ("": written directly)
int g_json_tmp_id = -1;  // its id among the files a signal removes

[[noreturn]] void UsageError(const std::string& message)
{
    std::fprintf(stderr, "%s: %s\n", g_program.c_str(), message.c_str());
    shmb_segment_unlink_all();
    std::exit(2);
}

// value with its control characters written as \xNN, so that it stays on
// one line of a message.
std::string Printable(const std::string& value)
{
    std::string out;
    for (unsigned char c : value) {
        if (c < 0x20 || c == 0x7f) {
            char esc[8];
            std::snprintf(esc, sizeof(esc), "\\x%02x", c);
            out += esc;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

bool HasControl(const std::string& value)
{
    for (unsigned char c : value)
        if (c < 0x20 || c == 0x7f)
            return true;
    return false;
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

// Every way a flag reaches gflags (the command line, --flagfile, --fromenv,
// --tryfromenv) goes through these checks first, so that a bad or unknown
// flag exits 2 with one line naming it, as gflags itself would not (exit 1,
// or silence for an unknown flag in a flagfile).
class ArgChecker {
public:
    // Checks argv[i] (and argv[i + 1] when it is the value); returns how
    // many arguments it used.
    int CheckCommandLine(int argc, char** argv, int i)
    {
        std::string next = i + 1 < argc ? argv[i + 1] : "";
        return Check(argv[i], i + 1 < argc ? &next : nullptr, "");
    }

private:
    int depth_ = 0;

    [[noreturn]] void Bad(const std::string& flag, const std::string& value, const std::string& why,
                          const std::string& where)
    {
        UsageError("invalid --" + flag + "=" + Printable(value) + where + ": " + why);
    }

    int Check(const std::string& arg, const std::string* next, const std::string& where)
    {
        if (arg.size() < 2 || arg[0] != '-')
            UsageError("unexpected argument '" + Printable(arg) + "'" + where +
                       " (flags are --name=value; see --helpshort)");
        std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
        size_t eq = body.find('=');
        std::string name = body.substr(0, eq);
        bool has_value = eq != std::string::npos;
        gflags::CommandLineFlagInfo info;
        if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
            if (name.compare(0, 2, "no") == 0 &&
                gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) && info.type == "bool") {
                if (has_value)
                    Bad(name, body.substr(eq + 1),
                        "--no" + info.name + " takes no value; write --" + info.name +
                            "=true or --" + info.name + "=false", where);
                return 1;
            }
            UsageError("unknown flag --" + Printable(name) + where + " (see --helpshort)");
        }
        if (info.type == "bool" && !has_value)
            return 1;
        std::string value;
        int used = 1;
        if (has_value) {
            value = body.substr(eq + 1);
        } else if (next && where.empty()) {
            value = *next;
            used = 2;
        } else {
            UsageError("flag --" + name + where + " needs a value (--" + name + "=value)");
        }
        CheckValue(info, value, where);
        return used;
    }

    void CheckValue(const gflags::CommandLineFlagInfo& info, const std::string& value,
                    const std::string& where)
    {
        if (HasControl(value))
            Bad(info.name, value, "control characters are not allowed", where);
        if (!ParsesAs(info.type, value))
            Bad(info.name, value, "not a valid " + info.type, where);
        if (info.name == "flagfile")
            CheckFlagfile(value);
        else if (info.name == "fromenv" || info.name == "tryfromenv")
            CheckFromEnv(info.name, value, where);
    }

    // A flagfile holds one --name=value per line; '#' starts a comment.
    void CheckFlagfile(const std::string& files)
    {
        if (++depth_ > 8)
            Bad("flagfile", files, "flagfiles nest too deep", "");
        std::stringstream list(files);
        std::string file;
        while (std::getline(list, file, ',')) {
            std::ifstream in(file);
            if (!in)
                Bad("flagfile", file, std::string("cannot be read: ") + std::strerror(errno), "");
            std::string line, where;
            for (int n = 1; std::getline(in, line); n++) {
                size_t start = line.find_first_not_of(" \t");
                if (start == std::string::npos || line[start] == '#')
                    continue;
                line = line.substr(start, line.find_last_not_of(" \t\r") + 1 - start);
                where = " (line " + std::to_string(n) + " of --flagfile=" + Printable(file) + ")";
                Check(line, nullptr, where);
            }
        }
        depth_--;
    }

    // --fromenv=a,b takes --a from $FLAGS_a (which must be set), --tryfromenv
    // too when set.
    void CheckFromEnv(const std::string& which, const std::string& names, const std::string& where)
    {
        std::stringstream list(names);
        std::string name;
        while (std::getline(list, name, ',')) {
            gflags::CommandLineFlagInfo info;
            if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info))
                Bad(which, names, "unknown flag --" + Printable(name), where);
            if (info.name == "fromenv" || info.name == "tryfromenv" || info.name == "flagfile")
                Bad(which, names, "--" + info.name + " cannot come from the environment", where);
            const char* env = std::getenv(("FLAGS_" + name).c_str());
            if (!env) {
                if (which == "fromenv")
                    Bad(which, names, "FLAGS_" + name + " is not set in the environment", where);
                continue;
            }
            CheckValue(info, env, " (from FLAGS_" + name + " in the environment)");
        }
    }
};

// Checks every flag before gflags sees it (see ArgChecker).
void PrecheckArgs(int argc, char** argv)
{
    ArgChecker checker;
    for (int i = 1; i < argc;) {
        if (std::string(argv[i]) == "--")
            break;
        i += checker.CheckCommandLine(argc, argv, i);
    }
}

std::string FlagValue(const char* name)
{
    std::string value;
    gflags::GetCommandLineOption(name, &value);
    return value;
}

std::string XmlEscape(const std::string& text)
{
    std::string out;
    for (char c : text) {
        switch (c) {
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '&': out += "&amp;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out += c;
        }
    }
    return out;
}

// gflags' --helpxml, which gflags only offers from inside its parser (and
// then exits 1).
void ShowXml()
{
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);
    std::printf("<?xml version=\"1.0\"?>\n<AllFlags>\n<program>%s</program>\n<usage>%s</usage>\n",
                XmlEscape(g_program).c_str(), XmlEscape(gflags::ProgramUsage()).c_str());
    for (const auto& f : flags)
        std::printf("<flag><file>%s</file><name>%s</name><meaning>%s</meaning><default>%s</default>"
                    "<current>%s</current><type>%s</type></flag>\n",
                    XmlEscape(f.filename).c_str(), XmlEscape(f.name).c_str(),
                    XmlEscape(f.description).c_str(), XmlEscape(f.default_value).c_str(),
                    XmlEscape(f.current_value).c_str(), XmlEscape(f.type).c_str());
    std::printf("</AllFlags>\n");
}

// Every help flag prints and exits 0 (gflags would exit 1: asking for help
// is no error); --version too.
void HandleHelp(const char* argv0)
{
    bool shown = true;
    if (FlagValue("helpshort") == "true")
        gflags::ShowUsageWithFlagsRestrict(argv0, g_main_file.c_str());
    else if (FlagValue("help") == "true" || FlagValue("helpfull") == "true")
        gflags::ShowUsageWithFlags(argv0);
    else if (!FlagValue("helpon").empty())
        gflags::ShowUsageWithFlagsRestrict(argv0, ("/" + FlagValue("helpon") + ".").c_str());
    else if (!FlagValue("helpmatch").empty())
        gflags::ShowUsageWithFlagsRestrict(argv0, FlagValue("helpmatch").c_str());
    else if (FlagValue("helppackage") == "true")
        gflags::ShowUsageWithFlagsRestrict(
            argv0, g_main_file.substr(0, g_main_file.find_last_of('/') + 1).c_str());
    else if (FlagValue("helpxml") == "true")
        ShowXml();
    else
        shown = false;
    if (shown)
        std::exit(std::fflush(stdout) == 0 ? 0 : 1);
    gflags::HandleCommandLineHelpFlags();  // --version: prints it, exits 0
}

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

// --json_out: a temporary file beside FILE (so the final rename stays on one
// file system), removed by any failure or signal, renamed into place only
// once the results are written; FILE itself is untouched until then. A FILE
// that exists and is not a regular file (a device, a FIFO, /dev/stdout) is
// written directly: renaming over it would replace it. A symbolic link is
// followed, and an existing file's permissions are kept.
void OpenJsonOut()
{
    const std::string& path = FLAGS_json_out;
    struct stat st;
    bool exists = stat(path.c_str(), &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        FlagError("json_out", path, "names a directory, not a file");
    if (exists && !S_ISREG(st.st_mode)) {
        if (!(g_json_out = std::fopen(path.c_str(), "w")))
            FlagError("json_out", path, std::string("cannot be written: ") + std::strerror(errno));
        return;
    }
    char* real = exists ? realpath(path.c_str(), nullptr) : nullptr;
    g_json_target = real ? real : path;
    std::free(real);
    size_t slash = g_json_target.find_last_of('/');
    std::string dir = slash == std::string::npos ? "" : g_json_target.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? g_json_target : g_json_target.substr(slash + 1);
    if (base.empty())
        FlagError("json_out", path, "names a directory, not a file");
    std::string pattern = dir + "." + base + ".tmp.XXXXXX";
    std::vector<char> tmp(pattern.begin(), pattern.end());
    tmp.push_back('\0');
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);  // no signal between create and track
    int fd = mkstemp(tmp.data());
    int err = errno;
    if (fd >= 0)
        g_json_tmp_id = shmb_segment_track_file(tmp.data());
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (fd < 0)
        FlagError("json_out", path, std::string("cannot be written: ") + std::strerror(err));
    g_json_tmp = tmp.data();
    mode_t mask = umask(0);
    umask(mask);
    mode_t mode = exists ? st.st_mode & 07777 : 0666 & ~mask;
    if (fchmod(fd, mode) != 0 || !(g_json_out = fdopen(fd, "w"))) {
        err = errno;
        close(fd);
        FlagError("json_out", path, std::string("cannot be written: ") + std::strerror(err));
    }
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

void ExitIfPeerDied(int ret, const shmb_error_t& err)
{
    if (ret != -EPIPE || !err.call || std::strcmp(err.call, "peer process") != 0)
        return;
    shmb_segment_unlink_all();
    std::fprintf(stderr, "%s: the peer process died: %s; nothing is left behind\n", g_program.c_str(), err.object);
    std::exit(1);
}

void FailRun(int ret, shmb_peer_t* peer, const char* why, const char* check, const char* what)
{
    const shmb_error_t saved = *shmb_error_last();
    if (peer)
        shmb_peer_stop(peer);
    ExitIfPeerDied(ret, saved);
    shmb_error_clear();
    if (saved.call)
        shmb_error_record(saved.call, saved.err, saved.object);
    if (ret == -EPROTO && why[0]) {
        shmb_segment_unlink_all();
        std::fprintf(stderr, "%s: %s, no number reported: %s\n", g_program.c_str(), check, why);
        std::exit(1);
    }
    Fail(ret, what);
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
        msg += std::string(e->call) + "(" + Printable(e->object) + ") failed: " + std::strerror(err);
    } else {
        msg += std::string(what) + " failed: " + std::strerror(err);
    }
    char hint[1024];
    if (shmb_error_hint(e->call, err, FLAGS_shm_prefix.c_str(), hint, sizeof(hint)) > 0)
        msg += "; " + std::string(hint);
    std::fprintf(stderr, "%s\n", msg.c_str());
    shmb_segment_unlink_all();
    std::exit(1);
}

void WarnIfOversubscribed(int threads)
{
    if (shmb_sysinfo_overloaded(&g_sys))
        std::fprintf(stderr, "%s: warning: the load average at start (%.2f) exceeds the %d CPUs; other "
                     "work competes for them, so repeat the run (--repetitions) and compare medians\n",
                     g_program.c_str(), g_sys.load_avg[0], g_sys.num_cpus);
    int cpus = g_allowed_cpus > 0 ? g_allowed_cpus : g_sys.num_cpus;
    if (cpus > 0 && threads > cpus)
        std::fprintf(stderr, "%s: warning: --threads=%d exceeds the %d CPUs this process may use; the "
                     "threads share CPUs and every figure includes waiting for one\n",
                     g_program.c_str(), threads, cpus);
}

void Init(int* argc, char*** argv, const char* usage, const char* main_file)
{
    EnsureStandardFds();
    const char* slash = std::strrchr((*argv)[0], '/');
    g_program = slash ? slash + 1 : (*argv)[0];
    g_main_file = main_file;
    g_start_time = static_cast<int64_t>(std::time(nullptr));
    gflags::SetUsageMessage(usage);
    gflags::SetVersionString(SHMB_VERSION);
    PrecheckArgs(*argc, *argv);
    gflags::ParseCommandLineNonHelpFlags(argc, argv, true);
    HandleHelp((*argv)[0]);
    if (*argc > 1)
        UsageError(std::string("unexpected argument '") + Printable((*argv)[1]) + "'");

    FLAGS_logtostderr = true;
    google::InitGoogleLogging(g_program.c_str());
    google::InstallFailureFunction(&FailureFunction);
    int ret = shmb_segment_install_signal_cleanup();
    if (ret < 0)
        Fail(ret, "installing signal handlers");

    shmb_format_t format;
    if (shmb_report_parse_format(FLAGS_format.c_str(), &format) != 0)
        FlagError("format", FLAGS_format, "one of table, csv, json");
    CheckRange("repetitions", FLAGS_repetitions, 1, 1000);
    if (!FLAGS_system.empty() && !InList(kSystems, FLAGS_system))
        FlagError("system", FLAGS_system, std::string("one of ") + kSystems);
    ret = shmb_segment_check_prefix(FLAGS_shm_prefix.c_str());
    if (ret < 0)
        FlagError("shm_prefix", FLAGS_shm_prefix,
                  "must start with '/', contain no other '/' and be at most " +
                      std::to_string(SHMB_SEGMENT_NAME_MAX - 48) + " characters");
    char hint[512];  // a full /dev/shm under an allocator's own unguarded write: this line, exit 1
    shmb_error_hint("first write", ENOSPC, FLAGS_shm_prefix.c_str(), hint, sizeof(hint));
    shmb_segment_set_fault_line((g_program + ": a write into shared memory failed (SIGBUS): " +
                                 std::strerror(ENOSPC) + "; " + hint).c_str());
    if (!FLAGS_json_out.empty())
        OpenJsonOut();
    shmb_sysinfo_read(&g_sys);
    g_timer_overhead_ns = shmb_clock_overhead_ns();
    std::vector<int> allowed(CPU_SETSIZE);
    g_allowed_cpus = shmb_sysinfo_allowed_cpus(allowed.data(), CPU_SETSIZE);
    if (FLAGS_cpu != -1)
        PinToCpu(FLAGS_cpu);
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
                     g_program.c_str(), flag, need, have, flag);
        shmb_segment_unlink_all();
        std::exit(1);
    }
    // SHM pages are charged to the memory cgroup of the process that touches them.
    int64_t cgroup_free = shmb_sysinfo_cgroup_memory_free();
    if (cgroup_free >= 0 && static_cast<uint64_t>(cgroup_free) < bytes) {
        shmb_sysinfo_format_bytes(cgroup_free, have, sizeof(have));
        std::fprintf(stderr, "%s: --%s needs %s of SHM but the memory cgroup of this process has "
                     "only %s left (memory.max - memory.current, charged for SHM pages too); "
                     "lower --%s or raise memory.max\n",
                     g_program.c_str(), flag, need, have, flag);
        shmb_segment_unlink_all();
        std::exit(1);
    }
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
    errno = 0;  // a failed write leaves its errno for shmb_report_write to report
    int ret = shmb_report_write(stdout, format, report, rows);
    if (ret < 0) {
        std::fprintf(stderr, "%s: writing the results to stdout failed: %s\n", g_program.c_str(),
                     std::strerror(-ret));
        shmb_segment_unlink_all();
        std::exit(1);
    }
    if (!g_json_out)
        return;
    errno = 0;
    ret = shmb_report_write(g_json_out, SHMB_FORMAT_JSON, report, rows);
    if (std::fclose(g_json_out) != 0 && ret == 0)
        ret = -errno;
    g_json_out = nullptr;
    if (ret == 0 && !g_json_tmp.empty() && std::rename(g_json_tmp.c_str(), g_json_target.c_str()) != 0)
        ret = -errno;
    if (ret < 0) {
        std::fprintf(stderr, "%s: writing --json_out=%s failed: %s; check the directory exists, "
                     "is writable and has space\n",
                     g_program.c_str(), Printable(FLAGS_json_out).c_str(), std::strerror(-ret));
        shmb_segment_unlink_all();
        std::exit(1);
    }
    shmb_segment_untrack_file(g_json_tmp_id);
    g_json_tmp_id = -1;
}

}  // namespace shmb
