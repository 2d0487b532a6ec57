#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shmbench/error.h"

static void test_record_and_read(void **state)
{
    (void)state;
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
    (void)state;
    char big[1000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    shmb_error_record("x", EINVAL, big);
    assert_int_equal(strlen(shmb_error_last()->object), SHMB_ERROR_OBJECT_MAX - 1);
}

static void test_hints(void **state)
{
    (void)state;
    assert_non_null(strstr(shmb_error_hint(EACCES), "/dev/shm"));
    assert_non_null(strstr(shmb_error_hint(ENOSPC), "df -h /dev/shm"));
    assert_non_null(strstr(shmb_error_hint(EFBIG), "ulimit -f"));
    assert_non_null(strstr(shmb_error_hint(EMFILE), "ulimit -n"));
    assert_string_equal(shmb_error_hint(EINTR), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_and_read),
        cmocka_unit_test(test_long_object_is_truncated),
        cmocka_unit_test(test_hints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
