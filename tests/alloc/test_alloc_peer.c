#include <dirent.h>
#include <signal.h>

#include "helpers.h"

#include "shmbench/alloc_peer.h"
#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/segment.h"

#define PREFIX shmb_test_prefix()

/* A mapped segment of `bytes` holding tag at its first byte. */
static void tagged_segment(shmb_segment_t *seg, size_t bytes, uint64_t tag)
{
    assert_int_equal(shmb_segment_create(seg, PREFIX, bytes, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(seg, NULL), 0);
    memcpy(seg->addr, &tag, sizeof(tag));
}

/* What the last call said, measured and attached. */
static char why[256];
static uint64_t attach_ns, detach_ns;
static size_t nattach;

static int posix(shmb_peer_t *peer, const char *name, uint64_t bytes, uint64_t tag)
{
    why[0] = '\0';
    return shmb_alloc_peer_posix(peer, name, bytes, tag, &attach_ns, &detach_ns, why, sizeof(why));
}

static int lend(shmb_peer_t *peer, const shmb_alloc_peer_pools_t *in, double *attach, size_t cap, double *translate)
{
    why[0] = '\0';
    return shmb_alloc_peer_pools(peer, in, attach, cap, &nattach, translate, why, sizeof(why));
}

static void test_tag(void **state)
{
    assert_int_equal(shmb_alloc_peer_tag(1, 0), shmb_alloc_peer_tag(1, 0));
    assert_int_not_equal(shmb_alloc_peer_tag(1, 0), shmb_alloc_peer_tag(1, 1));
    assert_int_not_equal(shmb_alloc_peer_tag(1, 0), shmb_alloc_peer_tag(2, 0));
    for (uint64_t i = 0; i < 100000; i++)
        assert_int_not_equal(shmb_alloc_peer_tag(0, i), 0);
}

static void test_posix_attach_detach(void **state)
{
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    const uint64_t tag = shmb_alloc_peer_tag(7, 3);
    shmb_segment_t seg;
    tagged_segment(&seg, 64 << 10, tag);
    for (int i = 0; i < 3; i++) { /* the same segment again: nothing of an attach stays */
        attach_ns = detach_ns = 0;
        assert_int_equal(posix(&peer, seg.name, seg.size, tag), 0);
        assert_true(attach_ns > 0 && attach_ns < 1000000000ull);
        assert_true(detach_ns > 0 && detach_ns < 1000000000ull);
    }
    assert_string_equal(why, "");

    /* another tag than the owner expects: the peer read the real one */
    attach_ns = 12345;
    assert_int_equal(posix(&peer, seg.name, seg.size, tag + 1), -EPROTO);
    assert_non_null(strstr(why, "posix: the peer read tag"));
    assert_non_null(strstr(why, seg.name));
    assert_int_equal(attach_ns, 12345); /* untouched on error */

    /* a size that differs is the peer's fstat size check */
    shmb_error_clear();
    assert_int_equal(posix(&peer, seg.name, seg.size + 4096, tag), -EPROTO);
    assert_string_equal(shmb_error_last()->call, "fstat size check");
    assert_non_null(strstr(shmb_error_last()->object, "expected"));

    /* a name that does not exist */
    char missing[SHMB_SEGMENT_NAME_MAX + 1];
    snprintf(missing, sizeof(missing), "%s%d_missing", PREFIX, (int)getpid());
    assert_int_equal(posix(&peer, missing, 4096, tag), -ENOENT);
    assert_string_equal(shmb_error_last()->call, "shm_open");

    /* not a name, or too small for a tag */
    assert_int_equal(posix(&peer, "no_slash", 4096, tag), -EINVAL);
    assert_int_equal(posix(&peer, seg.name, 4, tag), -EINVAL);

    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

static void test_posix_peer_died(void **state)
{
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    const uint64_t tag = shmb_alloc_peer_tag(1, 1);
    shmb_segment_t seg;
    tagged_segment(&seg, 4096, tag);
    assert_int_equal(kill(peer.pid, SIGKILL), 0);
    assert_int_equal(posix(&peer, seg.name, seg.size, tag), -EPIPE);
    assert_string_equal(shmb_error_last()->call, "peer process");
    assert_int_equal(shmb_peer_stop(&peer), -EPIPE);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

#define BLOCKS 300

/* bipc: one pool attached once, every handle translated and its tag read;
 * a wrong tag, a handle outside the pool and one naming no pool are found. */
static void test_pools_classic(void **state)
{
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    shmb_fipc_classic_t *pool;
    assert_int_equal(shmb_fipc_classic_create(PREFIX, 4 << 20, &pool), 0);
    static void *blocks[BLOCKS];
    static shmb_lookup_request_t h[BLOCKS];
    unsigned char *base = shmb_fipc_classic_base(pool);
    for (int i = 0; i < BLOCKS; i++) {
        assert_int_equal(shmb_fipc_classic_alloc(pool, 4096, &blocks[i]), 0);
        uint64_t tag = shmb_alloc_peer_tag(5, (uint64_t)i);
        memcpy(blocks[i], &tag, sizeof(tag));
        memset(&h[i], 0, sizeof(h[i]));
        h[i].pool_offset = (uint64_t)((unsigned char *)blocks[i] - base);
        h[i].len = 4096;
    }
    shmb_fipc_pool_t info;
    memset(&info, 0, sizeof(info));
    info.bytes = shmb_fipc_classic_size(pool);
    snprintf(info.name, sizeof(info.name), "%s", shmb_fipc_classic_name(pool));
    shmb_alloc_peer_pools_t in = {SHMB_ALLOC_PEER_CLASSIC, &info, 1, h, BLOCKS, 5, 7};
    double attach[2] = {0}, translate[7] = {0};
    assert_int_equal(lend(&peer, &in, attach, 2, translate), 0);
    assert_int_equal(nattach, 1);
    assert_true(attach[0] > 0);
    for (int r = 0; r < 7; r++)
        assert_true(translate[r] > 0 && translate[r] < 1000);

    uint64_t bad = 1;
    memcpy(blocks[123], &bad, sizeof(bad));
    assert_int_equal(lend(&peer, &in, attach, 2, translate), -EPROTO);
    assert_non_null(strstr(why, "bipc: the peer read tag 0x0000000000000001 in block 123"));
    uint64_t tag = shmb_alloc_peer_tag(5, 123);
    memcpy(blocks[123], &tag, sizeof(tag));

    h[7].pool_offset = info.bytes; /* outside the pool */
    assert_int_equal(lend(&peer, &in, attach, 2, translate), -EPROTO);
    assert_non_null(strstr(why, "bipc: the peer could not translate block 7"));
    h[7].pool_offset = (uint64_t)((unsigned char *)blocks[7] - base);
    h[9].id = 3; /* no such pool */
    assert_int_equal(lend(&peer, &in, attach, 2, translate), -EINVAL);
    h[9].id = 0;
    info.bytes += 4096; /* the peer's fstat says otherwise */
    assert_int_equal(lend(&peer, &in, attach, 2, translate), -EPROTO);
    assert_string_equal(shmb_error_last()->call, "fstat size check");
    info.bytes -= 4096;
    in.rounds = 0;
    assert_int_equal(lend(&peer, &in, attach, 2, translate), -EINVAL);
    in.rounds = 7;
    assert_int_equal(lend(&peer, &in, attach, 0, translate), -ENOBUFS);
    /* after all that, a good pass still works: the peer let go of every attach */
    assert_int_equal(lend(&peer, &in, attach, 2, translate), 0);

    assert_int_equal(shmb_fipc_classic_destroy(pool, 1), 0);
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* jemalloc: the pools the arena grew, each attached on the first handle
 * naming it (so as many attaches as pools holding a block), handles
 * through the peer's repository; a wrong tag is found. */
static void test_pools_jemalloc(void **state)
{
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    shmb_fipc_jemalloc_t *j;
    assert_int_equal(shmb_fipc_jemalloc_create(PREFIX, 0, &j), 0);
    static void *blocks[BLOCKS];
    static shmb_lookup_request_t h[BLOCKS];
    shmb_fipc_repo_t *repo = shmb_fipc_jemalloc_repo(j);
    for (int i = 0; i < BLOCKS; i++) {
        assert_int_equal(shmb_fipc_jemalloc_alloc(j, 256 << 10, &blocks[i]), 0);
        uint64_t tag = shmb_alloc_peer_tag(9, (uint64_t)i);
        memcpy(blocks[i], &tag, sizeof(tag));
        memset(&h[i], 0, sizeof(h[i]));
        h[i].len = 256 << 10;
        assert_int_equal(shmb_fipc_repo_from_address(repo, blocks[i], &h[i].id, &h[i].offset), 0);
    }
    size_t npools = shmb_fipc_jemalloc_pool_list(j, NULL, 0);
    assert_true(npools > 1);
    shmb_fipc_pool_t *pools = calloc(npools, sizeof(*pools));
    assert_non_null(pools);
    assert_int_equal(shmb_fipc_jemalloc_pool_list(j, pools, npools), npools);
    size_t holding = 0; /* pools that hold a block */
    for (size_t p = 0; p < npools; p++) {
        int used = 0;
        for (int i = 0; i < BLOCKS; i++)
            used |= h[i].id == pools[p].id;
        holding += (size_t)used;
    }
    shmb_alloc_peer_pools_t in = {SHMB_ALLOC_PEER_JEMALLOC, pools, npools, h, BLOCKS, 9, 3};
    double *attach = calloc(npools, sizeof(double)), translate[3];
    assert_int_equal(lend(&peer, &in, attach, npools, translate), 0);
    assert_int_equal(nattach, holding);
    for (size_t p = 0; p < nattach; p++)
        assert_true(attach[p] > 0);
    for (int r = 0; r < 3; r++)
        assert_true(translate[r] > 0 && translate[r] < 10000);
    memset(blocks[BLOCKS - 1], 0, 8);
    assert_int_equal(lend(&peer, &in, attach, npools, translate), -EPROTO);
    assert_non_null(strstr(why, "jemalloc: the peer read tag 0x0000000000000000 in block 299"));

    for (int i = 0; i < BLOCKS; i++)
        shmb_fipc_jemalloc_free(j, blocks[i]);
    assert_int_equal(shmb_fipc_jemalloc_destroy(j, 1, NULL), 0);
    free(attach);
    free(pools);
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag),
        cmocka_unit_test(test_posix_attach_detach),
        cmocka_unit_test(test_posix_peer_died),
        cmocka_unit_test(test_pools_classic),
        cmocka_unit_test(test_pools_jemalloc),
    };
    return shmb_test_run_shm("/shmb_test_apeer_", tests, NULL, NULL);
}
