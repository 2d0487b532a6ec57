#include <signal.h>

#include "helpers.h"

#include "shmbench/backing.h"
#include "shmbench/error.h"
#include "shmbench/sysinfo.h"

#define MB (1ull << 20)

static shmb_backing_config_t config(shmb_backing_kind_t kind)
{
    shmb_backing_config_t cfg = {kind, shmb_test_prefix(), 0};
    return cfg;
}

#define NOT_OURS "the machine's huge page lock is not ours (another suite holds it, or it cannot be opened)"

/* Whether this test may use the huge page pool and shmem_enabled (shmb_test_pool_lock, taken in main). */
static int pool_ours;

/* Whether this kind can run here: hugetlb needs the pool and `pages` free huge pages. */
static int available(shmb_backing_kind_t kind, int64_t pages)
{
    return kind != SHMB_BACKING_HUGETLB || (pool_ours && shmb_test_huge_free() >= pages);
}

/* A word per 4 KiB page, different per page and per seed. */
static uint64_t word(size_t off, uint64_t seed)
{
    return (off >> 12) * 0x9e3779b97f4a7c15ull + seed;
}

static void fill(void *addr, size_t size, uint64_t seed)
{
    for (size_t off = 0; off < size; off += 4096)
        *(uint64_t *)((char *)addr + off) = word(off, seed);
}

/* 1 when every page of addr holds fill's pattern for seed. */
static int holds(const void *addr, size_t size, uint64_t seed)
{
    for (size_t off = 0; off < size; off += 4096)
        if (*(const uint64_t *)((const char *)addr + off) != word(off, seed))
            return 0;
    return 1;
}

static void test_names(void **state)
{
    for (int k = 0; k < SHMB_BACKING_KINDS; k++) {
        shmb_backing_kind_t got = SHMB_BACKING_KINDS;
        assert_int_equal(shmb_backing_parse(shmb_backing_name((shmb_backing_kind_t)k), &got), 0);
        assert_int_equal(got, k);
    }
    for (int h = 0; h < SHMB_PREFAULT_KINDS; h++) {
        shmb_prefault_t got = SHMB_PREFAULT_KINDS;
        assert_int_equal(shmb_prefault_parse(shmb_prefault_name((shmb_prefault_t)h), &got), 0);
        assert_int_equal(got, h);
    }
    shmb_backing_kind_t kind = SHMB_BACKING_THP;
    shmb_prefault_t how = SHMB_PREFAULT_TOUCH;
    assert_int_equal(shmb_backing_parse("TMPFS", &kind), -EINVAL);
    assert_int_equal(shmb_backing_parse(NULL, &kind), -EINVAL);
    assert_int_equal(shmb_prefault_parse("populate_", &how), -EINVAL);
    assert_int_equal(kind, SHMB_BACKING_THP); /* untouched */
    assert_int_equal(how, SHMB_PREFAULT_TOUCH);
    assert_null(shmb_backing_name(SHMB_BACKING_KINDS));
    assert_null(shmb_prefault_name(SHMB_PREFAULT_KINDS));
}

/* Each backing's page; sizes rounded up to it; 0, overflow and a bad huge page size refused. */
static void test_page_size_and_round(void **state)
{
    const struct {
        shmb_backing_kind_t kind;
        uint64_t huge, page;
    } cases[] = {
        {SHMB_BACKING_TMPFS, 0, 4096},
        {SHMB_BACKING_MEMFD, SHMB_BACKING_HUGE_1GB, 4096}, /* unused there */
        {SHMB_BACKING_THP, 0, SHMB_BACKING_HUGE_2MB},
        {SHMB_BACKING_HUGETLB, 0, SHMB_BACKING_HUGE_2MB},
        {SHMB_BACKING_HUGETLB, SHMB_BACKING_HUGE_1GB, SHMB_BACKING_HUGE_1GB},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_backing_config_t cfg = {cases[i].kind, "/x_", cases[i].huge};
        uint64_t page = 0, r = 0;
        assert_int_equal(shmb_backing_page_size(&cfg, &page), 0);
        assert_int_equal(page, cases[i].page);
        assert_int_equal(shmb_backing_round(&cfg, 1, &r), 0);
        assert_int_equal(r, page);
        assert_int_equal(shmb_backing_round(&cfg, page, &r), 0);
        assert_int_equal(r, page);
        assert_int_equal(shmb_backing_round(&cfg, page + 1, &r), 0);
        assert_int_equal(r, 2 * page);
        r = 7;
        assert_int_equal(shmb_backing_round(&cfg, 0, &r), -EINVAL);
        assert_int_equal(shmb_backing_round(&cfg, UINT64_MAX - 1, &r), -EOVERFLOW);
        assert_int_equal(r, 7);
    }
    shmb_backing_config_t bad = {SHMB_BACKING_HUGETLB, "/x_", 4 * MB};
    uint64_t page = 0;
    assert_int_equal(shmb_backing_page_size(&bad, &page), -EINVAL);
    bad.kind = SHMB_BACKING_KINDS;
    assert_int_equal(shmb_backing_page_size(&bad, &page), -EINVAL);
    assert_int_equal(shmb_backing_page_size(NULL, &page), -EINVAL);
}

/* Every backing with every prefault: ready, what it holds, contents read back through a second
 * mapping, nothing left (no name, no huge page of this process's). */
static void ready_one(shmb_backing_kind_t kind, shmb_prefault_t how, int threads)
{
    shmb_backing_config_t cfg = config(kind);
    int64_t huge_before = shmb_test_huge_held(0);
    shmb_backing_t b;
    shmb_backing_ready_t r;
    assert_int_equal(shmb_backing_ready(&b, &cfg, 4 * MB + 1, how, threads, &r), 0);
    uint64_t expect = kind == SHMB_BACKING_TMPFS || kind == SHMB_BACKING_MEMFD ? 4 * MB + 4096 : 6 * MB;
    assert_int_equal(b.seg.size, expect);
    assert_int_equal(shmb_test_count_ours(NULL, 0), kind == SHMB_BACKING_TMPFS);
    assert_true(r.total_ns >= r.create_ns + r.map_ns);
    int prefaulted = how == SHMB_PREFAULT_TOUCH || how == SHMB_PREFAULT_POPULATE || how == SHMB_PREFAULT_POPULATE_WRITE;
    if (prefaulted)
        assert_int_equal(r.residency.resident_bytes, b.seg.size);
    if (how == SHMB_PREFAULT_NONE)
        assert_int_equal(r.residency.resident_bytes, 0);
    if (how == SHMB_PREFAULT_FALLOCATE && kind != SHMB_BACKING_HUGETLB)
        assert_int_equal(r.residency.allocated_bytes, b.seg.size);
    if (kind == SHMB_BACKING_HUGETLB)
        assert_int_equal(r.residency.huge_bytes, r.residency.resident_bytes);
    /* the pool is this process's: mapped, and its memfd open */
    assert_int_equal(shmb_test_huge_held(0) - huge_before, kind == SHMB_BACKING_HUGETLB ? 2 * (int64_t)b.seg.size : 0);
    if (kind == SHMB_BACKING_TMPFS || kind == SHMB_BACKING_MEMFD)
        assert_int_equal(r.residency.huge_bytes, 0);
    fill(b.seg.addr, b.seg.size, (uint64_t)how);
    void *second = mmap(NULL, b.seg.size, PROT_READ, MAP_SHARED, b.seg.fd, 0);
    assert_true(second != MAP_FAILED);
    assert_true(holds(second, b.seg.size, (uint64_t)how));
    munmap(second, b.seg.size);
    assert_int_equal(shmb_backing_destroy(&b), 0);
    assert_int_equal(shmb_backing_destroy(&b), 0); /* twice: nothing left to do */
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    assert_int_equal(shmb_test_huge_held(0), huge_before);
}

static const shmb_backing_kind_t kinds[SHMB_BACKING_KINDS] = {SHMB_BACKING_TMPFS, SHMB_BACKING_MEMFD,
                                                             SHMB_BACKING_THP, SHMB_BACKING_HUGETLB};

/* The case's backing (its prestate), or a skip saying why it cannot run: hugetlb needs `pages` free huge pages. */
static shmb_backing_kind_t kind_of(void **state, int64_t pages)
{
    shmb_backing_kind_t kind = *(const shmb_backing_kind_t *)*state;
    if (kind == SHMB_BACKING_HUGETLB && !pool_ours)
        shmb_test_skip("hugetlb: " NOT_OURS);
    if (!available(kind, pages))
        shmb_test_skip("hugetlb: too few free huge pages of 2 MiB (tests/cli/cli_backing.sh reserves them)");
    return kind;
}

static void test_every_prefault(void **state)
{
    shmb_backing_kind_t kind = kind_of(state, 3);
    for (int h = 0; h < SHMB_PREFAULT_KINDS; h++)
        for (int threads = 1; threads <= 3; threads += 2)
            ready_one(kind, (shmb_prefault_t)h, threads);
}

/* A counter of /proc/vmstat; -1 when absent. */
static long long vmstat(const char *name)
{
    FILE *f = fopen("/proc/vmstat", "r");
    char key[64];
    long long v, got = -1;
    while (f && got < 0 && fscanf(f, "%63s %lld", key, &v) == 2)
        if (strcmp(key, name) == 0)
            got = v;
    if (f)
        fclose(f);
    return got;
}

/* thp: the grant read back: all huge under advise, always, within_size (unless fallback grew), none else. */
static void test_thp_granted_is_read_back(void **state)
{
    shmb_sysinfo_t sys;
    shmb_sysinfo_read(&sys);
    int allowed = strcmp(sys.thp_shmem, "advise") == 0 || strcmp(sys.thp_shmem, "always") == 0 ||
                  strcmp(sys.thp_shmem, "within_size") == 0 || strcmp(sys.thp_shmem, "force") == 0;
    int refused = strcmp(sys.thp_shmem, "never") == 0 || strcmp(sys.thp_shmem, "deny") == 0;
    if (!allowed && !refused)
        shmb_test_skip("shmem_enabled unknown");
    if (!pool_ours)
        shmb_test_skip("shmem_enabled may change meanwhile: " NOT_OURS);
    shmb_backing_config_t cfg = config(SHMB_BACKING_THP);
    shmb_backing_t b;
    shmb_backing_ready_t r;
    long long fallback = vmstat("thp_file_fallback");
    assert_int_equal(shmb_backing_ready(&b, &cfg, 8 * MB, SHMB_PREFAULT_TOUCH, 1, &r), 0);
    assert_int_equal((uintptr_t)b.seg.addr % SHMB_BACKING_HUGE_2MB, 0);
    assert_int_equal(r.residency.resident_bytes, 8 * MB);
    if (allowed && r.residency.huge_bytes < 8 * MB) {
        assert_true(vmstat("thp_file_fallback") > fallback); /* the kernel said it fell back */
        assert_true(r.faults > 4);
    } else if (allowed) {
        assert_int_equal(r.residency.huge_bytes, 8 * MB);
        assert_true(r.faults < 64); /* 4 huge faults, not 2048 small ones */
    } else {
        assert_int_equal(r.residency.huge_bytes, 0);
        assert_true(r.faults >= 2048);
    }
    assert_int_equal(shmb_backing_destroy(&b), 0);
}

/* Refused before anything exists: bad sizes, configs and call orders. */
static void test_errors(void **state)
{
    shmb_backing_config_t cfg = config(SHMB_BACKING_MEMFD);
    shmb_backing_t b;
    memset(&b, 0x5a, sizeof(b));
    assert_int_equal(shmb_backing_create(&b, &cfg, 0, NULL), -EINVAL);
    assert_int_equal(b.seg.fd, 0x5a5a5a5a); /* untouched */
    shmb_backing_config_t bad = {SHMB_BACKING_HUGETLB, shmb_test_prefix(), 3 * MB};
    assert_int_equal(shmb_backing_create(&b, &bad, MB, NULL), -EINVAL);
    shmb_backing_config_t badprefix = {SHMB_BACKING_TMPFS, "no_slash", 0};
    assert_int_equal(shmb_backing_create(&b, &badprefix, MB, NULL), -EINVAL);
    assert_int_equal(shmb_backing_create(&b, &cfg, MB, NULL), 0);
    assert_int_equal(shmb_backing_prefault(&b, SHMB_PREFAULT_TOUCH, 1), -EINVAL); /* not mapped */
    assert_int_equal(shmb_backing_map(&b, 0, NULL), 0);
    assert_int_equal(shmb_backing_map(&b, 0, NULL), -EINVAL); /* twice */
    assert_int_equal(shmb_backing_prefault(&b, SHMB_PREFAULT_TOUCH, 0), -EINVAL);
    assert_int_equal(shmb_backing_prefault(&b, SHMB_PREFAULT_TOUCH, SHMB_BACKING_MAX_THREADS + 1), -EINVAL);
    assert_int_equal(shmb_backing_prefault(&b, SHMB_PREFAULT_KINDS, 1), -EINVAL);
    assert_int_equal(shmb_backing_fallocate(&b, 0), -EINVAL);
    assert_int_equal(shmb_backing_destroy(&b), 0);
    shmb_backing_ready_t r;
    assert_int_equal(shmb_backing_ready(&b, &cfg, MB, SHMB_PREFAULT_TOUCH, 0, &r), -EINVAL);
    assert_int_equal(shmb_backing_residency(&b, &r.residency), -EINVAL); /* destroyed */
    assert_int_equal(shmb_backing_destroy(NULL), -EINVAL);
}

/* ---- a full backing ---- */

/* An 8 MiB tmpfs pool in a 4 MiB tmpfs, each method: the kernel's answer, never a crash, nothing left. */
static int full_tmpfs(void *arg)
{
    (void)arg;
    if (shmb_segment_install_signal_cleanup() != 0)
        return 1;
    shmb_backing_config_t cfg = config(SHMB_BACKING_TMPFS);
    const struct {
        shmb_prefault_t how;
        int ret;
    } cases[] = {
        {SHMB_PREFAULT_NONE, 0},           {SHMB_PREFAULT_TOUCH, -ENOSPC},
        {SHMB_PREFAULT_POPULATE, 0},       {SHMB_PREFAULT_POPULATE_WRITE, -EFAULT},
        {SHMB_PREFAULT_FALLOCATE, -ENOSPC},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_backing_t b;
        shmb_backing_ready_t r;
        int ret = shmb_backing_ready(&b, &cfg, 8 * MB, cases[i].how, 2, &r);
        if (cases[i].how == SHMB_PREFAULT_POPULATE_WRITE && ret == -ENOMEM)
            ret = -EFAULT; /* either, as the kernel version reports it */
        if (ret != cases[i].ret)
            return 10 + (int)i;
        if (ret == 0 && cases[i].how == SHMB_PREFAULT_POPULATE && r.residency.resident_bytes >= 8 * MB)
            return 20; /* MAP_POPULATE fails silently: less resident */
        if (ret == 0 && shmb_segment_first_write(b.seg.addr, b.seg.size) != -ENOSPC)
            return 30 + (int)i; /* a first write meets the full backing as -ENOSPC */
        if (ret == 0 && shmb_backing_destroy(&b) != 0)
            return 40 + (int)i;
        if (shmb_test_count_ours(NULL, 0) != 0)
            return 50 + (int)i;
    }
    return 0;
}

static void test_full_tmpfs(void **state)
{
    shmb_test_in_tmpfs(4096, full_tmpfs, NULL, "an 8 MiB pool in a 4 MiB /dev/shm");
}

/* hugetlb beyond the whole pool fails at mmap (-ENOMEM) or fallocate (-ENOSPC), keeping no page. */
static void test_exhausted_huge_pages(void **state)
{
    int64_t pages = shmb_test_huge_beyond(), before = shmb_test_huge_held(0);
    if (pages < 0)
        shmb_test_skip("no 2 MiB huge page pool");
    if (!pool_ours)
        shmb_test_skip(NOT_OURS);
    shmb_backing_config_t cfg = config(SHMB_BACKING_HUGETLB);
    for (int h = 0; h < SHMB_PREFAULT_KINDS; h++) {
        shmb_backing_t b;
        shmb_backing_ready_t r;
        int ret = shmb_backing_ready(&b, &cfg, (uint64_t)pages * SHMB_BACKING_HUGE_2MB, (shmb_prefault_t)h, 1, &r);
        assert_int_equal(ret, h == SHMB_PREFAULT_FALLOCATE ? -ENOSPC : -ENOMEM);
        assert_string_equal(shmb_error_last()->call, h == SHMB_PREFAULT_FALLOCATE ? "fallocate" : "mmap");
        assert_int_equal(shmb_test_huge_held(0), before);
    }
}

/* ---- signals and peers ---- */

/* SIGTERM midway through making a pool ready: the tmpfs name unlinked, memfd pages gone with the process. */
static void test_signal_midway(void **state)
{
    shmb_backing_kind_t k = kind_of(state, 2);
    int64_t huge_before = shmb_test_huge_held(0);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        shmb_backing_config_t cfg = config(k);
        shmb_backing_t b;
        shmb_backing_ready_t r;
        if (shmb_segment_install_signal_cleanup() != 0 ||
            shmb_backing_ready(&b, &cfg, 4 * MB, SHMB_PREFAULT_TOUCH, 1, &r) != 0)
            _exit(1);
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    assert_int_equal(shmb_test_count_ours(NULL, 0), k == SHMB_BACKING_TMPFS);
    /* the child's pool in its own mappings and descriptors */
    assert_int_equal(shmb_test_huge_held(pid), k == SHMB_BACKING_HUGETLB ? 8 * (int64_t)MB : 0);
    kill(pid, SIGTERM);
    shmb_test_reap_signaled(pid, SIGTERM);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    assert_int_equal(shmb_test_huge_held(0), huge_before);
}

/* A forked peer maps the sent backing, answers, is SIGKILLed: the answer, then -EPIPE; nothing left. */
static void peer_round(shmb_backing_kind_t kind)
{
    shmb_backing_config_t cfg = config(kind);
    shmb_backing_t b;
    shmb_backing_ready_t r;
    assert_int_equal(shmb_backing_ready(&b, &cfg, 4 * MB, SHMB_PREFAULT_POPULATE_WRITE, 1, &r), 0);
    fill(b.seg.addr, b.seg.size, 1);
    shmb_channel_t mine, theirs;
    pid_t pid = shmb_test_fork_pair(&theirs, &mine);
    if (pid == 0) {
        shmb_backing_t got;
        if (shmb_backing_receive(&got, &theirs) != 0 || got.owner || got.kind != kind ||
            got.seg.size != b.seg.size || shmb_backing_map(&got, 0, NULL) != 0)
            _exit(1);
        if (!holds(got.seg.addr, got.seg.size, 1))
            _exit(2);
        fill(got.seg.addr, got.seg.size, 2);
        if (shmb_channel_send(&theirs, "done", 4) != 0)
            _exit(3);
        raise(SIGKILL);
    }
    assert_int_equal(shmb_backing_send(&b, &mine), 0);
    char buf[8];
    size_t len = 0;
    assert_int_equal(shmb_channel_recv(&mine, buf, sizeof(buf), &len), 0);
    shmb_test_reap_signaled(pid, SIGKILL);
    assert_int_equal(shmb_channel_recv(&mine, buf, sizeof(buf), &len), -EPIPE);
    assert_true(holds(b.seg.addr, b.seg.size, 2));
    assert_int_equal(shmb_backing_send(&b, &mine), -EPIPE);
    shmb_channel_close(&mine);
    assert_int_equal(shmb_backing_destroy(&b), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

static void test_peer_dies_midway(void **state)
{
    shmb_backing_kind_t kind = kind_of(state, 2);
    int64_t before = shmb_test_huge_held(0);
    peer_round(kind);
    assert_int_equal(shmb_test_huge_held(0), before);
}

/* Owner dead with its memfd in flight: the receiver gets it and its pages; dead before sending: -EPIPE. */
static void test_owner_dies(void **state)
{
    for (int sends = 0; sends <= 1; sends++) {
        shmb_channel_t mine, theirs;
        pid_t pid = shmb_test_fork_pair(&theirs, &mine);
        if (pid == 0) {
            shmb_backing_config_t cfg = config(SHMB_BACKING_MEMFD);
            shmb_backing_t b;
            shmb_backing_ready_t r;
            if (sends && (shmb_backing_ready(&b, &cfg, MB, SHMB_PREFAULT_TOUCH, 1, &r) != 0 ||
                          (fill(b.seg.addr, b.seg.size, 3), shmb_backing_send(&b, &theirs)) != 0))
                _exit(1);
            raise(SIGKILL);
        }
        shmb_test_reap_signaled(pid, 0);
        shmb_backing_t got;
        if (!sends) {
            assert_int_equal(shmb_backing_receive(&got, &mine), -EPIPE);
        } else {
            assert_int_equal(shmb_backing_receive(&got, &mine), 0);
            assert_int_equal(shmb_backing_map(&got, 0, NULL), 0);
            assert_true(holds(got.seg.addr, got.seg.size, 3));
            assert_int_equal(shmb_backing_destroy(&got), 0);
        }
        shmb_channel_close(&mine);
    }
}

/* Not a backing: -EPROTO, its descriptor closed (junk, memfd without descriptor, tmpfs with one, odd size). */
static void test_malformed_messages(void **state)
{
    shmb_backing_config_t cfg = config(SHMB_BACKING_MEMFD);
    shmb_backing_t b;
    assert_int_equal(shmb_backing_create(&b, &cfg, MB, NULL), 0);
    shmb_channel_t a, c;
    assert_int_equal(shmb_channel_pair(&a, &c), 0);
    int before = shmb_test_open_fds();
    shmb_backing_t got;
    assert_int_equal(shmb_channel_send_fd(&a, "junk", 4, b.seg.fd), 0);
    assert_int_equal(shmb_backing_receive(&got, &c), -EPROTO);
    assert_int_equal(shmb_test_open_fds(), before);
    /* a real message, its descriptor stripped by a plain receive and resent without */
    assert_int_equal(shmb_backing_send(&b, &a), 0);
    char raw[SHMB_CHANNEL_MSG_MAX];
    size_t len = 0;
    assert_int_equal(shmb_channel_recv(&c, raw, sizeof(raw), &len), 0);
    assert_int_equal(shmb_channel_send(&a, raw, len), 0);
    assert_int_equal(shmb_backing_receive(&got, &c), -EPROTO);
    /* the same bytes with a descriptor, but a size of half a page */
    uint64_t size;
    memcpy(&size, raw + 8, sizeof(size));
    assert_int_equal(size, MB);
    size = MB + 2048;
    memcpy(raw + 8, &size, sizeof(size));
    assert_int_equal(shmb_channel_send_fd(&a, raw, len, b.seg.fd), 0);
    assert_int_equal(shmb_backing_receive(&got, &c), -EPROTO);
    assert_int_equal(shmb_test_open_fds(), before);
    shmb_channel_close(&a);
    shmb_channel_close(&c);
    assert_int_equal(shmb_backing_destroy(&b), 0);
}

/* tmpfs crosses by name: the receiver opens it, never unlinks it. */
static void test_tmpfs_by_name(void **state)
{
    shmb_backing_config_t cfg = config(SHMB_BACKING_TMPFS);
    shmb_backing_t b, got;
    assert_int_equal(shmb_backing_create(&b, &cfg, MB, NULL), 0);
    assert_int_equal(shmb_backing_map(&b, 0, NULL), 0);
    fill(b.seg.addr, b.seg.size, 4);
    shmb_channel_t a, c;
    assert_int_equal(shmb_channel_pair(&a, &c), 0);
    assert_int_equal(shmb_backing_send(&b, &a), 0);
    assert_int_equal(shmb_backing_receive(&got, &c), 0);
    assert_string_equal(got.seg.name, b.seg.name);
    assert_int_equal(got.owner, 0);
    assert_int_equal(shmb_backing_map(&got, 0, NULL), 0);
    assert_true(holds(got.seg.addr, got.seg.size, 4));
    assert_int_equal(shmb_backing_destroy(&got), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 1); /* still the owner's */
    assert_int_equal(shmb_backing_destroy(&b), 0);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    /* gone before the receiver opens it: shm_open's error */
    assert_int_equal(shmb_backing_create(&b, &cfg, MB, NULL), 0);
    assert_int_equal(shmb_backing_send(&b, &a), 0);
    assert_int_equal(shmb_backing_destroy(&b), 0);
    assert_int_equal(shmb_backing_receive(&got, &c), -ENOENT);
    shmb_channel_close(&a);
    shmb_channel_close(&c);
}

int main(void)
{
    shmb_test_prefix_init("/shmb_test_backing_");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_page_size_and_round),
#define EACH_KIND(test)                                                                            \
    cmocka_unit_test_prestate(test, (void *)&kinds[0]), cmocka_unit_test_prestate(test, (void *)&kinds[1]), \
        cmocka_unit_test_prestate(test, (void *)&kinds[2]), cmocka_unit_test_prestate(test, (void *)&kinds[3])
        EACH_KIND(test_every_prefault),
        cmocka_unit_test(test_thp_granted_is_read_back),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_full_tmpfs),
        cmocka_unit_test(test_exhausted_huge_pages),
        EACH_KIND(test_signal_midway),
        EACH_KIND(test_peer_dies_midway),
        cmocka_unit_test(test_owner_dies),
        cmocka_unit_test(test_malformed_messages),
        cmocka_unit_test(test_tmpfs_by_name),
    };
    if (shmb_segment_install_signal_cleanup() != 0)
        return 1;
    pool_ours = shmb_test_pool_lock(60);
    return shmb_test_run(tests, NULL, NULL);
}
