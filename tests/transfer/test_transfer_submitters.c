/* Submitters (cfg->submitters): each writes its own part of dst over the system's one translation
 * and engine; paired runs give rows threads:N; refused where it does not apply. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "copier_fixture.h"

#include "shmbench/copy.h"
#include "shmbench/segment.h"
#include "shmbench/sysinfo.h"
#include "transfer/transfer_internal.h"

#include "base/notes_internal.h"

#define PREFIX shmb_test_prefix()
#define STRIDE 16384 /* submitter 1's part of dst starts here */
#define BYTES (2 * STRIDE)

static shmb_transfer_config_t small(void)
{
    shmb_transfer_config_t c = shmb_test_transfer_config();
    c.num_segments = 10;
    return c;
}

/* dst[at, at + 4096) holds src's first 4 KB, and the byte after it is poison. */
static void holds_src(const unsigned char *dst, size_t at)
{
    size_t bad;
    assert_int_equal(shmb_copy_verify(dst + at, 4096, &bad), 0);
    assert_int_equal(dst[at + 4096], SHMB_TRANSFER_POISON);
}

/* Submitters 0 and 1 write their own parts, no miss; naming or expecting another's part fails (-EPROTO). */
static void test_own_destinations(void **state)
{
    const shmb_system_t systems[] = {SHMB_SYSTEM_MOONCAKE, SHMB_SYSTEM_FLOWIPC_CLASSIC};
    char why[256] = "";
    for (size_t k = 0; k < sizeof(systems) / sizeof(systems[0]); k++) {
        shmb_transfer_config_t c = small();
        c.translate = 1;
        c.system = systems[k];
        shmb_transfer_run_t r, sub;
        shmb_test_copier_up(&r, &c, 4096, BYTES, why, sizeof(why));
        shmb_copy_fill_pattern(r.src.addr, 4096);
        assert_int_equal(shmb_transfer_submitter_start(&sub, &r, STRIDE), 0);
        unsigned char *dst = r.dst.addr;
        memset(dst, SHMB_TRANSFER_POISON, BYTES);
        uint64_t done;
        for (int part = SHMB_TRANSFER_TRANSLATE; part <= SHMB_TRANSFER_REQUEST; part++) {
            assert_int_equal(shmb_transfer_bench_copy(&r, (shmb_transfer_part_t)part, SHMB_COPY_MEMCPY, 4096, 0, &done), 0);
            assert_int_equal(shmb_transfer_bench_copy(&sub, (shmb_transfer_part_t)part, SHMB_COPY_MEMCPY, 4096, 0, &done), 0);
        }
        assert_int_equal(r.translation.missed, 0);
        assert_int_equal(sub.translation.missed, 0);
        holds_src(dst, 0);
        holds_src(dst, STRIDE);
        assert_int_equal(dst[STRIDE - 1], SHMB_TRANSFER_POISON);
        assert_int_equal(shmb_transfer_bench_check(&sub, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096), 0);
        assert_int_equal(shmb_transfer_bench_check(&r, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096), 0);
        /* planted: submitter 1's requests name submitter 0's part */
        sub.translation.offset = 0;
        assert_int_equal(shmb_transfer_bench_check(&sub, SHMB_TRANSFER_REQUEST, SHMB_COPY_MEMCPY, 4096), -EPROTO);
        assert_non_null(strstr(why, "did not give its address"));
        /* planted: submitter 1 expects submitter 0's destination */
        shmb_transfer_submitter_stop(&sub);
        assert_int_equal(shmb_transfer_submitter_start(&sub, &r, STRIDE), 0);
        sub.dst.addr = r.dst.addr;
        assert_int_equal(shmb_transfer_bench_check(&sub, SHMB_TRANSFER_TRANSLATE, SHMB_COPY_MEMCPY, 4096), -EPROTO);
        shmb_transfer_submitter_stop(&sub);
        shmb_test_copier_down(&r);
    }
}

/* Paired with two submitters: rows .../threads:2/... with ratio rows, the copy row at 1; all verified. */
static void test_paired_rows(void **state)
{
    shmb_transfer_config_t c = small();
    c.verify = 1;
    c.submitters = 2;
    shmb_test_transfer_pair(&c, SHMB_SYSTEM_FLOWIPC_CLASSIC);
    shmb_rows_t rows = shmb_test_transfer_rows(&c);
    assert_int_equal(rows.n, 5 + 5 + 1 + 5);
    shmb_test_assert_row_name("shm_transfer", &rows.v[0],
                              "shm_transfer/request_path/size_kb:4/threads:2/system:mooncake");
    shmb_test_assert_row_name("shm_transfer", &rows.v[7],
                              "shm_transfer/translate/size_kb:4/threads:2/system:mooncake_control");
    shmb_test_assert_row_name("shm_transfer", &rows.v[10], "shm_transfer/memcpy/size_kb:4");
    shmb_test_assert_row_name("shm_transfer", &rows.v[14],
                              "shm_transfer/request/size_kb:4/threads:2/system:flowipc_classic/vs:mooncake");
    for (size_t i = 0; i < rows.n; i++) {
        assert_int_equal(rows.v[i].threads, i == 10 ? 1 : 2);
        assert_null(strstr(rows.v[i].system, "jemalloc"));
    }
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* This process's children (zombies too), from /proc's ppid fields. */
static int children(pid_t *pids, int cap)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], buf[512], state;
        int ppid;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        const size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *end = strrchr(buf, ')'); /* after the command's name, which may hold anything */
        if (end && sscanf(end + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid() && n++ < cap)
            pids[n - 1] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    return n;
}

/* A thread that keeps the most children seen at once and the CPU each was pinned to (-1: several). */
enum { WATCHED = 8 };
typedef struct watch {
    pthread_t thread;
    atomic_int stop;
    int most, seen;
    pid_t pid[WATCHED];
    int cpu[WATCHED];
} watch_t;

static void pinned(watch_t *w, pid_t pid)
{
    int i = 0;
    while (i < w->seen && w->pid[i] != pid)
        i++;
    cpu_set_t set;
    if (i == WATCHED || sched_getaffinity(pid, sizeof(set), &set) != 0)
        return;
    w->seen += i == w->seen;
    w->pid[i] = pid;
    w->cpu[i] = -1;
    for (int c = 0; c < CPU_SETSIZE && CPU_COUNT(&set) == 1; c++)
        w->cpu[i] = CPU_ISSET(c, &set) ? c : w->cpu[i];
}

static void *watching(void *arg)
{
    watch_t *w = arg;
    const struct timespec ms = {0, 1000000};
    while (!w->stop) {
        pid_t pids[WATCHED];
        const int n = children(pids, WATCHED);
        w->most = n > w->most ? n : w->most;
        for (int i = 0; i < n && i < WATCHED; i++)
            pinned(w, pids[i]);
        nanosleep(&ms, NULL);
    }
    return NULL;
}

/* mooncake, SHM-jemalloc and the control, 2 submitters, every byte checked. */
static shmb_transfer_config_t jemalloc_pair(void)
{
    shmb_transfer_config_t c = small();
    c.verify = 1;
    c.submitters = 2;
    shmb_test_transfer_pair(&c, SHMB_SYSTEM_FLOWIPC_JEMALLOC);
    return c;
}

/* Runs c watched: at most `most` children at once, none after, nothing in /dev/shm; its result. */
static int watched_run(const shmb_transfer_config_t *c, shmb_rows_t *rows, char *why, size_t cap, int most,
                       watch_t *seen)
{
    watch_t w = {.most = 0};
    assert_int_equal(children(NULL, 0), 0);
    assert_int_equal(pthread_create(&w.thread, NULL, watching, &w), 0);
    const int ret = shmb_transfer_bench_run(c, rows, why, cap);
    w.stop = 1;
    assert_int_equal(pthread_join(w.thread, NULL), 0);
    assert_int_equal(w.most, most);
    assert_int_equal(children(NULL, 0), 0);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    if (seen)
        *seen = w;
    return ret;
}

/* SHM-jemalloc at threads:2: a borrower per submitter on its CPU; a wrong tag fails before and after timing. */
static void test_jemalloc_links(void **state)
{
    char why[256] = "";
    const shmb_transfer_config_t c = jemalloc_pair();
    shmb_rows_t rows = {0};
    watch_t seen;
    if (watched_run(&c, &rows, why, sizeof(why), 2, &seen) != 0)
        fail_msg("paired: %s", why);
    /* the borrowers pinned, one each to the submitters' CPUs (the crew's plan), not both on --cpu's */
    int plan[2];
    assert_true(shmb_sysinfo_plan_cpus(c.cpu, 2, plan) >= 0);
    assert_int_equal(seen.seen, 2);
    assert_true((seen.cpu[0] == plan[0] && seen.cpu[1] == plan[1]) ||
                (seen.cpu[0] == plan[1] && seen.cpu[1] == plan[0]));
    assert_int_equal(rows.n, 5 + 5 + 1 + 5 + 1);
    static const char *const parts[] = {"request_path", "translate", "request"};
    for (size_t k = 0; k < 3; k++) {
        const size_t at = 5 * k + (k == 2); /* the copy row after translate's */
        char want[160];
        snprintf(want, sizeof(want), "shm_transfer/%s/size_kb:4/threads:2/system:flowipc_jemalloc", parts[k]);
        shmb_test_assert_row_name("shm_transfer", &rows.v[at + 1], want);
        shmb_test_assert_row_name("shm_transfer", &rows.v[at + 3], strcat(want, "/vs:mooncake"));
        assert_true(rows.v[at + 1].iterations > 0 && rows.v[at + 3].ratio_lo > 0);
    }
    assert_non_null(strstr(rows.v[12].note, "write path: "));
    shmb_test_assert_row_name("shm_transfer", &rows.v[16], "shm_transfer/copy_out/size_kb:4");
    for (size_t i = 0; i < rows.n; i++)
        assert_int_equal(rows.v[i].threads, i == 10 || i == 16 ? 1 : 2);
    shmb_rows_free(&rows);
    for (uint64_t at = 1; at <= 3; at += 2) {
        shmb_transfer_bench_submitter_wrong_tag = at;
        const int ret = watched_run(&c, &rows, why, sizeof(why), 2, NULL);
        shmb_transfer_bench_submitter_wrong_tag = 0;
        shmb_rows_free(&rows);
        assert_int_equal(ret, -EPROTO);
        char want[64];
        snprintf(want, sizeof(want), "hand-off %llu: ", (unsigned long long)at - 1);
        if (!strstr(why, "not the lender's tag") || !strstr(why, want))
            fail_msg("wrong tag at %llu: %s", (unsigned long long)at, why);
    }
}

/* The header says how SHM-jemalloc's submitters hand over and where their borrowers run. */
static void test_jemalloc_note(void **state)
{
    const shmb_transfer_config_t c = jemalloc_pair();
    shmb_report_t report = {.bench = "shm_transfer"};
    shmb_notes_t store = {0};
    assert_true(shmb_notes_transfer(&report, &store, &c) > 0);
    const char *want = "flowipc_jemalloc: each submitter hands over through a link of its own";
    const char *found = NULL;
    for (size_t i = 0; report.notes[i] && !found; i++)
        found = strncmp(report.notes[i], want, strlen(want)) == 0 ? report.notes[i] : NULL;
    if (!found || !strstr(found, "each borrower on its submitter's CPU"))
        fail_msg("no note \"%s ... each borrower on its submitter's CPU\"", want);
}

/* Refused: no systems, zero_copy, threads, jemalloc baseline, above MAX_THREADS, upstream; 0 and 1 are one. */
static void test_refused(void **state)
{
    shmb_transfer_config_t bad[6];
    for (int k = 0; k < 6; k++) {
        bad[k] = small();
        bad[k].submitters = 2;
        bad[k].nsystems = 2;
        bad[k].systems[0] = bad[k].systems[1] = SHMB_SYSTEM_MOONCAKE;
    }
    bad[0].nsystems = 0;
    bad[0].translate = 1;
    bad[1].zero_copy = 1;
    bad[2].threads = 2;
    bad[3].systems[0] = bad[3].systems[1] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    bad[4].submitters = SHMB_TRANSFER_MAX_THREADS + 1;
    bad[5].systems[1] = SHMB_SYSTEM_MOONCAKE_UPSTREAM;
    for (int k = 0; k < 6; k++)
        assert_int_equal(shmb_transfer_bench_config_check(&bad[k]), -EINVAL);
    for (int n = 0; n <= 2; n++) {
        shmb_transfer_config_t one = small();
        one.submitters = n;
        one.nsystems = 2;
        one.systems[0] = one.systems[1] = SHMB_SYSTEM_MOONCAKE;
        assert_int_equal(shmb_transfer_bench_config_check(&one), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_destinations),
        cmocka_unit_test(test_paired_rows),
        cmocka_unit_test(test_jemalloc_links),
        cmocka_unit_test(test_jemalloc_note),
        cmocka_unit_test(test_refused),
    };
    return shmb_test_run_shm("/shmb_test_submitters_", tests, NULL, NULL);
}
