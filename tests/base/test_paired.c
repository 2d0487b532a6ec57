#include <math.h>

#include "helpers.h"

#include "shmbench/paired.h"

#define ROUNDS 40
#define MAXSYS 4

/* A machine whose every operation gets 30% slower halfway through the run
 * (another job starts), with a 2% jitter: costs[s] is system s's true time. */
typedef struct machine {
    double costs[MAXSYS];
    unsigned slices, total; /* slices run so far, of total */
    uint64_t lcg;
    size_t order[MAXSYS * ROUNDS]; /* who ran, slice by slice */
} machine_t;

static double jitter(machine_t *m)
{
    m->lcg = m->lcg * 6364136223846793005ull + 1442695040888963407ull;
    return 0.98 + 0.04 * (double)(m->lcg >> 11) / (double)(1ull << 53);
}

static int slice(void *ctx, size_t which, double *ns)
{
    machine_t *m = ctx;
    const double drift = m->slices >= m->total / 2 ? 1.3 : 1.0;
    m->order[m->slices++] = which;
    *ns = m->costs[which] * drift * jitter(m);
    return 0;
}

static machine_t machine(const double *costs, size_t nsys)
{
    machine_t m;
    memset(&m, 0, sizeof(m));
    memcpy(m.costs, costs, nsys * sizeof(*costs));
    m.total = (unsigned)(nsys * ROUNDS);
    m.lcg = 42;
    return m;
}

/* The paired run of nsys systems (the last the control) on the drifting machine: each one against system 0. */
static void paired(const double *costs, size_t nsys, shmb_paired_ratio_t *pairs)
{
    machine_t m = machine(costs, nsys);
    double v[MAXSYS][ROUNDS];
    double *samples[MAXSYS];
    for (size_t s = 0; s < nsys; s++)
        samples[s] = v[s];
    assert_int_equal(shmb_paired_run(nsys, ROUNDS, slice, &m, samples), 0);
    assert_int_equal(m.slices, nsys * ROUNDS);
    for (size_t s = 1; s < nsys; s++)
        assert_int_equal(shmb_paired_ratio(v[0], v[s], ROUNDS, &pairs[s]), 0);
}

static double median(double *v, size_t n)
{
    shmb_stats_t s;
    assert_int_equal(shmb_stats_compute(v, n, &s), 0);
    return s.p50;
}

/* Two separate runs, one after the other, as two processes would be: the
 * first all before the drift, the second all after; the ratio of medians. */
static double unpaired(const double *costs)
{
    machine_t m = machine(costs, 2);
    double a[ROUNDS], b[ROUNDS];
    for (size_t k = 0; k < ROUNDS; k++)
        assert_int_equal(slice(&m, 0, &a[k]), 0);
    for (size_t k = 0; k < ROUNDS; k++)
        assert_int_equal(slice(&m, 1, &b[k]), 0);
    return median(a, ROUNDS) / median(b, ROUNDS);
}

static void test_order_rotates(void **state)
{
    /* every system at every position once over nsys rounds, never twice in a round */
    for (size_t nsys = 1; nsys <= SHMB_PAIRED_MAX_SYSTEMS; nsys++)
        for (size_t k = 0; k < nsys; k++) {
            unsigned seen = 0;
            for (size_t pos = 0; pos < nsys; pos++)
                seen |= 1u << shmb_paired_order(nsys, k, pos);
            assert_int_equal(seen, (1u << nsys) - 1);
        }
    /* over 2n rounds: each system at each position, and right after each other system, equally often */
    for (size_t nsys = 2; nsys <= SHMB_PAIRED_MAX_SYSTEMS; nsys++) {
        unsigned at[SHMB_PAIRED_MAX_SYSTEMS][SHMB_PAIRED_MAX_SYSTEMS] = {{0}};
        unsigned after[SHMB_PAIRED_MAX_SYSTEMS][SHMB_PAIRED_MAX_SYSTEMS] = {{0}};
        for (size_t k = 0; k < 2 * nsys; k++)
            for (size_t pos = 0; pos < nsys; pos++) {
                at[shmb_paired_order(nsys, k, pos)][pos]++;
                if (pos > 0)
                    after[shmb_paired_order(nsys, k, pos - 1)][shmb_paired_order(nsys, k, pos)]++;
            }
        for (size_t a = 0; a < nsys; a++)
            for (size_t b = 0; b < nsys; b++) {
                assert_int_equal(at[a][b], 2);
                assert_int_equal(after[a][b], a == b ? 0 : 2);
            }
    }
    /* three systems: 0 1 2, 1 2 0, 2 0 1, then backwards: 2 1 0, 0 2 1, 1 0 2 */
    assert_int_equal(shmb_paired_order(3, 0, 1), 1);
    assert_int_equal(shmb_paired_order(3, 3, 0), 2);
    assert_int_equal(shmb_paired_order(3, 3, 1), 1);
    assert_int_equal(shmb_paired_order(3, 4, 0), 0);
    assert_int_equal(shmb_paired_order(3, 4, 1), 2);
}

static void test_run_alternates_slice_by_slice(void **state)
{
    const double costs[] = {100, 100, 100};
    machine_t m = machine(costs, 3);
    double v[3][ROUNDS];
    double *samples[] = {v[0], v[1], v[2]};
    assert_int_equal(shmb_paired_run(3, ROUNDS, slice, &m, samples), 0);
    for (size_t k = 0; k < ROUNDS; k++) /* each round holds each system once */
        assert_int_equal((1u << m.order[3 * k]) | (1u << m.order[3 * k + 1]) | (1u << m.order[3 * k + 2]), 7);
    assert_int_equal(m.order[0], 0);
    assert_int_equal(m.order[3], 1);
}

static int failing_slice(void *ctx, size_t which, double *ns)
{
    int *calls = ctx;
    *ns = 1;
    return ++*calls == 5 && which < 8 ? -EIO : 0;
}

static void test_run_errors(void **state)
{
    double v[2][4];
    double *samples[] = {v[0], v[1]};
    int calls = 0;
    assert_int_equal(shmb_paired_run(2, 4, failing_slice, &calls, samples), -EIO);
    assert_int_equal(calls, 5); /* stops at the failing slice */
    assert_int_equal(shmb_paired_run(0, 4, failing_slice, &calls, samples), -EINVAL);
    assert_int_equal(shmb_paired_run(2, 0, failing_slice, &calls, samples), -EINVAL);
    assert_int_equal(shmb_paired_run(SHMB_PAIRED_MAX_SYSTEMS + 1, 4, failing_slice, &calls, samples), -EINVAL);
}

/* Identical systems, 30% drift halfway: separate runs blame the second system, the paired run says noise. */
static void test_drift_is_noise_when_paired(void **state)
{
    const double costs[] = {100, 100, 100}; /* baseline, the same code, the control */
    shmb_paired_ratio_t p[3];
    paired(costs, 3, p);
    assert_true(fabs(p[1].ratio - 1) < 0.02);
    assert_true(p[1].ratio_lo <= 1 && p[1].ratio_hi >= 1);
    assert_int_equal(shmb_paired_verdict(&p[2], &p[2]), SHMB_PAIRED_WITHIN_NOISE);
    assert_int_equal(shmb_paired_verdict(&p[1], &p[2]), SHMB_PAIRED_WITHIN_NOISE);
    /* the same machine, two runs in turn: a 30% "difference" of identical code */
    const double r = unpaired(costs);
    assert_true(r < 0.8);
}

/* A real 10% difference under the same drift is found, inside its interval. */
static void test_real_difference_found(void **state)
{
    const double costs[] = {100, 100.0 / 1.10, 100}; /* the second system 1.10x faster */
    shmb_paired_ratio_t p[3];
    paired(costs, 3, p);
    assert_true(fabs(p[1].ratio - 1.10) < 0.02);
    assert_true(p[1].ratio_lo > 1.0 && p[1].ratio_lo <= 1.10 && p[1].ratio_hi >= 1.10);
    assert_true(p[1].saved_ns > 0);
    assert_true(p[1].p_value < 1e-6);
    assert_int_equal(shmb_paired_verdict(&p[1], &p[2]), SHMB_PAIRED_FASTER);
    const double slower[] = {100, 110, 100};
    paired(slower, 3, p);
    assert_int_equal(shmb_paired_verdict(&p[1], &p[2]), SHMB_PAIRED_SLOWER);
    const double small[] = {100, 98, 100}; /* real, and under 5% */
    paired(small, 3, p);
    assert_true(p[1].ratio_lo > 1);
    assert_int_equal(shmb_paired_verdict(&p[1], &p[2]), SHMB_PAIRED_NO_PRACTICAL);
}

static void test_median_ranks(void **state)
{
    size_t lo = 0, hi = 0;
    assert_int_equal(shmb_paired_median_ranks(0, 0.05, &lo, &hi), -EDOM);
    assert_int_equal(shmb_paired_median_ranks(5, 0.05, &lo, &hi), -EDOM); /* 2 * 2^-5 > 0.05 */
    assert_int_equal(shmb_paired_median_ranks(6, 0.05, &lo, &hi), 0);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 6);
    assert_int_equal(shmb_paired_median_ranks(20, 0.05, &lo, &hi), 0); /* P(X<=5) = 0.021, P(X<=6) = 0.058 */
    assert_int_equal(lo, 6);
    assert_int_equal(hi, 15);
    assert_int_equal(shmb_paired_median_ranks(100, 0.05, &lo, &hi), 0); /* the tabulated 40th and 61st */
    assert_int_equal(lo, 40);
    assert_int_equal(hi, 61);
    assert_int_equal(shmb_paired_median_ranks(100000, 0.05, &lo, &hi), 0); /* no overflow, near n/2 -+ 310 */
    assert_true(lo > 49600 && lo < 49700 && hi == 100001 - lo);
}

static void test_sign_p(void **state)
{
    assert_float_equal(shmb_paired_sign_p(0, 0), 1.0, 1e-12);
    assert_float_equal(shmb_paired_sign_p(3, 3), 1.0, 1e-12);
    assert_float_equal(shmb_paired_sign_p(0, 6), 2.0 / 64, 1e-12);
    assert_float_equal(shmb_paired_sign_p(6, 0), 2.0 / 64, 1e-12);
    assert_float_equal(shmb_paired_sign_p(1, 9), 2.0 * 11 / 1024, 1e-12);
}

static void test_ratio_edges(void **state)
{
    shmb_paired_ratio_t p;
    const double one[] = {10}, two[] = {5};
    assert_int_equal(shmb_paired_ratio(one, two, 0, &p), -EINVAL);
    const double zero[] = {0}, nan_[] = {NAN};
    assert_int_equal(shmb_paired_ratio(one, zero, 1, &p), -EINVAL);
    assert_int_equal(shmb_paired_ratio(nan_, one, 1, &p), -EINVAL);
    assert_int_equal(shmb_paired_ratio(one, two, 1, &p), 0); /* one round: an estimate, no interval */
    assert_int_equal(p.rounds, 1);
    assert_float_equal(p.ratio, 2.0, 1e-12);
    assert_float_equal(p.saved_ns, 5.0, 1e-12);
    assert_float_equal(p.ratio_lo, 0.0, 1e-12);
    assert_true(isinf(p.ratio_hi));
    assert_int_equal(shmb_paired_verdict(&p, &p), SHMB_PAIRED_NOT_ASSESSED);
}

static void test_too_noisy_control(void **state)
{
    shmb_paired_ratio_t control = {.rounds = 20, .ratio = 1.2, .ratio_lo = 1.1, .ratio_hi = 1.3};
    shmb_paired_ratio_t pair = {.rounds = 20, .ratio = 2, .ratio_lo = 1.9, .ratio_hi = 2.1};
    assert_int_equal(shmb_paired_verdict(&pair, &control), SHMB_PAIRED_TOO_NOISY);
    assert_int_equal(shmb_paired_verdict(&control, &control), SHMB_PAIRED_TOO_NOISY);
    /* a control 6% off whose interval reaches into 5%: still too noisy, never "slower" */
    control = (shmb_paired_ratio_t){.rounds = 56, .ratio = 0.94, .ratio_lo = 0.917, .ratio_hi = 0.987};
    assert_int_equal(shmb_paired_verdict(&control, &control), SHMB_PAIRED_TOO_NOISY);
    /* an off control still inside 5%: a pair inside its interval is noise */
    control = (shmb_paired_ratio_t){.rounds = 20, .ratio = 1.03, .ratio_lo = 1.01, .ratio_hi = 1.04};
    pair = (shmb_paired_ratio_t){.rounds = 20, .ratio = 1.02, .ratio_lo = 1.015, .ratio_hi = 1.035};
    assert_int_equal(shmb_paired_verdict(&pair, &control), SHMB_PAIRED_WITHIN_NOISE);
    for (int v = 0; v < SHMB_PAIRED_VERDICTS; v++)
        assert_non_null(shmb_paired_verdict_name((shmb_paired_verdict_t)v));
    assert_null(shmb_paired_verdict_name(SHMB_PAIRED_VERDICTS));
}

static void test_push_rows(void **state)
{
    double a[ROUNDS], b[ROUNDS], c[ROUNDS];
    for (size_t k = 0; k < ROUNDS; k++) {
        a[k] = 200 + (double)(k % 3);
        b[k] = 100 + (double)(k % 5);
        c[k] = 200 + (double)(k % 4);
    }
    double *samples[] = {a, b, c};
    const char *names[] = {"mooncake", "flowipc_classic", "mooncake_control"};
    shmb_row_t tmpl = shmb_row_make("request", "size_kb", 4, 0);
    tmpl.iterations = 10;
    shmb_rows_t rows = {0};
    shmb_row_t pre = shmb_row_make("other", "size_kb", 4, 0);
    assert_int_equal(shmb_rows_push(&rows, &pre), 0);
    size_t first = 99;
    assert_int_equal(shmb_paired_push_rows(&rows, &tmpl, names, 3, samples, ROUNDS, &first), 0);
    assert_int_equal(first, 1);
    assert_int_equal(rows.n, 1 + 3 + 2);
    for (size_t s = 0; s < 3; s++) {
        assert_string_equal(rows.v[1 + s].system, names[s]);
        assert_string_equal(rows.v[1 + s].vs, "");
        assert_int_equal(rows.v[1 + s].iterations, 10 * ROUNDS);
    }
    const shmb_row_t *vs = &rows.v[4];
    assert_string_equal(vs->system, "flowipc_classic");
    assert_string_equal(vs->vs, "mooncake");
    assert_int_equal(vs->iterations, ROUNDS);
    assert_true(vs->speedup > 1.9 && vs->speedup < 2.05);
    assert_true(vs->ratio_lo <= vs->speedup && vs->speedup <= vs->ratio_hi);
    assert_true(vs->ns.p50 > 95 && vs->ns.p50 < 105); /* the saved ns */
    assert_string_equal(vs->verdict, "faster");
    assert_non_null(strstr(vs->note, "faster"));
    assert_string_equal(rows.v[5].system, "mooncake_control");
    assert_string_equal(rows.v[5].verdict, "within the noise");

    shmb_test_assert_row_name("shm_transfer", &rows.v[2], "shm_transfer/request/size_kb:4/system:flowipc_classic");
    shmb_test_assert_row_name("shm_transfer", vs,
                              "shm_transfer/request/size_kb:4/system:flowipc_classic/vs:mooncake");

    /* fewer than two systems, no round: refused, nothing pushed */
    assert_int_equal(shmb_paired_push_rows(&rows, &tmpl, names, 1, samples, ROUNDS, &first), -EINVAL);
    assert_int_equal(shmb_paired_push_rows(&rows, &tmpl, names, 3, samples, 0, &first), -EINVAL);
    a[3] = 0; /* a sample that is no time */
    assert_int_equal(shmb_paired_push_rows(&rows, &tmpl, names, 3, samples, ROUNDS, &first), -EINVAL);
    assert_int_equal(rows.n, 6);
    shmb_rows_free(&rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_rotates),
        cmocka_unit_test(test_run_alternates_slice_by_slice),
        cmocka_unit_test(test_run_errors),
        cmocka_unit_test(test_drift_is_noise_when_paired),
        cmocka_unit_test(test_real_difference_found),
        cmocka_unit_test(test_median_ranks),
        cmocka_unit_test(test_sign_p),
        cmocka_unit_test(test_ratio_edges),
        cmocka_unit_test(test_too_noisy_control),
        cmocka_unit_test(test_push_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
