
#include "helpers.h"

#include "shmbench/error.h"

static void test_record_and_read(void **state)
{
    shmb_error_clear();
    assert_null(shmb_error_last()->call);
    assert_int_equal(shmb_error_record("shm_open", EACCES, "/x"), -EACCES);
    const shmb_error_t *e = shmb_error_last();
    assert_string_equal(e->call, "shm_open");
    assert_int_equal(e->err, EACCES);
    assert_string_equal(e->object, "/x");
    assert_int_equal(shmb_error_record("mmap", ENOMEM, NULL), -ENOMEM);
    assert_string_equal(shmb_error_last()->object, "");
    shmb_error_clear();
    assert_null(shmb_error_last()->call);
}

static void test_long_object_is_truncated(void **state)
{
    char big[1000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    shmb_error_record("x", EINVAL, big);
    assert_int_equal(strlen(shmb_error_last()->object), SHMB_ERROR_OBJECT_MAX - 1);
}

/* The hint depends on the call, names the prefix in use, quoted, and points to clean_shm.sh rather than an rm glob. */
static void test_hints(void **state)
{
    const struct {
        const char *call;
        int err;
        const char *prefix;
        const char *has;     /* must appear ("" : the hint is empty) */
        const char *lacks;   /* must not appear, NULL: no check */
    } cases[] = {
        {"shm_open", EACCES, NULL, "/dev/shm", NULL},
        {"ftruncate", ENOSPC, NULL, "df -h /dev/shm", "inode"},
        {"first write", ENOSPC, "/x_", "scripts/clean_shm.sh --prefix '/x_'", "rm "},
        {"shm_open", ENOSPC, NULL, "df -i /dev/shm", "df -h"},
        {"shm_open", ENOSPC, "/my_run_", "--prefix '/my_run_'", "mooncake_bench_"},
        {"shm_open", EEXIST, "/a b*", "--prefix '/a b*'", "rm "},
        {"shm_open", EEXIST, "/it's_", "--prefix '/it'\\''s_'", NULL},
        {"ftruncate", EFBIG, NULL, "ulimit -f", NULL},
        {"shm_open", EMFILE, NULL, "ulimit -n", NULL},
        {"mmap", ENOMEM, NULL, "memory.max", NULL},
        {"shm_open", EINVAL, NULL, "--shm_prefix", NULL},
        {"mmap", EINVAL, NULL, "size", "--shm_prefix"},
        {"ftruncate", EINVAL, NULL, "size", "--shm_prefix"},
        {"sched_setaffinity", EINVAL, NULL, "--cpu", "--shm_prefix"},
        {"pthread_create", EINVAL, NULL, "", NULL},
        {NULL, EINVAL, NULL, "", NULL},
        {"shm_open", EINTR, NULL, "", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[1024];
        size_t n = shmb_error_hint(cases[i].call, cases[i].err, cases[i].prefix, out, sizeof(out));
        int ok = n == strlen(out) && (cases[i].has[0] ? strstr(out, cases[i].has) != NULL : n == 0) &&
                 (!cases[i].lacks || !strstr(out, cases[i].lacks)) && !strchr(out, '\n');
        if (!ok)
            fail_msg("case %zu (%s, %d): \"%s\"", i, cases[i].call ? cases[i].call : "NULL",
                     cases[i].err, out);
    }
    char tiny[8];
    assert_int_equal(shmb_error_hint("shm_open", EACCES, NULL, tiny, sizeof(tiny)), 7);
    assert_int_equal(strlen(tiny), 7);
}

/* A nameless backing's hint is the limit it hit: huge page pool (hugetlb), memory (memfd, thp), else the call's. */
static void test_backing_hints(void **state)
{
    const struct {
        const char *call;
        int err;
        const char *object;
        const char *has;
        const char *lacks;
    } cases[] = {
        {"mmap", ENOMEM, "hugetlb", "/proc/sys/vm/nr_hugepages", "memory.max"},
        {"mmap", ENOMEM, "hugetlb", "HugePages_Rsvd", "out of memory"},
        {"fallocate", ENOSPC, "hugetlb", "hugepages-1048576kB/nr_hugepages", "/dev/shm"},
        {"fallocate", ENOSPC, "memfd", "MemAvailable", "df -h /dev/shm"},
        {"mmap", ENOMEM, "thp", "thp pool", "nr_hugepages"},
        {"mmap", ENOMEM, "/mooncake_bench_1_2_3", "memory.max", "nr_hugepages"},
        {"ftruncate", ENOSPC, "/mooncake_bench_1_2_3", "df -h /dev/shm", NULL},
        {"mmap", ENOMEM, NULL, "memory.max", NULL},
        {"mmap", EINVAL, "hugetlb", "size", "nr_hugepages"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[1024];
        size_t n = shmb_error_hint_for(cases[i].call, cases[i].err, cases[i].object, NULL, out, sizeof(out));
        int ok = n == strlen(out) && strstr(out, cases[i].has) != NULL &&
                 (!cases[i].lacks || !strstr(out, cases[i].lacks)) && !strchr(out, '\n');
        if (!ok)
            fail_msg("case %zu (%s, %d, %s): \"%s\"", i, cases[i].call, cases[i].err,
                     cases[i].object ? cases[i].object : "NULL", out);
    }
    char tiny[8];
    assert_int_equal(shmb_error_hint_for("mmap", ENOMEM, "hugetlb", NULL, tiny, sizeof(tiny)), 7);
    assert_int_equal(strlen(tiny), 7);
}

/* One word for a shell, whatever the prefix holds; the default without one. */
static void test_clean_command(void **state)
{
    char out[128];
    shmb_error_clean_command("/it's a*run_", out, sizeof(out));
    assert_string_equal(out, "scripts/clean_shm.sh --prefix '/it'\\''s a*run_'");
    shmb_error_clean_command(NULL, out, sizeof(out));
    assert_string_equal(out, "scripts/clean_shm.sh --prefix '/mooncake_bench_'");
    shmb_error_clean_command("/x_", out, 8); /* truncated, still terminated */
    assert_int_equal(strlen(out), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_and_read),
        cmocka_unit_test(test_long_object_is_truncated),
        cmocka_unit_test(test_hints),
        cmocka_unit_test(test_backing_hints),
        cmocka_unit_test(test_clean_command),
    };
    return shmb_test_run(tests, NULL, NULL);
}
