/* The owner's SHM objects of one group and their publication to the peer
 * (lookup_internal.h). Calls nothing else in src/lookup. */
#include "lookup_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int no_memory(void)
{
    return shmb_error_record("malloc", ENOMEM, NULL);
}

static void copy_word(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

int shmb_lookup_own_write(void *p, uint64_t tag)
{
    return shmb_segment_first_write_copy(p, &tag, sizeof(tag), copy_word);
}

int shmb_lookup_own_tag_first(const shmb_lookup_config_t *cfg, shmb_lookup_owned_t *o, uint64_t first_id)
{
    const uint64_t n = cfg->num_segments;
    if (!o->tags && !(o->tags = malloc((size_t)n * sizeof(*o->tags))))
        return no_memory();
    int ret = 0;
    for (uint64_t id = 0; id < n && ret == 0; id++) {
        o->tags[id] = lookup_tag(cfg->segment_size_mb << 20, first_id + id, 0);
        ret = shmb_lookup_own_write(o->at[id], o->tags[id]);
    }
    return ret;
}

/* Mooncake's buffers, in creation order: named, at their owner address. */
static int own_buffers(const shmb_lookup_config_t *cfg, shmb_lookup_owned_t *o)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    o->shm = calloc((size_t)n, sizeof(*o->shm));
    o->objects = calloc((size_t)n, sizeof(*o->objects));
    int ret = o->shm && o->objects ? 0 : no_memory();
    for (; ret == 0 && o->created < n; o->created++) {
        shmb_segment_t *seg = &o->shm[o->created];
        if ((ret = shmb_segment_create(seg, cfg->shm_prefix, (size_t)size, NULL, NULL)) < 0)
            break;
        if ((ret = shmb_segment_map(seg, NULL)) == 0)
            ret = shmb_segment_close(seg, NULL);
        o->at[o->created] = seg->addr;
        snprintf(o->objects[o->created].name, sizeof(o->objects[0].name), "%s", seg->name);
        o->objects[o->created].key = (uint64_t)(uintptr_t)seg->addr;
        o->objects[o->created].bytes = size;
    }
    o->nobjects = n;
    return ret;
}

/* Flow-IPC SHM-classic: one pool, a block of a segment's size per segment
 * (room for the segment manager and each block's header and alignment). */
static int own_classic(const shmb_lookup_config_t *cfg, shmb_lookup_owned_t *o)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    if (!(o->objects = calloc(1, sizeof(*o->objects))))
        return no_memory();
    int ret = shmb_fipc_classic_create(cfg->shm_prefix, (size_t)(n * (size + 4096) + (1u << 20)), &o->pool);
    unsigned char *base = ret == 0 ? shmb_fipc_classic_base(o->pool) : NULL;
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        if ((ret = shmb_fipc_classic_alloc(o->pool, (size_t)size, &block)) < 0)
            break;
        o->at[id] = block;
        o->blocks[id].key = (uint64_t)((unsigned char *)block - base);
    }
    if (ret == 0) {
        snprintf(o->objects[0].name, sizeof(o->objects[0].name), "%s", shmb_fipc_classic_name(o->pool));
        o->objects[0].bytes = shmb_fipc_classic_size(o->pool);
        o->nobjects = 1;
    }
    return ret;
}

/* Flow-IPC SHM-jemalloc: the arena's block per segment (pool id, offset);
 * the objects are the pools its extent hooks made. */
static int own_jemalloc(const shmb_lookup_config_t *cfg, shmb_lookup_owned_t *o)
{
    const uint64_t n = cfg->num_segments, size = cfg->segment_size_mb << 20;
    int ret = shmb_fipc_jemalloc_create(cfg->shm_prefix, 0, &o->j);
    for (uint64_t id = 0; ret == 0 && id < n; id++) {
        void *block;
        uint32_t pool_id;
        if ((ret = shmb_fipc_jemalloc_alloc(o->j, (size_t)size, &block)) < 0)
            break;
        o->at[id] = block;
        ret = shmb_fipc_repo_from_address(shmb_fipc_jemalloc_repo(o->j), block, &pool_id, &o->blocks[id].offset);
        o->blocks[id].key = pool_id;
    }
    const size_t count = ret == 0 ? shmb_fipc_jemalloc_pool_list(o->j, NULL, 0) : 0;
    shmb_fipc_pool_t *pools = ret == 0 ? calloc(count ? count : 1, sizeof(*pools)) : NULL;
    o->objects = ret == 0 ? calloc(count ? count : 1, sizeof(*o->objects)) : NULL;
    if (ret == 0 && (!pools || !o->objects || shmb_fipc_jemalloc_pool_list(o->j, pools, count) != count))
        ret = no_memory();
    for (size_t i = 0; ret == 0 && i < count; i++) {
        snprintf(o->objects[i].name, sizeof(o->objects[i].name), "%s", pools[i].name);
        o->objects[i].key = pools[i].id;
        o->objects[i].bytes = pools[i].bytes;
    }
    o->nobjects = count;
    free(pools);
    return ret;
}

int shmb_lookup_own(const shmb_lookup_config_t *cfg, int group, shmb_lookup_owned_t *o)
{
    o->at = malloc((size_t)cfg->num_segments * sizeof(*o->at));
    o->blocks = calloc((size_t)cfg->num_segments, sizeof(*o->blocks));
    if (!o->at || !o->blocks)
        return no_memory();
    return group == LOOKUP_GROUP_SEGMENTS  ? own_buffers(cfg, o)
           : group == LOOKUP_GROUP_CLASSIC ? own_classic(cfg, o)
                                           : own_jemalloc(cfg, o);
}

void shmb_lookup_own_drop(shmb_lookup_owned_t *o)
{
    for (uint64_t i = 0; o->shm && i < o->created; i++)
        shmb_segment_destroy(&o->shm[i], NULL);
    free(o->shm);
    shmb_fipc_classic_destroy(o->pool, 1);
    shmb_fipc_jemalloc_destroy(o->j, 1, NULL);
    free(o->at);
    free(o->objects);
    free(o->blocks);
    free(o->tags);
    memset(o, 0, sizeof(*o));
}

int shmb_lookup_publish(shmb_peer_t *peer, uint32_t op, uint64_t a0, const void *elements, size_t size,
                        uint64_t total)
{
    const uint64_t chunk = SHMB_LOOKUP_PEER_DATA_BYTES / size;
    int ret = 0;
    for (uint64_t first = 0; ret == 0 && (first < total || first == 0); first += chunk) {
        const uint64_t count = total - first < chunk ? total - first : chunk;
        memcpy(peer->data, (const unsigned char *)elements + first * size, (size_t)(count * size));
        ret = shmb_peer_command(peer, op, a0, first, count, total, NULL, NULL);
        if (total == 0)
            break;
    }
    return ret;
}
