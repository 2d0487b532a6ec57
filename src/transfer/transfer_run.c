/* transfer_run: the run's state, its checks of what landed, its rows and
 * its progress (transfer_internal.h). */
#include "transfer_internal.h"

#include "shmbench/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void shmb_transfer_bench_run_init(shmb_transfer_run_t *r, const shmb_transfer_config_t *cfg, char *why,
                                  size_t why_cap)
{
    memset(r, 0, sizeof(*r));
    r->cfg = cfg;
    r->why = why;
    r->why_cap = why_cap;
    r->src.fd = r->dst.fd = -1;
    r->src.slot = r->dst.slot = -1;
    r->translation.system = cfg && cfg->translate ? (int)cfg->system : -1;
}


int shmb_transfer_verify_copy(shmb_transfer_run_t *r, shmb_copy_method_t m, const void *dst, uint64_t size,
                              const char *when)
{
    size_t bad;
    if (!shmb_copy_verify(dst, (size_t)size, &bad))
        return 0;
    snprintf(r->why, r->why_cap, "%s copy of %llu bytes (%s): first differing byte at offset %zu",
             shmb_copy_method_name(m), (unsigned long long)size, when, bad);
    return -EPROTO;
}

int shmb_transfer_verify_descriptors(shmb_transfer_run_t *r, shmb_transfer_part_t part, shmb_copy_method_t m,
                                     uint64_t size, const char *when)
{
    const uint64_t n = shmb_transfer_descriptors(r->cfg, part);
    int ret = 0;
    for (uint64_t i = 0; i < n && ret == 0; i++)
        ret = shmb_transfer_verify_copy(r, m, (char *)r->dst.addr + i * size, size, when);
    return ret;
}

int shmb_transfer_bench_add_sample(shmb_transfer_run_t *r, double ns)
{
    if (shmb_stats_append(&r->samples, ns) < 0)
        return shmb_error_record("malloc", ENOMEM, NULL);
    return 0;
}

/* Bytes only for the parts that move them; the parts' shares come later. */
int shmb_transfer_bench_push_row(shmb_transfer_run_t *r, shmb_rows_t *rows, shmb_transfer_part_t part,
                                 shmb_copy_method_t m, uint64_t size, const char *step, uint64_t transfers)
{
    const char *variant = part == SHMB_TRANSFER_COPY ? shmb_copy_method_name(m) : shmb_transfer_part_name(part);
    shmb_row_t row = shmb_row_make(variant, "size_kb", size / 1024, r->cfg->repetition);
    shmb_transfer_per_submit_arg(&row, r->cfg, part);
    snprintf(row.step, sizeof(row.step), "%s", step);
    row.threads = r->cfg->threads;
    row.iterations = transfers;
    if (part == SHMB_TRANSFER_COPY)
        snprintf(row.note, sizeof(row.note), "%s", shmb_copy_kernel_variant(m));
    if (part == SHMB_TRANSFER_COPY_OUT)
        snprintf(row.note, sizeof(row.note), "reader: borrowed object -> own buffer, %s", shmb_copy_method_name(m));
    int ret = shmb_rows_push_samples(rows, &row, r->samples.v, r->samples.n);
    if (ret == 0)
        shmb_transfer_rates(&rows->v[rows->n - 1], part, size);
    return ret;
}

void shmb_transfer_per_submit_arg(shmb_row_t *row, const shmb_transfer_config_t *cfg, shmb_transfer_part_t part)
{
    const uint64_t n = shmb_transfer_descriptors(cfg, part);
    char text[64]; /* fits arg_text: config_check keeps size_kb * n within SHMB_TRANSFER_MAX_KB */
    if (n > 1 && (size_t)snprintf(text, sizeof(text), "%llu/per_submit:%llu", (unsigned long long)row->arg,
                                  (unsigned long long)n) < sizeof(row->arg_text))
        memcpy(row->arg_text, text, strlen(text) + 1);
}

void shmb_transfer_rates(shmb_row_t *row, shmb_transfer_part_t part, uint64_t size)
{
    if (shmb_transfer_part_copies(part))
        row->bytes_per_second = (double)size * 1e9 / row->ns.p50;
    row->items_per_second = 1e9 / row->ns.p50;
}

void shmb_transfer_share_notes(shmb_row_t *req, shmb_row_t *const *parts, size_t n, double more, const char *copy)
{
    double sum = more;
    for (size_t k = 0; k < n; k++) {
        if (!parts[k])
            continue;
        sum += parts[k]->ns.p50;
        snprintf(parts[k]->note, sizeof(parts[k]->note), "%.2f%% of request p50",
                 100.0 * parts[k]->ns.p50 / req->ns.p50);
    }
    snprintf(req->note, sizeof(req->note), "copy %s; parts add up to %.1f%%", copy, 100.0 * sum / req->ns.p50);
}

/* Cold rows' too (what the first write costs against a copy into touched
 * pages), the request's too (the rate at which a whole request moves bytes). */
void shmb_transfer_bench_speedups(shmb_rows_t *rows, size_t first)
{
    for (size_t i = first; i < rows->n; i++) {
        shmb_row_t *row = &rows->v[i];
        const shmb_row_t *base = shmb_rows_find(rows, "memcpy", "", row->arg, row->repetition);
        if (base && !row->vs[0])
            row->speedup = row->bytes_per_second / base->bytes_per_second;
    }
}

void shmb_transfer_progress_plan(shmb_progress_t *progress, const uint64_t *sizes, size_t n)
{
    uint64_t kb = 0;
    for (size_t i = 0; i < n; i++)
        kb += sizes[i] / 1024;
    shmb_progress_plan(progress, kb);
}

void shmb_transfer_progress_size(shmb_progress_t *progress, uint64_t *kb, uint64_t size, const char *prefix)
{
    char label[64];
    const uint64_t size_kb = size / 1024;
    if (size_kb >= 1024 && size_kb % 1024 == 0)
        snprintf(label, sizeof(label), "%s%llu MB", prefix, (unsigned long long)(size_kb / 1024));
    else
        snprintf(label, sizeof(label), "%s%llu KB", prefix, (unsigned long long)size_kb);
    shmb_progress_step(progress, *kb, label);
    *kb += size_kb;
}
