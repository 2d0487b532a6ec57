/* flowipc_jemalloc_upstream in the paired run: Flow-IPC SHM-jemalloc's own
 * borrower pool repository (shmbench/upstream_flowipc.h) holding what the
 * model's repository holds (num_segments pools of dst's size, dst the middle
 * one, the others records never dereferenced), its to_address timed as the
 * model's translate beside it, every landing checked (docs/upstream.md). */
#include "transfer_internal.h"

#include "shmbench/error.h"
#include "shmbench/upstream_flowipc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

typedef shmb_transfer_run_t run_t;

struct shmb_transfer_fipcup {
    shmb_upstream_jemalloc_repo_t *repo;
    void *landed; /* the last to_address */
};

/* Where to_address lands for dst, or 64 bytes off where the test hook plants it. */
static char *taken(const run_t *r, void *p)
{
    return (char *)p + (r->translation.index + 1 == shmb_transfer_bench_wrong_landing ? 64 : 0);
}

int shmb_transfer_fipcup_start(run_t *r)
{
    shmb_transfer_translation_t *t = &r->translation;
    const uint64_t n = r->cfg->num_segments, slot = (r->dst.size + 4095) / 4096 * 4096;
    struct shmb_transfer_fipcup *u = calloc(1, sizeof(*u));
    t->fipcup = u;
    if (!u)
        return shmb_error_record("malloc", ENOMEM, NULL);
    t->index = n / 2;
    t->remote_addr = SHMB_PATH_PEER_START + t->index * slot;
    int ret = shmb_upstream_jemalloc_repo_create(&u->repo);
    /* as the model's: dst's pool at its mapping, the others at their remote address */
    for (uint64_t i = 0; i < n && ret == 0; i++) {
        void *base = i == t->index ? r->dst.addr : (void *)(uintptr_t)(SHMB_PATH_PEER_START + i * slot);
        ret = shmb_upstream_jemalloc_repo_insert(u->repo, (uint32_t)i, i == t->index ? r->dst.name : "/peer_pool",
                                                 base, (size_t)r->dst.size, -1);
    }
    if (ret < 0)
        return shmb_error_record("upstream Borrower_shm_pool_repository", -ret, NULL);
    shmb_transfer_fipcup_part(r, SHMB_TRANSFER_TRANSLATE, 1, 1);
    return shmb_transfer_fipcup_check(r, SHMB_TRANSFER_TRANSLATE);
}

void shmb_transfer_fipcup_stop(run_t *r)
{
    struct shmb_transfer_fipcup *u = r->translation.fipcup;
    if (!u)
        return;
    shmb_upstream_jemalloc_repo_destroy(u->repo);
    free(u);
    r->translation.fipcup = NULL;
}

void shmb_transfer_fipcup_part(run_t *r, shmb_transfer_part_t part, uint64_t size, uint64_t count)
{
    (void)size;
    shmb_transfer_translation_t *t = &r->translation;
    struct shmb_transfer_fipcup *u = t->fipcup;
    if (part != SHMB_TRANSFER_TRANSLATE) {
        t->missed += count;
        return;
    }
    const uint32_t id = (uint32_t)t->index, offset = (uint32_t)t->offset;
    char *const want = r->dst.addr;
    for (uint64_t i = 0; i < count; i++) {
        u->landed = taken(r, shmb_upstream_jemalloc_to_address(u->repo, id, offset));
        t->missed += (char *)u->landed != want;
    }
}

int shmb_transfer_fipcup_check(run_t *r, shmb_transfer_part_t part)
{
    const shmb_transfer_translation_t *t = &r->translation;
    const struct shmb_transfer_fipcup *u = t->fipcup;
    uint32_t id = 0, offset = 0;
    if (part == SHMB_TRANSFER_TRANSLATE && u->landed == r->dst.addr &&
        shmb_upstream_jemalloc_from_address(u->repo, u->landed, &id, &offset) == 0 && id == t->index &&
        offset == t->offset)
        return 0;
    snprintf(r->why, r->why_cap, "flowipc_jemalloc_upstream: its %s did not land on dst (pool %llu, offset %llu)",
             shmb_transfer_part_name(part), (unsigned long long)t->index, (unsigned long long)t->offset);
    return -EPROTO;
}
