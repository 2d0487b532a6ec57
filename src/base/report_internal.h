/* report_internal: what the rows (report.c), the names (report_names.c),
 * the cells (report_cells.c) and the writers share. Not installed. */
#ifndef SHMB_REPORT_INTERNAL_H
#define SHMB_REPORT_INTERNAL_H

#include "shmbench/report.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CELL 96 /* bytes of a formatted cell */

enum column {
    COL_ARG_NAME, COL_ARG, COL_VARIANT, COL_STEP, COL_SYSTEM, COL_THREADS, COL_REP, COL_ITERATIONS,
    COL_MEAN, COL_MIN, COL_P50, COL_P90, COL_P99, COL_P999, COL_MAX, COL_STDDEV,
    COL_OPS, COL_GBS, COL_SPEEDUP, COL_NOTE,
};

/* A row's name without its aggregate suffix; returns its length, at most cap - 1. */
size_t shmb_report_base_name(const shmb_report_t *report, const shmb_row_t *row, char *buf, size_t cap);

/* Whether two rows measure the same thing (one group of repetitions). */
int shmb_report_same_name(const shmb_row_t *a, const shmb_row_t *b);

/* Whether row is the coefficient-of-variation aggregate (a share, not a time). */
int shmb_report_is_cv(const shmb_row_t *row);

/* Column c of row into buf (CELL bytes): every digit when precise (CSV,
 * JSON), else rounded for the table, which never has a blank cell ("-"). */
void shmb_report_format_cell(char *buf, const shmb_row_t *row, enum column c, int precise);

/* date (seconds since the epoch, UTC) as ISO 8601: "...Z", or "...+00:00" for JSON. */
void shmb_report_format_date(int64_t date, char *buf, size_t cap, int json);

/* The writers of the n rows in order, in their display order. */
int shmb_report_write_table(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n);
void shmb_report_write_csv(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n);
void shmb_report_write_json(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n);

#endif
