/* shm_address_lookup_bench's driver (shmb_lookup_bench_run): picks the mode
 * (one process, two, paired), starts and stops the peer process, sets the
 * speedups. Calls down to the modes (lookup_owner.c, lookup_paired.c,
 * lookup_peer.c) and the helpers (lookup_bench.c, lookup_measure.c). */
#include "lookup_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* One process's run: every selected path set up, verified, then timed. */
static int run_paths(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, shmb_rows_t *rows, char *why,
                     size_t cap)
{
    int ret = 0;
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (lookup_path_runs(cfg, p))
            ret = shmb_lookup_bench_setup(cfg, s, p, why, cap);
    /* Correctness first: no path is timed unless every one translates right. */
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (lookup_path_runs(cfg, p))
            ret = shmb_lookup_bench_verify(s, p, s->window * s->windows, why, cap);
    uint64_t paths = 0, at = 0;
    for (int p = 0; p < SHMB_PATHS; p++)
        paths += lookup_path_runs(cfg, p) != 0;
    shmb_progress_plan(cfg->progress, paths);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!lookup_path_runs(cfg, p))
            continue;
        char label[64];
        snprintf(label, sizeof(label), "%s, %llu segments", lookup_path_name(p),
                 (unsigned long long)cfg->num_segments);
        shmb_progress_step(cfg->progress, at++, label);
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = shmb_lookup_bench_measure(cfg, s, p, 0, rows, NULL, why, cap);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = shmb_lookup_bench_measure(cfg, s, p, 1, rows, NULL, why, cap);
        const int system = shmb_path_kind(p) == SHMB_PATH_SYSTEM;
        if (ret == 0 && (p == SHMB_SYSTEM_MOONCAKE || (cfg->system_rows && system))) /* none: a dash row */
            ret = shmb_lookup_bench_setup_row(cfg, p, shmb_lookup_bench_first_use_step(cfg), SHMB_LOOKUP_FIRST_USE_NOTE,
                                              p == SHMB_SYSTEM_MOONCAKE ? &s->first_use : NULL, rows);
    }
    return ret;
}

/* A run across two processes: the peer forked first (this process still
 * single-threaded), then the mode; its rows stay only when the peer also
 * stopped cleanly, and the first failure's error survives the stop. */
static int run_two(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why, size_t cap)
{
    shmb_lookup_peer_t side;
    shmb_peer_t peer;
    memset(&side, 0, sizeof(side));
    side.cfg = cfg;
    side.peer = &peer;
    int ret = shmb_peer_start(&peer, cfg->shm_prefix, SHMB_LOOKUP_PEER_DATA_BYTES, &shmb_lookup_peer_commands,
                              &side);
    if (ret < 0)
        return ret;
    const size_t first = rows->n;
    ret = cfg->nsystems ? shmb_lookup_bench_paired_first_attach(cfg, &peer, rows, why, cap)
                        : shmb_lookup_bench_owner_run(cfg, &peer, rows, why, cap);
    const shmb_error_t failure = *shmb_error_last(); /* the stop may record its own */
    const int stopped = shmb_peer_stop(&peer);
    if (ret < 0 && failure.call)
        shmb_error_record(failure.call, failure.err, failure.object);
    if (ret == 0 && stopped < 0)
        rows->n = first;
    return ret < 0 ? ret : stopped;
}

int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap)
{
    int ret = shmb_lookup_bench_check(cfg);
    if (ret == 0 && cfg->nsystems) {
        if ((ret = shmb_lookup_bench_paired_check(cfg)) < 0)
            return ret;
        return cfg->peer_process ? run_two(cfg, rows, why, why_cap)
                                 : shmb_lookup_bench_paired_translate(cfg, rows, why, why_cap);
    }
    int systems = 0;
    for (int p = 0; p < SHMB_SYSTEMS; p++)
        systems += cfg->run_system[p] != 0;
    if (ret == 0 && cfg->system_rows) {
        for (int k = 0; k < SHMB_LOOKUP_STRATEGIES; k++)
            ret = cfg->run[k] ? -EINVAL : ret;
        ret = systems == 1 ? ret : -EINVAL;
    }
    if (ret < 0)
        return ret;
    size_t first = rows->n;
    if (cfg->peer_process) {
        ret = run_two(cfg, rows, why, why_cap);
    } else {
        shmb_lookup_setup_t s;
        ret = shmb_lookup_bench_prepare(cfg, &s);
        if (ret < 0)
            return ret;
        ret = run_paths(cfg, &s, rows, why, why_cap);
        shmb_lookup_bench_teardown(&s);
    }
    if (ret < 0 || cfg->system_rows)
        return ret;

    /* Each kind against the baseline's row of the same kind. */
    const char *baseline = lookup_path_name(cfg->run_system[SHMB_SYSTEM_MOONCAKE]
                                                ? SHMB_SYSTEM_MOONCAKE
                                                : SHMB_SYSTEMS + SHMB_LOOKUP_LINEAR);
    static const char *const kinds[] = {"", "latency"};
    for (int k = 0; k < 2; k++) {
        const shmb_row_t *base = shmb_rows_find(rows, baseline, kinds[k], cfg->num_segments, cfg->repetition);
        for (size_t i = first; base && i < rows->n; i++)
            if (strcmp(rows->v[i].step, kinds[k]) == 0)
                rows->v[i].speedup = base->ns.p50 / rows->v[i].ns.p50;
    }
    return 0;
}
