/* The peer's side of a two-process lookup run, in the forked peer
 * (shmb_lookup_peer_commands): it makes the same requests from its copy
 * of cfg, learns the objects only from what the owner publishes, attaches
 * them, checks every translation against the owner's tags and times. */
#include "lookup_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The peer's pool of requests, as the owner makes it from the same seed,
 * and each one's tag. */
static int peer_prepare(shmb_lookup_peer_t *ps)
{
    if (ps->prepared)
        return 0;
    shmb_lookup_setup_t *s = &ps->s;
    int ret = shmb_lookup_bench_prepare(ps->cfg, s);
    if (ret < 0)
        return ret;
    ps->prepared = 1;
    const uint64_t total = s->window * s->windows, size = ps->cfg->segment_size_mb << 20;
    s->made = malloc((size_t)total * sizeof(*s->made));
    s->tags = malloc((size_t)total * sizeof(*s->tags));
    ps->t.blocks = calloc((size_t)ps->cfg->num_segments, sizeof(*ps->t.blocks));
    if (!s->made || !s->tags || !ps->t.blocks)
        return shmb_error_record("malloc", ENOMEM, NULL);
    memcpy(s->made, s->requests, (size_t)total * sizeof(*s->made));
    for (uint64_t k = 0; k < total; k++)
        s->tags[k] = lookup_tag(size, s->made[k].id, s->made[k].offset);
    return 0;
}

/* Rewrites the requests for a path from the requests as made: the handle
 * of flowipc_classic (block handle + offset), the (pool id, offset in the
 * pool) of flowipc_jemalloc, the segment's own (id, offset) for the others;
 * and where each must land in this process, with each window's sum. */
static int aim(shmb_lookup_peer_t *ps, int path, char *why, size_t cap)
{
    shmb_lookup_setup_t *s = &ps->s;
    const uint64_t total = s->window * s->windows;
    memset(s->expected_sum, 0, (size_t)s->windows * sizeof(uint64_t));
    for (uint64_t k = 0; k < total; k++) {
        shmb_lookup_request_t r = s->made[k];
        const shmb_lookup_block_t *b = &ps->t.blocks[r.id];
        uint64_t want;
        if (path == SHMB_SYSTEM_FLOWIPC_CLASSIC) {
            r.pool_offset = b->key + r.offset;
            want = (uint64_t)(uintptr_t)s->state.pool_base + r.pool_offset;
        } else if (path == SHMB_SYSTEM_FLOWIPC_JEMALLOC) {
            uint64_t i = 0;
            while (i < ps->pools_attached && ps->t.objects[i].key != b->key)
                i++;
            if (i == ps->pools_attached) {
                snprintf(why, cap, "flowipc_jemalloc: the block of segment %u lies in pool %llu, which the owner "
                         "did not publish", (unsigned)r.id, (unsigned long long)b->key);
                return -EPROTO;
            }
            r.id = (uint32_t)b->key;
            r.offset = b->offset + r.offset;
            want = (uint64_t)(uintptr_t)ps->pool_map[i] + r.offset;
        } else {
            want = (uint64_t)(uintptr_t)(s->segments[r.id].local_base + r.offset);
        }
        s->requests[k] = r;
        s->expected[k] = want;
        s->expected_sum[k / s->window] += want;
    }
    return 0;
}

/* Verifies every path of the group that runs, then times each: the samples
 * stay in the peer until the owner fetches them. */
static int peer_measure(shmb_lookup_peer_t *ps, int group, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = ps->cfg;
    const uint64_t total = ps->s.window * ps->s.windows;
    int ret = 0;
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (lookup_path_runs(cfg, p) && lookup_group_of(p) == group && (ret = aim(ps, p, why, cap)) == 0)
            ret = shmb_lookup_bench_verify(&ps->s, p, total, why, cap);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++) {
        if (!lookup_path_runs(cfg, p) || lookup_group_of(p) != group || (ret = aim(ps, p, why, cap)) < 0)
            continue;
        if (cfg->mode != SHMB_LOOKUP_MODE_LATENCY)
            ret = shmb_lookup_bench_measure(cfg, &ps->s, p, 0, NULL, &ps->samples[p][LOOKUP_THROUGHPUT], why, cap);
        if (ret == 0 && cfg->mode != SHMB_LOOKUP_MODE_THROUGHPUT)
            ret = shmb_lookup_bench_measure(cfg, &ps->s, p, 1, NULL, &ps->samples[p][LOOKUP_LATENCY], why, cap);
    }
    return ret;
}

/* The published buffers must be num_segments of a segment's size: their
 * owner addresses become s's peer bases, their names names[id]. */
static int take_buffers(const shmb_lookup_config_t *cfg, shmb_lookup_setup_t *s, const shmb_lookup_taken_t *t,
                        const char **names, char *why, size_t cap)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    if (t->nobjects != n) {
        snprintf(why, cap, "the owner published %llu buffers, expected %llu", (unsigned long long)t->nobjects,
                 (unsigned long long)n);
        return -EPROTO;
    }
    for (uint64_t id = 0; id < n; id++) {
        if (t->objects[id].bytes != size) {
            snprintf(why, cap, "the owner published buffer %llu of %llu bytes, expected %llu",
                     (unsigned long long)id, (unsigned long long)t->objects[id].bytes, (unsigned long long)size);
            return -EPROTO;
        }
        s->segments[id].peer_base = t->objects[id].key;
        names[id] = t->objects[id].name;
    }
    return 0;
}

/* Path p set up over the published buffers; -EINVAL is the owner's breach. */
static int setup_buffers(shmb_lookup_setup_t *s, int p, const shmb_path_view_t *view, char *why, size_t cap)
{
    int ret = shmb_lookup_bench_path_setup(s, p, view);
    if (ret == -EINVAL) {
        snprintf(why, cap, "the owner published overlapping buffers");
        ret = -EPROTO;
    }
    return ret;
}

/* Mooncake and the kernels, over the owner's segments: the model from the
 * published metadata, each buffer attached on its first request (timed), or
 * by the peer itself when only kernels run. */
static int peer_run_segments(shmb_lookup_peer_t *ps, char *why, size_t cap)
{
    const shmb_lookup_config_t *cfg = ps->cfg;
    shmb_lookup_setup_t *s = &ps->s;
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    const char **names = malloc((size_t)n * sizeof(*names));
    int ret = names ? take_buffers(cfg, s, &ps->t, names, why, cap) : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t k = 0; ret == 0 && k < s->window * s->windows; k++)
        s->made[k].addr = s->segments[s->made[k].id].peer_base + s->made[k].offset;
    if (ret == 0)
        ret = shmb_lookup_bench_alloc_slots(cfg, s);
    const shmb_path_view_t view = shmb_lookup_bench_view(cfg, s, names);
    for (int p = 0; p < SHMB_PATHS && ret == 0; p++)
        if (lookup_path_runs(cfg, p) && lookup_group_of(p) == LOOKUP_GROUP_SEGMENTS)
            ret = setup_buffers(s, p, &view, why, cap);
    if (ret == 0 && cfg->run_system[SHMB_SYSTEM_MOONCAKE]) {
        ret = shmb_lookup_bench_first_uses(cfg, s, why, cap);
        ps->samples[SHMB_SYSTEM_MOONCAKE][LOOKUP_SETUP] = s->first_use;
        s->first_use = (shmb_samples_t){0};
    }
    for (uint64_t id = 0; ret == 0 && !cfg->run_system[SHMB_SYSTEM_MOONCAKE] && id < n; id++) {
        void *local;
        ret = shmb_lookup_bench_attach_slot(s, (size_t)id, names[id], size, &local);
    }
    free(names);
    return ret == 0 ? peer_measure(ps, LOOKUP_GROUP_SEGMENTS, why, cap) : ret;
}

/* flowipc_classic: the pool attached once (timed), then handles. */
static int peer_run_classic(shmb_lookup_peer_t *ps, char *why, size_t cap)
{
    if (ps->t.nobjects != 1) {
        snprintf(why, cap, "flowipc_classic: the owner published %llu pools, expected 1",
                 (unsigned long long)ps->t.nobjects);
        return -EPROTO;
    }
    void *base;
    size_t bytes;
    uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_fipc_classic_attach(ps->t.objects[0].name, &base, &bytes);
    uint64_t t1 = shmb_clock_now_ns();
    if (ret < 0)
        return ret;
    ps->classic_pool = base;
    ps->classic_bytes = bytes;
    if (bytes != ps->t.objects[0].bytes) {
        snprintf(why, cap, "flowipc_classic: the pool holds %zu bytes, the owner published %llu", bytes,
                 (unsigned long long)ps->t.objects[0].bytes);
        return -EPROTO;
    }
    const shmb_path_view_t view = {.pool_base = base, .pool_bytes = bytes};
    if ((ret = shmb_lookup_bench_path_setup(&ps->s, SHMB_SYSTEM_FLOWIPC_CLASSIC, &view)) < 0)
        return ret;
    if (shmb_stats_append(&ps->samples[SHMB_SYSTEM_FLOWIPC_CLASSIC][LOOKUP_SETUP], (double)(t1 - t0)) < 0)
        return shmb_error_record("malloc", ENOMEM, NULL);
    return peer_measure(ps, LOOKUP_GROUP_CLASSIC, why, cap);
}

/* flowipc_jemalloc's repository over the attached pools, each under the
 * owner's pool id, then handles. */
static int enter_pools(shmb_lookup_peer_t *ps, char *why, size_t cap)
{
    const uint64_t n = ps->pools_attached;
    shmb_lookup_segment_t *pools = calloc((size_t)(n ? n : 1), sizeof(*pools));
    uint32_t *ids = calloc((size_t)(n ? n : 1), sizeof(*ids));
    int ret = pools && ids ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; ret == 0 && i < n; i++) {
        pools[i] = (shmb_lookup_segment_t){.size = ps->t.objects[i].bytes, .local_base = ps->pool_map[i]};
        ids[i] = (uint32_t)ps->t.objects[i].key;
    }
    const shmb_path_view_t view = {.segments = pools, .n = (size_t)n, .pool_ids = ids};
    if (ret == 0)
        ret = shmb_lookup_bench_path_setup(&ps->s, SHMB_SYSTEM_FLOWIPC_JEMALLOC, &view);
    free(pools);
    free(ids);
    if (ret == -EEXIST || ret == -EINVAL) {
        snprintf(why, cap, "flowipc_jemalloc: the owner published no pool, a pool id twice, or pools that overlap");
        return -EPROTO;
    }
    return ret == 0 ? peer_measure(ps, LOOKUP_GROUP_JEMALLOC, why, cap) : ret;
}

/* flowipc_jemalloc: every pool attached and entered in our repository
 * under the owner's pool id, then handles. Untimed: the attach row is the
 * owner's lend of each pool (LOOKUP_OP_LEND, before), whose mappings end
 * with that session. */
static int peer_run_jemalloc(shmb_lookup_peer_t *ps, char *why, size_t cap)
{
    const uint64_t n = ps->t.nobjects;
    ps->pool_map = calloc((size_t)(n ? n : 1), sizeof(*ps->pool_map));
    ps->pool_fd = calloc((size_t)(n ? n : 1), sizeof(*ps->pool_fd));
    if (!ps->pool_map || !ps->pool_fd)
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        const shmb_lookup_object_t *o = &ps->t.objects[i];
        if ((ret = shmb_fipc_pool_attach(o->name, o->bytes, &ps->pool_map[i], &ps->pool_fd[i])) < 0)
            break;
        ps->pools_attached++;
        if (o->key > UINT32_MAX) {
            snprintf(why, cap, "flowipc_jemalloc: the owner published pool id %llu", (unsigned long long)o->key);
            return -EPROTO;
        }
    }
    return ret == 0 ? enter_pools(ps, why, cap) : ret;
}

/* Unmaps what the peer attached for a group. */
static void peer_release(shmb_lookup_peer_t *ps, int group)
{
    shmb_lookup_setup_t *s = &ps->s;
    for (int p = 0; p < SHMB_PATHS; p++)
        if (lookup_group_of(p) == group)
            shmb_lookup_bench_path_teardown(s, p);
    if (group == LOOKUP_GROUP_SEGMENTS) {
        shmb_lookup_bench_release_slots(s);
    } else if (group == LOOKUP_GROUP_CLASSIC && ps->classic_pool) {
        shmb_fipc_classic_detach(ps->classic_pool, ps->classic_bytes);
        ps->classic_pool = NULL;
    } else if (group == LOOKUP_GROUP_JEMALLOC) {
        for (uint64_t i = 0; i < ps->pools_attached; i++)
            shmb_fipc_pool_detach(ps->pool_map[i], ps->t.objects[i].bytes, ps->pool_fd[i]);
        ps->pools_attached = 0;
        free(ps->pool_map);
        free(ps->pool_fd);
        ps->pool_map = NULL;
        ps->pool_fd = NULL;
    }
}

static int give_samples(shmb_lookup_peer_t *ps, const uint64_t *arg, void *data, size_t data_bytes,
                        uint64_t result[SHMB_PEER_RESULTS])
{
    if (arg[0] >= SHMB_PATHS || arg[1] >= LOOKUP_KINDS)
        return -EINVAL;
    const shmb_samples_t *set = &ps->samples[arg[0]][arg[1]];
    const uint64_t first = arg[2] < set->n ? arg[2] : set->n;
    uint64_t count = set->n - first;
    if (count > data_bytes / sizeof(double))
        count = data_bytes / sizeof(double);
    if (count)
        memcpy(data, set->v + first, (size_t)count * sizeof(double));
    result[0] = count;
    result[1] = set->n;
    return 0;
}

/* ---- a paired first attach ---- */

int shmb_lookup_bench_take(shmb_lookup_peer_t *ps, const shmb_peer_cmd_t *cmd, const void *data, size_t data_bytes)
{
    const uint64_t set = cmd->arg[0] & 0xff, first = cmd->arg[1], count = cmd->arg[2], total = cmd->arg[3];
    const int blocks = cmd->op == LOOKUP_OP_BLOCKS;
    const size_t size = blocks ? sizeof(shmb_lookup_block_t) : sizeof(shmb_lookup_object_t);
    if (set > LOOKUP_SET_RUN)
        return -EINVAL;
    shmb_lookup_taken_t *t = set == LOOKUP_SET_RUN ? &ps->t : &ps->paired[set].t;
    if (blocks && !t->blocks && !(t->blocks = calloc((size_t)ps->cfg->num_segments, sizeof(*t->blocks))))
        return shmb_error_record("malloc", ENOMEM, NULL);
    if (!blocks && first == 0) {
        shmb_lookup_object_t *v = realloc(t->objects, (size_t)(total ? total : 1) * sizeof(*v));
        if (!v)
            return shmb_error_record("malloc", ENOMEM, NULL);
        t->objects = v;
        t->nobjects = total;
        t->group = (int)(cmd->arg[0] >> 8);
    }
    const uint64_t room = blocks ? ps->cfg->num_segments : t->nobjects;
    if (first > room || count > room - first || count > data_bytes / size)
        return -EINVAL;
    memcpy(blocks ? (void *)(t->blocks + first) : (void *)(t->objects + first), data, (size_t)count * size);
    for (uint64_t i = first; !blocks && i < first + count; i++)
        t->objects[i].name[SHMB_SEGMENT_NAME_MAX] = '\0';
    return 0;
}

/* The tag at the first word of segment id's buffer or block, read at `at`
 * through the receiver's mapping, must be the owner's. */
static int paired_check(const shmb_lookup_config_t *cfg, uint64_t sys, uint64_t id, const void *at, char *why,
                        size_t cap)
{
    uint64_t word;
    memcpy(&word, at, sizeof(word));
    if (word == lookup_paired_tag(cfg, sys, id))
        return 0;
    snprintf(why, cap, "paired attach of system %llu: segment %llu's first word reads 0x%llx, not the owner's tag",
             (unsigned long long)sys, (unsigned long long)id, (unsigned long long)word);
    return -EPROTO;
}

/* Mooncake's whole first attach: every buffer's first request through its
 * model (shm_open + mmap at its slot, as the first_use row times them), the
 * sum of those times; then each buffer's tag, and the model and slots go. */
static int paired_buffers(const shmb_lookup_config_t *cfg, uint64_t sys, shmb_lookup_paired_side_t *p, double *ns,
                          char *why, size_t cap)
{
    shmb_lookup_setup_t *s = &p->s;
    int ret = 0;
    if (!p->prepared) {
        if ((ret = shmb_lookup_bench_prepare(cfg, s)) < 0)
            return ret;
        p->prepared = 1;
        if ((ret = shmb_lookup_bench_alloc_slots(cfg, s)) < 0)
            return ret;
    }
    const char **names = malloc((size_t)cfg->num_segments * sizeof(*names));
    if (!names)
        return shmb_error_record("malloc", ENOMEM, NULL);
    ret = take_buffers(cfg, s, &p->t, names, why, cap);
    const shmb_path_view_t view = shmb_lookup_bench_view(cfg, s, names);
    if (ret == 0)
        ret = setup_buffers(s, SHMB_SYSTEM_MOONCAKE, &view, why, cap);
    if (ret == 0)
        ret = shmb_lookup_bench_first_uses(cfg, s, why, cap);
    double sum = 0;
    for (size_t i = 0; ret == 0 && i < s->first_use.n; i++)
        sum += s->first_use.v[i];
    shmb_stats_release(&s->first_use);
    for (uint64_t id = 0; id < cfg->num_segments && ret == 0; id++)
        ret = paired_check(cfg, sys, id, s->segments[id].local_base, why, cap);
    shmb_lookup_bench_release_slots(s);
    free(names);
    *ns = sum;
    return ret;
}

/* flowipc_classic's whole first attach: its one pool (shm_open + fstat +
 * mmap, as its attach row times it); then each block's tag; detached. */
static int paired_classic(const shmb_lookup_config_t *cfg, uint64_t sys, const shmb_lookup_paired_side_t *p,
                          double *ns, char *why, size_t cap)
{
    if (p->t.nobjects != 1 || !p->t.blocks) {
        snprintf(why, cap, "flowipc_classic: the owner published %llu pools and %s blocks, expected 1 and its",
                 (unsigned long long)p->t.nobjects, p->t.blocks ? "its" : "no");
        return -EPROTO;
    }
    void *base;
    size_t bytes;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = shmb_fipc_classic_attach(p->t.objects[0].name, &base, &bytes);
    const uint64_t t1 = shmb_clock_now_ns();
    if (ret < 0)
        return ret;
    *ns = (double)(t1 - t0);
    const uint64_t size = cfg->segment_size_mb << 20;
    for (uint64_t id = 0; id < cfg->num_segments && ret == 0; id++) {
        if (p->t.blocks[id].key > bytes || bytes - p->t.blocks[id].key < size) {
            snprintf(why, cap, "flowipc_classic: block %llu lies outside the pool", (unsigned long long)id);
            ret = -EPROTO;
        } else {
            ret = paired_check(cfg, sys, id, (unsigned char *)base + p->t.blocks[id].key, why, cap);
        }
    }
    int r = shmb_fipc_classic_detach(base, bytes);
    return ret < 0 ? ret : r;
}

int shmb_lookup_bench_paired_attach(shmb_lookup_peer_t *ps, uint64_t system, char *why, size_t cap,
                                    uint64_t result[SHMB_PEER_RESULTS])
{
    if (system >= SHMB_PAIRED_MAX_SYSTEMS)
        return -EINVAL;
    shmb_lookup_paired_side_t *p = &ps->paired[system];
    /* flowipc_jemalloc: the owner lends every pool and times it */
    if (p->t.group == LOOKUP_GROUP_JEMALLOC)
        return shmb_lookup_lend_serve(&ps->peer->channel, why, cap, result);
    double ns = 0;
    int ret = p->t.group == LOOKUP_GROUP_SEGMENTS ? paired_buffers(ps->cfg, system, p, &ns, why, cap)
                                                : paired_classic(ps->cfg, system, p, &ns, why, cap);
    if (ret == 0) {
        result[0] = (uint64_t)ns;
        result[1] = p->t.nobjects;
    }
    return ret;
}

static int before_each(void *ctx)
{
    return peer_prepare(ctx);
}

static SHMB_PEER_COMMAND(on_take)
{
    return shmb_lookup_bench_take(ctx, cmd, data, data_bytes);
}

static SHMB_PEER_COMMAND(on_samples)
{
    return give_samples(ctx, cmd->arg, data, data_bytes, result);
}

static SHMB_PEER_COMMAND(on_release)
{
    peer_release(ctx, (int)cmd->arg[0]);
    return 0;
}

/* RUN, PAIRED_ATTACH and LEND: a failed check's why travels back in the data area. */
static SHMB_PEER_COMMAND(on_run)
{
    shmb_lookup_peer_t *ps = ctx;
    char why[256] = "";
    const uint64_t a = cmd->arg[0], n = sizeof(why);
    int ret = cmd->op == LOOKUP_OP_LEND            ? shmb_lookup_lend_serve(&ps->peer->channel, why, n, result)
              : cmd->op == LOOKUP_OP_PAIRED_ATTACH ? shmb_lookup_bench_paired_attach(ps, a, why, n, result)
              : a == LOOKUP_GROUP_SEGMENTS         ? peer_run_segments(ps, why, n)
              : a == LOOKUP_GROUP_CLASSIC          ? peer_run_classic(ps, why, n)
                                                   : peer_run_jemalloc(ps, why, n);
    if (ret == -EPROTO)
        snprintf(data, data_bytes, "%s", why);
    return ret;
}

static const shmb_peer_handler_t peer_run_op[] = {
    [LOOKUP_OP_OBJECTS] = on_take,  [LOOKUP_OP_BLOCKS] = on_take,        [LOOKUP_OP_RUN] = on_run,
    [LOOKUP_OP_SAMPLES] = on_samples, [LOOKUP_OP_RELEASE] = on_release, [LOOKUP_OP_PAIRED_ATTACH] = on_run,
    [LOOKUP_OP_LEND] = on_run};
const shmb_peer_commands_t shmb_lookup_peer_commands = {peer_run_op, sizeof(peer_run_op) / sizeof(*peer_run_op),
                                                        before_each};

