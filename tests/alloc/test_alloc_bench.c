/* alloc_bench through shmb_alloc_bench_run: sizes, space, rows, threads, the peer, every block
 * checked (the pool table entry by entry: test_alloc_pool.c). */
#include <dirent.h>
#include <signal.h>

#include "helpers.h"

#include "alloc/alloc_internal.h"
#include "shmbench/alloc_bench.h"
#include "shmbench/alloc_peer.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/segment.h"
#include "shmbench/upstream.h"

#define PREFIX shmb_test_prefix()
/* Operations per pool step: three rounds of the 2048-block working set, the
 * last one partly needed (the default, SHMB_ALLOC_MIN_OPS, takes 49 rounds). */
#define MIN_OPS 5000
#define ROUNDS 3

/* What the last run kept and said. */
static uint64_t kept;
static char why[256];

/* shmb_alloc_bench_run (with a hook: _hooked) into rows; kept and why afresh. */
static int run(const shmb_alloc_config_t *c, const shmb_alloc_hook_t *hook, shmb_rows_t *rows)
{
    kept = 0;
    why[0] = '\0';
    if (!hook)
        return shmb_alloc_bench_run(c, rows, &kept, why, sizeof(why));
    return shmb_alloc_bench_run_hooked(c, hook, rows, &kept, why, sizeof(why));
}

/* The rows of a run of c that must succeed (else the case fails naming why); kept and why afresh. */
static shmb_rows_t run_ok(const shmb_alloc_config_t *c)
{
    shmb_rows_t rows = {0};
    const int ret = run(c, NULL, &rows);
    if (ret != 0)
        fail_msg("run: %d: %s", ret, why);
    return rows;
}

/* base with `change` made is refused, and makes no row. */
#define REFUSED(base, change)                                                                                     \
    do {                                                                                                          \
        shmb_alloc_config_t c_ = (base);                                                                          \
        shmb_rows_t rows_ = {0};                                                                                  \
        change;                                                                                                   \
        if (run(&c_, NULL, &rows_) != -EINVAL || rows_.n != 0)                                                    \
            fail_msg("not refused: %s", #change);                                                                 \
    } while (0)

static shmb_alloc_config_t small_config(void)
{
    shmb_alloc_config_t c;
    memset(&c, 0, sizeof(c));
    c.num_iterations = 8;
    c.min_size_kb = 4;
    c.max_size_kb = 12;
    c.min_ops = MIN_OPS;
    c.cleanup = 1;
    c.run[SHMB_ALLOC_POSIX] = 1;
    c.run[SHMB_ALLOC_ARENA] = 1;
    c.seed = 1;
    c.shm_prefix = PREFIX;
    return c;
}

static void test_sizes(void **state)
{
    uint64_t s[SHMB_ALLOC_MAX_SIZES];
    assert_int_equal(shmb_alloc_bench_sizes(4, 1024, s, SHMB_ALLOC_MAX_SIZES), 9);
    assert_true(s[0] == 4 && s[1] == 8 && s[8] == 1024);
    assert_int_equal(shmb_alloc_bench_sizes(4, 1000, s, SHMB_ALLOC_MAX_SIZES), 9);
    assert_true(s[7] == 512 && s[8] == 1000); /* max added when doubling skips it */
    assert_int_equal(shmb_alloc_bench_sizes(7, 7, s, SHMB_ALLOC_MAX_SIZES), 1);
    assert_true(s[0] == 7);
    assert_int_equal(shmb_alloc_bench_sizes(1, 2, s, SHMB_ALLOC_MAX_SIZES), 2);
    assert_int_equal(shmb_alloc_bench_sizes(0, 4, s, SHMB_ALLOC_MAX_SIZES), -EINVAL);
    assert_int_equal(shmb_alloc_bench_sizes(8, 4, s, SHMB_ALLOC_MAX_SIZES), -EINVAL);
    assert_int_equal(shmb_alloc_bench_sizes(1, 1024, s, 3), -EINVAL); /* cap too small */
    /* no overflow near the top of the range */
    assert_int_equal(shmb_alloc_bench_sizes(UINT64_MAX / 2 + 1, UINT64_MAX, s, 4), 2);
    assert_true(s[1] == UINT64_MAX);
}

static void test_arena_blocks_and_space(void **state)
{
    assert_true(shmb_alloc_bench_arena_blocks(1) == SHMB_ALLOC_ARENA_MIN_BATCH);
    assert_true(shmb_alloc_bench_arena_blocks(5000) == 5000);
    shmb_alloc_config_t c = small_config();
    uint64_t bytes = 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 0); /* nothing is touched */
    c.touch = 1;
    c.max_size_kb = 1024;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == SHMB_ALLOC_ARENA_MIN_BATCH * 1024ull * 1024); /* the largest pool, alone */
    c.max_size_kb = SHMB_ALLOC_MAX_SIZE_KB;
    c.num_iterations = SHMB_ALLOC_MAX_ITERATIONS;
    c.run[SHMB_ALLOC_ARENA] = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), -EOVERFLOW);
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 0, &bytes), -EINVAL);
}

/* --system's allocators: each system's, by name; nothing else is a system. */
static void test_system_kind(void **state)
{
    assert_string_equal(shmb_alloc_system_allocators("mooncake"), "posix,offset,offset_bare");
    assert_string_equal(shmb_alloc_system_allocators("flowipc_classic"), "bipc_object,bipc");
    assert_string_equal(shmb_alloc_system_allocators("flowipc_jemalloc"), "jemalloc_object,jemalloc");
    assert_null(shmb_alloc_system_allocators("jemalloc"));
    assert_null(shmb_alloc_system_allocators("linear"));
    assert_null(shmb_alloc_system_allocators(""));
    assert_null(shmb_alloc_system_allocators(NULL));
}

static void test_space_counts_what_is_kept(void **state)
{
    shmb_alloc_config_t c = small_config(); /* sizes 4, 8, 12 KB; 8 allocations each */
    c.run[SHMB_ALLOC_ARENA] = 0;
    c.touch = 1;
    uint64_t bytes = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 3, &bytes), 0);
    assert_true(bytes == 12 * 1024); /* one buffer alive at a time, repetitions one after another */
    c.cleanup = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 8 * (4 + 8 + 12) * 1024ull); /* every kept buffer's pages */
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 3, &bytes), 0);
    assert_true(bytes == 3 * 8 * (4 + 8 + 12) * 1024ull); /* and every repetition's */
    c.run[SHMB_ALLOC_ARENA] = 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 8 * 24 * 1024ull + SHMB_ALLOC_ARENA_MIN_BATCH * (4 + 8 + 16) * 1024ull);
    c.run[SHMB_ALLOC_ARENA] = 0;
    c.run[SHMB_ALLOC_BIPC] = 1;
    c.max_size_kb = SHMB_ALLOC_MAX_SIZE_KB; /* 2^27 blocks of 1 TiB: the pool would wrap */
    c.num_iterations = SHMB_ALLOC_MAX_ITERATIONS;
    c.touch = 0;                            /* checked whether its pages are written or not */
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), -EOVERFLOW);
    c.run[SHMB_ALLOC_BIPC] = 0;
    c.run[SHMB_ALLOC_ARENA] = 1;
    c.max_size_kb = SHMB_ALLOC_MAX_SIZE_KB; /* the arena cannot hold 2048 blocks of 1 TiB */
    c.num_iterations = 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), -EINVAL);

    /* a system's or a paired run's register rows map 1000 blocks of the largest size at once: /dev/shm
     * must hold them, though no page is written */
    c = small_config();
    c.run[SHMB_ALLOC_ARENA] = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 0); /* posix alone, no touch: nothing written */
    c.system_rows = 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 1000 * 12 * 1024ull);
    c.system_rows = 0;
    shmb_test_pair_with(&c.nsystems, c.systems, c.system_names, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 1000 * 12 * 1024ull);
}

static int has_row(const shmb_rows_t *rows, const char *variant, const char *step, uint64_t kb)
{
    return shmb_rows_find(rows, variant, step, kb, 0) != NULL;
}

static void test_default_rows(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.run[SHMB_ALLOC_OFFSET] = c.run[SHMB_ALLOC_OFFSET_BARE] = 1;
    shmb_rows_t rows = run_ok(&c);
    assert_true(kept == 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    /* sizes 4, 8, 12; posix 6 steps, offset, offset_bare and arena 4 steps each */
    assert_int_equal(rows.n, 3 * 18);
    static const char *posix[] = {"shm_open", "ftruncate", "mmap", "close", "total", "cleanup"};
    static const char *pool[] = {"register", "alloc", "free", "alloc_reuse"};
    for (int i = 0; i < 6; i++)
        assert_true(has_row(&rows, "posix", posix[i], 12));
    for (int i = 0; i < 4; i++)
        assert_true(has_row(&rows, "arena", pool[i], 12) && has_row(&rows, "offset", pool[i], 12));
    assert_false(has_row(&rows, "posix", "touch", 4));
    const shmb_row_t *total = shmb_rows_find(&rows, "posix", "total", 4, 0);
    assert_true(total->iterations == 8 && total->ns.count == 8);
    assert_true(total->ns.mean > 0);
    /* total is createSharedMemory: shm_open + ftruncate + mmap + close, sample by sample */
    double sum = 0;
    for (int i = 0; i < 4; i++)
        sum += shmb_rows_find(&rows, "posix", posix[i], 4, 0)->ns.mean;
    assert_float_equal(total->ns.mean, sum, 1e-6 * sum);
    /* a block's steps against Mooncake's like (the arena, an allocator: the bare OffsetAllocator), a pool
     * against its registration (posix total) */
    const shmb_row_t *alloc = shmb_rows_find(&rows, "arena", "alloc", 4, 0);
    const shmb_row_t *offset = shmb_rows_find(&rows, "offset_bare", "alloc", 4, 0);
    assert_true(alloc->iterations == ROUNDS * SHMB_ALLOC_ARENA_MIN_BATCH && alloc->ns.count == ROUNDS);
    assert_float_equal(alloc->speedup, offset->ns.p50 / alloc->ns.p50, 1e-9);
    const shmb_row_t *free_row = shmb_rows_find(&rows, "arena", "free", 4, 0);
    assert_float_equal(free_row->speedup,
                       shmb_rows_find(&rows, "offset_bare", "free", 4, 0)->ns.p50 / free_row->ns.p50, 1e-9);
    assert_true(offset->speedup == 0 && shmb_rows_find(&rows, "offset", "free", 4, 0)->speedup == 0);
    for (int k = SHMB_ALLOC_OFFSET; k <= SHMB_ALLOC_ARENA; k++) {
        const shmb_row_t *reg = shmb_rows_find(&rows, shmb_alloc_kind_name((shmb_alloc_kind_t)k), "register", 4, 0);
        assert_float_equal(reg->speedup, total->ns.p50 / reg->ns.p50, 1e-9);
    }
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

static void test_touch_and_single_allocator(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.touch = 1;
    c.run[SHMB_ALLOC_ARENA] = 0;
    shmb_rows_t rows = run_ok(&c);
    assert_true(has_row(&rows, "posix", "touch", 8));
    assert_false(has_row(&rows, "arena", "alloc", 8));
    shmb_rows_free(&rows);

    c.run[SHMB_ALLOC_POSIX] = 0;
    c.run[SHMB_ALLOC_ARENA] = 1;
    rows = run_ok(&c);
    assert_true(has_row(&rows, "arena", "touch", 8));
    assert_true(has_row(&rows, "arena", "touch_reuse", 8));
    assert_false(has_row(&rows, "posix", "total", 8));
    assert_true(shmb_rows_find(&rows, "arena", "alloc", 8, 0)->speedup == 0); /* no baseline */
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_rows_free(&rows);
}

static void test_mmap_only(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.measure_mmap_only = 1;
    c.run[SHMB_ALLOC_ARENA] = 0;
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, 3 * 2);
    assert_true(has_row(&rows, "posix", "mmap", 4));
    assert_true(has_row(&rows, "posix", "cleanup", 4));
    assert_false(has_row(&rows, "posix", "shm_open", 4));
    assert_false(has_row(&rows, "posix", "total", 4));
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_rows_free(&rows);
}

static void test_no_cleanup_keeps_segments(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.cleanup = 0;
    shmb_rows_t rows = run_ok(&c);
    /* 3 sizes x 8 posix segments + 3 arena pools, every one in /dev/shm */
    assert_true(kept == 3 * 8 + 3);
    assert_int_equal(shmb_test_remove_ours(), 3 * 8 + 3);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    assert_false(has_row(&rows, "posix", "cleanup", 4));
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

/* Flow-IPC's allocators: the arena's rows, blocks checked, speedup against
 * Mooncake's offset per block and posix total per pool, nothing left behind. */
static void test_pool_allocators(void **state)
{
    static const shmb_alloc_kind_t kinds[] = {SHMB_ALLOC_BIPC, SHMB_ALLOC_JEMALLOC, SHMB_ALLOC_JEMALLOC_TCACHE,
                                              SHMB_ALLOC_BIPC_OBJECT, SHMB_ALLOC_JEMALLOC_OBJECT};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        shmb_alloc_config_t c = small_config();
        c.run[SHMB_ALLOC_OFFSET] = c.run[SHMB_ALLOC_OFFSET_BARE] = 1;
        /* the object layers against offset (OffsetBufferAllocator), the allocators against offset_bare */
        const char *like = k < 3 ? "offset_bare" : "offset";
        c.run[kinds[k]] = 1;
        c.touch = 1;
        shmb_rows_t rows = run_ok(&c);
        const char *name = shmb_alloc_kind_name(kinds[k]);
        static const char *steps[] = {"register", "alloc", "free", "alloc_reuse", "touch", "touch_reuse"};
        for (int i = 0; i < 6; i++) {
            assert_true(has_row(&rows, name, steps[i], 8));
            const shmb_row_t *row = shmb_rows_find(&rows, name, steps[i], 12, 0);
            const shmb_row_t *base = i == 0 ? shmb_rows_find(&rows, "posix", "total", 12, 0)
                                            : shmb_rows_find(&rows, like, steps[i], 12, 0);
            if (strstr(row->note, "pages in memory before") && strncmp(row->note, "0/", 2) != 0) /* no first touch */
                assert_true(row->speedup == 0);
            else
                assert_float_equal(row->speedup, base->ns.p50 / row->ns.p50, 1e-9);
        }
        /* offset never writes in its range: a fresh block's pages are all fresh; bipc's block header
         * sits in the page of its first byte, so a 4 KB block's only page was faulted by the allocator */
        char fresh[48];
        snprintf(fresh, sizeof(fresh), "0/%d pages in memory before", SHMB_ALLOC_ARENA_MIN_BATCH);
        assert_string_equal(shmb_rows_find(&rows, "offset", "touch", 4, 0)->note, fresh);
        const shmb_row_t *touch = shmb_rows_find(&rows, name, "touch", 4, 0);
        if (kinds[k] == SHMB_ALLOC_BIPC) {
            char want[48];
            snprintf(want, sizeof(want), "%d/%d pages in memory before", SHMB_ALLOC_ARENA_MIN_BATCH,
                     SHMB_ALLOC_ARENA_MIN_BATCH);
            assert_string_equal(touch->note, want);
            assert_true(touch->speedup == 0);
        }
        const shmb_row_t *alloc = shmb_rows_find(&rows, name, "alloc", 12, 0);
        assert_true(alloc->iterations == ROUNDS * SHMB_ALLOC_ARENA_MIN_BATCH && alloc->ns.count == ROUNDS);
        shmb_test_assert_clean();
        shmb_rows_free(&rows);
    }
}

static const char *const system_steps[] = {"register", "register", "register", "alloc",
                                           "free",     "alloc_reuse", "alloc_bare", "free_bare"};
#define SYSTEM_STEPS 8

/* One system's rows: step names alone, the same keys in the same order for
 * every system (register per N: size_kb:S/buffers:N, a deployment total per
 * N, 20 samples: SHMB_ALLOC_PAIRED_MIN_ROUNDS), a dash row (0 iterations)
 * where a system has no such step, no speedup. want[i] of the block step
 * 3 + i: '0' a dash, '+' measured, '=' ROUNDS batches of the working set,
 * '?' either. A system is posix and its own two layers at most. */
static void test_system_rows(void **state)
{
    static const uint64_t sizes[] = {4, 8, 12};
    static const char *const buffers[] = {"10", "100", "1000"};
    static const struct {
        const char *what;
        unsigned runs; /* 1 << kind */
        const char *want;
    } cases[] = {
        {"posix alone: N buffers' createSharedMemory", 1u << SHMB_ALLOC_POSIX, "00000"},
        {"mooncake: the object layer offset's, the bare offset_bare's",
         1u << SHMB_ALLOC_POSIX | 1u << SHMB_ALLOC_OFFSET | 1u << SHMB_ALLOC_OFFSET_BARE, "====="},
        {"flowipc_classic: one pool of N blocks, alloc = construct, alloc_bare = bipc",
         1u << SHMB_ALLOC_BIPC | 1u << SHMB_ALLOC_BIPC_OBJECT, "+++++"},
        {"its object layer alone: bare rows dashes, register still the pool's", 1u << SHMB_ALLOC_BIPC_OBJECT,
         "+??00"},
    };
    shmb_alloc_config_t c = small_config();
    c.system_rows = 1;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int a = 0; a < SHMB_ALLOC_KINDS; a++)
            c.run[a] = (cases[k].runs >> a) & 1;
        shmb_rows_t rows = run_ok(&c);
        assert_int_equal(rows.n, 3 * SYSTEM_STEPS);
        for (size_t i = 0; i < rows.n; i++) {
            const shmb_row_t *r = &rows.v[i];
            const size_t q = i % SYSTEM_STEPS;
            char arg[32] = "";
            if (q < 3)
                snprintf(arg, sizeof(arg), "%llu/buffers:%s", (unsigned long long)sizes[i / SYSTEM_STEPS], buffers[q]);
            assert_string_equal(r->variant, "");
            assert_string_equal(r->step, system_steps[q]);
            assert_string_equal(r->arg_text, arg);
            assert_true(r->arg == sizes[i / SYSTEM_STEPS] && r->speedup == 0);
            const char want = q < 3 ? 'R' : cases[k].want[q - 3];
            if ((want == 'R' && (r->iterations != 20 || r->ns.count != 20)) || (want == '0' && r->iterations != 0) ||
                (want == '+' && r->iterations == 0) ||
                (want == '=' && r->iterations != ROUNDS * SHMB_ALLOC_ARENA_MIN_BATCH))
                fail_msg("%s: row %zu (%s): %llu iterations", cases[k].what, i, r->step,
                         (unsigned long long)r->iterations);
        }
        shmb_rows_free(&rows);
    }
    REFUSED(c, c_.run[SHMB_ALLOC_OFFSET] = 1);
    REFUSED(c, c_.run[SHMB_ALLOC_JEMALLOC] = 1);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* --threads=2: every allocator's rows carry threads = 2, iterations = 2 x
 * each thread's operations, samples of both threads, an aggregate rate no
 * higher than two threads at their mean could reach; nothing left behind. */
static void test_threads_rows(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.max_size_kb = 8; /* sizes 4 and 8 */
    c.threads = 2;
    for (int k = 0; k < SHMB_ALLOC_KINDS; k++)
        c.run[k] = 1;
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, 2 * (6 + 8 * 4));
    for (size_t i = 0; i < rows.n; i++)
        assert_int_equal(rows.v[i].threads, 2);
    const uint64_t per_thread = SHMB_ALLOC_ARENA_MIN_BATCH; /* blocks in a working set */
    const uint64_t rounds = ROUNDS;
    static const char *steps[] = {"alloc", "free", "alloc_reuse"};
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        const char *name = shmb_alloc_kind_name((shmb_alloc_kind_t)k);
        for (int i = 0; i < 3; i++) {
            const shmb_row_t *r = shmb_rows_find(&rows, name, steps[i], 8, 0);
            assert_non_null(r);
            assert_true(r->iterations == 2 * rounds * per_thread);
            assert_true(r->ns.count == 2 * rounds); /* one batch per round and thread */
            assert_true(r->items_per_second > 0);
            assert_true(r->items_per_second <= 2 * 1e9 / r->ns.mean * 1.000001);
        }
        const shmb_row_t *reg = shmb_rows_find(&rows, name, "register", 4, 0);
        /* the arena is single-threaded: one per thread, said on its rows; the others share one pool */
        assert_true(reg->ns.count == (k == SHMB_ALLOC_ARENA ? 2u : 1u));
        assert_string_equal(reg->note, k == SHMB_ALLOC_ARENA ? "one arena per thread" : "");
    }
    const shmb_row_t *total = shmb_rows_find(&rows, "posix", "total", 4, 0);
    assert_true(total->iterations == 2 * 8 && total->ns.count == 2 * 8);
    assert_true(total->items_per_second > 0 && total->items_per_second <= 2 * 1e9 / total->ns.mean * 1.000001);
    assert_true(shmb_rows_find(&rows, "posix", "cleanup", 4, 0)->items_per_second > 0);
    /* shm_open .. close run inside one phase: no aggregate rate of their own */
    assert_true(shmb_rows_find(&rows, "posix", "shm_open", 4, 0)->items_per_second == 0);
    assert_true(shmb_rows_find(&rows, "posix", "close", 4, 0)->items_per_second == 0);
    const shmb_row_t *alloc = shmb_rows_find(&rows, "bipc", "alloc", 4, 0);
    assert_float_equal(alloc->speedup, shmb_rows_find(&rows, "offset_bare", "alloc", 4, 0)->ns.p50 / alloc->ns.p50,
                       1e-9);
    alloc = shmb_rows_find(&rows, "bipc_object", "alloc", 4, 0);
    assert_float_equal(alloc->speedup, shmb_rows_find(&rows, "offset", "alloc", 4, 0)->ns.p50 / alloc->ns.p50, 1e-9);
    assert_true(kept == 0);
    shmb_test_assert_clean();
    shmb_rows_free(&rows);
}

static void test_threads_touch_mmap_only_and_kept(void **state)
{
    shmb_alloc_config_t c = small_config(); /* posix and arena, sizes 4, 8, 12 */
    c.threads = 2;
    c.touch = 1;
    shmb_rows_t rows = run_ok(&c);
    const shmb_row_t *touch = shmb_rows_find(&rows, "posix", "touch", 12, 0);
    assert_true(touch->iterations == 16 && touch->items_per_second > 0);
    touch = shmb_rows_find(&rows, "arena", "touch", 12, 0);
    assert_true(touch->iterations == 2 * SHMB_ALLOC_ARENA_MIN_BATCH && touch->items_per_second > 0);
    assert_non_null(shmb_rows_find(&rows, "arena", "touch_reuse", 12, 0));
    shmb_rows_free(&rows);

    c.touch = 0;
    c.measure_mmap_only = 1;
    c.run[SHMB_ALLOC_ARENA] = 0;
    rows = run_ok(&c);
    assert_int_equal(rows.n, 3 * 2);
    for (size_t i = 0; i < rows.n; i++)
        assert_true(rows.v[i].iterations == 16 && rows.v[i].threads == 2 &&
                    rows.v[i].items_per_second > 0); /* mmap and cleanup (munmap) */
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_rows_free(&rows);

    c.measure_mmap_only = 0;
    c.cleanup = 0; /* every thread's segments stay, and are counted */
    rows = run_ok(&c);
    assert_true(kept == 3 * 2 * 8);
    assert_int_equal(shmb_test_remove_ours(), 3 * 2 * 8);
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

/* Test hooks planting a wrong block among the threads' blocks. */
static void plant_overlap(void **blocks, uint64_t per_thread, int threads, void *arg)
{
    (void)arg;
    assert_int_equal(threads, 2);
    blocks[per_thread + 3] = blocks[5]; /* thread 1 holds thread 0's block */
}

static void plant_outside(void **blocks, uint64_t per_thread, int threads, void *arg)
{
    blocks[(uint64_t)(threads - 1) * per_thread] = arg;
}

static void test_threads_verification(void **state)
{
    static unsigned char not_shm[1 << 20];
    for (int k = SHMB_ALLOC_FIRST_POOL; k < SHMB_ALLOC_KINDS; k++) {
        shmb_alloc_config_t c = small_config();
        c.run[SHMB_ALLOC_POSIX] = c.run[SHMB_ALLOC_ARENA] = 0;
        c.run[k] = 1;
        c.max_size_kb = 4;
        c.threads = 2;
        shmb_alloc_hook_t hook = {.check = plant_overlap};
        shmb_rows_t rows = {0};
        assert_int_equal(run(&c, &hook, &rows), -EPROTO);
        /* a shared pool's block twice overlaps; an arena's block is outside another thread's arena */
        assert_non_null(strstr(why, k == SHMB_ALLOC_ARENA ? "outside its SHM" : "overlap"));
        assert_non_null(strstr(why, shmb_alloc_kind_name((shmb_alloc_kind_t)k)));
        assert_int_equal(rows.n, 0);

        hook = (shmb_alloc_hook_t){.check = plant_outside, .arg = not_shm};
        assert_int_equal(run(&c, &hook, &rows), -EPROTO);
        assert_non_null(strstr(why, "outside its SHM"));
        c.threads = 1; /* the one-thread path checks the same way */
        assert_int_equal(run(&c, &hook, &rows), -EPROTO);
        assert_non_null(strstr(why, "outside its SHM"));
        assert_int_equal(rows.n, 0);
        shmb_test_assert_clean();
    }
}

static void test_threads_space_and_bad(void **state)
{
    shmb_alloc_config_t c = small_config(); /* posix and arena, sizes up to 12 KB */
    c.touch = 1;
    c.threads = 3;
    uint64_t bytes = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    /* the largest at once: three arenas of 2048 blocks of 16 KB */
    assert_true(bytes == 3ull * SHMB_ALLOC_ARENA_MIN_BATCH * 16 * 1024);
    c.run[SHMB_ALLOC_ARENA] = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 3 * 12 * 1024); /* one buffer per thread */
    c.run[SHMB_ALLOC_BIPC] = 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), 0);
    assert_true(bytes == 3ull * SHMB_ALLOC_ARENA_MIN_BATCH * (12 * 1024 + 64) + (1u << 20)); /* one pool */
    c.threads = SHMB_ALLOC_MAX_THREADS + 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), -EINVAL);
    shmb_rows_t rows = {0};
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    c.threads = -1;
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    assert_int_equal(rows.n, 0);
}

/* --working_set sets the live blocks of every pool's round; with a peer,
 * at most SHMB_ALLOC_PEER_MAX_ROUNDS rounds; out of range refused. */
static void test_working_set(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.run[SHMB_ALLOC_POSIX] = 0;
    c.run[SHMB_ALLOC_OFFSET] = c.run[SHMB_ALLOC_JEMALLOC_TCACHE] = 1;
    c.max_size_kb = 4;
    assert_true(shmb_alloc_bench_working_set(&c) == SHMB_ALLOC_ARENA_MIN_BATCH);
    c.working_set = 8;
    assert_true(shmb_alloc_bench_working_set(&c) == 8);
    shmb_rows_t rows = run_ok(&c);
    static const char *pools[] = {"offset", "arena", "jemalloc_tcache"};
    for (int i = 0; i < 3; i++) {
        const shmb_row_t *r = shmb_rows_find(&rows, pools[i], "alloc", 4, 0);
        assert_true(r->ns.count == (MIN_OPS + 7) / 8 && r->iterations == r->ns.count * 8);
    }
    shmb_rows_free(&rows);
    uint64_t bytes = 0;
    c.working_set = SHMB_ALLOC_MAX_ITERATIONS + 1;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &bytes), -EOVERFLOW);
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    shmb_peer_t peer;
    c.peer = &peer; /* never started: refused before it is used */
    c.working_set = 1;
    c.min_ops = SHMB_ALLOC_PEER_MAX_ROUNDS + 1;
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    assert_int_equal(rows.n, 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

static void test_bad_config(void **state)
{
    REFUSED(small_config(), c_.num_iterations = 0);
    REFUSED(small_config(), c_.min_size_kb = 16);
    REFUSED(small_config(), c_.run[SHMB_ALLOC_POSIX] = c_.run[SHMB_ALLOC_ARENA] = 0); /* no allocator */
    REFUSED(small_config(), c_.min_ops = 0);
    REFUSED(small_config(), c_.min_ops = SHMB_ALLOC_MAX_MIN_OPS + 1);
}

/* min_ops sets the pools' rounds: enough of the working set to time at
 * least min_ops operations per step, one at the least; the default is
 * today's 100000; the most keeps the peer's batches within its limit. */
static void test_min_ops(void **state)
{
    assert_true(SHMB_ALLOC_MIN_OPS == 100000);
    assert_true(SHMB_ALLOC_MAX_MIN_OPS / SHMB_ALLOC_ARENA_MIN_BATCH <= SHMB_ALLOC_PEER_MAX_ROUNDS);
    const struct {
        uint64_t num_iterations, min_ops, rounds;
    } cases[] = {{8, 1, 1}, {8, 2048, 1}, {8, 2049, 2}, {3000, 5000, 2}, {3000, 6001, 3}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_alloc_config_t c = small_config();
        c.run[SHMB_ALLOC_POSIX] = 0;
        c.max_size_kb = 4;
        c.num_iterations = cases[i].num_iterations;
        c.min_ops = cases[i].min_ops;
        shmb_rows_t rows = run_ok(&c);
        const uint64_t n = shmb_alloc_bench_arena_blocks(c.num_iterations);
        static const char *steps[] = {"alloc", "free", "alloc_reuse"};
        for (int k = 0; k < 3; k++) {
            const shmb_row_t *r = shmb_rows_find(&rows, "arena", steps[k], 4, 0);
            assert_non_null(r);
            if (r->ns.count != cases[i].rounds || r->iterations != cases[i].rounds * n)
                fail_msg("case %zu, %s: %zu batches of %llu operations", i, steps[k], (size_t)r->ns.count,
                         (unsigned long long)r->iterations);
        }
        shmb_rows_free(&rows);
    }
}

/* A peer attaches and detaches every posix segment (a sample each); the space counts the tags and
 * the control segment; a peer with threads or measure_mmap_only is refused. */
static const char *const peer_steps[] = {"register",  "register", "register", "alloc",  "free",     "alloc_reuse",
                                         "alloc_bare", "free_bare", "attach",   "detach", "translate"};

static void test_peer_posix(void **state)
{
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    shmb_alloc_config_t c = small_config();
    c.run[SHMB_ALLOC_ARENA] = 0;
    c.peer = &peer;
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, 3 * 8);
    for (uint64_t kb = 4; kb <= 12; kb += 4) {
        const shmb_row_t *attach = shmb_rows_find(&rows, "posix", "attach", kb, 0);
        const shmb_row_t *detach = shmb_rows_find(&rows, "posix", "detach", kb, 0);
        assert_non_null(attach);
        assert_non_null(detach);
        assert_true(attach->iterations == 8 && attach->ns.count == 8 && attach->ns.min > 0);
        assert_true(detach->iterations == 8 && detach->ns.count == 8 && detach->ns.min > 0);
        assert_true(shmb_rows_find(&rows, "posix", "cleanup", kb, 0)->ns.count == 8);
    }
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 1); /* the peer's control segment */

    c.system_rows = 1;
    rows = run_ok(&c);
    assert_int_equal(rows.n, 3 * 11);
    for (size_t i = 0; i < rows.n; i++)
        assert_string_equal(rows.v[i].step, peer_steps[i % 11]);
    assert_true(rows.v[8].iterations == 8 && rows.v[9].iterations == 8 && rows.v[10].iterations == 0);
    assert_true(rows.v[0].iterations == 20 && rows.v[3].iterations == 0); /* register only */
    shmb_rows_free(&rows);

    uint64_t with = 0, without = 0;
    c.system_rows = 0;
    c.cleanup = 0;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &with), 0);
    c.peer = NULL;
    assert_int_equal(shmb_alloc_bench_shm_bytes(&c, 1, &without), 0);
    assert_true(with == without + 3 * 8 * 4096 + 4096 + SHMB_ALLOC_PEER_DATA_BYTES);

    c = small_config();
    c.peer = &peer;
    c.threads = 2;
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    c.threads = 1;
    c.measure_mmap_only = 1;
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    assert_int_equal(rows.n, 0);

    /* the peer dies: the run says so, and leaves nothing of its own */
    assert_int_equal(kill(peer.pid, SIGKILL), 0);
    c = small_config();
    c.peer = &peer;
    assert_int_equal(run(&c, NULL, &rows), -EPIPE);
    assert_int_equal(shmb_peer_stop(&peer), -EPIPE);
    shmb_rows_free(&rows);
    shmb_test_assert_clean();
}

/* A peer attaches bipc's and jemalloc's pools (a sample each) and translates round 0's handles (a
 * batch per round); none for the arena; system rows dash what a kind lacks. */
static void test_peer_pools(void **state)
{
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    shmb_alloc_config_t c = small_config();
    c.max_size_kb = 4;
    c.run[SHMB_ALLOC_BIPC] = c.run[SHMB_ALLOC_JEMALLOC] = c.run[SHMB_ALLOC_JEMALLOC_TCACHE] = 1;
    c.peer = &peer;
    shmb_rows_t rows = run_ok(&c);
    const uint64_t n = shmb_alloc_bench_arena_blocks(c.num_iterations);
    const uint64_t rounds = (c.min_ops + n - 1) / n;
    const char *pools[] = {"bipc", "jemalloc", "jemalloc_tcache"};
    for (int k = 0; k < 3; k++) {
        const shmb_row_t *attach = shmb_rows_find(&rows, pools[k], "attach", 4, 0);
        const shmb_row_t *translate = shmb_rows_find(&rows, pools[k], "translate", 4, 0);
        assert_non_null(attach);
        assert_non_null(translate);
        assert_true(attach->ns.count >= 1 && attach->iterations == attach->ns.count && attach->ns.min > 0);
        assert_true(k > 0 || attach->ns.count == 1);
        assert_true(translate->ns.count == rounds && translate->iterations == rounds * n);
        assert_true(translate->ns.p50 > 0 && translate->speedup > 1);
    }
    assert_null(shmb_rows_find(&rows, "arena", "attach", 4, 0));
    assert_null(shmb_rows_find(&rows, "arena", "translate", 4, 0));
    shmb_rows_free(&rows);

    c.run[SHMB_ALLOC_POSIX] = c.run[SHMB_ALLOC_ARENA] = c.run[SHMB_ALLOC_JEMALLOC] = 0;
    c.run[SHMB_ALLOC_JEMALLOC_TCACHE] = 0;
    c.system_rows = 1;
    c.run[SHMB_ALLOC_BIPC_OBJECT] = 1; /* flowipc_classic: the peer takes the object layer's blocks */
    rows = run_ok(&c);
    assert_int_equal(rows.n, 11);
    for (size_t i = 0; i < rows.n; i++) {
        assert_string_equal(rows.v[i].step, peer_steps[i]);
        assert_true((rows.v[i].iterations == 0) == (i == 9));
    }
    shmb_rows_free(&rows);
    c.run[SHMB_ALLOC_BIPC] = c.run[SHMB_ALLOC_BIPC_OBJECT] = 0;
    c.run[SHMB_ALLOC_POSIX] = c.run[SHMB_ALLOC_OFFSET] = 1; /* mooncake: posix's attach, offset's blocks */
    rows = run_ok(&c);
    assert_int_equal(rows.n, 11);
    for (size_t i = 0; i < 6; i++)
        assert_true(rows.v[i].iterations > 0);
    assert_true(rows.v[6].iterations == 0 && rows.v[7].iterations == 0); /* offset_bare not asked for */
    assert_true(rows.v[8].iterations > 0 && rows.v[9].iterations > 0 && rows.v[10].iterations == 0);
    shmb_rows_free(&rows);

    assert_int_equal(shmb_peer_stop(&peer), 0);
    shmb_test_assert_clean();
}

static void test_bad_prefix_fails_cleanly(void **state)
{
    shmb_rows_t rows = {0};
    shmb_alloc_config_t c = small_config();
    c.shm_prefix = "no_slash";
    assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    assert_int_equal(shmb_segment_registered(), 0);
    shmb_rows_free(&rows);
}

/* A paired run of mooncake, flowipc_classic and the control: per question a row per system, then a
 * ratio row per system against mooncake; every pool checked, nothing left. */
static shmb_alloc_config_t paired_config(void)
{
    shmb_alloc_config_t c = small_config();
    c.max_size_kb = 4;
    c.min_ops = 1;
    c.working_set = 64;
    shmb_test_pair_with(&c.nsystems, c.systems, c.system_names, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    return c;
}

static void test_paired_rows(void **state)
{
    static const char *systems[] = {"mooncake", "flowipc_classic", "mooncake_control"};
    shmb_alloc_config_t c = paired_config();
    uint64_t block = 0, reg[SHMB_ALLOC_REGISTER_COUNTS] = {0};
    shmb_alloc_bench_paired_rounds(&c, &block, reg);
    assert_true(block == 24); /* 20 at least, in whole blocks of 2 x 3 systems */
    for (int i = 0; i < SHMB_ALLOC_REGISTER_COUNTS; i++)
        assert_true(reg[i] == 24); /* num_iterations / N is fewer than 20 */
    c.num_iterations = 1000;
    shmb_alloc_bench_paired_rounds(&c, &block, reg);
    assert_true(reg[0] == 102 && reg[1] == 24 && reg[2] == 24); /* 100, 10, 1 asked */
    c.count_given = 1;
    shmb_alloc_bench_paired_rounds(&c, &block, reg);
    assert_true(reg[0] == 102 && reg[1] == 12 && reg[2] == 12); /* 9 at least: SHMB_ALLOC_REGISTER_MIN_ROUNDS */
    c = paired_config();
    shmb_rows_t rows = run_ok(&c);
    assert_int_equal(rows.n, SYSTEM_STEPS * 5);
    for (size_t q = 0; q < SYSTEM_STEPS; q++)
        for (size_t i = 0; i < 5; i++) {
            const shmb_row_t *r = &rows.v[q * 5 + i];
            assert_string_equal(r->step, system_steps[q]);
            assert_string_equal(r->variant, "");
            assert_true(r->arg == 4 && r->threads == 1);
            assert_true((r->arg_text[0] != '\0') == (q < 3));
            assert_string_equal(r->system, systems[i < 3 ? i : i - 2]);
            if (i < 3) { /* a system: rounds x the operations of a sample */
                assert_string_equal(r->vs, "");
                assert_true(r->iterations == 24 * (q >= 3 ? 64 : 1));
                assert_true(r->ns.p50 > 0);
            } else { /* a ratio: the rounds, a ratio inside its interval, a verdict */
                assert_string_equal(r->vs, "mooncake");
                assert_true(r->iterations == 24);
                assert_true(r->speedup > 0 && r->ratio_lo <= r->speedup && r->speedup <= r->ratio_hi);
                assert_non_null(r->verdict);
            }
        }
    char name[256];
    shmb_report_t report = {.bench = "shm_alloc"};
    shmb_report_row_name(&report, &rows.v[4], name, sizeof(name));
    assert_string_equal(name, "shm_alloc/register/size_kb:4/buffers:10/system:mooncake_control/vs:mooncake");
    shmb_report_row_name(&report, &rows.v[2 * 5 + 1], name, sizeof(name));
    assert_string_equal(name, "shm_alloc/register/size_kb:4/buffers:1000/system:flowipc_classic");
    shmb_report_row_name(&report, &rows.v[3 * 5 + 1], name, sizeof(name));
    assert_string_equal(name, "shm_alloc/alloc/size_kb:4/system:flowipc_classic");
    shmb_report_row_name(&report, &rows.v[6 * 5 + 1], name, sizeof(name));
    assert_string_equal(name, "shm_alloc/alloc_bare/size_kb:4/system:flowipc_classic");
    shmb_rows_free(&rows);
    shmb_test_assert_clean();
}

/* A paired run checks every system's blocks before any figure counts, and
 * refuses what it cannot pair. */
static void test_paired_verification_and_bad(void **state)
{
    static unsigned char not_shm[1 << 20];
    shmb_alloc_config_t c = paired_config();
    shmb_alloc_hook_t hook = {.check = plant_outside, .arg = not_shm};
    shmb_rows_t rows = {0};
    assert_int_equal(run(&c, &hook, &rows), -EPROTO);
    assert_non_null(strstr(why, "outside its SHM"));
    assert_int_equal(rows.n, 0);
    shmb_test_assert_clean();

    REFUSED(c, c_.threads = 2);
    REFUSED(c, c_.touch = 1);
    REFUSED(c, c_.cleanup = 0);
    REFUSED(c, c_.systems[1] = SHMB_SYSTEMS + 1); /* SHMB_SYSTEMS is mooncake_upstream where built */
    REFUSED(c, c_.nsystems = 1);
}

/* mooncake_upstream (docs/upstream.md) in a library without upstream code:
 * refused, paired or alone, and never the baseline; nothing made. (With it,
 * tests/models/test_upstream.c runs its rows.) */
static void test_upstream_refused(void **state)
{
    shmb_alloc_config_t c = small_config();
    c.run[SHMB_ALLOC_POSIX] = c.run[SHMB_ALLOC_ARENA] = 0;
    c.system_rows = c.upstream = 1;
    shmb_rows_t rows = {0};
    const int built = shmb_upstream_available();
    if (!built)
        assert_int_equal(run(&c, NULL, &rows), -EINVAL);
    c.system_rows = c.upstream = 0;
    const char *names[] = {"mooncake", "mooncake_upstream", "mooncake_control"};
    const int sys[] = {SHMB_SYSTEM_MOONCAKE, SHMB_SYSTEM_MOONCAKE_UPSTREAM, SHMB_SYSTEM_MOONCAKE};
    c.nsystems = 3;
    for (int i = 0; i < 3; i++) {
        c.systems[i] = sys[i];
        c.system_names[i] = names[i];
    }
    c.run[SHMB_ALLOC_POSIX] = c.run[SHMB_ALLOC_OFFSET] = c.run[SHMB_ALLOC_OFFSET_BARE] = 1;
    assert_int_equal(shmb_alloc_paired_ok(&c), built);
    c.systems[0] = SHMB_SYSTEM_MOONCAKE_UPSTREAM; /* the baseline */
    assert_int_equal(shmb_alloc_paired_ok(&c), 0);
    c.systems[0] = SHMB_SYSTEM_MOONCAKE;
    c.systems[2] = SHMB_SYSTEM_MOONCAKE_UPSTREAM; /* the control */
    assert_int_equal(shmb_alloc_paired_ok(&c), 0);
    assert_int_equal(rows.n, 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

int main(void)
{
    if (!shmb_test_shm_writable())
        return 77;
    shmb_test_prefix_init("/shmb_test_alloc_");
    shmb_test_remove_ours();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_arena_blocks_and_space),
        cmocka_unit_test(test_space_counts_what_is_kept),
        cmocka_unit_test(test_system_kind),
        cmocka_unit_test(test_pool_allocators),
        cmocka_unit_test(test_system_rows),
        cmocka_unit_test(test_default_rows),
        cmocka_unit_test(test_touch_and_single_allocator),
        cmocka_unit_test(test_mmap_only),
        cmocka_unit_test(test_no_cleanup_keeps_segments),
        cmocka_unit_test(test_working_set),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_min_ops),
        cmocka_unit_test(test_bad_prefix_fails_cleanly),
        cmocka_unit_test(test_peer_posix),
        cmocka_unit_test(test_peer_pools),
        cmocka_unit_test(test_threads_space_and_bad),
        cmocka_unit_test(test_threads_rows),
        cmocka_unit_test(test_threads_touch_mmap_only_and_kept),
        cmocka_unit_test(test_threads_verification),
        cmocka_unit_test(test_paired_rows),
        cmocka_unit_test(test_paired_verification_and_bad),
        cmocka_unit_test(test_upstream_refused),
    };
    return shmb_test_run(tests, NULL, NULL);
}
