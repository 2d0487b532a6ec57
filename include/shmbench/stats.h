/*
 * stats: the summary of a sample set.
 *
 * Percentiles interpolate linearly between the two nearest ranks (the
 * definition numpy and R use by default), so p50 of {1, 2, 3, 4} is 2.5.
 * The standard deviation is the sample one (divides by n - 1; 0 for n = 1).
 */
#ifndef SHMBENCH_STATS_H
#define SHMBENCH_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shmb_stats {
    size_t count;  /* number of samples */
    double min;
    double mean;
    double stddev; /* sample standard deviation */
    double p50;
    double p90;
    double p99;
    double p999;   /* 99.9th percentile */
    double max;
} shmb_stats_t;

/* A sample set that grows, for loops that learn how many samples they take
 * only at the end (a time budget). */
typedef struct shmb_samples {
    double *v;
    size_t n;   /* samples held */
    size_t cap; /* room in v */
} shmb_samples_t;

/* Appends x. Returns 0, or -ENOMEM with the set unchanged. */
int shmb_stats_append(shmb_samples_t *set, double x);

/* Frees the set's storage; the set is empty afterwards. */
void shmb_stats_release(shmb_samples_t *set);

/* Summarises samples[0..n). Sorts samples in place (ascending).
 * Returns 0, or -EINVAL if n is 0 or a pointer is NULL; *out is written only on
 * success. */
int shmb_stats_compute(double *samples, size_t n, shmb_stats_t *out);

/* The p-th percentile (0 <= p <= 100) of sorted[0..n), n >= 1, sorted
 * ascending. */
double shmb_stats_percentile(const double *sorted, size_t n, double p);

#ifdef __cplusplus
}
#endif

#endif
