/* alloc_peer: the receiver's side of shm_allocation_bench --peer_process
 * (the protocol and what each row times: shmbench/alloc_peer.h). */
#include "shmbench/alloc_peer.h"

#include "base/runner_internal.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The commands of the peer. */
enum {
    OP_POSIX = 1, /* name; arg: bytes. results: attach ns, detach ns, tag read */
    OP_POOLS,     /* arg: kind, first, count, total; data: shmb_fipc_pool_t[count] */
    OP_HANDLES,   /* arg: first, count, total; data: shmb_lookup_request_t[count] */
    OP_RUN,       /* arg: seed, rounds. results: pools attached, bad block + 1, what, tag read;
                   * data: attach ns per pool, then translate ns per round */
};

/* What OP_RUN found wrong (result 2). */
enum { BAD_NONE, BAD_TAG, BAD_MISS, BAD_SUM };

#define DATA_DOUBLES (SHMB_ALLOC_PEER_DATA_BYTES / sizeof(double))

uint64_t shmb_alloc_peer_tag(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull; /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
}

/* ---- the peer's side ---- */

/* Mooncake's receiver opening a buffer by name: shm_open(O_RDWR), fstat and
 * a size check, mmap of all of it; the descriptor stays open until detach.
 * Nothing is registered: the peer never unlinks the owner's names. */
static int posix_attach(const char *name, uint64_t bytes, void **addr, int *fd)
{
    int f = shmb_segment_open_existing(name, bytes);
    if (f < 0)
        return f;
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    if (p == MAP_FAILED) {
        int ret = shmb_error_record("mmap", errno, name);
        close(f);
        return ret;
    }
    *addr = p;
    *fd = f;
    return 0;
}

static int posix_detach(void *addr, uint64_t bytes, int fd, const char *name)
{
    int ret = 0;
    if (munmap(addr, (size_t)bytes) != 0)
        ret = shmb_error_record("munmap", errno, name);
    if (close(fd) != 0 && ret == 0)
        ret = shmb_error_record("close", errno, name);
    return ret;
}

static SHMB_PEER_COMMAND(peer_posix)
{
    const uint64_t bytes = cmd->arg[0];
    if (bytes < sizeof(uint64_t) || bytes > SIZE_MAX || cmd->name[0] != '/')
        return -EINVAL;
    void *addr = NULL;
    int fd = -1;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = posix_attach(cmd->name, bytes, &addr, &fd);
    const uint64_t t1 = shmb_clock_now_ns();
    if (ret < 0)
        return ret;
    uint64_t tag;
    memcpy(&tag, addr, sizeof(tag));
    const uint64_t t2 = shmb_clock_now_ns();
    ret = posix_detach(addr, bytes, fd, cmd->name);
    const uint64_t t3 = shmb_clock_now_ns();
    result[0] = t1 - t0;
    result[1] = t3 - t2;
    result[2] = tag;
    return ret;
}

/* The peer's state for one pass over pool blocks (its copy of the owner's
 * calloc, from the fork). */
typedef struct peer_side {
    int kind;
    shmb_fipc_pool_t *pools;        /* told by the owner */
    size_t npools;
    void **base;                    /* per told pool: its mapping here, NULL until attached */
    int *fd;                        /* jemalloc: the descriptor each attach keeps */
    shmb_fipc_repo_t *repo;         /* jemalloc: the pools attached, by id */
    shmb_lookup_request_t *handles; /* n */
    uint64_t n;
} peer_side_t;

/* Detaches every pool and forgets the pass. Returns the first error. */
static int pools_release(peer_side_t *p)
{
    int ret = 0;
    for (size_t i = 0; p->base && i < p->npools; i++) {
        if (!p->base[i])
            continue;
        int r = p->kind == SHMB_ALLOC_PEER_CLASSIC ? shmb_fipc_classic_detach(p->base[i], p->pools[i].bytes)
                                                   : shmb_fipc_pool_detach(p->base[i], p->pools[i].bytes, p->fd[i]);
        ret = ret < 0 ? ret : r;
    }
    shmb_fipc_repo_destroy(p->repo);
    free(p->pools);
    free(p->base);
    free(p->fd);
    free(p->handles);
    memset(p, 0, sizeof(*p));
    return ret;
}

static SHMB_PEER_COMMAND(peer_pools)
{
    peer_side_t *p = ctx;
    const uint64_t *arg = cmd->arg;
    const uint64_t kind = arg[0], first = arg[1], count = arg[2], total = arg[3];
    if (first == 0) {
        int ret = pools_release(p);
        if (ret < 0)
            return ret;
        if (kind > SHMB_ALLOC_PEER_JEMALLOC || total == 0 || total > DATA_DOUBLES)
            return -EINVAL;
        p->kind = (int)kind;
        p->pools = calloc((size_t)total, sizeof(*p->pools));
        p->base = calloc((size_t)total, sizeof(*p->base));
        p->fd = calloc((size_t)total, sizeof(*p->fd));
        if (!p->pools || !p->base || !p->fd)
            return shmb_error_record("malloc", ENOMEM, NULL);
        p->npools = (size_t)total;
    }
    if (!p->pools || kind != (uint64_t)p->kind || total != p->npools || first > total ||
        count > total - first || count * sizeof(*p->pools) > data_bytes)
        return -EINVAL;
    memcpy(p->pools + first, data, (size_t)count * sizeof(*p->pools));
    for (uint64_t i = first; i < first + count; i++)
        p->pools[i].name[SHMB_FIPC_POOL_NAME_MAX] = '\0';
    return 0;
}

static SHMB_PEER_COMMAND(peer_handles)
{
    peer_side_t *p = ctx;
    const uint64_t *arg = cmd->arg;
    const uint64_t first = arg[0], count = arg[1], total = arg[2];
    if (!p->pools || total == 0 || total > SIZE_MAX / sizeof(*p->handles))
        return -EINVAL;
    if (first == 0) {
        free(p->handles);
        p->n = 0;
        if (!(p->handles = malloc((size_t)total * sizeof(*p->handles))))
            return shmb_error_record("malloc", ENOMEM, NULL);
        p->n = total;
    }
    if (!p->handles || total != p->n || first > total || count > total - first ||
        count * sizeof(*p->handles) > data_bytes)
        return -EINVAL;
    memcpy(p->handles + first, data, (size_t)count * sizeof(*p->handles));
    return 0;
}

/* Attaches told pool i (timed into *ns): bipc's Pool_arena(open_only), or
 * jemalloc's open_shm_pool and the pool entered in our repository. */
static int pool_attach(peer_side_t *p, size_t i, double *ns)
{
    const shmb_fipc_pool_t *pool = &p->pools[i];
    const uint64_t t0 = shmb_clock_now_ns();
    int ret;
    if (p->kind == SHMB_ALLOC_PEER_CLASSIC) {
        size_t bytes = 0;
        ret = shmb_fipc_classic_attach(pool->name, &p->base[i], &bytes);
        if (ret == 0 && bytes != pool->bytes) {
            shmb_fipc_classic_detach(p->base[i], bytes);
            p->base[i] = NULL;
            char what[SHMB_ERROR_OBJECT_MAX];
            snprintf(what, sizeof(what), "%.200s: %zu bytes, expected %llu", pool->name, bytes,
                     (unsigned long long)pool->bytes);
            ret = shmb_error_record("fstat size check", EPROTO, what);
        }
    } else {
        ret = shmb_fipc_pool_attach(pool->name, pool->bytes, &p->base[i], &p->fd[i]);
        if (ret == 0 && (ret = shmb_fipc_repo_insert(p->repo, pool->id, p->base[i], (size_t)pool->bytes)) < 0) {
            shmb_fipc_pool_detach(p->base[i], pool->bytes, p->fd[i]);
            p->base[i] = NULL;
        }
    }
    *ns = (double)(shmb_clock_now_ns() - t0);
    return ret;
}

/* One handle translated the way the timed loop does. */
static void *translate(const peer_side_t *p, const shmb_lookup_request_t *h)
{
    if (p->kind == SHMB_ALLOC_PEER_CLASSIC)
        return shmb_fipc_classic_to_address(p->base[0], (size_t)p->pools[0].bytes, h->pool_offset, h->len);
    return shmb_fipc_repo_to_address(p->repo, h->id, h->offset, h->len);
}

/* The runner's batch: every handle translated (count = p->n), the sum of
 * the addresses checked against the walk's. */
typedef struct translating {
    const peer_side_t *p;
    uint64_t sum;
} translating_t;

static int translate_batch(void *ctx, uint64_t count)
{
    const translating_t *t = ctx;
    const peer_side_t *p = t->p;
    (void)count;
    const uint64_t got =
        p->kind == SHMB_ALLOC_PEER_CLASSIC
            ? shmb_fipc_classic_translate_batch(p->base[0], (size_t)p->pools[0].bytes, p->handles, (size_t)p->n)
            : shmb_fipc_repo_translate_batch(p->repo, p->handles, (size_t)p->n);
    return got == t->sum ? 0 : -EPROTO;
}

/* The walk: each handle's pool attached on its first use (samples into
 * attach_ns, their count into result[0]), each handle translated and its
 * tag read; a wrong one is -EPROTO with result[1..3] saying which. The sum
 * of the addresses into *sum. */
static int walk(peer_side_t *p, uint64_t seed, double *attach_ns, uint64_t result[SHMB_PEER_RESULTS],
                uint64_t *sum)
{
    if (p->kind == SHMB_ALLOC_PEER_JEMALLOC && !p->repo) {
        int ret = shmb_fipc_repo_create(&p->repo);
        if (ret < 0)
            return shmb_error_record("malloc", -ret, NULL);
    }
    *sum = 0;
    for (uint64_t k = 0; k < p->n; k++) {
        const shmb_lookup_request_t *h = &p->handles[k];
        size_t i = 0;
        while (i < p->npools && p->pools[i].id != h->id)
            i++;
        if (i == p->npools || (p->kind == SHMB_ALLOC_PEER_CLASSIC && h->id != 0))
            return -EINVAL;
        if (!p->base[i]) {
            int ret = pool_attach(p, i, &attach_ns[result[0]]);
            if (ret < 0)
                return ret;
            result[0]++;
        }
        const unsigned char *ptr = translate(p, h);
        uint64_t tag = 0;
        if (ptr && h->len >= sizeof(tag))
            memcpy(&tag, ptr, sizeof(tag));
        if (!ptr || tag != shmb_alloc_peer_tag(seed, k)) {
            result[1] = k + 1;
            result[2] = ptr ? BAD_TAG : BAD_MISS;
            result[3] = tag;
            return -EPROTO;
        }
        *sum += (uintptr_t)ptr;
    }
    return 0;
}

static SHMB_PEER_COMMAND(peer_run)
{
    peer_side_t *p = ctx;
    const uint64_t *arg = cmd->arg;
    const uint64_t seed = arg[0], rounds = arg[1];
    double *attach_ns = data, *translate_ns = attach_ns + p->npools;
    int ret = 0;
    if (!p->pools || !p->handles || rounds == 0 || rounds > SHMB_ALLOC_PEER_MAX_ROUNDS ||
        (p->npools + rounds) * sizeof(double) > data_bytes)
        ret = -EINVAL;
    translating_t t = {.p = p};
    if (ret == 0)
        ret = walk(p, seed, attach_ns, result, &t.sum);
    /* `rounds` batches of every handle; the data area holds their samples (never grown) */
    const shmb_runner_plan_t plan = {.ops = rounds * p->n, .batches = rounds, .budget_ns = UINT64_MAX};
    shmb_samples_t out = {.v = translate_ns, .cap = (size_t)rounds};
    if (ret == 0 && (ret = shmb_runner_run(&plan, translate_batch, &t, &out, NULL)) == -EPROTO)
        result[2] = BAD_SUM;
    if (ret == 0 && result[0] < p->npools) /* the samples sit right after the attaches made */
        memmove(attach_ns + result[0], translate_ns, (size_t)rounds * sizeof(double));
    if (ret == -EPROTO && result[2] != BAD_NONE)
        ret = 0; /* a wrong translation travels back in the results (a failed call has none) */
    int r = pools_release(p);
    return ret < 0 ? ret : r;
}

static const shmb_peer_handler_t peer_run_op[] = {
    [OP_POSIX] = peer_posix, [OP_POOLS] = peer_pools, [OP_HANDLES] = peer_handles, [OP_RUN] = peer_run};
static const shmb_peer_commands_t peer_commands = {peer_run_op, sizeof(peer_run_op) / sizeof(*peer_run_op), NULL};

int shmb_alloc_peer_start(shmb_peer_t *peer, const char *prefix)
{
    peer_side_t *side = calloc(1, sizeof(*side));
    if (!side)
        return -ENOMEM;
    int ret = shmb_peer_start(peer, prefix, SHMB_ALLOC_PEER_DATA_BYTES, &peer_commands, side);
    free(side); /* the peer has its own copy */
    return ret;
}

/* ---- the owner's side ---- */

int shmb_alloc_peer_posix(shmb_peer_t *peer, const char *name, uint64_t bytes, uint64_t tag,
                          uint64_t *attach_ns, uint64_t *detach_ns, char *why, size_t why_cap)
{
    shmb_peer_cmd_t cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op = OP_POSIX;
    cmd.arg[0] = bytes;
    if (snprintf(cmd.name, sizeof(cmd.name), "%s", name) >= (int)sizeof(cmd.name))
        return -ENAMETOOLONG;
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = shmb_peer_call(peer, &cmd, res);
    if (ret < 0)
        return ret;
    if (res[2] != tag) {
        snprintf(why, why_cap, "posix: the peer read tag 0x%016llx in %s, expected 0x%016llx",
                 (unsigned long long)res[2], name, (unsigned long long)tag);
        return -EPROTO;
    }
    *attach_ns = res[0];
    *detach_ns = res[1];
    return 0;
}

static int call(shmb_peer_t *peer, uint32_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                uint64_t result[SHMB_PEER_RESULTS])
{
    return shmb_peer_command(peer, op, a0, a1, a2, a3, NULL, result);
}

int shmb_alloc_peer_pools(shmb_peer_t *peer, const shmb_alloc_peer_pools_t *in, double *attach_ns,
                          size_t attach_cap, size_t *nattach, double *translate_ns, char *why,
                          size_t why_cap)
{
    static const char *const kinds[] = {"bipc", "jemalloc"};
    if ((unsigned)in->kind > SHMB_ALLOC_PEER_JEMALLOC || in->npools == 0 || in->n == 0 || in->rounds == 0 ||
        in->rounds > SHMB_ALLOC_PEER_MAX_ROUNDS)
        return -EINVAL;
    if (in->npools > attach_cap || in->npools + in->rounds > DATA_DOUBLES)
        return -ENOBUFS;
    const size_t pool_chunk = SHMB_ALLOC_PEER_DATA_BYTES / sizeof(*in->pools);
    const size_t handle_chunk = SHMB_ALLOC_PEER_DATA_BYTES / sizeof(*in->handles);
    int ret = 0;
    for (size_t first = 0; ret == 0 && first < in->npools; first += pool_chunk) {
        const size_t count = in->npools - first < pool_chunk ? in->npools - first : pool_chunk;
        memcpy(peer->data, in->pools + first, count * sizeof(*in->pools));
        ret = call(peer, OP_POOLS, (uint64_t)in->kind, first, count, in->npools, NULL);
    }
    for (uint64_t first = 0; ret == 0 && first < in->n; first += handle_chunk) {
        const uint64_t count = in->n - first < handle_chunk ? in->n - first : handle_chunk;
        memcpy(peer->data, in->handles + first, (size_t)count * sizeof(*in->handles));
        ret = call(peer, OP_HANDLES, first, count, in->n, 0, NULL);
    }
    uint64_t res[SHMB_PEER_RESULTS] = {0};
    if (ret == 0)
        ret = call(peer, OP_RUN, in->seed, in->rounds, 0, 0, res);
    if (ret == 0 && res[2] != BAD_NONE) {
        const uint64_t k = res[1] - 1;
        if (res[2] == BAD_SUM)
            snprintf(why, why_cap, "%s: a timed batch of the peer's translations summed to another address "
                     "than its checked walk", kinds[in->kind]);
        else if (res[2] == BAD_MISS)
            snprintf(why, why_cap, "%s: the peer could not translate block %llu (pool %u, offset %llu)",
                     kinds[in->kind], (unsigned long long)k, (unsigned)in->handles[k].id,
                     (unsigned long long)(in->kind == SHMB_ALLOC_PEER_CLASSIC ? in->handles[k].pool_offset
                                                                               : in->handles[k].offset));
        else
            snprintf(why, why_cap, "%s: the peer read tag 0x%016llx in block %llu, expected 0x%016llx",
                     kinds[in->kind], (unsigned long long)res[3], (unsigned long long)k,
                     (unsigned long long)shmb_alloc_peer_tag(in->seed, k));
        return -EPROTO;
    }
    if (ret < 0)
        return ret;
    if (res[0] == 0 || res[0] > in->npools)
        return shmb_error_record("peer samples", EPROTO, NULL);
    const double *v = peer->data;
    memcpy(attach_ns, v, (size_t)res[0] * sizeof(double));
    memcpy(translate_ns, v + res[0], (size_t)in->rounds * sizeof(double));
    *nattach = (size_t)res[0];
    return 0;
}
