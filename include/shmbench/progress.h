/*
 * progress: one line on a terminal saying where a run is and how long it has
 * left, rewritten in place ('\r') and cleared before anything else is said.
 *
 * The library never prints on its own: the caller hands the module the
 * stream to write to (a main hands stderr when it is a terminal, NULL
 * otherwise), and every function does nothing with a NULL stream or a NULL
 * progress. A stream, rather than a callback, because the line's whole
 * life (rate limit, width, clearing) is the same for every caller, so it
 * belongs here where a unit test reaches it; the drivers only say where they
 * are, between timed phases, never inside one.
 *
 * Where a run is: an outer position (the main's: repetition, segment count
 * of a sweep) and an inner one (the driver's: step k of its n); the share
 * done is (outer + k / n) / outers, and the time left is the elapsed time
 * scaled by what is left of that share.
 */
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

/* Starts a progress line on out (NULL: all calls do nothing) for the binary
 * name (kept, not copied). */
void shmb_progress_start(shmb_progress_t *p, FILE *out, const char *name);

/* The main's position: outer of outers (e.g. repetition, or repetition x
 * sweep point); the driver's position starts again at 0 of 0. */
void shmb_progress_outer(shmb_progress_t *p, uint64_t outer, uint64_t outers);

/* The driver plans total steps at this outer position (0 of them done). */
void shmb_progress_plan(shmb_progress_t *p, uint64_t total);

/* The driver starts step done (0-based) of its plan, described by label
 * (e.g. "bipc alloc 64 KB"; a question, a size, a system): the line is
 * redrawn when SHMB_PROGRESS_INTERVAL_NS has passed since the last one, or
 * none is shown. */
void shmb_progress_step(shmb_progress_t *p, uint64_t done, const char *label);

/* Removes the line (spaces over it, back to column 0): before anything else
 * is written to the stream, and at the end. */
void shmb_progress_clear(shmb_progress_t *p);

/* The share of the run done, 0..1, at outer of outers and step done of
 * total (total 0: the outer position alone). */
double shmb_progress_share(uint64_t outer, uint64_t outers, uint64_t done, uint64_t total);

/* The time left in ns, from elapsed_ns and the share done; -1 when it
 * cannot be told yet (nothing done, or under a second elapsed: the first
 * steps include set-up and say little). */
int64_t shmb_progress_left_ns(double share, uint64_t elapsed_ns);

/* The line: "NAME: LABEL  PP%  ~T left" (T as <1 s, 45 s, 3 min 05 s, 1 h 02 min;
 * "~T left" left out when unknown), cut to fit SHMB_PROGRESS_WIDTH and cap.
 * Returns its length, or -EINVAL (cap 0 or a NULL argument). */
int shmb_progress_format(char *buf, size_t cap, const char *name, const char *label, double share,
                         int64_t left_ns);

#ifdef __cplusplus
}
#endif

#endif
