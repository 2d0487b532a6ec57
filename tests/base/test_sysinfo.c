#include <sched.h>
#include <sys/stat.h>

#include "helpers.h"

#include "shmbench/sysinfo.h"

static void put(const char *root, const char *path, const char *text)
{
    char full[512], dir[512];
    snprintf(full, sizeof(full), "%s%s", root, path);
    /* mkdir -p of the parent */
    snprintf(dir, sizeof(dir), "%s", full);
    for (char *p = dir + strlen(root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    }
    FILE *f = fopen(full, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_reads_a_fake_tree(void **state)
{
    char root[] = "/tmp/shmb_sysinfo_XXXXXX";
    assert_non_null(mkdtemp(root));
    put(root, "/proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Test CPU 9000\ncpu MHz\t\t: 3100.500\n\n"
        "processor\t: 1\nmodel name\t: Other\ncpu MHz\t\t: 1.0\n");
    put(root, "/proc/loadavg", "0.50 0.25 0.125 1/100 42\n");
    put(root, "/sys/devices/system/clocksource/clocksource0/current_clocksource", "hpet\n");
    put(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
    put(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
    put(root, "/sys/kernel/mm/transparent_hugepage/shmem_enabled",
        "always within_size advise [never] deny force\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index0/level", "1\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index0/size", "48K\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list", "0\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index1/level", "3\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index1/type", "Unified\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index1/size", "32768K\n");
    put(root, "/sys/devices/system/cpu/cpu0/cache/index1/shared_cpu_list", "0-3,8,10-11\n");

    shmb_sysinfo_t s;
    shmb_sysinfo_read_at(root, &s);
    assert_string_equal(s.cpu_model, "Test CPU 9000");
    assert_float_equal(s.mhz, 3100.5, 1e-9);
    assert_string_equal(s.clocksource, "hpet");
    assert_string_equal(s.governor, "powersave");
    assert_int_equal(s.scaling_enabled, 1);
    assert_string_equal(s.thp_enabled, "madvise");
    assert_string_equal(s.thp_shmem, "never");
    assert_float_equal(s.load_avg[2], 0.125, 1e-9);
    assert_int_equal(shmb_sysinfo_overloaded(&s), 0); /* 0.50 on at least one CPU */
    put(root, "/proc/loadavg", "512.5 0.25 0.125 1/100 42\n");
    shmb_sysinfo_read_at(root, &s);
    assert_int_equal(shmb_sysinfo_overloaded(&s), s.num_cpus < 512);
    s.load_avg[0] = s.num_cpus; /* as busy as it has CPUs: not over */
    assert_int_equal(shmb_sysinfo_overloaded(&s), 0);
    s.load_avg[0] = s.num_cpus + 0.01;
    assert_int_equal(shmb_sysinfo_overloaded(&s), 1);
    s.num_cpus = -1; /* unknown CPU count: no verdict */
    assert_int_equal(shmb_sysinfo_overloaded(&s), 0);
    assert_int_equal(s.num_caches, 2);
    assert_int_equal(s.caches[0].level, 1);
    assert_string_equal(s.caches[0].type, "Data");
    assert_int_equal(s.caches[0].size, 48 * 1024);
    assert_int_equal(s.caches[0].num_sharing, 1);
    assert_int_equal(s.caches[1].size, 32768 * 1024);
    assert_int_equal(s.caches[1].num_sharing, 7);
    assert_int_equal(s.shm_total, -1); /* no <root>/dev/shm */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void test_missing_sources_are_unknown(void **state)
{
    shmb_sysinfo_t s;
    shmb_sysinfo_read_at("/nonexistent_shmb_root", &s);
    assert_string_equal(s.cpu_model, "unknown");
    assert_float_equal(s.mhz, -1.0, 0.0);
    assert_string_equal(s.clocksource, "unknown");
    assert_string_equal(s.governor, "unknown");
    assert_int_equal(s.scaling_enabled, -1);
    assert_string_equal(s.thp_enabled, "unknown");
    assert_string_equal(s.thp_shmem, "unknown");
    assert_int_equal(s.num_caches, 0);
    assert_int_equal(s.shm_total, -1);
    assert_int_equal(s.shm_free, -1);
    assert_float_equal(s.load_avg[0], -1.0, 0.0);
    assert_int_equal(shmb_sysinfo_overloaded(&s), 0); /* unknown load */
    /* facts of the process itself are still there */
    assert_true(s.num_cpus >= 1);
    assert_string_not_equal(s.kernel, "unknown");
}

static void test_this_machine(void **state)
{
    shmb_sysinfo_t s;
    shmb_sysinfo_read(&s);
    assert_true(s.num_cpus >= 1);
    assert_true(strlen(s.glibc_version) > 0);
    if (access("/dev/shm", F_OK) == 0) {
        assert_true(s.shm_total > 0);
        assert_true(s.shm_free >= 0 && s.shm_free <= s.shm_total);
    }
}

static void test_parse_mode(void **state)
{
    const struct { const char *line, *mode; } cases[] = {
        {"always [madvise] never", "madvise"}, {"[always] never", "always"}, {"always never", "unknown"},
        {"broken [open", "unknown"},           {NULL, "unknown"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[32];
        shmb_sysinfo_parse_mode(cases[i].line, out, sizeof(out));
        assert_string_equal(out, cases[i].mode);
    }
}

static void test_parse_tunable(void **state)
{
    const char *text =
        "glibc.cpu.x86_rep_movsb_threshold: 0x840 (min: 0x200, max: 0xffffffffffffffff)\n"
        "glibc.cpu.x86_non_temporal_threshold: 0xf000000 (min: 0x4040, max: 0xfffffffffffffff)\n"
        "glibc.malloc.arena_max: 0x0 (min: 0x1, max: 0xffffffffffffffff)\n";
    assert_int_equal(shmb_sysinfo_parse_tunable(text, "glibc.cpu.x86_non_temporal_threshold"),
                     0xf000000);
    assert_int_equal(shmb_sysinfo_parse_tunable(text, "glibc.cpu.x86_rep_movsb_threshold"), 0x840);
    assert_int_equal(shmb_sysinfo_parse_tunable(text, "glibc.cpu.x86_rep_stosb_threshold"), -1);
    assert_int_equal(shmb_sysinfo_parse_tunable(text, "glibc.cpu.x86"), -1); /* no prefix match */
    assert_int_equal(shmb_sysinfo_parse_tunable("", "glibc.cpu.x86_non_temporal_threshold"), -1);
}

static void test_format_bytes(void **state)
{
    const struct { int64_t bytes; const char *text; } cases[] = {
        {12, "12 B"}, {768 * 1024, "768 KiB"}, {0x840, "2.1 KiB"}, {24LL << 30, "24 GiB"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[32];
        shmb_sysinfo_format_bytes(cases[i].bytes, out, sizeof(out));
        assert_string_equal(out, cases[i].text);
    }
}

static void test_pin_cpu(void **state)
{
    int cpus[CPU_SETSIZE];
    int n = shmb_sysinfo_allowed_cpus(cpus, CPU_SETSIZE);
    assert_true(n >= 1);
    assert_int_equal(shmb_sysinfo_pin_cpu(-1), -EINVAL);
    assert_int_equal(shmb_sysinfo_pin_cpu(100000), -EINVAL);
    assert_int_equal(shmb_sysinfo_pin_cpu(cpus[n - 1]), 0);
    /* pinned: this thread on that CPU, the process still allowed every CPU (as threads after --cpu see) */
    cpu_set_t mine;
    assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
    assert_int_equal(CPU_COUNT(&mine), 1);
    assert_true(CPU_ISSET(cpus[n - 1], &mine));
    int now[CPU_SETSIZE];
    assert_int_equal(shmb_sysinfo_allowed_cpus(now, CPU_SETSIZE), n);
    assert_memory_equal(now, cpus, (size_t)n * sizeof(int));
    assert_int_equal(shmb_sysinfo_pin_cpu(cpus[0]), 0); /* a second pin keeps the first snapshot */
    assert_int_equal(shmb_sysinfo_allowed_cpus(now, CPU_SETSIZE), n);
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], &all);
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
}

/* Thread i on the i-th allowed CPU from the first at or after cpu, wrapping; 0 when threads outnumber CPUs. */
static void test_plan_cpus(void **state)
{
    int allowed[CPU_SETSIZE];
    int n = shmb_sysinfo_allowed_cpus(allowed, CPU_SETSIZE);
    assert_true(n >= 1);
    int *cpus = calloc((size_t)n + 1, sizeof(int));
    assert_non_null(cpus);
    assert_int_equal(shmb_sysinfo_plan_cpus(-1, n, cpus), 1); /* from the first allowed */
    assert_memory_equal(cpus, allowed, (size_t)n * sizeof(int));
    /* from the last allowed: it, then wrapping to the first */
    assert_int_equal(shmb_sysinfo_plan_cpus(allowed[n - 1], n, cpus), 1);
    for (int i = 0; i < n; i++)
        assert_int_equal(cpus[i], allowed[(n - 1 + i) % n]);
    /* past the last allowed: wraps to the first */
    assert_int_equal(shmb_sysinfo_plan_cpus(allowed[n - 1] + 1, n, cpus), 1);
    assert_memory_equal(cpus, allowed, (size_t)n * sizeof(int));
    assert_int_equal(shmb_sysinfo_plan_cpus(allowed[n - 1] + 1, 1, cpus), 1);
    assert_int_equal(cpus[0], allowed[0]);
    /* more threads than CPUs: filled all the same, wrapping */
    cpus[n] = -9;
    assert_int_equal(shmb_sysinfo_plan_cpus(allowed[n - 1], n + 1, cpus), 0);
    assert_int_equal(cpus[0], allowed[n - 1]);
    for (int i = 1; i <= n; i++)
        assert_int_equal(cpus[i], allowed[(i - 1) % n]);
    cpus[0] = -9;
    assert_int_equal(shmb_sysinfo_plan_cpus(-1, 0, cpus), -EINVAL);
    assert_int_equal(shmb_sysinfo_plan_cpus(0, -1, cpus), -EINVAL);
    assert_int_equal(cpus[0], -9); /* untouched */
    free(cpus);
}

static void test_format_cpu_list(void **state)
{
    const struct {
        int cpus[8];
        int n;
        const char *want;
    } cases[] = {
        {{0}, 1, "0"},
        {{0, 1, 2, 3}, 4, "0-3"},
        {{2, 3, 6}, 3, "2-3,6"},
        {{1, 3, 5}, 3, "1,3,5"},
        {{0, 1, 4, 5, 6, 9}, 6, "0-1,4-6,9"},
        {{0}, 0, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        shmb_sysinfo_format_cpu_list(cases[i].cpus, cases[i].n, out, sizeof(out));
        assert_string_equal(out, cases[i].want);
    }
}

/* limit - usage (v2 and v1), the least over the cgroup and its parents. */
static void test_cgroup_memory(void **state)
{
    const struct {
        const char *what;
        const char *self_cgroup;   /* /proc/self/cgroup; NULL: absent */
        const char *files[6][2];   /* path below /sys/fs/cgroup, content */
        int64_t want;
    } cases[] = {
        {"limited leaf", "0::/a/b\n",
         {{"/a/b/memory.max", "1048576\n"}, {"/a/b/memory.current", "262144\n"}}, 786432},
        {"no limit anywhere", "0::/a/b\n",
         {{"/a/b/memory.max", "max\n"}, {"/a/b/memory.current", "262144\n"},
          {"/a/memory.max", "max\n"}, {"/a/memory.current", "1\n"}}, -1},
        {"parent is tighter", "0::/a/b\n",
         {{"/a/b/memory.max", "max\n"}, {"/a/b/memory.current", "100\n"},
          {"/a/memory.max", "5000\n"}, {"/a/memory.current", "4000\n"}}, 1000},
        {"limit reached", "0::/a\n",
         {{"/a/memory.max", "4096\n"}, {"/a/memory.current", "8192\n"}}, 0},
        {"namespace root", "0::/\n",
         {{"/memory.max", "65536\n"}, {"/memory.current", "4096\n"}}, 61440},
        {"cgroup v1 without v1 files", "4:memory:/x\n", {{"/x/memory.max", "1\n"}}, -1},
        {"cgroup v1, parent limited", "4:cpu,memory:/x/y\n",
         {{"/memory/x/y/memory.limit_in_bytes", "9223372036854771712\n"},
          {"/memory/x/y/memory.usage_in_bytes", "4096\n"},
          {"/memory/x/memory.limit_in_bytes", "65536\n"}, {"/memory/x/memory.usage_in_bytes", "8192\n"}}, 57344},
        {"cgroup v1 unlimited", "5:memory:/\n",
         {{"/memory/memory.limit_in_bytes", "9223372036854771712\n"}, {"/memory/memory.usage_in_bytes", "1\n"}}, -1},
        {"v1 line of another controller", "4:cpu:/x\n",
         {{"/memory/x/memory.limit_in_bytes", "100\n"}, {"/memory/x/memory.usage_in_bytes", "1\n"}}, -1},
        {"hybrid, v2 line last", "4:memory:/x\n0::/y\n",
         {{"/y/memory.max", "10000\n"}, {"/y/memory.current", "1\n"}}, 9999},
        {"no /proc/self/cgroup", NULL, {{"/memory.max", "1\n"}}, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char root[] = "/tmp/shmb_cgroup_XXXXXX";
        assert_non_null(mkdtemp(root));
        if (cases[i].self_cgroup)
            put(root, "/proc/self/cgroup", cases[i].self_cgroup);
        for (int k = 0; k < 6 && cases[i].files[k][0]; k++) {
            char path[256];
            snprintf(path, sizeof(path), "/sys/fs/cgroup%s", cases[i].files[k][0]);
            put(root, path, cases[i].files[k][1]);
        }
        int64_t got = shmb_sysinfo_cgroup_memory_free_at(root);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        if (got != cases[i].want)
            fail_msg("%s: %lld, expected %lld", cases[i].what, (long long)got, (long long)cases[i].want);
    }
    /* this machine: a number or "no limit", never garbage */
    assert_true(shmb_sysinfo_cgroup_memory_free() >= -1);
}

/* The pool of a size from a fake tree: counts as written, reserved taken off free, no pool, not a number. */
static void test_hugepages(void **state)
{
    char root[] = "/tmp/shmb_sysinfo_XXXXXX";
    assert_non_null(mkdtemp(root));
    const char *pool = "/sys/kernel/mm/hugepages/hugepages-2048kB";
    char path[128], cmd[600];
    snprintf(path, sizeof(path), "%s/nr_hugepages", pool);
    put(root, path, "8\n");
    snprintf(path, sizeof(path), "%s/free_hugepages", pool);
    put(root, path, "3\n");
    int64_t total = -7, free_pages = -7;
    assert_int_equal(shmb_sysinfo_hugepages_at(root, 2u << 20, &total, &free_pages), 0);
    assert_int_equal(total, 8);
    assert_int_equal(free_pages, 3);
    /* pages another mapping reserved (not yet touched) are not free */
    snprintf(path, sizeof(path), "%s/resv_hugepages", pool);
    put(root, path, "2\n");
    assert_int_equal(shmb_sysinfo_hugepages_at(root, 2u << 20, &total, &free_pages), 0);
    assert_int_equal(free_pages, 1);
    put(root, path, "5\n"); /* a moment between the two reads: never below 0 */
    assert_int_equal(shmb_sysinfo_hugepages_at(root, 2u << 20, &total, &free_pages), 0);
    assert_int_equal(free_pages, 0);
    snprintf(path, sizeof(path), "%s/free_hugepages", pool);
    total = free_pages = -7;
    assert_int_equal(shmb_sysinfo_hugepages_at(root, 1u << 30, &total, &free_pages), -ENOENT);
    assert_int_equal(total, -7); /* untouched */
    put(root, path, "none\n");
    assert_int_equal(shmb_sysinfo_hugepages_at(root, 2u << 20, &total, &free_pages), -EIO);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* This process's mappings: a new one counts, and the limit is above them. */
static void test_map_count(void **state)
{
    int64_t before = shmb_sysinfo_map_count();
    assert_true(before > 0);
    void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    int64_t after = shmb_sysinfo_map_count();
    munmap(p, 4096);
    assert_true(after >= before); /* merged with a neighbour, or one more */
    int64_t max = shmb_sysinfo_max_map_count();
    if (max >= 0)
        assert_true(max > after);
    int64_t avail = shmb_sysinfo_mem_available();
    assert_true(avail == -1 || avail > 0); /* this process runs in some of it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hugepages),
        cmocka_unit_test(test_map_count),
        cmocka_unit_test(test_reads_a_fake_tree),
        cmocka_unit_test(test_missing_sources_are_unknown),
        cmocka_unit_test(test_this_machine),
        cmocka_unit_test(test_parse_mode),
        cmocka_unit_test(test_parse_tunable),
        cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_pin_cpu),
        cmocka_unit_test(test_plan_cpus),
        cmocka_unit_test(test_format_cpu_list),
        cmocka_unit_test(test_cgroup_memory),
    };
    return shmb_test_run(tests, NULL, NULL);
}
