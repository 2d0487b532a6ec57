/*
 * transfer_peer: the transfer driver's two-process protocol, both sides:
 * the owner's calls (shmb_transfer_peer_*, from transfer_bench.c when
 * cfg->peer is set) and the peer's handler (started with
 * shmb_transfer_bench_peer_start), over shmb_peer's commands.
 *
 * The peer is a receiver that writes into buffers another process created.
 * The owner creates, reserves and fills src and dst; the peer attaches both
 * by name (shm_open O_RDWR, an fstat size check, mmap), or, for a backing
 * without a name (memfd, thp, hugetlb), receives their descriptors over the
 * peer's channel (SCM_RIGHTS, shmb_backing_send / receive: an fstat size
 * check, mmap, thp advised as in the owner), touches them (reads
 * src, writes dst), starts its own copier (threads pinned from cfg->cpu
 * and, with a system, its own view of that system and its own request
 * path, over its mapping of dst) and then runs the same parts and timed
 * batches as the owner would, timing them itself and counting the
 * translations and requests that missed its dst; its samples come back through the
 * data area, in chunks. The owner poisons dst before the peer's untimed
 * transfer and again before its timed ones, and verifies dst after each, so
 * every row is verified across the two processes.
 *
 * Cold rows: the owner creates each fresh segment (and checks its pages
 * before and after, and its bytes); the peer attaches it (by name or
 * descriptor, as src and dst), untouched,
 * and times its first write: the page allocation happens in the peer, as in
 * a receiver that writes a buffer first.
 *
 * The peer holds at most one run at a time; DETACH undoes ATTACH and SETUP,
 * so one peer serves any number of runs.
 */
#include "transfer_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAMPLES_PER_REPLY (SHMB_TRANSFER_PEER_DATA_BYTES / sizeof(double))

typedef shmb_transfer_run_t run_t;

/* ---- the owner's side ---- */

static int call(const run_t *r, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, const char *name,
                uint64_t result[SHMB_PEER_RESULTS])
{
    return shmb_peer_command(r->cfg->peer, op, a0, a1, a2, 0, name, result);
}

/* A command about the owner's buffer seg: a tmpfs one goes by its name, the
 * others as a descriptor on the channel first (the peer takes it off the
 * channel before anything else, so the stream stays in step). A send that
 * finds the peer gone (-EPIPE: it held its end) still makes the call, which
 * then records how the peer ended. */
static int call_with(run_t *r, uint32_t op, uint64_t a0, uint64_t a1, const shmb_segment_t *seg,
                     uint64_t result[SHMB_PEER_RESULTS])
{
    if (r->cfg->backing.kind != SHMB_BACKING_TMPFS) {
        shmb_backing_t b = shmb_transfer_bench_backing(r, seg);
        int ret = shmb_backing_send(&b, &r->cfg->peer->channel);
        if (ret < 0 && ret != -EPIPE)
            return ret;
        return call(r, op, a0, a1, 0, NULL, result);
    }
    return call(r, op, a0, a1, 0, seg->name, result);
}

int shmb_transfer_peer_attach(run_t *r, uint64_t max)
{
    uint64_t res[SHMB_PEER_RESULTS];
    r->peer_holds = 1;
    int ret = call_with(r, SHMB_TRANSFER_OP_ATTACH, 0, max, &r->src, res);
    if (ret == 0)
        ret = call_with(r, SHMB_TRANSFER_OP_ATTACH, 1, max, &r->dst, res);
    if (ret < 0)
        return ret;
    memcpy(r->cfg->peer->data, r->cfg, sizeof(*r->cfg));
    if ((ret = call(r, SHMB_TRANSFER_OP_SETUP, 0, 0, 0, NULL, res)) < 0)
        return ret;
    r->translation.missed = res[0];
    return 0;
}

int shmb_transfer_peer_copy(run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m, uint64_t size, int timed,
                            uint64_t *done)
{
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = shmb_peer_command(r->cfg->peer, SHMB_TRANSFER_OP_COPY, (uint64_t)m, size, (uint64_t)timed,
                                (uint64_t)part, NULL, res);
    if (ret < 0)
        return ret;
    *done = res[0];
    r->translation.missed = res[2];
    r->samples.n = 0;
    while (r->samples.n < res[1]) {
        uint64_t got[SHMB_PEER_RESULTS];
        if ((ret = call(r, SHMB_TRANSFER_OP_SAMPLES, r->samples.n, 0, 0, NULL, got)) < 0)
            return ret;
        if (got[0] == 0 || got[0] > SAMPLES_PER_REPLY || got[0] > res[1] - r->samples.n)
            return shmb_error_record("peer samples", EPROTO, NULL);
        const double *v = r->cfg->peer->data;
        for (uint64_t i = 0; i < got[0]; i++)
            if ((ret = shmb_transfer_bench_add_sample(r, v[i])) < 0)
                return ret;
    }
    return 0;
}

int shmb_transfer_peer_first_write(run_t *r, shmb_copy_method_t m, const shmb_segment_t *fresh, uint64_t size,
                                   uint64_t *ns)
{
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = call_with(r, SHMB_TRANSFER_OP_COLD, (uint64_t)m, size, fresh, res);
    if (ret == 0)
        *ns = res[0];
    return ret;
}

int shmb_transfer_peer_detach(run_t *r)
{
    return call(r, SHMB_TRANSFER_OP_DETACH, 0, 0, 0, NULL, NULL);
}

/* ---- the peer's side ---- */

/* The peer's state: the owner's config and the run it copies with. */
typedef struct receiver {
    shmb_peer_t *peer;          /* the peer's copy: its channel is the peer's end */
    shmb_transfer_config_t cfg; /* the owner's, as SETUP sent it */
    run_t r;                    /* r.cfg is &cfg once set up */
    char prefix[SHMB_SEGMENT_NAME_MAX + 1]; /* the owner's: names SHM-jemalloc's arena (engine_buffers) */
    char why[8];                /* the owner writes the reasons */
} receiver_t;

/* Attaches the owner's segment `name` as an unrelated process would:
 * shm_open(O_RDWR), an fstat size check, mmap; the descriptor is closed once
 * mapped. Not registered: the peer never unlinks the owner's names. */
static int attach_by_name(shmb_segment_t *seg, const char *name, uint64_t size)
{
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    seg->size = (size_t)size;
    seg->fd = shmb_segment_open_existing(name, size);
    if (seg->fd < 0) {
        int ret = seg->fd;
        seg->fd = -1;
        return ret;
    }
    int ret = shmb_segment_map(seg, NULL);
    int rc = shmb_segment_close(seg, NULL);
    return ret < 0 ? ret : rc;
}

/* Attaches the buffer the owner just sent on the channel (a memfd kind):
 * its descriptor received, at least size bytes, mapped (thp: aligned and
 * advised, as in the owner), the descriptor closed once mapped. */
static int attach_received(receiver_t *p, shmb_segment_t *seg, uint64_t size)
{
    shmb_backing_t b;
    int ret = shmb_backing_receive(&b, &p->peer->channel);
    if (ret < 0)
        return ret;
    if (b.seg.size < size)
        ret = shmb_error_record("receive backing", EPROTO, "smaller than announced");
    if (ret == 0)
        ret = shmb_backing_map(&b, 0, NULL);
    if (ret == 0)
        ret = shmb_segment_close(&b.seg, NULL);
    if (ret < 0) {
        shmb_backing_destroy(&b);
        return ret;
    }
    *seg = b.seg;
    return 0;
}

/* The owner's buffer of a command: by name, or ("") off the channel. */
static int attach(receiver_t *p, shmb_segment_t *seg, const char *name, uint64_t size)
{
    return name[0] ? attach_by_name(seg, name, size) : attach_received(p, seg, size);
}

/* Reads one byte in every page of [addr, addr + bytes): the peer's first
 * touch of src, whose pattern must stay. */
static void touch_read(const void *addr, size_t bytes)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const volatile unsigned char *p = addr;
    for (size_t off = 0; off < bytes; off += page)
        (void)p[off];
}

static int on_attach(receiver_t *p, const shmb_peer_cmd_t *cmd)
{
    run_t *r = &p->r;
    shmb_segment_t *seg = cmd->arg[0] ? &r->dst : &r->src;
    const int bad = cmd->arg[0] > 1 || seg->addr || cmd->arg[1] == 0;
    if (bad && cmd->name[0])
        return -EINVAL;
    shmb_segment_t got = {.fd = -1, .slot = -1};
    int ret = attach(p, &got, cmd->name, cmd->arg[1] ? cmd->arg[1] : 1); /* a sent one is taken off anyway */
    if (ret == 0 && bad) {
        shmb_segment_unmap(&got, NULL);
        ret = -EINVAL;
    }
    if (ret < 0)
        return ret;
    *seg = got;
    if (seg == &r->dst)
        shmb_segment_touch(seg->addr, seg->size);
    else
        touch_read(seg->addr, seg->size);
    return 0;
}

static int on_setup(receiver_t *p, const void *data, size_t data_bytes, uint64_t result[SHMB_PEER_RESULTS])
{
    run_t *r = &p->r;
    if (r->cfg || !r->src.addr || !r->dst.addr || data_bytes < sizeof(p->cfg))
        return -EINVAL;
    memcpy(&p->cfg, data, sizeof(p->cfg));
    p->cfg.shm_prefix = p->prefix;
    p->cfg.peer = NULL;
    p->cfg.granted = NULL;
    if (shmb_transfer_bench_config_check(&p->cfg) < 0)
        return -EINVAL;
    r->cfg = &p->cfg;
    r->translation.system = p->cfg.translate ? (int)p->cfg.system : -1;
    int ret = shmb_transfer_bench_copier_start(r);
    result[0] = r->translation.missed;
    return ret;
}

/* A copy of size bytes of src with method m can run: set up, a method this
 * machine has, size within src. */
static int copy_can_run(const run_t *r, uint64_t m, uint64_t size)
{
    return r->cfg && m < SHMB_COPY_METHODS && shmb_copy_kernel((shmb_copy_method_t)m) && size > 0 &&
           size <= r->src.size;
}

static int on_copy(run_t *r, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS])
{
    const uint64_t m = cmd->arg[0], size = cmd->arg[1], timed = cmd->arg[2], part = cmd->arg[3];
    if (!copy_can_run(r, m, size) || size > r->dst.size || timed > 1 || part >= SHMB_TRANSFER_PARTS)
        return -EINVAL;
    uint64_t done = 0;
    int ret = shmb_transfer_bench_copy(r, (shmb_transfer_part_t)part, (shmb_copy_method_t)m, size, (int)timed,
                                       &done);
    result[0] = done;
    result[1] = timed ? r->samples.n : 0;
    result[2] = r->translation.missed;
    return ret;
}

/* A fresh buffer the owner just created, attached (not touched) and
 * written first here, timed as in the owner. */
static int on_cold(receiver_t *p, const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS])
{
    run_t *r = &p->r;
    const uint64_t m = cmd->arg[0], size = cmd->arg[1];
    const int bad = !copy_can_run(r, m, size);
    if (bad && cmd->name[0])
        return -EINVAL;
    shmb_segment_t fresh = {.fd = -1, .slot = -1};
    int ret = attach(p, &fresh, cmd->name, size ? size : 1); /* a sent one is taken off anyway */
    if (ret == 0 && bad)
        ret = -EINVAL;
    if (ret == 0)
        ret = shmb_transfer_bench_first_write(r, (shmb_copy_method_t)m, fresh.addr, size, &result[0]);
    int rc = fresh.addr ? shmb_segment_unmap(&fresh, NULL) : 0;
    return ret < 0 ? ret : rc;
}

static int on_samples(const run_t *r, uint64_t first, void *data, size_t data_bytes,
                      uint64_t result[SHMB_PEER_RESULTS])
{
    if (first >= r->samples.n)
        return -EINVAL;
    size_t n = r->samples.n - (size_t)first;
    if (n > data_bytes / sizeof(double))
        n = data_bytes / sizeof(double);
    memcpy(data, r->samples.v + first, n * sizeof(double));
    result[0] = n;
    return 0;
}

static int on_detach(receiver_t *p)
{
    shmb_transfer_bench_copier_stop(&p->r);
    int ret = 0;
    shmb_segment_t *segs[2] = {&p->r.src, &p->r.dst};
    for (int i = 0; i < 2; i++) {
        int rc = segs[i]->addr ? shmb_segment_unmap(segs[i], NULL) : 0;
        ret = ret < 0 ? ret : rc;
    }
    shmb_transfer_bench_run_init(&p->r, NULL, p->why, sizeof(p->why));
    return ret;
}

/* The peer's handler; ctx is its own copy of the owner's receiver_t. */
static int handle_command(void *ctx, const shmb_peer_cmd_t *cmd, void *data, size_t data_bytes,
                          uint64_t result[SHMB_PEER_RESULTS])
{
    receiver_t *p = ctx;
    switch (cmd->op) {
    case SHMB_TRANSFER_OP_ATTACH: return on_attach(p, cmd);
    case SHMB_TRANSFER_OP_SETUP: return on_setup(p, data, data_bytes, result);
    case SHMB_TRANSFER_OP_COPY: return on_copy(&p->r, cmd, result);
    case SHMB_TRANSFER_OP_SAMPLES: return on_samples(&p->r, cmd->arg[0], data, data_bytes, result);
    case SHMB_TRANSFER_OP_COLD: return on_cold(p, cmd, result);
    case SHMB_TRANSFER_OP_DETACH: return on_detach(p);
    default: return -EINVAL;
    }
}

int shmb_transfer_bench_peer_start(shmb_peer_t *peer, const char *prefix)
{
    receiver_t *receiver = calloc(1, sizeof(*receiver));
    if (!receiver)
        return -ENOMEM;
    shmb_transfer_bench_run_init(&receiver->r, NULL, receiver->why, sizeof(receiver->why));
    receiver->peer = peer;
    snprintf(receiver->prefix, sizeof(receiver->prefix), "%s", prefix ? prefix : "");
    int ret = shmb_peer_start(peer, prefix, SHMB_TRANSFER_PEER_DATA_BYTES, handle_command, receiver);
    free(receiver); /* the peer has its own copy */
    return ret;
}
