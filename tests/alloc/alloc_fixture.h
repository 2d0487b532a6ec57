/* The allocation benchmark's small run for the tests beside upstream code:
 * 4 and 8 KB blocks, 64 iterations of 256 operations at least, a working
 * set of 64, seed 1, one thread, the count given, names under prefix. */
#ifndef SHMB_TEST_ALLOC_FIXTURE_H
#define SHMB_TEST_ALLOC_FIXTURE_H

#include <string.h>

#include "alloc/alloc_internal.h"

static inline shmb_alloc_config_t shmb_test_alloc_small(const char *prefix)
{
    shmb_alloc_config_t c;
    memset(&c, 0, sizeof(c));
    c.num_iterations = 64;
    c.min_size_kb = 4;
    c.max_size_kb = 8;
    c.min_ops = 256;
    c.working_set = 64;
    c.count_given = 1;
    c.cleanup = 1;
    c.seed = 1;
    c.threads = 1;
    c.shm_prefix = prefix;
    return c;
}

#endif
