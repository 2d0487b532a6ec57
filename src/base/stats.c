/* stats: the summary of a sample set: mean, spread and interpolated
 * percentiles (shmbench/stats.h). */
#include "shmbench/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int shmb_stats_append(shmb_samples_t *set, double x)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 256;
        double *v = realloc(set->v, cap * sizeof(double));
        if (!v)
            return -ENOMEM;
        set->v = v;
        set->cap = cap;
    }
    set->v[set->n++] = x;
    return 0;
}

void shmb_stats_release(shmb_samples_t *set)
{
    free(set->v);
    set->v = NULL;
    set->n = set->cap = 0;
}

double shmb_stats_percentile(const double *sorted, size_t n, double p)
{
    double rank = (double)(n - 1) * p / 100.0;
    size_t lo = (size_t)rank;
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + (rank - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

int shmb_stats_compute(double *samples, size_t n, shmb_stats_t *out)
{
    if (!samples || !out || n == 0)
        return -EINVAL;
    qsort(samples, n, sizeof(samples[0]), compare_double);

    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    double mean = sum / (double)n;
    double squares = 0.0;
    for (size_t i = 0; i < n; i++)
        squares += (samples[i] - mean) * (samples[i] - mean);

    out->count = n;
    out->min = samples[0];
    out->max = samples[n - 1];
    out->mean = mean;
    out->stddev = n > 1 ? sqrt(squares / (double)(n - 1)) : 0.0;
    out->p50 = shmb_stats_percentile(samples, n, 50.0);
    out->p90 = shmb_stats_percentile(samples, n, 90.0);
    out->p99 = shmb_stats_percentile(samples, n, 99.0);
    out->p999 = shmb_stats_percentile(samples, n, 99.9);
    return 0;
}
