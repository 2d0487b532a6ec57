/* The unit tests' shared helpers: see helpers.h. */
#include "helpers.h"

#include <dirent.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include "shmbench/backing.h"
#include "shmbench/segment.h"
#include "shmbench/sysinfo.h"

static char prefix[128];

const char *shmb_test_prefix_init(const char *base)
{
    snprintf(prefix, sizeof(prefix), "%s%ld_", base, (long)getpid());
    return prefix;
}

const char *shmb_test_prefix(void)
{
    return prefix;
}

int shmb_test_count_ours(char *name, size_t cap)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return -1;
    const size_t len = strlen(prefix) - 1; /* without the leading '/' */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (len == 0 || strncmp(e->d_name, prefix + 1, len) != 0)
            continue;
        n++;
        if (name)
            snprintf(name, cap, "/%s", e->d_name);
    }
    closedir(d);
    return n;
}

int shmb_test_remove_ours(void)
{
    char name[300];
    int n = 0;
    while (shmb_test_count_ours(name, sizeof(name)) > 0 && shm_unlink(name) == 0)
        n++;
    return n;
}

int shmb_test_shm_writable(void)
{
    if (access("/dev/shm", W_OK) == 0)
        return 1;
    fprintf(stderr, "skip: /dev/shm is not writable\n");
    return 0;
}

int shmb_test_remove_leftovers(void **state)
{
    (void)state;
    shmb_test_remove_ours();
    return 0;
}

void shmb_test_assert_clean(void)
{
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    assert_int_equal(shmb_segment_registered(), 0);
}

int shmb_test_shm_exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "/dev/shm/%s", name + (name[0] == '/'));
    return access(path, F_OK) == 0;
}

int shmb_test_shm_squat(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "/dev/shm/%s", name + (name[0] == '/'));
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    return fd >= 0 ? close(fd) : -1;
}

int shmb_test_names_of(const char *prefix, pid_t pid, int remove)
{
    char pattern[128];
    const int len = snprintf(pattern, sizeof(pattern), "%s%ld_", prefix + 1, (long)pid);
    DIR *d = opendir("/dev/shm");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, pattern, (size_t)len) == 0) {
            n++;
            if (remove)
                unlinkat(dirfd(d), e->d_name, 0);
        }
    closedir(d);
    return n;
}

void shmb_test_assert_no_child(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

void shmb_test_reap_ok(pid_t pid)
{
    const int status = shmb_test_reap(pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int shmb_test_reap(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

void shmb_test_reap_signaled(pid_t pid, int sig)
{
    const int status = shmb_test_reap(pid);
    assert_true(WIFSIGNALED(status));
    if (sig)
        assert_int_equal(WTERMSIG(status), sig);
}

pid_t shmb_test_fork_pair(shmb_channel_t *child_end, shmb_channel_t *parent_end)
{
    assert_int_equal(shmb_channel_pair(child_end, parent_end), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    shmb_channel_close(pid == 0 ? parent_end : child_end);
    return pid;
}

int shmb_test_open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

int64_t shmb_test_huge_free(void)
{
    int64_t total, free_pages;
    return shmb_sysinfo_hugepages(SHMB_BACKING_HUGE_2MB, &total, &free_pages) == 0 ? free_pages : -1;
}

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif

int64_t shmb_test_huge_held(pid_t pid)
{
    char path[64], line[512];
    long p = pid ? (long)pid : (long)getpid();
    snprintf(path, sizeof(path), "/proc/%ld/smaps", p);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int64_t held = 0;
    long long size_kb = 0, kb;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "Size: %lld kB", &kb) == 1)
            size_kb = kb;
        else if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " ht"))
            held += size_kb * 1024; /* a hugetlb mapping (its flags end its entry) */
    }
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%ld/fd", p);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char fd_path[sizeof(path) + 256];
        struct statfs fs;
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(fd_path, sizeof(fd_path), "%s/%s", path, e->d_name);
        /* the magic link leads to the file, a deleted memfd too */
        if (statfs(fd_path, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC && stat(fd_path, &st) == 0)
            held += st.st_size;
    }
    closedir(d);
    return held;
}

/* A number in a file of the 2 MiB pool; -1 when it cannot be read. */
static int64_t pool_value(const char *name)
{
    char path[128];
    long long v = -1;
    snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-2048kB/%s", name);
    FILE *f = fopen(path, "r");
    if (f && fscanf(f, "%lld", &v) != 1)
        v = -1;
    if (f)
        fclose(f);
    return v;
}

int64_t shmb_test_huge_beyond(void)
{
    int64_t nr = pool_value("nr_hugepages"), over = pool_value("nr_overcommit_hugepages");
    return nr < 0 || over < 0 ? -1 : nr + over + 1;
}

int shmb_test_pool_lock(int seconds)
{
    static int held = -1;
    if (held >= 0)
        return held;
    const char *parent = getenv("SHMB_HUGEPAGES_LOCKED");
    if (parent && *parent)
        return held = 1;
    const char *path = getenv("SHMB_HUGEPAGES_LOCK");
    if (!path || !*path)
        path = "/run/lock/shmbench-hugepages.lock";
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return held = 0;
    const struct timespec tenth = {0, 100000000L};
    for (int i = 0; i <= seconds * 10; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return held = 1; /* fd stays open: held until exit */
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        nanosleep(&tenth, NULL);
    }
    close(fd);
    return held = 0;
}

/* The child: 77 when the namespace or the mount cannot be made. */
static int tmpfs_child(size_t kb, int (*run)(void *), void *arg)
{
    char opts[64];
    snprintf(opts, sizeof(opts), "size=%zuk", kb);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", "/dev/shm", "tmpfs", 0, opts) != 0)
        return 77;
    return run(arg);
}

void shmb_test_in_tmpfs(size_t kb, int (*run)(void *arg), void *arg, const char *what)
{
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(tmpfs_child(kb, run, arg));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        shmb_test_skip("no private mount namespace for a tmpfs over /dev/shm");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("%s: %s %d", what, WIFEXITED(status) ? "step" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* The runner's record: the running group's cases (their own setups), the one running, each skip's reason. */
static const struct CMUnitTest *group;
static size_t next_case, cases_run;
static const char *running;
static char skipped[64][160];
static size_t skips;

void shmb_test_skipped_(const char *why)
{
    if (skips < sizeof(skipped) / sizeof(skipped[0]))
        snprintf(skipped[skips], sizeof(skipped[0]), "%s (%s)", running ? running : "?", why);
    skips++;
}

/* Every case's setup: cmocka runs the cases in their order, so the n-th
 * call is the n-th case's; notes its name, then runs its own setup. */
static int note_case(void **state)
{
    const struct CMUnitTest *t = &group[next_case++];
    running = t->name;
    cases_run++;
    return t->setup_func ? t->setup_func(state) : 0;
}

int shmb_test_group_(const char *name, const struct CMUnitTest *tests, size_t n,
                     CMFixtureFunction setup, CMFixtureFunction teardown)
{
    struct CMUnitTest *noted = calloc(n, sizeof(*noted));
    if (!noted) {
        fprintf(stderr, "%s: out of memory\n", name);
        return (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        noted[i] = tests[i];
        noted[i].setup_func = note_case;
    }
    group = tests;
    next_case = 0;
    int failed = _cmocka_run_group_tests(name, noted, n, setup, teardown);
    group = NULL;
    running = NULL;
    free(noted);
    return failed;
}

int shmb_test_exit(int failed)
{
    for (size_t i = 0; i < skips && i < sizeof(skipped) / sizeof(skipped[0]); i++)
        fprintf(stderr, "SKIPPED: %s\n", skipped[i]);
    if (failed == 0 && cases_run > 0 && skips == cases_run)
        return 77;
    return failed > 76 ? 76 : failed;
}

void shmb_test_pair_with(size_t *nsystems, int *systems, const char **names, shmb_system_t other)
{
    *nsystems = 3;
    systems[0] = systems[2] = SHMB_SYSTEM_MOONCAKE;
    systems[1] = other;
    names[0] = "mooncake";
    names[1] = shmb_system_name(other);
    names[2] = "mooncake_control";
}

void shmb_test_assert_row_name(const char *bench, const shmb_row_t *row, const char *want)
{
    char name[256];
    const shmb_report_t report = {.bench = bench};
    shmb_report_row_name(&report, row, name, sizeof(name));
    assert_string_equal(name, want);
}

const char shmb_test_sentinel[] = "untouched";

shmb_report_t shmb_test_fresh_report(void)
{
    shmb_report_t r;
    memset(&r, 0, sizeof(r));
    for (size_t i = 0; i < sizeof(r.notes) / sizeof(r.notes[0]); i++)
        r.notes[i] = shmb_test_sentinel;
    return r;
}

void shmb_test_assert_notes(const shmb_report_t *r, int ret, int n)
{
    assert_int_equal(ret, n);
    for (int i = 0; i < n; i++) {
        assert_non_null(r->notes[i]);
        assert_true(r->notes[i] != shmb_test_sentinel && r->notes[i][0] != '\0');
    }
    assert_null(r->notes[n]);
}

int shmb_test_has_note(const shmb_report_t *r, const char *start)
{
    for (size_t i = 0; i < SHMB_TEST_NOTES_CAP && r->notes[i]; i++)
        if (strncmp(r->notes[i], start, strlen(start)) == 0)
            return 1;
    return 0;
}

int shmb_test_note_says(const shmb_report_t *r, const char *part)
{
    for (size_t i = 0; i < SHMB_TEST_NOTES_CAP && r->notes[i]; i++)
        if (strstr(r->notes[i], part))
            return 1;
    return 0;
}

void shmb_test_assert_untouched(const shmb_report_t *r)
{
    for (size_t i = 0; i <= SHMB_TEST_NOTES_CAP; i++)
        assert_ptr_equal(r->notes[i], shmb_test_sentinel);
}

void shmb_test_expected_cpus(int threads, int cpu, char *out, size_t cap)
{
    int cpus[8];
    int pinned = shmb_sysinfo_plan_cpus(cpu, threads, cpus);
    assert_true(pinned >= 0);
    size_t len = (size_t)snprintf(out, cap, "%s", pinned ? "pinned to CPUs " : "not pinned (more threads than allowed CPUs)");
    for (int i = 0; pinned && i < threads; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%d", i ? "," : "", cpus[i]);
}

void shmb_test_notes_store_full(shmb_test_notes_fn compose, const void *cfg, int n)
{
    shmb_notes_t store = {0};
    shmb_report_t first = shmb_test_fresh_report();
    shmb_test_assert_notes(&first, compose(&first, &store, cfg), n);
    char kept[256];
    snprintf(kept, sizeof(kept), "%s", first.notes[0]);
    const size_t used = store.used;
    assert_true(used > 0);
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(compose(&r, &store, cfg), -EOVERFLOW);
    shmb_test_assert_untouched(&r);
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
    store.used = used;
    shmb_test_assert_notes(&r, compose(&r, &store, cfg), n);
    assert_string_equal(first.notes[0], kept);
}
