/* Prefix reuse in traces (docs/workload.md, "Prefix reuse"): which hash ids
 * a trace has seen on an earlier line. */
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
