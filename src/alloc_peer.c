#include "shmbench/alloc_peer.h"

#include "shmbench/clock.h"
#include "shmbench/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The commands of the peer. */
enum {
    OP_POSIX = 1, /* name; arg: bytes. results: attach ns, detach ns, tag read */
};

uint64_t shmb_alloc_peer_tag(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull; /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
}

/* ---- the peer's side ---- */

/* Mooncake's receiver opening a buffer by name: shm_open(O_RDWR), fstat and
 * a size check, mmap of all of it; the descriptor stays open until detach.
 * Nothing is registered: the peer never unlinks the owner's names. */
static int posix_attach(const char *name, uint64_t bytes, void **addr, int *fd)
{
    int f = shm_open(name, O_RDWR, 0);
    if (f < 0)
        return shmb_error_record("shm_open", errno, name);
    struct stat st;
    int ret = 0;
    if (fstat(f, &st) != 0) {
        ret = shmb_error_record("fstat", errno, name);
    } else if ((uint64_t)st.st_size != bytes) {
        char what[SHMB_ERROR_OBJECT_MAX];
        snprintf(what, sizeof(what), "%.200s: %lld bytes, expected %llu", name, (long long)st.st_size,
                 (unsigned long long)bytes);
        ret = shmb_error_record("fstat size check", EPROTO, what);
    }
    void *p = MAP_FAILED;
    if (ret == 0 && (p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) == MAP_FAILED)
        ret = shmb_error_record("mmap", errno, name);
    if (ret < 0) {
        close(f);
        return ret;
    }
    *addr = p;
    *fd = f;
    return 0;
}

static int posix_detach(void *addr, uint64_t bytes, int fd, const char *name)
{
    int ret = 0;
    if (munmap(addr, (size_t)bytes) != 0)
        ret = shmb_error_record("munmap", errno, name);
    if (close(fd) != 0 && ret == 0)
        ret = shmb_error_record("close", errno, name);
    return ret;
}

static int peer_posix(const shmb_peer_cmd_t *cmd, uint64_t result[SHMB_PEER_RESULTS])
{
    const uint64_t bytes = cmd->arg[0];
    if (bytes < sizeof(uint64_t) || bytes > SIZE_MAX || cmd->name[0] != '/')
        return -EINVAL;
    void *addr = NULL;
    int fd = -1;
    const uint64_t t0 = shmb_clock_now_ns();
    int ret = posix_attach(cmd->name, bytes, &addr, &fd);
    const uint64_t t1 = shmb_clock_now_ns();
    if (ret < 0)
        return ret;
    uint64_t tag;
    memcpy(&tag, addr, sizeof(tag));
    const uint64_t t2 = shmb_clock_now_ns();
    ret = posix_detach(addr, bytes, fd, cmd->name);
    const uint64_t t3 = shmb_clock_now_ns();
    result[0] = t1 - t0;
    result[1] = t3 - t2;
    result[2] = tag;
    return ret;
}

static int peer_handle(void *ctx, const shmb_peer_cmd_t *cmd, void *data, size_t data_bytes,
                       uint64_t result[SHMB_PEER_RESULTS])
{
    (void)ctx;
    (void)data;
    (void)data_bytes;
    switch (cmd->op) {
    case OP_POSIX: return peer_posix(cmd, result);
    default: return -EINVAL;
    }
}

int shmb_alloc_peer_start(shmb_peer_t *peer, const char *prefix)
{
    return shmb_peer_start(peer, prefix, SHMB_ALLOC_PEER_DATA_BYTES, peer_handle, NULL);
}

/* ---- the owner's side ---- */

int shmb_alloc_peer_posix(shmb_peer_t *peer, const char *name, uint64_t bytes, uint64_t tag,
                          uint64_t *attach_ns, uint64_t *detach_ns, char *why, size_t why_cap)
{
    shmb_peer_cmd_t cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op = OP_POSIX;
    cmd.arg[0] = bytes;
    if (snprintf(cmd.name, sizeof(cmd.name), "%s", name) >= (int)sizeof(cmd.name))
        return -ENAMETOOLONG;
    uint64_t res[SHMB_PEER_RESULTS];
    int ret = shmb_peer_call(peer, &cmd, res);
    if (ret < 0)
        return ret;
    if (res[2] != tag) {
        snprintf(why, why_cap, "posix: the peer read tag 0x%016llx in %s, expected 0x%016llx",
                 (unsigned long long)res[2], name, (unsigned long long)tag);
        return -EPROTO;
    }
    *attach_ns = res[0];
    *detach_ns = res[1];
    return 0;
}
