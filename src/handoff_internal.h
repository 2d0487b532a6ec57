/*
 * handoff (library-internal): what the two files of the hand-off benchmark
 * share, and its test hooks; not installed.
 *
 *   handoff_bench.c  the lender (this process): configuration, set-up of each
 *                    flavour, the timed hand-offs, rows and the run
 *   handoff_peer.c   the borrower: its side of each flavour's hand-off, and
 *                    the forked borrower process (its message loop, its start
 *                    and its reaping)
 *
 * Between the two, every message goes in an envelope of one kind byte (the
 * type a message of Flow-IPC's structured channels carries too), over
 * shmbench/channel.h:
 *   lender -> borrower: OPEN (classic pool name), SESSION (SHM-jemalloc's
 *                       LendArena / LendPool), JBLOB / CBLOB (a handle), QUIT;
 *   borrower -> lender: DONE (+ the session's Response, or the borrower's
 *                       free count after a CBLOB), RETURN (SHM-jemalloc's
 *                       ReturnObject), FAIL (int errno, then the reason).
 * Both sides count the hand-offs of each flavour, so the borrower knows the
 * tag of hand-off k without being told.
 *
 * Functions return 0 or -errno like the public ones; -EPROTO means a failed
 * check, described in why.
 */
#ifndef SHMBENCH_HANDOFF_INTERNAL_H
#define SHMBENCH_HANDOFF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shmbench/channel.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/lookup_bench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Test hook. Non-zero: the lender writes a wrong tag (the right one + 1)
 * into the object of hand-off number shmb_handoff_bench_wrong_tag - 1 of
 * each flavour. A unit test sets it before a run and clears it after; a
 * real run leaves it 0. */
extern uint64_t shmb_handoff_bench_wrong_tag;

/* Test hook. Non-zero: the forked borrower kills itself (SIGKILL) when it
 * receives the handle of hand-off number shmb_handoff_bench_peer_dies_at - 1. */
extern uint64_t shmb_handoff_bench_peer_dies_at;

enum { HANDOFF_CLASSIC = SHMB_LOOKUP_FLOWIPC_CLASSIC, HANDOFF_JEMALLOC = SHMB_LOOKUP_FLOWIPC_JEMALLOC };

/* The kind byte of each message. */
enum {
    HANDOFF_OPEN = 'O',
    HANDOFF_SESSION = 'S',
    HANDOFF_JBLOB = 'J',
    HANDOFF_CBLOB = 'C',
    HANDOFF_QUIT = 'Q',
    HANDOFF_DONE = 'D',
    HANDOFF_RETURN = 'R',
    HANDOFF_FAIL = 'F'
};

static inline const char *handoff_flavour_name(int f)
{
    return shmb_lookup_system_name((shmb_lookup_system_t)f);
}

/* splitmix64 of the seed, the flavour and k: the tag of hand-off k.
 * Hand-offs in a row get unrelated tags, so a stale object never reads
 * right. */
static inline uint64_t handoff_tag(uint64_t seed, int flavour, uint64_t k)
{
    uint64_t z = seed ^ ((uint64_t)flavour << 56) ^ (k + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The borrower's side: in the lender's process for a run without a peer,
 * in the forked borrower process with one. */
typedef struct shmb_handoff_borrower {
    shmb_fipc_classic_arena_t *classic;
    shmb_fipc_borrower_t *jemalloc;
    uint64_t seed;
    uint64_t next[SHMB_LOOKUP_SYSTEMS]; /* the next hand-off's number, per flavour */
} shmb_handoff_borrower_t;

/* A model's refusal of hand-off k (call failed with ret) as a failed check
 * (-EPROTO, the reason in why); -ENOMEM stays -ENOMEM. */
int shmb_handoff_refused(int ret, int flavour, const char *call, uint64_t k, char *why, size_t cap);

/* SHM-jemalloc, the borrower's next hand-off: borrow blob, check the tags
 * of the object of bytes, release; the ReturnObject into msg. */
int shmb_handoff_borrow_jemalloc(shmb_handoff_borrower_t *b, const void *blob, size_t len, size_t bytes,
                                 void *msg, size_t cap, size_t *msg_len, char *why, size_t wcap);

/* SHM-classic, the borrower's next hand-off: borrow, check, release (the
 * last owner frees). */
int shmb_handoff_borrow_classic(shmb_handoff_borrower_t *b, const void *blob, size_t len, size_t bytes,
                                char *why, size_t wcap);

/* Lets what the borrower opened go; b may be used again. */
void shmb_handoff_borrower_close(shmb_handoff_borrower_t *b);

/* Forks the borrower process for objects of bytes tagged from seed,
 * joined to this one by *ch (this process's end). */
int shmb_handoff_peer_start(uint64_t seed, size_t bytes, shmb_channel_t *ch, pid_t *pid);

/* QUIT (unless run_ret is -EPIPE: the run found it dead), *ch closed, the
 * process reaped, *pid 0. Returns 0, or -EPIPE recorded as the call "peer
 * process" (with how it ended) when it had died or did not exit 0. Nothing
 * to do when *pid <= 0. */
int shmb_handoff_peer_stop(shmb_channel_t *ch, pid_t *pid, int run_ret);

#ifdef __cplusplus
}
#endif

#endif
