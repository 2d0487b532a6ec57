/* alloc_posix: the posix rows, Mooncake's createSharedMemory per buffer,
 * each step timed on its own, one thread or a crew (docs/allocation.md). */
#include "alloc_internal.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <stdlib.h>

enum { S_OPEN, S_TRUNCATE, S_MMAP, S_CLOSE, S_TOTAL, S_CLEANUP, S_TOUCH, S_ATTACH, S_DETACH, S_COUNT };
static const char *const steps[S_COUNT] = {"shm_open", "ftruncate", "mmap",   "close", "total",
                                           "cleanup",  "touch",     "attach", "detach"};

/* The first write of the fresh segment (a byte per page, guarded against a full /dev/shm),
 * timed into *ns. */
static int posix_touch(void *addr, size_t bytes, double *ns)
{
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_segment_first_write(addr, bytes);
    *ns = (double)(shmb_clock_now_ns() - t0);
    return ret;
}

/* createSharedMemory, each step timed into s[step][i], their sum into
 * s[S_TOTAL][i]. Nothing is left on error. */
static int posix_create(const shmb_alloc_config_t *cfg, size_t bytes, shmb_segment_t *seg,
                        double *s[S_COUNT], size_t i)
{
    uint64_t ns[4];
    int ret = shmb_alloc_posix_create(cfg->shm_prefix, bytes, seg, ns);
    if (ret < 0)
        return ret;
    for (int k = S_OPEN; k <= S_CLOSE; k++)
        s[k][i] = (double)ns[k];
    s[S_TOTAL][i] = (double)(ns[0] + ns[1] + ns[2] + ns[3]);
    return 0;
}

/* The peer attaches and detaches the segment of allocation i of this size,
 * which must hold its tag. */
static int posix_peer(const shmb_alloc_config_t *cfg, shmb_segment_t *seg, uint64_t size_kb,
                      double *s[S_COUNT], size_t i, char *why, size_t why_cap)
{
    const uint64_t tag = shmb_alloc_peer_tag(cfg->seed ^ (size_kb << 32) ^ (uint64_t)cfg->repetition, i);
    int ret = shmb_alloc_write_tag(seg->addr, tag);
    uint64_t attach_ns = 0, detach_ns = 0;
    if (ret == 0)
        ret = shmb_alloc_peer_posix(cfg->peer, seg->name, seg->size, tag, &attach_ns, &detach_ns,
                                    why, why_cap);
    s[S_ATTACH][i] = (double)attach_ns;
    s[S_DETACH][i] = (double)detach_ns;
    return ret;
}

static int posix_once(const shmb_alloc_config_t *cfg, uint64_t size_kb, double *s[S_COUNT], size_t i,
                      uint64_t *kept, char *why, size_t why_cap)
{
    const size_t bytes = (size_t)size_kb * 1024;
    shmb_segment_t seg;
    int ret = posix_create(cfg, bytes, &seg, s, i);
    if (ret < 0)
        return ret;
    if (cfg->touch)
        ret = posix_touch(seg.addr, bytes, &s[S_TOUCH][i]);
    if (ret == 0 && cfg->peer)
        ret = posix_peer(cfg, &seg, size_kb, s, i, why, why_cap);
    if (ret < 0) {
        shmb_segment_destroy(&seg, NULL);
        return ret;
    }
    return shmb_alloc_segment_end(&seg, cfg->cleanup, &s[S_CLEANUP][i], kept);
}

/* --measure_mmap_only: one segment, created untimed; mmap, [touch], munmap. */
static int posix_mmap_only(const shmb_alloc_config_t *cfg, size_t bytes, double *s[S_COUNT],
                           uint64_t *kept)
{
    shmb_segment_t seg;
    int ret = shmb_segment_create(&seg, cfg->shm_prefix, bytes, NULL, NULL);
    for (uint64_t i = 0; ret == 0 && i < cfg->num_iterations; i++) {
        uint64_t t_mmap, t_unmap;
        ret = shmb_segment_map(&seg, &t_mmap);
        if (ret < 0)
            break;
        if (cfg->touch)
            ret = posix_touch(seg.addr, bytes, &s[S_TOUCH][i]);
        int r = shmb_segment_unmap(&seg, &t_unmap);
        ret = ret < 0 ? ret : r;
        s[S_MMAP][i] = (double)t_mmap;
        s[S_CLEANUP][i] = (double)t_unmap;
    }
    if (ret < 0 && seg.fd < 0)
        return ret;
    int r = shmb_alloc_segment_end(&seg, ret < 0 || cfg->cleanup, NULL, kept);
    return ret < 0 ? ret : r;
}

static int posix_step_timed(const shmb_alloc_config_t *cfg, int step)
{
    switch (step) {
    case S_MMAP:
        return 1;
    case S_CLEANUP:
        return cfg->cleanup || cfg->measure_mmap_only;
    case S_TOUCH:
        return cfg->touch;
    case S_ATTACH:
    case S_DETACH:
        return cfg->peer != NULL;
    default:
        return !cfg->measure_mmap_only;
    }
}

/* Several threads: each creates, [touches] and cleans up its own buffers,
 * one at a time; every allocation, touch and cleanup is a phase. */
enum { P_ALLOC, P_TOUCH, P_CLEANUP, P_COUNT };

typedef struct posix_crew {
    const shmb_alloc_config_t *cfg;
    int threads;
    size_t bytes;
    uint64_t n;          /* allocations per thread */
    double *s[S_COUNT];  /* thread t's samples at [t * n, (t + 1) * n) */
    uint64_t *kept;      /* per thread */
    uint64_t *start[P_COUNT], *end[P_COUNT]; /* phase clocks: [i * threads + t] */
} posix_crew_t;

/* One member's segment and where it stands. */
typedef struct member {
    posix_crew_t *c;
    shmb_crew_t *crew;
    int me;
    double *s[S_COUNT];  /* its samples */
    shmb_segment_t seg;
    int live;            /* seg exists */
    int mapped;          /* and is mapped */
} member_t;

static void member_check(member_t *m, int ret)
{
    if (ret < 0)
        shmb_crew_fail(m->crew, m->me, ret);
}

/* Allocation i: createSharedMemory, or (measure_mmap_only) mmap of the one segment. */
static void phase_alloc(member_t *m, uint64_t i, uint64_t at)
{
    posix_crew_t *c = m->c;
    int ret;
    c->start[P_ALLOC][at] = shmb_clock_now_ns();
    if (c->cfg->measure_mmap_only) {
        uint64_t ns = 0;
        ret = shmb_segment_map(&m->seg, &ns);
        m->s[S_MMAP][i] = (double)ns;
    } else {
        ret = posix_create(c->cfg, c->bytes, &m->seg, m->s, i);
        m->live = ret == 0;
    }
    m->mapped = ret == 0;
    c->end[P_ALLOC][at] = shmb_clock_now_ns();
    member_check(m, ret);
}

static void phase_touch(member_t *m, uint64_t i, uint64_t at)
{
    posix_crew_t *c = m->c;
    c->start[P_TOUCH][at] = shmb_clock_now_ns();
    int ret = posix_touch(m->seg.addr, c->bytes, &m->s[S_TOUCH][i]);
    c->end[P_TOUCH][at] = shmb_clock_now_ns();
    member_check(m, ret);
}

/* Cleanup i: munmap + shm_unlink, or (measure_mmap_only) munmap. */
static void phase_cleanup(member_t *m, uint64_t i, uint64_t at)
{
    posix_crew_t *c = m->c;
    int ret;
    c->start[P_CLEANUP][at] = shmb_clock_now_ns();
    if (c->cfg->measure_mmap_only) {
        uint64_t ns = 0;
        ret = shmb_segment_unmap(&m->seg, &ns);
        m->s[S_CLEANUP][i] = (double)ns;
    } else {
        ret = shmb_alloc_segment_end(&m->seg, c->cfg->cleanup, &m->s[S_CLEANUP][i], &c->kept[m->me]);
        m->live = 0;
    }
    m->mapped = 0;
    c->end[P_CLEANUP][at] = shmb_clock_now_ns();
    member_check(m, ret);
}

/* After the last phase: the segment still there is unlinked, or with
 * --cleanup=false (and no failure) left on purpose. */
static void member_end(member_t *m)
{
    if (m->live)
        member_check(m, shmb_alloc_segment_end(&m->seg, m->c->cfg->cleanup || !shmb_crew_ok(m->crew), NULL,
                                  &m->c->kept[m->me]));
}

static void posix_member(shmb_crew_t *crew, int me, void *arg)
{
    posix_crew_t *c = arg;
    const shmb_alloc_config_t *cfg = c->cfg;
    member_t m = {.c = c, .crew = crew, .me = me};
    for (int k = 0; k < S_COUNT; k++)
        m.s[k] = c->s[k] + (uint64_t)me * c->n;
    if (cfg->measure_mmap_only) { /* this thread's one segment, created untimed */
        int ret = shmb_segment_create(&m.seg, cfg->shm_prefix, c->bytes, NULL, NULL);
        member_check(&m, ret);
        m.live = ret == 0;
    }
    for (uint64_t i = 0; i < c->n; i++) {
        const uint64_t at = i * (uint64_t)c->threads + (uint64_t)me;
        if (shmb_crew_sync(crew) && (m.live || !cfg->measure_mmap_only))
            phase_alloc(&m, i, at);
        if (cfg->touch && shmb_crew_sync(crew) && m.mapped)
            phase_touch(&m, i, at);
        if (cfg->measure_mmap_only || cfg->cleanup) {
            if (shmb_crew_sync(crew) && m.mapped)
                phase_cleanup(&m, i, at);
        } else if (m.live && shmb_crew_ok(crew)) { /* --cleanup=false: left on purpose */
            member_check(&m, shmb_alloc_segment_end(&m.seg, 0, NULL, &c->kept[me]));
            m.live = m.mapped = 0;
        }
        if (m.live && !cfg->measure_mmap_only) { /* another thread failed mid-way */
            shmb_segment_destroy(&m.seg, NULL);
            m.live = m.mapped = 0;
        }
    }
    member_end(&m);
}

/* The rate of a step's row: the phase it runs in, -1 when it shares one. */
static int step_phase(const shmb_alloc_config_t *cfg, int step)
{
    if (step == S_TOUCH)
        return P_TOUCH;
    if (step == S_CLEANUP)
        return P_CLEANUP;
    return step == S_TOTAL || (step == S_MMAP && cfg->measure_mmap_only) ? P_ALLOC : -1;
}

int shmb_alloc_posix_size(const shmb_alloc_run_t *run, uint64_t size_kb)
{
    const shmb_alloc_config_t *cfg = run->cfg;
    const int threads = cfg->threads > 1 ? cfg->threads : 1;
    posix_crew_t c = {.cfg = cfg, .threads = threads, .bytes = (size_t)size_kb * 1024,
                      .n = cfg->num_iterations};
    const size_t samples = (size_t)c.n * (size_t)threads;
    int ret = (c.kept = calloc((size_t)threads, sizeof(*c.kept))) ? 0 : -ENOMEM;
    for (int k = 0; k < S_COUNT && ret == 0; k++)
        ret = (c.s[k] = calloc(samples, sizeof(double))) ? 0 : -ENOMEM;
    for (int p = 0; p < P_COUNT && ret == 0 && threads > 1; p++)
        ret = (c.start[p] = calloc(samples, sizeof(uint64_t))) &&
                      (c.end[p] = calloc(samples, sizeof(uint64_t)))
                  ? 0
                  : -ENOMEM;
    if (ret < 0)
        shmb_error_record("malloc", ENOMEM, NULL);
    shmb_crew_t *crew = NULL;
    if (ret == 0 && threads == 1 && cfg->measure_mmap_only)
        ret = posix_mmap_only(cfg, c.bytes, c.s, run->kept);
    for (size_t i = 0; ret == 0 && threads == 1 && !cfg->measure_mmap_only && i < samples; i++)
        ret = posix_once(cfg, size_kb, c.s, i, run->kept, run->why, run->why_cap);
    if (ret == 0 && threads > 1 && (ret = shmb_alloc_crew_start(cfg, &crew)) == 0)
        ret = shmb_crew_run(crew, posix_member, &c);
    shmb_crew_stop(crew);
    for (int i = 0; ret == 0 && i < threads; i++)
        *run->kept += c.kept[i];

    shmb_row_t row = shmb_alloc_row(cfg, "posix", size_kb);
    row.threads = threads;
    for (int k = 0; k < S_COUNT && ret == 0; k++) {
        if (!posix_step_timed(cfg, k))
            continue;
        ret = shmb_alloc_push_step(run->rows, row, steps[k], c.s[k], samples, samples);
        const int phase = step_phase(cfg, k);
        if (ret == 0 && threads > 1)
            shmb_alloc_set_rate(run->rows, samples,
                                phase < 0 ? 0 : shmb_crew_wall_ns(c.start[phase], c.end[phase], c.n, threads));
    }
    for (int k = 0; k < S_COUNT; k++)
        free(c.s[k]);
    for (int p = 0; p < P_COUNT; p++) {
        free(c.start[p]);
        free(c.end[p]);
    }
    free(c.kept);
    return ret;
}
