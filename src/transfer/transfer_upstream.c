/* mooncake_upstream in the paired run: TENT's own engines and SHM
 * transport (shmbench/upstream.h) over num_segments buffers of dst's size,
 * its relocation (translate) and its submit path with the no-op copy
 * (submit) going round every buffer as the model's do beside it, every
 * landing checked (transfer_internal.h, docs/upstream.md). */
#include "transfer_internal.h"

#include "shmbench/error.h"
#include "shmbench/upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

typedef shmb_transfer_run_t run_t;

struct shmb_transfer_upstream {
    shmb_upstream_tent_t *tent;
    char **at[2];        /* [part][b]: where a relocation [0] and a submit [1] land on buffer b's byte 0, checked */
    void *landed;        /* the last operation's landing, */
    uint32_t last;       /* in this buffer, */
    uint64_t off;        /* at this offset */
    uint32_t *buffer;    /* a submit's descriptors: j into buffer next + j, */
    uint64_t *offset;    /* at j * size */
};

int shmb_transfer_upstream_start(run_t *r)
{
    const uint32_t n = (uint32_t)r->cfg->num_segments;
    const uint64_t per = shmb_transfer_descriptors(r->cfg, SHMB_TRANSFER_SUBMIT);
    struct shmb_transfer_upstream *u = calloc(1, sizeof(*u));
    if (u) {
        u->buffer = calloc((size_t)per, sizeof(*u->buffer));
        u->offset = calloc((size_t)per, sizeof(*u->offset));
        u->at[0] = calloc(n, sizeof(*u->at[0]));
        u->at[1] = calloc(n, sizeof(*u->at[1]));
    }
    r->translation.upstream = u;
    r->translation.spread = n;
    if (!u || !u->buffer || !u->offset || !u->at[0] || !u->at[1])
        return shmb_error_record("malloc", ENOMEM, NULL);
    int ret = shmb_upstream_tent_create(n, r->dst.size, r->src.size, &u->tent);
    /* Every buffer requested and relocated into once, checked: the first
     * maps it (the miss path, set-up), so that the timed ones take the hit
     * path over all of them, as a running engine's and the model's do. */
    for (uint32_t b = 0; b < n && ret == 0; b++) {
        const uint64_t zero = 0;
        ret = shmb_upstream_tent_relocate(u->tent, b, 0, 1, (void **)&u->at[0][b]);
        if (ret == 0)
            ret = shmb_upstream_tent_check(u->tent, b, 0, u->at[0][b]);
        if (ret == 0)
            ret = shmb_upstream_tent_submit(u->tent, &b, &zero, 1, 1, (void **)&u->at[1][b]);
        if (ret == 0)
            ret = shmb_upstream_tent_check(u->tent, b, 0, u->at[1][b]);
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
    free(u->at[0]);
    free(u->at[1]);
    free(u);
    r->translation.upstream = NULL;
}

/* p as TENT gave it, or 64 bytes off where the test hook plants it. */
static char *taken(uint32_t b, void *p)
{
    return (char *)p + (b + 1 == shmb_transfer_bench_wrong_landing ? 64 : 0);
}

void shmb_transfer_upstream_part(run_t *r, shmb_transfer_part_t part, uint64_t size, uint64_t count)
{
    struct shmb_transfer_upstream *u = r->translation.upstream;
    uint64_t *missed = &r->translation.missed, *next = &r->translation.next;
    const uint32_t nb = (uint32_t)r->translation.spread;
    if (part == SHMB_TRANSFER_TRANSLATE) {
        for (uint64_t i = 0; i < count; i++) {
            const uint32_t b = (uint32_t)*next;
            void *p = NULL;
            *next = b + 1 == nb ? 0 : b + 1;
            const int ret = shmb_upstream_tent_relocate(u->tent, b, 0, size, &p);
            u->landed = taken(b, p), u->last = b, u->off = 0;
            *missed += ret != 0 || u->landed != u->at[0][b];
        }
        return;
    }
    if (part != SHMB_TRANSFER_SUBMIT) {
        *missed += count;
        return;
    }
    const uint64_t n = shmb_transfer_descriptors(r->cfg, part);
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t b0 = *next;
        for (uint64_t j = 0; j < n; j++)
            u->buffer[j] = (uint32_t)((b0 + j) % nb), u->offset[j] = j * size;
        *next = (b0 + n) % nb;
        void *p = NULL;
        int bad = shmb_upstream_tent_submit(u->tent, u->buffer, u->offset, (uint32_t)n, size, &p) != 0;
        /* The last copy TENT ran: a descriptor's target, whichever it took last. */
        uint64_t j = 0;
        while (j < n && (char *)p != u->at[1][u->buffer[j]] + u->offset[j])
            j++;
        bad |= j == n;
        u->last = bad ? u->last : u->buffer[j], u->off = bad ? u->off : u->offset[j];
        u->landed = bad ? p : taken(u->last, p);
        *missed += bad || u->landed != u->at[1][u->last] + u->off;
    }
}

int shmb_transfer_upstream_check(run_t *r, shmb_transfer_part_t part)
{
    const struct shmb_transfer_upstream *u = r->translation.upstream;
    const char *p = u->landed;
    if (p && p == u->at[part == SHMB_TRANSFER_SUBMIT][u->last] + u->off &&
        shmb_upstream_tent_check(u->tent, u->last, u->off, p) == 0)
        return 0;
    snprintf(r->why, r->why_cap, "mooncake_upstream: its %s did not land on buffer %u's byte %llu",
             shmb_transfer_part_name(part), (unsigned)u->last, (unsigned long long)u->off);
    return -EPROTO;
}

int shmb_transfer_upstream_sweep(run_t *r, shmb_transfer_part_t part, uint64_t size)
{
    int ret = 0;
    for (uint64_t b = 0; b < r->translation.spread && ret == 0; b++) {
        r->translation.next = b;
        shmb_transfer_upstream_part(r, part, size, 1);
        ret = shmb_transfer_upstream_check(r, part);
    }
    r->translation.next = 0;
    return ret;
}
