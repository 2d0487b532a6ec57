/* TENT's transfer view and the model's and upstream's spread of requests over every buffer (test_upstream). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "transfer/transfer_internal.h"
#include "shmbench/upstream.h"

int our_tent_buffers(void); /* test_upstream.c */
void test_transfer_view(void **state);
void test_transfer_spread(void **state);

void test_transfer_view(void **state)
{
    (void)state;
    if (!shmb_upstream_tent_available()) {
        skip();
        return;
    }
    char why[256] = "";
    shmb_transfer_config_t c;
    memset(&c, 0, sizeof(c));
    c.translate = 1;
    c.system = SHMB_SYSTEM_MOONCAKE_UPSTREAM;
    c.num_segments = 10;
    c.descriptors_per_submit = 4;
    c.threads = 1;
    shmb_transfer_run_t r;
    shmb_transfer_bench_run_init(&r, &c, why, sizeof(why));
    char prefix[48];
    snprintf(prefix, sizeof(prefix), "/shmb_tv_%ld_", (long)getpid());
    assert_int_equal(shmb_segment_create(&r.src, prefix, 65536, NULL, NULL), 0);
    assert_int_equal(shmb_segment_create(&r.dst, prefix, 65536, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(&r.src, NULL), 0);
    assert_int_equal(shmb_segment_map(&r.dst, NULL), 0);
    assert_int_equal(shmb_transfer_bench_copier_start(&r), 0);
    assert_int_equal(our_tent_buffers(), 10 + 1);
    const shmb_transfer_part_t parts[] = {SHMB_TRANSFER_TRANSLATE, SHMB_TRANSFER_SUBMIT};
    for (int k = 0; k < 2; k++) {
        shmb_transfer_upstream_part(&r, parts[k], 4096, 3);
        assert_int_equal(r.translation.missed, 0);
        assert_int_equal(shmb_transfer_upstream_check(&r, parts[k]), 0);
    }
    shmb_transfer_upstream_part(&r, SHMB_TRANSFER_TRANSLATE, 4096, 1);
    assert_int_equal(shmb_transfer_upstream_check(&r, SHMB_TRANSFER_SUBMIT), -EPROTO);
    shmb_transfer_upstream_part(&r, SHMB_TRANSFER_REQUEST, 4096, 1);
    assert_int_equal(r.translation.missed, 1);
    shmb_transfer_upstream_part(&r, SHMB_TRANSFER_SUBMIT, 65536, 1); /* descriptor 1 at 64 KB: past it */
    assert_int_equal(r.translation.missed, 2);
    assert_int_equal(shmb_transfer_bench_verify_translations(&r), -EPROTO);
    assert_non_null(strstr(why, "mooncake_upstream"));
    shmb_transfer_bench_copier_stop(&r);
    assert_null(r.translation.upstream);
    assert_int_equal(our_tent_buffers(), 0);
    assert_int_equal(shmb_segment_destroy(&r.dst, NULL), 0);
    assert_int_equal(shmb_segment_destroy(&r.src, NULL), 0);
}

/* Beside mooncake_upstream, requests go round all 10 buffers (i mod 10): the check before timing passes,
 * and fails with a wrong landing planted at any one. */
void test_transfer_spread(void **state)
{
    (void)state;
    if (!shmb_upstream_tent_available()) {
        skip();
        return;
    }
    char why[256] = "", prefix[48];
    shmb_transfer_config_t c = {.translate = 1, .num_segments = 10, .descriptors_per_submit = 4, .threads = 1};
    shmb_transfer_run_t o, r;
    shmb_transfer_bench_run_init(&o, &c, why, sizeof(why));
    snprintf(prefix, sizeof(prefix), "/shmb_tu_%ld_ts", (long)getpid()); /* the group teardown removes it */
    assert_int_equal(shmb_segment_create(&o.src, prefix, 65536, NULL, NULL) | shmb_segment_map(&o.src, NULL), 0);
    assert_int_equal(shmb_segment_create(&o.dst, prefix, 65536, NULL, NULL) | shmb_segment_map(&o.dst, NULL), 0);
    const shmb_transfer_part_t parts[] = {SHMB_TRANSFER_TRANSLATE, SHMB_TRANSFER_SUBMIT};
    for (int s = 0; s < 2; s++)
        for (uint64_t wrong = 0; wrong <= 10; wrong++) {
            c.system = s ? SHMB_SYSTEM_MOONCAKE_UPSTREAM : SHMB_SYSTEM_MOONCAKE;
            shmb_transfer_bench_wrong_landing = wrong; /* the model's maps it at start, upstream's takes it after */
            if (s == 0 || wrong == 0) {
                shmb_transfer_bench_run_init(&r, &c, why, sizeof(why));
                assert_int_equal(shmb_transfer_view_start(&r, &o), 0);
                r.translation.spread = 10;
            }
            for (int k = 0; k < 2; k++) {
                r.translation.missed = 0;
                assert_int_equal(shmb_transfer_bench_check(&r, parts[k], SHMB_COPY_MEMCPY, 4096), wrong ? -EPROTO : 0);
                assert_int_equal(r.translation.next * !wrong, 0); /* passed: the rounds start at buffer 0 */
                r.translation.next = 0;
                shmb_transfer_copier_part(&r, parts[k], NULL, 4096, 10 + k);
                assert_int_equal(r.translation.next, k ? 4 : 0); /* 10 translations; 11 submits of 4 */
                assert_int_equal(r.translation.missed > 0, wrong > 0);
                r.translation.next = 0;
            }
            if (s == 0 || wrong == 10)
                shmb_transfer_bench_translation_stop(&r);
        }
    shmb_transfer_bench_wrong_landing = 0;
    assert_int_equal(our_tent_buffers(), 0);
    assert_int_equal(shmb_segment_destroy(&o.dst, NULL) | shmb_segment_destroy(&o.src, NULL), 0);
}
