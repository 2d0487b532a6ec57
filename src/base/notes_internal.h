/* notes (library-internal): composing a report's notes. Each benchmark's
 * notes live in its folder (alloc/alloc_notes.c, ...); these are the parts
 * they share. */
#ifndef SHMBENCH_NOTES_INTERNAL_H
#define SHMBENCH_NOTES_INTERNAL_H

#include <stddef.h>

#include "shmbench/notes.h"
#include "shmbench/report.h"

/* report->notes holds this many notes and their NULL. */
#define SHMB_NOTES_CAP (sizeof(((shmb_report_t *)0)->notes) / sizeof(const char *) - 1)

/* The most threads any binary runs: the CPU list of a threads note. */
#define SHMB_NOTES_MAX_THREADS 256

/* The notes of one report as they are added; full once one does not fit. */
typedef struct lines {
    const char *v[SHMB_NOTES_CAP];
    size_t n;
    int full;
} shmb_notes_lines_t;

/* note NULL: its text did not fit in the store (the lines are then full). */
void shmb_notes_add(shmb_notes_lines_t *l, const char *note);
/* The notes report->notes holds already, first in l (for a function that appends). */
void shmb_notes_keep(shmb_notes_lines_t *l, const shmb_report_t *report);
/* The lines into report->notes: their count; or -EOVERFLOW when one did not
 * fit, the store then back to `start` (what this report's notes used). */
int shmb_notes_publish(shmb_report_t *report, const shmb_notes_lines_t *l, shmb_notes_t *store, size_t start);
/* Appends printf-style text to the note being composed. */
void shmb_notes_put(shmb_notes_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the note begun at `start`: it, or NULL (the store unchanged) when it did not fit. */
const char *shmb_notes_end(shmb_notes_t *s, size_t start);
/* "pinned to CPUs 0,1" or why not: where `threads` threads from `cpu` on run. */
int shmb_notes_put_cpus(shmb_notes_t *s, int threads, int cpu);
/* A paired run's common lines: its systems, baseline and control, order and verdicts. */
void shmb_notes_paired_lines(shmb_notes_lines_t *l, shmb_notes_t *s, const char *const *names, size_t nsys,
                             const char *control_is);

#endif
