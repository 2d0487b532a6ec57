
#include "helpers.h"

#include "shmbench/clock.h"

static void test_monotonic(void **state)
{
    uint64_t prev = shmb_clock_now_ns();
    for (int i = 0; i < 100000; i++) {
        uint64_t now = shmb_clock_now_ns();
        assert_true(now >= prev);
        prev = now;
    }
}

static void test_measures_a_sleep(void **state)
{
    uint64_t t0 = shmb_clock_now_ns();
    usleep(20000);
    uint64_t elapsed = shmb_clock_now_ns() - t0;
    assert_true(elapsed >= 20000000u);
    assert_true(elapsed < 2000000000u);
}

static void test_overhead_is_plausible(void **state)
{
    double ns = shmb_clock_overhead_ns();
    assert_true(ns >= 1.0);
    assert_true(ns < 100000.0);
}

static void test_resolution(void **state)
{
    uint64_t res = 0;
    assert_int_equal(shmb_clock_resolution_ns(&res), 0);
    assert_true(res >= 1 && res <= 1000000);
}

static void test_escape_keeps_stores(void **state)
{
    unsigned char buf[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (unsigned char)i;
    shmb_escape(buf);
    shmb_clobber();
    assert_int_equal(buf[63], 63);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic),
        cmocka_unit_test(test_measures_a_sleep),
        cmocka_unit_test(test_overhead_is_plausible),
        cmocka_unit_test(test_resolution),
        cmocka_unit_test(test_escape_keeps_stores),
    };
    return shmb_test_run(tests, NULL, NULL);
}
