/* report_cells: one cell of a row as the table (rounded, "-" when empty) or
 * CSV and JSON (every digit) show it, and the date of a report. */
#include "report_internal.h"

#include <string.h>
#include <time.h>

int shmb_report_is_cv(const shmb_row_t *row)
{
    return strcmp(row->aggregate, "cv") == 0;
}

/* Fewer digits as numbers grow: a decimal is shown only where it says something. */
static void format_human(char *buf, double v)
{
    double a = v < 0 ? -v : v;
    snprintf(buf, CELL, a >= 100.0 ? "%.0f" : a >= 10.0 ? "%.1f" : "%.2f", v);
}

static void format_number(char *buf, const shmb_row_t *row, double v, int precise, int is_rate)
{
    if (shmb_report_is_cv(row))
        snprintf(buf, CELL, precise ? "%.4f" : "%.1f%%", precise ? v : v * 100.0);
    else if (precise)
        snprintf(buf, CELL, is_rate ? "%.0f" : "%.3f", v);
    else if (is_rate)
        snprintf(buf, CELL, "%.0f", v);
    else
        format_human(buf, v);
}

/* A row with no measurement (a step this system does not have) shows "-" in
 * every measured column of the table, and nothing in CSV. */
static int unmeasured(const shmb_row_t *row, enum column c)
{
    return row->iterations == 0 && c >= COL_ITERATIONS && c != COL_NOTE;
}

void shmb_report_format_cell(char *buf, const shmb_row_t *row, enum column c, int precise)
{
    buf[0] = '\0';
    if (unmeasured(row, c)) {
        snprintf(buf, CELL, "%s", precise ? "" : "-");
        return;
    }
    switch (c) {
    case COL_ARG_NAME: snprintf(buf, CELL, "%s", row->arg_name); break;
    case COL_ARG:
        if (row->arg_text[0])
            snprintf(buf, CELL, "%s", row->arg_text);
        else
            snprintf(buf, CELL, "%llu", (unsigned long long)row->arg);
        break;
    case COL_VARIANT: snprintf(buf, CELL, "%s", row->variant); break;
    case COL_STEP: snprintf(buf, CELL, "%s", row->step); break;
    case COL_SYSTEM:
        snprintf(buf, CELL, "%s%s%s", row->system, row->vs[0] ? "/vs:" : "", row->vs);
        break;
    case COL_THREADS: snprintf(buf, CELL, "%d", row->threads); break;
    case COL_REP:
        if (row->aggregate[0])
            snprintf(buf, CELL, "%s", row->aggregate);
        else
            snprintf(buf, CELL, "%d", row->repetition);
        break;
    case COL_ITERATIONS: snprintf(buf, CELL, "%llu", (unsigned long long)row->iterations); break;
    case COL_MEAN: case COL_MIN: case COL_P50: case COL_P90: case COL_P99: case COL_P999:
    case COL_MAX: case COL_STDDEV: {
        const double ns[] = {row->ns.mean, row->ns.min, row->ns.p50, row->ns.p90,
                             row->ns.p99, row->ns.p999, row->ns.max, row->ns.stddev};
        format_number(buf, row, ns[c - COL_MEAN], precise, 0);
        break;
    }
    case COL_OPS:
        if (row->items_per_second > 0)
            format_number(buf, row, row->items_per_second, precise, 1);
        break;
    case COL_GBS:
        if (row->bytes_per_second > 0 && shmb_report_is_cv(row))
            format_number(buf, row, row->bytes_per_second, precise, 0);
        else if (row->bytes_per_second > 0)
            snprintf(buf, CELL, precise ? "%.4f" : "%.2f", row->bytes_per_second / 1e9);
        break;
    case COL_SPEEDUP:
        if (row->speedup > 0)
            format_number(buf, row, row->speedup, precise, 0);
        break;
    case COL_NOTE: snprintf(buf, CELL, "%s", row->note); break;
    }
    if (!precise && buf[0] == '\0') /* not for this row (no step, speedup, note): a table cell is never
                                       blank, so columns split on spaces */
        snprintf(buf, CELL, "-");
}

void shmb_report_format_date(int64_t date, char *buf, size_t cap, int json)
{
    time_t t = (time_t)date;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, json ? "%Y-%m-%dT%H:%M:%S+00:00" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}
