/* The transfer driver: the sweep of sizes and methods and its rows, or
 * the paired run (transfer_internal.h; docs/transfer.md). */
#include "transfer_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef shmb_transfer_run_t run_t;

/* The pages a fresh segment holds before its first write (after = 0) or
 * after it: none before, all after, else the cold row would not be what it
 * says (the page allocation inside the timed copy). The check after shows
 * that this file system counts pages at all. */
static int check_pages(run_t *r, const shmb_segment_t *fresh, uint64_t size, int after)
{
    uint64_t bytes;
    int ret = shmb_segment_allocated(fresh, &bytes);
    if (ret < 0 || (after ? bytes >= size : bytes == 0))
        return ret;
    snprintf(r->why, r->why_cap, "cold: a fresh segment of %zu bytes holds %llu bytes of pages %s its "
             "first write (expected %s)", fresh->size, (unsigned long long)bytes, after ? "after" : "before",
             after ? "all" : "none");
    return -EPROTO;
}

/* One cold transfer into `fresh`, here or in the peer: pages checked before
 * and after, the time a sample, the bytes verified on the first (or with
 * verify, every) transfer. */
static int cold_transfer(run_t *r, shmb_copy_method_t m, shmb_segment_t *fresh, uint64_t size, uint64_t *ns)
{
    int ret = check_pages(r, fresh, size, 0);
    if (ret == 0)
        ret = r->cfg->peer ? shmb_transfer_peer_first_write(r, m, fresh, size, ns)
                           : shmb_transfer_bench_first_write(r, m, fresh->addr, size, ns);
    if (ret == 0)
        ret = shmb_transfer_bench_add_sample(r, (double)*ns);
    if (ret == 0)
        ret = check_pages(r, fresh, size, 1);
    if (ret == 0 && (r->samples.n == 1 || r->cfg->verify))
        ret = shmb_transfer_verify_copy(r, m, fresh->addr, size, "cold");
    return ret;
}

/* Cold rows: each transfer into a buffer created for it (tmpfs: shm_open +
 * ftruncate + mmap; nothing reserved or touched), timed one by one until
 * num_transfers or the budget. */
static int measure_cold(run_t *r, shmb_rows_t *rows, shmb_copy_method_t m, uint64_t size)
{
    const uint64_t budget = (uint64_t)(r->cfg->time_per_size_ms * 1e6);
    uint64_t spent = 0;
    int ret = 0;
    r->samples.n = 0;
    while (ret == 0 && r->samples.n < r->cfg->num_transfers && (r->samples.n == 0 || spent < budget)) {
        shmb_segment_t fresh;
        if ((ret = shmb_transfer_create_buffer(r, &fresh, size, 0)) < 0)
            break;
        uint64_t ns = 0;
        ret = cold_transfer(r, m, &fresh, size, &ns);
        spent += ns;
        int r2 = shmb_segment_destroy(&fresh, NULL);
        ret = ret < 0 ? ret : r2;
    }
    return ret < 0 ? ret : shmb_transfer_bench_push_row(r, rows, SHMB_TRANSFER_COPY, m, size, "cold", r->samples.n);
}

/* With a system, each part's share of the request's p50 of the same size
 * (the copy: the method the request copied with). */
static void shares(shmb_rows_t *rows, size_t first, shmb_copy_method_t m, int system)
{
    const char *parts[] = {"request_path", "translate", shmb_copy_method_name(m)};
    for (size_t i = first; i < rows->n; i++) {
        shmb_row_t *req = &rows->v[i];
        if (strcmp(req->variant, "request") != 0)
            continue;
        shmb_row_t *found[3];
        for (int k = 0; k < 3; k++)
            found[k] = shmb_rows_find(rows, parts[k], "", req->arg, req->repetition);
        shmb_transfer_share_notes(req, found, 3, 0, parts[2]);
        if (system == SHMB_SYSTEM_FLOWIPC_JEMALLOC)
            shmb_transfer_handoff_notes(req, found[1], SHMB_TRANSFER_WRITE_PATH);
    }
}

/* The rows of one size: with a system, the request path and the
 * translation, then each method's copy (and cold row), then the request
 * copying with the first method. */
static int measure_size(run_t *r, shmb_rows_t *rows, uint64_t size, shmb_copy_method_t first_method)
{
    const int system = r->translation.system >= 0;
    int ret = 0;
    if (system)
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_REQUEST_PATH, first_method, size);
    if (ret == 0 && system)
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_TRANSLATE, first_method, size);
    for (int m = 0; m < SHMB_COPY_METHODS && ret == 0; m++) {
        if (!r->cfg->run[m])
            continue;
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_COPY, (shmb_copy_method_t)m, size);
        if (ret == 0 && r->cfg->cold)
            ret = measure_cold(r, rows, (shmb_copy_method_t)m, size);
    }
    if (ret == 0 && system)
        ret = shmb_transfer_bench_warm(r, rows, SHMB_TRANSFER_REQUEST, first_method, size);
    if (ret == 0 && r->translation.handoff)
        ret = shmb_transfer_handoff_copy_out(r, rows, first_method, size);
    else if (ret == 0 && system) { /* unmeasured: every system's run has the row, so that they pair */
        shmb_row_t row = shmb_row_make(shmb_transfer_part_name(SHMB_TRANSFER_COPY_OUT), "size_kb", size / 1024,
                                       r->cfg->repetition);
        row.threads = r->cfg->threads;
        ret = shmb_rows_push(rows, &row);
    }
    return ret;
}

int shmb_transfer_bench_run(const shmb_transfer_config_t *cfg, shmb_rows_t *rows, char *why,
                            size_t why_cap)
{
    uint64_t sizes[SHMB_TRANSFER_MAX_SIZES];
    int nsizes = shmb_transfer_bench_sizes(cfg, sizes, SHMB_TRANSFER_MAX_SIZES);
    if (shmb_transfer_bench_config_check(cfg) < 0)
        return -EINVAL;
    int first_method = -1;
    for (int m = 0; m < SHMB_COPY_METHODS; m++) {
        if (cfg->run[m] && !shmb_copy_kernel((shmb_copy_method_t)m))
            return -ENOTSUP;
        if (cfg->run[m] && first_method < 0)
            first_method = m;
    }
    if (first_method < 0)
        return -EINVAL;
    if (cfg->nsystems)
        return shmb_transfer_bench_paired(cfg, sizes, (size_t)nsizes, (shmb_copy_method_t)first_method, rows, why,
                                          why_cap);

    run_t r;
    shmb_transfer_bench_run_init(&r, cfg, why, why_cap);
    const size_t first = rows->n;
    int ret = shmb_transfer_bench_prepare(&r, sizes[nsizes - 1]);
    /* SHM-jemalloc's writer is this process: with a peer, it needs the request path here too. */
    if (ret == 0 && r.translation.system == SHMB_SYSTEM_FLOWIPC_JEMALLOC && cfg->peer)
        ret = shmb_transfer_bench_translation_start(&r);
    if (ret == 0)
        ret = shmb_transfer_handoff_writer(&r, sizes[nsizes - 1]);
    uint64_t kb = 0;
    shmb_transfer_progress_plan(cfg->progress, sizes, (size_t)nsizes);
    for (int i = 0; i < nsizes && ret == 0; i++) {
        shmb_transfer_progress_size(cfg->progress, &kb, sizes[i], "");
        ret = measure_size(&r, rows, sizes[i], (shmb_copy_method_t)first_method);
    }
    if (r.peer_holds) {
        int rd = shmb_transfer_peer_detach(&r);
        ret = ret < 0 ? ret : rd;
    }
    shmb_transfer_bench_copier_stop(&r);
    ret = shmb_transfer_handoff_close(r.translation.handoff, ret);
    if (ret == 0)
        shmb_transfer_bench_speedups(rows, first);
    if (ret == 0 && r.translation.system >= 0)
        shares(rows, first, (shmb_copy_method_t)first_method, r.translation.system);
    int rd = shmb_transfer_buffers_destroy(&r);
    return ret < 0 ? ret : rd;
}
