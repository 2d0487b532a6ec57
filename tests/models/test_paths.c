/* The translation paths: names by kind, order, and each path over one placement, alone, batched, chained. */

#include "helpers.h"

#include "models/paths_internal.h"

#define N 4                      /* segments */
#define SIZE (1ull << 20)        /* bytes each */
#define LEN 64ull                /* bytes a request */
#define REQUESTS (3 * N)         /* first, middle and last place of each segment */

static const char *const systems = "mooncake,flowipc_classic,flowipc_jemalloc";
static const char *const kernels = "linear,lower_bound,tree,arithmetic";

static void test_names_by_kind(void **state)
{
    char buf[128];
    assert_int_equal(shmb_path_names(SHMB_PATH_SYSTEM, buf, sizeof(buf)), (int)strlen(systems));
    assert_string_equal(buf, systems);
    assert_int_equal(shmb_path_names(SHMB_PATH_KERNEL, buf, sizeof(buf)), (int)strlen(kernels));
    assert_string_equal(buf, kernels);
    char both[128];
    snprintf(both, sizeof(both), "%s,%s", systems, kernels);
    assert_int_equal(shmb_path_names(SHMB_PATH_SYSTEM | SHMB_PATH_KERNEL, buf, sizeof(buf)), (int)strlen(both));
    assert_string_equal(buf, both);
}

/* Exactly the room it needs, one byte less (untouched), no kind, no buffer. */
static void test_names_errors(void **state)
{
    const size_t need = strlen(systems) + 1;
    char buf[64];
    assert_int_equal(shmb_path_names(SHMB_PATH_SYSTEM, buf, need), (int)need - 1);
    assert_string_equal(buf, systems);
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(shmb_path_names(SHMB_PATH_SYSTEM, buf, need - 1), -ENOSPC);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(shmb_path_names(SHMB_PATH_SYSTEM, buf, 0), -ENOSPC);
    assert_int_equal(shmb_path_names(0, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(shmb_path_names(4, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(shmb_path_names(SHMB_PATH_KERNEL, NULL, 10), -EINVAL);
}

static void test_kind_of(void **state)
{
    assert_int_equal(shmb_path_kind_of("mooncake"), SHMB_PATH_SYSTEM);
    assert_int_equal(shmb_path_kind_of("flowipc_jemalloc"), SHMB_PATH_SYSTEM);
    assert_int_equal(shmb_path_kind_of("tree"), SHMB_PATH_KERNEL);
    assert_int_equal(shmb_path_kind_of("arithmetic"), SHMB_PATH_KERNEL);
    assert_int_equal(shmb_path_kind_of("hash"), -EINVAL);
    assert_int_equal(shmb_path_kind_of("moon"), -EINVAL);
    assert_int_equal(shmb_path_kind_of(""), -EINVAL);
    assert_int_equal(shmb_path_kind_of(NULL), -EINVAL);
}

/* A system's name gives its shmb_system_t; a kernel's does not. */
static void test_system(void **state)
{
    for (int s = 0; s < SHMB_SYSTEMS; s++)
        assert_int_equal(shmb_path_system(shmb_system_name((shmb_system_t)s)), s);
    assert_int_equal(shmb_path_system("flowipc_classic"), SHMB_SYSTEM_FLOWIPC_CLASSIC);
    assert_int_equal(shmb_path_system("linear"), -EINVAL);
    assert_int_equal(shmb_path_system("mooncake "), -EINVAL);
    assert_int_equal(shmb_path_system(""), -EINVAL);
    assert_int_equal(shmb_path_system(NULL), -EINVAL);
}

/* Systems in shmb_system_t order, then kernels in shmb_lookup_strategy_t order, each row complete. */
static void test_table_order(void **state)
{
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        assert_string_equal(shmb_path_name(s), shmb_system_name((shmb_system_t)s));
        assert_int_equal(shmb_path_kind(s), SHMB_PATH_SYSTEM);
        assert_int_equal(shmb_path_table[s].kernel, -1);
    }
    for (int k = 0; k < SHMB_LOOKUP_STRATEGIES; k++) {
        assert_string_equal(shmb_path_name(SHMB_SYSTEMS + k), shmb_lookup_strategy_name((shmb_lookup_strategy_t)k));
        assert_int_equal(shmb_path_kind(SHMB_SYSTEMS + k), SHMB_PATH_KERNEL);
        assert_int_equal(shmb_path_table[SHMB_SYSTEMS + k].kernel, k);
    }
    for (int i = 0; i < SHMB_PATHS; i++) {
        const shmb_path_t *p = &shmb_path_table[i];
        assert_true(p->setup && p->translate && p->batch && p->chain && p->teardown);
    }
    assert_string_equal(shmb_system_name(SHMB_SYSTEMS), "unknown");
}

/* A placement: N segments registered at descending peer addresses, mapped
 * back to back in one local range (which is flowipc_classic's pool too). */
typedef struct placement {
    unsigned char *local;
    shmb_lookup_segment_t segments[N];
    const char *names[N];
    shmb_lookup_request_t requests[REQUESTS];
    uint64_t expected[REQUESTS];
    uint64_t expected_sum;
    int attaches; /* mooncake's first uses */
} placement_t;

static int attach_local(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    placement_t *pl = ctx;
    if (index >= N || strcmp(shm_path, pl->names[index]) != 0 || length != SIZE)
        return -ENOENT;
    pl->attaches++;
    *local = pl->segments[index].local_base;
    return 0;
}

static void place(placement_t *pl)
{
    static const char *const names[N] = {"/s0", "/s1", "/s2", "/s3"};
    memset(pl, 0, sizeof(*pl));
    pl->local = mmap(NULL, N * SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(pl->local != MAP_FAILED);
    for (uint64_t id = 0; id < N; id++) {
        pl->segments[id] = (shmb_lookup_segment_t){SHMB_PATH_PEER_START + (N - id) * 4 * SIZE, SIZE,
                                                   pl->local + id * SIZE};
        pl->names[id] = names[id];
    }
    const uint64_t offsets[3] = {0, SIZE / 2 + 8, SIZE - LEN};
    for (uint64_t k = 0; k < REQUESTS; k++) {
        const uint64_t id = k % N, offset = offsets[k / N];
        pl->requests[k] = (shmb_lookup_request_t){.addr = pl->segments[id].peer_base + offset, .len = LEN,
                                                  .id = (uint32_t)id, .offset = offset,
                                                  .pool_offset = id * SIZE + offset};
        pl->expected[k] = (uint64_t)(uintptr_t)(pl->segments[id].local_base + offset);
        pl->expected_sum += pl->expected[k];
    }
}

static shmb_path_view_t view_of(placement_t *pl)
{
    return (shmb_path_view_t){.segments = pl->segments, .n = N, .shm_names = pl->names,
                              .mooncake_ops = {attach_local, NULL, pl}, .pool_base = pl->local,
                              .pool_bytes = N * SIZE};
}

/* Every path: each request alone, batched and chained; no segment: NULL; a skewed chain derails its sum. */
static void test_every_path_translates(void **state)
{
    placement_t pl;
    place(&pl);
    const shmb_path_view_t view = view_of(&pl);
    shmb_path_state_t st;
    memset(&st, 0, sizeof(st));
    for (int i = 0; i < SHMB_PATHS; i++) {
        const shmb_path_t *p = &shmb_path_table[i];
        assert_int_equal(p->setup(p, &st, &view), 0);
        for (int k = 0; k < REQUESTS; k++) {
            void *got = p->translate(p, &st, &pl.requests[k]);
            if (got != (void *)(uintptr_t)pl.expected[k])
                fail_msg("%s: request %d translated to %p, expected 0x%llx", shmb_path_name(i), k, got,
                         (unsigned long long)pl.expected[k]);
        }
        shmb_lookup_request_t beyond = pl.requests[REQUESTS - 1]; /* the last bytes of segment N - 1 */
        beyond.len = LEN + 1;
        assert_null(p->translate(p, &st, &beyond));
        assert_true(p->batch(p, &st, pl.requests, REQUESTS) == pl.expected_sum);
        assert_true(p->chain(p, &st, pl.requests, pl.expected, REQUESTS) == pl.expected_sum);
        uint64_t skewed[REQUESTS];
        memcpy(skewed, pl.expected, sizeof(skewed));
        skewed[0] += 4096;
        assert_true(p->chain(p, &st, pl.requests, skewed, REQUESTS) != pl.expected_sum);
        assert_true(p->batch(p, &st, pl.requests, 0) == 0);
    }
    assert_int_equal(pl.attaches, N); /* mooncake: one first use a buffer */
    assert_int_equal(st.kernels, SHMB_LOOKUP_STRATEGIES);
    for (int i = SHMB_PATHS - 1; i >= 0; i--)
        shmb_path_table[i].teardown(&shmb_path_table[i], &st);
    assert_null(st.mooncake);
    assert_null(st.repo);
    assert_null(st.pool_base);
    assert_int_equal(st.kernels, 0);
    assert_int_equal((int)st.table.n, 0);
    munmap(pl.local, N * SIZE);
}

/* The kernels share one table: it lives until the last of them is torn down. */
static void test_kernels_share_the_table(void **state)
{
    placement_t pl;
    place(&pl);
    const shmb_path_view_t view = view_of(&pl);
    shmb_path_state_t st;
    memset(&st, 0, sizeof(st));
    const shmb_path_t *linear = &shmb_path_table[SHMB_SYSTEMS + SHMB_LOOKUP_LINEAR];
    const shmb_path_t *tree = &shmb_path_table[SHMB_SYSTEMS + SHMB_LOOKUP_TREE];
    assert_int_equal(linear->setup(linear, &st, &view), 0);
    const shmb_lookup_segment_t *entries = st.table.entries;
    assert_int_equal(tree->setup(tree, &st, &view), 0);
    assert_ptr_equal(st.table.entries, entries);
    linear->teardown(linear, &st);
    assert_true(tree->batch(tree, &st, pl.requests, REQUESTS) == pl.expected_sum);
    tree->teardown(tree, &st);
    assert_int_equal((int)st.table.n, 0);
    munmap(pl.local, N * SIZE);
}

/* A view lacking what a path needs, or contradicting itself, is refused and leaves nothing set up. */
static void test_setup_refuses(void **state)
{
    placement_t pl;
    place(&pl);
    shmb_path_state_t st;
    memset(&st, 0, sizeof(st));
    const shmb_path_t *mooncake = &shmb_path_table[SHMB_SYSTEM_MOONCAKE];
    const shmb_path_t *classic = &shmb_path_table[SHMB_SYSTEM_FLOWIPC_CLASSIC];
    const shmb_path_t *jemalloc = &shmb_path_table[SHMB_SYSTEM_FLOWIPC_JEMALLOC];
    const shmb_path_t *lower_bound = &shmb_path_table[SHMB_SYSTEMS + SHMB_LOOKUP_LOWER_BOUND];
    shmb_path_view_t view = view_of(&pl);
    view.shm_names = NULL;
    assert_int_equal(mooncake->setup(mooncake, &st, &view), -EINVAL);
    view = view_of(&pl);
    view.mooncake_ops.attach = NULL;
    assert_int_equal(mooncake->setup(mooncake, &st, &view), -EINVAL);
    assert_null(st.mooncake);
    view = view_of(&pl);
    view.pool_base = NULL;
    assert_int_equal(classic->setup(classic, &st, &view), -EINVAL);
    view = view_of(&pl);
    view.pool_bytes = 0;
    assert_int_equal(classic->setup(classic, &st, &view), -EINVAL);
    assert_null(st.pool_base);
    const uint32_t twice[N] = {7, 3, 7, 1};
    view = view_of(&pl);
    view.pool_ids = twice;
    assert_int_equal(jemalloc->setup(jemalloc, &st, &view), -EEXIST);
    view.n = 0;
    assert_int_equal(jemalloc->setup(jemalloc, &st, &view), -EINVAL);
    assert_null(st.repo);
    view = view_of(&pl);
    pl.segments[1].peer_base = pl.segments[0].peer_base + SIZE / 2; /* overlaps segment 0 */
    assert_int_equal(lower_bound->setup(lower_bound, &st, &view), -EINVAL);
    assert_int_equal(st.kernels, 0);
    assert_int_equal((int)st.table.n, 0);
    munmap(pl.local, N * SIZE);
}

/* flowipc_jemalloc under the pool ids the view gives, not the indexes. */
static void test_jemalloc_pool_ids(void **state)
{
    placement_t pl;
    place(&pl);
    const uint32_t ids[N] = {40, 30, 20, 10};
    shmb_path_view_t view = view_of(&pl);
    view.pool_ids = ids;
    shmb_path_state_t st;
    memset(&st, 0, sizeof(st));
    const shmb_path_t *jemalloc = &shmb_path_table[SHMB_SYSTEM_FLOWIPC_JEMALLOC];
    assert_int_equal(jemalloc->setup(jemalloc, &st, &view), 0);
    shmb_lookup_request_t r = {.id = 20, .offset = 128, .len = LEN};
    assert_ptr_equal(jemalloc->translate(jemalloc, &st, &r), pl.segments[2].local_base + 128);
    r.id = 2; /* an index, not an id */
    assert_null(jemalloc->translate(jemalloc, &st, &r));
    jemalloc->teardown(jemalloc, &st);
    munmap(pl.local, N * SIZE);
}

/* A transfer's use: one destination among N registrations, the others never mapped; one translation each. */
typedef struct transfer_view {
    unsigned char *dst;
    size_t index;
    int attaches;
} transfer_view_t;

static int attach_dst(void *ctx, size_t index, const char *shm_path, uint64_t length, void **local)
{
    transfer_view_t *t = ctx;
    (void)shm_path;
    if (index != t->index || length != SIZE)
        return -ENOENT;
    t->attaches++;
    *local = t->dst;
    return 0;
}

static void test_one_destination(void **state)
{
    static unsigned char dst[SIZE];
    transfer_view_t t = {dst, N / 2, 0};
    shmb_lookup_segment_t segments[N];
    const char *names[N];
    for (size_t i = 0; i < N; i++) {
        const uint64_t peer = SHMB_PATH_PEER_START + i * SIZE;
        segments[i] = (shmb_lookup_segment_t){peer, SIZE, i == t.index ? dst : (unsigned char *)(uintptr_t)peer};
        names[i] = i == t.index ? "/dst" : "/not_used";
    }
    const shmb_path_view_t view = {.segments = segments, .n = N, .shm_names = names,
                                   .mooncake_ops = {attach_dst, NULL, &t}, .pool_base = dst, .pool_bytes = SIZE};
    const shmb_lookup_request_t request = {.addr = segments[t.index].peer_base, .len = SIZE,
                                           .id = (uint32_t)t.index, .offset = 0, .pool_offset = 0};
    for (int s = 0; s < SHMB_SYSTEMS; s++) {
        const shmb_path_t *p = &shmb_path_table[s];
        shmb_path_state_t st;
        memset(&st, 0, sizeof(st));
        assert_int_equal(p->setup(p, &st, &view), 0);
        for (int i = 0; i < 3; i++)
            assert_ptr_equal(p->translate(p, &st, &request), dst);
        p->teardown(p, &st);
    }
    assert_int_equal(t.attaches, 1); /* mooncake attached dst on its first request only */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_by_kind),
        cmocka_unit_test(test_names_errors),
        cmocka_unit_test(test_kind_of),
        cmocka_unit_test(test_system),
        cmocka_unit_test(test_table_order),
        cmocka_unit_test(test_every_path_translates),
        cmocka_unit_test(test_kernels_share_the_table),
        cmocka_unit_test(test_setup_refuses),
        cmocka_unit_test(test_jemalloc_pool_ids),
        cmocka_unit_test(test_one_destination),
    };
    return shmb_test_run(tests, NULL, NULL);
}
