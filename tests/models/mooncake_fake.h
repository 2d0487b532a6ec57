/* The Mooncake tests' fake ops (attach mallocs, detach frees, so valgrind
 * sees a missing detach as a leak) and their buffers without overlaps. */
#ifndef SHMB_TEST_MOONCAKE_FAKE_H
#define SHMB_TEST_MOONCAKE_FAKE_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#include "shmbench/mooncake.h"

enum { FAKE_MAX = 2048 };

typedef struct fake_map {
    size_t index;
    char path[64];
    uint64_t length;
    unsigned char *local; /* what attach answered */
    unsigned char *base;  /* what it allocated */
    int detached;
} fake_map_t;

typedef struct fake {
    int attach_calls;
    int detach_calls;
    int fail_next; /* when < 0, the next attach fails with it */
    long lie_index; /* the planted fault: attach of this index answers 64 bytes off (-1: none) */
    size_t n;
    fake_map_t maps[FAKE_MAX];
    unsigned char mapped[FAKE_MAX]; /* by registration index */
} fake_t;

static inline int fake_attach(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    fake_t *f = ctx;
    f->attach_calls++;
    if (f->fail_next < 0) {
        int err = f->fail_next;
        f->fail_next = 0;
        return err;
    }
    if (f->n == FAKE_MAX || strlen(shm_path) >= sizeof(f->maps[0].path))
        return -ENOSPC;
    unsigned char *p = malloc(length);
    if (!p)
        return -ENOMEM;
    fake_map_t *m = &f->maps[f->n++];
    m->index = index;
    strcpy(m->path, shm_path);
    m->length = length;
    m->base = p;
    m->local = (long)index == f->lie_index ? p + 64 : p;
    m->detached = 0;
    if (index < FAKE_MAX)
        f->mapped[index] = 1;
    *local = m->local;
    return 0;
}

static inline void fake_detach(void *ctx, void *local, uint64_t length)
{
    fake_t *f = ctx;
    f->detach_calls++;
    for (size_t i = 0; i < f->n; i++) {
        if (f->maps[i].local == local) {
            assert_int_equal(f->maps[i].length, length);
            assert_false(f->maps[i].detached);
            f->maps[i].detached = 1;
            free(f->maps[i].base);
            return;
        }
    }
    fail_msg("detach of %p, which was never attached", local);
}

/* Where the fake mapped buffer `index` (NULL if not), asserting attach was given the allocation's path. */
static inline unsigned char *fake_local(const fake_t *f, size_t index, const char *path)
{
    for (size_t i = 0; i < f->n; i++) {
        if (f->maps[i].index == index) {
            assert_string_equal(f->maps[i].path, path);
            return f->maps[i].base;
        }
    }
    return NULL;
}

static fake_t fake;

static inline shmb_mooncake_ops_t fake_ops(void)
{
    memset(&fake, 0, sizeof(fake));
    fake.lie_index = -1;
    return (shmb_mooncake_ops_t){fake_attach, fake_detach, &fake};
}

/* Buffers that do not overlap: C, A, B (A and B touch), D without SHM, G. */
static const shmb_mooncake_buffer_t plain[] = {
    {0x20000, 0x1000, "/mooncake_bench_4242_deadbeef_0"},
    {0x10000, 0x1000, "/mooncake_bench_4242_deadbeef_1"},
    {0x11000, 0x2000, "/mooncake_bench_4242_deadbeef_2"},
    {0x40000, 0x800, ""},
    {0x50000, 0x3000, "/mooncake_bench_4242_deadbeef_4"},
};
enum { NPLAIN = sizeof(plain) / sizeof(plain[0]) };

#endif
