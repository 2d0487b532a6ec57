/* mooncake_upstream in the paired run: TENT's own engines and SHM
 * transport (shmbench/upstream.h) over num_segments buffers of dst's size,
 * its relocation (translate) and its submit path with the no-op copy
 * (submit) aimed at the middle buffer as the model's are, every landing
 * checked (transfer_internal.h, docs/upstream.md). */
#include "transfer_internal.h"

#include "shmbench/error.h"
#include "shmbench/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

typedef shmb_transfer_run_t run_t;

struct shmb_transfer_upstream {
    shmb_upstream_tent_t *tent;
    uint32_t index;      /* dst's buffer: the middle one */
    char *at[2];         /* where a relocation [0] and a submit [1] land on byte 0 of it, checked */
    void *landed;        /* the last operation's landing */
    uint32_t *buffer;    /* a submit's descriptors: all into index, */
    uint64_t *offset;    /* descriptor j at j * size */
};

int shmb_transfer_upstream_start(run_t *r)
{
    const uint32_t n = (uint32_t)r->cfg->num_segments;
    const uint64_t per = shmb_transfer_descriptors(r->cfg, SHMB_TRANSFER_SUBMIT);
    struct shmb_transfer_upstream *u = calloc(1, sizeof(*u));
    if (u) {
        u->buffer = calloc((size_t)per, sizeof(*u->buffer));
        u->offset = calloc((size_t)per, sizeof(*u->offset));
    }
    r->translation.upstream = u;
    if (!u || !u->buffer || !u->offset)
        return shmb_error_record("malloc", ENOMEM, NULL);
    u->index = n / 2;
    for (uint64_t j = 0; j < per; j++)
        u->buffer[j] = u->index;
    int ret = shmb_upstream_tent_create(n, r->dst.size, r->src.size, &u->tent);
    /* Every buffer requested and relocated into once, checked: the first
     * maps it (the miss path, set-up), so that the timed ones take the hit
     * path over all of them, as a running engine's and the model's do. */
    for (uint32_t b = 0; b < n && ret == 0; b++) {
        void *p[2] = {NULL, NULL};
        const uint64_t zero = 0;
        ret = shmb_upstream_tent_relocate(u->tent, b, 0, 1, &p[0]);
        if (ret == 0)
            ret = shmb_upstream_tent_check(u->tent, b, 0, p[0]);
        if (ret == 0)
            ret = shmb_upstream_tent_submit(u->tent, &b, &zero, 1, 1, &p[1]);
        if (ret == 0)
            ret = shmb_upstream_tent_check(u->tent, b, 0, p[1]);
        if (ret == 0 && b == u->index)
            u->at[0] = p[0], u->at[1] = p[1];
    }
    if (ret == -EFAULT)
        snprintf(r->why, r->why_cap, "mooncake_upstream: a request did not land on its buffer's byte");
    return ret == -EFAULT ? -EPROTO : ret;
}

void shmb_transfer_upstream_stop(run_t *r)
{
    struct shmb_transfer_upstream *u = r->translation.upstream;
    if (!u)
        return;
    shmb_upstream_tent_destroy(u->tent);
    free(u->buffer);
    free(u->offset);
    free(u);
    r->translation.upstream = NULL;
}

void shmb_transfer_upstream_part(run_t *r, shmb_transfer_part_t part, uint64_t size, uint64_t count)
{
    struct shmb_transfer_upstream *u = r->translation.upstream;
    uint64_t *missed = &r->translation.missed;
    if (part == SHMB_TRANSFER_TRANSLATE) {
        for (uint64_t i = 0; i < count; i++) {
            void *p = NULL;
            *missed += shmb_upstream_tent_relocate(u->tent, u->index, 0, size, &p) != 0 || p != u->at[0];
            u->landed = p;
        }
        return;
    }
    if (part != SHMB_TRANSFER_SUBMIT) {
        *missed += count;
        return;
    }
    const uint64_t n = shmb_transfer_descriptors(r->cfg, part);
    for (uint64_t j = 0; j < n; j++)
        u->offset[j] = j * size;
    for (uint64_t i = 0; i < count; i++) {
        void *p = NULL;
        const int ret = shmb_upstream_tent_submit(u->tent, u->buffer, u->offset, (uint32_t)n, size, &p);
        /* The last copy TENT ran: a descriptor's target, whichever it took last. */
        const uint64_t off = (uint64_t)((char *)p - u->at[1]);
        *missed += ret != 0 || (char *)p < u->at[1] || off % size || off / size >= n;
        u->landed = p;
    }
}

int shmb_transfer_upstream_check(run_t *r, shmb_transfer_part_t part)
{
    const struct shmb_transfer_upstream *u = r->translation.upstream;
    const char *at = u->at[part == SHMB_TRANSFER_SUBMIT];
    const char *p = u->landed;
    if (p && p >= at && shmb_upstream_tent_check(u->tent, u->index, (uint64_t)(p - at), p) == 0)
        return 0;
    snprintf(r->why, r->why_cap, "mooncake_upstream: its %s did not land on dst's buffer's byte",
             shmb_transfer_part_name(part));
    return -EPROTO;
}
