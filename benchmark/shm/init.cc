// Start-up, in the order that keeps every failure one clean line: standard
// descriptors first (so no file we open becomes stdout), the command line,
// logging and the signal handlers that unlink our segments, the common
// flags, --json_out, the machine's facts, and --cpu's pinning last.
#include <glog/logging.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "bench_common.h"
#include "bench_internal.h"

namespace shmb {
namespace internal {

RunFacts g_run;

}  // namespace internal

namespace {

__attribute__((noreturn)) void FailureFunction()
{
    shmb_segment_unlink_all();
    std::abort();
}

}  // namespace

void Init(int* argc, char*** argv, const char* usage, const char* main_file)
{
    using internal::g_run;
    internal::EnsureStandardFds();
    const char* slash = std::strrchr((*argv)[0], '/');
    g_run.program = slash ? slash + 1 : (*argv)[0];
    g_run.main_file = main_file;
    g_run.start_time = static_cast<int64_t>(std::time(nullptr));
    internal::ParseFlags(argc, argv, usage);

    FLAGS_logtostderr = true;
    google::InitGoogleLogging(g_run.program.c_str());
    google::InstallFailureFunction(&FailureFunction);
    int ret = shmb_segment_install_signal_cleanup();
    if (ret < 0)
        Fail(ret, "installing signal handlers");

    internal::CheckCommonFlags();
    char hint[512];  // a full /dev/shm under an allocator's own unguarded write: this line, exit 1
    shmb_error_hint("first write", ENOSPC, FLAGS_shm_prefix.c_str(), hint, sizeof(hint));
    shmb_segment_set_fault_line((g_run.program + ": a write into shared memory failed (SIGBUS): " +
                                 std::strerror(ENOSPC) + "; " + hint).c_str());
    if (!FLAGS_json_out.empty())
        internal::OpenJsonOut();
    internal::ReadMachine();
    if (FLAGS_cpu != -1)
        internal::PinToCpu(FLAGS_cpu);
    shmb_progress_start(&g_run.progress, isatty(STDERR_FILENO) ? stderr : nullptr, g_run.program.c_str());
}

shmb_progress_t* Progress()
{
    return &internal::g_run.progress;
}

}  // namespace shmb
