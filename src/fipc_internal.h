/*
 * fipc_internal: the hand-off models' test hook (src/fipc_jemalloc_lend.cc,
 * src/fipc_jemalloc_borrow.cc, src/fipc_classic_lend.cc); not installed.
 *
 * A unit test plants one fault, runs a hand-off through the public calls
 * and checks that the verification (shmb_fipc_handoff_verify,
 * shmb_fipc_classic_handoff_verify) refuses it. Not thread-safe: set it
 * while no hand-off runs. SHMB_FIPC_FAULT_NONE is the only value a run uses.
 */
#ifndef SHMBENCH_FIPC_INTERNAL_H
#define SHMBENCH_FIPC_INTERNAL_H

#ifdef __cplusplus
extern "C" {
#endif

enum shmb_fipc_fault {
    SHMB_FIPC_FAULT_NONE = 0,
    SHMB_FIPC_FAULT_BORROW_ADDR,  /* borrow returns the object's address + 64 */
    SHMB_FIPC_FAULT_BLOB,         /* lend writes the object's offset + 64 into the blob */
    SHMB_FIPC_FAULT_RETURN,       /* jemalloc: the return message names offset + 64 (classic has none) */
    SHMB_FIPC_FAULT_EARLY_FREE,   /* jemalloc: the lender keeps no reference; classic: lend adds no owner */
    SHMB_FIPC_FAULT_DOUBLE_FREE,  /* the free is counted twice (as a second free would be) */
};

/* The fault the next hand-offs carry. */
extern int shmb_fipc_fault;

#ifdef __cplusplus
}
#endif

#endif
