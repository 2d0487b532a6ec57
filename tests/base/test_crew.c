/* crew: the thread harness (src/base/crew_internal.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "helpers.h"

#include "base/crew_internal.h"
#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/sysinfo.h"

#define MAX_MEMBERS 8
#define SYNCS 200

typedef struct record {
    atomic_int ran[MAX_MEMBERS];        /* runs of each member */
    pthread_t who[MAX_MEMBERS];         /* the thread that ran it */
    uint64_t arrive[SYNCS][MAX_MEMBERS]; /* clocks around each barrier */
    uint64_t leave[SYNCS][MAX_MEMBERS];
    int fail_member;                    /* -1: none fails */
    int all_fail_late;                  /* 1: after the first failure, every other member fails too */
    int sync_after_fail;                /* what shmb_crew_sync said after the failure */
    cpu_set_t mask[MAX_MEMBERS];        /* each member's affinity during the run */
} record_t;

static void record_member(shmb_crew_t *crew, int me, void *arg)
{
    record_t *r = arg;
    atomic_fetch_add(&r->ran[me], 1);
    r->who[me] = pthread_self();
    sched_getaffinity(0, sizeof(r->mask[me]), &r->mask[me]);
    for (int s = 0; s < SYNCS; s++) {
        r->arrive[s][me] = shmb_clock_now_ns();
        shmb_crew_sync(crew);
        r->leave[s][me] = shmb_clock_now_ns();
    }
}

static void failing_member(shmb_crew_t *crew, int me, void *arg)
{
    record_t *r = arg;
    if (me == r->fail_member)
        shmb_crew_fail(crew, me, shmb_error_record("first_call", EIO, "first object"));
    int ok = shmb_crew_sync(crew); /* the first failure is in before anyone passes */
    if (me == r->fail_member)
        r->sync_after_fail = ok;
    if (r->all_fail_late && me != r->fail_member)
        shmb_crew_fail(crew, me, shmb_error_record("later_call", EPERM, "later object"));
}

static shmb_crew_t *start(int threads, int cpu, shmb_crew_pin_t pin, int caller_joins)
{
    shmb_crew_config_t cfg = {.threads = threads, .cpu = cpu, .pin = pin, .caller_joins = caller_joins};
    shmb_crew_t *crew = NULL;
    assert_int_equal(shmb_crew_start(&crew, &cfg), 0);
    assert_non_null(crew);
    assert_int_equal(shmb_crew_threads(crew), threads);
    return crew;
}

/* Every member runs once per run, and no member leaves a barrier before every member has arrived at it. */
static void test_start_together(void **state)
{
    for (int joins = 0; joins <= 1; joins++) {
        for (int threads = 1; threads <= 4; threads++) {
            shmb_crew_t *crew = start(threads, -1, SHMB_CREW_PIN_NONE, joins);
            static record_t r;
            memset(&r, 0, sizeof(r));
            for (int run = 0; run < 3; run++)
                assert_int_equal(shmb_crew_run(crew, record_member, &r), 0);
            assert_int_equal(shmb_crew_failed_member(crew), -1);
            for (int m = 0; m < threads; m++)
                assert_int_equal(atomic_load(&r.ran[m]), 3);
            for (int s = 0; s < SYNCS; s++) {
                uint64_t last_arrival = 0, first_leave = UINT64_MAX;
                for (int m = 0; m < threads; m++) {
                    last_arrival = r.arrive[s][m] > last_arrival ? r.arrive[s][m] : last_arrival;
                    first_leave = r.leave[s][m] < first_leave ? r.leave[s][m] : first_leave;
                }
                if (first_leave < last_arrival)
                    fail_msg("threads %d, barrier %d: a member left %llu ns before the last arrived", threads,
                             s, (unsigned long long)(last_arrival - first_leave));
            }
            shmb_crew_stop(crew);
        }
    }
}

/* One member: with the caller joining it is the caller itself; else a thread of its own. */
static void test_one_thread(void **state)
{
    static record_t r;
    memset(&r, 0, sizeof(r));
    shmb_crew_t *crew = start(1, -1, SHMB_CREW_PIN_NONE, 1);
    assert_int_equal(shmb_crew_run(crew, record_member, &r), 0);
    assert_true(pthread_equal(r.who[0], pthread_self()));
    shmb_crew_stop(crew);
    crew = start(1, -1, SHMB_CREW_PIN_NONE, 0);
    assert_int_equal(shmb_crew_run(crew, record_member, &r), 0);
    assert_false(pthread_equal(r.who[0], pthread_self()));
    assert_int_equal(atomic_load(&r.ran[0]), 2);
    shmb_crew_stop(crew);
}

/* The first failure wins (returned, member named, error record handed over); later ones change nothing. */
static void test_first_error_wins(void **state)
{
    for (int joins = 0; joins <= 1; joins++) {
        for (int late = 0; late <= 1; late++) {
            const int threads = 4, members[] = {0, threads - 1};
            for (size_t k = 0; k < 2; k++) {
                shmb_crew_t *crew = start(threads, -1, SHMB_CREW_PIN_NONE, joins);
                record_t r = {.fail_member = members[k], .all_fail_late = late, .sync_after_fail = -1};
                shmb_error_clear();
                assert_int_equal(shmb_crew_run(crew, failing_member, &r), -EIO);
                assert_int_equal(shmb_crew_failed_member(crew), members[k]);
                assert_int_equal(r.sync_after_fail, 0);
                const shmb_error_t *e = shmb_error_last();
                assert_non_null(e->call);
                assert_string_equal(e->call, "first_call");
                assert_int_equal(e->err, EIO);
                assert_string_equal(e->object, "first object");
                /* the next run starts without the failure */
                r.fail_member = -1;
                r.all_fail_late = 0;
                assert_int_equal(shmb_crew_run(crew, failing_member, &r), 0);
                assert_int_equal(shmb_crew_failed_member(crew), -1);
                shmb_crew_stop(crew);
            }
        }
    }
}

static int only_cpu(const cpu_set_t *set)
{
    if (CPU_COUNT(set) != 1)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set))
            return c;
    return -1;
}

/* Members run on their planned CPUs, affinity restored at stop; more members than CPUs: OWN none, ALWAYS wraps. */
static void test_pinning(void **state)
{
    int allowed[CPU_SETSIZE];
    const int n = shmb_sysinfo_allowed_cpus(allowed, CPU_SETSIZE);
    assert_true(n >= 1);
    cpu_set_t before;
    assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
    const int fits = n < MAX_MEMBERS ? n : MAX_MEMBERS, over = n + 1 <= MAX_MEMBERS ? n + 1 : 0;
    const struct {
        int threads;
        shmb_crew_pin_t pin;
        int pinned; /* expected */
    } cases[] = {{fits, SHMB_CREW_PIN_OWN, 1}, {fits, SHMB_CREW_PIN_ALWAYS, 1}, {fits, SHMB_CREW_PIN_NONE, 0},
                 {over, SHMB_CREW_PIN_OWN, 0}, {over, SHMB_CREW_PIN_ALWAYS, 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].threads == 0)
            continue; /* more CPUs than this test's members */
        for (int joins = 0; joins <= 1; joins++) {
            int plan[MAX_MEMBERS];
            assert_true(shmb_sysinfo_plan_cpus(allowed[0], cases[i].threads, plan) >= 0);
            shmb_crew_t *crew = start(cases[i].threads, allowed[0], cases[i].pin, joins);
            static record_t r;
            memset(&r, 0, sizeof(r));
            assert_int_equal(shmb_crew_run(crew, record_member, &r), 0);
            for (int m = 0; m < cases[i].threads; m++) {
                const int want = cases[i].pinned ? plan[m] : -1;
                assert_int_equal(shmb_crew_cpu(crew, m), want);
                if (cases[i].pinned)
                    assert_int_equal(only_cpu(&r.mask[m]), want);
                else if (cases[i].pin == SHMB_CREW_PIN_OWN)
                    assert_int_equal(CPU_COUNT(&r.mask[m]), n); /* every allowed CPU */
            }
            shmb_crew_stop(crew);
            cpu_set_t after;
            assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
            assert_true(CPU_EQUAL(&before, &after));
        }
    }
}

static void test_bad_config_and_wall(void **state)
{
    shmb_crew_t *crew = NULL;
    shmb_crew_config_t cfg = {.threads = 0, .cpu = -1};
    assert_int_equal(shmb_crew_start(&crew, &cfg), -EINVAL);
    cfg.threads = 2;
    cfg.pin = (shmb_crew_pin_t)7;
    assert_int_equal(shmb_crew_start(&crew, &cfg), -EINVAL);
    assert_null(crew);
    shmb_crew_stop(NULL);
    /* two phases of two members: [10, 30] and [100, 105] */
    const uint64_t s[] = {10, 12, 100, 101}, e[] = {25, 30, 104, 105};
    assert_true(shmb_crew_wall_ns(s, e, 2, 2) == 25.0);
    assert_true(shmb_crew_wall_ns(s, e, 0, 2) == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_together),
        cmocka_unit_test(test_one_thread),
        cmocka_unit_test(test_first_error_wins),
        cmocka_unit_test(test_pinning),
        cmocka_unit_test(test_bad_config_and_wall),
    };
    return shmb_test_run(tests, NULL, NULL);
}
