/*
 * crew: the library's one thread harness. A crew is `threads` members that
 * run one function together: started once (each member placed on its CPU),
 * then run as often as needed, then stopped. The allocation driver runs its
 * threaded paths on one, the lookup driver times a path's threads on one,
 * and the copy crew splits each transfer over one.
 *
 * What it gives every user:
 * - placement: members pinned to the CPUs shmb_sysinfo_plan_cpus() plans
 *   (or running on every allowed CPU), a member that cannot be placed
 *   failing shmb_crew_start() with the error recorded;
 * - a start gate: a run starts every member at once (workers spin, then
 *   yield, between runs), and shmb_crew_sync() is a spinning barrier, so
 *   members leave it within a few hundred nanoseconds of each other;
 * - the first error: members report failures with shmb_crew_fail(); the
 *   first one wins, shmb_crew_run() returns it and copies the failing
 *   member's error record (shmbench/error.h, per thread) to the caller's;
 * - wall time: shmb_crew_wall_ns() over the members' clocks of each phase.
 *
 * Private to the library and its tests: not installed.
 */
#ifndef SHMBENCH_CREW_INTERNAL_H
#define SHMBENCH_CREW_INTERNAL_H

#include <stdint.h>

typedef struct shmb_crew shmb_crew_t;

/* What each member runs: member is 0 .. threads - 1. */
typedef void (*shmb_crew_fn)(shmb_crew_t *crew, int member, void *arg);

typedef enum shmb_crew_pin {
    SHMB_CREW_PIN_OWN,    /* pinned when the plan has a CPU of its own for each member;
                           * else every member runs on every allowed CPU */
    SHMB_CREW_PIN_ALWAYS, /* pinned to the planned CPU, shared when the plan wraps */
    SHMB_CREW_PIN_NONE,   /* members keep the affinity of the thread that starts them */
} shmb_crew_pin_t;

typedef struct shmb_crew_config {
    int threads;          /* members, >= 1 */
    int cpu;              /* the plan's first CPU (shmb_sysinfo_plan_cpus), -1: the first allowed */
    shmb_crew_pin_t pin;
    int caller_joins;     /* 1: the calling thread is member 0 of every run (placed by start,
                           * its affinity given back by stop); 0: every member is a new thread */
} shmb_crew_config_t;

/* Starts a crew: its threads are created and placed and wait for a run.
 * Returns 0, -EINVAL (threads < 1, an unknown pin), or -errno recorded under
 * the failed call: malloc, pthread_create, sched_getaffinity,
 * sched_setaffinity (object "CPU n", or "the allowed CPUs"). Nothing is
 * left on error. */
int shmb_crew_start(shmb_crew_t **crew, const shmb_crew_config_t *cfg);

/* Runs fn(crew, member, arg) on every member at once and returns when all
 * returned: 0, or the first error a member reported with shmb_crew_fail(),
 * whose record is copied to the calling thread's. */
int shmb_crew_run(shmb_crew_t *crew, shmb_crew_fn fn, void *arg);

/* Joins the threads, gives the caller its affinity back, frees the crew.
 * NULL is fine. */
void shmb_crew_stop(shmb_crew_t *crew);

int shmb_crew_threads(const shmb_crew_t *crew);

/* The CPU member i is pinned to; -1 when not pinned. */
int shmb_crew_cpu(const shmb_crew_t *crew, int member);

/* Inside a run. A barrier: every member calls it the same number of times;
 * returns 1 while no member has failed in this run, else 0. */
int shmb_crew_sync(shmb_crew_t *crew);

/* 1 while no member has failed in this run. */
int shmb_crew_ok(const shmb_crew_t *crew);

/* Member `member` failed with err (< 0), after recording it on its thread
 * (its record is kept when it is the first failure of the run). */
void shmb_crew_fail(shmb_crew_t *crew, int member, int err);

/* The member whose failure shmb_crew_run() returned, -1 when none. Read after the run. */
int shmb_crew_failed_member(const shmb_crew_t *crew);

/* Summed wall time of `phases` phases: for each, the last member's end
 * minus the first member's start, with start and end at [phase * threads +
 * member]. */
double shmb_crew_wall_ns(const uint64_t *start, const uint64_t *end, uint64_t phases, int threads);

#endif
