/*
 * notes: the lines under a table's header that say how its rows were
 * measured, for the mode a run's configuration selects (a second process,
 * threads and their CPUs, one system, cold or first-touch rows, the lookup
 * mode). One function per binary, declared in its header (alloc_bench.h, ...)
 * and written in its folder (src/alloc/alloc_notes.c, ...); the configuration
 * is the one the run used.
 *
 * Each function sets report->notes[0..n) and a NULL after them, and returns
 * n, or -errno with the report untouched:
 * - -EOVERFLOW: more notes than report->notes holds (with its NULL), or
 *   composed text beyond what `store` has left;
 * - -errno of shmb_sysinfo_plan_cpus (recorded) when threads > 1 and the
 *   CPUs they run on cannot be read.
 * Notes whose text depends on the run (its CPUs, sizes, counts) are
 * composed into `store`, after what it holds already (a zeroed store is
 * empty); the report points into it, so it must outlive the report.
 */
#ifndef SHMBENCH_NOTES_H
#define SHMBENCH_NOTES_H

#include <stddef.h>

#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for every composed note of one report: the longest, a list of 256
 * threads' CPUs, takes under 1,700 bytes. */
#define SHMB_NOTES_TEXT_BYTES 8192

typedef struct shmb_notes {
    char text[SHMB_NOTES_TEXT_BYTES]; /* the composed notes, each NUL-terminated */
    size_t used;                      /* bytes of text in use (=0: empty) */
} shmb_notes_t;

#ifdef __cplusplus
}
#endif

#endif
