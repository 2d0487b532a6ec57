/* report: the rows a run measures, their aggregates over repetitions, and
 * the dispatch to one writer (report_table.c, report_json.c). */
#include "shmbench/report.h"

#include "names_internal.h"
#include "report_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


shmb_row_t shmb_row_make(const char *variant, const char *arg_name, uint64_t arg, int repetition)
{
    shmb_row_t row;
    memset(&row, 0, sizeof(row));
    snprintf(row.variant, sizeof(row.variant), "%s", variant);
    snprintf(row.arg_name, sizeof(row.arg_name), "%s", arg_name);
    row.arg = arg;
    row.threads = 1;
    row.repetition = repetition;
    return row;
}

int shmb_rows_push(shmb_rows_t *rows, const shmb_row_t *row)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 64;
        shmb_row_t *v = realloc(rows->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        rows->v = v;
        rows->cap = cap;
    }
    rows->v[rows->n++] = *row;
    return 0;
}

int shmb_rows_push_samples(shmb_rows_t *rows, shmb_row_t *row, double *samples, size_t n)
{
    int ret = shmb_stats_compute(samples, n, &row->ns);
    if (ret < 0)
        return ret;
    row->items_per_second = row->ns.mean > 0 ? 1e9 / row->ns.mean : 0;
    return shmb_rows_push(rows, row);
}

shmb_row_t *shmb_rows_find(const shmb_rows_t *rows, const char *variant, const char *step,
                           uint64_t arg, int repetition)
{
    for (size_t i = 0; i < rows->n; i++) {
        shmb_row_t *r = &rows->v[i];
        if (r->arg == arg && r->repetition == repetition && strcmp(r->variant, variant) == 0 &&
            strcmp(r->step, step) == 0)
            return r;
    }
    return NULL;
}

void shmb_rows_free(shmb_rows_t *rows)
{
    free(rows->v);
    rows->v = NULL;
    rows->n = rows->cap = 0;
}

int shmb_report_parse_format(const char *text, shmb_format_t *out)
{
    static const char *const names[] = {"table", "csv", "json"};
    const int f = shmb_names_find(names, 3, text);
    return f < 0 ? f : (*out = (shmb_format_t)f, 0);
}

/* The row's numbers that aggregates summarise. */
static double *metric(shmb_row_t *row, int i)
{
    double *fields[] = {&row->ns.min, &row->ns.mean, &row->ns.stddev, &row->ns.p50,
                        &row->ns.p90, &row->ns.p99, &row->ns.p999, &row->ns.max,
                        &row->items_per_second, &row->bytes_per_second, &row->speedup};
    return i < (int)(sizeof(fields) / sizeof(fields[0])) ? fields[i] : NULL;
}

static int first_of_name(const shmb_rows_t *rows, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (shmb_report_same_name(&rows->v[j], &rows->v[i]))
            return 0;
    return 1;
}

static int aggregate_group(const shmb_rows_t *rows, size_t first, shmb_rows_t *out, double *values)
{
    static const char *names[] = {"mean", "median", "stddev", "cv"};
    shmb_row_t agg[4];
    for (int a = 0; a < 4; a++) {
        agg[a] = rows->v[first];
        snprintf(agg[a].aggregate, sizeof(agg[a].aggregate), "%s", names[a]);
    }
    for (int m = 0; metric(&agg[0], m); m++) {
        size_t n = 0;
        for (size_t j = first; j < rows->n; j++)
            if (shmb_report_same_name(&rows->v[j], &rows->v[first]))
                values[n++] = *metric(&rows->v[j], m);
        shmb_stats_t s;
        shmb_stats_compute(values, n, &s);
        *metric(&agg[0], m) = s.mean;
        *metric(&agg[1], m) = s.p50;
        *metric(&agg[2], m) = s.stddev;
        *metric(&agg[3], m) = s.mean != 0.0 ? s.stddev / s.mean : 0.0;
    }
    uint64_t iterations = 0;
    int same_note = 1; /* a note of figures (a share, a rate) differs per repetition */
    for (size_t j = first; j < rows->n; j++)
        if (shmb_report_same_name(&rows->v[j], &rows->v[first])) {
            iterations += rows->v[j].iterations;
            same_note &= strcmp(rows->v[j].note, rows->v[first].note) == 0;
        }
    for (int a = 0; a < 4; a++) {
        agg[a].iterations = iterations;
        if (!same_note) /* no aggregate of the repetitions' notes: none, rather than the first's */
            agg[a].note[0] = '\0';
        if (shmb_rows_push(out, &agg[a]) != 0)
            return -ENOMEM;
    }
    return 0;
}

int shmb_report_aggregate(const shmb_rows_t *rows, shmb_rows_t *out)
{
    double *values = malloc((rows->n ? rows->n : 1) * sizeof(double));
    if (!values)
        return -ENOMEM;
    int ret = 0;
    for (size_t i = 0; i < rows->n && ret == 0; i++) {
        if (!first_of_name(rows, i))
            continue;
        size_t count = 0;
        for (size_t j = i; j < rows->n; j++)
            count += shmb_report_same_name(&rows->v[j], &rows->v[i]);
        if (count > 1)
            ret = aggregate_group(rows, i, out, values);
    }
    free(values);
    return ret;
}

/* Rows in output order: each name's repetitions, then its aggregates. */
static const shmb_row_t **order_rows(const shmb_rows_t *rows, const shmb_rows_t *aggs, size_t *n)
{
    const shmb_row_t **order = malloc((rows->n + aggs->n + 1) * sizeof(*order));
    if (!order)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < rows->n; i++) {
        if (!first_of_name(rows, i))
            continue;
        for (size_t j = i; j < rows->n; j++)
            if (shmb_report_same_name(&rows->v[j], &rows->v[i]))
                order[k++] = &rows->v[j];
        for (size_t j = 0; j < aggs->n; j++)
            if (shmb_report_same_name(&aggs->v[j], &rows->v[i]))
                order[k++] = &aggs->v[j];
    }
    *n = k;
    return order;
}

int shmb_report_write(FILE *out, shmb_format_t format, const shmb_report_t *report,
                      const shmb_rows_t *rows)
{
    shmb_rows_t aggs = {0};
    int ret = report->repetitions > 1 ? shmb_report_aggregate(rows, &aggs) : 0;
    size_t n = 0;
    const shmb_row_t **order = ret == 0 ? order_rows(rows, &aggs, &n) : NULL;
    if (!order) {
        shmb_rows_free(&aggs);
        return -ENOMEM;
    }
    if (format == SHMB_FORMAT_TABLE)
        ret = shmb_report_write_table(out, report, order, n);
    else if (format == SHMB_FORMAT_CSV)
        shmb_report_write_csv(out, report, order, n);
    else
        shmb_report_write_json(out, report, order, n);
    free(order);
    shmb_rows_free(&aggs);
    if (ret == 0 && (fflush(out) != 0 || ferror(out)))
        ret = errno ? -errno : -EIO; /* the failed write's errno: ENOSPC, EBADF, ... */
    return ret;
}
