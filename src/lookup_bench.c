#include "shmbench/lookup_bench.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PEER_START (1ull << 44)
#define PAGE 4096ull

typedef struct setup {
    unsigned char *reserved;        /* our range, n * size bytes */
    size_t reserved_bytes;
    shmb_lookup_segment_t *segments; /* registration order */
    shmb_lookup_request_t *requests; /* the pool: windows * window requests */
    uint64_t window;                 /* requests per timed batch */
    uint64_t windows;
    uint64_t *expected_sum;          /* per window: the addresses its requests were made from */
    shmb_lookup_table_t table;
} setup_t;

int shmb_lookup_bench_check(const shmb_lookup_config_t *cfg)
{
    if (cfg->num_segments == 0 || cfg->num_lookups == 0 || cfg->segment_size_mb == 0 ||
        cfg->lookup_len_kb == 0 || cfg->num_segments > SHMB_LOOKUP_MAX_SEGMENTS ||
        cfg->num_lookups > SHMB_LOOKUP_MAX_LOOKUPS)
        return -EINVAL;
    if (cfg->segment_size_mb > SHMB_LOOKUP_SPAN_BYTES >> 20 ||
        cfg->num_segments > (SHMB_LOOKUP_SPAN_BYTES >> 20) / cfg->segment_size_mb)
        return -EOVERFLOW;
    if (cfg->lookup_len_kb > cfg->segment_size_mb * 1024)
        return -EINVAL;
    return 0;
}

/* Peer bases: one random page-aligned place in each of n equal slots of the
 * span (so none overlap), registered in a random order. */
static void place_segments(const shmb_lookup_config_t *cfg, setup_t *s, shmb_rng_t *rng,
                           uint64_t *slot_of)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t slot = (SHMB_LOOKUP_SPAN_BYTES / n) & ~(PAGE - 1);
    for (uint64_t i = 0; i < n; i++)
        slot_of[i] = i;
    shmb_rng_shuffle(rng, slot_of, (size_t)n);
    for (uint64_t id = 0; id < n; id++) {
        uint64_t slack_pages = (slot - size) / PAGE;
        s->segments[id].peer_base =
            PEER_START + slot_of[id] * slot + shmb_rng_below(rng, slack_pages + 1) * PAGE;
        s->segments[id].size = size;
        s->segments[id].local_base = s->reserved + id * size;
    }
}

static void make_requests(const shmb_lookup_config_t *cfg, setup_t *s, shmb_rng_t *rng,
                          const uint64_t *slot_of)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t len = cfg->lookup_len_kb << 10, starts = size - len + 1;
    uint64_t *id_in_slot = malloc(n * sizeof(uint64_t));
    for (uint64_t id = 0; id < n && id_in_slot; id++)
        id_in_slot[slot_of[id]] = id;
    for (uint64_t k = 0; k < s->window * s->windows; k++) {
        uint64_t id, offset;
        if (cfg->sequential && id_in_slot) {
            id = id_in_slot[k % n];
            offset = ((k / n) * len) % starts;
        } else {
            id = shmb_rng_below(rng, n);
            offset = shmb_rng_below(rng, starts);
        }
        shmb_lookup_request_t *r = &s->requests[k];
        r->id = (uint32_t)id;
        r->offset = offset;
        r->len = len;
        r->addr = s->segments[id].peer_base + offset;
        s->expected_sum[k / s->window] += (uint64_t)(uintptr_t)(s->segments[id].local_base + offset);
    }
    free(id_in_slot);
}

static void teardown(setup_t *s)
{
    if (s->table.n)
        shmb_lookup_fini(&s->table);
    if (s->reserved)
        munmap(s->reserved, s->reserved_bytes);
    free(s->segments);
    free(s->requests);
    free(s->expected_sum);
    memset(s, 0, sizeof(*s));
}

static int prepare(const shmb_lookup_config_t *cfg, setup_t *s)
{
    memset(s, 0, sizeof(*s));
    const uint64_t n = cfg->num_segments;
    s->reserved_bytes = (size_t)(n * (cfg->segment_size_mb << 20));
    void *p = mmap(NULL, s->reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return shmb_error_record("mmap", errno, "the local address range");
    s->reserved = p;
    s->window = cfg->num_lookups > SHMB_LOOKUP_MIN_BATCH ? cfg->num_lookups : SHMB_LOOKUP_MIN_BATCH;
    s->windows = (SHMB_LOOKUP_MIN_POOL + s->window - 1) / s->window;
    s->segments = malloc((size_t)n * sizeof(*s->segments));
    s->requests = malloc((size_t)(s->window * s->windows) * sizeof(*s->requests));
    s->expected_sum = calloc((size_t)s->windows, sizeof(uint64_t));
    uint64_t *slot_of = malloc((size_t)n * sizeof(uint64_t));
    int ret = s->segments && s->requests && s->expected_sum && slot_of ? 0 : -ENOMEM;
    if (ret == 0) {
        shmb_rng_t rng;
        shmb_rng_seed(&rng, cfg->seed);
        place_segments(cfg, s, &rng, slot_of);
        make_requests(cfg, s, &rng, slot_of);
        ret = shmb_lookup_init(&s->table, s->segments, (size_t)n);
    }
    free(slot_of);
    if (ret == -ENOMEM)
        shmb_error_record("malloc", ENOMEM, NULL);
    if (ret < 0)
        teardown(s);
    return ret;
}

/* Every request, translated one by one, must land where it was made from. */
static int verify(const setup_t *s, shmb_lookup_strategy_t st, uint64_t n, char *why, size_t cap)
{
    for (uint64_t k = 0; k < n; k++) {
        const shmb_lookup_request_t *r = &s->requests[k];
        void *want = s->segments[r->id].local_base + r->offset;
        void *got = shmb_lookup_translate(&s->table, st, r);
        if (got != want) {
            snprintf(why, cap, "%s translated request %llu (peer 0x%llx, %llu bytes) to %p, expected %p",
                     shmb_lookup_strategy_name(st), (unsigned long long)k,
                     (unsigned long long)r->addr, (unsigned long long)r->len, got, want);
            return -EPROTO;
        }
    }
    return 0;
}

static int measure(const shmb_lookup_config_t *cfg, const setup_t *s, shmb_lookup_strategy_t st,
                   shmb_rows_t *rows, char *why, size_t cap)
{
    const size_t w = (size_t)s->window;
    const uint64_t budget_ns = (uint64_t)(cfg->min_time_ms * 1e6);
    shmb_samples_t samples = {0};
    int ret = 0;

    shmb_escape((void *)(uintptr_t)shmb_lookup_batch(&s->table, st, s->requests, w));
    uint64_t spent = 0;
    while (ret == 0 && (samples.n < SHMB_LOOKUP_MIN_BATCHES || spent < budget_ns)) {
        const size_t win = samples.n % s->windows;
        uint64_t t0 = shmb_clock_now_ns();
        uint64_t sum = shmb_lookup_batch(&s->table, st, s->requests + win * w, w);
        uint64_t t1 = shmb_clock_now_ns();
        if (sum != s->expected_sum[win]) {
            snprintf(why, cap, "%s: checksum of a timed batch is 0x%llx, expected 0x%llx",
                     shmb_lookup_strategy_name(st), (unsigned long long)sum,
                     (unsigned long long)s->expected_sum[win]);
            ret = -EPROTO;
        } else if (shmb_stats_append(&samples, (double)(t1 - t0) / (double)w) < 0) {
            ret = shmb_error_record("malloc", ENOMEM, NULL);
        }
        spent += t1 - t0;
    }
    if (ret < 0) {
        shmb_stats_release(&samples);
        return ret;
    }

    shmb_row_t row;
    memset(&row, 0, sizeof(row));
    snprintf(row.variant, sizeof(row.variant), "%s", shmb_lookup_strategy_name(st));
    snprintf(row.arg_name, sizeof(row.arg_name), "segments");
    row.arg = cfg->num_segments;
    row.threads = 1;
    row.repetition = cfg->repetition;
    row.iterations = samples.n * w;
    const unsigned long long pool = (unsigned long long)(s->window * s->windows);
    snprintf(row.note, sizeof(row.note), "verified %llu/%llu", pool, pool);
    ret = shmb_rows_push_samples(rows, &row, samples.v, samples.n);
    shmb_stats_release(&samples);
    return ret;
}

int shmb_lookup_bench_run(const shmb_lookup_config_t *cfg, shmb_rows_t *rows, char *why,
                          size_t why_cap)
{
    int ret = shmb_lookup_bench_check(cfg);
    if (ret < 0)
        return ret;
    setup_t s;
    ret = prepare(cfg, &s);
    if (ret < 0)
        return ret;
    /* Correctness first: no strategy is timed unless every one translates right. */
    for (int st = 0; st < SHMB_LOOKUP_STRATEGIES && ret == 0; st++)
        if (cfg->run[st])
            ret = verify(&s, (shmb_lookup_strategy_t)st, s.window * s.windows, why, why_cap);
    size_t first = rows->n;
    for (int st = 0; st < SHMB_LOOKUP_STRATEGIES && ret == 0; st++)
        if (cfg->run[st])
            ret = measure(cfg, &s, (shmb_lookup_strategy_t)st, rows, why, why_cap);
    teardown(&s);
    if (ret < 0)
        return ret;

    const shmb_row_t *linear = shmb_rows_find(rows, "linear", "", cfg->num_segments, cfg->repetition);
    for (size_t i = first; linear && i < rows->n; i++)
        rows->v[i].speedup = linear->ns.mean / rows->v[i].ns.mean;
    return 0;
}
