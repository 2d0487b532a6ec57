#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>

#include "helpers.h"

#include "shmbench/channel.h"

static void pair(shmb_channel_t *a, shmb_channel_t *b)
{
    assert_int_equal(shmb_channel_pair(a, b), 0);
    assert_true(a->fd >= 0 && b->fd >= 0);
}

static void unpair(shmb_channel_t *a, shmb_channel_t *b)
{
    assert_int_equal(shmb_channel_close(a), 0);
    assert_int_equal(shmb_channel_close(b), 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Receives one message on ch and asserts it is the n bytes of want. */
static void recv_is(shmb_channel_t *ch, const char *want, size_t n)
{
    char buf[64];
    size_t len = 0;
    assert_int_equal(shmb_channel_recv(ch, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(buf, want, n);
}

static void test_one_message(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    assert_int_equal(shmb_channel_send(&a, "hello", 5), 0);
    recv_is(&b, "hello", 5);
    assert_int_equal(shmb_channel_send(&b, "x", 1), 0); /* and back the other way */
    recv_is(&a, "x", 1);
    unpair(&a, &b);
}

/* Messages queued back to back come out one by one, boundaries kept. */
static void test_boundaries_kept(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    for (uint32_t i = 1; i <= 20; i++) {
        unsigned char msg[32];
        memset(msg, (int)i, i);
        assert_int_equal(shmb_channel_send(&a, msg, i), 0);
    }
    for (uint32_t i = 1; i <= 20; i++) {
        unsigned char buf[32];
        size_t len = 0;
        assert_int_equal(shmb_channel_recv(&b, buf, sizeof(buf), &len), 0);
        assert_int_equal(len, i);
        for (size_t k = 0; k < len; k++)
            assert_int_equal(buf[k], i);
    }
    unpair(&a, &b);
}

static void test_sizes(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    static unsigned char big[SHMB_CHANNEL_MSG_MAX + 1], got[SHMB_CHANNEL_MSG_MAX];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 7);
    size_t len = 0;
    assert_int_equal(shmb_channel_send(&a, big, 0), -EINVAL);
    assert_int_equal(shmb_channel_send(&a, big, SHMB_CHANNEL_MSG_MAX + 1), -EINVAL);
    assert_int_equal(shmb_channel_send(&a, NULL, 1), -EINVAL);
    assert_int_equal(shmb_channel_send(&a, big, SHMB_CHANNEL_MSG_MAX), 0);
    assert_int_equal(shmb_channel_recv(&b, got, sizeof(got), &len), 0);
    assert_int_equal(len, SHMB_CHANNEL_MSG_MAX);
    assert_memory_equal(got, big, SHMB_CHANNEL_MSG_MAX);
    /* a message longer than the reader's buffer */
    assert_int_equal(shmb_channel_send(&a, big, 10), 0);
    assert_int_equal(shmb_channel_recv(&b, got, 9, &len), -EMSGSIZE);
    assert_int_equal(len, SHMB_CHANNEL_MSG_MAX); /* untouched */
    unpair(&a, &b);
}

/* A stream out of step: a length of 0 or above the maximum. */
static void test_bad_length(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    uint32_t bad[2] = {0, SHMB_CHANNEL_MSG_MAX + 1};
    unsigned char buf[16];
    size_t len = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(write(a.fd, &bad[i], sizeof(bad[i])), (ssize_t)sizeof(bad[i]));
        assert_int_equal(shmb_channel_recv(&b, buf, sizeof(buf), &len), -EMSGSIZE);
    }
    unpair(&a, &b);
}

static void test_closed_end(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    char buf[8];
    size_t len;
    assert_int_equal(shmb_channel_close(&a), 0);
    assert_int_equal(a.fd, -1);
    assert_int_equal(shmb_channel_close(&a), 0); /* twice: a no-op */
    assert_int_equal(shmb_channel_send(&a, "x", 1), -EINVAL);
    assert_int_equal(shmb_channel_recv(&a, buf, sizeof(buf), &len), -EINVAL);
    /* the peer closed: the other end sees -EPIPE both ways, no SIGPIPE */
    assert_int_equal(shmb_channel_recv(&b, buf, sizeof(buf), &len), -EPIPE);
    assert_int_equal(shmb_channel_send(&b, "x", 1), -EPIPE);
    shmb_channel_close(&b);
    assert_int_equal(shmb_channel_pair(NULL, &b), -EINVAL);
}

/* The peer wrote half a message (its length and 3 of 8 bytes) and closed. */
static void test_peer_closes_midway(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    uint32_t prefix = 8;
    assert_int_equal(write(a.fd, &prefix, 2), 2); /* half the length first */
    char buf[16];
    size_t len;
    shmb_channel_t half = b;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        sleep_ms(20);
        _exit(write(a.fd, (char *)&prefix + 2, 2) == 2 && write(a.fd, "abc", 3) == 3 ? 0 : 1);
    }
    shmb_channel_close(&a); /* the child's copy is the last writer */
    assert_int_equal(shmb_channel_recv(&half, buf, sizeof(buf), &len), -EPIPE);
    shmb_test_reap_ok(pid);
    shmb_channel_close(&b);
}

/* Short reads: the child writes a message a byte at a time. */
static void test_short_reads(void **state)
{
    shmb_channel_t a, b;
    pid_t pid = shmb_test_fork_pair(&a, &b);
    if (pid == 0) {
        unsigned char raw[4 + 6];
        uint32_t prefix = 6;
        memcpy(raw, &prefix, 4);
        memcpy(raw + 4, "pieces", 6);
        for (size_t i = 0; i < sizeof(raw); i++) {
            if (write(a.fd, &raw[i], 1) != 1)
                _exit(1);
            sleep_ms(2);
        }
        _exit(0);
    }
    recv_is(&b, "pieces", 6);
    shmb_test_reap_ok(pid);
    shmb_channel_close(&b);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* EINTR: a timer without SA_RESTART interrupts the waiting read several times before the child's message arrives. */
static void test_eintr(void **state)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    shmb_channel_t a, b;
    pid_t pid = shmb_test_fork_pair(&a, &b);
    if (pid == 0) {
        sleep_ms(100);
        _exit(shmb_channel_send(&a, "late", 4) == 0 ? 0 : 1);
    }
    alarms = 0;
    struct itimerval it = {{0, 10000}, {0, 10000}};
    assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
    char buf[8];
    size_t len = 0;
    int rc = shmb_channel_recv(&b, buf, sizeof(buf), &len);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    assert_int_equal(rc, 0);
    assert_int_equal(len, 4);
    assert_memory_equal(buf, "late", 4);
    assert_true(alarms > 1);
    shmb_test_reap_ok(pid);
    shmb_channel_close(&b);
}

/* A request and its reply across a fork; then the child dies and the parent's next receive is -EPIPE. */
static void test_fork_round_trip(void **state)
{
    shmb_channel_t a, b;
    pid_t pid = shmb_test_fork_pair(&b, &a);
    if (pid == 0) {
        char buf[64];
        size_t len;
        if (shmb_channel_recv(&b, buf, sizeof(buf), &len) != 0)
            _exit(1);
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)(buf[i] ^ 0x20);
        _exit(shmb_channel_send(&b, buf, len) == 0 ? 0 : 1);
    }
    assert_int_equal(shmb_channel_send(&a, "request", 7), 0);
    recv_is(&a, "REQUEST", 7);
    shmb_test_reap_ok(pid);
    char buf[64];
    size_t len = 0;
    assert_int_equal(shmb_channel_recv(&a, buf, sizeof(buf), &len), -EPIPE);
    assert_int_equal(shmb_channel_send(&a, "x", 1), -EPIPE);
    shmb_channel_close(&a);
}

/* A file's descriptor crosses with its message: the receiver reads what was written; close-on-exec. */
static void test_fd_passing(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    int fd = memfd_create("channel_test", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "payload", 7), 7);
    assert_int_equal(shmb_channel_send_fd(&a, "file", 4, fd), 0);
    assert_int_equal(shmb_channel_send(&a, "plain", 5), 0);
    char buf[16];
    size_t len = 0;
    int got = -2;
    assert_int_equal(shmb_channel_recv_fd(&b, buf, sizeof(buf), &len, &got), 0);
    assert_int_equal(len, 4);
    assert_memory_equal(buf, "file", 4);
    assert_true(got >= 0 && got != fd);
    assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
    char back[8];
    assert_int_equal(pread(got, back, 7, 0), 7);
    assert_memory_equal(back, "payload", 7);
    /* a message without a descriptor: -1 */
    assert_int_equal(shmb_channel_recv_fd(&b, buf, sizeof(buf), &len, &got), 0);
    assert_int_equal(len, 5);
    assert_int_equal(got, -1);
    assert_int_equal(shmb_channel_send_fd(&a, "x", 1, -1), -EINVAL);
    close(fd);
    unpair(&a, &b);
}

/* Descriptors that cannot be kept are closed: too long (-EMSGSIZE), two (-EPROTO), read by plain recv. */
static void test_fd_never_leaks(void **state)
{
    shmb_channel_t a, b;
    pair(&a, &b);
    int fd = memfd_create("channel_test", MFD_CLOEXEC);
    assert_true(fd >= 0);
    int before = shmb_test_open_fds();
    char buf[16];
    size_t len = 0;
    int got = -2;
    assert_int_equal(shmb_channel_send_fd(&a, "0123456789", 10, fd), 0);
    assert_int_equal(shmb_channel_recv_fd(&b, buf, 4, &len, &got), -EMSGSIZE);
    assert_int_equal(got, -2); /* untouched */
    assert_int_equal(shmb_test_open_fds(), before);
    unpair(&a, &b);
    pair(&a, &b);
    before = shmb_test_open_fds();
    /* two descriptors on one message, sent by hand */
    uint32_t prefix = 1;
    char body[5];
    memcpy(body, &prefix, 4);
    body[4] = 'z';
    struct iovec iov = {body, sizeof(body)};
    union {
        char c[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.c,
                        .msg_controllen = sizeof(control.c)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int two[2] = {fd, fd};
    memcpy(CMSG_DATA(c), two, sizeof(two));
    assert_int_equal(sendmsg(a.fd, &mh, 0), (ssize_t)sizeof(body));
    assert_int_equal(shmb_channel_recv_fd(&b, buf, sizeof(buf), &len, &got), -EPROTO);
    assert_int_equal(shmb_test_open_fds(), before);
    /* plain receive of a message that carried one */
    assert_int_equal(shmb_channel_send_fd(&a, "y", 1, fd), 0);
    assert_int_equal(shmb_channel_recv(&b, buf, sizeof(buf), &len), 0);
    assert_int_equal(shmb_test_open_fds(), before);
    close(fd);
    unpair(&a, &b);
}

/* The child sends its memfd and dies; the descriptor outlives the sender, and after it the parent reads -EPIPE. */
static void test_fd_from_dying_peer(void **state)
{
    shmb_channel_t a, b;
    pid_t pid = shmb_test_fork_pair(&a, &b);
    if (pid == 0) {
        int fd = memfd_create("channel_test", MFD_CLOEXEC);
        _exit(fd >= 0 && write(fd, "alive", 5) == 5 && shmb_channel_send_fd(&a, "m", 1, fd) == 0 ? 0 : 1);
    }
    shmb_test_reap_ok(pid);
    char buf[8];
    size_t len = 0;
    int got = -1;
    assert_int_equal(shmb_channel_recv_fd(&b, buf, sizeof(buf), &len, &got), 0);
    assert_true(got >= 0);
    char back[5];
    assert_int_equal(pread(got, back, 5, 0), 5);
    assert_memory_equal(back, "alive", 5);
    close(got);
    assert_int_equal(shmb_channel_recv_fd(&b, buf, sizeof(buf), &len, &got), -EPIPE);
    assert_int_equal(shmb_channel_recv_fd(&b, buf, sizeof(buf), &len, NULL), -EINVAL);
    shmb_channel_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_message),
        cmocka_unit_test(test_boundaries_kept),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_bad_length),
        cmocka_unit_test(test_closed_end),
        cmocka_unit_test(test_peer_closes_midway),
        cmocka_unit_test(test_short_reads),
        cmocka_unit_test(test_eintr),
        cmocka_unit_test(test_fork_round_trip),
        cmocka_unit_test(test_fd_passing),
        cmocka_unit_test(test_fd_never_leaks),
        cmocka_unit_test(test_fd_from_dying_peer),
    };
    return shmb_test_run(tests, NULL, NULL);
}
