/* notes: the lines under a table's header saying how its rows were measured.
 * Each binary's notes function (alloc_bench.h, ...) sets report->notes[0..n)
 * and a NULL, returning n, or -errno with the report untouched: -EOVERFLOW
 * (too many notes, or text beyond what `store` has left), or
 * shmb_sysinfo_plan_cpus's (recorded). Composed notes go into `store` (zeroed:
 * empty), which must outlive the report. */
#ifndef SHMBENCH_NOTES_H
#define SHMBENCH_NOTES_H

#include <stddef.h>

#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for one report's composed notes (256 threads' CPUs take under 1,700 bytes). */
#define SHMB_NOTES_TEXT_BYTES 8192

typedef struct shmb_notes {
    char text[SHMB_NOTES_TEXT_BYTES]; /* the composed notes, each NUL-terminated */
    size_t used;                      /* bytes of text in use (=0: empty) */
} shmb_notes_t;

#ifdef __cplusplus
}
#endif

#endif
