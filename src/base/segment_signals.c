/* segment_signals: the handler that unlinks the registered names on a fatal
 * signal (PID 1, inherited-ignored signals, fork), and the SIGBUS guard of
 * first writes. */
#include "shmbench/segment.h"

#include "segment_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* The first write armed on this thread: where to jump on SIGBUS, the range it
 * writes, and the signal mask to restore after the jump. */
typedef struct first_write {
    sigjmp_buf env;
    char *volatile lo, *volatile hi; /* [lo, hi), NULL when not armed */
    sigset_t mask;
} first_write_t;

static _Thread_local first_write_t armed;

/* What a SIGBUS outside a guarded first write says before exit 1 (see
 * shmb_segment_set_fault_line); empty: none, the signal kills. */
static char fault_line[SHMB_SEGMENT_FAULT_LINE_MAX + 1];
static size_t fault_line_len;

static void cleanup_and_reraise(int sig, siginfo_t *info, void *ctx)
{
    if (sig == SIGBUS && info && info->si_code > 0 && armed.lo && (char *)info->si_addr >= armed.lo &&
        (char *)info->si_addr < armed.hi) {
        armed.mask = ((ucontext_t *)ctx)->uc_sigmask;
        armed.lo = armed.hi = NULL;
        siglongjmp(armed.env, 1);
    }
    shmb_segment_unlink_dying();
    if (sig == SIGBUS && info && info->si_code == BUS_ADRERR && fault_line_len) {
        /* An unreserved page tmpfs could not give, written outside a guard
         * (an allocator's own headers): a full /dev/shm, said as such. */
        ssize_t w = write(STDERR_FILENO, fault_line, fault_line_len);
        (void)w;
        _exit(SHMB_SEGMENT_FAULT_EXIT);
    }
    signal(sig, SIG_DFL);
    /* The signal again to this thread, then unblocked: the default action,
     * now. System calls, not raise and pthread_sigmask, which a sanitizer's
     * runtime intercepts and may defer past the _exit below. */
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
    const unsigned long one = 1ul << (sig - 1);
    syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, sizeof(one));
    /* Still here: the default action was discarded, as it is for PID 1 (a
     * container's init) whatever sends the signal. End as a shell reports a
     * death by signal; returning would let the run go on without its
     * segments, or leave a creating thread in pause() for ever. */
    _exit(128 + sig);
}

/* Faults are delivered whatever their disposition (the kernel resets an
 * ignored one), and the first-write guard needs SIGBUS: these are caught even
 * when inherited ignored. */
static int is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

/* Installs sa for sig, unless sig was ignored when this process started
 * (nohup, `trap '' INT`: it stays ignored, as POSIX shells leave it) or the
 * system refuses the signal (EINVAL: valgrind reserves some real-time
 * signals; nothing to clean up after a signal that cannot come). */
static int install(int sig, const struct sigaction *sa)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) != 0)
        return errno == EINVAL ? 0 : shmb_error_record("sigaction", errno, NULL);
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN && !is_fault(sig))
        return 0;
    if (sigaction(sig, sa, NULL) != 0 && errno != EINVAL)
        return shmb_error_record("sigaction", errno, NULL);
    return 0;
}

int shmb_segment_install_signal_cleanup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = cleanup_and_reraise;
    sa.sa_flags = SA_SIGINFO;
    sa.sa_mask = *shmb_segment_fatal_signals();
    for (int sig = 1; sig <= SIGRTMAX; sig++) {
        int ret = sigismember(&sa.sa_mask, sig) == 1 ? install(sig, &sa) : 0;
        if (ret < 0)
            return ret;
    }
    /* A segment above the file-size limit is an error (EFBIG), not a death. */
    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
        return shmb_error_record("signal", errno, "SIGXFSZ");
    return 0;
}

int shmb_segment_set_fault_line(const char *line)
{
    size_t n = line ? strlen(line) : 0;
    if (n >= SHMB_SEGMENT_FAULT_LINE_MAX)
        return -ENAMETOOLONG;
    sigset_t old;
    shmb_segment_block_signals(&old);
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &bus, NULL); /* no half-written line for this thread's handler */
    if (n)
        memcpy(fault_line, line, n);
    fault_line[n] = '\n';
    fault_line_len = n ? n + 1 : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 0;
}


void shmb_segment_touch_stride(void *addr, const void *stride, size_t bytes)
{
    /* sysconf: no system call in glibc */
    const size_t page = stride ? (size_t)*(const uint64_t *)stride : (size_t)sysconf(_SC_PAGESIZE);
    volatile unsigned char *p = addr;
    for (size_t off = 0; off < bytes; off += page)
        p[off] = 1;
}

void shmb_segment_touch(void *addr, size_t bytes)
{
    shmb_segment_touch_stride(addr, NULL, bytes);
}

int shmb_segment_first_write_copy(void *dst, const void *src, size_t n, shmb_segment_write_fn fn)
{
    if (sigsetjmp(armed.env, 0) != 0) {
        /* The handler left the cleanup signals blocked: give back the mask
         * the write ran under. */
        pthread_sigmask(SIG_SETMASK, &armed.mask, NULL);
        return shmb_error_record("first write", ENOSPC, SHM_DIR);
    }
    armed.hi = (char *)dst + n;
    armed.lo = dst;
    atomic_signal_fence(memory_order_seq_cst);
    fn(dst, src, n);
    atomic_signal_fence(memory_order_seq_cst);
    armed.lo = armed.hi = NULL;
    return 0;
}

int shmb_segment_first_write(void *addr, size_t bytes)
{
    return shmb_segment_first_write_copy(addr, NULL, bytes, shmb_segment_touch_stride);
}
