/* sglang's request in one submit (SGLang's batch_transfer_sync) through
 * the request path's shmb_mooncake_engine_submit_n, each descriptor
 * translated and copied by the system's hooks (workload_internal.h). */
#include "workload_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef shmb_workload_replay_t replay_t;

int shmb_workload_batch_room(replay_t *w, const shmb_workload_fanout_t *f)
{
    const uint64_t n = f->descriptors < w->per_submit ? f->descriptors : w->per_submit;
    if (w->per_submit <= 1 || n <= w->cap)
        return 0;
    shmb_mooncake_request_t *reqs = realloc(w->reqs, (size_t)n * sizeof(*reqs));
    if (reqs)
        w->reqs = reqs;
    shmb_mooncake_submitted_t *outs = reqs ? realloc(w->outs, (size_t)n * sizeof(*outs)) : NULL;
    if (!outs)
        return shmb_error_record("malloc", ENOMEM, NULL);
    w->outs = outs;
    w->cap = n;
    return 0;
}

/* Batched, descriptor k's source: odd ones a cache line back, so that no
 * two descriptors side by side in dst are side by side in src. SGLang's
 * runs are maximal (pages contiguous on both sides already merged), so
 * TENT's merge of contiguous requests folds none of them; it must fold
 * none here either. */
#define SOURCE_SHIFT 64
static uint64_t source_at(uint64_t k, uint64_t at)
{
    return (k & 1) && at >= SOURCE_SHIFT ? at - SOURCE_SHIFT : at;
}

/* One submit of w->reqs[0..n): each task's target where its descriptor
 * belongs (translated with hooks, else the peer's address; the transport
 * takes them in order when none is folded; a hand-off's is its object,
 * checked by the hand-off itself); one that is not counts in missed, all n
 * if the submit failed. */
static void submit_batch(replay_t *w, uint64_t n, const shmb_mooncake_hooks_t *hooks)
{
    shmb_transfer_translation_t *t = &w->r.translation;
    unsigned char *dst = w->r.dst.addr;
    if (shmb_mooncake_engine_submit_n(t->engine, w->reqs, (size_t)n, hooks, w->outs) != 0) {
        t->missed += n;
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        const shmb_mooncake_request_t *q = &w->reqs[i];
        const shmb_mooncake_submitted_t *o = &w->outs[i];
        const void *want = hooks ? (void *)(dst + (q->target_offset - t->remote_addr))
                                 : (void *)(uintptr_t)q->target_offset;
        t->missed += (o->target != want && !(hooks && t->handoff)) || o->buffer_addr != t->buffer_addr ||
                     (hooks && o->transferred_bytes != q->length);
    }
}

void shmb_workload_batch_pass(replay_t *w, const shmb_workload_fanout_t *f, const shmb_mooncake_hooks_t *hooks)
{
    const uint64_t remote = w->r.translation.remote_addr;
    unsigned char *src = w->r.src.addr;
    uint64_t n = 0;
    for (uint64_t s = 0, at = 0, k = 0; s < f->streams; s++)
        for (uint64_t j = 0; j < f->blocks; j++, k++) {
            const uint64_t d = j + 1 == f->blocks ? f->last_bytes : f->descriptor_bytes;
            w->reqs[n++] = (shmb_mooncake_request_t){SHMB_MOONCAKE_WRITE, src + source_at(k, at),
                                                     SHMB_PATH_MOONCAKE_TARGET_ID, remote + at, d};
            at += d;
            if (n == w->per_submit) {
                submit_batch(w, n, hooks);
                n = 0;
            }
        }
    if (n)
        submit_batch(w, n, hooks);
}

/* src holds the position pattern: a byte from another place differs. */
int shmb_workload_batch_differs(const replay_t *w, const shmb_workload_fanout_t *f, size_t *bad)
{
    const unsigned char *src = w->r.src.addr, *dst = w->r.dst.addr;
    for (uint64_t k = 0, at = 0; k < f->descriptors; k++) {
        const uint64_t d = (k + 1) % f->blocks == 0 ? f->last_bytes : f->descriptor_bytes;
        const unsigned char *from = src + source_at(k, at);
        if (memcmp(dst + at, from, (size_t)d) != 0)
            for (uint64_t i = 0; i < d; i++)
                if (dst[at + i] != from[i]) {
                    *bad = (size_t)(at + i);
                    return 1;
                }
        at += d;
    }
    return 0;
}

void shmb_workload_batch_free(replay_t *w)
{
    free(w->reqs);
    free(w->outs);
    w->reqs = NULL;
    w->outs = NULL;
    w->cap = 0;
}
