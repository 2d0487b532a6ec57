/* stats: the summary of a sample set. Percentiles interpolate between the
 * two nearest ranks (numpy's and R's default: p50 of {1, 2, 3, 4} is 2.5);
 * the standard deviation is the sample one (n - 1; 0 for n = 1). */
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

/* A growing sample set, for loops that stop on a time budget. */
typedef struct shmb_samples {
    double *v;
    size_t n;   /* samples held */
    size_t cap; /* room in v */
} shmb_samples_t;

/* Appends x. Returns 0, or -ENOMEM with the set unchanged. */
int shmb_stats_append(shmb_samples_t *set, double x);

/* Frees the set's storage; the set is empty afterwards. */
void shmb_stats_release(shmb_samples_t *set);

/* Summarises samples[0..n), sorting them in place. 0, or -EINVAL (n 0, a NULL). */
int shmb_stats_compute(double *samples, size_t n, shmb_stats_t *out);

/* The p-th percentile (0..100) of sorted[0..n), n >= 1, ascending. */
double shmb_stats_percentile(const double *sorted, size_t n, double p);

#ifdef __cplusplus
}
#endif

#endif
