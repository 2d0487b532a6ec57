/* The peer process's side of the transfer driver (docs/transfer.md, "Two
 * processes"): it attaches the owner's src and dst by name or from their
 * descriptors, touches them, starts its own copier and runs the copy steps
 * the owner asks for (transfer_rows.c holds the owner's calls). It holds at
 * most one run at a time; DETACH undoes ATTACH and SETUP. */
#include "transfer_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef shmb_transfer_run_t run_t;

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

/* The owner's buffer of a command, by name or ("") off the channel, unless
 * the command is bad (-EINVAL): a sent one is taken off all the same, so
 * that the stream stays in step, and let go. */
static int attach(receiver_t *p, shmb_segment_t *seg, const char *name, uint64_t size, int bad)
{
    *seg = (shmb_segment_t){.fd = -1, .slot = -1};
    if (bad && name[0])
        return -EINVAL;
    int ret = name[0] ? attach_by_name(seg, name, size ? size : 1) : attach_received(p, seg, size ? size : 1);
    if (ret == 0 && bad) {
        shmb_segment_unmap(seg, NULL);
        ret = -EINVAL;
    }
    return ret;
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

static SHMB_PEER_COMMAND(on_attach)
{
    receiver_t *p = ctx;
    run_t *r = &p->r;
    shmb_segment_t *seg = cmd->arg[0] ? &r->dst : &r->src;
    shmb_segment_t got;
    int ret = attach(p, &got, cmd->name, cmd->arg[1], cmd->arg[0] > 1 || seg->addr || cmd->arg[1] == 0);
    if (ret < 0)
        return ret;
    *seg = got;
    if (seg == &r->dst)
        shmb_segment_touch(seg->addr, seg->size);
    else
        touch_read(seg->addr, seg->size);
    return 0;
}

static SHMB_PEER_COMMAND(on_setup)
{
    receiver_t *p = ctx;
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

static SHMB_PEER_COMMAND(on_copy)
{
    run_t *r = &((receiver_t *)ctx)->r;
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
static SHMB_PEER_COMMAND(on_cold)
{
    receiver_t *p = ctx;
    run_t *r = &p->r;
    const uint64_t m = cmd->arg[0], size = cmd->arg[1];
    shmb_segment_t fresh;
    int ret = attach(p, &fresh, cmd->name, size, !copy_can_run(r, m, size));
    if (ret == 0)
        ret = shmb_transfer_bench_first_write(r, (shmb_copy_method_t)m, fresh.addr, size, &result[0]);
    int rc = fresh.addr ? shmb_segment_unmap(&fresh, NULL) : 0;
    return ret < 0 ? ret : rc;
}

static SHMB_PEER_COMMAND(on_samples)
{
    const run_t *r = &((receiver_t *)ctx)->r;
    const uint64_t first = cmd->arg[0];
    if (first >= r->samples.n)
        return -EINVAL;
    size_t n = r->samples.n - (size_t)first;
    if (n > data_bytes / sizeof(double))
        n = data_bytes / sizeof(double);
    memcpy(data, r->samples.v + first, n * sizeof(double));
    result[0] = n;
    return 0;
}

static SHMB_PEER_COMMAND(on_detach)
{
    receiver_t *p = ctx;
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

/* The peer's commands; ctx is its own copy of the owner's receiver_t. */
static const shmb_peer_handler_t receiver_run[] = {
    [SHMB_TRANSFER_OP_ATTACH] = on_attach, [SHMB_TRANSFER_OP_SETUP] = on_setup,
    [SHMB_TRANSFER_OP_COPY] = on_copy,     [SHMB_TRANSFER_OP_SAMPLES] = on_samples,
    [SHMB_TRANSFER_OP_COLD] = on_cold,     [SHMB_TRANSFER_OP_DETACH] = on_detach};
static const shmb_peer_commands_t receiver_commands = {receiver_run, sizeof(receiver_run) / sizeof(*receiver_run),
                                                       NULL};

int shmb_transfer_bench_peer_start(shmb_peer_t *peer, const char *prefix)
{
    receiver_t *receiver = calloc(1, sizeof(*receiver));
    if (!receiver)
        return -ENOMEM;
    shmb_transfer_bench_run_init(&receiver->r, NULL, receiver->why, sizeof(receiver->why));
    receiver->peer = peer;
    snprintf(receiver->prefix, sizeof(receiver->prefix), "%s", prefix ? prefix : "");
    int ret = shmb_peer_start(peer, prefix, SHMB_TRANSFER_PEER_DATA_BYTES, &receiver_commands, receiver);
    free(receiver); /* the peer has its own copy */
    return ret;
}
