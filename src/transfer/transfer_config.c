/* transfer_config: a run's configuration, checked, and what follows from it
 * alone (sizes, the SHM it needs, descriptors per submit, the names of
 * parts and systems), which every part reads without the run's rows. */
#include "transfer_internal.h"

#include "shmbench/upstream.h"
#include "shmbench/upstream_flowipc.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* Test hook (0 in a real run), read by the translation checks. */
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
    /* each hand-off flavour: a pool or arena per link (SHM-jemalloc's a link per submitter), two objects'
     * room, and the control page of the link's borrower process */
    const uint64_t link = 2 * max + (uint64_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < cfg->nsystems; i++)
        *bytes += cfg->systems[i] == SHMB_SYSTEM_FLOWIPC_JEMALLOC ? link * dsts
                  : cfg->systems[i] != SHMB_SYSTEM_MOONCAKE && cfg->zero_copy ? link : 0;
    *bytes += jemalloc ? link : 0;
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

uint64_t shmb_transfer_descriptors(const shmb_transfer_config_t *cfg, shmb_transfer_part_t part)
{
    const int batched =
        part == SHMB_TRANSFER_REQUEST || part == SHMB_TRANSFER_REQUEST_PATH || part == SHMB_TRANSFER_SUBMIT;
    return batched && cfg->descriptors_per_submit > 1 ? cfg->descriptors_per_submit : 1;
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
