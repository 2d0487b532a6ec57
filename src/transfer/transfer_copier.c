/* The side that copies: its crew, the system's translation and request
 * path over the remote side's registrations, and one operation of each
 * part not handed over (transfer_internal.h). */
#include "transfer_internal.h"

#include "shmbench/error.h"
#include "shmbench/fipc_jemalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNUSED_BUFFER "/peer_buffer_not_used" /* the SHM name of every registration but dst */

typedef shmb_transfer_run_t run_t;

/* The remote address space a registration of size bytes takes. */
static uint64_t slot_bytes(uint64_t size)
{
    return (size + 4095) / 4096 * 4096;
}

/* As the request path calls it (hooks->translate) and as the translate row
 * times it: the request's keys for every path (mooncake reads addr and len,
 * flowipc_jemalloc dst's pool and offset, flowipc_classic the offset). */
int shmb_transfer_translate_dst(void *ctx, uint64_t target_id, uint64_t addr, uint64_t len, void **local)
{
    run_t *r = ctx;
    (void)target_id;
    const shmb_transfer_translation_t *t = &r->translation;
    const uint64_t offset = addr - t->remote_addr;
    const shmb_lookup_request_t request = {.addr = addr, .len = len, .id = (uint32_t)t->index,
                                           .offset = offset, .pool_offset = offset};
    const shmb_path_t *p = &shmb_path_table[t->system];
    void *out = p->translate(p, &t->path, &request);
    if (!out)
        return -EINVAL;
    *local = out;
    return 0;
}

void shmb_transfer_copy_request(void *ctx, void *dst, const void *src, uint64_t len)
{
    run_t *r = ctx;
    shmb_copy_batch(r->crew, r->translation.copy, dst, src, (size_t)len, 1);
}

/* Buffer b's address as the remote side registered it. */
static uint64_t peer_of(const run_t *r, uint64_t b)
{
    return SHMB_PATH_PEER_START + b * slot_bytes(r->dst.size);
}

/* Where attach_dst maps buffer b (dst's buffer at dst; the others at their
 * remote address, a pointer the model keeps and never dereferences). */
static uintptr_t local_of(const run_t *r, uint64_t b)
{
    return b == r->translation.index ? (uintptr_t)r->dst.addr : (uintptr_t)peer_of(r, b);
}

/* Spread: request i (a translation, or a submit's descriptor) to buffer
 * next + i mod num_segments, descriptor j of a submit at j * size in its
 * buffer; each must land where its buffer is mapped. */
static void spread_part(run_t *r, shmb_transfer_part_t part, uint64_t size, uint64_t count)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t nb = t->spread;
    if (part == SHMB_TRANSFER_TRANSLATE) {
        for (uint64_t i = 0; i < count; i++) {
            const uint64_t b = t->next;
            void *d = NULL;
            t->next = b + 1 == nb ? 0 : b + 1;
            t->missed += shmb_transfer_translate_dst(r, SHMB_PATH_MOONCAKE_TARGET_ID, peer_of(r, b), size, &d) != 0 ||
                         (uintptr_t)d != local_of(r, b);
        }
        return;
    }
    const shmb_mooncake_hooks_t hooks = {shmb_transfer_translate_dst, NULL, r};
    const uint64_t n = shmb_transfer_descriptors(r->cfg, part);
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t b0 = t->next;
        for (uint64_t j = 0; j < n; j++)
            t->reqs[j] = (shmb_mooncake_request_t){SHMB_MOONCAKE_WRITE, r->src.addr, SHMB_PATH_MOONCAKE_TARGET_ID,
                                                   peer_of(r, (b0 + j) % nb) + j * size, size};
        t->next = (b0 + n) % nb;
        int ret = shmb_mooncake_engine_submit_n(t->engine, t->reqs, (size_t)n, &hooks, t->outs);
        /* In any order: each target descriptor j's, in buffer b0 + j (found
         * from the target: dst's, or a peer address), together every
         * descriptor once; buffer_addr (the last selection's) a registration's. */
        const uint64_t slot = slot_bytes(r->dst.size), reg = (t->outs[0].buffer_addr - SHMB_PATH_PEER_START) / slot;
        uint64_t sum = 0, bad = ret != 0 || reg >= nb || t->outs[0].buffer_addr != peer_of(r, reg);
        for (uint64_t j = 0; j < n && !bad; j++) {
            const shmb_mooncake_submitted_t *o = &t->outs[j];
            const uintptr_t at = (uintptr_t)o->target, d = (uintptr_t)r->dst.addr;
            const uint64_t b = at >= d && at < d + r->dst.size ? t->index : (at - SHMB_PATH_PEER_START) / slot;
            const uint64_t off = (uint64_t)(at - (b < nb ? local_of(r, b) : 0));
            bad = b >= nb || at < local_of(r, b) || off % size || off / size >= n || (b0 + off / size) % nb != b ||
                  o->buffer_addr != t->outs[0].buffer_addr || o->transferred_bytes != size;
            sum += off / size;
        }
        t->missed += bad || sum != n * (n - 1) / 2;
    }
}

int shmb_transfer_spread_check(run_t *r, shmb_transfer_part_t part, uint64_t size)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (t->system == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
        return shmb_transfer_upstream_sweep(r, part, size);
    for (uint64_t b = 0; b < t->spread; b++) {
        t->next = b;
        spread_part(r, part, size, 1);
    }
    t->next = 0;
    return 0;
}

void shmb_transfer_copier_part(run_t *r, shmb_transfer_part_t part, shmb_copy_fn fn, uint64_t size, uint64_t count)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (part == SHMB_TRANSFER_COPY || part == SHMB_TRANSFER_COPY_OUT) {
        shmb_copy_batch(r->crew, fn, r->dst.addr, r->src.addr, (size_t)size, count);
        return;
    }
    if (t->system == SHMB_SYSTEM_MOONCAKE_UPSTREAM) {
        shmb_transfer_upstream_part(r, part, size, count);
        return;
    }
    if (t->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM) {
        shmb_transfer_fipcup_part(r, part, size, count);
        return;
    }
    if (part == SHMB_TRANSFER_ZERO_COPY) /* mooncake's side of it: the whole request */
        part = SHMB_TRANSFER_REQUEST;
    if (t->spread && (part == SHMB_TRANSFER_TRANSLATE || part == SHMB_TRANSFER_SUBMIT)) {
        spread_part(r, part, size, count);
        return;
    }
    if (part == SHMB_TRANSFER_TRANSLATE) {
        for (uint64_t i = 0; i < count; i++) {
            void *d = NULL;
            t->missed +=
                shmb_transfer_translate_dst(r, SHMB_PATH_MOONCAKE_TARGET_ID, t->remote_addr + t->offset, size, &d) != 0 ||
                d != r->dst.addr;
        }
        return;
    }
    /* submit: the request path calling the translation, no copy (upstream's submit beside it copies nothing). */
    const int whole = part == SHMB_TRANSFER_REQUEST, translated = whole || part == SHMB_TRANSFER_SUBMIT;
    const shmb_mooncake_hooks_t hooks = {shmb_transfer_translate_dst, whole ? shmb_transfer_copy_request : NULL, r};
    const uint64_t n = shmb_transfer_descriptors(r->cfg, part);
    /* Descriptor j writes src's first size bytes at j * size in dst: their
     * sources are not contiguous, so TENT's merge keeps them n tasks. */
    for (uint64_t j = 0; j < n; j++)
        t->reqs[j] = (shmb_mooncake_request_t){SHMB_MOONCAKE_WRITE, r->src.addr, SHMB_PATH_MOONCAKE_TARGET_ID,
                                               t->remote_addr + t->offset + j * size, size};
    const uintptr_t want = translated ? (uintptr_t)r->dst.addr : (uintptr_t)(t->remote_addr + t->offset);
    t->copy = fn;
    for (uint64_t i = 0; i < count; i++) {
        int ret = shmb_mooncake_engine_submit_n(t->engine, t->reqs, (size_t)n, translated ? &hooks : NULL, t->outs);
        /* The tasks may come back in another order: each target must be a
         * descriptor's, and together they cover every descriptor once. */
        uint64_t sum = 0, bad = ret != 0;
        for (uint64_t j = 0; j < n && !bad; j++) {
            const shmb_mooncake_submitted_t *o = &t->outs[j];
            const uint64_t off = (uint64_t)((uintptr_t)o->target - want);
            bad = (uintptr_t)o->target < want || off % size || off / size >= n || o->buffer_addr != t->buffer_addr ||
                  (translated && o->transferred_bytes != size);
            sum += off / size;
        }
        t->missed += bad || sum != n * (n - 1) / 2;
    }
}

/* Mooncake's attach of a remote buffer: dst is mapped where it is; the
 * others, never written, are "mapped" at their remote address (the model
 * keeps the pointer and never dereferences it). */
static int attach_dst(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    run_t *r = ctx;
    const int is_dst = index == r->translation.index;
    if (strcmp(shm_path, is_dst ? r->translation.dst_path : UNUSED_BUFFER) != 0 || length != r->dst.size)
        return shmb_error_record("shm_open", ENOENT, shm_path);
    *local = is_dst ? r->dst.addr : (void *)(uintptr_t)(SHMB_PATH_PEER_START + index * slot_bytes(length));
    if (index + 1 == shmb_transfer_bench_wrong_landing) /* planted: mapped 64 bytes off */
        *local = (char *)*local + 64;
    return 0;
}

/* Mooncake as a receiver that has served requests into every buffer of the
 * peer, each attached by a first request, so that TENT's walk of the mapped
 * buffers covers num_segments of them as the lookup benchmark's does. */
static void use_every_buffer(run_t *r, const shmb_lookup_segment_t *segments, size_t n)
{
    const shmb_path_t *p = &shmb_path_table[SHMB_SYSTEM_MOONCAKE];
    for (size_t i = 0; i < n; i++) {
        const shmb_lookup_request_t request = {.addr = segments[i].peer_base, .len = 1};
        r->translation.missed += p->translate(p, &r->translation.path, &request) == NULL;
    }
}

/* The remote side's registrations: num_segments of dst's size, each in a
 * page-aligned slot, dst the middle one; the others are never written, so
 * they need no SHM. */
static int registrations(run_t *r, shmb_lookup_segment_t **segments, const char ***names,
                         shmb_mooncake_buffer_t **buffers)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t n = r->cfg->num_segments, size = r->dst.size, slot = slot_bytes(size);
    t->index = n / 2;
    t->remote_addr = SHMB_PATH_PEER_START + t->index * slot;
    /* A memfd has no name: Mooncake's memfd segments (kvcache-ai/Mooncake
     * #3952) are opened by peers through /proc/<pid>/fd/<n>. The request
     * path only needs a path to treat dst as SHM; attach_dst checks it. */
    if (r->dst.name[0])
        snprintf(t->dst_path, sizeof(t->dst_path), "%s", r->dst.name);
    else
        snprintf(t->dst_path, sizeof(t->dst_path), "memfd:%s", shmb_backing_name(r->cfg->backing.kind));
    *segments = calloc((size_t)n, sizeof(**segments));
    *names = calloc((size_t)n, sizeof(**names));
    *buffers = calloc((size_t)n, sizeof(**buffers));
    if (!*segments || !*names || !*buffers)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t peer = SHMB_PATH_PEER_START + i * slot;
        (*names)[i] = i == t->index ? t->dst_path : UNUSED_BUFFER;
        (*segments)[i] = (shmb_lookup_segment_t){peer, size, i == t->index ? r->dst.addr : (void *)(uintptr_t)peer};
        (*buffers)[i] = (shmb_mooncake_buffer_t){peer, size, (*names)[i]};
    }
    return 0;
}

/* The pools SHM-jemalloc's arena makes for n blocks of `size` bytes (its
 * extent hooks create them; the blocks are never touched), into *pools. */
static int jemalloc_pools_for(run_t *r, uint64_t n, uint64_t size, size_t *pools)
{
    shmb_fipc_jemalloc_t *j = NULL;
    int ret = shmb_fipc_jemalloc_create_filled(r->cfg->shm_prefix, n, (size_t)size, &j);
    *pools = ret == 0 ? shmb_fipc_jemalloc_pools(j, NULL) : 0;
    const int r2 = shmb_fipc_jemalloc_destroy(j, 1, NULL);
    return ret < 0 ? ret : r2;
}

/* What the request path's engine registers, per design (docs/models.md):
 * mooncake its num_segments buffers; flowipc_classic its one pool;
 * flowipc_jemalloc the pools its arena makes for those blocks, each a
 * contiguous run of the slots. Sets *count and t->buffer_addr (the
 * registration holding dst); *pools (malloc'ed) holds a flavour's. */
static int engine_buffers(run_t *r, const shmb_mooncake_buffer_t *buffers, shmb_mooncake_buffer_t **pools,
                          const shmb_mooncake_buffer_t **registered, size_t *count)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t n = r->cfg->num_segments, slot = slot_bytes(r->dst.size);
    *pools = NULL;
    if (t->system == SHMB_SYSTEM_MOONCAKE) {
        t->buffer_addr = t->remote_addr;
        *count = (size_t)n;
        *registered = buffers;
        return 0;
    }
    size_t np = 1;
    int ret = t->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? jemalloc_pools_for(r, n, r->dst.size, &np) : 0;
    if (ret < 0)
        return ret;
    np = np == 0 ? 1 : np > n ? (size_t)n : np;
    *pools = calloc(np, sizeof(**pools));
    if (!*pools)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t i = 0; i < np; i++) {
        const uint64_t first = n * i / np, end = n * (i + 1) / np;
        (*pools)[i] = (shmb_mooncake_buffer_t){SHMB_PATH_PEER_START + first * slot, (end - first) * slot,
                                               t->dst_path};
        if (t->index >= first && t->index < end)
            t->buffer_addr = (*pools)[i].addr;
    }
    *count = np;
    *registered = *pools;
    return 0;
}

int shmb_transfer_bench_translation_start(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (t->system == SHMB_SYSTEM_MOONCAKE_UPSTREAM)
        return shmb_transfer_upstream_start(r);
    if (t->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM)
        return shmb_transfer_fipcup_start(r);
    shmb_lookup_segment_t *segments;
    const char **names;
    shmb_mooncake_buffer_t *buffers, *pools = NULL;
    int ret = registrations(r, &segments, &names, &buffers);
    const shmb_path_view_t view = {.segments = segments, .n = (size_t)r->cfg->num_segments, .shm_names = names,
                                   .mooncake_ops = {attach_dst, NULL, r}, .pool_base = r->dst.addr,
                                   .pool_bytes = r->dst.size};
    const shmb_path_t *p = &shmb_path_table[t->system];
    if (ret == 0 && (ret = p->setup(p, &t->path, &view)) == 0)
        t->path_set_up = 1;
    size_t count = 0;
    const shmb_mooncake_buffer_t *registered = NULL;
    const uint64_t per = shmb_transfer_descriptors(r->cfg, SHMB_TRANSFER_REQUEST);
    t->reqs = calloc((size_t)per, sizeof(*t->reqs));
    t->outs = calloc((size_t)per, sizeof(*t->outs));
    if (ret == 0 && (!t->reqs || !t->outs))
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0)
        ret = engine_buffers(r, buffers, &pools, &registered, &count);
    if (ret == 0)
        ret = shmb_mooncake_engine_create(registered, count, SHMB_PATH_MOONCAKE_TARGET_ID,
                                          SHMB_PATH_MOONCAKE_OTHER_SEGMENTS, r->src.addr, r->src.size,
                                          &t->engine);
    if (ret == -ENOMEM)
        ret = shmb_error_record("malloc", ENOMEM, NULL);
    if (ret == 0 && t->system == SHMB_SYSTEM_MOONCAKE)
        use_every_buffer(r, segments, view.n);
    if (ret == 0)
        shmb_transfer_copier_part(r, SHMB_TRANSFER_TRANSLATE, NULL, 1, 1);
    free(segments);
    free(names);
    free(buffers);
    free(pools);
    return ret;
}

void shmb_transfer_bench_translation_stop(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    if (t->path_set_up)
        shmb_path_table[t->system].teardown(&shmb_path_table[t->system], &t->path);
    shmb_mooncake_engine_destroy(t->engine);
    free(t->reqs);
    free(t->outs);
    t->reqs = NULL;
    t->outs = NULL;
    t->path_set_up = 0;
    t->engine = NULL;
    shmb_transfer_upstream_stop(r);
    shmb_transfer_fipcup_stop(r);
}

int shmb_transfer_view_start(run_t *v, const run_t *owner)
{
    v->src = owner->src;
    v->dst = owner->dst;
    v->crew = owner->crew;
    return shmb_transfer_bench_translation_start(v);
}

int shmb_transfer_submitter_start(run_t *sub, const run_t *v, uint64_t offset)
{
    *sub = *v;
    memset(&sub->samples, 0, sizeof(sub->samples));
    shmb_transfer_translation_t *t = &sub->translation;
    sub->dst.addr = (char *)v->dst.addr + offset;
    sub->dst.size = v->dst.size - offset;
    t->offset = v->translation.offset + offset;
    t->missed = 0;
    t->path_set_up = 0;
    const size_t per = (size_t)shmb_transfer_descriptors(v->cfg, SHMB_TRANSFER_REQUEST);
    t->reqs = calloc(per, sizeof(*t->reqs));
    t->outs = calloc(per, sizeof(*t->outs));
    return t->reqs && t->outs ? 0 : shmb_error_record("malloc", ENOMEM, NULL);
}

void shmb_transfer_submitter_stop(run_t *sub)
{
    free(sub->translation.reqs);
    free(sub->translation.outs);
    sub->translation.reqs = NULL;
    sub->translation.outs = NULL;
    shmb_stats_release(&sub->samples);
}

int shmb_transfer_bench_copier_start(run_t *r)
{
    int ret = 0;
    if (r->cfg->threads > 1 && (ret = shmb_copy_crew_start(&r->crew, r->cfg->threads, r->cfg->cpu)) < 0)
        return ret; /* recorded by the crew: pthread_create or sched_setaffinity */
    return r->translation.system >= 0 ? shmb_transfer_bench_translation_start(r) : 0;
}

void shmb_transfer_bench_copier_stop(run_t *r)
{
    shmb_copy_crew_stop(r->crew);
    shmb_stats_release(&r->samples);
    shmb_transfer_bench_translation_stop(r);
    r->crew = NULL;
}
