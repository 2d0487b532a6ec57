#include <sched.h>
#include <sys/mount.h>

#include "helpers.h"

#include "shmbench/copy.h"
#include "shmbench/sysinfo.h"
#include "shmbench/error.h"
#include "shmbench/segment.h"

#define BUF (1 << 20)

static unsigned char *src, *dst;

static int setup(void **state)
{
    src = aligned_alloc(4096, BUF + 4096);
    dst = aligned_alloc(4096, BUF + 4096);
    if (!src || !dst)
        return -1;
    shmb_copy_fill_pattern(src, BUF + 4096);
    return 0;
}

static int teardown(void **state)
{
    free(src);
    free(dst);
    return 0;
}

static void test_pattern_detects_corruption(void **state)
{
    size_t bad = 12345;
    assert_int_equal(shmb_copy_verify(src, BUF, &bad), 0);
    assert_int_equal(bad, 12345); /* untouched on a match */
    memcpy(dst, src, BUF);
    dst[777777] ^= 0x01; /* one bit of one byte */
    assert_int_equal(shmb_copy_verify(dst, BUF, &bad), 1);
    assert_int_equal(bad, 777777);
    dst[777777] ^= 0x01;
    dst[BUF - 1] ^= 0xff; /* the very last byte */
    assert_int_equal(shmb_copy_verify(dst, BUF, &bad), 1);
    assert_int_equal(bad, BUF - 1);
}

static void test_pattern_detects_shift_and_stale(void **state)
{
    size_t bad;
    memcpy(dst, src + 1, 4096); /* shifted by one byte */
    assert_int_equal(shmb_copy_verify(dst, 4096, &bad), 1);
    assert_int_equal(bad, 0);
    memcpy(dst, src + 8, 4096); /* shifted by one word */
    assert_int_equal(shmb_copy_verify(dst, 4096, &bad), 1);
    memset(dst, 0, 4096);
    memcpy(dst, src, 4000); /* partial */
    assert_int_equal(shmb_copy_verify(dst, 4096, &bad), 1);
    assert_int_equal(bad, 4000);
    /* a tail shorter than a word is checked too */
    memcpy(dst, src, 13);
    assert_int_equal(shmb_copy_verify(dst, 13, &bad), 0);
    dst[12] ^= 1;
    assert_int_equal(shmb_copy_verify(dst, 13, &bad), 1);
    assert_int_equal(bad, 12);
}

/* Every kernel, at awkward sizes and misalignments, copies exactly [0, n). */
static void test_kernels_copy_exactly(void **state)
{
    static const size_t sizes[] = {0, 1, 7, 8, 15, 63, 64, 65, 255, 256, 257, 4095, 4096, 100003, BUF};
    static const size_t offsets[] = {0, 1, 13, 64};
    for (int m = 0; m < SHMB_COPY_METHODS; m++) {
        shmb_copy_fn fn = shmb_copy_kernel((shmb_copy_method_t)m);
        if (!fn)
            continue;
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            for (size_t oi = 0; oi < sizeof(offsets) / sizeof(offsets[0]); oi++) {
                size_t n = sizes[si], off = offsets[oi];
                if (n + off > BUF)
                    continue;
                memset(dst, 0xA5, n + off + 64);
                fn(dst + off, src + off, n);
                if (memcmp(dst + off, src + off, n) != 0)
                    fail_msg("%s: %zu bytes at offset %zu differ", shmb_copy_method_name((shmb_copy_method_t)m), n, off);
                for (size_t i = 0; i < 64; i++) /* nothing written past the end */
                    assert_int_equal(dst[off + n + i], 0xA5);
                for (size_t i = 0; i < off; i++) /* nor before the start */
                    assert_int_equal(dst[i], 0xA5);
            }
        }
    }
}

static void test_methods(void **state)
{
    shmb_copy_method_t m;
    assert_int_equal(shmb_copy_parse_method("nt", &m), 0);
    assert_int_equal(m, SHMB_COPY_NT);
    assert_int_equal(shmb_copy_parse_method("all", &m), -EINVAL);
    assert_non_null(shmb_copy_kernel(SHMB_COPY_MEMCPY));
    assert_non_null(shmb_copy_kernel(SHMB_COPY_LOOP));
    assert_null(shmb_copy_kernel(SHMB_COPY_METHODS));
    assert_string_equal(shmb_copy_kernel_variant(SHMB_COPY_MEMCPY), "");
#if defined(__x86_64__)
    const char *v = shmb_copy_kernel_variant(SHMB_COPY_NT);
    assert_true(strcmp(v, "avx512") == 0 || strcmp(v, "avx2") == 0 || strcmp(v, "sse2") == 0);
    assert_non_null(shmb_copy_kernel(SHMB_COPY_MOVSB));
#endif
}

static void test_crew_splits_and_joins(void **state)
{
    for (int threads = 1; threads <= 5; threads++) {
        shmb_copy_crew_t *crew = NULL;
        assert_int_equal(shmb_copy_crew_start(&crew, threads, -1), 0);
        static const size_t sizes[] = {1, 100, 4096, 4097, BUF};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            memset(dst, 0, BUF + 64);
            shmb_copy_crew_run(crew, shmb_copy_kernel(SHMB_COPY_MEMCPY), dst, src, sizes[i]);
            size_t bad;
            assert_int_equal(shmb_copy_verify(dst, sizes[i], &bad), 0);
            assert_int_equal(dst[sizes[i]], 0);
        }
        memset(dst, 0, 8192);
        shmb_copy_batch(crew, shmb_copy_kernel(SHMB_COPY_LOOP), dst, src, 8192, 3);
        assert_memory_equal(dst, src, 8192);
        shmb_copy_crew_stop(crew);
    }
    shmb_copy_crew_t *crew = NULL;
    assert_int_equal(shmb_copy_crew_start(&crew, 0, -1), -EINVAL);
    assert_null(crew);
    assert_int_equal(shmb_copy_crew_start(&crew, 2, 0), 0); /* pinned */
    shmb_copy_crew_stop(crew);
    shmb_copy_crew_stop(NULL);
}

/* Threads pin within the allowed CPUs from the first at or after --cpu; in a child, affinity per case. */
static void test_crew_pins_within_allowed_set(void **state)
{
    /* every CPU the process may use, though an earlier crew pinned this thread */
    int cpus[CPU_SETSIZE];
    int n = shmb_sysinfo_allowed_cpus(cpus, CPU_SETSIZE);
    assert_true(n >= 1);
    enum { ALL, LAST_ONLY, ALL_BUT_FIRST };
    const struct {
        int restrict_to;
        int cpu;      /* asked for; -3: the first CPU of the machine (excluded by some cases) */
        int threads;
    } cases[] = {
        {ALL, -1, 3}, {ALL, 0, 3}, {ALL, 100000, 2}, {LAST_ONLY, 0, 3},
        {LAST_ONLY, -3, 1}, {ALL_BUT_FIRST, -3, 4}, {ALL_BUT_FIRST, 0, 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].restrict_to != ALL && n < 2)
            continue; /* one CPU: nothing to restrict */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            int lo = cases[i].restrict_to == ALL_BUT_FIRST ? 1 : 0;
            int allowed[CPU_SETSIZE], m = 0;
            for (int k = cases[i].restrict_to == LAST_ONLY ? n - 1 : lo; k < n; k++) {
                CPU_SET(cpus[k], &set);
                allowed[m++] = cpus[k];
            }
            if (sched_setaffinity(0, sizeof(set), &set) != 0)
                _exit(2);
            int cpu = cases[i].cpu == -3 ? cpus[0] : cases[i].cpu;
            shmb_copy_crew_t *crew = NULL;
            if (shmb_copy_crew_start(&crew, cases[i].threads, cpu) != 0)
                _exit(3);
            int first = 0;
            while (cpu >= 0 && first < m && allowed[first] < cpu)
                first++;
            for (int t = 0; t < cases[i].threads; t++) {
                int want = cpu < 0 ? -1 : allowed[(first + t) % m];
                if (shmb_copy_crew_cpu(crew, t) != want)
                    _exit(4);
            }
            shmb_copy_crew_run(crew, shmb_copy_kernel(SHMB_COPY_MEMCPY), dst, src, 65536);
            size_t bad;
            if (shmb_copy_verify(dst, 65536, &bad) != 0)
                _exit(5);
            shmb_copy_crew_stop(crew);
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("case %zu: status %#x", i, status);
    }
}

/* A first write copies like a plain one, on this thread or through a crew, with every kernel. */
static void test_first_write_copies(void **state)
{
    for (int threads = 0; threads <= 3; threads++) {
        shmb_copy_crew_t *crew = NULL;
        if (threads)
            assert_int_equal(shmb_copy_crew_start(&crew, threads, -1), 0);
        for (int m = 0; m < SHMB_COPY_METHODS; m++) {
            shmb_copy_fn fn = shmb_copy_kernel((shmb_copy_method_t)m);
            if (!fn)
                continue;
            memset(dst, 0, BUF + 64);
            assert_int_equal(shmb_copy_first_write(crew, fn, dst, src, BUF - 13), 0);
            size_t bad;
            assert_int_equal(shmb_copy_verify(dst, BUF - 13, &bad), 0);
            assert_int_equal(dst[BUF - 13], 0);
        }
        shmb_copy_crew_stop(crew);
    }
}

/* Into a segment a 256 KiB /dev/shm has no room for: -ENOSPC recorded on the caller's thread,
 * whichever chunk found no page, never a SIGBUS; then one that fits is copied whole. */
static int first_write_full(void *arg)
{
    const int threads = *(const int *)arg;
    if (shmb_segment_install_signal_cleanup() != 0)
        return 10;
    shmb_copy_crew_t *crew = NULL;
    if (threads && shmb_copy_crew_start(&crew, threads, -1) != 0)
        return 11;
    shmb_segment_t seg;
    if (shmb_segment_create(&seg, "/shmb_test_copy_", BUF, NULL, NULL) != 0 || shmb_segment_map(&seg, NULL) != 0)
        return 12;
    shmb_error_clear();
    int ret = shmb_copy_first_write(crew, shmb_copy_kernel(SHMB_COPY_MEMCPY), seg.addr, src, BUF);
    if (ret != -ENOSPC)
        return 13;
    if (!shmb_error_last()->call || strcmp(shmb_error_last()->call, "first write") != 0)
        return 14;
    if (shmb_segment_destroy(&seg, NULL) != 0)
        return 15;
    if (shmb_segment_create(&seg, "/shmb_test_copy_", 65536, NULL, NULL) != 0 || shmb_segment_map(&seg, NULL) != 0)
        return 16;
    size_t bad;
    if (shmb_copy_first_write(crew, shmb_copy_kernel(SHMB_COPY_MEMCPY), seg.addr, src, 65536) != 0 ||
        shmb_copy_verify(seg.addr, 65536, &bad) != 0)
        return 17;
    shmb_segment_destroy(&seg, NULL);
    shmb_copy_crew_stop(crew);
    return 0;
}

static void test_first_write_in_full_shm(void **state)
{
    static const char *const what[] = {"0 threads", "1 thread", "2 threads", "3 threads"};
    for (int threads = 0; threads <= 3; threads++)
        shmb_test_in_tmpfs(256, first_write_full, &threads, what[threads]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pattern_detects_corruption),
        cmocka_unit_test(test_pattern_detects_shift_and_stale),
        cmocka_unit_test(test_kernels_copy_exactly),
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_crew_splits_and_joins),
        cmocka_unit_test(test_crew_pins_within_allowed_set),
        cmocka_unit_test(test_first_write_copies),
        cmocka_unit_test(test_first_write_in_full_shm),
    };
    return shmb_test_run(tests, setup, teardown);
}
