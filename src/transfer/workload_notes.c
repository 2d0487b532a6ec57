/* The notes of shm_transfer_bench --workload: what was replayed, how a
 * request fans out, and what the rows are; a change of wording is a change
 * of the output a user diffs. */
#include <errno.h>
#include <stdio.h>

#include "base/notes_internal.h"
#include "shmbench/transfer_bench.h"
#include "shmbench/workload.h"

#define ULL(x) ((unsigned long long)(x))
#define MIB(bytes) ((double)(bytes) / 1048576.0)

/* sglang's submits: one per request, split where a request has more
 * descriptors than one submit takes. */
static void sglang_submits(shmb_notes_t *s, const shmb_workload_totals_t *t)
{
    const uint64_t per = SHMB_TRANSFER_MAX_PER_SUBMIT;
    shmb_notes_put(s, "submits: one per request (sglang): request_path and request give all of a request's "
                      "descriptors to one submit (shmb_mooncake_engine_submit_n), each translated and copied by the "
                      "system, odd ones read from 64 B before their place so that TENT merges none; SHM-jemalloc's "
                      "request: its write path, each descriptor an object handed over within the one submit");
    if (t->descriptors_max > per)
        shmb_notes_put(s, "; at most %llu descriptors per submit: a request of more takes as many submits as that "
                          "needs (the largest: %llu)", ULL(per), ULL((t->descriptors_max + per - 1) / per));
}

/* The layer layout's fan-out: its blocks and their descriptors. */
static void layer_fanout(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_workload_config_t *cfg,
                         const shmb_workload_totals_t *t)
{
    size_t at = s->used;
    shmb_notes_put(s, "fan-out: block_tokens=%llu granularity=%s: every block of a request's input moves whole; %llu "
                      "of %llu requests cut to --max_request_mb=%llu", ULL(cfg->shape.block_tokens),
                   shmb_workload_granularity_name(cfg->shape.granularity), ULL(t->clipped), ULL(t->requests),
                   ULL(cfg->shape.max_request_bytes >> 20));
    shmb_notes_add(l, shmb_notes_end(s, at));
    at = s->used;
    shmb_notes_put(s, "per request: descriptors mean %.1f, bytes mean %.2f MiB, largest %.2f MiB",
                   t->descriptors_mean, MIB(t->bytes_mean), MIB(t->max_bytes));
    shmb_notes_add(l, shmb_notes_end(s, at));
}

/* The engines' layouts, in as many lines as the layer layout's (a paired
 * run's notes fill the report's 15): what a descriptor is, how the replay
 * submits them (vllm one per batch, where vLLM posts a request's as one;
 * sglang a request's in one, as SGLang does), descriptors per request and
 * their sizes ("<=32 KiB": the class (16 KiB, 32 KiB] of t->sizes). */
static void engine_fanout(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_workload_config_t *cfg,
                          const shmb_workload_totals_t *t)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    const shmb_workload_shape_t *sh = &cfg->shape;
    const shmb_workload_model_t *m = sh->model;
    const int vllm = sh->layout == SHMB_WORKLOAD_LAYOUT_VLLM;
    size_t at = s->used;
    shmb_notes_put(s, "fan-out: layout=%s block_tokens=%llu tp=%u: a descriptor per (layer, %s%s), ",
                   shmb_workload_layout_name(sh->layout), ULL(sh->block_tokens), sh->tp, m->latent_dim ? "" : "K|V, ",
                   vllm ? "block" : "run of block_tokens contiguous tokens");
    if (m->latent_dim)
        shmb_notes_put(s, "MLA: the whole latent, replicated on every TP rank");
    else
        shmb_notes_put(s, "one TP rank's KV heads (%u of %u)", m->kv_heads >= sh->tp ? m->kv_heads / sh->tp : 1,
                       m->kv_heads);
    shmb_notes_put(s, "%s%llu of %llu requests cut to --max_request_mb=%llu; submit: ",
                   vllm ? "; as vLLM's NIXL connector registers and reads them; every block moves whole; "
                        : "; as SGLang's Mooncake sender merges contiguous pages; the last run only its tokens; ",
                   ULL(t->clipped), ULL(t->requests), ULL(sh->max_request_bytes >> 20));
    if (vllm) {
        shmb_notes_put(s, "vLLM posts a request's descriptors as one NIXL transfer; this replay submits each "
                          "descriptor as its own batch of one (the engine model takes one per call), so request_path "
                          "pays a batch's fixed costs per descriptor: an upper bound");
    } else {
        shmb_notes_put(s, "SGLang submits a request's descriptors in one batch_transfer_sync; ");
        sglang_submits(s, t);
    }
    shmb_notes_add(l, shmb_notes_end(s, at));
    at = s->used;
    shmb_notes_put(s, "per request: descriptors mean %.1f (min %llu, max %llu), bytes mean %.2f MiB, largest %.2f MiB; "
                      "descriptor sizes (all requests): mean %.1f B;", t->descriptors_mean, ULL(t->descriptors_min),
                   ULL(t->descriptors_max), MIB(t->bytes_mean), MIB(t->max_bytes),
                   t->bytes_mean / t->descriptors_mean);
    uint64_t all = 0;
    for (unsigned i = 0; i < 65; i++)
        all += t->sizes[i];
    for (unsigned i = 0; i < 65; i++)
        if (t->sizes[i])
            shmb_notes_put(s, " <=%llu %s: %llu (%.1f%%)", 1ull << (i % 10), units[i / 10], ULL(t->sizes[i]),
                           100.0 * (double)t->sizes[i] / (double)all);
    shmb_notes_add(l, shmb_notes_end(s, at));
}

/* src and dst: on tmpfs as the sweep's, on another backing the sweep's
 * backing note with what the kernel granted (`typed` when it has none). */
static void backing_line(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_workload_config_t *cfg, int batched,
                         const char *typed)
{
    if (cfg->backing.kind == SHMB_BACKING_TMPFS) {
        shmb_notes_add(l, "backing: tmpfs (shm_open in /dev/shm, 4 KiB pages): src, dst reserved with "
                          "posix_fallocate, touched before timing");
        return;
    }
    const char *note = shmb_notes_backing(s, &cfg->backing, cfg->granted,
                                          batched ? "descriptor k copies src[k*d,(k+1)*d) to dst at the same offset "
                                                    "(sglang's request: odd k from 64 B before)"
                                                  : "descriptor k copies src[k*d,(k+1)*d) to dst at the same offset");
    if (!note) {
        const size_t at = s->used;
        shmb_notes_put(s, "backing: %s", typed);
        note = shmb_notes_end(s, at);
    }
    shmb_notes_add(l, note);
}

/* What a row is and how its bytes are checked: closed loop or open. */
static void rows_lines(shmb_notes_lines_t *l, shmb_notes_t *s, const shmb_workload_config_t *cfg, int batched)
{
    const size_t at = s->used;
    if (cfg->open_loop)
        shmb_notes_put(s, "rows: ns per request (p50, p99, p999 over requests); request: its service, %s calling "
                          "translation and copy per descriptor (SHM-jemalloc: its write path, each descriptor handed "
                          "over), start to done; latency: done - the request's intended start",
                       batched ? "one submit of the request's descriptors through the request path"
                               : "one pass of the request path");
    else
        shmb_notes_put(s, "rows: ns per request (p50, p99, p999 over requests); request_path: TENT's submit path %s, "
                          "no translation, no copy; translate: the system's translation of every descriptor; copy: "
                          "every descriptor's copy; request: the request path calling both per descriptor; note: "
                          "share of the request p50",
                       batched ? "(one submit of the request's descriptors)" : "per descriptor");
    shmb_notes_add(l, shmb_notes_end(s, at));
    shmb_notes_add(l, cfg->open_loop
                          ? "GB_s = bytes of all requests / their service time; dst poisoned before each request and "
                            "every descriptor's bytes verified after it, every translation checked (untimed)"
                          : "GB_s = bytes of all requests / their time; dst poisoned before copy and request and "
                            "every descriptor's bytes verified after each, every translation checked (untimed)");
}

int shmb_notes_workload(shmb_report_t *report, shmb_notes_t *store, const shmb_workload_config_t *cfg,
                        const shmb_workload_totals_t *t, const char *trace, uint64_t seed, const char *backing)
{
    shmb_notes_lines_t l = {0};
    const size_t start = store->used;
    const shmb_workload_model_t *m = cfg->shape.model;
    const int batched = shmb_workload_per_submit(&cfg->shape) > 1;
    size_t at = store->used;
    if (trace)
        shmb_notes_put(store, "workload: trace %s: ", trace);
    else
        shmb_notes_put(store, "workload: synthetic (seed %llu): ", ULL(seed));
    shmb_notes_put(store, "%llu requests, arrivals over %llu ms, ", ULL(t->requests), ULL(t->span_ms));
    if (cfg->open_loop)
        shmb_notes_put(store, "arrivals=trace: issued open-loop at timestamp / %g by an issuing thread, served in "
                              "order by one worker; latency from each request's intended start (no coordinated "
                              "omission); the worker poisons dst before a request and verifies it after (untimed, "
                              "but a request already due waits for them)", cfg->speed);
    else
        shmb_notes_put(store, "replayed back to back (arrivals order them; nothing waits)");
    shmb_notes_add(&l, shmb_notes_end(store, at));
    at = store->used;
    shmb_notes_put(store, "model: %s (%u layers, ", m->name, m->layers);
    if (m->latent_dim)
        shmb_notes_put(store, "MLA latent %u", m->latent_dim);
    else
        shmb_notes_put(store, "%u KV heads x %u", m->kv_heads, m->head_dim);
    shmb_notes_put(store, ", %u B per element: %llu B per token per layer; %s)", m->dtype_bytes,
                   ULL(shmb_workload_token_layer_bytes(m)), m->source);
    shmb_notes_add(&l, shmb_notes_end(store, at));
    if (cfg->shape.layout == SHMB_WORKLOAD_LAYOUT_LAYER)
        layer_fanout(&l, store, cfg, t);
    else
        engine_fanout(&l, store, cfg, t);
    if (cfg->shape.reuse) {
        at = store->used;
        shmb_notes_put(store, "reuse: on: %llu of %llu blocks (hash ids) hit, seen on an earlier line (%.1f%%); a "
                              "request moves only its missed blocks (input_length - hits x 512 tokens), the figures "
                              "above are of those; %llu requests wholly hit move nothing and are not replayed",
                       ULL(t->hits), ULL(t->hash_ids),
                       t->hash_ids ? 100.0 * (double)t->hits / (double)t->hash_ids : 0.0, ULL(t->wholly_hit));
        shmb_notes_add(&l, shmb_notes_end(store, at));
    }
    backing_line(&l, store, cfg, batched, backing);
    rows_lines(&l, store, cfg, batched);
    return shmb_notes_publish(report, &l, store, start);
}
