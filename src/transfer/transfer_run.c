/* The run's state and rows, and the helpers its parts share (transfer_internal.h). */
#include "transfer_internal.h"

#include "shmbench/error.h"
#include "shmbench/upstream.h"
#include "shmbench/upstream_flowipc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

uint64_t shmb_transfer_bench_wrong_landing;

int shmb_transfer_bench_sizes(const shmb_transfer_config_t *cfg, uint64_t *sizes, size_t cap)
{
    uint64_t first = cfg->transfer_size_kb, last_kb = cfg->max_transfer_size_kb;
    if (first == 0 || last_kb == 0 || last_kb > SHMB_TRANSFER_MAX_KB || first > last_kb)
        return -EINVAL;
    size_t n = 0;
    const uint64_t step = cfg->zero_copy ? 4 : 2; /* the zero-copy rows span 4 KB to 256 MB in a few sizes */
    for (uint64_t kb = first; kb < last_kb; kb *= step) {
        if (n + 1 >= cap)
            return -EINVAL;
        sizes[n++] = kb * 1024;
    }
    sizes[n++] = last_kb * 1024;
    return (int)n;
}

/* What mooncake_upstream's TENT maps in /dev/shm under its own names:
 * num_segments buffers of dst's size and a source of src's, every page
 * written when registered (its CPU probe prefaults); 0 when not listed. */
static uint64_t upstream_bytes(const shmb_transfer_config_t *cfg)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < cfg->nsystems; i++)
        if (cfg->systems[i] == SHMB_SYSTEM_MOONCAKE_UPSTREAM && /* one submitter: src as large as dst */
            (__builtin_mul_overflow(cfg->num_segments + 1, cfg->max_transfer_size_kb << 10, &bytes) ||
             __builtin_mul_overflow(bytes, shmb_transfer_descriptors(cfg, SHMB_TRANSFER_REQUEST), &bytes)))
            return UINT64_MAX;
    return bytes;
}

int shmb_transfer_bench_shm_bytes(const shmb_transfer_config_t *cfg, uint64_t *bytes)
{
    if (cfg->max_transfer_size_kb > SHMB_TRANSFER_MAX_KB)
        return -EOVERFLOW;
    uint64_t max = cfg->max_transfer_size_kb << 10;
    const uint64_t per = cfg->descriptors_per_submit > 1 ? cfg->descriptors_per_submit : 1;
    const uint64_t dsts = cfg->submitters > 1 ? (uint64_t)cfg->submitters : 1; /* dst: a part per submitter */
    *bytes = cfg->backing.kind == SHMB_BACKING_TMPFS ? max * per * (1 + dsts) + (cfg->cold ? max : 0) : 0;
    const int jemalloc = cfg->translate && cfg->system == SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    /* each hand-off flavour: a pool or arena per link (SHM-jemalloc's a link per submitter), two objects' room */
    for (size_t i = 0; i < cfg->nsystems; i++)
        *bytes += cfg->systems[i] == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? 2 * max * dsts
                  : cfg->systems[i] != SHMB_SYSTEM_MOONCAKE && cfg->zero_copy ? 2 * max : 0;
    *bytes += jemalloc ? 2 * max : 0;
    if (cfg->peer) /* the control segment: a head of at most a page, then the data area */
        *bytes += (uint64_t)sysconf(_SC_PAGESIZE) + SHMB_TRANSFER_PEER_DATA_BYTES;
    const uint64_t tent = upstream_bytes(cfg);
    if (tent > UINT64_MAX - *bytes)
        return -EOVERFLOW;
    *bytes += tent;
    return 0;
}


int shmb_transfer_bench_config_check(const shmb_transfer_config_t *cfg)
{
    uint64_t sizes[SHMB_TRANSFER_MAX_SIZES];
    if (shmb_transfer_bench_sizes(cfg, sizes, SHMB_TRANSFER_MAX_SIZES) < 0 || cfg->num_transfers == 0 ||
        cfg->threads < 1 || cfg->threads > SHMB_TRANSFER_MAX_THREADS)
        return -EINVAL;
    if (cfg->translate && ((unsigned)cfg->system >= SHMB_SYSTEMS || cfg->cold))
        return -EINVAL;
    if ((cfg->translate || cfg->nsystems) && (cfg->num_segments == 0 || cfg->num_segments > UINT32_MAX))
        return -EINVAL;
    if (cfg->descriptors_per_submit > 1 && ((!cfg->translate && !cfg->nsystems) || cfg->peer || cfg->zero_copy ||
                                            cfg->descriptors_per_submit > SHMB_TRANSFER_MAX_PER_SUBMIT ||
                                            cfg->max_transfer_size_kb > SHMB_TRANSFER_MAX_KB / cfg->descriptors_per_submit))
        return -EINVAL;
    if (cfg->submitters > 1 && (!cfg->nsystems || cfg->zero_copy || cfg->threads > 1 ||
                                cfg->systems[0] == SHMB_SYSTEM_FLOWIPC_JEMALLOC ||
                                cfg->submitters > SHMB_TRANSFER_MAX_THREADS ||
                                cfg->max_transfer_size_kb * shmb_transfer_descriptors(cfg, SHMB_TRANSFER_REQUEST) >
                                    SHMB_TRANSFER_MAX_KB / (uint64_t)cfg->submitters))
        return -EINVAL;
    for (size_t s = 0; cfg->submitters > 1 && s < cfg->nsystems; s++)
        if (shmb_system_is_upstream(cfg->systems[s])) /* TENT's engines serve one thread here; Flow-IPC's: one view */
            return -EINVAL;
    if (cfg->nsystems == 0)
        return cfg->zero_copy ? -EINVAL : 0;
    /* Paired: in this process, warm rows only; mooncake_upstream (TENT
     * built) beside mooncake as the baseline, in the parts it covers (no zero_copy). */
    if (cfg->translate || cfg->cold || cfg->peer || cfg->nsystems > SHMB_PAIRED_MAX_SYSTEMS)
        return -EINVAL;
    shmb_system_t models[SHMB_PAIRED_MAX_SYSTEMS];
    for (size_t s = 0; s < cfg->nsystems; s++) {
        const int up = cfg->systems[s] == SHMB_SYSTEM_MOONCAKE_UPSTREAM;
        if (up && (cfg->systems[0] != SHMB_SYSTEM_MOONCAKE || cfg->zero_copy || !shmb_upstream_tent_available()))
            return -EINVAL;
        const int fup = cfg->systems[s] == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM; /* beside its model, translate only */
        if (fup && (cfg->systems[0] != SHMB_SYSTEM_FLOWIPC_JEMALLOC || cfg->zero_copy ||
                    !shmb_upstream_flowipc_available()))
            return -EINVAL;
        models[s] = up ? SHMB_SYSTEM_MOONCAKE : fup ? SHMB_SYSTEM_FLOWIPC_JEMALLOC : cfg->systems[s];
    }
    return shmb_transfer_systems_check(models, cfg->nsystems);
}

int shmb_transfer_systems_check(const shmb_system_t *systems, size_t n)
{
    if (n < 2 || n > SHMB_PAIRED_MAX_SYSTEMS || systems[n - 1] != systems[0])
        return -EINVAL;
    for (size_t s = 0; s < n; s++)
        if ((unsigned)systems[s] >= SHMB_SYSTEMS)
            return -EINVAL;
    return 0;
}

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

uint64_t shmb_transfer_descriptors(const shmb_transfer_config_t *cfg, shmb_transfer_part_t part)
{
    const int batched =
        part == SHMB_TRANSFER_REQUEST || part == SHMB_TRANSFER_REQUEST_PATH || part == SHMB_TRANSFER_SUBMIT;
    return batched && cfg->descriptors_per_submit > 1 ? cfg->descriptors_per_submit : 1;
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

const char *shmb_transfer_part_name(shmb_transfer_part_t part)
{
    static const char *const names[SHMB_TRANSFER_PARTS] = {
        [SHMB_TRANSFER_REQUEST_PATH] = "request_path",
        [SHMB_TRANSFER_TRANSLATE] = "translate",
        [SHMB_TRANSFER_REQUEST] = "request",
        [SHMB_TRANSFER_ZERO_COPY] = "zero_copy",
        [SHMB_TRANSFER_COPY_OUT] = "copy_out",
        [SHMB_TRANSFER_SUBMIT] = "submit",
    };
    return (unsigned)part < SHMB_TRANSFER_PARTS ? names[part] : NULL;
}

int shmb_transfer_part_copies(shmb_transfer_part_t part)
{
    return part != SHMB_TRANSFER_REQUEST_PATH && part != SHMB_TRANSFER_TRANSLATE && part != SHMB_TRANSFER_SUBMIT;
}

double shmb_transfer_min_batch_ns(double timer_overhead_ns)
{
    const double ns = timer_overhead_ns * 100;
    return ns < 2000.0 ? 2000.0 : ns;
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

const char *shmb_transfer_system_name(shmb_system_t system)
{
    return system == SHMB_SYSTEM_MOONCAKE_UPSTREAM            ? SHMB_SYSTEM_MOONCAKE_UPSTREAM_NAME
           : system == SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM ? SHMB_SYSTEM_FLOWIPC_JEMALLOC_UPSTREAM_NAME
                                                             : shmb_system_name(system);
}

void shmb_transfer_paired_names(const shmb_system_t *systems, size_t n, shmb_transfer_paired_names_t *out)
{
    for (size_t s = 0; s < n && s < SHMB_PAIRED_MAX_SYSTEMS; s++) {
        snprintf(out->text[s], sizeof(out->text[s]), "%s%s", shmb_transfer_system_name(systems[s]),
                 s + 1 == n ? SHMB_PAIRED_CONTROL_SUFFIX : "");
        out->v[s] = out->text[s];
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
