/* crew (not installed): the library's one thread harness. `threads` members,
 * placed once on the CPUs shmb_sysinfo_plan_cpus plans, run one function
 * together as often as needed: a start gate and a spinning barrier (members
 * leave within a few hundred ns of each other), the first member's error
 * returned with its record, and the wall time of each phase. */
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

/* Creates and places the threads, which wait for a run; nothing left on error.
 * 0, -EINVAL (threads < 1, unknown pin) or -errno recorded (a pin's object
 * "CPU n" or "the allowed CPUs"). */
int shmb_crew_start(shmb_crew_t **crew, const shmb_crew_config_t *cfg);

/* fn on every member at once, until all return: 0, or the first shmb_crew_fail()
 * error, its record copied to the caller's. */
int shmb_crew_run(shmb_crew_t *crew, shmb_crew_fn fn, void *arg);

/* Joins, restores the caller's affinity, frees; NULL is fine. */
void shmb_crew_stop(shmb_crew_t *crew);

int shmb_crew_threads(const shmb_crew_t *crew);

/* The CPU member i is pinned to; -1 when not pinned. */
int shmb_crew_cpu(const shmb_crew_t *crew, int member);

/* Inside a run, a barrier every member calls alike: 1 while none has failed, else 0. */
int shmb_crew_sync(shmb_crew_t *crew);

/* 1 while no member has failed in this run. */
int shmb_crew_ok(const shmb_crew_t *crew);

/* member failed with err (< 0), recorded on its thread (kept if the run's first). */
void shmb_crew_fail(shmb_crew_t *crew, int member, int err);

/* The member whose failure shmb_crew_run() returned, -1 when none. Read after the run. */
int shmb_crew_failed_member(const shmb_crew_t *crew);

/* Summed over phases: the last member's end - the first's start, at [phase * threads + member]. */
double shmb_crew_wall_ns(const uint64_t *start, const uint64_t *end, uint64_t phases, int threads);

#endif
