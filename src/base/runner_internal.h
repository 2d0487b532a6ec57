/* runner (library-internal): the one timed loop of every per-operation row.
 * A batch is `count` operations run and checked by the caller's function;
 * the runner sizes batches against the timer and times them until the
 * plan's count or budget is met, one sample (ns per operation) a batch. */
#ifndef SHMBENCH_RUNNER_INTERNAL_H
#define SHMBENCH_RUNNER_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "shmbench/stats.h"

/* Runs `count` operations (>= 1) and checks what they did: 0, or -errno
 * (the run stops and returns it). The result must be consumed inside. */
typedef int (*shmb_runner_fn)(void *ctx, uint64_t count);

typedef struct shmb_runner_plan {
    uint64_t ops;         /* operations to time, split into `batches` as even as can be */
    uint64_t batches;     /* 0: as many batches of ops each as the budget allows (ops = batch size) */
    uint64_t budget_ns;   /* no batch starts once the timed ones took this long ... */
    uint64_t min_batches; /* ... and at least these many have run (the first always runs) */
    atomic_int *stop;     /* NULL, or set by another thread: no further batch starts */
    shmb_runner_fn before, after; /* NULL, or untimed around each batch, with its count (set-up,
                                   * what is left to let go and check): a failure ends the run */
    uint64_t *clocks;     /* NULL, or the last batch's start and end ([0], [1]), set before after runs */
} shmb_runner_plan_t;

/* The fewest operations, doubling from 1 up to `cap`, whose one batch lasts
 * at least min_ns: the batch that dwarfs the timer. 0 with *err = -errno
 * when fn fails. */
uint64_t shmb_runner_batch(shmb_runner_fn fn, void *ctx, double min_ns, uint64_t cap, int *err);

/* Times the plan's batches; each batch's ns per operation is appended to
 * `out`, the operations timed added to *done (may be NULL). Returns 0, or
 * fn's -errno, or -ENOMEM (out could not grow), or -EINVAL (no ops). */
int shmb_runner_run(const shmb_runner_plan_t *plan, shmb_runner_fn fn, void *ctx, shmb_samples_t *out,
                    uint64_t *done);

#endif
