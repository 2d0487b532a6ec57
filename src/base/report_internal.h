/* report_internal: what the rows and aggregates (report.c) and the writers
 * (report_writers.c) share. Not installed. */
#ifndef SHMB_REPORT_INTERNAL_H
#define SHMB_REPORT_INTERNAL_H

#include "shmbench/report.h"

#include <stddef.h>
#include <stdio.h>

/* A row's name without its aggregate suffix, as in shmb_report_row_name;
 * returns its length, at most cap - 1. */
size_t shmb_report_base_name(const shmb_report_t *report, const shmb_row_t *row, char *buf, size_t cap);

/* Whether two rows measure the same thing (one group of repetitions). */
int shmb_report_same_name(const shmb_row_t *a, const shmb_row_t *b);

/* The writers of the n rows in order, in their display order. */
int shmb_report_write_table(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n);
void shmb_report_write_csv(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n);
void shmb_report_write_json(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n);

#endif
