/* copy_crew: one copy split between a crew's threads, the caller thread 0
 * (shmbench/copy.h), and a batch of copies with or without it. */
#include "shmbench/copy.h"

#include "crew_internal.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/segment.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

struct shmb_copy_crew {
    shmb_crew_t *crew;
    int threads;
    shmb_copy_fn fn;
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    int first_write;                 /* 1: each chunk guarded (shmb_segment_first_write_copy) */
    atomic_int no_space;             /* a guarded chunk ran out of /dev/shm */
};

static void chunk(const struct shmb_copy_crew *t, int i, size_t *off, size_t *len)
{
    size_t per = ((t->n + (size_t)t->threads - 1) / (size_t)t->threads + 63) & ~(size_t)63;
    size_t start = per * (size_t)i;
    *off = start < t->n ? start : t->n;
    size_t end = start + per < t->n ? start + per : t->n;
    *len = end > *off ? end - *off : 0;
}

static void copy_chunk(shmb_crew_t *crew, int i, void *arg)
{
    struct shmb_copy_crew *t = arg;
    size_t off, len;
    (void)crew;
    chunk(t, i, &off, &len);
    if (len == 0)
        return;
    if (!t->first_write)
        t->fn(t->dst + off, t->src + off, len);
    else if (shmb_segment_first_write_copy(t->dst + off, t->src + off, len, t->fn) < 0)
        atomic_store_explicit(&t->no_space, 1, memory_order_relaxed);
}

int shmb_copy_crew_start(shmb_copy_crew_t **out, int threads, int cpu)
{
    if (threads < 1)
        return -EINVAL;
    struct shmb_copy_crew *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->threads = threads;
    /* with cpu: pinned even with fewer allowed CPUs than threads (the plan wraps) */
    const shmb_crew_config_t cfg = {.threads = threads, .cpu = cpu, .caller_joins = 1,
                                    .pin = cpu >= 0 ? SHMB_CREW_PIN_ALWAYS : SHMB_CREW_PIN_NONE};
    int ret = shmb_crew_start(&t->crew, &cfg);
    if (ret < 0) {
        free(t);
        return ret;
    }
    *out = t;
    return 0;
}

int shmb_copy_crew_cpu(const shmb_copy_crew_t *t, int i)
{
    return shmb_crew_cpu(t->crew, i);
}

static void run(shmb_copy_crew_t *t, shmb_copy_fn fn, void *dst, const void *src, size_t n, int first_write)
{
    t->fn = fn;
    t->dst = dst;
    t->src = src;
    t->n = n;
    t->first_write = first_write;
    shmb_crew_run(t->crew, copy_chunk, t); /* no member fails: a full /dev/shm is no_space */
}

void shmb_copy_crew_run(shmb_copy_crew_t *t, shmb_copy_fn fn, void *dst, const void *src, size_t n)
{
    run(t, fn, dst, src, n, 0);
}

int shmb_copy_first_write(shmb_copy_crew_t *t, shmb_copy_fn fn, void *dst, const void *src, size_t n)
{
    int ret = 0;
    if (!t) {
        ret = shmb_segment_first_write_copy(dst, src, n, fn);
    } else {
        atomic_store_explicit(&t->no_space, 0, memory_order_relaxed);
        run(t, fn, dst, src, n, 1);
        /* recorded on this thread too: a worker's record is its own */
        if (atomic_load_explicit(&t->no_space, memory_order_relaxed))
            ret = shmb_error_record("first write", ENOSPC, "/dev/shm");
    }
    shmb_escape(dst);
    return ret;
}

void shmb_copy_crew_stop(shmb_copy_crew_t *t)
{
    if (!t)
        return;
    shmb_crew_stop(t->crew);
    free(t);
}

void shmb_copy_batch(shmb_copy_crew_t *crew, shmb_copy_fn fn, void *dst, const void *src, size_t n,
                     uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        if (crew)
            shmb_copy_crew_run(crew, fn, dst, src, n);
        else
            fn(dst, src, n);
        shmb_escape(dst);
    }
}
