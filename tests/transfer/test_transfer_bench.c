/* transfer driver: the run and its rows in one process, then in a peer, and the peer's protocol. */
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "helpers.h"
#include "copier_fixture.h"

#include "shmbench/error.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/segment.h"
#include "transfer/transfer_internal.h"

#define PREFIX shmb_test_prefix()

/* This executable's posix_fallocate stands in for glibc's (the static
 * library resolves to it): it counts the reservations, then makes them. */
static int fallocate_calls;

int posix_fallocate(int fd, off_t offset, off_t len)
{
    fallocate_calls++;
    return fallocate(fd, 0, offset, len) == 0 ? 0 : errno;
}

/* What this executable's shm_open saw, shared with the peers it forks (MAP_SHARED, mapped in main before any fork). */
typedef struct opens {
    pid_t test_pid;     /* the test process: the owner */
    int attaches;       /* shm_open without O_CREAT in another process: a peer's attach by name */
    int redirect;       /* 1: a peer's second attach (dst) opens DECOY instead */
} opens_t;

static opens_t *opens;

static char decoy[128]; /* "<prefix>decoy", set in main */
#define DECOY decoy

/* shm_open as glibc's; counts the peers' attaches and, when asked, sends a peer's dst to the decoy. */
int shm_open(const char *name, int oflag, mode_t mode)
{
    char path[300];
    if (opens && getpid() != opens->test_pid && !(oflag & O_CREAT)) {
        if (++opens->attaches == 2 && opens->redirect)
            name = DECOY;
    }
    snprintf(path, sizeof(path), "/dev/shm/%s", name + 1);
    return open(path, oflag | O_NOFOLLOW | O_CLOEXEC, mode);
}

static shmb_transfer_config_t small(void)
{
    shmb_transfer_config_t c = shmb_test_transfer_config();
    c.max_transfer_size_kb = 1024;
    c.time_per_size_ms = 50;
    return c;
}

/* Sizes double from the first, the last added; bad bounds refused. Space: src, dst, cold, a link's room. */
static void test_sizes(void **state)
{
    static const struct { uint64_t first_kb, last_kb; int n, at[2]; uint64_t bytes[2]; } cases[] = {
        {4, 1024, 9, {0, 8}, {4096, 1048576}},        {1024, 1024, 1, {0, 0}, {1048576, 1048576}},
        {3, 1024, 10, {8, 9}, {768 * 1024, 1048576}}, /* the maximum is added */
        {4, 4, 1, {0, 0}, {4096, 4096}} /* one size below 1 MB */, {4, 48, 5, {3, 4}, {32768, 49152}},
        {1025, 1024, -EINVAL, {0}, {0}}, {0, 1024, -EINVAL, {0}, {0}}, {4, 0, -EINVAL, {0}, {0}},
        {4, SHMB_TRANSFER_MAX_KB + 1, -EINVAL, {0}, {0}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t s[SHMB_TRANSFER_MAX_SIZES];
        shmb_transfer_config_t c = small();
        c.transfer_size_kb = cases[i].first_kb;
        c.max_transfer_size_kb = cases[i].last_kb;
        assert_int_equal(shmb_transfer_bench_sizes(&c, s, SHMB_TRANSFER_MAX_SIZES), cases[i].n);
        for (int k = 0; k < 2 && cases[i].n > 0; k++)
            assert_int_equal(s[cases[i].at[k]], cases[i].bytes[k]);
    }
    static const struct { int cold; uint64_t last_kb, bytes; } space[] = {
        {0, 1024, 2u << 20}, {1, 1024, 3u << 20}, {1, 4, 3 * 4096}};
    for (size_t i = 0; i < sizeof(space) / sizeof(space[0]); i++) {
        uint64_t bytes;
        shmb_transfer_config_t c = small();
        c.cold = space[i].cold;
        c.max_transfer_size_kb = space[i].last_kb;
        assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &bytes), 0);
        assert_int_equal(bytes, space[i].bytes);
    }
    /* SHM-jemalloc's write path: its link's arena room and its borrower's control page */
    uint64_t with = 0, without = 0;
    shmb_transfer_config_t c = small();
    c.translate = 1;
    c.system = SHMB_SYSTEM_MOONCAKE;
    assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &without), 0);
    c.system = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &with), 0);
    assert_true(with - without == (2u << 20) + (uint64_t)sysconf(_SC_PAGESIZE));
}

/* GB/s and speedups of medians: bytes_per_second = size / p50 on every row,
 * speedup = that / the warm memcpy row's of the same size, cold rows too. */
static void check_rates(const shmb_rows_t *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        const shmb_row_t *r = &rows->v[i];
        const double bytes = (double)r->arg * 1024;
        assert_float_equal(r->bytes_per_second, bytes * 1e9 / r->ns.p50, 1e-9 * r->bytes_per_second);
        assert_float_equal(r->items_per_second, 1e9 / r->ns.p50, 1e-9 * r->items_per_second);
        const shmb_row_t *warm = shmb_rows_find(rows, "memcpy", "", r->arg, r->repetition);
        assert_non_null(warm);
        assert_float_equal(r->speedup, r->bytes_per_second / warm->bytes_per_second, 1e-9 * r->speedup);
    }
}

static void test_rows_and_cleanup(void **state)
{
    shmb_transfer_config_t c = small();
    c.run[SHMB_COPY_LOOP] = 1;
    c.cold = 1;
    c.verify = 1;
    c.time_per_size_ms = 600000; /* every transfer, also on a slow (sanitized) build */
    fallocate_calls = 0;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 9 * 4); /* 9 sizes x 2 methods x warm, cold */
    /* src and dst are reserved, no cold segment: the 9 x 2 x 20 cold copies allocated inside the timing */
    assert_int_equal(fallocate_calls, 2);
    check_rates(&rows);
    const shmb_row_t *r = shmb_rows_find(&rows, "memcpy", "", 1024, 0);
    assert_non_null(r);
    assert_int_equal(r->iterations, 20);
    assert_float_equal(r->speedup, 1.0, 1e-12);
    for (uint64_t kb = 4; kb <= 1024; kb *= 2) {
        const shmb_row_t *cold = shmb_rows_find(&rows, "memcpy", "cold", kb, 0);
        assert_non_null(cold);
        assert_true(cold->iterations >= 1 && cold->iterations <= 20);
        /* page allocation and faults cost more than a copy into touched pages */
        if (cold->speedup >= 1.0)
            fail_msg("cold memcpy at %llu KB: speedup %g, not below the warm copy", (unsigned long long)kb,
                     cold->speedup);
    }
    shmb_test_assert_clean();
    shmb_rows_free(&rows);
}

/* --num_transfers=N does N transfers, warm (batched: 1000 was 1024 once) and cold, unless time runs out. */
static void test_exact_transfers(void **state)
{
    static const uint64_t counts[] = {1, 7, 20, 1000, 1001};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        shmb_transfer_config_t c = small();
        c.num_transfers = counts[i];
        c.max_transfer_size_kb = 64;
        c.time_per_size_ms = 100000; /* the count ends it, not the budget */
        c.cold = counts[i] <= 20;
        shmb_rows_t rows = shmb_test_transfer_rows(&c);
        assert_int_equal(rows.n, c.cold ? 10 : 5);
        for (size_t k = 0; k < rows.n; k++)
            if (rows.v[k].iterations != counts[i])
                fail_msg("--num_transfers=%llu: %s %s at %llu KB did %llu", (unsigned long long)counts[i],
                         rows.v[k].variant, rows.v[k].step, (unsigned long long)rows.v[k].arg,
                         (unsigned long long)rows.v[k].iterations);
        check_rates(&rows);
        shmb_rows_free(&rows);
    }
    /* a budget that runs out first stops at a batch: fewer, at least one batch */
    shmb_transfer_config_t c = small();
    c.num_transfers = 100000000;
    c.max_transfer_size_kb = 4;
    c.time_per_size_ms = 5;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_true(rows.v[0].iterations >= 1 && rows.v[0].iterations < 100000000);
    shmb_rows_free(&rows);
}

/* One size below 1 MB, alone. */
static void test_one_small_size(void **state)
{
    shmb_transfer_config_t c = small();
    c.transfer_size_kb = 4;
    c.max_transfer_size_kb = 4;
    c.cold = 1;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 2);
    assert_int_equal(rows.v[0].arg, 4);
    assert_string_equal(rows.v[1].step, "cold");
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* A full /dev/shm (a private tmpfs with room for src, dst and the peer's control) during a cold
 * copy: -ENOSPC as "first write", no SIGBUS, nothing left. *arg 0..3: 1 + k % 2 threads, peer from 2. */
static int cold_full(void *arg)
{
    const int threads = 1 + *(const int *)arg % 2, in_peer = *(const int *)arg / 2;
    if (shmb_segment_install_signal_cleanup() != 0)
        return 10;
    shmb_transfer_config_t c = small();
    c.transfer_size_kb = 1024;
    c.threads = threads;
    c.cold = 1;
    shmb_peer_t peer;
    if (in_peer && shmb_transfer_bench_peer_start(&peer, PREFIX) != 0)
        return 15;
    c.peer = in_peer ? &peer : NULL;
    shmb_rows_t rows = {0};
    char why[256] = "";
    shmb_error_clear();
    int ret = shmb_transfer_bench_run(&c, &rows, why, sizeof(why));
    if (ret != -ENOSPC)
        return 11;
    if (!shmb_error_last()->call || strcmp(shmb_error_last()->call, "first write") != 0)
        return 12;
    if (in_peer && shmb_peer_stop(&peer) != 0)
        return 16;
    if (shmb_test_count_ours(NULL, 0) != 0 || shmb_segment_registered() != 0)
        return 13;
    return rows.n == 1 && strcmp(rows.v[0].step, "") == 0 ? 0 : 14; /* the warm row only */
}

static void test_cold_in_full_shm(void **state)
{
    static const char *const what[] = {"1 thread", "2 threads", "1 thread in the peer", "2 threads in the peer"};
    for (int k = 0; k < 4; k++)
        shmb_test_in_tmpfs(k / 2 ? 2820 : 2560, cold_full, &k, what[k]);
}

static void test_threads(void **state)
{
    shmb_transfer_config_t c = small();
    c.threads = 2;
    c.max_transfer_size_kb = 2048;
    c.transfer_size_kb = 2048;
    c.verify = 1;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.v[0].threads, 2);
    shmb_rows_free(&rows);
}

/* Rows per size of a --system run: request_path, translate, memcpy, request (each part's note its
 * share of the request's p50), then copy_out (measured for SHM-jemalloc only, so that runs pair). */
#define PER_SIZE 5

/* SHM-jemalloc's request is its write path (so its notes say), to_address not upstream; copy_out follows. */
static void check_jemalloc_rows(const shmb_rows_t *rows, size_t first, uint64_t size_kb)
{
    assert_string_equal(rows->v[first + 1].note, SHMB_TRANSFER_NOT_UPSTREAM);
    assert_non_null(strstr(rows->v[first + 3].note, "write path"));
    const shmb_row_t *out = &rows->v[first + 4];
    assert_string_equal(out->variant, "copy_out");
    assert_int_equal(out->arg, size_kb);
    assert_true(out->bytes_per_second > 0 && out->iterations > 0);
}

static void check_request_rows(const shmb_rows_t *rows, size_t first, uint64_t size_kb, int threads, int system)
{
    static const char *const parts[] = {"request_path", "translate", "memcpy", "request"};
    const shmb_row_t *req = &rows->v[first + 3];
    if (system == SHMB_SYSTEM_FLOWIPC_JEMALLOC) {
        check_jemalloc_rows(rows, first, size_kb);
        return;
    }
    assert_string_equal(rows->v[first + 4].variant, "copy_out");
    assert_int_equal(rows->v[first + 4].iterations, 0);
    double sum = 0;
    for (int k = 0; k < 4; k++) {
        const shmb_row_t *row = &rows->v[first + (size_t)k];
        assert_string_equal(row->variant, parts[k]);
        assert_int_equal(row->arg, size_kb);
        assert_int_equal(row->threads, threads);
        assert_true(row->iterations > 0 && row->ns.p50 > 0);
        assert_int_equal(row->bytes_per_second > 0, k >= 2);
        if (k == 3)
            break;
        double share = 0;
        assert_int_equal(sscanf(row->note, "%lf%% of request p50", &share), 1);
        assert_float_equal(share, 100 * row->ns.p50 / req->ns.p50, 0.0051);
        assert_null(memchr(row->note, 'e', strcspn(row->note, "%"))); /* never e-notation */
        sum += share;
    }
    double total = 0;
    assert_int_equal(sscanf(req->note, "copy memcpy; parts add up to %lf%%", &total), 1);
    /* the total is printed to 0.1 (off by up to 0.05), each of the three parts to 0.01 (0.005 each) */
    assert_float_equal(total, sum, 0.05 + 3 * 0.005 + 1e-9);
    /* the request holds its translation: it cannot be cheaper than the translation alone */
    assert_true(req->ns.p50 > rows->v[first + 1].ns.p50);
}

/* With a system, each size's rows are the request and its parts, every one verified, for every system. */
static void test_translated(void **state)
{
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_transfer_config_t c = small();
        c.translate = 1;
        c.system = (shmb_system_t)s;
        c.num_segments = 100;
        c.verify = 1;
        shmb_rows_t rows = shmb_test_transfer_rows(&c);
        const size_t n = PER_SIZE;
        assert_int_equal(rows.n, 9 * n); /* 4 KB .. 1 MB */
        for (size_t i = 0; i < 9; i++)
            check_request_rows(&rows, n * i, 4u << i, 1, (int)c.system);
        /* the copy's share of the request grows with the copy (1 MB copies 256x more than 4 KB) */
        double first = 0, last = 0;
        sscanf(rows.v[2].note, "%lf", &first);
        sscanf(rows.v[rows.n - n + 2].note, "%lf", &last);
        assert_true(last > first);
        shmb_rows_free(&rows);
        assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    }
}

/* Paired: per part each system's row then its ratio row (control near 1), the copy once; bad pairings refused. */
static void test_paired(void **state)
{
    static const char *const parts[] = {"request_path", "translate", "memcpy", "request"};
    static const char *const systems[] = {"mooncake", "flowipc_classic", "mooncake_control"};
    shmb_transfer_config_t c = small();
    c.max_transfer_size_kb = 4;
    c.num_segments = 10;
    c.verify = 1;
    shmb_test_transfer_pair(&c, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 5 + 5 + 1 + 5);
    size_t i = 0;
    for (int k = 0; k < 4; k++) {
        char want[160];
        if (k == 2) { /* the copy: once, the same code for every system */
            shmb_test_assert_row_name("shm_transfer", &rows.v[i], "shm_transfer/memcpy/size_kb:4");
            assert_true(rows.v[i++].bytes_per_second > 0);
            continue;
        }
        const shmb_row_t *req = NULL;
        for (int s = 0; s < 3; s++, i++) {
            const shmb_row_t *row = &rows.v[i];
            snprintf(want, sizeof(want), "shm_transfer/%s/size_kb:4/system:%s", parts[k], systems[s]);
            shmb_test_assert_row_name("shm_transfer", row, want);
            assert_true(row->iterations >= 31 && row->ns.p50 > 0 && !row->vs[0]);
            assert_int_equal(row->bytes_per_second > 0, k == 3);
            assert_int_equal(row->speedup > 0, k == 3); /* against memcpy, as a --system row */
            assert_non_null(strstr(row->note, k == 3 ? "copy memcpy; parts add up to" : "% of request p50"));
            req = row;
        }
        for (int s = 1; s < 3; s++, i++) {
            const shmb_row_t *row = &rows.v[i];
            snprintf(want, sizeof(want), "shm_transfer/%s/size_kb:4/system:%s/vs:mooncake", parts[k], systems[s]);
            shmb_test_assert_row_name("shm_transfer", row, want);
            assert_true(row->iterations >= 31); /* rounds */
            assert_int_equal(req->iterations % row->iterations, 0); /* a system's: batch x rounds */
            assert_true(row->speedup > 0 && row->ratio_lo <= row->speedup && row->speedup <= row->ratio_hi);
            assert_non_null(row->verdict);
            assert_non_null(strstr(row->note, "95% ["));
            if (s == 2) /* the control: the baseline's code again */
                assert_true(row->speedup > 0.5 && row->speedup < 2);
        }
    }
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);

    shmb_transfer_config_t bad[5];
    shmb_peer_t never_started;
    memset(&never_started, 0, sizeof(never_started));
    for (int k = 0; k < 5; k++)
        bad[k] = c;
    bad[0].nsystems = 1;
    bad[1].systems[2] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    bad[2].cold = 1;
    bad[3].peer = &never_started; /* refused before it is used */
    bad[4].translate = 1;
    for (int k = 0; k < 5; k++)
        shmb_test_transfer_refused(&bad[k], -EINVAL);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* Refused: no transfers, no thread, first size above last; with a system, cold rows or no segments. */
static void test_bad_config(void **state)
{
    static const struct { uint64_t num_transfers; int threads; uint64_t first_kb; int translate, cold;
                          uint64_t num_segments; } bad[] = {
        {0, 1, 4, 0, 0, 0}, {20, 0, 4, 0, 0, 0}, {20, 1, 2048, 0, 0, 0}, {20, 1, 4, 1, 1, 10}, {20, 1, 4, 1, 0, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        shmb_transfer_config_t c = small();
        c.num_transfers = bad[i].num_transfers;
        c.threads = bad[i].threads;
        c.transfer_size_kb = bad[i].first_kb;
        c.translate = bad[i].translate;
        c.cold = bad[i].cold;
        c.num_segments = bad[i].num_segments;
        shmb_test_transfer_refused(&c, -EINVAL);
    }
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* Mooncake's translation attaches each buffer at set-up and misses none. */
static void test_mooncake_set_up(void **state)
{
    char why[256] = "";
    shmb_transfer_config_t c = small();
    c.translate = 1;
    c.system = SHMB_SYSTEM_MOONCAKE;
    c.num_segments = 10;
    shmb_transfer_run_t r;
    shmb_test_copier_up(&r, &c, 65536, 65536, why, sizeof(why));
    assert_int_equal(shmb_mooncake_attached(r.translation.path.mooncake), 10); /* each buffer, at set-up */
    assert_int_equal(r.translation.missed, 0);
    shmb_test_copier_down(&r);
}

/* The pools an SHM-jemalloc arena of its own makes for n blocks of size. */
static size_t jemalloc_pools(uint64_t n, uint64_t size)
{
    shmb_fipc_jemalloc_t *j = NULL;
    assert_int_equal(shmb_fipc_jemalloc_create_filled(PREFIX, n, (size_t)size, &j), 0);
    const size_t pools = shmb_fipc_jemalloc_pools(j, NULL);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    return pools;
}

/* Each design's engine registers N buffers, SHM-classic's pool, or SHM-jemalloc's pools; all find dst. */
static void test_engine_per_design(void **state)
{
    char why[256] = "";
    size_t want[SHMB_SYSTEMS] = {[SHMB_SYSTEM_MOONCAKE] = 10, [SHMB_SYSTEM_FLOWIPC_CLASSIC] = 1,
                                        [SHMB_SYSTEM_FLOWIPC_JEMALLOC] = jemalloc_pools(10, 65536)};
    assert_true(want[SHMB_SYSTEM_FLOWIPC_JEMALLOC] >= 1 && want[SHMB_SYSTEM_FLOWIPC_JEMALLOC] < 10);
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_transfer_config_t c = small();
        c.translate = 1;
        c.system = (shmb_system_t)s;
        c.num_segments = 10;
        shmb_transfer_run_t r;
        shmb_test_copier_up(&r, &c, 65536, 65536, why, sizeof(why));
        assert_int_equal(shmb_mooncake_engine_buffers(r.translation.engine, SHMB_PATH_MOONCAKE_TARGET_ID), want[s]);
        uint64_t done = 0;
        for (int part = SHMB_TRANSFER_REQUEST_PATH; part < SHMB_TRANSFER_PARTS; part++)
            assert_int_equal(
                shmb_transfer_bench_copy(&r, (shmb_transfer_part_t)part, SHMB_COPY_MEMCPY, 4096, 0, &done), 0);
        assert_int_equal(r.translation.missed, 0);
        shmb_test_copier_down(&r);
    }
}

/* Runs one operation of each part; true when exactly those in `want` (a bit per part) counted a miss. */
static int misses_are(shmb_transfer_run_t *r, unsigned want)
{
    unsigned got = 0;
    for (int part = 0; part < SHMB_TRANSFER_PARTS; part++) {
        uint64_t done = 0;
        r->translation.missed = 0;
        assert_int_equal(shmb_transfer_bench_copy(r, (shmb_transfer_part_t)part, SHMB_COPY_MEMCPY, 4096, 0, &done),
                         0);
        got |= (r->translation.missed == 1) << part;
    }
    r->translation.missed = 0;
    if (got != want)
        fprintf(stderr, "%s: parts that missed %#x, expected %#x\n",
                shmb_system_name((shmb_system_t)r->translation.system), got, want);
    return got == want;
}

/* A fault planted 64 bytes off is seen by exactly the parts through it, every system; no system: copy only. */
static void test_parts_planted_fault(void **state)
{
    char why[256] = "";
    /* without a hand-off link, zero_copy is the whole request (mooncake's side of it); submit is
     * the request path calling the translation, no copy: it misses where the request does */
    const unsigned path = 1u << SHMB_TRANSFER_REQUEST_PATH,
                   request = 1u << SHMB_TRANSFER_REQUEST | 1u << SHMB_TRANSFER_ZERO_COPY | 1u << SHMB_TRANSFER_SUBMIT;
    const unsigned translate = 1u << SHMB_TRANSFER_TRANSLATE;
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_transfer_config_t c = small();
        c.translate = 1;
        c.system = (shmb_system_t)s;
        c.num_segments = 10;
        shmb_transfer_run_t r;
        shmb_test_copier_up(&r, &c, 65536, 65536, why, sizeof(why));
        uint64_t done = 0;
        assert_true(misses_are(&r, 0));
        r.translation.buffer_addr += 64;
        assert_true(misses_are(&r, path | request));
        r.translation.buffer_addr -= 64;
        r.translation.remote_addr += 64; /* only mooncake's translation reads the address */
        assert_true(misses_are(&r, s == SHMB_SYSTEM_MOONCAKE ? translate | request : 0));
        r.translation.remote_addr -= 64;
        unsigned char *dst = r.dst.addr;
        r.dst.addr = dst + 64;
        const int caught = misses_are(&r, translate | request);
        r.dst.addr = dst;
        assert_true(caught);
        assert_int_equal(shmb_transfer_bench_copy(&r, SHMB_TRANSFER_PARTS, SHMB_COPY_MEMCPY, 4096, 0, &done),
                         -EINVAL);
        shmb_test_copier_down(&r);
    }
    shmb_transfer_config_t c = small();
    shmb_transfer_run_t r;
    shmb_test_copier_up(&r, &c, 65536, 65536, why, sizeof(why));
    uint64_t done = 0;
    for (int part = SHMB_TRANSFER_REQUEST_PATH; part < SHMB_TRANSFER_PARTS; part++)
        assert_int_equal(shmb_transfer_bench_copy(&r, (shmb_transfer_part_t)part, SHMB_COPY_MEMCPY, 4096, 0, &done),
                         -EINVAL);
    shmb_test_copier_down(&r);
    assert_null(shmb_transfer_part_name(SHMB_TRANSFER_COPY));
    assert_string_equal(shmb_transfer_part_name(SHMB_TRANSFER_REQUEST), "request");
    assert_string_equal(shmb_transfer_part_name(SHMB_TRANSFER_SUBMIT), "submit");
}

/* ---- the object hand-off (src/transfer/transfer_handoff.c) ---- */

static void hooks_off(void)
{
    shmb_handoff_bench_wrong_tag = 0;
    shmb_handoff_bench_wrong_byte = 0;
    shmb_handoff_bench_lost_return = 0;
    shmb_handoff_bench_wrong_return = 0;
}

/* Runs c with *hook = at, which must fail its hand-off check: -EPROTO, why naming what, nothing left. */
static void fails_with(const shmb_transfer_config_t *c, uint64_t *hook, uint64_t at, const char *what)
{
    shmb_rows_t rows = {0};
    *hook = at;
    char why[256] = "";
    const int ret = shmb_transfer_bench_run(c, &rows, why, sizeof(why));
    hooks_off();
    shmb_rows_free(&rows); /* the rows before the failed check: the main prints none */
    assert_int_equal(ret, -EPROTO);
    if (!strstr(why, what))
        fail_msg("expected \"%s\" in: %s", what, why);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* SHM-jemalloc's write path fails on a wrong tag, payload byte, lost or wrong return, or copy_out byte. */
static void test_write_path_planted_faults(void **state)
{
    shmb_transfer_config_t c = small();
    c.max_transfer_size_kb = 4;
    c.translate = 1;
    c.system = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    c.num_segments = 10;
    fails_with(&c, &shmb_handoff_bench_wrong_tag, 1, "not the lender's tag");
    fails_with(&c, &shmb_handoff_bench_wrong_byte, 1, "payload of 4096 bytes differs at offset 2048");
    fails_with(&c, &shmb_handoff_bench_lost_return, 1, "objects were freed and");
    fails_with(&c, &shmb_handoff_bench_wrong_return, 1, "hand-off 0: the return failed");
    /* copy_out's object follows the request's check, its batch of one and the 20 timed */
    c.count_given = 1;
    fails_with(&c, &shmb_handoff_bench_wrong_byte, 1 + 1 + 20 + 1,
               "memcpy copy of 4096 bytes (before timing): first differing byte at offset 2048");
}

/* --zero_copy: paired rows at sizes x4; refused without --systems; a wrong tag or lost return fails the run. */
static void test_zero_copy(void **state)
{
    static const char *const systems[] = {"mooncake", "flowipc_classic", "flowipc_jemalloc", "mooncake_control"};
    shmb_transfer_config_t c = small();
    c.max_transfer_size_kb = 64;
    c.num_segments = 10;
    c.zero_copy = 1;
    c.nsystems = 4;
    c.systems[0] = c.systems[3] = SHMB_SYSTEM_MOONCAKE;
    c.systems[1] = SHMB_SYSTEM_FLOWIPC_CLASSIC;
    c.systems[2] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 3 * (4 + 3)); /* 4, 16, 64 KB */
    for (size_t i = 0; i < rows.n; i++) {
        char want[160];
        const uint64_t kb = 4u << (2 * (i / 7));
        const size_t k = i % 7;
        if (k < 4)
            snprintf(want, sizeof(want), "shm_transfer/zero_copy/size_kb:%llu/system:%s", (unsigned long long)kb,
                     systems[k]);
        else
            snprintf(want, sizeof(want), "shm_transfer/zero_copy/size_kb:%llu/system:%s/vs:mooncake",
                     (unsigned long long)kb, systems[k - 3]);
        shmb_test_assert_row_name("shm_transfer", &rows.v[i], want);
        assert_true(rows.v[i].iterations > 0);
    }
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    c.max_transfer_size_kb = 4;
    fails_with(&c, &shmb_handoff_bench_wrong_tag, 1, "not the lender's tag");
    fails_with(&c, &shmb_handoff_bench_lost_return, 1, "flowipc_jemalloc: after");
    fails_with(&c, &shmb_handoff_bench_wrong_return, 1, "flowipc_jemalloc: hand-off 0: the return failed");
    c.nsystems = 0;
    shmb_test_transfer_refused(&c, -EINVAL);
}

/* ---- with a peer (src/transfer/transfer_peer.c) ---- */

static shmb_peer_t start_peer(void)
{
    shmb_peer_t peer;
    opens->attaches = 0;
    assert_int_equal(shmb_transfer_bench_peer_start(&peer, PREFIX), 0);
    return peer;
}

static void stop_peer(shmb_peer_t *peer)
{
    assert_int_equal(shmb_peer_stop(peer), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* The peer attaches src and dst by name and copies: the in-process rows, verified; a second run reuses it. */
static void test_peer_rows(void **state)
{
    shmb_peer_t peer = start_peer();
    shmb_transfer_config_t c = small();
    c.run[SHMB_COPY_LOOP] = 1;
    c.peer = &peer;
    c.time_per_size_ms = 100000;
    shmb_rows_t rows = {0}, local = {0};
    char why[256] = "";
    for (int rep = 0; rep < 2; rep++) {
        c.repetition = rep;
        assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), 0);
        assert_int_equal(opens->attaches, 2 * (rep + 1)); /* src and dst, each run */
    }
    assert_int_equal(shmb_test_count_ours(NULL, 0), 1); /* the control segment only: no src or dst left */
    stop_peer(&peer);
    c.peer = NULL;
    c.repetition = 0;
    assert_int_equal(shmb_transfer_bench_run(&c, &local, why, sizeof(why)), 0);
    assert_int_equal(rows.n, 2 * local.n);
    for (size_t i = 0; i < rows.n; i++) {
        const shmb_row_t *p = &rows.v[i], *l = &local.v[i % local.n];
        assert_string_equal(p->variant, l->variant);
        assert_string_equal(p->step, l->step);
        assert_int_equal(p->arg, l->arg);
        assert_int_equal(p->repetition, (int)(i / local.n));
        assert_int_equal(p->iterations, 20);
        assert_true(p->ns.p50 > 0);
    }
    check_rates(&rows);
    shmb_rows_free(&rows);
    shmb_rows_free(&local);
}

/* 4 KB transfers per batch (a sample lasts 2 us at least): about 128 in a release build, 1 sanitized. */
static uint64_t transfers_per_batch(void)
{
    shmb_transfer_config_t c = small();
    c.max_transfer_size_kb = 4;
    c.num_transfers = 1 << 14;
    c.timer_overhead_ns = 0;
    c.time_per_size_ms = 1e6;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    const uint64_t per_batch = c.num_transfers / rows.v[0].ns.count;
    shmb_rows_free(&rows);
    return per_batch ? per_batch : 1;
}

/* More samples than a reply holds come back whole (the count raised x4, at most thrice, until they do). */
static void test_peer_many_samples(void **state)
{
    const uint64_t per_reply = SHMB_TRANSFER_PEER_DATA_BYTES / sizeof(double);
    shmb_peer_t peer = start_peer();
    shmb_transfer_config_t c = small();
    c.peer = &peer;
    c.max_transfer_size_kb = 4;
    c.num_transfers = 5 * per_reply / 2 * transfers_per_batch();
    c.timer_overhead_ns = 0; /* the shortest batches: the most samples */
    c.time_per_size_ms = 1e6;
    shmb_rows_t rows = {0};
    char why[256] = "";
    for (int tries = 0;; tries++, c.num_transfers *= 4) {
        assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), 0);
        assert_int_equal(rows.n, 1);
        assert_int_equal(rows.v[0].iterations, c.num_transfers);
        if (rows.v[0].ns.count > per_reply)
            break;
        if (tries == 3)
            fail_msg("%zu samples fit in one reply (%llu): the test tells nothing", rows.v[0].ns.count,
                     (unsigned long long)per_reply);
        shmb_rows_free(&rows);
    }
    stop_peer(&peer);
    shmb_rows_free(&rows);
}

/* The peer's team, and the request and its parts in the peer, through each system. */
static void test_peer_threads_and_systems(void **state)
{
    shmb_peer_t peer = start_peer();
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        shmb_transfer_config_t c = small();
        c.peer = &peer;
        c.threads = 2;
        c.translate = 1;
        c.system = (shmb_system_t)s;
        c.num_segments = 10;
        c.max_transfer_size_kb = 64;
        shmb_rows_t rows = shmb_test_transfer_rows(&c);
        const size_t n = PER_SIZE;
        assert_int_equal(rows.n, 5 * n);
        for (size_t i = 0; i < 5; i++)
            check_request_rows(&rows, n * i, 4u << i, 2, s);
        shmb_rows_free(&rows);
    }
    stop_peer(&peer);
}

/* The peer's writes are checked here: a decoy dst of the same size fails the run, one of another size too. */
static void test_peer_checked(void **state)
{
    static const size_t decoy_kb[] = {64, 32};
    for (int k = 0; k < 2; k++) {
        int fd = shm_open(DECOY, O_CREAT | O_EXCL | O_RDWR, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)decoy_kb[k] * 1024), 0);
        close(fd);
        shmb_peer_t peer = start_peer();
        opens->redirect = 1;
        shmb_transfer_config_t c = small();
        c.peer = &peer;
        c.max_transfer_size_kb = 64;
        shmb_rows_t rows = {0};
        char why[256] = "";
        shmb_error_clear();
        int ret = shmb_transfer_bench_run(&c, &rows, why, sizeof(why));
        opens->redirect = 0;
        shm_unlink(DECOY);
        assert_int_equal(ret, -EPROTO);
        assert_int_equal(rows.n, 0);
        if (k == 0) {
            assert_string_equal(why, "memcpy copy of 4096 bytes (before timing): first differing byte at offset 0");
        } else {
            assert_non_null(shmb_error_last()->call);
            assert_string_equal(shmb_error_last()->call, "fstat size check");
            assert_non_null(strstr(shmb_error_last()->object, ": 32768 bytes, expected 65536"));
        }
        stop_peer(&peer);
    }
}

/* Cold rows in the peer: each fresh segment attached by name there, checked here; slower than warm. */
static void test_peer_cold(void **state)
{
    shmb_peer_t peer = start_peer();
    shmb_transfer_config_t c = small();
    c.peer = &peer;
    c.cold = 1;
    c.verify = 1;
    c.max_transfer_size_kb = 256;
    c.time_per_size_ms = 600000; /* every transfer, also on a slow (sanitized) build */
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 7 * 2);
    assert_int_equal(opens->attaches, 2 + 7 * 20); /* src, dst, then each fresh segment */
    check_rates(&rows);
    const shmb_row_t *cold = shmb_rows_find(&rows, "memcpy", "cold", 256, 0);
    assert_non_null(cold);
    assert_int_equal(cold->iterations, 20);
    assert_true(cold->speedup < 1.0);
    stop_peer(&peer);
    shmb_rows_free(&rows);
}

/* The peer's handler refuses commands out of order or range, then serves a run: nothing of them stays. */
static void test_peer_bad_commands(void **state)
{
    shmb_peer_t peer = start_peer();
    uint64_t res[SHMB_PEER_RESULTS];
    struct { uint32_t op; uint64_t a0, a1, a2; const char *name; int want; } bad[] = {
        {SHMB_TRANSFER_OP_SETUP, 0, 0, 0, NULL, -EINVAL},             /* nothing attached */
        {SHMB_TRANSFER_OP_COPY, SHMB_COPY_MEMCPY, 4096, 0, NULL, -EINVAL}, /* not set up */
        {SHMB_TRANSFER_OP_COLD, SHMB_COPY_MEMCPY, 4096, 0, DECOY, -EINVAL},
        {SHMB_TRANSFER_OP_SAMPLES, 0, 0, 0, NULL, -EINVAL},           /* none taken */
        {SHMB_TRANSFER_OP_ATTACH, 2, 4096, 0, DECOY, -EINVAL},        /* neither src nor dst */
        {SHMB_TRANSFER_OP_ATTACH, 0, 0, 0, DECOY, -EINVAL},           /* no bytes */
        {SHMB_TRANSFER_OP_ATTACH, 0, 4096, 0, DECOY, -ENOENT},        /* no such segment */
        {SHMB_TRANSFER_OP_DETACH + 1, 0, 0, 0, NULL, -ENOSYS},        /* no such command (base/peer.c) */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int ret = shmb_peer_command(&peer, bad[i].op, bad[i].a0, bad[i].a1, bad[i].a2, 0, bad[i].name, res);
        if (ret != bad[i].want)
            fail_msg("command %zu (op %u): %d, expected %d", i, bad[i].op, ret, bad[i].want);
    }
    /* attached, a config the run refuses is refused in the peer too */
    int fd = shm_open(DECOY, O_CREAT | O_EXCL | O_RDWR, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    close(fd);
    for (uint64_t which = 0; which < 2; which++)
        assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_ATTACH, which, 4096, 0, 0, DECOY, res), 0);
    shm_unlink(DECOY);
    shmb_transfer_config_t c = small();
    c.threads = 0;
    memcpy(peer.data, &c, sizeof(c));
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_SETUP, 0, 0, 0, 0, NULL, res), -EINVAL);
    c = small();
    c.translate = 1;
    c.num_segments = 10;
    c.cold = 1;
    memcpy(peer.data, &c, sizeof(c));
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_SETUP, 0, 0, 0, 0, NULL, res), -EINVAL);
    /* set up, copies outside the method list, the buffers or the two modes */
    c = small();
    memcpy(peer.data, &c, sizeof(c));
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_SETUP, 0, 0, 0, 0, NULL, res), 0);
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_SETUP, 0, 0, 0, 0, NULL, res), -EINVAL);
    const uint64_t copies[][3] = {{SHMB_COPY_METHODS, 4096, 0}, {SHMB_COPY_MEMCPY, 0, 0},
                                  {SHMB_COPY_MEMCPY, 8192, 0}, {SHMB_COPY_MEMCPY, 4096, 2}};
    for (size_t i = 0; i < 4; i++)
        if (shmb_peer_command(&peer, SHMB_TRANSFER_OP_COPY, copies[i][0], copies[i][1], copies[i][2], 0, NULL,
                              res) != -EINVAL)
            fail_msg("copy %zu was not refused", i);
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_COLD, SHMB_COPY_MEMCPY, 8192, 0, 0, DECOY, res),
                     -EINVAL);
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_COPY, SHMB_COPY_MEMCPY, 4096, 0, 0, NULL, res), 0);
    assert_int_equal(res[0], 1);
    assert_int_equal(res[1], 0); /* one untimed transfer: no sample to fetch */
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_SAMPLES, 0, 0, 0, 0, NULL, res), -EINVAL);
    assert_int_equal(shmb_peer_command(&peer, SHMB_TRANSFER_OP_DETACH, 0, 0, 0, 0, NULL, res), 0);
    c = small();
    c.peer = &peer;
    c.max_transfer_size_kb = 8;
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 2);
    stop_peer(&peer);
    shmb_rows_free(&rows);
}

/* A peer that died: -EPIPE (recorded as the peer process), nothing left. */
static void test_peer_dead(void **state)
{
    shmb_peer_t peer = start_peer();
    shmb_transfer_config_t c = small();
    c.peer = &peer;
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(kill(peer.pid, SIGKILL), 0);
    assert_int_equal(shmb_transfer_bench_run(&c, &rows, why, sizeof(why)), -EPIPE);
    assert_string_equal(shmb_error_last()->call, "peer process");
    assert_non_null(strstr(shmb_error_last()->object, "killed by signal 9"));
    assert_int_equal(rows.n, 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 1); /* the control segment, until stop */
    assert_int_equal(shmb_peer_stop(&peer), -EPIPE);
    shmb_test_assert_clean();
    /* the control segment (a head page and the data area) is in the space a run needs */
    uint64_t with = 0, without = 0;
    assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &with), 0);
    c.peer = NULL;
    assert_int_equal(shmb_transfer_bench_shm_bytes(&c, &without), 0);
    assert_true(with - without == (uint64_t)sysconf(_SC_PAGESIZE) + SHMB_TRANSFER_PEER_DATA_BYTES);
}

int main(void)
{
    if (!shmb_test_shm_writable())
        return 77;
    opens = mmap(NULL, sizeof(*opens), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (opens == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    opens->test_pid = getpid();
    snprintf(decoy, sizeof(decoy), "%sdecoy", shmb_test_prefix_init("/shmb_test_transfer_"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_rows_and_cleanup),
        cmocka_unit_test(test_exact_transfers),
        cmocka_unit_test(test_one_small_size),
        cmocka_unit_test(test_cold_in_full_shm),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_translated),
        cmocka_unit_test(test_paired),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_mooncake_set_up),
        cmocka_unit_test(test_parts_planted_fault),
        cmocka_unit_test(test_engine_per_design),
        cmocka_unit_test(test_write_path_planted_faults),
        cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_peer_rows),
        cmocka_unit_test(test_peer_many_samples),
        cmocka_unit_test(test_peer_threads_and_systems),
        cmocka_unit_test(test_peer_checked),
        cmocka_unit_test(test_peer_cold),
        cmocka_unit_test(test_peer_bad_commands),
        cmocka_unit_test(test_peer_dead),
    };
    return shmb_test_run(tests, NULL, NULL);
}
