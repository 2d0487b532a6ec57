// How a run ends when it cannot go on: one line on stderr naming what went
// wrong and what to try, our segments unlinked, exit 2 for a usage error and
// 1 for a failed call, a failed check or a dead peer process.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench_common.h"
#include "bench_internal.h"

namespace shmb {

namespace internal {

void UsageError(const std::string& message)
{
    shmb_progress_clear(&g_run.progress);
    std::fprintf(stderr, "%s: %s\n", g_run.program.c_str(), message.c_str());
    shmb_segment_unlink_all();
    std::exit(2);
}

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

}  // namespace internal

using internal::g_run;

void FlagError(const char* flag, const std::string& value, const std::string& allowed)
{
    internal::UsageError("invalid --" + std::string(flag) + "=" + value + ": " + allowed);
}

void Fail(int ret, const char* what)
{
    shmb_progress_clear(&g_run.progress);
    const shmb_error_t* e = shmb_error_last();
    int err = e->call ? e->err : -ret;
    std::string msg = g_run.program + ": ";
    if (e->call) {
        msg += std::string(e->call) + "(" + internal::Printable(e->object) + ") failed: " + std::strerror(err);
    } else {
        msg += std::string(what) + " failed: " + std::strerror(err);
    }
    char hint[1024];
    if (shmb_error_hint_for(e->call, err, e->call ? e->object : nullptr, FLAGS_shm_prefix.c_str(), hint,
                            sizeof(hint)) > 0)
        msg += "; " + std::string(hint);
    std::fprintf(stderr, "%s\n", msg.c_str());
    shmb_segment_unlink_all();
    std::exit(1);
}

void ExitIfPeerDied(int ret, const shmb_error_t& err)
{
    if (ret != -EPIPE || !err.call || std::strcmp(err.call, "peer process") != 0)
        return;
    shmb_segment_unlink_all();
    if (err.err == ENOSPC)  // its fault line said why: one line, not two
        std::exit(1);
    std::fprintf(stderr, "%s: the peer process died: %s; nothing is left behind\n", g_run.program.c_str(),
                 err.object);
    std::exit(1);
}

void FailRun(int ret, shmb_peer_t* peer, const char* why, const char* check, const char* what)
{
    shmb_progress_clear(&g_run.progress);
    const shmb_error_t saved = *shmb_error_last();
    if (peer)
        shmb_peer_stop(peer);
    ExitIfPeerDied(ret, saved);
    shmb_error_clear();
    if (saved.call)
        shmb_error_record(saved.call, saved.err, saved.object);
    if (ret == -EPROTO && why[0]) {
        shmb_segment_unlink_all();
        std::fprintf(stderr, "%s: %s, no number reported: %s\n", g_run.program.c_str(), check, why);
        std::exit(1);
    }
    Fail(ret, what);
}

shmb_peer_t* StartPeer(int (*start)(shmb_peer_t*, const char*), shmb_peer_t* peer)
{
    int ret = start(peer, FLAGS_shm_prefix.c_str());
    if (ret < 0)
        Fail(ret, "starting the peer process");
    return peer;
}

void RunRepetitions(shmb_peer_t* peer, const char* check, const char* what,
                    const std::function<int(int rep, char* why, size_t cap)>& run)
{
    for (int rep = 0; rep < FLAGS_repetitions; rep++) {
        shmb_progress_outer(Progress(), static_cast<uint64_t>(rep), static_cast<uint64_t>(FLAGS_repetitions));
        char why[256] = "";
        int ret = run(rep, why, sizeof(why));
        if (ret < 0)
            FailRun(ret, peer, why, check, what);
    }
    shmb_progress_clear(Progress());
    int ret = peer ? shmb_peer_stop(peer) : 0;
    if (ret < 0)
        FailRun(ret, nullptr, "", check, what);
}

}  // namespace shmb
