// The rows to stdout in --format and as JSON to --json_out, which changes
// only once complete (shmbench/file.h: a temporary file renamed over a
// regular FILE at the end, a device or FIFO written through).
#include <gflags/gflags.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_common.h"
#include "bench_internal.h"

namespace shmb {

using internal::g_run;

namespace {

shmb_file_out_t g_json;  // --json_out while open (g_json.f: NULL without one)

[[noreturn]] void WriteFailed(const std::string& what, int err, const char* hint)
{
    std::fprintf(stderr, "%s: writing %s failed: %s%s\n", g_run.program.c_str(), what.c_str(),
                 std::strerror(err), hint);
    shmb_segment_unlink_all();
    std::exit(1);
}

}  // namespace

void OpenOutput(const char* flag, const std::string& path, shmb_file_out_t* out)
{
    int ret = shmb_file_out_open(path.c_str(), out);
    switch (ret) {
    case 0:
        return;
    case -ELOOP:
        FlagError(flag, internal::Printable(path),
                  "a symbolic link to neither a device nor a FIFO: refused (replacing it would lose the link, "
                  "writing through it would write elsewhere); name the file itself");
    case -EISDIR:
        FlagError(flag, internal::Printable(path), "names a directory, not a file");
    case -EINVAL:
        FlagError(flag, internal::Printable(path),
                  "neither a regular file, a character device nor a FIFO (a socket, a block device?): refused");
    default:
        FlagError(flag, internal::Printable(path), std::string("cannot be written: ") + std::strerror(-ret));
    }
}

void CommitOutput(const char* flag, const std::string& path, shmb_file_out_t* out, int written)
{
    const bool replace = out->replace;  // a file of ours, not a device: its directory may be at fault
    int ret = written;
    if (ret < 0)
        shmb_file_out_abort(out);
    else
        ret = shmb_file_out_commit(out);
    if (ret < 0)
        WriteFailed("--" + std::string(flag) + "=" + internal::Printable(path), -ret,
                    ret == -EEXIST ? " (it is no longer a regular file: not replaced)"
                    : replace      ? "; check the directory exists, is writable and has space"
                                   : "");
}

namespace internal {

// --json_out is opened before anything is measured, so that a FILE that
// cannot be written is a bad flag value (exit 2), not a run's failure.
void OpenJsonOut()
{
    OpenOutput("json_out", FLAGS_json_out, &g_json);
}

}  // namespace internal

shmb_report_t NewReport(const char* bench, const char* system, size_t nsystems, const char* variant)
{
    shmb_report_t report = {};
    report.bench = bench;
    report.system = system;
    report.variant_label = system || nsystems ? "part" : variant;
    return report;
}

void AddNotes(shmb_report_t* report, const std::vector<std::string>& lines)
{
    int i = 0;
    while (i < SHMB_REPORT_MAX_NOTES && report->notes[i])
        i++;
    for (size_t k = 0; k < lines.size() && i < SHMB_REPORT_MAX_NOTES; k++)
        report->notes[i++] = lines[k].c_str();
    report->notes[i] = nullptr;
}

void WriteReport(shmb_report_t* report, shmb_rows_t* rows)
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
    if (g_json.f) {
        errno = 0;
        CommitOutput("json_out", FLAGS_json_out, &g_json, shmb_report_write(g_json.f, SHMB_FORMAT_JSON, report, rows));
    }
    shmb_rows_free(rows);
}

const char* SystemLine()
{
    return FLAGS_system.empty() ? nullptr : FLAGS_system.c_str();
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
