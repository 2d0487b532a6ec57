/*
 * handoff_internal: the hand-off benchmark's test hooks (src/handoff_bench.c);
 * not installed. A unit test sets one before a run and clears it after;
 * a real run leaves both 0.
 */
#ifndef SHMBENCH_HANDOFF_INTERNAL_H
#define SHMBENCH_HANDOFF_INTERNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Non-zero: the lender writes a wrong tag (the right one + 1) into the
 * object of hand-off number shmb_handoff_bench_wrong_tag - 1 of each
 * flavour. */
extern uint64_t shmb_handoff_bench_wrong_tag;

/* Non-zero: the forked borrower kills itself (SIGKILL) when it receives the
 * handle of hand-off number shmb_handoff_bench_peer_dies_at - 1. */
extern uint64_t shmb_handoff_bench_peer_dies_at;

#ifdef __cplusplus
}
#endif

#endif
