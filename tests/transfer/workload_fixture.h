/* The workload tests' replay: one shape and system's config, runs that succeed or are refused; after helpers.h. */
#ifndef SHMB_TEST_WORKLOAD_FIXTURE_H
#define SHMB_TEST_WORKLOAD_FIXTURE_H

#include "shmbench/workload.h"

/* A replay of shape through system: 10 registrations, memcpy, one thread. */
static inline shmb_workload_config_t shmb_test_workload_config(shmb_workload_shape_t shape, shmb_system_t system)
{
    shmb_workload_config_t c;
    memset(&c, 0, sizeof(c));
    c.shape = shape;
    c.system = system;
    c.num_segments = 10;
    c.method = SHMB_COPY_MEMCPY;
    c.threads = 1;
    c.cpu = -1;
    c.timer_overhead_ns = 20;
    c.shm_prefix = shmb_test_prefix();
    return c;
}

/* The rows of a replay of s that must succeed (else the case fails naming the system and why). */
static inline shmb_rows_t shmb_test_workload_rows(const shmb_workload_config_t *c, const shmb_workload_stream_t *s)
{
    shmb_rows_t rows = {0};
    char why[256] = "";
    const int ret = shmb_workload_run(c, s, &rows, why, sizeof(why));
    if (ret != 0)
        fail_msg("%s: %d: %s", shmb_system_name(c->system), ret, why);
    return rows;
}

/* A replay of s that must fail with want, no row made. */
static inline void shmb_test_workload_refused(const shmb_workload_config_t *c, const shmb_workload_stream_t *s, int want)
{
    shmb_rows_t rows = {0};
    char why[256] = "";
    assert_int_equal(shmb_workload_run(c, s, &rows, why, sizeof(why)), want);
    assert_int_equal(rows.n, 0);
}

#endif
