/* paired: the alternation of a paired run and the statistics of its pairs
 * (the contract: shmbench/paired.h). */
#include "shmbench/paired.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t shmb_paired_order(size_t nsys, size_t round, size_t pos)
{
    /* A Williams square: rows 0, 1, n-1, 2, n-2, ... shifted by the round,
     * read backwards in every other block of n rounds. A plain rotation
     * keeps each system's predecessor (0 1 2, 1 2 0, 2 0 1: 1 always
     * follows 0), so whatever one system leaves behind (jemalloc's unmapped
     * pools) would always fall on the same next one. */
    if ((round / nsys) % 2)
        pos = nsys - 1 - pos;
    const size_t row = pos == 0 ? 0 : pos % 2 ? (pos + 1) / 2 : nsys - pos / 2;
    return (row + round) % nsys;
}

int shmb_paired_run(size_t nsys, size_t rounds, shmb_paired_slice_fn slice, void *ctx, double *const *samples)
{
    if (nsys == 0 || nsys > SHMB_PAIRED_MAX_SYSTEMS || rounds == 0)
        return -EINVAL;
    for (size_t k = 0; k < rounds; k++)
        for (size_t pos = 0; pos < nsys; pos++) {
            const size_t s = shmb_paired_order(nsys, k, pos);
            int ret = slice(ctx, s, &samples[s][k]);
            if (ret < 0)
                return ret;
        }
    return 0;
}

/* P(Bin(n, 1/2) = i), in logs so that large n neither overflows nor
 * underflows it before it counts. */
static double binom_half_pmf(size_t n, size_t i)
{
    return exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) + (double)n * log(0.5));
}

/* P(Bin(n, 1/2) <= k). */
static double binom_half_cdf(size_t n, size_t k)
{
    double sum = 0;
    for (size_t i = 0; i <= k && i <= n; i++)
        sum += binom_half_pmf(n, i);
    return sum < 1 ? sum : 1;
}

int shmb_paired_median_ranks(size_t n, double alpha, size_t *lo, size_t *hi)
{
    /* the largest r with P(X <= r - 1) <= alpha/2; the sum grows term by
     * term with r (a sum per r took a minute at n = 100000) */
    size_t r = 0;
    double cdf = 0;
    while (r < n / 2 && (cdf += binom_half_pmf(n, r)) <= alpha / 2)
        r++;
    if (r == 0)
        return -EDOM;
    *lo = r;
    *hi = n + 1 - r;
    return 0;
}

double shmb_paired_sign_p(size_t below, size_t above)
{
    const size_t m = below + above;
    if (m == 0)
        return 1;
    const double p = 2 * binom_half_cdf(m, below < above ? below : above);
    return p < 1 ? p : 1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of sorted[0..n) and its 95% interval (-inf, +inf when n is
 * too small for one). */
static void median_interval(const double *sorted, size_t n, double *mid, double *lo, double *hi)
{
    size_t rl, rh;
    *mid = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    if (shmb_paired_median_ranks(n, 0.05, &rl, &rh) < 0) {
        *lo = -INFINITY;
        *hi = INFINITY;
        return;
    }
    *lo = sorted[rl - 1];
    *hi = sorted[rh - 1];
}

int shmb_paired_ratio(const double *base, const double *sys, size_t n, shmb_paired_ratio_t *out)
{
    if (n == 0)
        return -EINVAL;
    for (size_t k = 0; k < n; k++)
        if (!(base[k] > 0 && sys[k] > 0 && isfinite(base[k]) && isfinite(sys[k])))
            return -EINVAL;
    double *ratios = malloc(n * sizeof(*ratios)), *saved = malloc(n * sizeof(*saved));
    if (!ratios || !saved) {
        free(ratios);
        free(saved);
        return -ENOMEM;
    }
    size_t below = 0, above = 0;
    for (size_t k = 0; k < n; k++) {
        ratios[k] = base[k] / sys[k];
        saved[k] = base[k] - sys[k];
        below += ratios[k] < 1;
        above += ratios[k] > 1;
    }
    qsort(ratios, n, sizeof(*ratios), cmp_double);
    qsort(saved, n, sizeof(*saved), cmp_double);
    shmb_paired_ratio_t p = {.rounds = n, .p_value = shmb_paired_sign_p(below, above)};
    median_interval(ratios, n, &p.ratio, &p.ratio_lo, &p.ratio_hi);
    median_interval(saved, n, &p.saved_ns, &p.saved_lo, &p.saved_hi);
    if (p.ratio_lo < 0)
        p.ratio_lo = 0; /* no interval: a ratio is never below 0 */
    free(ratios);
    free(saved);
    *out = p;
    return 0;
}

/* The interval of a ratio lies wholly on one side of [1/1.05, 1.05]. */
static int practical(const shmb_paired_ratio_t *r)
{
    return r->ratio_lo > 1 + SHMB_PAIRED_PRACTICAL || r->ratio_hi < 1 / (1 + SHMB_PAIRED_PRACTICAL);
}

/* The control differs from its own code: its interval wholly beyond 5%, or
 * off 1 with its median 5% or more away (a control never reads faster or
 * slower than itself). */
static int control_noisy(const shmb_paired_ratio_t *c)
{
    return practical(c) || (!(c->ratio_lo <= 1 && c->ratio_hi >= 1) && fabs(c->ratio - 1) >= SHMB_PAIRED_PRACTICAL);
}

shmb_paired_verdict_t shmb_paired_verdict(const shmb_paired_ratio_t *pair, const shmb_paired_ratio_t *control)
{
    if (control->rounds < SHMB_PAIRED_MIN_ROUNDS || pair->rounds < SHMB_PAIRED_MIN_ROUNDS)
        return SHMB_PAIRED_NOT_ASSESSED;
    if (control_noisy(control))
        return SHMB_PAIRED_TOO_NOISY;
    if ((pair->ratio_lo <= 1 && pair->ratio_hi >= 1) ||
        (pair != control && pair->ratio_lo >= control->ratio_lo && pair->ratio_hi <= control->ratio_hi))
        return SHMB_PAIRED_WITHIN_NOISE;
    if (fabs(pair->ratio - 1) < SHMB_PAIRED_PRACTICAL)
        return SHMB_PAIRED_NO_PRACTICAL;
    return pair->ratio > 1 ? SHMB_PAIRED_FASTER : SHMB_PAIRED_SLOWER;
}

const char *shmb_paired_verdict_name(shmb_paired_verdict_t v)
{
    static const char *const names[SHMB_PAIRED_VERDICTS] = {
        [SHMB_PAIRED_FASTER] = "faster",
        [SHMB_PAIRED_SLOWER] = "slower",
        [SHMB_PAIRED_NO_PRACTICAL] = "no practical difference",
        [SHMB_PAIRED_WITHIN_NOISE] = "within the noise",
        [SHMB_PAIRED_TOO_NOISY] = "too noisy",
        [SHMB_PAIRED_NOT_ASSESSED] = "not assessed",
    };
    return (unsigned)v < SHMB_PAIRED_VERDICTS ? names[v] : NULL;
}

/* The ratio row of system `which` against the baseline: times are the
 * rounds' saved ns, speedup the ratio, the note its interval and verdict. */
static int push_ratio(shmb_rows_t *rows, const shmb_row_t *tmpl, const char *const *names, size_t which,
                      double *const *samples, size_t n, const shmb_paired_ratio_t *pair,
                      const shmb_paired_ratio_t *control)
{
    double *saved = malloc(n * sizeof(*saved));
    if (!saved)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++)
        saved[k] = samples[0][k] - samples[which][k];
    shmb_row_t row = *tmpl;
    snprintf(row.system, sizeof(row.system), "%s", names[which]);
    snprintf(row.vs, sizeof(row.vs), "%s", names[0]);
    row.iterations = n;
    row.bytes_per_second = 0;
    row.speedup = pair->ratio;
    row.ratio_lo = pair->ratio_lo;
    row.ratio_hi = pair->ratio_hi;
    row.saved_lo = pair->saved_lo;
    row.saved_hi = pair->saved_hi;
    row.p_value = pair->p_value;
    const shmb_paired_verdict_t v = shmb_paired_verdict(pair, control);
    row.verdict = shmb_paired_verdict_name(v);
    if (v == SHMB_PAIRED_NOT_ASSESSED)
        snprintf(row.note, sizeof(row.note), "not assessed: %zu rounds, %d needed", n, SHMB_PAIRED_MIN_ROUNDS);
    else
        snprintf(row.note, sizeof(row.note), "95%% [%.3f, %.3f] %s", pair->ratio_lo, pair->ratio_hi, row.verdict);
    int ret = shmb_rows_push_samples(rows, &row, saved, n);
    if (ret == 0) /* a saving per second means nothing */
        rows->v[rows->n - 1].items_per_second = 0;
    free(saved);
    return ret;
}

int shmb_paired_push_rows(shmb_rows_t *rows, const shmb_row_t *tmpl, const char *const *names, size_t nsys,
                          double *const *samples, size_t n, size_t *first)
{
    if (nsys < 2 || nsys > SHMB_PAIRED_MAX_SYSTEMS || n == 0)
        return -EINVAL;
    shmb_paired_ratio_t pairs[SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 1; s < nsys; s++) {
        int ret = shmb_paired_ratio(samples[0], samples[s], n, &pairs[s]);
        if (ret < 0)
            return ret;
    }
    const size_t start = rows->n;
    /* The ratios first: pushing a system's row sorts its samples. */
    shmb_rows_t ratios = {0};
    int ret = 0;
    for (size_t s = 1; s < nsys && ret == 0; s++)
        ret = push_ratio(&ratios, tmpl, names, s, samples, n, &pairs[s], &pairs[nsys - 1]);
    for (size_t s = 0; s < nsys && ret == 0; s++) {
        shmb_row_t row = *tmpl;
        snprintf(row.system, sizeof(row.system), "%s", names[s]);
        row.iterations = tmpl->iterations * n;
        ret = shmb_rows_push_samples(rows, &row, samples[s], n);
    }
    for (size_t i = 0; i < ratios.n && ret == 0; i++)
        ret = shmb_rows_push(rows, &ratios.v[i]);
    shmb_rows_free(&ratios);
    if (ret < 0) {
        rows->n = start;
        return ret;
    }
    *first = start;
    return 0;
}
