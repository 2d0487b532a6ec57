/* notes' shared parts (src/base/notes.c): the store's and the report's bounds, the threads' CPU list. */

#include "helpers.h"

#include "base/notes_internal.h"

/* A note the store cannot hold: NULL, store rewound; full lines refused by publish; earlier notes stay. */
static void test_store_full(void **state)
{
    shmb_notes_t store = {0};
    shmb_notes_lines_t l = {0};
    shmb_notes_put(&store, "kept %d", 1);
    const char *kept = shmb_notes_end(&store, 0);
    assert_string_equal(kept, "kept 1");
    shmb_notes_add(&l, kept);
    const size_t used = store.used;
    store.used = SHMB_NOTES_TEXT_BYTES - 10;
    shmb_notes_put(&store, "a note longer than ten bytes");
    assert_null(shmb_notes_end(&store, SHMB_NOTES_TEXT_BYTES - 10));
    assert_int_equal(store.used, SHMB_NOTES_TEXT_BYTES - 10);
    shmb_notes_add(&l, NULL);
    shmb_report_t r = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_publish(&r, &l, &store, used), -EOVERFLOW);
    shmb_test_assert_untouched(&r);
    assert_int_equal(store.used, used);
    assert_string_equal(kept, "kept 1");
}

/* The report holds SHMB_NOTES_CAP notes and their NULL: one more fills the lines. */
static void test_report_full(void **state)
{
    shmb_notes_t store = {0};
    shmb_notes_lines_t l = {0};
    shmb_report_t r = shmb_test_fresh_report();
    for (size_t i = 0; i < SHMB_TEST_NOTES_CAP; i++)
        r.notes[i] = "a note";
    r.notes[SHMB_TEST_NOTES_CAP] = NULL;
    shmb_notes_keep(&l, &r);
    assert_int_equal(l.full, 0);
    shmb_report_t out = shmb_test_fresh_report();
    shmb_test_assert_notes(&out, shmb_notes_publish(&out, &l, &store, 0), (int)SHMB_TEST_NOTES_CAP);
    shmb_notes_add(&l, "one more");
    out = shmb_test_fresh_report();
    assert_int_equal(shmb_notes_publish(&out, &l, &store, 0), -EOVERFLOW);
    shmb_test_assert_untouched(&out);
}

/* The CPU list of the most threads a binary allows fits in a fresh store; more are refused. */
static void test_cpus(void **state)
{
    char want[256];
    shmb_notes_t store = {0};
    assert_int_equal(shmb_notes_put_cpus(&store, 2, -1), 0);
    shmb_test_expected_cpus(2, -1, want, sizeof(want));
    assert_string_equal(shmb_notes_end(&store, 0), want);
    store.used = 0;
    assert_int_equal(shmb_notes_put_cpus(&store, SHMB_NOTES_MAX_THREADS, -1), 0);
    assert_non_null(shmb_notes_end(&store, 0));
    assert_int_equal(shmb_notes_put_cpus(&store, SHMB_NOTES_MAX_THREADS + 1, -1), -EOVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_full),
        cmocka_unit_test(test_report_full),
        cmocka_unit_test(test_cpus),
    };
    return shmb_test_run(tests, NULL, NULL);
}
