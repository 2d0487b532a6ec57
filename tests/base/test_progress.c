
#include "helpers.h"

#include "shmbench/progress.h"

#define S 1000000000ll

static void test_share(void **state)
{
    assert_true(shmb_progress_share(0, 1, 0, 0) == 0);
    assert_true(shmb_progress_share(0, 1, 1, 4) == 0.25);
    assert_true(shmb_progress_share(1, 2, 1, 2) == 0.75); /* the second repetition, half done */
    assert_true(shmb_progress_share(0, 1, 9, 4) == 1);    /* never above 1 */
    assert_true(shmb_progress_share(3, 0, 0, 0) == 0);
}

static void test_left(void **state)
{
    assert_int_equal(shmb_progress_left_ns(0, 10 * S), -1);          /* nothing done */
    assert_int_equal(shmb_progress_left_ns(0.5, S / 2), -1);         /* too early to tell */
    assert_int_equal(shmb_progress_left_ns(0.25, 10 * S), 30 * S);   /* a quarter in 10 s: 30 s left */
    assert_int_equal(shmb_progress_left_ns(1, 10 * S), 0);
}

static void test_format(void **state)
{
    char b[SHMB_PROGRESS_WIDTH + 1];
    const int n42 = shmb_progress_format(b, sizeof(b), "shm_transfer_bench", "memcpy 64 KB", 0.42, -1);
    assert_int_equal(n42, (int)strlen(b));
    assert_string_equal(b, "shm_transfer_bench: memcpy 64 KB   42%");
    const struct { double share; int64_t left; const char *line; } cases[] = {
        {0.5, 45 * S, "a: x   50%  ~45 s left"},          {0.99, S / 4, "a: x   99%  ~<1 s left"},
        {0.5, 185 * S, "a: x   50%  ~3 min 05 s left"}, {0.01, 3720 * S, "a: x    1%  ~1 h 02 min left"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_progress_format(b, sizeof(b), "a", "x", cases[i].share, cases[i].left);
        assert_string_equal(b, cases[i].line);
    }
    /* a long label gives way: the share and the time left stay */
    char label[200];
    memset(label, 'l', sizeof(label) - 1);
    label[sizeof(label) - 1] = '\0';
    int n = shmb_progress_format(b, sizeof(b), "a", label, 0.5, 45 * S);
    assert_int_equal(n, SHMB_PROGRESS_WIDTH);
    assert_int_equal(strlen(b), SHMB_PROGRESS_WIDTH);
    assert_non_null(strstr(b, "  50%  ~45 s left"));
    /* a small buffer: cut, terminated */
    char small[8];
    assert_int_equal(shmb_progress_format(small, sizeof(small), "abc", "x", 0.5, -1), 7);
    assert_int_equal(strlen(small), 7);
    assert_int_equal(shmb_progress_format(b, 0, "a", "x", 0, -1), -EINVAL);
    assert_int_equal(shmb_progress_format(b, sizeof(b), NULL, "x", 0, -1), -EINVAL);
}

/* The line on a stream: drawn, rewritten with '\r', cleared; nothing at all without a stream. */
static void test_stream(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    shmb_progress_t p;
    shmb_progress_start(&p, f, "bench");
    shmb_progress_plan(&p, 4);
    shmb_progress_step(&p, 1, "posix 4 KB");
    shmb_progress_step(&p, 2, "not drawn: under 100 ms after the last");
    shmb_progress_clear(&p);
    shmb_progress_clear(&p); /* nothing left to clear */
    fclose(f);
    const char *line = "bench: posix 4 KB   25%";
    char want[100];
    snprintf(want, sizeof(want), "\r%s\r%*s\r", line, (int)strlen(line), "");
    assert_string_equal(text, want);
    free(text);

    shmb_progress_t quiet;
    shmb_progress_start(&quiet, NULL, "bench");
    shmb_progress_plan(&quiet, 4);
    shmb_progress_step(&quiet, 1, "x");
    shmb_progress_clear(&quiet);
    assert_int_equal(quiet.shown, 0);
    shmb_progress_step(NULL, 1, "x"); /* no progress: nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share),
        cmocka_unit_test(test_left),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
