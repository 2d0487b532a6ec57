/* What the unit tests share: their prelude, this process's /dev/shm prefix and names, children,
 * descriptors, huge pages, a private tmpfs, notes' checks, and a runner that counts skips. */
#ifndef SHMB_TESTS_HELPERS_H
#define SHMB_TESTS_HELPERS_H

/* What every test includes; cmocka.h needs setjmp, stdarg, stddef and stdint before it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shmbench/lookup_bench.h"
#include "shmbench/channel.h"
#include "shmbench/report.h"
#include "shmbench/notes.h"

/* Sets and returns this process's prefix "<base><pid>_" (base "/name_"): another run's names never count. */
const char *shmb_test_prefix_init(const char *base);

/* The prefix set by shmb_test_prefix_init. */
const char *shmb_test_prefix(void);

/* /dev/shm entries under our prefix (-1: unreadable); the last seen, as "/name", in name if not NULL. */
int shmb_test_count_ours(char *name, size_t cap);

/* Whether /dev/shm is writable; if not, says "skip: /dev/shm is not writable" (the binary exits 77). */
int shmb_test_shm_writable(void);

/* Unlinks what a failed case left under our prefix; returns how many. */
int shmb_test_remove_ours(void);

/* A cmocka teardown: shmb_test_remove_ours(), whatever the case left. */
int shmb_test_remove_leftovers(void **state);

/* shmb_test_count_ours(NULL, 0) as a count (SIZE_MAX when /dev/shm cannot be read). */
static inline size_t shmb_test_ours(void)
{
    return (size_t)shmb_test_count_ours(NULL, 0);
}

/* Asserts nothing of this test's is in /dev/shm and no segment is registered for the signal clean-up. */
void shmb_test_assert_clean(void);

/* Whether /dev/shm holds name ("/x" or "x"). */
int shmb_test_shm_exists(const char *name);

/* Creates /dev/shm/name, empty, as another program would (O_EXCL, 0600): 0 or -1. */
int shmb_test_shm_squat(const char *name);

/* How many /dev/shm entries "<prefix><pid>_*" (prefix "/name_") there are; unlinked when remove is 1. */
int shmb_test_names_of(const char *prefix, pid_t pid, int remove);

/* Asserts that no child of this process is left, not even a zombie. */
void shmb_test_assert_no_child(void);

/* Reaps child pid and asserts that it exited with status 0. */
void shmb_test_reap_ok(pid_t pid);

/* Reaps child pid (asserting waitpid found it) and returns its wait status. */
int shmb_test_reap(pid_t pid);

/* Reaps child pid and asserts that signal sig (0: any signal) ended it. */
void shmb_test_reap_signaled(pid_t pid, int sig);

/* Pairs two channel ends and forks; the child keeps child_end, the parent parent_end (either's death: -EPIPE). */
pid_t shmb_test_fork_pair(shmb_channel_t *child_end, shmb_channel_t *parent_end);

/* The descriptors this process has open (among the first 1024). */
int shmb_test_open_fds(void);

/* Free 2 MiB huge pages (-1: unreadable); others move it: whether a case can run, never what it counts. */
int64_t shmb_test_huge_free(void);

/* Bytes of huge pages pid (0: this one) holds in hugetlb mappings and hugetlbfs descriptors; -1: unreadable. */
int64_t shmb_test_huge_held(pid_t pid);

/* 2 MiB pages more than the pool can give (size + overcommit + 1), whoever uses it; -1: unreadable. */
int64_t shmb_test_huge_beyond(void);

/* 1 when this process may change the huge page pool: it took $SHMB_HUGEPAGES_LOCK (else
 * /run/lock/shmbench-hugepages.lock) within `seconds`, until exit, or SHMB_HUGEPAGES_LOCKED is set. */
int shmb_test_pool_lock(int seconds);

/* Runs run(arg) (0 or a failed step's number) in a child over a private kb KiB tmpfs on /dev/shm;
 * skips the case without a namespace, fails it (naming what) on non-zero or a signal. */
void shmb_test_in_tmpfs(size_t kb, int (*run)(void *arg), void *arg, const char *what);

/* skip() that says why: the runner prints "SKIPPED: case (why)". */
#define shmb_test_skip(why)                                                                        \
    do {                                                                                           \
        shmb_test_skipped_(why);                                                                   \
        skip();                                                                                    \
    } while (0)
void shmb_test_skipped_(const char *why);

/* cmocka_run_group_tests that counts the skipped cases; returns how many failed. */
int shmb_test_group_(const char *name, const struct CMUnitTest *tests, size_t n,
                     CMFixtureFunction setup, CMFixtureFunction teardown);
#define shmb_test_group(name, tests, setup, teardown)                                              \
    shmb_test_group_(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/* A binary's exit status: 77 when every case run was skipped, else failed (at most 76); prints
 * "SKIPPED: case (why)" per skip. */
int shmb_test_exit(int failed);

/* A paired run's systems (--systems=mooncake,OTHER): mooncake, other, mooncake's control. */
void shmb_test_pair_with(size_t *nsystems, int *systems, const char **names, shmb_system_t other);

/* Asserts that a reader sees row, in a report of bench, named want. */
void shmb_test_assert_row_name(const char *bench, const shmb_row_t *row, const char *want);

/* What every note slot of shmb_test_fresh_report holds: a failed notes function leaves them all. */
extern const char shmb_test_sentinel[];

/* A report whose note slots (and their NULL) all hold shmb_test_sentinel. */
shmb_report_t shmb_test_fresh_report(void);

/* Notes report->notes holds before its NULL. */
#define SHMB_TEST_NOTES_CAP (sizeof(((shmb_report_t *)0)->notes) / sizeof(const char *) - 1)

/* Asserts ret == n and n notes set, each non-empty and not the sentinel, then NULL. */
void shmb_test_assert_notes(const shmb_report_t *r, int ret, int n);

/* Whether some note starts with `start`. */
int shmb_test_has_note(const shmb_report_t *r, const char *start);

/* Whether some note has `part` anywhere in it. */
int shmb_test_note_says(const shmb_report_t *r, const char *part);

/* Asserts every note slot (and the NULL) still holds the sentinel. */
void shmb_test_assert_untouched(const shmb_report_t *r);

/* A benchmark's notes of one config, as its shmb_notes_* function makes them. */
typedef int (*shmb_test_notes_fn)(shmb_report_t *r, shmb_notes_t *store, const void *cfg);

/* compose makes n notes; with 10 bytes left it is refused (-EOVERFLOW), nothing touched; then n again. */
void shmb_test_notes_store_full(shmb_test_notes_fn compose, const void *cfg, int n);

/* The threads note's CPU part: "pinned to CPUs a,b" or not pinned, as planned. */
void shmb_test_expected_cpus(int threads, int cpu, char *out, size_t cap);

/* A case named name running f with *state = (void *)arg and teardown td (NULL: none). */
#define shmb_test_case_with(name, f, arg, td) {name, f, NULL, td, (void *)(arg)}

/* The int a shmb_test_case_with case was given. */
#define shmb_test_arg(state) (*(const int *)*(state))

/* One group, then the exit status: main's return. */
#define shmb_test_run(tests, setup, teardown) shmb_test_exit(shmb_test_group(#tests, tests, setup, teardown))

/* main's result for a test of /dev/shm: 77 when not writable, else the prefix set and one group run. */
#define shmb_test_run_shm(base, tests, setup, teardown)                                                          \
    (shmb_test_shm_writable() ? (shmb_test_prefix_init(base), shmb_test_run(tests, setup, teardown)) : 77)

#endif
