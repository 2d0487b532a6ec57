#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shmbench/error.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_test_segment_"

static int exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    return access(path, F_OK) == 0;
}

static int shm_writable(void **state)
{
    (void)state;
    return access("/dev/shm", W_OK) == 0 ? 0 : -1;
}

static void test_prefix_rules(void **state)
{
    (void)state;
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
    (void)state;
    char a[SHMB_SEGMENT_NAME_MAX + 1], b[SHMB_SEGMENT_NAME_MAX + 1];
    assert_int_equal(shmb_segment_make_name(a, sizeof(a), PREFIX), 0);
    assert_int_equal(shmb_segment_make_name(b, sizeof(b), PREFIX), 0);
    assert_string_not_equal(a, b);
    char expect[64];
    snprintf(expect, sizeof(expect), "%s%ld_", PREFIX, (long)getpid());
    assert_memory_equal(a, expect, strlen(expect));
    /* <prefix><pid>_<8 hex>_<n> */
    const char *rest = a + strlen(expect);
    assert_true(strlen(rest) >= 10 && rest[8] == '_');
    char tiny[8];
    assert_int_equal(shmb_segment_make_name(tiny, sizeof(tiny), PREFIX), -ENAMETOOLONG);
}

static void test_create_map_destroy(void **state)
{
    (void)state;
    shmb_segment_t seg;
    uint64_t t_open = 0, t_trunc = 0, t_map = 0, t_destroy = 0;
    size_t before = shmb_segment_registered();
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 8192, &t_open, &t_trunc), 0);
    assert_true(t_open > 0 && t_trunc > 0);
    assert_true(exists(seg.name));
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
    assert_false(exists(name));
    assert_int_equal(seg.fd, -1);
    assert_null(seg.addr);
    assert_int_equal(shmb_segment_registered(), before);
}

static void test_exclusive_create(void **state)
{
    (void)state;
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
    (void)state;
    shmb_segment_t seg;
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 0, NULL, NULL), 0);
    shmb_error_clear();
    assert_int_equal(shmb_segment_map(&seg, NULL), -EINVAL); /* mmap of 0 bytes */
    assert_string_equal(shmb_error_last()->call, "mmap");
    assert_string_equal(shmb_error_last()->object, seg.name);
    char name[sizeof(seg.name)];
    strcpy(name, seg.name);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_false(exists(name));
}

static void test_release_keeps_the_name(void **state)
{
    (void)state;
    shmb_segment_t seg;
    size_t before = shmb_segment_registered();
    assert_int_equal(shmb_segment_create(&seg, PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(&seg, NULL), 0);
    assert_int_equal(shmb_segment_release(&seg), 0);
    assert_true(exists(seg.name));
    assert_int_equal(shmb_segment_registered(), before);
    assert_int_equal(shm_unlink(seg.name), 0);
}

static void test_unlink_all(void **state)
{
    (void)state;
    shmb_segment_t a, b;
    assert_int_equal(shmb_segment_create(&a, PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_create(&b, PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_unlink_all(), 2);
    assert_false(exists(a.name));
    assert_false(exists(b.name));
    assert_int_equal(shmb_segment_registered(), 0);
    close(a.fd);
    close(b.fd);
}

static void test_registry_full(void **state)
{
    (void)state;
    shmb_segment_t segs[SHMB_SEGMENT_REGISTRY_SLOTS + 1];
    for (int i = 0; i < SHMB_SEGMENT_REGISTRY_SLOTS; i++)
        assert_int_equal(shmb_segment_create(&segs[i], PREFIX, 4096, NULL, NULL), 0);
    assert_int_equal(shmb_segment_create(&segs[SHMB_SEGMENT_REGISTRY_SLOTS], PREFIX, 4096, NULL, NULL),
                     -ENOBUFS);
    for (int i = 0; i < SHMB_SEGMENT_REGISTRY_SLOTS; i++)
        assert_int_equal(shmb_segment_destroy(&segs[i], NULL), 0);
    assert_int_equal(shmb_segment_registered(), 0);
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
    assert_true(exists(name));
    assert_int_equal(kill(pid, sig), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_false(exists(name));
    close(pipefd[0]);
    close(pipefd[1]);
}

static void test_sigint_cleans_up(void **state)
{
    (void)state;
    check_signal_cleans_up(SIGINT);
}

static void test_sigterm_cleans_up(void **state)
{
    (void)state;
    check_signal_cleans_up(SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_rules),
        cmocka_unit_test(test_names_are_unique_and_shaped),
        cmocka_unit_test(test_create_map_destroy),
        cmocka_unit_test(test_exclusive_create),
        cmocka_unit_test(test_map_failure_is_recorded),
        cmocka_unit_test(test_release_keeps_the_name),
        cmocka_unit_test(test_unlink_all),
        cmocka_unit_test(test_registry_full),
        cmocka_unit_test(test_sigint_cleans_up),
        cmocka_unit_test(test_sigterm_cleans_up),
    };
    if (shm_writable(NULL) != 0) {
        fprintf(stderr, "skip: /dev/shm is not writable\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
