/* paired: systems measured in one process in alternating slices, round by
 * round in a Williams square's orders, the baseline run twice (its A/A
 * control); per-round ratios with the median's distribution-free interval,
 * the sign test and a verdict (docs/methodology.md, "Paired runs"). */
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

/* One slice of system `which`, its ns per operation into *ns. 0, or -errno that stops the run. */
typedef int (*shmb_paired_slice_fn)(void *ctx, size_t which, double *ns);

/* The system at position pos of round `round`: 0, 1, n-1, 2, n-2, ... shifted by
 * round (mod n), reversed in odd blocks of n rounds (each 2n rounds balanced). */
size_t shmb_paired_order(size_t nsys, size_t round, size_t pos);

/* `rounds` rounds in shmb_paired_order, samples[s][k] system s's ns in round k.
 * 0, -EINVAL (nsys 0 or too many, rounds 0) or a slice's first error. */
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

/* The pair of base[k], sys[k] over n rounds. 0, -EINVAL (n 0, a value not
 * finite and > 0) or -ENOMEM. */
int shmb_paired_ratio(const double *base, const double *sys, size_t n, shmb_paired_ratio_t *out);

/* The 1-based ranks of a median's 1 - alpha interval: the largest lo with
 * P(Bin(n, 1/2) < lo) <= alpha/2, hi = n + 1 - lo. 0, or -EDOM (n too small). */
int shmb_paired_median_ranks(size_t n, double alpha, size_t *lo, size_t *hi);

/* The sign test's exact two-sided p: min(1, 2 P(Bin(m, 1/2) <= min(below,
 * above))), m = below + above; 1 for m = 0. */
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

/* pair's verdict given the control (for the control's row, pass it as both):
 * TOO_NOISY when the control's interval lies outside [1/1.05, 1.05] or
 * excludes 1 with its median 5% off; WITHIN_NOISE inside the control's. */
shmb_paired_verdict_t shmb_paired_verdict(const shmb_paired_ratio_t *pair, const shmb_paired_ratio_t *control);

/* "faster", "slower", "no practical difference", "within the noise",
 * "too noisy", "not assessed"; NULL out of range. */
const char *shmb_paired_verdict_name(shmb_paired_verdict_t v);

/* A row like tmpl per system (names[0] the baseline, names[nsys - 1] its
 * control) over samples[s][0..n) (reordered; iterations: tmpl's times n),
 * then per s > 0 a ratio row (vs the baseline): saved ns, speedup = ratio,
 * note = interval and verdict, iterations n. 0, -EINVAL or -ENOMEM; *first:
 * the first row's index. */
int shmb_paired_push_rows(shmb_rows_t *rows, const shmb_row_t *tmpl, const char *const *names, size_t nsys,
                          double *const *samples, size_t n, size_t *first);

#ifdef __cplusplus
}
#endif

#endif
