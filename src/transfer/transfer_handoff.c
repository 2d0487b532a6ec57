/* The rows that hand an object over instead of writing into the peer's
 * memory (docs/transfer.md: why SHM-jemalloc's request is its write path);
 * models/handoff_link.c is the lender's end, models/handoff_peer.c the
 * borrower process. */
#include "transfer_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef shmb_transfer_run_t run_t;

int shmb_transfer_handoff_open(const shmb_transfer_config_t *cfg, const int flavour[SHMB_SYSTEMS],
                               uint64_t max, shmb_handoff_link_t **out, char *why, size_t why_cap)
{
    shmb_handoff_link_t *l = malloc(sizeof(*l));
    if (!l)
        return shmb_error_record("malloc", ENOMEM, NULL);
    shmb_handoff_link_init(l, 0x5eed ^ max, why, why_cap); /* any seed: tags need only differ per hand-off */
    const size_t bytes = (size_t)max + SHMB_HANDOFF_PAYLOAD_SLACK;
    int ret = shmb_handoff_link_start_peer(l, cfg->shm_prefix);
    for (int f = HANDOFF_CLASSIC; f <= HANDOFF_JEMALLOC && ret == 0; f++)
        if (flavour[f])
            ret = shmb_handoff_link_open(l, f, cfg->shm_prefix, bytes + bytes / 8 + (4u << 20), 4096);
    if (ret < 0)
        return shmb_transfer_handoff_close(l, ret);
    *out = l;
    return 0;
}

int shmb_transfer_handoff_writer(run_t *r, uint64_t max)
{
    const int flavour[SHMB_SYSTEMS] = {[SHMB_SYSTEM_FLOWIPC_JEMALLOC] = 1};
    if (r->translation.system != SHMB_SYSTEM_FLOWIPC_JEMALLOC)
        return 0;
    return shmb_transfer_handoff_open(r->cfg, flavour, max, &r->translation.handoff, r->why, r->why_cap);
}

int shmb_transfer_handoff_close(shmb_handoff_link_t *l, int run_ret)
{
    if (!l)
        return run_ret;
    if (l->pool)
        shmb_handoff_link_close(l, HANDOFF_CLASSIC, run_ret < 0);
    if (l->j)
        shmb_handoff_link_close(l, HANDOFF_JEMALLOC, run_ret < 0);
    int ret = shmb_handoff_link_stop_peer(l, run_ret);
    free(l);
    return ret;
}

int shmb_transfer_handoff_runs(const run_t *r, shmb_transfer_part_t part)
{
    const shmb_transfer_translation_t *t = &r->translation;
    return t->handoff && (part == SHMB_TRANSFER_ZERO_COPY ||
                          (part == SHMB_TRANSFER_REQUEST && t->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC));
}

/* A hand-off's failure: counted, the first kept. */
static void failed(run_t *r, int ret)
{
    r->translation.missed++;
    if (r->translation.handoff_err == 0)
        r->translation.handoff_err = ret;
}

/* The write path's translation (hooks->translate): the request's object,
 * constructed in the writer's arena; the payload's address is where the
 * request lands. */
static int construct_object(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local)
{
    run_t *r = ctx;
    shmb_transfer_translation_t *t = &r->translation;
    (void)target_id;
    (void)addr;
    memset(&t->obj, 0, sizeof(t->obj));
    int ret = shmb_handoff_link_construct(t->handoff, HANDOFF_JEMALLOC, (size_t)len + SHMB_HANDOFF_PAYLOAD_SLACK,
                                          &t->obj);
    if (ret < 0) {
        shmb_handoff_link_drop(HANDOFF_JEMALLOC, &t->obj);
        failed(r, ret);
        return -EIO;
    }
    *local = (char *)t->obj.j.addr + SHMB_HANDOFF_PAYLOAD_AT;
    return 0;
}

/* The write path's copy (hooks->copy): the bytes written into the object,
 * which is then handed over and, once returned, freed. Checked, the
 * borrower reads them against src's pattern at their place in src. */
static void write_and_hand_over(void *ctx, void *dst, const void *src, uint64_t len)
{
    run_t *r = ctx;
    shmb_transfer_translation_t *t = &r->translation;
    (void)dst;
    shmb_handoff_link_fill(t->handoff, HANDOFF_JEMALLOC, &t->obj, t->copy, src, (size_t)len);
    const size_t from = (size_t)((const unsigned char *)src - (const unsigned char *)r->src.addr);
    int ret = shmb_handoff_link_give(t->handoff, HANDOFF_JEMALLOC, &t->obj, (size_t)len + SHMB_HANDOFF_PAYLOAD_SLACK,
                                     t->check_payload ? (size_t)len : 0, from);
    shmb_handoff_link_drop(HANDOFF_JEMALLOC, &t->obj);
    if (ret < 0)
        failed(r, ret);
}

shmb_mooncake_hooks_t shmb_transfer_handoff_hooks(run_t *r)
{
    return (shmb_mooncake_hooks_t){construct_object, write_and_hand_over, r};
}

int shmb_transfer_handoff_write(run_t *r, void *src, uint64_t remote, uint64_t len)
{
    shmb_transfer_translation_t *t = &r->translation;
    const shmb_mooncake_hooks_t hooks = shmb_transfer_handoff_hooks(r);
    const shmb_mooncake_request_t request = {SHMB_MOONCAKE_WRITE, src, SHMB_PATH_MOONCAKE_TARGET_ID, remote, len};
    const uint64_t missed = t->missed;
    shmb_mooncake_submitted_t out;
    int ret = shmb_mooncake_engine_submit(t->engine, &request, &hooks, &out);
    return ret == 0 && t->missed == missed && out.buffer_addr == t->buffer_addr && out.transferred_bytes == len;
}

/* `count` submits of the run's descriptors per submit through the request
 * path, as the copier's: each descriptor an object of its own, constructed,
 * written and handed over by the hooks (the transport runs them task by
 * task), so the request path is paid once per submit, as Mooncake's. */
static void write_requests(run_t *r, shmb_copy_fn fn, uint64_t size, uint64_t count)
{
    shmb_transfer_translation_t *t = &r->translation;
    const shmb_mooncake_hooks_t hooks = shmb_transfer_handoff_hooks(r);
    const uint64_t n = shmb_transfer_descriptors(r->cfg, SHMB_TRANSFER_REQUEST);
    t->copy = fn;
    for (uint64_t j = 0; j < n; j++)
        t->reqs[j] = (shmb_mooncake_request_t){SHMB_MOONCAKE_WRITE, r->src.addr, SHMB_PATH_MOONCAKE_TARGET_ID,
                                               t->remote_addr + t->offset + j * size, size};
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t missed = t->missed; /* a failed hand-off counts itself */
        int bad = shmb_mooncake_engine_submit_n(t->engine, t->reqs, (size_t)n, &hooks, t->outs) != 0;
        for (uint64_t j = 0; j < n && !bad; j++)
            bad = t->outs[j].buffer_addr != t->buffer_addr || t->outs[j].transferred_bytes != size;
        t->missed += bad && t->missed == missed;
    }
}

static void zero_copy(run_t *r, int f, uint64_t size, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        shmb_handoff_object_t o;
        memset(&o, 0, sizeof(o));
        int ret = shmb_handoff_link_construct(r->translation.handoff, f, (size_t)size, &o);
        if (ret == 0)
            ret = shmb_handoff_link_give(r->translation.handoff, f, &o, (size_t)size, 0, 0);
        shmb_handoff_link_drop(f, &o);
        if (ret < 0)
            failed(r, ret);
    }
}

void shmb_transfer_handoff_part(run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size, uint64_t count)
{
    if (part == SHMB_TRANSFER_REQUEST)
        write_requests(r, fn, size, count);
    else
        zero_copy(r, r->translation.system == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? HANDOFF_JEMALLOC : HANDOFF_CLASSIC,
                  size, count * shmb_transfer_descriptors(r->cfg, part));
}

int shmb_transfer_handoff_verify(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (!t->handoff)
        return 0;
    if (t->handoff_err == -EPROTO || t->handoff_err == -EPIPE)
        return t->handoff_err;
    if (t->handoff_err < 0)
        return shmb_error_record("hand-off", -t->handoff_err, shmb_system_name(t->system));
    const int f = t->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? HANDOFF_JEMALLOC : HANDOFF_CLASSIC;
    return t->handoff->next[f] ? shmb_handoff_link_check_freed(t->handoff, f) : 0;
}

int shmb_transfer_handoff_object(run_t *r, uint64_t size, shmb_handoff_object_t *o, void **payload)
{
    memset(o, 0, sizeof(*o));
    int ret = shmb_handoff_link_construct(r->translation.handoff, HANDOFF_JEMALLOC,
                                          (size_t)size + SHMB_HANDOFF_PAYLOAD_SLACK, o);
    if (ret < 0) {
        shmb_handoff_link_drop(HANDOFF_JEMALLOC, o);
        return ret;
    }
    shmb_handoff_link_fill(r->translation.handoff, HANDOFF_JEMALLOC, o, shmb_copy_kernel(SHMB_COPY_MEMCPY),
                           r->src.addr, (size_t)size);
    *payload = (char *)o->j.addr + SHMB_HANDOFF_PAYLOAD_AT;
    return 0;
}

/* Handed over and freed as any other object, its payload checked unless the
 * copy's check failed already (its reason is kept). */
int shmb_transfer_handoff_release(run_t *r, shmb_handoff_object_t *o, uint64_t size, int ret)
{
    int rc = shmb_handoff_link_give(r->translation.handoff, HANDOFF_JEMALLOC, o,
                                    (size_t)size + SHMB_HANDOFF_PAYLOAD_SLACK, ret == 0 ? (size_t)size : 0, 0);
    shmb_handoff_link_drop(HANDOFF_JEMALLOC, o);
    if (ret == 0 && rc < 0)
        failed(r, rc);
    return ret < 0 ? ret : shmb_transfer_handoff_verify(r);
}

void shmb_transfer_handoff_notes(shmb_row_t *req, shmb_row_t *translate, const char *what)
{
    snprintf(req->note, sizeof(req->note), "write path: %s", what);
    if (translate)
        snprintf(translate->note, sizeof(translate->note), "%s", SHMB_TRANSFER_NOT_UPSTREAM);
}
