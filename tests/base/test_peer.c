#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include "helpers.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"
#include "shmbench/peer.h"
#include "shmbench/segment.h"

#define PREFIX "/shmb_peer_test_"
#define NOTICE_LIMIT_NS 1500000000ull /* the owner or the peer notices a death within this */
#define ROUND_TRIPS 10000
#define CTX_MAGIC 0x5eed5eed5eedull

enum {
    OP_ECHO = 1,     /* results: arg0 + arg1, arg2 ^ arg3, hash of name, commands seen */
    OP_CTX,          /* result: *(uint64_t *)ctx */
    OP_DATA,         /* sums the data area, then writes 255 - each byte */
    OP_FAIL_RECORDED,/* records shm_open(name) ENOENT, returns -ENOENT */
    OP_FAIL_BARE,    /* returns -EIO, nothing recorded */
    OP_POSITIVE,     /* returns 5 (taken as success) with result 9 */
    OP_STALL,        /* marks the data area's flag, then waits for signals forever */
    OP_EXIT,         /* _exit(arg0) */
    OP_FAULT,        /* with the signal cleanup and a fault line (stderr to /dev/null), writes into a
                      * mapping past its file's end: SIGBUS BUS_ADRERR, as a full tmpfs gives */
    OP_REGISTRY,     /* results: names registered, names shmb_segment_unlink_all unlinked */
    OP_CREATE,       /* creates a segment with prefix name, left registered; its name into data */
    OP_BLOCK_DEATH,  /* blocks SHMB_PEER_DEATH_SIGNAL: only the getppid() check is left */
    OP_SPIN_SHARED,  /* sets the shared sync stage to 2, then waits for signals forever */
    OP_CHANNEL,      /* takes a message and a descriptor off the peer's channel: results: its first
                      * byte, the file's size; writes 'P' at offset 0 of the file */
    OP_TALK,         /* answers one message on the peer's channel with its byte + 1; result: the byte */
};

/* The peer of the test that uses its channel (in the peer: its copy). */
static shmb_peer_t *channel_peer;

/* The start of the data area in the tests that use it. */
typedef struct sync_area {
    atomic_int flag;
    atomic_int pid;
    _Atomic uint64_t t_ns;
    char names[2][SHMB_SEGMENT_NAME_MAX + 1]; /* the middle owner's two segments */
} sync_area_t;

/* Shared by the test, a middle owner and its peer (MAP_SHARED anonymous, mapped before the forks). */
static sync_area_t *shared_sync;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* OP_TALK's work in the peer: a round trip on the channel while the owner waits for no reply to the command. */
static int talk(uint64_t result[SHMB_PEER_RESULTS])
{
    unsigned char msg[8];
    size_t len = 0;
    int ret = shmb_channel_recv(&channel_peer->channel, msg, sizeof(msg), &len);
    if (ret < 0)
        return ret;
    result[0] = msg[0];
    msg[0]++;
    return shmb_channel_send(&channel_peer->channel, msg, 1);
}

/* OP_CHANNEL's work in the peer. */
static int take_descriptor(uint64_t result[SHMB_PEER_RESULTS])
{
    char msg[8];
    size_t len = 0;
    int fd = -1;
    int ret = shmb_channel_recv_fd(&channel_peer->channel, msg, sizeof(msg), &len, &fd);
    if (ret < 0 || fd < 0)
        return ret < 0 ? ret : -EPROTO;
    struct stat st;
    if (fstat(fd, &st) != 0 || pwrite(fd, "P", 1, 0) != 1)
        ret = -errno;
    close(fd);
    result[0] = (unsigned char)msg[0];
    result[1] = (uint64_t)st.st_size;
    return ret;
}

static int handler(void *ctx, const shmb_peer_cmd_t *cmd, void *data, size_t data_bytes,
                   uint64_t result[SHMB_PEER_RESULTS])
{
    static uint64_t seen;
    static shmb_segment_t own;
    unsigned char *bytes = data;
    seen++;
    switch (cmd->op) {
    case OP_ECHO:
        result[0] = cmd->arg[0] + cmd->arg[1];
        result[1] = cmd->arg[2] ^ cmd->arg[3];
        result[2] = hash_name(cmd->name);
        result[3] = seen;
        return 0;
    case OP_CTX:
        result[0] = *(const uint64_t *)ctx;
        return 0;
    case OP_DATA:
        for (size_t i = 0; i < data_bytes; i++) {
            result[0] += bytes[i];
            bytes[i] = (unsigned char)(255 - bytes[i]);
        }
        result[1] = data_bytes;
        return 0;
    case OP_FAIL_RECORDED:
        return shmb_error_record("shm_open", ENOENT, cmd->name);
    case OP_FAIL_BARE:
        return -EIO;
    case OP_POSITIVE:
        result[0] = 9;
        return 5;
    case OP_STALL:
        atomic_store(&((sync_area_t *)data)->flag, 1);
        for (;;)
            pause();
    case OP_EXIT:
        _exit((int)cmd->arg[0]);
    case OP_FAULT: {
        int null = open("/dev/null", O_WRONLY);
        int fd = memfd_create("fault", 0);
        char *p = fd >= 0 ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (null < 0 || p == MAP_FAILED || dup2(null, STDERR_FILENO) < 0 ||
            shmb_segment_install_signal_cleanup() != 0 || shmb_segment_set_fault_line("test: no space") != 0)
            _exit(9);
        *(volatile char *)p = 1;
        _exit(10);
    }
    case OP_REGISTRY:
        result[0] = shmb_segment_registered();
        result[1] = shmb_segment_unlink_all();
        return 0;
    case OP_CREATE: {
        int ret = shmb_segment_create(&own, cmd->name, 4096, NULL, NULL);
        if (ret < 0)
            return ret;
        snprintf(data, data_bytes, "%s", own.name);
        result[0] = shmb_segment_registered();
        return 0;
    }
    case OP_BLOCK_DEATH: {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SHMB_PEER_DEATH_SIGNAL);
        return sigprocmask(SIG_BLOCK, &set, NULL) == 0 ? 0 : -errno;
    }
    case OP_SPIN_SHARED:
        atomic_store(&shared_sync->flag, 2);
        for (;;)
            pause();
    case OP_CHANNEL:
        return take_descriptor(result);
    case OP_TALK:
        return talk(result);
    default:
        return -ENOSYS;
    }
}

/* Every test command is handler's (it switches on the op); OP_TALK is the last. */
static const shmb_peer_handler_t runs[] = {
    [OP_ECHO] = handler,     [OP_CTX] = handler,         [OP_DATA] = handler,        [OP_FAIL_RECORDED] = handler,
    [OP_FAIL_BARE] = handler, [OP_POSITIVE] = handler,    [OP_STALL] = handler,       [OP_EXIT] = handler,
    [OP_FAULT] = handler,    [OP_REGISTRY] = handler,    [OP_CREATE] = handler,      [OP_BLOCK_DEATH] = handler,
    [OP_SPIN_SHARED] = handler, [OP_CHANNEL] = handler, [OP_TALK] = handler};
static const shmb_peer_commands_t commands = {runs, sizeof(runs) / sizeof(*runs), NULL};

static uint64_t ctx_value = CTX_MAGIC;

static shmb_peer_cmd_t command(uint32_t op, const char *name)
{
    shmb_peer_cmd_t cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op = op;
    snprintf(cmd.name, sizeof(cmd.name), "%s", name ? name : "");
    return cmd;
}

static void start(shmb_peer_t *peer, size_t data_bytes)
{
    assert_int_equal(shmb_peer_start(peer, PREFIX, data_bytes, &commands, &ctx_value), 0);
    assert_true(peer->pid > 0);
}

/* The peer is gone and reaped, and nothing of it or of its control segment is left. */
static void assert_nothing_left(pid_t pid, pid_t owner)
{
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    assert_int_equal(shmb_test_names_of(PREFIX, pid, 0), 0);
    assert_int_equal(shmb_test_names_of(PREFIX, owner, 0), 0);
}

/* Stops the peer (stop returns want) and asserts nothing of it is left. */
static void stop_and_check(shmb_peer_t *peer, int want)
{
    const pid_t pid = peer->pid;
    assert_int_equal(shmb_peer_stop(peer), want);
    assert_nothing_left(pid, getpid());
}

/* Polls until pid ends: its status and the time it was seen gone, or -1 after 5 s. */
static int wait_gone(pid_t pid, uint64_t *t_ns)
{
    uint64_t deadline = shmb_clock_now_ns() + 5000000000ull;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r != 0 || shmb_clock_now_ns() > deadline)
            return -1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    *t_ns = shmb_clock_now_ns();
    return status;
}

static void test_start_rejects_bad_input(void **state)
{
    shmb_peer_t peer;
    size_t before = shmb_segment_registered();
    const shmb_peer_commands_t none = {NULL, 0, NULL};
    assert_int_equal(shmb_peer_start(&peer, PREFIX, 0, NULL, NULL), -EINVAL);
    assert_int_equal(shmb_peer_start(&peer, PREFIX, 0, &none, NULL), -EINVAL);
    assert_int_equal(shmb_peer_start(&peer, "no_slash", 0, &commands, NULL), -EINVAL);
    assert_int_equal(shmb_peer_start(&peer, "/a/b", 0, &commands, NULL), -EINVAL);
    assert_int_equal(shmb_segment_registered(), before);
    assert_int_equal(shmb_test_names_of(PREFIX, getpid(), 0), 0);
    shmb_test_assert_no_child();
}

/* A table's peer: command 1 answers how often `before` ran; before fails with -EDOM from its fourth call. */
static uint64_t befores;
static int count_before(void *ctx)
{
    (void)ctx;
    return ++befores >= 4 ? -EDOM : 0;
}
static SHMB_PEER_COMMAND(answer_befores)
{
    result[0] = befores;
    return 0;
}

static void test_commands_table(void **state)
{
    static const shmb_peer_handler_t table[] = {[1] = answer_befores, [2] = NULL, [3] = answer_befores};
    const shmb_peer_commands_t cmds = {table, 3, count_before}; /* op 3 is past n */
    shmb_peer_t peer;
    assert_int_equal(shmb_peer_start(&peer, PREFIX, 0, &cmds, NULL), 0);
    uint64_t r[SHMB_PEER_RESULTS];
    assert_int_equal(shmb_peer_command(&peer, 1, 0, 0, 0, 0, NULL, r), 0);
    assert_true(r[0] == 1); /* before ran, then the command */
    assert_int_equal(shmb_peer_command(&peer, 2, 0, 0, 0, 0, NULL, r), -ENOSYS); /* a NULL entry */
    assert_int_equal(shmb_peer_command(&peer, 3, 0, 0, 0, 0, NULL, r), -ENOSYS); /* past n */
    assert_int_equal(shmb_peer_command(&peer, 1, 0, 0, 0, 0, NULL, r), 0);
    assert_true(r[0] == 2); /* no before for what is not a command */
    assert_int_equal(shmb_peer_command(&peer, 1, 0, 0, 0, 0, NULL, r), 0);
    assert_int_equal(shmb_peer_command(&peer, 1, 0, 0, 0, 0, NULL, r), -EDOM); /* before's error */
    stop_and_check(&peer, 0);
}

static void test_round_trips(void **state)
{
    shmb_peer_t peer;
    start(&peer, 0);
    assert_null(peer.data);
    for (uint64_t i = 0; i < ROUND_TRIPS; i++) {
        shmb_peer_cmd_t cmd = command(OP_ECHO, NULL);
        snprintf(cmd.name, sizeof(cmd.name), "/name_%llu", (unsigned long long)i);
        cmd.arg[0] = i;
        cmd.arg[1] = i * 7 + 1;
        cmd.arg[2] = ~i;
        cmd.arg[3] = i << 32;
        uint64_t r[SHMB_PEER_RESULTS];
        assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
        assert_true(r[0] == i * 8 + 1);
        assert_true(r[1] == (~i ^ (i << 32)));
        assert_true(r[2] == hash_name(cmd.name));
        assert_true(r[3] == i + 1); /* each command ran once, in order */
    }
    uint64_t r[SHMB_PEER_RESULTS];
    shmb_peer_cmd_t cmd = command(OP_CTX, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[0] == CTX_MAGIC);
    /* shmb_peer_command builds the same command from its parts */
    const uint64_t i = ROUND_TRIPS;
    assert_int_equal(shmb_peer_command(&peer, OP_ECHO, i, i * 7 + 1, ~i, i << 32, "/parts", r), 0);
    assert_true(r[0] == i * 8 + 1 && r[1] == (~i ^ (i << 32)) && r[2] == hash_name("/parts"));
    assert_true(r[3] == ROUND_TRIPS + 2); /* after the loop and OP_CTX */
    assert_int_equal(shmb_peer_command(&peer, OP_ECHO, 0, 0, 0, 0, NULL, r), 0);
    assert_true(r[2] == hash_name(""));
    char long_name[SHMB_PEER_NAME_MAX + 2];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    assert_int_equal(shmb_peer_command(&peer, OP_ECHO, 0, 0, 0, 0, long_name, r), -ENAMETOOLONG);
    stop_and_check(&peer, 0);
}

static void test_name_and_data_travel(void **state)
{
    shmb_peer_t peer;
    const size_t bytes = 3 * 4096 + 17;
    start(&peer, bytes);
    assert_non_null(peer.data);
    assert_int_equal(peer.data_bytes, bytes);
    unsigned char *d = peer.data;
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i++) {
        assert_int_equal(d[i], 0);
        d[i] = (unsigned char)(i * 31 + 7);
        sum += d[i];
    }
    shmb_peer_cmd_t cmd = command(OP_DATA, NULL);
    uint64_t r[SHMB_PEER_RESULTS] = {1, 1, 1, 1};
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[0] == sum);
    assert_true(r[1] == bytes);
    assert_true(r[2] == 0 && r[3] == 0); /* results start zeroed */
    for (size_t i = 0; i < bytes; i++)
        assert_int_equal(d[i], 255 - (unsigned char)(i * 31 + 7));

    /* The longest name, and a NULL result pointer. */
    cmd = command(OP_ECHO, NULL);
    memset(cmd.name, 'n', SHMB_PEER_NAME_MAX);
    cmd.name[0] = '/';
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[2] == hash_name(cmd.name));
    assert_int_equal(shmb_peer_call(&peer, &cmd, NULL), 0);
    assert_int_equal(shmb_peer_stop(&peer), 0);
}

static void test_errors_travel_back(void **state)
{
    shmb_peer_t peer;
    start(&peer, 0);
    uint64_t r[SHMB_PEER_RESULTS] = {42, 42, 42, 42};

    shmb_peer_cmd_t cmd = command(OP_FAIL_RECORDED, "/missing_segment");
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), -ENOENT);
    assert_string_equal(shmb_error_last()->call, "shm_open");
    assert_int_equal(shmb_error_last()->err, ENOENT);
    assert_string_equal(shmb_error_last()->object, "/missing_segment");
    assert_true(r[0] == 42); /* untouched on failure */

    cmd = command(OP_FAIL_BARE, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), -EIO);
    assert_string_equal(shmb_error_last()->call, "peer command");
    assert_string_equal(shmb_error_last()->object, "op 5");

    cmd = command(OP_POSITIVE, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[0] == 9);

    cmd = command(SHMB_PEER_OP_QUIT, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), -EINVAL);
    cmd = command(OP_ECHO, NULL);
    memset(cmd.name, 'x', sizeof(cmd.name));
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), -ENAMETOOLONG);

    /* The peer still serves after all that. */
    cmd = command(OP_ECHO, "/after");
    cmd.arg[0] = 2;
    cmd.arg[1] = 3;
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[0] == 5);
    stop_and_check(&peer, 0);
}

/* A third process SIGKILLs the peer mid-command: the waiting owner says so within the limit. */
static void test_peer_killed_mid_wait(void **state)
{
    shmb_peer_t peer;
    start(&peer, sizeof(sync_area_t));
    sync_area_t *sync = peer.data;
    pid_t killer = fork();
    assert_true(killer >= 0);
    if (killer == 0) {
        while (atomic_load(&sync->flag) != 1)
            sched_yield();
        atomic_store(&sync->t_ns, shmb_clock_now_ns());
        _exit(kill(peer.pid, SIGKILL) == 0 ? 0 : 1);
    }
    shmb_peer_cmd_t cmd = command(OP_STALL, NULL);
    int ret = shmb_peer_call(&peer, &cmd, NULL);
    uint64_t t_end = shmb_clock_now_ns();
    shmb_test_reap_ok(killer);
    assert_int_equal(ret, -EPIPE);
    uint64_t t_kill = atomic_load(&sync->t_ns);
    assert_true(t_kill > 0 && t_end > t_kill);
    assert_true(t_end - t_kill < NOTICE_LIMIT_NS);
    assert_string_equal(shmb_error_last()->call, "peer process");
    char expect[64];
    snprintf(expect, sizeof(expect), "pid %ld killed by signal 9 ", (long)peer.pid);
    assert_memory_equal(shmb_error_last()->object, expect, strlen(expect));
    assert_true(peer.reaped);

    /* Every later call says the same at once, and stop still cleans up. */
    assert_int_equal(shmb_peer_call(&peer, &cmd, NULL), -EPIPE);
    pid_t pid = peer.pid;
    assert_int_equal(shmb_peer_stop(&peer), -EPIPE);
    assert_int_equal(peer.pid, 0);
    assert_nothing_left(pid, getpid());
}

static void test_peer_ends_between_calls(void **state)
{
    shmb_peer_t peer;
    /* Killed while idle: the next call notices. */
    start(&peer, 0);
    assert_int_equal(kill(peer.pid, SIGKILL), 0);
    shmb_peer_cmd_t cmd = command(OP_ECHO, NULL);
    uint64_t t0 = shmb_clock_now_ns();
    assert_int_equal(shmb_peer_call(&peer, &cmd, NULL), -EPIPE);
    assert_true(shmb_clock_now_ns() - t0 < NOTICE_LIMIT_NS);
    stop_and_check(&peer, -EPIPE);

    /* Exits by itself inside a command. */
    start(&peer, 0);
    cmd = command(OP_EXIT, NULL);
    cmd.arg[0] = 7;
    assert_int_equal(shmb_peer_call(&peer, &cmd, NULL), -EPIPE);
    char expect[64];
    snprintf(expect, sizeof(expect), "pid %ld exited with status 7", (long)peer.pid);
    assert_string_equal(shmb_error_last()->object, expect);
    assert_true(WIFEXITED(peer.wait_status) && WEXITSTATUS(peer.wait_status) == 7);
    stop_and_check(&peer, -EPIPE);

    /* Out of shared memory outside a guard: the fault line said so, recorded as ENOSPC for the owner. */
    start(&peer, 0);
    cmd = command(OP_FAULT, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, NULL), -EPIPE);
    assert_string_equal(shmb_error_last()->call, "peer process");
    assert_int_equal(shmb_error_last()->err, ENOSPC);
    assert_non_null(strstr(shmb_error_last()->object, "(SIGBUS)"));
    assert_true(WIFEXITED(peer.wait_status) && WEXITSTATUS(peer.wait_status) == SHMB_SEGMENT_FAULT_EXIT);
    stop_and_check(&peer, -EPIPE);
}

/* The peer's unlink_all or fatal signal spares the owner's segments; its own go when it dies or quits. */
static void test_peer_has_its_own_registry(void **state)
{
    shmb_segment_t mine;
    assert_int_equal(shmb_segment_create(&mine, PREFIX, 4096, NULL, NULL), 0);
    shmb_peer_t peer;
    start(&peer, 512);
    assert_true(shmb_segment_registered() >= 2); /* mine and the control segment */
    uint64_t r[SHMB_PEER_RESULTS];
    shmb_peer_cmd_t cmd = command(OP_REGISTRY, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[0] == 0 && r[1] == 0);
    assert_true(shmb_test_shm_exists(mine.name));
    assert_true(shmb_test_shm_exists(peer.control.name));

    cmd = command(OP_CREATE, PREFIX);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    assert_true(r[0] == 1);
    char own[SHMB_SEGMENT_NAME_MAX + 1];
    snprintf(own, sizeof(own), "%s", (const char *)peer.data);
    assert_true(shmb_test_shm_exists(own));
    assert_int_equal(shmb_test_names_of(PREFIX, peer.pid, 0), 1);

    /* SIGTERM: the peer's inherited cleanup handler unlinks its own. */
    pid_t pid = peer.pid;
    assert_int_equal(kill(pid, SIGTERM), 0);
    cmd = command(OP_ECHO, NULL);
    assert_int_equal(shmb_peer_call(&peer, &cmd, NULL), -EPIPE);
    assert_true(WIFSIGNALED(peer.wait_status) && WTERMSIG(peer.wait_status) == SIGTERM);
    assert_false(shmb_test_shm_exists(own));
    assert_true(shmb_test_shm_exists(mine.name));
    assert_true(shmb_test_shm_exists(peer.control.name));
    assert_int_equal(shmb_peer_stop(&peer), -EPIPE);

    /* QUIT: what the peer created and left is unlinked too. */
    start(&peer, 512);
    cmd = command(OP_CREATE, PREFIX);
    assert_int_equal(shmb_peer_call(&peer, &cmd, r), 0);
    snprintf(own, sizeof(own), "%s", (const char *)peer.data);
    assert_true(shmb_test_shm_exists(own));
    pid = peer.pid;
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_false(shmb_test_shm_exists(own));
    assert_true(shmb_test_shm_exists(mine.name));
    assert_int_equal(shmb_segment_destroy(&mine, NULL), 0);
    assert_nothing_left(pid, getpid());
}

/* SIGCHLD ignored or SA_NOCLDWAIT inherited: the peer is still reaped, its clean end no death (in a child). */
static int inherited_sigchld_run(int flags, void (*disposition)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = disposition;
    sa.sa_flags = flags;
    if (sigaction(SIGCHLD, &sa, NULL) != 0)
        return 10;
    shmb_peer_t peer;
    if (shmb_peer_start(&peer, PREFIX, 0, &commands, &ctx_value) != 0)
        return 11;
    shmb_peer_cmd_t cmd = command(OP_ECHO, NULL);
    if (shmb_peer_call(&peer, &cmd, NULL) != 0)
        return 12;
    if (shmb_peer_stop(&peer) != 0)
        return 13;
    if (sigaction(SIGCHLD, NULL, &sa) != 0 || (sa.sa_flags & SA_NOCLDWAIT) || sa.sa_handler == SIG_IGN)
        return 14;
    return sa.sa_handler == (disposition == SIG_IGN ? SIG_DFL : disposition) ? 0 : 15; /* a handler stays */
}

static void on_child(int sig)
{
    (void)sig;
}

static void test_inherited_sigchld(void **state)
{
    const struct {
        int flags;
        void (*disposition)(int);
    } cases[] = {{0, SIG_IGN}, {SA_NOCLDWAIT, SIG_DFL}, {SA_NOCLDWAIT, on_child}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(inherited_sigchld_run(cases[i].flags, cases[i].disposition));
        int status = shmb_test_reap(pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
            fail_msg("case %zu: step %d failed", i, WEXITSTATUS(status));
        assert_int_equal(shmb_test_names_of(PREFIX, pid, 0), 0);
    }
}

static void test_clean_quit(void **state)
{
    int fds = shmb_test_open_fds();
    size_t registered = shmb_segment_registered();
    shmb_peer_t peer;
    start(&peer, 1 << 20);
    assert_int_equal(shmb_test_open_fds(), fds + 1); /* the control segment's fd is closed; the channel's end open */
    assert_int_equal(shmb_segment_registered(), registered + 1);
    assert_int_equal(shmb_test_names_of(PREFIX, getpid(), 0), 1);
    char control[SHMB_SEGMENT_NAME_MAX + 1];
    snprintf(control, sizeof(control), "%s", peer.control.name);
    pid_t pid = peer.pid;
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_int_equal(peer.pid, 0);
    assert_null(peer.data);
    assert_false(shmb_test_shm_exists(control));
    assert_int_equal(shmb_test_open_fds(), fds);
    assert_int_equal(shmb_segment_registered(), registered);
    assert_nothing_left(pid, getpid());
    assert_int_equal(shmb_peer_stop(&peer), 0); /* a second stop has nothing to do */
}

/* A descriptor crosses the peer's channel beside a command: the peer sees the same file; stop closes it. */
static void test_channel_carries_a_descriptor(void **state)
{
    int fds = shmb_test_open_fds();
    shmb_peer_t peer;
    channel_peer = &peer;
    start(&peer, 0);
    int fd = memfd_create("test_peer", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 12345), 0);
    assert_int_equal(shmb_channel_send_fd(&peer.channel, "m", 1, fd), 0);
    uint64_t result[SHMB_PEER_RESULTS];
    assert_int_equal(shmb_peer_command(&peer, OP_CHANNEL, 0, 0, 0, 0, NULL, result), 0);
    assert_int_equal(result[0], 'm');
    assert_int_equal(result[1], 12345);
    char c = 0;
    assert_int_equal(pread(fd, &c, 1, 0), 1);
    assert_int_equal(c, 'P');
    close(fd);
    pid_t pid = peer.pid;
    assert_int_equal(shmb_peer_stop(&peer), 0);
    assert_int_equal(peer.channel.fd, -1);
    assert_int_equal(shmb_test_open_fds(), fds);
    assert_nothing_left(pid, getpid());
}

/* post and await apart: talk on the channel mid-command, then the reply or its error; QUIT cannot be posted. */
static void test_post_then_await(void **state)
{
    shmb_peer_t peer;
    channel_peer = &peer;
    start(&peer, 0);
    shmb_peer_cmd_t cmd = command(OP_TALK, NULL);
    assert_int_equal(shmb_peer_post(&peer, &cmd), 0);
    unsigned char msg[8] = {'a'};
    size_t len = 0;
    assert_int_equal(shmb_channel_send(&peer.channel, msg, 1), 0);
    assert_int_equal(shmb_channel_recv(&peer.channel, msg, sizeof(msg), &len), 0);
    assert_int_equal(len, 1);
    assert_int_equal(msg[0], 'b');
    uint64_t result[SHMB_PEER_RESULTS] = {0};
    assert_int_equal(shmb_peer_await(&peer, result), 0);
    assert_int_equal(result[0], 'a');
    cmd = command(OP_FAIL_BARE, NULL);
    assert_int_equal(shmb_peer_post(&peer, &cmd), 0);
    assert_int_equal(shmb_peer_await(&peer, result), -EIO);
    cmd = command(SHMB_PEER_OP_QUIT, NULL);
    assert_int_equal(shmb_peer_post(&peer, &cmd), -EINVAL);
    assert_int_equal(shmb_peer_stop(&peer), 0);
}

/* A middle owner with a peer and two segments is SIGKILLed: the peer (inherited by this subreaper) ends
 * ORPHANED within the limit and unlinks the middle's segments, busy in a command or idle (getppid() only). */
/* On a failed check: kills and reaps the middle and the peer, unlinks their names, and fails. */
static void abandon(pid_t middle, int middle_alive, pid_t peer_pid)
{
    if (middle_alive) {
        kill(middle, SIGKILL);
        waitpid(middle, NULL, 0);
    }
    if (peer_pid > 0) {
        kill(peer_pid, SIGKILL);
        waitpid(peer_pid, NULL, 0);
        shmb_test_names_of(PREFIX, peer_pid, 1);
    }
    shmb_test_names_of(PREFIX, middle, 1);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    fail_msg("the middle owner or its peer did not behave; both killed");
}

static void test_owner_dies(void **state)
{
    const int busy = shmb_test_arg(state);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    atomic_store(&shared_sync->flag, 0);
    atomic_store(&shared_sync->pid, 0);
    pid_t middle = fork();
    assert_true(middle >= 0);
    if (middle == 0) {
        shmb_segment_forget_all();
        shmb_peer_t peer;
        shmb_segment_t seg[2];
        if (shmb_peer_start(&peer, PREFIX, 0, &commands, &ctx_value) < 0)
            _exit(1);
        atomic_store(&shared_sync->pid, (int)peer.pid);
        if (shmb_segment_create(&seg[0], PREFIX, 4096, NULL, NULL) < 0 ||
            shmb_segment_create(&seg[1], PREFIX, 8192, NULL, NULL) < 0)
            _exit(1);
        for (int i = 0; i < 2; i++)
            snprintf(shared_sync->names[i], sizeof(shared_sync->names[i]), "%s", seg[i].name);
        shmb_peer_cmd_t cmd = command(busy ? OP_SPIN_SHARED : OP_BLOCK_DEATH, NULL);
        if (shmb_peer_call(&peer, &cmd, NULL) < 0)
            _exit(1);
        atomic_store(&shared_sync->flag, 2);
        for (;;)
            pause();
    }
    uint64_t deadline = shmb_clock_now_ns() + 5000000000ull;
    while (atomic_load(&shared_sync->flag) != 2) {
        if (waitpid(middle, NULL, WNOHANG) != 0 || shmb_clock_now_ns() > deadline)
            abandon(middle, 1, atomic_load(&shared_sync->pid));
        sched_yield();
    }
    pid_t peer_pid = (pid_t)atomic_load(&shared_sync->pid);
    if (shmb_test_names_of(PREFIX, middle, 0) != 3)
        abandon(middle, 1, peer_pid);
    /* Not the middle's, though named "<PREFIX><middle pid>_*": a live run with a longer prefix, another
     * program's file, a middle's name that now names another file. */
    char prefix_b[64], other[128], replaced[SHMB_SEGMENT_NAME_MAX + 1];
    snprintf(prefix_b, sizeof(prefix_b), "%s%ld_", PREFIX, (long)middle);
    shmb_segment_t run_b;
    assert_int_equal(shmb_segment_create(&run_b, prefix_b, 4096, NULL, NULL), 0);
    snprintf(other, sizeof(other), "%s%ld_other_program", &PREFIX[1], (long)middle);
    assert_int_equal(shmb_test_shm_squat(other), 0);
    snprintf(replaced, sizeof(replaced), "%s", shared_sync->names[0] + 1);
    assert_int_equal(shm_unlink(shared_sync->names[0]), 0);
    assert_int_equal(shmb_test_shm_squat(replaced), 0);
    assert_int_equal(kill(middle, SIGKILL), 0);
    uint64_t t_kill = shmb_clock_now_ns();
    shmb_test_reap_signaled(middle, SIGKILL);
    uint64_t t_gone = 0;
    int status = wait_gone(peer_pid, &t_gone);
    if (status == -1)
        abandon(middle, 0, peer_pid);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), SHMB_PEER_EXIT_ORPHANED);
    assert_true(t_gone - t_kill < NOTICE_LIMIT_NS);
    const int kept =
        shmb_test_shm_exists(run_b.name) + shmb_test_shm_exists(other) + shmb_test_shm_exists(replaced);
    const int middles = shmb_test_shm_exists(shared_sync->names[1]);
    const int left = shmb_test_names_of(PREFIX, middle, 0); /* the kept ones only: no control segment */
    assert_int_equal(shmb_segment_destroy(&run_b, NULL), 0);
    shmb_test_names_of(PREFIX, middle, 1);
    assert_int_equal(kept, 3);
    assert_int_equal(left, 3);
    assert_int_equal(middles, 0);
    assert_int_equal(shmb_test_names_of(PREFIX, peer_pid, 0), 0);
}

static int setup(void **state)
{
    if (access("/dev/shm", W_OK) != 0)
        return -1;
    shared_sync = mmap(NULL, sizeof(*shared_sync), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return shared_sync == MAP_FAILED ? -1 : 0;
}

int main(void)
{
    if (!shmb_test_shm_writable())
        return 77;
    /* As the binaries do: a fatal signal unlinks what is registered. */
    if (shmb_segment_install_signal_cleanup() != 0)
        return 1;
    static const int busy = 1, waits = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_rejects_bad_input),
        cmocka_unit_test(test_commands_table), cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_name_and_data_travel),
        cmocka_unit_test(test_errors_travel_back),
        cmocka_unit_test(test_peer_killed_mid_wait),
        cmocka_unit_test(test_peer_ends_between_calls),
        cmocka_unit_test(test_peer_has_its_own_registry),
        cmocka_unit_test(test_clean_quit),
        cmocka_unit_test(test_channel_carries_a_descriptor),
        cmocka_unit_test(test_post_then_await),
        cmocka_unit_test(test_inherited_sigchld),
        shmb_test_case_with("test_owner_dies_while_peer_is_busy", test_owner_dies, &busy, NULL),
        shmb_test_case_with("test_owner_dies_while_peer_waits", test_owner_dies, &waits, NULL),
    };
    return shmb_test_run(tests, setup, NULL);
}
