/* The set-up of a lookup run (lookup_internal.h): the configuration, the
 * placement, the pool of requests, each path set up and verified, mooncake's
 * real segments and their slots. Calls nothing else in src/lookup. */
#include "lookup_internal.h"
#include "base/names_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/mooncake.h"
#include "shmbench/rng.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ull

int shmb_lookup_bench_check(const shmb_lookup_config_t *cfg)
{
    if (cfg->num_segments == 0 || cfg->num_lookups == 0 || cfg->segment_size_mb == 0 ||
        cfg->lookup_len_kb == 0 || cfg->num_segments > SHMB_LOOKUP_MAX_SEGMENTS ||
        cfg->num_lookups > SHMB_LOOKUP_MAX_LOOKUPS)
        return -EINVAL;
    if (cfg->segment_size_mb > SHMB_LOOKUP_SPAN_BYTES >> 20 ||
        cfg->num_segments > (SHMB_LOOKUP_SPAN_BYTES >> 20) / cfg->segment_size_mb)
        return -EOVERFLOW;
    if (cfg->lookup_len_kb > cfg->segment_size_mb * 1024 || (unsigned)cfg->mode > SHMB_LOOKUP_MODE_BOTH ||
        (unsigned)cfg->placement >= SHMB_LOOKUP_PLACEMENTS || cfg->threads < 1 || cfg->threads > SHMB_LOOKUP_MAX_THREADS ||
        (cfg->peer_process && cfg->threads > 1))
        return -EINVAL;
    return 0;
}

/* Requests per timed batch. */
static uint64_t window_of(const shmb_lookup_config_t *cfg)
{
    return cfg->num_lookups > SHMB_LOOKUP_MIN_BATCH && !cfg->count_given ? cfg->num_lookups : SHMB_LOOKUP_MIN_BATCH;
}

int shmb_lookup_bench_shm_bytes(const shmb_lookup_config_t *cfg, uint64_t *bytes)
{
    int ret = shmb_lookup_bench_check(cfg);
    if (ret < 0)
        return ret;
    const uint64_t window = window_of(cfg);
    const uint64_t requests = (SHMB_LOOKUP_MIN_POOL + window - 1) / window * window;
    const uint64_t pages = cfg->num_segments * ((cfg->segment_size_mb << 20) / PAGE);
    *bytes = cfg->peer_process ? ((requests < pages ? requests : pages) + 1024) * PAGE : 0;
    if (cfg->peer_process && cfg->nsystems) /* every system's objects at once, a tag page per segment */
        *bytes = cfg->nsystems * (cfg->num_segments + 1024) * PAGE;
    return 0;
}

static const char *const placement_names[SHMB_LOOKUP_PLACEMENTS] = {"descending", "ascending", "random"};

const char *shmb_lookup_placement_name(shmb_lookup_placement_t placement)
{
    return shmb_names_get(placement_names, SHMB_LOOKUP_PLACEMENTS, (int)placement);
}

int shmb_lookup_parse_placement(const char *name, shmb_lookup_placement_t *out)
{
    const int p = shmb_names_find(placement_names, SHMB_LOOKUP_PLACEMENTS, name);
    return p < 0 ? p : (*out = (shmb_lookup_placement_t)p, 0);
}

/* Peer bases: one random page-aligned place in each of n equal slots of the
 * span (so none overlap); segment id takes slot slot_of[id]: the last slot
 * first (descending), the first slot first (ascending), or any. */
static void place_segments(const shmb_lookup_config_t *cfg, shmb_rng_t *rng, uint64_t *slot_of,
                           shmb_lookup_segment_t *segments)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t slot = (SHMB_LOOKUP_SPAN_BYTES / n) & ~(PAGE - 1);
    for (uint64_t i = 0; i < n; i++)
        slot_of[i] = cfg->placement == SHMB_LOOKUP_PLACE_DESCENDING ? n - 1 - i : i;
    if (cfg->placement == SHMB_LOOKUP_PLACE_RANDOM)
        shmb_rng_shuffle(rng, slot_of, (size_t)n);
    for (uint64_t id = 0; id < n; id++) {
        uint64_t slack_pages = (slot - size) / PAGE;
        segments[id].peer_base =
            SHMB_PATH_PEER_START + slot_of[id] * slot + shmb_rng_below(rng, slack_pages + 1) * PAGE;
        segments[id].size = size;
        segments[id].local_base = NULL;
    }
}

int shmb_lookup_bench_place(const shmb_lookup_config_t *cfg, shmb_lookup_segment_t *segments)
{
    int ret = shmb_lookup_bench_check(cfg);
    if (ret < 0)
        return ret == -EOVERFLOW ? -EINVAL : ret;
    uint64_t *slot_of = malloc((size_t)cfg->num_segments * sizeof(uint64_t));
    if (!slot_of)
        return -ENOMEM;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed);
    place_segments(cfg, &rng, slot_of, segments);
    free(slot_of);
    return 0;
}

/* The pool of requests and the address each must translate to. Returns 0
 * or -ENOMEM. */
static int make_requests(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, shmb_rng_t *rng,
                         const uint64_t *slot_of)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t len = cfg->lookup_len_kb << 10, starts = size - len + 1;
    uint64_t *id_in_slot = malloc(n * sizeof(uint64_t));
    if (!id_in_slot)
        return -ENOMEM;
    for (uint64_t id = 0; id < n; id++)
        id_in_slot[slot_of[id]] = id;
    for (uint64_t k = 0; k < s->window * s->windows; k++) {
        uint64_t id, offset;
        if (cfg->sequential) {
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
        r->pool_offset = id * size + offset;
        s->expected[k] = (uint64_t)(uintptr_t)(s->segments[id].local_base + offset);
        s->expected_sum[k / s->window] += s->expected[k];
    }
    free(id_in_slot);
    return 0;
}

/* ---- the run's set-up ---- */

int shmb_lookup_bench_path_setup(shmb_lookup_setup_t *s, int p, const shmb_path_view_t *view)
{
    const shmb_path_t *path = &shmb_path_table[p];
    int ret = path->setup(path, &s->state, view);
    if (ret == 0)
        s->up[p] = 1;
    return ret;
}

void shmb_lookup_bench_path_teardown(shmb_lookup_setup_t *s, int p)
{
    if (!s->up[p])
        return;
    shmb_path_table[p].teardown(&shmb_path_table[p], &s->state);
    s->up[p] = 0;
}

void shmb_lookup_bench_teardown(shmb_lookup_setup_t *s)
{
    shmb_lookup_bench_release_slots(s);
    for (int p = 0; p < SHMB_PATHS; p++)
        shmb_lookup_bench_path_teardown(s, p);
    for (uint64_t id = 0; id < s->shm_created; id++)
        shmb_segment_destroy(&s->shm[id], NULL);
    free(s->shm);
    free(s->attach_fd);
    free(s->made);
    free(s->tags);
    shmb_stats_release(&s->first_use);
    if (s->reserved)
        munmap(s->reserved, s->reserved_bytes);
    free(s->segments);
    free(s->requests);
    free(s->expected);
    free(s->expected_sum);
    memset(s, 0, sizeof(*s));
}

int shmb_lookup_bench_prepare(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s)
{
    memset(s, 0, sizeof(*s));
    const uint64_t n = cfg->num_segments;
    s->reserved_bytes = (size_t)(n * (cfg->segment_size_mb << 20));
    void *p = mmap(NULL, s->reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return shmb_error_record("mmap", errno, "the local address range");
    s->reserved = p;
    s->window = window_of(cfg);
    s->windows = (SHMB_LOOKUP_MIN_POOL + s->window - 1) / s->window;
    s->segments = malloc((size_t)n * sizeof(*s->segments));
    s->requests = malloc((size_t)(s->window * s->windows) * sizeof(*s->requests));
    s->expected = malloc((size_t)(s->window * s->windows) * sizeof(uint64_t));
    s->expected_sum = calloc((size_t)s->windows, sizeof(uint64_t));
    uint64_t *slot_of = malloc((size_t)n * sizeof(uint64_t));
    int ret = s->segments && s->requests && s->expected && s->expected_sum && slot_of ? 0 : -ENOMEM;
    if (ret == 0) {
        shmb_rng_t rng;
        shmb_rng_seed(&rng, cfg->seed);
        place_segments(cfg, &rng, slot_of, s->segments);
        for (uint64_t id = 0; id < n; id++)
            s->segments[id].local_base = s->reserved + id * (cfg->segment_size_mb << 20);
        ret = make_requests(cfg, s, &rng, slot_of);
    }
    free(slot_of);
    if (ret == -ENOMEM)
        shmb_error_record("malloc", ENOMEM, NULL);
    if (ret < 0)
        shmb_lookup_bench_teardown(s);
    return ret;
}

/* ---- mooncake's real segments and their slots ---- */

/* Mooncake's first use of a buffer: shm_open(O_RDWR) + mmap, as
 * relocateSharedMemoryAddress does (the descriptor stays open in its
 * OpenedShmEntry until the transport goes). The mapping replaces the
 * segment's slot of our reservation (MAP_FIXED: atomic, and only ever over
 * our own PROT_NONE range, so no other mapping can take the place between
 * two attaches), so that every path translates to the same address. */
int shmb_lookup_bench_attach_slot(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    shmb_lookup_setup_t *s = ctx;
    int fd = shm_open(shm_path, O_RDWR, 0);
    if (fd < 0)
        return shmb_error_record("shm_open", errno, shm_path);
    void *p = mmap(s->segments[index].local_base, (size_t)length, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        int ret = shmb_error_record("mmap", errno, shm_path);
        close(fd);
        return ret;
    }
    s->attach_fd[index] = fd;
    *local = p;
    return 0;
}

/* Undoes one attach: the slot becomes reserved again (never a hole). */
static void detach_slot(void *ctx, void *local, uint64_t length)
{
    (void)ctx;
    mmap(local, (size_t)length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

int shmb_lookup_bench_alloc_slots(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s)
{
    s->attach_fd = malloc((size_t)cfg->num_segments * sizeof(*s->attach_fd));
    if (!s->attach_fd)
        return shmb_error_record("malloc", ENOMEM, NULL);
    s->slots = cfg->num_segments;
    for (uint64_t id = 0; id < s->slots; id++)
        s->attach_fd[id] = -1;
    return 0;
}

void shmb_lookup_bench_release_slots(shmb_lookup_setup_t *s)
{
    shmb_lookup_bench_path_teardown(s, SHMB_SYSTEM_MOONCAKE);
    for (uint64_t id = 0; id < s->slots; id++) {
        if (s->attach_fd[id] < 0)
            continue;
        detach_slot(s, s->segments[id].local_base, s->segments[id].size);
        close(s->attach_fd[id]);
        s->attach_fd[id] = -1;
    }
}

/* The peer's segments as real SHM: created sparse (nothing is written),
 * their descriptors closed. */
static int create_shm(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    s->shm = calloc((size_t)n, sizeof(*s->shm));
    if (!s->shm)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = shmb_lookup_bench_alloc_slots(cfg, s);
    for (uint64_t id = 0; id < n && ret == 0; id++) {
        ret = shmb_segment_create(&s->shm[id], cfg->shm_prefix, (size_t)size, NULL, NULL);
        if (ret < 0)
            break;
        s->shm_created++;
        ret = shmb_segment_close(&s->shm[id], NULL);
    }
    return ret;
}

/* The view every path of one process's run sets up over: the segments at
 * their slots of our reservation, mooncake's named names[id], attached at
 * their slots on first use, flowipc_classic's pool the reservation itself (every segment back to
 * back). */
shmb_path_view_t shmb_lookup_bench_view(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s,
                                        const char *const *names)
{
    return (shmb_path_view_t){.segments = s->segments,
                              .n = (size_t)cfg->num_segments,
                              .shm_names = names,
                              .mooncake_ops = {shmb_lookup_bench_attach_slot, detach_slot, s},
                              .pool_base = s->reserved,
                              .pool_bytes = s->reserved_bytes};
}

int shmb_lookup_bench_first_uses(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, char *why,
                                 size_t cap)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const uint64_t len = cfg->lookup_len_kb << 10;
    uint64_t *order = malloc((size_t)n * sizeof(*order));
    if (!order)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; id < n; id++)
        order[id] = id;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, cfg->seed ^ 0x6d6f6f6e63616b65ull);
    shmb_rng_shuffle(&rng, order, (size_t)n);
    int ret = 0;
    for (uint64_t k = 0; k < n && ret == 0; k++) {
        const uint64_t id = order[k], offset = shmb_rng_below(&rng, size - len + 1);
        void *got = NULL;
        uint64_t t0 = shmb_clock_now_ns();
        ret = shmb_mooncake_relocate(s->state.mooncake, SHMB_PATH_MOONCAKE_TARGET_ID,
                                     s->segments[id].peer_base + offset, len, &got);
        uint64_t t1 = shmb_clock_now_ns();
        if (ret == 0 && got != s->segments[id].local_base + offset) {
            snprintf(why, cap, "mooncake: first use of buffer %llu translated to %p, expected %p",
                     (unsigned long long)id, got, (void *)(s->segments[id].local_base + offset));
            ret = -EPROTO;
        }
        if (ret == 0 && shmb_stats_append(&s->first_use, (double)(t1 - t0)) < 0)
            ret = shmb_error_record("malloc", ENOMEM, NULL);
    }
    free(order);
    return ret;
}

/* Mooncake in one process: its real segments, its model, their first uses. */
static int setup_mooncake(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, char *why, size_t cap)
{
    int ret = create_shm(cfg, s);
    const char **names = ret == 0 ? malloc((size_t)cfg->num_segments * sizeof(*names)) : NULL;
    if (ret == 0 && !names)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t id = 0; ret == 0 && id < cfg->num_segments; id++)
        names[id] = s->shm[id].name;
    if (ret == 0) {
        const shmb_path_view_t view = shmb_lookup_bench_view(cfg, s, names);
        ret = shmb_lookup_bench_path_setup(s, SHMB_SYSTEM_MOONCAKE, &view);
    }
    if (ret == 0)
        ret = shmb_lookup_bench_first_uses(cfg, s, why, cap);
    free(names);
    return ret;
}

int shmb_lookup_bench_setup(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, int p, char *why, size_t cap)
{
    if (p == SHMB_SYSTEM_MOONCAKE)
        return setup_mooncake(cfg, s, why, cap);
    const shmb_path_view_t view = shmb_lookup_bench_view(cfg, s, NULL);
    return shmb_lookup_bench_path_setup(s, p, &view);
}

/* ---- verification ---- */

/* The 8-byte word that holds the byte at p. */
static uint64_t word_at(const void *p)
{
    uint64_t word;
    memcpy(&word, (const void *)((uintptr_t)p & ~(uintptr_t)7), sizeof(word));
    return word;
}

int shmb_lookup_bench_verify(const shmb_lookup_setup_t *s, int path, uint64_t n, char *why, size_t cap)
{
    for (uint64_t k = 0; k < n; k++) {
        const shmb_path_t *p = &shmb_path_table[path];
        const shmb_lookup_request_t *r = &s->requests[k];
        void *want = (void *)(uintptr_t)s->expected[k];
        void *got = p->translate(p, &s->state, r);
        if (got != want) {
            snprintf(why, cap, "%s translated request %llu (peer 0x%llx, %llu bytes) to %p, expected %p",
                     lookup_path_name(path), (unsigned long long)k, (unsigned long long)r->addr,
                     (unsigned long long)r->len, got, want);
            return -EPROTO;
        }
        if (s->tags && word_at(got) != s->tags[k]) {
            snprintf(why, cap, "%s: request %llu translated to %p, whose word holds 0x%llx, not the owner's tag 0x%llx",
                     lookup_path_name(path), (unsigned long long)k, got, (unsigned long long)word_at(got),
                     (unsigned long long)s->tags[k]);
            return -EPROTO;
        }
    }
    return 0;
}
