/*
 * lookup_bench: what translating a peer's address costs, per strategy.
 *
 * Set-up: num_segments segments of segment_size; peer bases page-aligned,
 * non-overlapping and spread over SHMB_LOOKUP_SPAN_BYTES of the peer's
 * address space, registered in a random order; local bases inside one
 * reserved range of this process (PROT_NONE, MAP_NORESERVE: real addresses,
 * no memory committed). Requests are made before timing, reproducibly from
 * the seed: random (any segment, any offset) or sequential (segments in
 * address order, offsets advancing).
 *
 * A timed batch is max(num_lookups, SHMB_LOOKUP_MIN_BATCH) lookups (the
 * window). Requests come from a pool of whole windows, at least
 * SHMB_LOOKUP_MIN_POOL requests, and batches walk through it: replaying a few
 * thousand requests over and over lets the branch predictors learn them, and
 * lower_bound and tree would look faster than they are (seen here: 6.6 ns
 * with 1000 requests replayed against 28 ns with a million, at 100 segments).
 *
 * Every strategy's translation of every request of the pool is checked
 * against the address the request was made from before any timing; a
 * mismatch fails the run. Every translated address of a batch is summed into
 * a checksum that is checked too. Batches repeat until min_time_ms has passed
 * (and at least SHMB_LOOKUP_MIN_BATCHES).
 */
#ifndef SHMBENCH_LOOKUP_BENCH_H
#define SHMBENCH_LOOKUP_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shmbench/lookup.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMB_LOOKUP_SPAN_BYTES (1ull << 46) /* peer address space used; also the most we reserve */
#define SHMB_LOOKUP_MIN_BATCH 4096          /* lookups per timed batch, at least */
#define SHMB_LOOKUP_MIN_BATCHES 10
#define SHMB_LOOKUP_MIN_POOL 131072        /* distinct requests, at least */
#define SHMB_LOOKUP_MAX_LOOKUPS 10000000
#define SHMB_LOOKUP_MAX_SEGMENTS 10000000

typedef struct shmb_lookup_config {
    uint64_t num_segments;    /* (=100) */
    uint64_t num_lookups;     /* lookups per timed batch (=10000) */
    uint64_t segment_size_mb; /* (=64) */
    uint64_t lookup_len_kb;   /* length of each request (=4) */
    int sequential;           /* pattern: 0 random, 1 sequential */
    int run[SHMB_LOOKUP_STRATEGIES]; /* 1: measure this strategy */
    uint64_t seed;
    double min_time_ms;       /* per strategy and segment count (=50) */
    int repetition;           /* stamped into the rows */
} shmb_lookup_config_t;

/* Checks the sizes: -EINVAL for a zero count or size or a request longer
 * than a segment, -EOVERFLOW when the segments do not fit in
 * SHMB_LOOKUP_SPAN_BYTES. */
int shmb_lookup_bench_check(const shmb_lookup_config_t *cfg);

/* Runs every selected strategy and appends one row each (variant = strategy,
 * arg segments:N, speedup against linear when linear ran, note
 * "verified P/P" over the pool of P requests). Returns 0, -errno, or -EPROTO when a strategy translated
 * wrongly, with the details in why. */
int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap);

#ifdef __cplusplus
}
#endif

#endif
