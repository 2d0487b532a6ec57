#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "helpers.h"

#include "shmbench/file.h"

/* Each test works in a fresh folder of its own, removed after. */
static char dir[64];

static int make_dir(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/shmb_test_file_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *name)
{
    static char path[2][128];
    static int which;
    which ^= 1;
    snprintf(path[which], sizeof(path[which]), "%s/%s", dir, name);
    return path[which];
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static const char *get(const char *name)
{
    static char text[256];
    FILE *f = fopen(at(name), "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Names in the folder: only those expected, no temporary left. */
static int entries(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void test_new_and_replaced(void **state)
{
    shmb_file_out_t out;
    assert_int_equal(shmb_file_out_open(at("new"), &out), 0);
    assert_int_equal(out.replace, 1);
    fputs("one\n", out.f);
    assert_int_equal(entries(), 1); /* the temporary, beside it */
    assert_int_equal(shmb_file_out_commit(&out), 0);
    assert_string_equal(get("new"), "one\n");
    const mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    assert_int_equal(stat(at("new"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);

    /* an existing file: its mode kept; given up, it stays as it was */
    assert_int_equal(chmod(at("new"), 0600), 0);
    assert_int_equal(shmb_file_out_open(at("new"), &out), 0);
    fputs("two\n", out.f);
    assert_int_equal(shmb_file_out_commit(&out), 0);
    assert_string_equal(get("new"), "two\n");
    assert_int_equal(stat(at("new"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(shmb_file_out_open(at("new"), &out), 0);
    fputs("three\n", out.f);
    shmb_file_out_abort(&out);
    shmb_file_out_abort(&out); /* twice: nothing more */
    assert_string_equal(get("new"), "two\n");
    assert_int_equal(entries(), 1);
}

/* A link at the name is refused and kept with its target: to a file, to nothing, an old temporary name. */
static void test_links_refused(void **state)
{
    shmb_file_out_t out;
    put("target", "keep\n");
    assert_int_equal(symlink(at("target"), at("link")), 0);
    assert_int_equal(shmb_file_out_open(at("link"), &out), -ELOOP);
    assert_int_equal(symlink(at("none"), at("dangling")), 0);
    assert_int_equal(shmb_file_out_open(at("dangling"), &out), -ELOOP);
    struct stat st;
    assert_int_equal(lstat(at("link"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_string_equal(get("target"), "keep\n");
    assert_int_equal(lstat(at("none"), &st), -1);

    assert_int_equal(symlink(at("target"), at("out.tmp")), 0);
    assert_int_equal(shmb_file_out_open(at("out"), &out), 0);
    fputs("new\n", out.f);
    assert_int_equal(shmb_file_out_commit(&out), 0);
    assert_string_equal(get("target"), "keep\n");
    assert_string_equal(get("out"), "new\n");
    assert_int_equal(entries(), 5);
}

/* Neither a file, a device nor a FIFO: refused. */
static void test_other_kinds_refused(void **state)
{
    shmb_file_out_t out;
    assert_int_equal(mkdir(at("d"), 0700), 0);
    assert_int_equal(shmb_file_out_open(at("d"), &out), -EISDIR);
    assert_int_equal(shmb_file_out_open(at("nodir/"), &out), -EISDIR);
    assert_int_equal(shmb_file_out_open("", &out), -EINVAL);
    assert_int_equal(shmb_file_out_open(at("nodir/x"), &out), -ENOENT);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("sock"));
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(shmb_file_out_open(at("sock"), &out), -EINVAL);
    close(s);
    assert_int_equal(entries(), 2);
}

/* A device is written through and stays one, also via a link (/dev/stdout); a full one fails at commit. */
static void test_devices_written_through(void **state)
{
    shmb_file_out_t out;
    assert_int_equal(shmb_file_out_open("/dev/null", &out), 0);
    assert_int_equal(out.replace, 0);
    fputs("x\n", out.f);
    assert_int_equal(shmb_file_out_commit(&out), 0);
    assert_int_equal(symlink("/dev/null", at("null")), 0);
    assert_int_equal(shmb_file_out_open(at("null"), &out), 0);
    fputs("x\n", out.f);
    assert_int_equal(shmb_file_out_commit(&out), 0);
    struct stat st;
    assert_int_equal(lstat(at("null"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
        assert_int_equal(shmb_file_out_open("/dev/full", &out), 0);
        fputs("x\n", out.f);
        assert_int_equal(shmb_file_out_commit(&out), -ENOSPC);
        assert_null(out.f);
    }
    assert_int_equal(entries(), 1);
}

/* A FIFO: its reader gets the bytes, the FIFO stays. */
static void test_fifo(void **state)
{
    assert_int_equal(mkfifo(at("fifo"), 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char buf[16] = {0};
        int fd = open(at("fifo"), O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        _exit(n == 6 && strcmp(buf, "piped\n") == 0 ? 0 : 1);
    }
    shmb_file_out_t out;
    assert_int_equal(shmb_file_out_open(at("fifo"), &out), 0);
    fputs("piped\n", out.f);
    assert_int_equal(shmb_file_out_commit(&out), 0);
    shmb_test_reap_ok(pid);
    struct stat st;
    assert_int_equal(lstat(at("fifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
}

/* The name turned into something else while written: not renamed over. */
static void test_changed_before_commit(void **state)
{
    shmb_file_out_t out;
    put("target", "keep\n");
    assert_int_equal(shmb_file_out_open(at("out"), &out), 0);
    fputs("new\n", out.f);
    assert_int_equal(symlink(at("target"), at("out")), 0);
    assert_int_equal(shmb_file_out_commit(&out), -EEXIST);
    struct stat st;
    assert_int_equal(lstat(at("out"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_string_equal(get("target"), "keep\n");
    assert_int_equal(entries(), 2);
}

static void test_read_line(void **state)
{
    char text[] = "ab\n\ncd\0e\nfghij\nklmnop\nlast";
    FILE *in = fmemopen(text, sizeof(text) - 1, "r");
    assert_non_null(in);
    char buf[6];
    size_t len = 99;
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), 1);
    assert_int_equal(len, 2);
    assert_string_equal(buf, "ab");
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), 1);
    assert_int_equal(len, 0);
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), 1);
    assert_int_equal(len, 4); /* its NUL counted */
    assert_memory_equal(buf, "cd\0e", 4);
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), 1); /* cap - 1 bytes: fits */
    assert_string_equal(buf, "fghij");
    len = 99;
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), -E2BIG);
    assert_int_equal(len, 99);
    assert_int_equal(fgetc(in), 'p'); /* no byte beyond cap - 1 read */
    fclose(in);
    in = fmemopen(text + 22, 4, "r");
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), 1);
    assert_string_equal(buf, "last");
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), 0);
    assert_int_equal(shmb_file_read_line(in, buf, 1, &len), -EINVAL);
    fclose(in);
    /* a file of one endless line: refused once the room is used */
    in = fopen("/dev/zero", "r");
    assert_non_null(in);
    assert_int_equal(shmb_file_read_line(in, buf, sizeof(buf), &len), -E2BIG);
    fclose(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_new_and_replaced, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_links_refused, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_other_kinds_refused, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_devices_written_through, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_fifo, make_dir, remove_dir),
        cmocka_unit_test_setup_teardown(test_changed_before_commit, make_dir, remove_dir),
        cmocka_unit_test(test_read_line),
    };
    return shmb_test_run(tests, NULL, NULL);
}
