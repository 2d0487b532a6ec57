/* The replay's mode, picked once: open-loop (workload_open.c), paired or
 * one system's closed loop (transfer_workload.c). */
#include "workload_internal.h"

#include <errno.h>

int shmb_workload_run(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream, shmb_rows_t *rows,
                      char *why, size_t why_cap)
{
    shmb_workload_totals_t totals;
    if (shmb_workload_totals(&cfg->shape, stream, &totals) < 0)
        return -EINVAL;
    if (cfg->open_loop)
        return cfg->nsystems ? -EINVAL
                             : shmb_workload_open_replay(cfg, stream, totals.max_bytes, rows, why, why_cap);
    if (cfg->nsystems)
        return shmb_transfer_systems_check(cfg->systems, cfg->nsystems) < 0
                   ? -EINVAL
                   : shmb_workload_paired_replay(cfg, stream, &totals, rows, why, why_cap);
    return shmb_workload_closed_replay(cfg, stream, &totals, rows, why, why_cap);
}
