/* The notes of shm_address_lookup_bench's table (and its hand-off mode),
 * worded for the mode the run selects; a change of wording is a change of the output a user diffs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lookup_internal.h"
#include "base/notes_internal.h"
#include "shmbench/copy.h"
#include "shmbench/paired.h"
#include "shmbench/sysinfo.h"
#include "shmbench/handoff_bench.h"

_Static_assert(SHMB_LOOKUP_MAX_THREADS <= SHMB_NOTES_MAX_THREADS, "lookup threads exceed the CPU list");

static const char *placement_note(shmb_lookup_placement_t placement)
{
    switch (placement) {
    case SHMB_LOOKUP_PLACE_DESCENDING:
        return "placement: descending (the peer registers its segments in descending address order, as "
               "Mooncake does: each buffer a fresh mmap, placed below the last)";
    case SHMB_LOOKUP_PLACE_ASCENDING:
        return "placement: ascending (the peer registers its segments in ascending address order)";
    default:
        return "placement: random (the peer registers its segments in an order unrelated to their "
               "addresses: linear's and mooncake's scan mispredict)";
    }
}

/* How the rows were timed: by a peer, by one thread, or by several. */
static const char *lookup_timing(shmb_notes_t *s, const shmb_lookup_config_t *cfg, int *err)
{
    if (cfg->peer_process)
        return "two processes (--peer_process): this one created the SHM objects and wrote a tag at every "
               "request's word; a forked peer attached them, translated, read each tag through its "
               "translated pointer and timed every row (ns per lookup = batch time / lookups in the batch "
               "(>= 4096), p50, p99, max over batches); one set at a time: mooncake's segments (the "
               "kernels' too), flowipc_classic's pool, flowipc_jemalloc's pools";
    if (cfg->threads <= 1)
        return "ns per lookup = batch time / lookups in the batch (>= 4096), batches walking through a pool "
               "of >= 131072 distinct requests; p50, p99, max over batches";
    const size_t start = s->used;
    shmb_notes_put(s, "threads: %d at once, each its own request stream, sharing the path's metadata, pool and "
           "repository, ", cfg->threads);
    *err = shmb_notes_put_cpus(s, cfg->threads, cfg->cpu);
    if (*err < 0) {
        s->used = start;
        return NULL;
    }
    shmb_notes_put(s, "; ns per lookup per thread = batch time / lookups in the batch (>= 4096), p50, p99, max over "
           "every thread's batches; ops_per_s = all threads' lookups / wall time; first_use: one thread");
    return shmb_notes_end(s, start);
}

/* A paired lookup run: its systems, and which question it answers how. */
static void lookup_paired(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_lookup_config_t *cfg)
{
    shmb_notes_paired_lines(l, s, cfg->system_names, cfg->nsystems,
                 "an independent second instance of the baseline (its own objects, mapping and metadata)");
    if (cfg->peer_process) {
        const size_t at = s->used;
        shmb_notes_put(s, "rounds of attach: %zu; each round the peer performs each system's whole first attach, the receiver's "
               "TOTAL before its first request (mooncake: every buffer's first request, shm_open + mmap each, "
               "the first_use times summed; flowipc_classic: its one pool, no message; flowipc_jemalloc: its "
               "session's lend, timed by the owner: LendArena, then per pool LendPool, the peer's shm_open + mmap, "
               "its Response, each a round trip on a Unix socket), as one sample, then checks the tag the owner "
               "wrote at every buffer's or block's first word through its mappings and detaches untimed; the ratio is of the receivers' totals (each system "
               "row's note: what its total holds)", shmb_lookup_bench_paired_attach_rounds(cfg));
        shmb_notes_add(l, shmb_notes_end(s, at));
        shmb_notes_add(l, "paired with --peer_process: first attach only; the translation per request is the paired run "
               "without --peer_process");
    } else {
        const size_t at = s->used;
        if (cfg->count_given)
            shmb_notes_put(s, "rounds of translation: num_lookups / %d (at least %d, at most %d), a multiple of 2 x "
                   "systems; each round", SHMB_LOOKUP_MIN_BATCH, SHMB_PAIRED_MIN_ROUNDS, SHMB_LOOKUP_PAIRED_MAX_ROUNDS);
        else
            shmb_notes_put(s, "rounds of translation: at least %d, until the baseline's batches took min_time_ms (at most "
                   "%d), a multiple of 2 x systems; each round", SHMB_LOOKUP_PAIRED_MIN_ROUNDS,
                SHMB_LOOKUP_PAIRED_MAX_ROUNDS);
        shmb_notes_put(s, " every system translates one batch of the same "
               "requests (the run's window), each system its own set-up of the same segments, every request "
               "verified before timing and every batch's checksum checked; ns per lookup = batch time / lookups");
        shmb_notes_add(l, shmb_notes_end(s, at));
        shmb_notes_add(l, "paired without --peer_process: translation only; the first attach (step attach) is the paired "
               "run with --peer_process");
    }
    shmb_notes_add(l, "paired: the hand-off rows (handoff, pool_once) are left out: run --system=NAME for them");
}

/* A count given (--num_lookups alone) bounds each row: what it timed, and
 * why a count below one batch times a whole one. */
static void lookup_count(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_lookup_config_t *cfg)
{
    if (!cfg->count_given)
        return;
    const uint64_t batches = shmb_lookup_bench_batches(cfg);
    const size_t at = s->used;
    shmb_notes_put(s, "count: num_lookups=%llu: ", (unsigned long long)cfg->num_lookups);
    if (cfg->nsystems)
        shmb_notes_put(s, "%llu batch%s of %d lookups per system", (unsigned long long)batches, batches == 1 ? "" : "es",
            SHMB_LOOKUP_MIN_BATCH);
    else
        shmb_notes_put(s, "%llu batch%s of %d lookups per row%s", (unsigned long long)batches, batches == 1 ? "" : "es",
            SHMB_LOOKUP_MIN_BATCH, cfg->threads > 1 ? " and thread" : "");
    shmb_notes_put(s, " (a shorter batch of the fastest paths lasts under 100x the timer overhead), min_time_ms not applied");
    if (cfg->nsystems && batches < SHMB_PAIRED_MIN_ROUNDS)
        shmb_notes_put(s, "; %d rounds at least, the fewest with a 95%% interval", SHMB_PAIRED_MIN_ROUNDS);
    else if (!cfg->nsystems && batches < SHMB_LOOKUP_MIN_BATCHES)
        shmb_notes_put(s, ": too few for percentiles");
    shmb_notes_add(l, shmb_notes_end(s, at));
}

int shmb_notes_lookup(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_config_t *cfg)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    shmb_notes_put(store, "segments of %llu MB, requests of %llu KB, %s pattern; every translation verified before "
               "timing", (unsigned long long)cfg->segment_size_mb, (unsigned long long)cfg->lookup_len_kb,
        cfg->sequential ? "sequential" : "random");
    shmb_notes_add(&l, shmb_notes_end(store, start));
    shmb_notes_add(&l, placement_note(cfg->placement));
    if (!cfg->system_rows && !cfg->nsystems)
        shmb_notes_add(&l, "systems: mooncake, flowipc_classic, flowipc_jemalloc (what a request costs); kernels: linear, "
                "lower_bound, tree, arithmetic (the minimal C operation of each way to find one segment among "
                "several: reference points, not lower bounds; arithmetic reads its segment's entry per request, "
                "local_base[id] + offset with an id and a range check, while flowipc_classic's one pool needs "
                "no table: base + offset, the base in a register, so it can come in below arithmetic); "
                "speedup = mooncake's p50 / the row's p50 (linear's when mooncake is not run)");
    lookup_count(&l, store, cfg);
    if (cfg->nsystems) {
        lookup_paired(&l, store, cfg);
        return shmb_notes_publish(report, &l, store, start);
    }
    int err = 0;
    const char *timing = lookup_timing(store, cfg, &err);
    if (err < 0) {
        store->used = start;
        return err;
    }
    shmb_notes_add(&l, timing);
    if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
        shmb_notes_add(&l, "step -: throughput: a batch's requests are independent, the CPU overlaps their "
                "translations");
    if (cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
        shmb_notes_add(&l, "step latency: the same requests as a dependent chain: each one's keys shifted by how far "
                "the previous translation landed from where it should (0: one subtraction and one addition "
                "more per request), so each waits for the one before; speedups compare rows of the same "
                "kind");
    if (cfg->system_rows)
        shmb_notes_add(&l, "attach: what the receiver pays before its first request, one sample each (mooncake: the "
                "first request to each buffer, shm_open + mmap, the first_use row without --system; "
                "flowipc_classic: the peer opening its pool; flowipc_jemalloc: each pool lent to the peer, "
                "LendPool, its shm_open + mmap and Response, timed by the owner, LendArena's one round trip "
                "per session not counted; with --peer_process only); - = a step this system does not have");
    else
        shmb_notes_add(&l, cfg->peer_process
                ? "first_use: mooncake's first request to each buffer in the peer (shm_open + mmap), timed "
                  "one by one; attach: the peer opening flowipc_classic's pool (shm_open + fstat + mmap, "
                  "once) and each of flowipc_jemalloc's pools lent to the peer (LendPool, the peer's "
                  "shm_open + mmap read-only, its Response: a round trip timed by the owner, one sample per "
                  "pool; LendArena's one round trip per session not counted); - = a step this system does not "
                  "have"
                : "first_use: mooncake's first request to each buffer (shm_open + mmap + close), timed one "
                  "by one; - = a step this system does not have");
    return shmb_notes_publish(report, &l, store, start);
}

/* What a hand-off row times, crossing or not. */
static const char *handoff_timed(shmb_notes_t *s, const shmb_handoff_bench_config_t *cfg)
{
    const size_t start = s->used;
    shmb_notes_put(s, "handoff: Flow-IPC's object API, per object of %llu KB: lend, the handle message, borrow, a read of "
           "the tag the lender wrote, release, the return message and the lender's free (flowipc_classic: no "
           "return message, the last owner frees); construct untimed (an allocation); each flavour's "
           "step-by-step check before timing", (unsigned long long)cfg->object_kb);
    if (cfg->peer_process)
        shmb_notes_put(s, "; the borrower a second process over a Unix stream socket pair, both messages crossing "
               "(flowipc_classic: the blob, then this driver's own ack to close the round trip), each "
               "hand-off timed alone, the borrower on the CPUs this process may use (with --cpu, the same "
               "one: each crossing switches process); no speedup: the figure is mostly the two crossings, which carry the "
               "request in this design and have no counterpart in Mooncake's one-sided relocate");
    else
        shmb_notes_put(s, "; the borrower in this process, no message crossing, timed in batches of %zu (batch time / "
               "%zu); speedup = mooncake's relocate p50 / its p50 (the same question, a usable address per "
               "request, the calls only)", shmb_handoff_bench_batch(cfg->object_kb),
            shmb_handoff_bench_batch(cfg->object_kb));
    return shmb_notes_end(s, start);
}

int shmb_notes_handoff(shmb_report_t *report, shmb_notes_t *store, const shmb_handoff_bench_config_t *cfg)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    shmb_notes_keep(&l, report);
    shmb_notes_add(&l, handoff_timed(store, cfg));
    shmb_notes_add(&l, "pool_once: flowipc_jemalloc lending each pool to the borrower (LendPool, the borrower's shm_open "
            "+ mmap, its response: a round trip per pool and peer, one sample each); handoff rows stand for "
            "the object-API design, the steady flowipc_* rows for the other one: pools borrowed once, "
            "requests carry offsets, to_address per request");
    return shmb_notes_publish(report, &l, store, start);
}

/* The second process's note: what it attached and timed, what this one checked. */
