/* What a request moves with prefix reuse, and what a stream amounts to
 * (over the fan-out of workload.c). */
#include "workload_internal.h"

#include <errno.h>

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
