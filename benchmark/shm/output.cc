// Where the results go: the rows to stdout in --format, and the same rows
// as JSON to --json_out, which changes only once it is complete (written to
// a temporary file, renamed into place at the end); and the report's system
// line, which two mains share.
#include <gflags/gflags.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_internal.h"

namespace shmb {

using internal::g_run;

namespace {

FILE* g_json_out;
std::string g_json_tmp;     // --json_out is written here, renamed into place on success
std::string g_json_target;  // where it is renamed to ("": written directly)
int g_json_tmp_id = -1;     // its id among the files a signal removes

[[noreturn]] void WriteFailed(const std::string& what, int err, const char* hint)
{
    std::fprintf(stderr, "%s: writing %s failed: %s%s\n", g_run.program.c_str(), what.c_str(),
                 std::strerror(err), hint);
    shmb_segment_unlink_all();
    std::exit(1);
}

// Writes the JSON, closes the file and renames it into place: 0 or -errno.
int FinishJson(const shmb_report_t* report, const shmb_rows_t* rows)
{
    errno = 0;
    int ret = shmb_report_write(g_json_out, SHMB_FORMAT_JSON, report, rows);
    if (std::fclose(g_json_out) != 0 && ret == 0)
        ret = -errno;
    g_json_out = nullptr;
    if (ret == 0 && !g_json_tmp.empty() && std::rename(g_json_tmp.c_str(), g_json_target.c_str()) != 0)
        ret = -errno;
    return ret;
}

}  // namespace

namespace internal {

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

}  // namespace internal

void WriteReport(shmb_report_t* report, const shmb_rows_t* rows)
{
    static std::string flags;
    flags = internal::FlagsLine();
    shmb_format_t format = SHMB_FORMAT_TABLE;
    shmb_report_parse_format(FLAGS_format.c_str(), &format);
    report->program = g_run.program.c_str();
    report->version = SHMB_VERSION;
    report->executable = gflags::GetArgv0();
    report->flags = flags.c_str();
    report->sys = &g_run.sys;
    report->timer_overhead_ns = g_run.timer_overhead_ns;
    report->cpu = FLAGS_cpu;
    report->repetitions = FLAGS_repetitions;
    report->date = g_run.start_time;
    errno = 0;  // a failed write leaves its errno for shmb_report_write to report
    int ret = shmb_report_write(stdout, format, report, rows);
    if (ret < 0)
        WriteFailed("the results to stdout", -ret, "");
    if (!g_json_out)
        return;
    ret = FinishJson(report, rows);
    if (ret < 0)
        WriteFailed("--json_out=" + internal::Printable(FLAGS_json_out), -ret,
                    "; check the directory exists, is writable and has space");
    shmb_segment_untrack_file(g_json_tmp_id);
    g_json_tmp_id = -1;
}

const char* SystemLine(shmb_mooncake_path_t mooncake_path)
{
    static std::string line;
    if (FLAGS_system.empty())
        return nullptr;
    line = FLAGS_system;
    if (FLAGS_system == "mooncake" && mooncake_path != SHMB_MOONCAKE_DEFAULT_PATH)
        line += std::string(" (mooncake_path=") + shmb_mooncake_path_name(mooncake_path) + ")";
    return line.c_str();
}

void ReportLeftSegments(uint64_t kept)
{
    if (kept == 0)
        return;
    char clean[4 * SHMB_ERROR_OBJECT_MAX + 40];
    shmb_error_clean_command(FLAGS_shm_prefix.c_str(), clean, sizeof(clean));
    std::fprintf(stderr,
                 "%s: left %llu segment%s in /dev/shm (--cleanup=false); once this process has "
                 "exited, remove them with: %s\n",
                 gflags::GetArgv0(), static_cast<unsigned long long>(kept), kept == 1 ? "" : "s", clean);
}

}  // namespace shmb
