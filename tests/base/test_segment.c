#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "helpers.h"

#include "shmbench/error.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_test_segment_"

/* ---- hostile seams: this executable's getrandom and shm_open stand in for glibc's, to choose the next
 * names' random part and raise a signal inside shm_open. */

static uint64_t forced_random[32]; /* values getrandom returns, in order */
static int forced_count, forced_next;
static int raise_in_shm_open;      /* signal to raise in the next shm_open, 0: none */
static int shm_open_calls;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    if (forced_next < forced_count && len == sizeof(uint64_t)) {
        int i = forced_next < forced_count - 1 ? forced_next++ : forced_next;
        memcpy(buf, &forced_random[i], len);
        return (ssize_t)len;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

int shm_open(const char *name, int oflag, mode_t mode)
{
    char path[512];
    shm_open_calls++;
    if (raise_in_shm_open) {
        int sig = raise_in_shm_open;
        raise_in_shm_open = 0;
        raise(sig);
    }
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    return open(path, oflag | O_NOFOLLOW | O_CLOEXEC, mode);
}

/* sigaction fails with refused_errno for the signals in refused (as valgrind's EINVAL), else the next. */
static sigset_t refused;
static int refused_errno;

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static int (*next)(int, const struct sigaction *, struct sigaction *);
    if (refused_errno && sigismember(&refused, sig) == 1) {
        errno = refused_errno;
        return -1;
    }
    if (!next)
        *(void **)&next = dlsym(RTLD_NEXT, "sigaction");
    return next(sig, act, old);
}

static void force_random(const uint64_t *values, int n)
{
    memcpy(forced_random, values, sizeof(*values) * (size_t)n);
    forced_count = n;
    forced_next = 0;
}

static void test_prefix_rules(void **state)
{
    assert_int_equal(shmb_segment_check_prefix("/mooncake_bench_"), 0);
    assert_int_equal(shmb_segment_check_prefix("mooncake"), -EINVAL);
    assert_int_equal(shmb_segment_check_prefix("/a/b"), -EINVAL);
    assert_int_equal(shmb_segment_check_prefix(""), -EINVAL);
    assert_int_equal(shmb_segment_check_prefix(NULL), -EINVAL);
    char longp[300];
    memset(longp, 'x', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    assert_int_equal(shmb_segment_check_prefix(longp), -ENAMETOOLONG);
}

static void test_names_are_unique_and_shaped(void **state)
{
    char a[SHMB_SEGMENT_NAME_MAX + 1], b[SHMB_SEGMENT_NAME_MAX + 1];
    assert_int_equal(shmb_segment_make_name(a, sizeof(a), PREFIX), 0);
    assert_int_equal(shmb_segment_make_name(b, sizeof(b), PREFIX), 0);
    assert_string_not_equal(a, b);
    char expect[64];
    snprintf(expect, sizeof(expect), "%s%ld_", PREFIX, (long)getpid());
    assert_memory_equal(a, expect, strlen(expect));
    /* <prefix><pid>_<16 hex>_<n>, fresh randomness in each name */
    const char *rest = a + strlen(expect);
    assert_true(strlen(rest) >= 18 && rest[16] == '_');
    assert_memory_not_equal(rest, b + strlen(expect), 16);
    char tiny[8];
    assert_int_equal(shmb_segment_make_name(tiny, sizeof(tiny), PREFIX), -ENAMETOOLONG);
}

static void test_create_map_destroy(void **state)
{
    shmb_segment_t seg;
    uint64_t t_open = 0, t_trunc = 0, t_map = 0, t_destroy = 0;
    size_t before = shmb_segment_registered();
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 8192, &t_open, &t_trunc), 0);
    assert_true(t_open > 0 && t_trunc > 0);
    assert_true(shmb_test_shm_exists(seg.name));
    assert_int_equal(shmb_segment_registered(), before + 1);

    struct stat st;
    assert_int_equal(fstat(seg.fd, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 8192);

    assert_int_equal(shmb_segment_map(&seg, &t_map), 0);
    assert_non_null(seg.addr);
    shmb_segment_touch(seg.addr, 8192);
    assert_int_equal(((unsigned char *)seg.addr)[4096], 1);

    char name[sizeof(seg.name)];
    strcpy(name, seg.name);
    assert_int_equal(shmb_segment_destroy(&seg, &t_destroy), 0);
    assert_true(t_destroy > 0);
    assert_false(shmb_test_shm_exists(name));
    assert_int_equal(seg.fd, -1);
    assert_null(seg.addr);
    assert_int_equal(shmb_segment_registered(), before);
}

static void copy_bytes(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/* A segment holds no page until the guarded copy's first write, then all; a reserved one all before. */
static void test_first_write_copy_allocates(void **state)
{
    const size_t size = 64 * 1024;
    unsigned char *src = malloc(size);
    assert_non_null(src);
    for (size_t i = 0; i < size; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    shmb_segment_t seg;
    uint64_t bytes = 1;
    assert_int_equal(shmb_segment_create(&seg, PREFIX, size, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(&seg, NULL), 0);
    assert_int_equal(shmb_segment_allocated(&seg, &bytes), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(shmb_segment_first_write_copy(seg.addr, src, size, copy_bytes), 0);
    assert_int_equal(shmb_segment_allocated(&seg, &bytes), 0);
    assert_true(bytes >= size);
    assert_memory_equal(seg.addr, src, size);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);

    assert_int_equal(shmb_segment_create(&seg, PREFIX, size, NULL, NULL), 0);
    assert_int_equal(shmb_segment_reserve(&seg), 0);
    assert_int_equal(shmb_segment_allocated(&seg, &bytes), 0);
    assert_true(bytes >= size);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);

    seg.fd = -1; /* closed: fstat fails, recorded */
    shmb_error_clear();
    assert_int_equal(shmb_segment_allocated(&seg, &bytes), -EBADF);
    assert_string_equal(shmb_error_last()->call, "fstat");
    free(src);
}

static void test_exclusive_create(void **state)
{
    /* A name that exists already is never opened: O_EXCL. */
    shmb_segment_t seg;
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL), 0);
    int fd = shm_open(seg.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    assert_int_equal(fd, -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
}

static void test_map_failure_is_recorded(void **state)
{
    shmb_segment_t seg;
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 0, NULL, NULL), 0);
    shmb_error_clear();
    assert_int_equal(shmb_segment_map(&seg, NULL), -EINVAL); /* mmap of 0 bytes */
    assert_string_equal(shmb_error_last()->call, "mmap");
    assert_string_equal(shmb_error_last()->object, seg.name);
    char name[sizeof(seg.name)];
    strcpy(name, seg.name);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_false(shmb_test_shm_exists(name));
}

static void test_release_keeps_the_name(void **state)
{
    shmb_segment_t seg;
    size_t before = shmb_segment_registered();
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(&seg, NULL), 0);
    assert_int_equal(shmb_segment_release(&seg), 0);
    assert_true(shmb_test_shm_exists(seg.name));
    assert_int_equal(shmb_segment_registered(), before);
    assert_int_equal(shm_unlink(seg.name), 0);
}

static void test_unlink_all(void **state)
{
    shmb_segment_t a, b;
    assert_int_equal(shmb_segment_create(&a, PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_create(&b, PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_unlink_all(), 2);
    assert_false(shmb_test_shm_exists(a.name));
    assert_false(shmb_test_shm_exists(b.name));
    assert_int_equal(shmb_segment_registered(), 0);
    close(a.fd);
    close(b.fd);
}

/* Adopted names (with or without '/') are unlinked, disowned ones left; bad names refused; SIGTERM cleans. */
static void test_adopt_and_disown(void **state)
{
    char name[2][64];
    for (int i = 0; i < 2; i++) {
        snprintf(name[i], sizeof(name[i]), "%sadopt_%d_%d", PREFIX, (int)getpid(), i);
        const int fd = shm_open(name[i], O_CREAT | O_EXCL | O_RDWR, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    const int kept = shmb_segment_adopt(name[0] + 1); /* as TENT names them: no '/' */
    const int gone = shmb_segment_adopt(name[1]);
    assert_true(kept >= 0 && gone >= 0 && kept != gone);
    assert_int_equal(shmb_segment_registered(), 2);
    shmb_segment_disown(kept);
    shmb_segment_disown(-1);
    assert_int_equal(shmb_segment_registered(), 1);
    assert_int_equal(shmb_segment_unlink_all(), 1);
    assert_true(shmb_test_shm_exists(name[0]));
    assert_false(shmb_test_shm_exists(name[1]));
    assert_int_equal(shm_unlink(name[0]), 0);
    char lengthy[SHMB_SEGMENT_NAME_MAX + 2];
    memset(lengthy, 'x', sizeof(lengthy) - 1);
    lengthy[sizeof(lengthy) - 1] = '\0';
    assert_int_equal(shmb_segment_adopt(lengthy), -ENAMETOOLONG);
    assert_int_equal(shmb_segment_adopt(name[1]), -ENOENT);
    assert_int_equal(shmb_segment_registered(), 0);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (shmb_segment_install_signal_cleanup() != 0)
            _exit(2);
        shmb_segment_hold_signals(); /* a name made and adopted with the signals held, as TENT's */
        const int fd = shm_open(name[0], O_CREAT | O_EXCL | O_RDWR, 0600);
        const int slot = fd >= 0 ? shmb_segment_adopt(name[0]) : -1;
        shmb_segment_release_signals();
        if (slot < 0)
            _exit(3);
        for (;;)
            pause();
    }
    for (int i = 0; i < 5000 && !shmb_test_shm_exists(name[0]); i++)
        usleep(1000);
    assert_int_equal(kill(pid, SIGTERM), 0);
    shmb_test_reap_signaled(pid, SIGTERM);
    assert_false(shmb_test_shm_exists(name[0]));
}

/* Far more live names than the old 64 slots, across registry chunks; freed slots are reused. */
static void test_registry_holds_many(void **state)
{
    enum { N = 3000 };
    assert_true(SHMB_SEGMENT_REGISTRY_SLOTS >= 100000);
    static shmb_segment_t segs[N];
    size_t before = shmb_segment_registered();
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            assert_int_equal(shmb_segment_create(&segs[i], PREFIX, 0, NULL, NULL), 0);
            assert_int_equal(shmb_segment_close(&segs[i], NULL), 0);
        }
        assert_int_equal(shmb_segment_registered(), before + N);
        for (int i = 0; i < N; i++) /* every other one, then the rest */
            assert_int_equal(shmb_segment_destroy(&segs[(i * 2) % N + (i * 2 >= N)], NULL), 0);
        assert_int_equal(shmb_segment_registered(), before);
    }
}

/* A signal unlinks what the process created, then kills it as it would. */
static void check_signal_cleans_up(int sig)
{
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        shmb_segment_t seg;
        if (shmb_segment_install_signal_cleanup() != 0 ||
            shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL) != 0)
            _exit(3);
        if (write(pipefd[1], seg.name, sizeof(seg.name)) < 0)
            _exit(4);
        pause();
        _exit(5);
    }
    char name[SHMB_SEGMENT_NAME_MAX + 1];
    assert_int_equal(read(pipefd[0], name, sizeof(name)), sizeof(name));
    assert_true(shmb_test_shm_exists(name));
    assert_int_equal(kill(pid, sig), 0);
    shmb_test_reap_signaled(pid, sig);
    assert_false(shmb_test_shm_exists(name));
    close(pipefd[0]);
    close(pipefd[1]);
}

/* A receiver opens another process's segment by name, its size checked. */
static void test_open_existing(void **state)
{
    shmb_segment_t seg;
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 8192, NULL, NULL), 0);
    size_t registered = shmb_segment_registered();
    int fd = shmb_segment_open_existing(seg.name, 8192);
    assert_true(fd >= 0 && fd != seg.fd);
    assert_int_equal(shmb_segment_registered(), registered); /* nothing registered */
    close(fd);
    int probe = dup(0); /* the lowest free descriptor: a leak would take it */
    close(probe);
    assert_int_equal(shmb_segment_open_existing(seg.name, 4096), -EPROTO);
    assert_string_equal(shmb_error_last()->call, "fstat size check");
    assert_non_null(strstr(shmb_error_last()->object, ": 8192 bytes, expected 4096"));
    assert_int_equal(dup(0), probe);
    close(probe);
    char name[sizeof(seg.name)];
    snprintf(name, sizeof(name), "%s", seg.name);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_int_equal(shmb_segment_open_existing(name, 8192), -ENOENT); /* unlinked */
    assert_string_equal(shmb_error_last()->call, "shm_open");
}

/* Every signal whose default action ends the process cleans up. */
static void test_fatal_signals_clean_up(void **state)
{
    const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE,
                           SIGVTALRM, SIGPROF, SIGXCPU, SIGBUS, SIGSEGV, SIGABRT, SIGSYS,
                           SIGTRAP, SIGPWR, SIGIO, SIGSTKFLT, SIGRTMIN, SIGRTMAX};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
        check_signal_cleans_up(signals[i]);
}

static void *create_forever(void *arg)
{
    (void)arg;
    for (;;) {
        shmb_segment_t seg;
        if (shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL) == 0)
            shmb_segment_destroy(&seg, NULL);
    }
    return NULL;
}

/* A signal while threads create segments: a name created but not yet registered is unlinked too. */
static void test_signal_while_threads_create(void **state)
{
    for (int round = 0; round < 30; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (shmb_segment_install_signal_cleanup() != 0)
                _exit(3);
            pthread_t t[2];
            for (int i = 0; i < 2; i++)
                if (pthread_create(&t[i], NULL, create_forever, NULL) != 0)
                    _exit(4);
            for (;;)
                pause();
        }
        struct timespec ts = {0, 2000000 + 300000 * round};
        nanosleep(&ts, NULL);
        assert_int_equal(kill(pid, SIGTERM), 0);
        shmb_test_reap_signaled(pid, SIGTERM);
        int left = shmb_test_names_of(PREFIX, pid, 0);
        if (left) {
            char cmd[128];
            snprintf(cmd, sizeof(cmd), "rm -f /dev/shm/%s%ld_*", &PREFIX[1], (long)pid);
            assert_int_equal(system(cmd), 0);
            fail_msg("round %d: %d segments left by pid %ld", round, left, (long)pid);
        }
    }
}

/* Runs fn in a child; returns its exit status, or -1 when it did not exit. */
static int in_child(int (*fn)(void))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fn());
    int status = shmb_test_reap(pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int handler_is_ours(int sig)
{
    struct sigaction sa;
    return sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction != NULL;
}

/* A signal refused with EINVAL (valgrind's own) is skipped silently; any other refusal fails the install. */
static int refused_run(void)
{
    sigemptyset(&refused);
    sigaddset(&refused, SIGRTMAX);
    sigaddset(&refused, SIGUSR2);
    refused_errno = EINVAL;
    shmb_error_clear();
    if (shmb_segment_install_signal_cleanup() != 0)
        return 10;
    if (shmb_error_last()->call || !handler_is_ours(SIGTERM) || !handler_is_ours(SIGRTMAX - 1) ||
        !handler_is_ours(SIGUSR1))
        return 11;
    refused_errno = EFAULT;
    if (shmb_segment_install_signal_cleanup() != -EFAULT || strcmp(shmb_error_last()->call, "sigaction") != 0)
        return 12;
    return 0;
}

static void test_refused_signals_are_skipped(void **state)
{
    assert_int_equal(in_child(refused_run), 0);
}

/* A signal ignored at exec (nohup, `trap '' INT`) stays ignored: it neither
 * ends the run nor unlinks its segments. Faults are caught all the same. */
static int inherited_ignored_run(void)
{
    const int ignored[] = {SIGINT, SIGHUP, SIGRTMIN + 2};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        signal(ignored[i], SIG_IGN);
    signal(SIGBUS, SIG_IGN);
    if (shmb_segment_install_signal_cleanup() != 0)
        return 10;
    shmb_segment_t seg;
    if (shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL) != 0)
        return 11;
    int ret = 0;
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
        struct sigaction sa;
        if (sigaction(ignored[i], NULL, &sa) != 0 || sa.sa_handler != SIG_IGN)
            ret = 12;
        raise(ignored[i]);
    }
    if (!shmb_test_shm_exists(seg.name))
        ret = 13;
    if (!handler_is_ours(SIGBUS) || !handler_is_ours(SIGTERM))
        ret = 14;
    shmb_segment_destroy(&seg, NULL);
    return ret;
}

static void test_inherited_ignored_signals_stay_ignored(void **state)
{
    assert_int_equal(in_child(inherited_ignored_run), 0);
}

/* As PID 1 of a PID namespace the re-raised default action is discarded: SIGTERM must still end it,
 * with the status a shell gives a death by that signal. */
struct pid1_area {
    atomic_int pid;                       /* init's pid, seen from here */
    atomic_int ready;
    char name[SHMB_SEGMENT_NAME_MAX + 1]; /* its segment */
};

static int pid1_init(struct pid1_area *a)
{
    shmb_segment_t seg;
    if (getpid() != 1 || shmb_segment_install_signal_cleanup() != 0 ||
        shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL) != 0)
        return 20;
    snprintf(a->name, sizeof(a->name), "%s", seg.name);
    atomic_store(&a->ready, 1);
    for (;;)
        pause();
}

/* Forks init in a new PID namespace and waits 5 s at most: init's exit status, 77 without a namespace,
 * 98 when a signal killed it, 99 when it hung. */
static int pid1_middle(struct pid1_area *a)
{
    if (unshare(CLONE_NEWPID) != 0)
        return 77;
    pid_t init = fork();
    if (init < 0)
        return 21;
    if (init == 0)
        _exit(pid1_init(a));
    atomic_store(&a->pid, (int)init);
    for (int i = 0; i < 5000; i++) {
        int status;
        if (waitpid(init, &status, WNOHANG) == init)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 98;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    kill(init, SIGKILL);
    waitpid(init, NULL, 0);
    return 99;
}

static void test_sigterm_ends_pid_1(void **state)
{
    struct pid1_area *a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(a != MAP_FAILED);
    memset(a, 0, sizeof(*a));
    pid_t middle = fork();
    assert_true(middle >= 0);
    if (middle == 0)
        _exit(pid1_middle(a));
    int status = 0;
    while (!(atomic_load(&a->ready) && atomic_load(&a->pid) > 0) && waitpid(middle, &status, WNOHANG) == 0)
        sched_yield();
    if (!atomic_load(&a->ready) || atomic_load(&a->pid) <= 0) { /* never kill(0): our process group */
        munmap(a, sizeof(*a));
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
            shmb_test_skip("no PID namespace");
        fail_msg("init did not start: status %d", status);
    }
    assert_true(shmb_test_shm_exists(a->name));
    assert_int_equal(kill(atomic_load(&a->pid), SIGTERM), 0);
    assert_int_equal(waitpid(middle, &status, 0), middle);
    int left = shmb_test_shm_exists(a->name);
    if (left) {
        shm_unlink(a->name);
        fail_msg("init's segment %s left", a->name);
    }
    munmap(a, sizeof(*a));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 128 + SIGTERM);
}

/* A forked child has a registry of its own and, its parent gone, unlinks exactly the parent's names
 * (also registered after the fork) that still name the files it created. */
static int inherited_child(int go)
{
    char byte;
    if (read(go, &byte, 1) != 1)
        return 30;
    if (shmb_segment_registered() != 0 || shmb_segment_unlink_all() != 0)
        return 31;
    return (int)shmb_segment_unlink_inherited();
}

static void chmod_name(const char *name, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_unlink_inherited(void **state)
{
    enum { KEPT, REPLACED, CHMODDED, RELEASED, AFTER_FORK, N };
    shmb_segment_t seg[N];
    for (int i = 0; i < AFTER_FORK; i++)
        assert_int_equal(shmb_segment_create(&seg[i], PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_release(&seg[RELEASED]), 0);
    assert_int_equal(shm_unlink(seg[REPLACED].name), 0);
    assert_int_equal(shmb_test_shm_squat(seg[REPLACED].name), 0);
    chmod_name(seg[CHMODDED].name, 0640);
    char decoy[SHMB_SEGMENT_NAME_MAX + 1];
    snprintf(decoy, sizeof(decoy), "%s%ld_decoy", PREFIX, (long)getpid());
    assert_int_equal(shmb_test_shm_squat(decoy), 0);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(inherited_child(go[0]));
    assert_int_equal(shmb_segment_create(&seg[AFTER_FORK], PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(write(go[1], "g", 1), 1);
    int status = shmb_test_reap(pid);
    close(go[0]);
    close(go[1]);
    const int kept_gone = !shmb_test_shm_exists(seg[KEPT].name);
    const int after_gone = !shmb_test_shm_exists(seg[AFTER_FORK].name);
    const int others = shmb_test_shm_exists(seg[REPLACED].name) + shmb_test_shm_exists(seg[CHMODDED].name) +
                       shmb_test_shm_exists(seg[RELEASED].name) + shmb_test_shm_exists(decoy);
    shm_unlink(decoy);
    for (int i = 0; i < N; i++) {
        shm_unlink(seg[i].name);
        if (i != RELEASED)
            shmb_segment_release(&seg[i]);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 2);
    assert_true(kept_gone && after_gone);
    assert_int_equal(others, 4);
    assert_int_equal(shmb_segment_unlink_inherited(), 0); /* this process has no parent's registry */
}

/* SIGXFSZ stays ignored (a too-large segment fails with EFBIG); what is not fatal by default keeps its default. */
static void test_signal_dispositions(void **state)
{
    assert_int_equal(shmb_segment_install_signal_cleanup(), 0);
    const struct {
        int sig;
        int caught; /* 1: our handler, 0: SIG_IGN, -1: SIG_DFL */
    } cases[] = {
        {SIGXFSZ, 0}, {SIGCHLD, -1}, {SIGWINCH, -1}, {SIGURG, -1}, {SIGCONT, -1},
        {SIGTSTP, -1}, {SIGUSR1, 1}, {SIGPIPE, 1}, {SIGRTMIN + 3, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sigaction sa;
        assert_int_equal(sigaction(cases[i].sig, NULL, &sa), 0);
        int got = sa.sa_handler == SIG_IGN ? 0 : sa.sa_handler == SIG_DFL ? -1 : 1;
        if (got != cases[i].caught)
            fail_msg("signal %d: disposition %d, expected %d", cases[i].sig, got, cases[i].caught);
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        signal(cases[i].sig, SIG_DFL);
}

/* The name the k-th next create tries with random part r (one name is spent to learn the counter). */
static void future_name(char *out, size_t cap, uint64_t r, int k, unsigned long long *counter)
{
    char probe[SHMB_SEGMENT_NAME_MAX + 1];
    if (*counter == 0) {
        assert_int_equal(shmb_segment_make_name(probe, sizeof(probe), PREFIX), 0);
        *counter = strtoull(strrchr(probe, '_') + 1, NULL, 10);
    }
    snprintf(out, cap, "%s%ld_%016llx_%llu", PREFIX, (long)getpid(), (unsigned long long)r,
             *counter + (unsigned long long)k);
}

/* Squatted names: bounded retries with fresh names, theirs never unlinked, opened or registered, signal or not. */
static void test_squatters(void **state)
{
    const uint64_t A = 0xa11ce, B = 0xb0b;
    const struct {
        const char *what;
        uint64_t randoms[2];
        int nrandoms;
        int squatted;  /* names squatted, from the first one tried */
        int sig;       /* raised inside the first shm_open, 0: none */
        int want;      /* create's result (when no signal) */
        int opens;     /* shm_open calls expected */
    } cases[] = {
        {"first name squatted", {A, B}, 2, 1, 0, 0, 2},
        {"every name squatted", {A}, 1, 16, 0, -EEXIST, 16},
        {"signal in shm_open, name squatted", {A, B}, 2, 1, SIGTERM, 0, 2},
        {"signal in shm_open, fresh name", {B}, 1, 0, SIGTERM, 0, 1},
        {"USR1 in shm_open, name squatted", {A, B}, 2, 1, SIGUSR1, 0, 2},
    };
    struct names {
        char theirs[16][SHMB_SEGMENT_NAME_MAX + 1], ours[SHMB_SEGMENT_NAME_MAX + 1];
    } *names = mmap(NULL, sizeof(*names), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(names != MAP_FAILED);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(names, 0, sizeof(*names));
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* The squatter knows the pid and the counter; it is handed the random parts (as if it could guess them). */
            unsigned long long counter = 0;
            for (int k = 0; k < cases[i].squatted; k++) {
                future_name(names->theirs[k], sizeof(names->theirs[k]), A, k + 1, &counter);
                if (shmb_test_shm_squat(names->theirs[k]) != 0)
                    _exit(3);
            }
            future_name(names->ours, sizeof(names->ours), B, cases[i].squatted + 1, &counter);
            if (shmb_segment_install_signal_cleanup() != 0)
                _exit(3);
            force_random(cases[i].randoms, cases[i].nrandoms);
            shm_open_calls = 0;
            raise_in_shm_open = cases[i].sig;
            shmb_segment_t seg;
            int ret = shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL);
            if (ret != cases[i].want)
                _exit(10);
            if (shm_open_calls != cases[i].opens)
                _exit(11);
            if (ret == 0 && (strcmp(seg.name, names->ours) != 0 || shmb_segment_registered() != 1))
                _exit(12);
            if (ret < 0 && (seg.name[0] != '\0' || shmb_segment_registered() != 0))
                _exit(13);
            if (ret == 0 && shmb_segment_destroy(&seg, NULL) != 0)
                _exit(14);
            _exit(0);
        }
        int status = shmb_test_reap(pid);
        int ok = cases[i].sig ? WIFSIGNALED(status) && WTERMSIG(status) == cases[i].sig
                              : WIFEXITED(status) && WEXITSTATUS(status) == 0;
        int theirs_kept = 1;
        for (int k = 0; k < cases[i].squatted; k++) {
            theirs_kept &= shmb_test_shm_exists(names->theirs[k]);
            shm_unlink(names->theirs[k]);
        }
        int ours_left = names->ours[0] && shmb_test_shm_exists(names->ours);
        if (names->ours[0])
            shm_unlink(names->ours);
        if (!ok)
            fail_msg("%s: status %#x", cases[i].what, status);
        if (!theirs_kept)
            fail_msg("%s: a squatter's name was unlinked", cases[i].what);
        if (ours_left)
            fail_msg("%s: our %s was left behind", cases[i].what, names->ours);
    }
    munmap(names, sizeof(*names));
}

/* ---- a full /dev/shm: a tmpfs of a few pages over it, in a private mount
 * namespace of a child process (skipped where that is not allowed) ---- */

enum fw_mode { FW_ONE, FW_AGAIN, FW_THREADS, FW_UNARMED, FW_COPY, FW_FAULT_LINE };

typedef struct fw_case {
    const char *what;
    enum fw_mode mode;
    size_t tmpfs_kb;  /* size of the tmpfs over /dev/shm */
    size_t fill_kb;   /* written by "another process" first */
    size_t seg_kb;    /* each segment */
    int want;         /* first_write's result (FW_ONE, FW_AGAIN) */
} fw_case_t;

static size_t shm_files(void)
{
    size_t n = 0;
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int same_mask(const sigset_t *a)
{
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    for (int sig = 1; sig <= SIGRTMAX; sig++)
        if (sigismember(a, sig) != sigismember(&now, sig))
            return 0;
    return 1;
}

/* One guarded first write (touch or copy) into a fresh segment: want as result, the caller's mask kept,
 * the error recorded, the data there when it fit, then nothing left. */
static int fw_one(size_t seg_kb, int want, int copy)
{
    sigset_t before;
    sigemptyset(&before);
    sigaddset(&before, SIGUSR2);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    const size_t files = shm_files();
    shmb_segment_t seg;
    unsigned char *src = malloc(seg_kb * 1024);
    if (!src || shmb_segment_create(&seg, PREFIX, seg_kb * 1024, NULL, NULL) != 0 ||
        shmb_segment_map(&seg, NULL) != 0)
        return 20;
    memset(src, 0x5a, seg_kb * 1024);
    shmb_error_clear();
    int ret = copy ? shmb_segment_first_write_copy(seg.addr, src, seg.size, copy_bytes)
                   : shmb_segment_first_write(seg.addr, seg.size);
    if (ret != want)
        return 21;
    if (!same_mask(&before))
        return 22;
    if (ret < 0 && (!shmb_error_last()->call || strcmp(shmb_error_last()->call, "first write") != 0))
        return 23;
    const unsigned char *dst = seg.addr;
    if (ret == 0 && (copy ? memcmp(dst, src, seg.size) != 0 : dst[seg.size - 4096] != 1))
        return 24;
    free(src);
    if (shmb_segment_registered() != 1 || shmb_segment_destroy(&seg, NULL) != 0)
        return 25;
    return shm_files() == files ? 0 : 26;
}

static size_t fw_thread_kb;
static pthread_barrier_t fw_barrier; /* segments stay until every write is over */

static void *fw_thread(void *arg)
{
    (void)arg;
    shmb_segment_t seg;
    intptr_t ret = 30;
    int made = shmb_segment_create(&seg, PREFIX, fw_thread_kb * 1024, NULL, NULL) == 0 &&
               shmb_segment_map(&seg, NULL) == 0;
    if (made)
        ret = shmb_segment_first_write(seg.addr, seg.size);
    pthread_barrier_wait(&fw_barrier);
    if (made)
        shmb_segment_destroy(&seg, NULL);
    return (void *)ret;
}

static int fw_run(const fw_case_t *c)
{
    if (shmb_segment_install_signal_cleanup() != 0)
        return 10;
    if (c->fill_kb) {
        int fd = open("/dev/shm/filler", O_CREAT | O_RDWR, 0600);
        if (fd < 0 || posix_fallocate(fd, 0, (off_t)c->fill_kb * 1024) != 0)
            return 11;
        close(fd);
    }
    switch (c->mode) {
    case FW_ONE:
    case FW_COPY:
        return fw_one(c->seg_kb, c->want, c->mode == FW_COPY);
    case FW_AGAIN: /* the jump buffer re-arms: fail twice, then fit */
        for (int i = 0; i < 2; i++) {
            int r = fw_one(c->seg_kb, -ENOSPC, 0);
            if (r)
                return r;
        }
        unlink("/dev/shm/filler");
        return fw_one(c->seg_kb, 0, 0);
    case FW_THREADS: { /* four threads, room for two at most */
        pthread_t t[4];
        int nospace = 0, fits = 0;
        fw_thread_kb = c->seg_kb;
        pthread_barrier_init(&fw_barrier, NULL, 4);
        for (int i = 0; i < 4; i++)
            if (pthread_create(&t[i], NULL, fw_thread, NULL) != 0)
                return 12;
        for (int i = 0; i < 4; i++) {
            void *r;
            pthread_join(t[i], &r);
            nospace += (intptr_t)r == -ENOSPC;
            fits += (intptr_t)r == 0;
        }
        return nospace >= 2 && nospace + fits == 4 && shm_files() == 0 ? 0 : 13;
    }
    case FW_FAULT_LINE: { /* with a fault line: that line, exit 1, nothing left */
        int out[2];
        if (pipe(out) != 0)
            return 17;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(out[1], STDERR_FILENO);
            shmb_segment_t seg;
            if (shmb_segment_set_fault_line("test: /dev/shm is full") == 0 &&
                shmb_segment_create(&seg, PREFIX, c->seg_kb * 1024, NULL, NULL) == 0 &&
                shmb_segment_map(&seg, NULL) == 0)
                shmb_segment_touch(seg.addr, seg.size);
            _exit(0);
        }
        close(out[1]);
        char got[64] = "";
        ssize_t n = read(out[0], got, sizeof(got) - 1);
        close(out[0]);
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 1)
            return 18;
        unlink("/dev/shm/filler");
        return n > 0 && strcmp(got, "test: /dev/shm is full\n") == 0 && shm_files() == 0 ? 0 : 19;
    }
    case FW_UNARMED: { /* a plain touch still dies of SIGBUS, after cleaning up */
        pid_t pid = fork();
        if (pid == 0) {
            shmb_segment_t seg;
            if (shmb_segment_create(&seg, PREFIX, c->seg_kb * 1024, NULL, NULL) == 0 &&
                shmb_segment_map(&seg, NULL) == 0)
                shmb_segment_touch(seg.addr, seg.size);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS)
            return 14;
        unlink("/dev/shm/filler");
        return shm_files() == 0 ? 0 : 15;
    }
    }
    return 16;
}

static int fw_child(void *arg)
{
    return fw_run(arg);
}

static void test_first_write_in_full_shm(void **state)
{
    const fw_case_t cases[] = {
        {"fits", FW_ONE, 512, 0, 256, 0},
        {"full from the start", FW_ONE, 64, 0, 1024, -ENOSPC},
        {"filled by another file", FW_ONE, 512, 400, 256, -ENOSPC},
        {"twice full, then room", FW_AGAIN, 512, 400, 256, 0},
        {"four threads, room for two", FW_THREADS, 512, 0, 256, 0},
        {"unarmed touch dies of SIGBUS, cleaned up", FW_UNARMED, 64, 0, 1024, 0},
        {"unarmed touch with a fault line: the line, exit 1", FW_FAULT_LINE, 64, 0, 1024, 0},
        {"a guarded copy that fits", FW_COPY, 512, 0, 256, 0},
        {"a guarded copy into a full /dev/shm", FW_COPY, 64, 0, 1024, -ENOSPC},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        shmb_test_in_tmpfs(cases[i].tmpfs_kb, fw_child, (void *)&cases[i], cases[i].what);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_rules),
        cmocka_unit_test(test_names_are_unique_and_shaped),
        cmocka_unit_test(test_create_map_destroy),
        cmocka_unit_test(test_first_write_copy_allocates),
        cmocka_unit_test(test_exclusive_create),
        cmocka_unit_test(test_map_failure_is_recorded),
        cmocka_unit_test(test_release_keeps_the_name),
        cmocka_unit_test(test_unlink_all),
        cmocka_unit_test(test_adopt_and_disown),
        cmocka_unit_test(test_open_existing),
        cmocka_unit_test(test_registry_holds_many),
        cmocka_unit_test(test_fatal_signals_clean_up),
        cmocka_unit_test(test_signal_while_threads_create),
        cmocka_unit_test(test_signal_dispositions),
        cmocka_unit_test(test_refused_signals_are_skipped),
        cmocka_unit_test(test_inherited_ignored_signals_stay_ignored),
        cmocka_unit_test(test_sigterm_ends_pid_1),
        cmocka_unit_test(test_squatters),
        cmocka_unit_test(test_unlink_inherited),
        cmocka_unit_test(test_first_write_in_full_shm),
    };
    return shmb_test_shm_writable() ? shmb_test_run(tests, NULL, NULL) : 77;
}
