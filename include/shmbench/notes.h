/*
 * notes: the lines under a table's header that say how its rows were
 * measured, for the mode a run's configuration selects (a second process,
 * threads and their CPUs, one system, cold or first-touch rows, the lookup
 * mode). One function per binary; the configuration is the one the run used.
 *
 * Each function sets report->notes[0..n) and a NULL after them, and returns
 * n, or -errno with the report untouched:
 * - -EOVERFLOW: more notes than report->notes holds (with its NULL), or
 *   composed text beyond what `store` has left;
 * - -errno of shmb_sysinfo_plan_cpus (recorded) when threads > 1 and the
 *   CPUs they run on cannot be read.
 * Notes whose text depends on the run (its CPUs, sizes, counts) are
 * composed into `store`, after what it holds already (a zeroed store is
 * empty); the report points into it, so it must outlive the report.
 */
#ifndef SHMBENCH_NOTES_H
#define SHMBENCH_NOTES_H

#include <stddef.h>

#include "shmbench/alloc_bench.h"
#include "shmbench/handoff_bench.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/report.h"
#include "shmbench/transfer_bench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for every composed note of one report: the longest, a list of 256
 * threads' CPUs, takes under 1,700 bytes. */
#define SHMB_NOTES_TEXT_BYTES 8192

typedef struct shmb_notes {
    char text[SHMB_NOTES_TEXT_BYTES]; /* the composed notes, each NUL-terminated */
    size_t used;                      /* bytes of text in use (=0: empty) */
} shmb_notes_t;

/* shm_allocation_bench: a peer process (cfg->peer), the system's allocator
 * alone (cfg->system_rows), --measure_mmap_only, --cleanup=false, threads
 * (cfg->threads > 1, pinned from cfg->cpu). */
int shmb_notes_alloc(shmb_report_t *report, shmb_notes_t *store, const shmb_alloc_config_t *cfg);

/* shm_address_lookup_bench: segment and request sizes, pattern, placement,
 * one system (cfg->system_rows), a peer process, threads (pinned from
 * cfg->cpu), throughput and/or latency rows. */
int shmb_notes_lookup(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_config_t *cfg);

/* shm_address_lookup_bench's hand-off rows (shmbench/handoff_bench.h):
 * what is timed, with or without a peer process, what the speedup divides,
 * and which design the handoff and the steady flowipc_* rows stand for.
 * Appended after the notes report->notes holds already (after
 * shmb_notes_lookup); returns the notes' new count. */
int shmb_notes_handoff(shmb_report_t *report, shmb_notes_t *store, const shmb_handoff_bench_config_t *cfg);

/* shm_transfer_bench: the methods run (memcpy, nt), cold rows, a system's
 * translation (cfg->translate, over cfg->num_segments), a peer process
 * (cfg->peer), a paired run (cfg->nsystems: its systems, baseline, control,
 * rounds, ratio rows and verdicts). */
int shmb_notes_transfer(shmb_report_t *report, shmb_notes_t *store, const shmb_transfer_config_t *cfg);

/* shm_transfer_bench --workload --systems: the lines of a paired replay of
 * systems[0..n) (the baseline first, its control last; n >= 2, else
 * -EINVAL), with mooncake's relocate path when it is not the default:
 * appended after the notes report->notes holds already; returns the notes'
 * new count. (The sweep's are shmb_notes_transfer's, with cfg->nsystems.) */
int shmb_notes_transfer_paired(shmb_report_t *report, shmb_notes_t *store, const shmb_lookup_system_t *systems,
                               size_t n, shmb_mooncake_path_t path);

/* The note of src and dst on a backing other than tmpfs (shm_transfer_bench
 * and its --workload replay): the backing, its page, how the buffers were
 * made ready, then `copies` (what a copy reads and writes), and with
 * granted what the kernel granted them (read back after the set-up).
 * Composed into store; NULL for tmpfs or a kind outside the enum, or when
 * store is full. */
const char *shmb_notes_backing(shmb_notes_t *store, const shmb_backing_config_t *backing,
                               const shmb_backing_residency_t *granted, const char *copies);

#ifdef __cplusplus
}
#endif

#endif
