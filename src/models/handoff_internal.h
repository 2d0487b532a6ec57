/* handoff (library-internal): what the hand-off's lender end (handoff_link.c,
 * used by the hand-off and transfer benchmarks), borrower (handoff_borrow.c)
 * and borrower process (handoff_peer.c) share, and its test hooks. Every
 * message is an envelope of one kind byte over shmbench/channel.h: lender ->
 * borrower OPEN, SESSION, JBLOB / CBLOB (a head, then the handle), QUIT;
 * borrower -> lender DONE, RETURN, FAIL (errno, then the reason). Both sides
 * count hand-offs, so the borrower knows hand-off k's tag. 0 or -errno;
 * -EPROTO: a failed check, described in why. */
#ifndef SHMBENCH_HANDOFF_INTERNAL_H
#define SHMBENCH_HANDOFF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shmbench/channel.h"
#include "shmbench/copy.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/paths.h"
#include "shmbench/peer.h"
#include "shmbench/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Test hooks, 0 in a real run; n acts on hand-off n - 1 of each flavour:
 * wrong_tag: the lender writes tag + 1; wrong_byte: it flips a payload byte
 * after filling; lost_return / wrong_return (SHM-jemalloc): it loses the
 * return / reads it as another object's; peer_dies_at: the forked borrower
 * SIGKILLs itself on that handle. */
extern uint64_t shmb_handoff_bench_wrong_tag;
extern uint64_t shmb_handoff_bench_wrong_byte;
extern uint64_t shmb_handoff_bench_lost_return;
extern uint64_t shmb_handoff_bench_wrong_return;
extern uint64_t shmb_handoff_bench_peer_dies_at;

enum { HANDOFF_CLASSIC = SHMB_SYSTEM_FLOWIPC_CLASSIC, HANDOFF_JEMALLOC = SHMB_SYSTEM_FLOWIPC_JEMALLOC };

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
    return shmb_system_name((shmb_system_t)f);
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

/* What a handle message carries before the handle: the object's size (its
 * tags at its first and last 8 bytes) and, when not 0, the bytes of
 * payload at SHMB_HANDOFF_PAYLOAD_AT that the borrower checks against the
 * copy pattern (shmbench/copy.h) too. */
typedef struct shmb_handoff_head {
    uint64_t bytes;
    uint64_t payload;
    uint64_t from; /* the payload: the pattern from this offset of its filled source */
} shmb_handoff_head_t;

#define SHMB_HANDOFF_PAYLOAD_AT 64u /* where an object's payload starts: after its first tag, aligned */
#define SHMB_HANDOFF_PAYLOAD_SLACK (2u * SHMB_HANDOFF_PAYLOAD_AT) /* an object's bytes beyond its payload */

/* The borrower's side: in the lender's process for a run without a peer,
 * in the forked borrower process with one. */
typedef struct shmb_handoff_borrower {
    shmb_fipc_classic_arena_t *classic;
    shmb_fipc_borrower_t *jemalloc;
    uint64_t seed;
    uint64_t next[SHMB_SYSTEMS]; /* the next hand-off's number, per flavour */
} shmb_handoff_borrower_t;

/* A model's refusal of hand-off k (call failed with ret) as a failed check
 * (-EPROTO, the reason in why); -ENOMEM stays -ENOMEM. */
int shmb_handoff_refused(int ret, int flavour, const char *call, uint64_t k, char *why, size_t cap);

/* SHM-jemalloc, the borrower's next hand-off: borrow blob, check the tags
 * of the object of head->bytes (and its payload), release; the
 * ReturnObject into msg. */
int shmb_handoff_borrow_jemalloc(shmb_handoff_borrower_t *b, const void *blob, size_t len,
                                 const shmb_handoff_head_t *head, void *msg, size_t cap, size_t *msg_len, char *why,
                                 size_t wcap);

/* SHM-classic, the borrower's next hand-off: borrow, check, release (the
 * last owner frees). */
int shmb_handoff_borrow_classic(shmb_handoff_borrower_t *b, const void *blob, size_t len,
                                const shmb_handoff_head_t *head, char *why, size_t wcap);

/* Lets what the borrower opened go; b may be used again. */
void shmb_handoff_borrower_close(shmb_handoff_borrower_t *b);

/* ---- the lender's end (handoff_link.c) ---- */

typedef union shmb_handoff_object {
    shmb_fipc_object_t j;
    shmb_fipc_classic_object_t c;
} shmb_handoff_object_t;

/* One lender, for one flavour at a time, and the borrower it talks to: a
 * process (peer.pid > 0, over peer.channel), or `local` in this process. */
typedef struct shmb_handoff_link {
    uint64_t seed;
    shmb_peer_t peer; /* the borrower process (pid 0 without one), its channel */
    shmb_handoff_borrower_t local; /* the borrower without a peer */
    shmb_fipc_classic_t *pool;
    shmb_fipc_classic_arena_t *arena;
    shmb_fipc_jemalloc_t *j;
    shmb_fipc_lender_t *lender;
    size_t pools_known;
    uint64_t peer_frees;                /* SHM-classic: the borrower process's frees, as it acknowledged */
    uint64_t next[SHMB_SYSTEMS]; /* the lender's next hand-off number, per flavour */
    uint64_t wrong_tag;                 /* test hook (0 in a real run): the wrong_tag hook's, this link alone */
    shmb_samples_t pool_lends;          /* SHM-jemalloc: ns of each pool's lend round trip */
    char *why;
    size_t why_cap;
} shmb_handoff_link_t;

/* l empty: no peer, nothing open, tags from seed, reasons into why. */
void shmb_handoff_link_init(shmb_handoff_link_t *l, uint64_t seed, char *why, size_t why_cap);

/* ---- the borrower process (handoff_peer.c) ---- */

/* Starts l's borrower process (its control segment under prefix), before
 * any open; the hand-off's messages cross l->peer.channel. */
int shmb_handoff_link_start_peer(shmb_handoff_link_t *l, const char *prefix);

/* QUIT (unless run_ret is -EPIPE: the run found it dead or its channel
 * broken) and the peer stopped. Returns run_ret when it is an error (its
 * record kept), else 0 or -EPIPE (a dead borrower recorded as the call
 * "peer process", with how it ended) or the stop's -errno. */
int shmb_handoff_link_stop_peer(shmb_handoff_link_t *l, int run_ret);

/* Moves the borrower process onto CPU `cpu` alone (it was forked with its
 * parent's affinity). 0 or -errno (sched_setaffinity's, recorded). */
int shmb_handoff_link_pin_peer(shmb_handoff_link_t *l, int cpu);

/* ---- the lender's end, continued ---- */

/* Flavour f's lender and its borrower: SHM-classic a pool of pool_bytes
 * opened by the borrower; SHM-jemalloc an arena lent, its pools lent (each
 * round trip into pool_lends). The model's own step-by-step check of a
 * check_bytes hand-off runs first (-EPROTO, why set, when it fails). */
int shmb_handoff_link_open(shmb_handoff_link_t *l, int f, const char *prefix, size_t pool_bytes,
                           size_t check_bytes);

/* Everything open of f, whatever happened (failed: SHM-jemalloc's session
 * is disconnected first, so that nothing waits on a dead peer). */
void shmb_handoff_link_close(shmb_handoff_link_t *l, int f, int failed);

/* Object number next[f] of bytes (>= 16), constructed and tagged at its
 * first and last 8 bytes (the wrong_tag hook writes a wrong tag); any new
 * SHM-jemalloc pool is lent to the borrower. *o must be zeroed. */
int shmb_handoff_link_construct(shmb_handoff_link_t *l, int f, size_t bytes, shmb_handoff_object_t *o);

/* The writer's payload: fn copies payload bytes of src to
 * SHMB_HANDOFF_PAYLOAD_AT in the object (bytes >= payload +
 * SHMB_HANDOFF_PAYLOAD_SLACK). */
void shmb_handoff_link_fill(shmb_handoff_link_t *l, int f, shmb_handoff_object_t *o, shmb_copy_fn fn,
                            const void *src, size_t payload);

void *shmb_handoff_object_addr(int f, const shmb_handoff_object_t *o);

/* The lender's reference, if it still holds one. */
void shmb_handoff_link_drop(int f, shmb_handoff_object_t *o);

/* Hands the last constructed object over: lend, the handle (after a head of
 * bytes and payload: a payload of 0 is not checked) to the borrower, the
 * lender's reference dropped, the borrower's borrow, checks and release,
 * and SHM-jemalloc's return back to the lender, which frees the object.
 * Returns 0, -EPROTO (a check failed, why set), -EPIPE (the peer died) or
 * -errno. */
int shmb_handoff_link_give(shmb_handoff_link_t *l, int f, shmb_handoff_object_t *o, size_t bytes, size_t payload,
                           size_t from);

/* Every object of f made so far freed exactly once, none still lent; else
 * -EPROTO with why set. */
int shmb_handoff_link_check_freed(shmb_handoff_link_t *l, int f);

#ifdef __cplusplus
}
#endif

#endif
