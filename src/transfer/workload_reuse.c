/* Prefix reuse in traces (docs/workload.md, "Prefix reuse"): which hash ids
 * a trace has seen on an earlier line, what a request then moves, and what a
 * stream amounts to. */
#include "workload_internal.h"

#include <errno.h>
#include <stdlib.h>

static size_t slot(const shmb_workload_seen_t *s, uint64_t id)
{
    size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (s->cap - 1);
    while (s->lines[i] && s->ids[i] != id)
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int grow(shmb_workload_seen_t *s)
{
    shmb_workload_seen_t g = {calloc(s->cap ? 2 * s->cap : 1024, sizeof(uint64_t)),
                              calloc(s->cap ? 2 * s->cap : 1024, sizeof(uint64_t)), s->cap ? 2 * s->cap : 1024,
                              s->n};
    if (!g.ids || !g.lines) {
        free(g.ids);
        free(g.lines);
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->lines[i]) {
            const size_t j = slot(&g, s->ids[i]);
            g.ids[j] = s->ids[i];
            g.lines[j] = s->lines[i];
        }
    shmb_workload_seen_free(s);
    *s = g;
    return 0;
}

int shmb_workload_seen_add(shmb_workload_seen_t *s, uint64_t id, uint64_t line)
{
    if (2 * (s->n + 1) > s->cap && grow(s) < 0)
        return -ENOMEM;
    const size_t i = slot(s, id);
    if (s->lines[i])
        return s->lines[i] < line;
    s->ids[i] = id;
    s->lines[i] = line;
    s->n++;
    return 0;
}

void shmb_workload_seen_free(shmb_workload_seen_t *s)
{
    free(s->ids);
    free(s->lines);
    *s = (shmb_workload_seen_t){0};
}

uint64_t shmb_workload_tokens(const shmb_workload_shape_t *s, const shmb_workload_request_t *r)
{
    if (!s->reuse)
        return r->input_length;
    const uint64_t hit = r->hits >= (r->input_length + SHMB_WORKLOAD_HASH_BLOCK - 1) / SHMB_WORKLOAD_HASH_BLOCK
                             ? r->input_length
                             : r->hits * SHMB_WORKLOAD_HASH_BLOCK;
    return hit >= r->input_length ? 0 : r->input_length - hit;
}

/* i such that 2^(i-1) < bytes <= 2^i (0 for 1 byte). */
static unsigned size_class(uint64_t bytes)
{
    unsigned i = 0;
    while (i < 64 && (1ull << i) < bytes)
        i++;
    return i;
}

int shmb_workload_totals(const shmb_workload_shape_t *s, const shmb_workload_stream_t *stream,
                         shmb_workload_totals_t *out)
{
    if (stream->n == 0)
        return -EINVAL;
    shmb_workload_totals_t t = {.requests = stream->n, .descriptors_min = UINT64_MAX};
    double descriptors = 0, bytes = 0;
    for (size_t i = 0; i < stream->n; i++) {
        shmb_workload_fanout_t f;
        const uint64_t tokens = shmb_workload_tokens(s, &stream->v[i]);
        t.hash_ids += stream->v[i].hash_ids;
        t.hits += stream->v[i].hits;
        t.wholly_hit += tokens == 0;
        if (tokens == 0)
            continue;
        int ret = shmb_workload_fanout(s, tokens, &f);
        if (ret < 0)
            return ret;
        const uint64_t partial = f.last_bytes != f.descriptor_bytes ? f.streams : 0;
        t.sizes[size_class(f.descriptor_bytes)] += f.descriptors - partial;
        t.sizes[size_class(f.last_bytes)] += partial;
        t.descriptors_min = f.descriptors < t.descriptors_min ? f.descriptors : t.descriptors_min;
        t.descriptors_max = f.descriptors > t.descriptors_max ? f.descriptors : t.descriptors_max;
        t.clipped += (uint64_t)f.clipped;
        t.max_bytes = f.bytes > t.max_bytes ? f.bytes : t.max_bytes;
        descriptors += (double)f.descriptors;
        bytes += (double)f.bytes;
    }
    if (t.wholly_hit == stream->n)
        return -ENODATA;
    t.descriptors_mean = descriptors / (double)(stream->n - t.wholly_hit);
    t.bytes_mean = bytes / (double)(stream->n - t.wholly_hit);
    t.span_ms = stream->v[stream->n - 1].timestamp_ms - stream->v[0].timestamp_ms;
    *out = t;
    return 0;
}

uint64_t shmb_workload_shm_bytes(const shmb_workload_totals_t *t)
{
    return 2 * ((t->max_bytes + 4095) / 4096 * 4096);
}
