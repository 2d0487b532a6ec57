/* The notes of shm_transfer_bench's table (sweep, paired run, replay),
 * worded for the mode the run selects; a change of wording is a change of the output a user diffs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transfer_internal.h"
#include "base/notes_internal.h"
#include "shmbench/copy.h"
#include "shmbench/paired.h"

static const char *transfer_peer(shmb_notes_t *s, const shmb_transfer_config_t *cfg)
{
    const size_t start = s->used;
    const int named = cfg->backing.kind == SHMB_BACKING_TMPFS;
    shmb_notes_put(s, "peer_process: every row was measured in a second process: it attached src and dst %s, touched "
           "them, %sand timed its copies; this process "
           "created and filled them and checked dst after the peer's first and timed transfers of each size "
           "and method%s",
        named ? "by name (shm_open O_RDWR + fstat size check + mmap)"
              : "from descriptors received over a Unix socket (SCM_RIGHTS + fstat size check + mmap)",
        cfg->translate ? "ran the request path, the translation and the request over its own mapping of "
                         "dst, "
                       : "",
        !cfg->cold ? ""
        : named    ? "; cold: this process created each fresh segment, the peer attached it by name untouched "
                     "and timed its first write"
                   : "; cold: this process created each fresh buffer, the peer received its descriptor, mapped it "
                     "untouched and timed its first write");
    return shmb_notes_end(s, start);
}

const char *shmb_notes_backing(shmb_notes_t *s, const shmb_backing_config_t *backing,
                               const shmb_backing_residency_t *granted, const char *copies)
{
    static const char *const how[SHMB_BACKING_KINDS] = {
        [SHMB_BACKING_MEMFD] = "memfd_create, 4 KiB shmem pages",
        [SHMB_BACKING_THP] = "memfd_create, mapped 2 MiB-aligned and madvise(MADV_HUGEPAGE) before the first touch",
        [SHMB_BACKING_HUGETLB] = "memfd_create(MFD_HUGETLB), pages of the reserved pool",
    };
    const size_t start = s->used;
    uint64_t page = 0;
    if ((unsigned)backing->kind >= SHMB_BACKING_KINDS || !how[backing->kind])
        return NULL;
    shmb_backing_page_size(backing, &page);
    shmb_notes_put(s, "backing: %s (%s), %llu KiB pages, each buffer rounded up to them; src, dst: prefaulted with one "
           "guarded write per page, touched before timing; %s",
        shmb_backing_name(backing->kind), how[backing->kind], (unsigned long long)(page >> 10), copies);
    if (granted) {
        const shmb_backing_residency_t *g = granted;
        double res = (double)g->resident_bytes;
        shmb_notes_put(s, "; granted (smaps, after the set-up): src+dst %.1f MiB resident, %.1f MiB (%.1f%%) mapped by "
               "huge pages",
            res / 1048576.0, (double)g->huge_bytes / 1048576.0,
            res > 0 ? 100.0 * (double)g->huge_bytes / res : 0.0);
    }
    return shmb_notes_end(s, start);
}

/* The lines of a paired run of shm_transfer_bench (--systems, the sweep or
 * the replay): the common ones, the rounds and what the design is credited with. */
static void transfer_paired_lines(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_system_t *systems, size_t n,
                                  const char *rounds, const char *credit)
{
    const char *names[SHMB_PAIRED_MAX_SYSTEMS] = {0};
    char control[64];
    if (n < 2 || n > SHMB_PAIRED_MAX_SYSTEMS) /* the config's check refuses it first */
        return;
    for (size_t i = 0; i < n; i++)
        names[i] = shmb_transfer_system_name(systems[i]);
    snprintf(control, sizeof(control), "%s%s", names[0], SHMB_PAIRED_CONTROL_SUFFIX);
    names[n - 1] = control;
    shmb_notes_paired_lines(l, s, names, n, "a second, independent set-up of the baseline (its own translation and request "
                                 "path) over the same src, dst and requests");
    shmb_notes_add(l, rounds);
    shmb_notes_add(l, credit);
}

int shmb_notes_transfer_paired(shmb_report_t *report, shmb_notes_t *store, const shmb_system_t *systems,
                               size_t n)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    if (n < 2)
        return -EINVAL;
    shmb_notes_keep(&l, report);
    if (n > SHMB_PAIRED_MAX_SYSTEMS)
        return -EINVAL;
    transfer_paired_lines(&l, store, systems, n,
                 "rounds: the requests: every system replays each request in turn, in the order above; each ratio "
                 "is paired request by request",
                 "request_path and copy are the same code for every system: the design changes the translate "
                 "row's time, and a request's saved time beyond it and the control's interval is noise");
    return shmb_notes_publish(report, &l, store, start);
}

/* --submitters: what a threads:N row is, where the submitters run, and
 * SHM-jemalloc's link and borrower per submitter. */
static void submitters_lines(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_transfer_config_t *cfg)
{
    const int k = cfg->submitters;
    const size_t at = s->used;
    shmb_notes_put(s, "threads:%d: each round, each system's batch run by %d threads at once over its one "
                      "registrations, engine and translation, each into its own part of dst with its own "
                      "descriptors; a sample is the batch's wall span / its requests, the latency per request one "
                      "submitter sees (not divided by %d); ", k, k, k);
    if (shmb_notes_put_cpus(s, k, cfg->cpu) < 0)
        shmb_notes_put(s, "CPUs not known");
    shmb_notes_add(l, shmb_notes_end(s, at));
    int any = 0;
    for (size_t i = 0; i < cfg->nsystems; i++)
        any |= cfg->systems[i] == SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    if (!any)
        return;
    shmb_notes_add(l, "flowipc_jemalloc: each submitter hands over through a link of its own (its arena, session and "
                      "borrower process, as a Flow-IPC process with a session per peer), each checked before and "
                      "after the rounds; each borrower on its submitter's CPU, as at 1 submitter the borrower "
                      "shares the measuring CPU (the writer waits for each return message: the two take turns)");
}

int shmb_notes_transfer(shmb_report_t *report, shmb_notes_t *store, const shmb_transfer_config_t *cfg)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    const int backed = cfg->backing.kind != SHMB_BACKING_TMPFS;
    if (backed)
        shmb_notes_add(&l, shmb_notes_backing(store, &cfg->backing, cfg->granted,
                                   "each transfer copies src[0,size) to dst[0,size)"));
    else
        shmb_notes_add(&l, "src, dst: SHM segments reserved with posix_fallocate, touched before timing; each transfer "
                "copies src[0,size) to dst[0,size), so small sizes are cache-resident");
    shmb_notes_add(&l, "GB_s = size / p50 time (the median; 10^9 bytes/s, each byte counted once), as are JSON "
            "bytes_per_second and items_per_second; mean_ns is the mean; ns per transfer are batch means "
            "(batches >= 100x the timer overhead)");
    if (cfg->run[SHMB_COPY_MEMCPY])
        shmb_notes_add(&l, "speedup = GB_s / GB_s of the warm memcpy row of the same size (medians; cold "
                "rows too)");
    if (cfg->run[SHMB_COPY_MEMCPY] && cfg->run[SHMB_COPY_NT])
        shmb_notes_add(&l, "memcpy switches to non-temporal stores itself above glibc's x86_non_temporal_threshold, "
                "as the glibc line above prints it");
    if (cfg->cold && !backed)
        shmb_notes_add(&l, "cold: each transfer writes a fresh SHM segment made as Mooncake's createSharedMemory makes "
                "it (shm_open + ftruncate + mmap, nothing reserved): tmpfs page allocation and page faults "
                "timed, one transfer at a time");
    if (cfg->cold && backed)
        shmb_notes_add(&l, "cold: each transfer writes a fresh buffer of the backing (created, sized, mapped, nothing "
                "touched): its page allocation (and zeroing) and page faults timed, one transfer at a time");
    if (cfg->translate || cfg->nsystems) {
        const size_t at = store->used;
        const unsigned long long n = (unsigned long long)cfg->num_segments;
        shmb_notes_put(store, "request_path: TENT's submit path for one descriptor (selection, look-ups, task objects, "
                   "locks), the same code for every system, over the registrations each design makes (its "
                   "findBuffer walks them): mooncake %llu buffers, flowipc_classic its one pool, flowipc_jemalloc "
                   "the pools its arena makes for %llu blocks of dst's size; translate: the system's translation of dst alone (%llu registered buffers or "
                   "pools); request: the request path calling that translation and the copy, each once; note: "
                   "each part's share of the request p50",
            n, n, n);
        shmb_notes_add(&l, shmb_notes_end(store, at));
    }
    if (cfg->translate && cfg->count_given) {
        const size_t at = store->used;
        shmb_notes_put(store, "count: num_transfers=%llu: request_path and translate time it in batches >= 100x the timer "
                   "overhead, one batch at least (their iterations say how many: more when one batch needs "
                   "more), not the default's %d batches: few batches, rough percentiles",
            (unsigned long long)cfg->num_transfers, SHMB_TRANSFER_MIN_PART_BATCHES);
        shmb_notes_add(&l, shmb_notes_end(store, at));
    }
    if (cfg->peer)
        shmb_notes_add(&l, transfer_peer(store, cfg));
    if (cfg->nsystems >= 2) {
        const size_t at = store->used;
        shmb_notes_put(store, "rounds: per size and part, one batch of each system per round, in the order above, the same "
                   "batch size for all (the largest of theirs); as many rounds as a --system run times batches, at "
                   "least %d%s, until the systems together spent %zu x time_per_size_ms",
            cfg->count_given ? SHMB_PAIRED_MIN_ROUNDS : SHMB_TRANSFER_MIN_PART_BATCHES,
            cfg->count_given ? " (the fewest with a 95% interval, where num_transfers asks fewer)" : "",
            cfg->nsystems);
        transfer_paired_lines(&l, store, cfg->systems, cfg->nsystems, shmb_notes_end(store, at),
                     "copy rows: the same code for every system, measured once, unpaired; the design changes the "
                     "translate row's time, and a request's saved time beyond it and the control's interval is "
                     "noise");
    }
    if (cfg->nsystems >= 2 && cfg->submitters > 1)
        submitters_lines(&l, store, cfg);
    if ((cfg->translate || cfg->nsystems) && !cfg->zero_copy) /* every system's run: the headers pair */
        shmb_notes_add(&l, "flowipc_jemalloc: a borrower maps a lent pool read-only, so its request is its write path: the "
                "request path around construct in its own arena, write, lend, the handle to a borrower process, "
                "borrow, tag check, release, the return, free (this process writes, with --peer_process too); its "
                "translate row (to_address) is not possible "
                "upstream and is no verdict; copy_out: the reader's copy of the borrowed object into its own "
                "buffer (flowipc_jemalloc's; '-' for the others)");
    if (cfg->zero_copy)
        shmb_notes_add(&l, "zero_copy: mooncake's whole request (request path, relocate, copy) against each Flow-IPC "
                "flavour's hand-off to a borrower process with no copy (construct, lend, the handle message, "
                "borrow, tag check, release; flowipc_jemalloc: the return message and the free); sizes x4; "
                "it stands only where the reader uses the object in place: an application change");
    return shmb_notes_publish(report, &l, store, start);
}
