/* progress: one line on a terminal ('\r', rate-limited, cleared before
 * anything else is said) with the share done and the time left; a NULL
 * stream or progress makes every call do nothing. The share is (outer + k /
 * n) / outers: the main's position, then the driver's step k of n. */
#ifndef SHMBENCH_PROGRESS_H
#define SHMBENCH_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_PROGRESS_WIDTH 78           /* a line never exceeds this (an 80-column terminal) */
#define SHMB_PROGRESS_INTERVAL_NS 100000000ull /* redrawn at most every 100 ms */

typedef struct shmb_progress {
    FILE *out;          /* NULL: silent */
    const char *name;   /* the binary, first on the line */
    uint64_t start_ns;  /* shmb_progress_start's time */
    uint64_t drawn_ns;  /* when the line was last drawn */
    uint64_t outer, outers; /* the main's position: outer of outers (0 of 1 until set) */
    uint64_t done, total;   /* the driver's position: step done of total (0 of 0: none yet) */
    size_t shown;       /* characters on the terminal now (0: no line) */
} shmb_progress_t;

/* A progress line on out (NULL: silent) for the binary name (kept, not copied). */
void shmb_progress_start(shmb_progress_t *p, FILE *out, const char *name);

/* The main's position; the driver's starts again at 0 of 0. */
void shmb_progress_outer(shmb_progress_t *p, uint64_t outer, uint64_t outers);

/* The driver plans total steps at this outer position (0 of them done). */
void shmb_progress_plan(shmb_progress_t *p, uint64_t total);

/* The driver starts step done (0-based), described by label; redrawn at most
 * every SHMB_PROGRESS_INTERVAL_NS. */
void shmb_progress_step(shmb_progress_t *p, uint64_t done, const char *label);

/* Removes the line (spaces over it, back to column 0). */
void shmb_progress_clear(shmb_progress_t *p);

/* The share done, 0..1 (total 0: the outer position alone). */
double shmb_progress_share(uint64_t outer, uint64_t outers, uint64_t done, uint64_t total);

/* The time left in ns; -1 with nothing done or under a second elapsed. */
int64_t shmb_progress_left_ns(double share, uint64_t elapsed_ns);

/* "NAME: LABEL  PP%  ~T left" (T: <1 s, 45 s, 3 min 05 s, 1 h 02 min; left out
 * when unknown), cut to SHMB_PROGRESS_WIDTH and cap. Its length, or -EINVAL. */
int shmb_progress_format(char *buf, size_t cap, const char *name, const char *label, double share,
                         int64_t left_ns);

#ifdef __cplusplus
}
#endif

#endif
