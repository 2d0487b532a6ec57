/* workload: KV-cache workloads, so that "per request" means a real request:
 * model presets, the descriptors a request fans out to, request streams
 * (synthetic, or Mooncake's JSONL traces) and their replay through each
 * system's path (docs/workload.md). Bytes, trace milliseconds, row
 * nanoseconds; 0 (or a count) or -errno; out-params written only on success. */
#ifndef SHMBENCH_WORKLOAD_H
#define SHMBENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shmbench/backing.h"
#include "shmbench/copy.h"
#include "shmbench/paths.h"
#include "shmbench/progress.h"
#include "shmbench/mooncake.h"
#include "shmbench/notes.h"
#include "shmbench/paired.h"
#include "shmbench/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- model presets ---- */

/* One model's KV cache. A token takes, per layer, K and V of kv_heads heads
 * of head_dim elements (2 * kv_heads * head_dim * dtype_bytes), or with MLA
 * one compressed latent of latent_dim elements (latent_dim * dtype_bytes). */
typedef struct shmb_workload_model {
    const char *name;     /* as in --model and in row names: "llama3_8b" */
    uint32_t layers;
    uint32_t kv_heads;    /* 0 with MLA */
    uint32_t head_dim;    /* 0 with MLA */
    uint32_t latent_dim;  /* MLA: kv_lora_rank + qk_rope_head_dim; 0 otherwise */
    uint32_t dtype_bytes; /* 2: bf16; 1: an FP8 cache */
    const char *source;   /* where the figures come from */
} shmb_workload_model_t;

#define SHMB_WORKLOAD_MODELS 5

/* The presets, in --model's order. */
extern const shmb_workload_model_t shmb_workload_models[SHMB_WORKLOAD_MODELS];

/* The preset called name, or NULL. */
const shmb_workload_model_t *shmb_workload_model_find(const char *name);

/* KV bytes of one token in one layer. */
uint64_t shmb_workload_token_layer_bytes(const shmb_workload_model_t *m);

/* ---- the fan-out of one request ---- */

typedef enum shmb_workload_granularity {
    SHMB_WORKLOAD_LAYER, /* one descriptor per (block, layer), as SGLang's Mooncake sender builds them */
    SHMB_WORKLOAD_BLOCK, /* one descriptor per block holding all its layers */
    SHMB_WORKLOAD_GRANULARITIES
} shmb_workload_granularity_t;

/* "layer" or "block"; NULL outside the enum. */
const char *shmb_workload_granularity_name(shmb_workload_granularity_t g);

/* The name's granularity, or -EINVAL. */
int shmb_workload_granularity_parse(const char *name);

/* Whose descriptors a request is cut into (docs/workload.md). */
typedef enum shmb_workload_layout {
    SHMB_WORKLOAD_LAYOUT_LAYER,  /* the granularity's: a block's K and V together, per layer or per block */
    SHMB_WORKLOAD_LAYOUT_VLLM,   /* vLLM's NIXL connector: per (layer, K|V, block) of one TP rank's KV heads */
    SHMB_WORKLOAD_LAYOUT_SGLANG, /* SGLang's Mooncake sender: per (layer, K|V, run of contiguous pages) */
    SHMB_WORKLOAD_LAYOUTS
} shmb_workload_layout_t;

/* "layer", "vllm" or "sglang"; NULL outside the enum. */
const char *shmb_workload_layout_name(shmb_workload_layout_t l);

/* The name's layout, or -EINVAL. */
int shmb_workload_layout_parse(const char *name);

typedef struct shmb_workload_shape {
    const shmb_workload_model_t *model;
    uint64_t block_tokens;       /* tokens per block (=512; vllm: its block, sglang: a run of pages) */
    shmb_workload_granularity_t granularity; /* layout layer only */
    uint64_t max_request_bytes;  /* a request moves at most this many bytes (whole blocks) */
    shmb_workload_layout_t layout;
    uint32_t tp;                 /* vllm, sglang: TP ranks; one rank's KV heads move (MLA: replicated, whole);
                                  * 0 is 1 */
    int reuse;                   /* 1: a request moves only the blocks its hash ids missed (shmb_workload_tokens) */
} shmb_workload_shape_t;

/* What one request moves: every block of its input (ceil(input_length /
 * block_tokens) blocks, each whole, as a paged cache moves whole pages;
 * sglang's last run only its tokens), cut to the whole blocks that fit in
 * max_request_bytes. A block is cut into `streams` descriptors, one per
 * region (a layer, a layer's K or V, or the whole block); descriptor k =
 * s * blocks + j is block j of stream s: shmb_workload_descriptor. */
typedef struct shmb_workload_fanout {
    uint64_t blocks;           /* blocks moved */
    uint64_t descriptors;      /* streams * blocks */
    uint64_t descriptor_bytes; /* a whole block's descriptor */
    uint64_t bytes;            /* all descriptors' */
    int clipped;               /* 1: fewer blocks than the input has (max_request_bytes) */
    uint64_t streams;          /* layers, 1 (block), 2 x layers (K and V apart) */
    uint64_t last_bytes;       /* each stream's last descriptor: descriptor_bytes, or sglang's partial run */
} shmb_workload_fanout_t;

/* The fan-out of a request of input_length tokens. Returns 0, -EINVAL (no
 * model, zero block_tokens or input_length, a granularity or layout outside
 * its enum, a tp that neither divides the KV heads nor is a multiple of
 * them), -E2BIG (one block does not fit in max_request_bytes) or -EOVERFLOW. */
int shmb_workload_fanout(const shmb_workload_shape_t *s, uint64_t input_length, shmb_workload_fanout_t *out);

/* Descriptor k (< f->descriptors): its offset in the request's bytes (src
 * and dst alike; streams one after another, each its blocks in order), and
 * its length as the return. */
uint64_t shmb_workload_descriptor(const shmb_workload_fanout_t *f, uint64_t k, uint64_t *offset);

/* The descriptor holding byte `at` of the request (< f->bytes). */
uint64_t shmb_workload_descriptor_at(const shmb_workload_fanout_t *f, uint64_t at);

/* The most descriptors the replay's request path puts in one submit: sglang
 * SHMB_TRANSFER_MAX_PER_SUBMIT (a request's all in one, as SGLang's
 * batch_transfer_sync; a larger request in as few as that allows), the
 * other layouts 1 (each descriptor its own batch). */
uint64_t shmb_workload_per_submit(const shmb_workload_shape_t *s);

/* ---- request streams ---- */

/* One request as Mooncake's traces carry it (hash_ids: one id per 512-token
 * block of the input; their count is kept, and how many were hits). */
typedef struct shmb_workload_request {
    uint64_t timestamp_ms; /* arrival, from the stream's start */
    uint64_t input_length; /* tokens, >= 1 */
    uint64_t output_length;
    uint64_t hash_ids;     /* how many */
    uint64_t hits;         /* of them, ids an earlier line of the same read had (prefix-cache hits) */
} shmb_workload_request_t;

typedef struct shmb_workload_stream {
    shmb_workload_request_t *v;
    size_t n;
    size_t cap;
} shmb_workload_stream_t;

/* The tokens a request moves: its input, or with s->reuse its missed
 * blocks' (input_length - hits x 512, 0 when every block hit; a hit is
 * taken as a whole 512-token block unless it covers the input's end). */
uint64_t shmb_workload_tokens(const shmb_workload_shape_t *s, const shmb_workload_request_t *r);

/* Frees the stream's storage; it is empty afterwards. */
void shmb_workload_stream_free(shmb_workload_stream_t *s);

/* The synthetic stream's figures: those of Mooncake's FAST'25 conversation
 * trace (kvcache-ai/Mooncake, FAST25-release/traces/conversation_trace.jsonl:
 * 12031 requests over 3537 s; input length mean 12035, median 6909 tokens;
 * output length mean 343), computed from the file itself. */
#define SHMB_WORKLOAD_RATE_PER_S 3.40     /* 12031 requests / 3537 s */
#define SHMB_WORKLOAD_INPUT_MEAN 12035.0  /* tokens */
#define SHMB_WORKLOAD_INPUT_MEDIAN 6909.0 /* tokens */
#define SHMB_WORKLOAD_OUTPUT_MEAN 343.0   /* tokens */
#define SHMB_WORKLOAD_MAX_INPUT 131072    /* a 128k context; the trace's longest is 126195 */
#define SHMB_WORKLOAD_HASH_BLOCK 512      /* tokens per hash id in Mooncake's traces */

/* Appends n requests: Poisson arrivals, log-normal input and exponential
 * output lengths of the trace's figures; the same seed, the same stream.
 * 0, -EINVAL (n = 0) or -ENOMEM. */
int shmb_workload_synthetic(uint64_t seed, size_t n, shmb_workload_stream_t *out);

#define SHMB_WORKLOAD_MAX_LINE 65536 /* bytes of a trace line, newline excluded */

/* Why a trace was refused: its line (1-based; 0 for the file as a whole)
 * and what is wrong there. */
typedef struct shmb_workload_error {
    uint64_t line;
    char what[160];
} shmb_workload_error_t;

/* Parses one line (no newline; a trailing '\r' allowed): a JSON object of
 * exactly timestamp, input_length, output_length (non-negative integers)
 * and hash_ids (an array of them). 0, or -EINVAL with what is wrong in what. */
int shmb_workload_parse_line(const char *line, size_t len, shmb_workload_request_t *out, char *what,
                             size_t cap);

/* Appends at most max_requests lines (0: all) of a trace to out: how many,
 * or -EINVAL (a bad, too long or out-of-order line, no request: err says
 * which line and what), -ENOMEM, or the read's -errno (-EIO if none); out
 * unchanged on error. */
int shmb_workload_read(FILE *in, size_t max_requests, shmb_workload_stream_t *out, shmb_workload_error_t *err);

/* Writes r as one line of Mooncake's format, hash ids from first_hash_id:
 * 0 or the failed write's -errno (-EIO when it set none). */
int shmb_workload_write_line(FILE *out, const shmb_workload_request_t *r, uint64_t first_hash_id);

/* ---- the run ---- */

/* The parts of a request, each a row, over all its descriptors: the request
 * path alone, the translation alone, the copy alone, and the whole request. */
typedef enum shmb_workload_part {
    SHMB_WORKLOAD_REQUEST_PATH,
    SHMB_WORKLOAD_TRANSLATE,
    SHMB_WORKLOAD_COPY,
    SHMB_WORKLOAD_REQUEST,
    SHMB_WORKLOAD_PARTS
} shmb_workload_part_t;

/* "request_path", "translate", "copy", "request"; NULL outside the enum. */
const char *shmb_workload_part_name(shmb_workload_part_t part);

typedef struct shmb_workload_config {
    shmb_workload_shape_t shape;
    shmb_system_t system;
    int name_system;                    /* 1: rows carry the system in their step */
    uint64_t num_segments;              /* buffers or pools registered; dst (the KV pool) the middle one */
    shmb_copy_method_t method;          /* the copy's kernel */
    int threads;                        /* split each descriptor's copy (=1) */
    int cpu;                            /* as shmb_transfer_config_t's */
    shmb_progress_t *progress;          /* NULL: none; else told before each request (shmbench/progress.h) */
    double timer_overhead_ns;
    const char *shm_prefix;
    int repetition;
    shmb_backing_config_t backing;      /* src and dst (=tmpfs), as shmb_transfer_config_t's */
    shmb_backing_residency_t *granted;  /* not NULL: receives src's and dst's residency (summed,
                                         * smaps) once they are ready, each run */
    size_t nsystems;                    /* > 0: a paired replay of systems[0..nsystems), 2 at least: the
                                         * baseline first, its A/A control (the baseline again) last;
                                         * system and name_system unused (=0) */
    shmb_system_t systems[SHMB_PAIRED_MAX_SYSTEMS];
    int open_loop;                      /* 1: requests issued at timestamp / speed by an issuing thread (not with
                                         * nsystems); rows request (service) and latency (from intended start) */
    double speed;                       /* open_loop: > 0; 2: twice as fast as the trace */
} shmb_workload_config_t;

/* What a stream amounts to under a shape. */
typedef struct shmb_workload_totals {
    uint64_t requests;
    uint64_t clipped;        /* requests cut by max_request_bytes */
    uint64_t max_bytes;      /* the largest request's bytes: the size of src and of dst */
    double descriptors_mean; /* per request */
    double bytes_mean;       /* per request */
    uint64_t span_ms;        /* last arrival - first */
    uint64_t descriptors_min, descriptors_max; /* per request */
    uint64_t sizes[65];      /* descriptors of all requests by size: [i] those of (2^(i-1), 2^i] bytes */
    uint64_t hash_ids, hits; /* all requests' blocks (hash ids) and hits among them */
    uint64_t wholly_hit;     /* shape.reuse: requests all of whose blocks hit: nothing to move, not replayed */
} shmb_workload_totals_t;

/* Totals of the stream under the shape (descriptors and bytes over the
 * requests that move something); -EINVAL (empty stream), -ENODATA (reuse:
 * every request wholly hit) or shmb_workload_fanout's error for the first
 * request that has one. */
int shmb_workload_totals(const shmb_workload_shape_t *s, const shmb_workload_stream_t *stream,
                         shmb_workload_totals_t *out);

/* /dev/shm bytes a run takes on the tmpfs backing: src and dst of the
 * largest request, page-rounded (the other backings take none). */
uint64_t shmb_workload_shm_bytes(const shmb_workload_totals_t *t);

/* Replays the stream through cfg->system's path: per request, each part
 * over all its descriptors timed (one sample), checked and its bytes
 * verified; four rows (shm_transfer/workload/<part>/model:<preset>),
 * iterations = requests, each part's share of the request's p50 in its
 * note. Paired (nsystems > 0): every system replays each request in
 * shmbench/paired.h's order; per part each system's row, then its ratio
 * row to the baseline (shmb_paired_push_rows). Open-loop: two rows, the
 * request's service and its latency from its intended start (docs/workload.md).
 * 0, -EINVAL (a bad config or
 * an empty stream), -ENOTSUP (the method is missing here), -EPROTO (why
 * names the request and descriptor) or -errno (recorded). Leaves nothing
 * in /dev/shm. */
int shmb_workload_run(const shmb_workload_config_t *cfg, const shmb_workload_stream_t *stream, shmb_rows_t *rows,
                      char *why, size_t why_cap);

/* The replay's notes (shmbench/notes.h) for cfg after its run and t: the
 * stream (trace: its path as printed, NULL: synthetic of seed), model,
 * fan-out, reuse, src and dst on cfg->backing (`backing`, as the user typed
 * it, when the library has no note for it), the rows. */
int shmb_notes_workload(shmb_report_t *report, shmb_notes_t *store, const shmb_workload_config_t *cfg,
                        const shmb_workload_totals_t *t, const char *trace, uint64_t seed, const char *backing);

#ifdef __cplusplus
}
#endif

#endif
