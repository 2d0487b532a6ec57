/*
 * paired: systems that answer one question, measured in one process in
 * alternating slices, and what the per-round pairs say.
 *
 * A paired run measures its systems round by round: in every round each
 * system runs one slice (a batch of operations, one request, one sample),
 * in an order that changes each round so that over 2 x nsys rounds each
 * system runs at each position, and right after each other system, equally
 * often (a Williams square). Drift on the machine (another process, a frequency
 * change) then falls on every system of a round alike, and the ratio of two
 * systems' samples of one round cancels it. The baseline (the first system
 * listed) runs a second time as its A/A control (BASELINE_control): identical
 * code, so its ratio to the baseline is the run's noise.
 *
 * Statistics (docs/methodology.md, "Paired runs"): per round the ratio
 * baseline / system (above 1: the system is faster) and the difference
 * baseline - system (the time saved). The estimate is the median of the
 * rounds' ratios, its 95% interval the distribution-free one of a median
 * (order statistics at the binomial quantiles: the sign test's interval),
 * and the p-value the sign test's (two-sided, exact) of "the ratio's median
 * is 1". Nothing is assumed of the distribution, and one outlying round
 * moves neither.
 */
#ifndef SHMBENCH_PAIRED_H
#define SHMBENCH_PAIRED_H

#include <stddef.h>

#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_PAIRED_MAX_SYSTEMS 8     /* systems of one paired run, control included */
#define SHMB_PAIRED_PRACTICAL 0.05    /* a change under 5% is no practical difference */
#define SHMB_PAIRED_MIN_ROUNDS 6      /* the fewest rounds with a 95% interval (2^-5 < 0.05) */
#define SHMB_PAIRED_CONTROL_SUFFIX "_control"

/* Runs one slice of system `which` (an index into the caller's systems) and
 * gives its time per operation in *ns. Returns 0, or a negative errno that
 * stops the run. */
typedef int (*shmb_paired_slice_fn)(void *ctx, size_t which, double *ns);

/* The system that runs at position pos of round `round` among nsys (nsys
 * >= 1, pos < nsys): row 0, 1, n-1, 2, n-2, ... shifted by `round` (mod n),
 * reversed in the odd blocks of n rounds. Round 0 runs 0, 1, n-1, ...; over
 * any 2n rounds from a multiple of 2n every system holds every position, and
 * follows every other system, equally often. */
size_t shmb_paired_order(size_t nsys, size_t round, size_t pos);

/* rounds rounds of nsys systems, each slice by slice in shmb_paired_order;
 * samples[s][k] is system s's time per operation in round k. Returns 0,
 * -EINVAL (nsys 0 or above SHMB_PAIRED_MAX_SYSTEMS, rounds 0), or the first
 * error of a slice (the samples of that round and after are not written). */
int shmb_paired_run(size_t nsys, size_t rounds, shmb_paired_slice_fn slice, void *ctx, double *const *samples);

/* One system against the baseline over n rounds. */
typedef struct shmb_paired_ratio {
    size_t rounds;       /* n */
    double ratio;        /* median over rounds of baseline / system */
    double ratio_lo;     /* its 95% interval; lo = 0 and hi = +inf below SHMB_PAIRED_MIN_ROUNDS */
    double ratio_hi;
    double saved_ns;     /* median over rounds of baseline - system (ns per operation) */
    double saved_lo;     /* its 95% interval, as the ratio's */
    double saved_hi;
    double p_value;      /* sign test, two-sided, of "the median ratio is 1" */
} shmb_paired_ratio_t;

/* The pair of base[0..n) and sys[0..n) (round k of each: base[k], sys[k];
 * every value > 0). Returns 0, -EINVAL (n 0, a value not > 0 or not
 * finite) or -ENOMEM; *out written only on success. */
int shmb_paired_ratio(const double *base, const double *sys, size_t n, shmb_paired_ratio_t *out);

/* The 1-based ranks (lo, hi) of the distribution-free interval of a median
 * of n values at 1 - alpha confidence: the largest lo with P(Bin(n, 1/2) <
 * lo) <= alpha/2, hi = n + 1 - lo. Returns 0, or -EDOM when n is too small
 * for any such interval (lo would be 0). */
int shmb_paired_median_ranks(size_t n, double alpha, size_t *lo, size_t *hi);

/* The sign test's two-sided exact p-value for `below` of n values below the
 * hypothesised median and `above` above it (ties left out): 2 P(Bin(m,
 * 1/2) <= min(below, above)), m = below + above, at most 1; 1 for m = 0. */
double shmb_paired_sign_p(size_t below, size_t above);

typedef enum shmb_paired_verdict {
    SHMB_PAIRED_FASTER,         /* the system is faster by at least the practical threshold */
    SHMB_PAIRED_SLOWER,         /* slower, likewise */
    SHMB_PAIRED_NO_PRACTICAL,   /* the interval excludes 1, the change is under 5% */
    SHMB_PAIRED_WITHIN_NOISE,   /* the interval holds 1, or lies inside the control's */
    SHMB_PAIRED_TOO_NOISY,      /* the control itself is off by more than 5%: no verdict */
    SHMB_PAIRED_NOT_ASSESSED,   /* too few rounds for an interval */
    SHMB_PAIRED_VERDICTS,
} shmb_paired_verdict_t;

/* The verdict of `pair` given the run's control (the baseline's control
 * against the baseline; for the control's own row pass it as both). A
 * control whose interval lies wholly outside [1/1.05, 1.05], or excludes 1
 * with its median 5% or more from it, makes every verdict of the question
 * TOO_NOISY (so a control never reads faster or slower); a pair whose interval lies inside the
 * control's is WITHIN_NOISE. */
shmb_paired_verdict_t shmb_paired_verdict(const shmb_paired_ratio_t *pair, const shmb_paired_ratio_t *control);

/* "faster", "slower", "no practical difference", "within the noise",
 * "too noisy", "not assessed"; NULL out of range. */
const char *shmb_paired_verdict_name(shmb_paired_verdict_t v);

/* The rows of one question measured paired: for each system s (names[s];
 * names[0] the baseline, names[nsys - 1] its control, named
 * BASELINE_control), a row like `tmpl` with system names[s] summarising
 * samples[s][0..n) (reordered), then for each s > 0 a ratio row (vs = the
 * baseline) whose times are the rounds' saved ns (baseline - system), whose
 * speedup is the ratio, and whose note gives the interval and the verdict.
 * The template's iterations is the operations one sample stands for (a
 * system row's iterations: that times n; a ratio row's: n, its rounds).
 * Returns 0, -EINVAL (nsys < 2, a bad sample) or -ENOMEM; *first gets
 * the index of the first row pushed. */
int shmb_paired_push_rows(shmb_rows_t *rows, const shmb_row_t *tmpl, const char *const *names, size_t nsys,
                          double *const *samples, size_t n, size_t *first);

#ifdef __cplusplus
}
#endif

#endif
