#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "shmbench/alloc_peer.h"
#include "shmbench/error.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_test_apeer_"

/* /dev/shm entries of this test process (<prefix><pid>_...). */
static int count_ours(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return -1;
    char mine[64];
    snprintf(mine, sizeof(mine), "%s%d_", &PREFIX[1], (int)getpid());
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, mine, strlen(mine)) == 0;
    closedir(d);
    return n;
}

/* A mapped segment of `bytes` holding tag at its first byte. */
static void tagged_segment(shmb_segment_t *seg, size_t bytes, uint64_t tag)
{
    assert_int_equal(shmb_segment_create(seg, PREFIX, bytes, NULL, NULL), 0);
    assert_int_equal(shmb_segment_map(seg, NULL), 0);
    memcpy(seg->addr, &tag, sizeof(tag));
}

static void test_tag(void **state)
{
    (void)state;
    assert_int_equal(shmb_alloc_peer_tag(1, 0), shmb_alloc_peer_tag(1, 0));
    assert_int_not_equal(shmb_alloc_peer_tag(1, 0), shmb_alloc_peer_tag(1, 1));
    assert_int_not_equal(shmb_alloc_peer_tag(1, 0), shmb_alloc_peer_tag(2, 0));
    for (uint64_t i = 0; i < 100000; i++)
        assert_int_not_equal(shmb_alloc_peer_tag(0, i), 0);
}

static void test_posix_attach_detach(void **state)
{
    (void)state;
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    const uint64_t tag = shmb_alloc_peer_tag(7, 3);
    shmb_segment_t seg;
    tagged_segment(&seg, 64 << 10, tag);
    char why[256] = "";
    uint64_t attach_ns = 0, detach_ns = 0;
    for (int i = 0; i < 3; i++) { /* the same segment again: nothing of an attach stays */
        attach_ns = detach_ns = 0;
        assert_int_equal(shmb_alloc_peer_posix(&peer, seg.name, seg.size, tag, &attach_ns, &detach_ns, why,
                                               sizeof(why)),
                         0);
        assert_true(attach_ns > 0 && attach_ns < 1000000000ull);
        assert_true(detach_ns > 0 && detach_ns < 1000000000ull);
    }
    assert_string_equal(why, "");

    /* another tag than the owner expects: the peer read the real one */
    attach_ns = 12345;
    assert_int_equal(shmb_alloc_peer_posix(&peer, seg.name, seg.size, tag + 1, &attach_ns, &detach_ns, why,
                                           sizeof(why)),
                     -EPROTO);
    assert_non_null(strstr(why, "posix: the peer read tag"));
    assert_non_null(strstr(why, seg.name));
    assert_int_equal(attach_ns, 12345); /* untouched on error */

    /* a size that differs is the peer's fstat size check */
    shmb_error_clear();
    assert_int_equal(shmb_alloc_peer_posix(&peer, seg.name, seg.size + 4096, tag, &attach_ns, &detach_ns, why,
                                           sizeof(why)),
                     -EPROTO);
    assert_string_equal(shmb_error_last()->call, "fstat size check");
    assert_non_null(strstr(shmb_error_last()->object, "expected"));

    /* a name that does not exist */
    char missing[SHMB_SEGMENT_NAME_MAX + 1];
    snprintf(missing, sizeof(missing), "%s%d_missing", PREFIX, (int)getpid());
    assert_int_equal(shmb_alloc_peer_posix(&peer, missing, 4096, tag, &attach_ns, &detach_ns, why, sizeof(why)),
                     -ENOENT);
    assert_string_equal(shmb_error_last()->call, "shm_open");

    /* not a name, or too small for a tag */
    assert_int_equal(shmb_alloc_peer_posix(&peer, "no_slash", 4096, tag, &attach_ns, &detach_ns, why, sizeof(why)),
                     -EINVAL);
    assert_int_equal(shmb_alloc_peer_posix(&peer, seg.name, 4, tag, &attach_ns, &detach_ns, why, sizeof(why)),
                     -EINVAL);

    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_int_equal(count_ours(), 0);
}

static void test_posix_peer_died(void **state)
{
    (void)state;
    shmb_peer_t peer;
    assert_int_equal(shmb_alloc_peer_start(&peer, PREFIX), 0);
    const uint64_t tag = shmb_alloc_peer_tag(1, 1);
    shmb_segment_t seg;
    tagged_segment(&seg, 4096, tag);
    assert_int_equal(kill(peer.pid, SIGKILL), 0);
    char why[64] = "";
    uint64_t attach_ns, detach_ns;
    assert_int_equal(shmb_alloc_peer_posix(&peer, seg.name, seg.size, tag, &attach_ns, &detach_ns, why, sizeof(why)),
                     -EPIPE);
    assert_string_equal(shmb_error_last()->call, "peer process");
    assert_int_equal(shmb_peer_stop(&peer), -EPIPE);
    assert_int_equal(shmb_segment_destroy(&seg, NULL), 0);
    assert_int_equal(count_ours(), 0);
}

int main(void)
{
    if (access("/dev/shm", W_OK) != 0) {
        fprintf(stderr, "skip: /dev/shm is not writable\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag),
        cmocka_unit_test(test_posix_attach_detach),
        cmocka_unit_test(test_posix_peer_died),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
