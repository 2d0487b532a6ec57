/*
 * workload: the model presets, the fan-out of a request into descriptors,
 * the synthetic stream, and the reader and writer of Mooncake's trace
 * format (the contract is in shmbench/workload.h; the run is in
 * transfer_workload.c).
 */
#include "workload_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmbench/file.h"
#include "shmbench/rng.h"

/* Sources (each model's config.json on Hugging Face; docs/workload.md):
 * layers = num_hidden_layers; K and V of num_key_value_heads x head_dim
 * (hidden_size / num_attention_heads where head_dim is absent); MLA caches one
 * latent of kv_lora_rank 512 + qk_rope_head_dim 64 per token and layer, no K
 * and V apart (SGLang's Mooncake sender sends one buffer per layer for it). */
const shmb_workload_model_t shmb_workload_models[SHMB_WORKLOAD_MODELS] = {
    {"llama3_8b", 32, 8, 128, 0, 2, "meta-llama/Meta-Llama-3-8B config.json"},
    {"llama31_70b", 80, 8, 128, 0, 2, "meta-llama/Llama-3.1-70B config.json"},
    {"qwen3_8b", 36, 8, 128, 0, 2, "Qwen/Qwen3-8B config.json"},
    {"deepseek_v3", 61, 0, 0, 512 + 64, 2, "deepseek-ai/DeepSeek-V3 config.json (MLA)"},
    {"deepseek_v3_fp8", 61, 0, 0, 512 + 64, 1, "deepseek-ai/DeepSeek-V3 config.json (MLA), an FP8 KV cache"},
};

const shmb_workload_model_t *shmb_workload_model_find(const char *name)
{
    for (int i = 0; name && i < SHMB_WORKLOAD_MODELS; i++)
        if (strcmp(name, shmb_workload_models[i].name) == 0)
            return &shmb_workload_models[i];
    return NULL;
}

uint64_t shmb_workload_token_layer_bytes(const shmb_workload_model_t *m)
{
    if (m->latent_dim)
        return (uint64_t)m->latent_dim * m->dtype_bytes;
    return 2ull * m->kv_heads * m->head_dim * m->dtype_bytes;
}

const char *shmb_workload_granularity_name(shmb_workload_granularity_t g)
{
    static const char *const names[SHMB_WORKLOAD_GRANULARITIES] = {"layer", "block"};
    return (unsigned)g < SHMB_WORKLOAD_GRANULARITIES ? names[g] : NULL;
}

int shmb_workload_granularity_parse(const char *name)
{
    for (int g = 0; name && g < SHMB_WORKLOAD_GRANULARITIES; g++)
        if (strcmp(name, shmb_workload_granularity_name((shmb_workload_granularity_t)g)) == 0)
            return g;
    return -EINVAL;
}

const char *shmb_workload_layout_name(shmb_workload_layout_t l)
{
    static const char *const names[SHMB_WORKLOAD_LAYOUTS] = {"layer", "vllm", "sglang"};
    return (unsigned)l < SHMB_WORKLOAD_LAYOUTS ? names[l] : NULL;
}

int shmb_workload_layout_parse(const char *name)
{
    for (int l = 0; name && l < SHMB_WORKLOAD_LAYOUTS; l++)
        if (strcmp(name, shmb_workload_layout_name((shmb_workload_layout_t)l)) == 0)
            return l;
    return -EINVAL;
}

const char *shmb_workload_part_name(shmb_workload_part_t part)
{
    static const char *const names[SHMB_WORKLOAD_PARTS] = {"request_path", "translate", "copy", "request"};
    return (unsigned)part < SHMB_WORKLOAD_PARTS ? names[part] : NULL;
}

/* Streams per block and one token's bytes in one stream. vllm, sglang: K
 * and V apart per layer, one TP rank's KV heads (tp divides the heads, or
 * is a multiple of them: each rank holds one, replicated, as vLLM does);
 * MLA's latent is whole on every rank. -EINVAL for any other tp. */
static int regions(const shmb_workload_shape_t *s, uint64_t *streams, uint64_t *token_bytes)
{
    const shmb_workload_model_t *m = s->model;
    const uint64_t tp = s->tp ? s->tp : 1;
    if (s->layout == SHMB_WORKLOAD_LAYOUT_LAYER) {
        *streams = s->granularity == SHMB_WORKLOAD_LAYER ? m->layers : 1;
        *token_bytes = shmb_workload_token_layer_bytes(m) * m->layers / *streams;
        return tp == 1 ? 0 : -EINVAL;
    }
    *streams = m->latent_dim ? m->layers : 2ull * m->layers;
    if (m->latent_dim) {
        *token_bytes = (uint64_t)m->latent_dim * m->dtype_bytes;
        return 0;
    }
    if (m->kv_heads % tp != 0 && tp % m->kv_heads != 0)
        return -EINVAL;
    *token_bytes = (m->kv_heads >= tp ? m->kv_heads / tp : 1) * m->head_dim * m->dtype_bytes;
    return 0;
}

int shmb_workload_fanout(const shmb_workload_shape_t *s, uint64_t input_length, shmb_workload_fanout_t *out)
{
    uint64_t streams, token_bytes;
    if (!s->model || s->block_tokens == 0 || input_length == 0 ||
        (unsigned)s->granularity >= SHMB_WORKLOAD_GRANULARITIES || (unsigned)s->layout >= SHMB_WORKLOAD_LAYOUTS ||
        regions(s, &streams, &token_bytes) < 0)
        return -EINVAL;
    if (s->block_tokens > UINT64_MAX / token_bytes / streams)
        return -EOVERFLOW;
    const uint64_t d = s->block_tokens * token_bytes, block_bytes = d * streams;
    if (block_bytes > s->max_request_bytes)
        return -E2BIG;
    const uint64_t blocks = input_length / s->block_tokens + (input_length % s->block_tokens != 0);
    const uint64_t fit = s->max_request_bytes / block_bytes;
    shmb_workload_fanout_t f = {.blocks = blocks < fit ? blocks : fit, .clipped = blocks > fit};
    f.streams = streams;
    f.descriptors = f.blocks * streams;
    f.descriptor_bytes = f.last_bytes = d;
    /* SGLang moves its pages (1 token each by default) exactly; a paged block moves whole */
    if (s->layout == SHMB_WORKLOAD_LAYOUT_SGLANG && !f.clipped && input_length % s->block_tokens)
        f.last_bytes = input_length % s->block_tokens * token_bytes;
    f.bytes = streams * ((f.blocks - 1) * d + f.last_bytes);
    *out = f;
    return 0;
}

uint64_t shmb_workload_descriptor(const shmb_workload_fanout_t *f, uint64_t k, uint64_t *offset)
{
    const uint64_t stream_bytes = (f->blocks - 1) * f->descriptor_bytes + f->last_bytes, j = k % f->blocks;
    *offset = k / f->blocks * stream_bytes + j * f->descriptor_bytes;
    return j + 1 == f->blocks ? f->last_bytes : f->descriptor_bytes;
}

uint64_t shmb_workload_descriptor_at(const shmb_workload_fanout_t *f, uint64_t at)
{
    const uint64_t stream_bytes = (f->blocks - 1) * f->descriptor_bytes + f->last_bytes;
    const uint64_t j = at % stream_bytes / f->descriptor_bytes;
    return at / stream_bytes * f->blocks + (j < f->blocks ? j : f->blocks - 1);
}

uint64_t shmb_workload_per_submit(const shmb_workload_shape_t *s)
{
    return s->layout == SHMB_WORKLOAD_LAYOUT_SGLANG ? SHMB_TRANSFER_MAX_PER_SUBMIT : 1;
}

void shmb_workload_stream_free(shmb_workload_stream_t *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static int stream_push(shmb_workload_stream_t *s, const shmb_workload_request_t *r)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        shmb_workload_request_t *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = *r;
    return 0;
}

/* A uniform double in (0, 1): never 0, so that its logarithm is finite. */
static double uniform(shmb_rng_t *rng)
{
    return ((double)(shmb_rng_next(rng) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* A standard normal deviate (Box-Muller; the second deviate is dropped so
 * that each request draws the same count of numbers). */
static double normal(shmb_rng_t *rng)
{
    const double u = uniform(rng), v = uniform(rng);
    return sqrt(-2.0 * log(u)) * cos(2.0 * 3.14159265358979323846 * v);
}

/* Log-normal with median m and mean a: mu = ln m, sigma^2 = 2 ln(a / m). */
static uint64_t input_length(shmb_rng_t *rng)
{
    const double sigma = sqrt(2.0 * log(SHMB_WORKLOAD_INPUT_MEAN / SHMB_WORKLOAD_INPUT_MEDIAN));
    const double x = exp(log(SHMB_WORKLOAD_INPUT_MEDIAN) + sigma * normal(rng));
    return x < 1.0 ? 1 : x > SHMB_WORKLOAD_MAX_INPUT ? SHMB_WORKLOAD_MAX_INPUT : (uint64_t)llround(x);
}

int shmb_workload_synthetic(uint64_t seed, size_t n, shmb_workload_stream_t *out)
{
    if (n == 0)
        return -EINVAL;
    shmb_rng_t rng;
    shmb_rng_seed(&rng, seed);
    const size_t first = out->n;
    double t_ms = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            t_ms += -log(uniform(&rng)) * 1000.0 / SHMB_WORKLOAD_RATE_PER_S;
        shmb_workload_request_t r = {.timestamp_ms = (uint64_t)t_ms, .input_length = input_length(&rng)};
        r.output_length = 1 + (uint64_t)(-log(uniform(&rng)) * (SHMB_WORKLOAD_OUTPUT_MEAN - 1.0));
        r.hash_ids = (r.input_length + SHMB_WORKLOAD_HASH_BLOCK - 1) / SHMB_WORKLOAD_HASH_BLOCK;
        if (stream_push(out, &r) < 0) {
            out->n = first;
            return -ENOMEM;
        }
    }
    return 0;
}

int shmb_workload_write_line(FILE *out, const shmb_workload_request_t *r, uint64_t first_hash_id)
{
    errno = 0;
    int bad = fprintf(out, "{\"timestamp\": %llu, \"input_length\": %llu, \"output_length\": %llu, \"hash_ids\": [",
                      (unsigned long long)r->timestamp_ms, (unsigned long long)r->input_length,
                      (unsigned long long)r->output_length) < 0;
    for (uint64_t i = 0; i < r->hash_ids && !bad; i++)
        bad = fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)(first_hash_id + i)) < 0;
    if (bad || fputs("]}\n", out) == EOF)
        return errno ? -errno : -EIO;
    return 0;
}

/* ---- the line parser: one JSON object of exactly the four fields ---- */

typedef struct cursor {
    const char *start, *p, *end;
    char *what;
    size_t cap;
    shmb_workload_seen_t *seen; /* NULL: hits not counted */
    uint64_t line;
} cursor_t;

static int bad(cursor_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, c->cap, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static void skip_space(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

/* The next character, or a description of what is there instead. */
static int expect(cursor_t *c, char want, const char *where)
{
    skip_space(c);
    if (c->p < c->end && *c->p == want) {
        c->p++;
        return 0;
    }
    if (c->p == c->end)
        return bad(c, "expected '%c' %s, found the end of the line", want, where);
    if (*c->p > ' ' && *c->p < 0x7f)
        return bad(c, "expected '%c' %s, found '%c' at column %td", want, where, *c->p, c->p - c->start + 1);
    return bad(c, "expected '%c' %s, found byte 0x%02x at column %td", want, where, (unsigned char)*c->p,
               c->p - c->start + 1);
}

/* A non-negative integer that fits in 64 bits. */
static int number(cursor_t *c, const char *field, uint64_t *out)
{
    skip_space(c);
    if (c->p == c->end || *c->p < '0' || *c->p > '9')
        return bad(c, "%s: expected a non-negative integer", field);
    uint64_t v = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
        const uint64_t d = (uint64_t)(*c->p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return bad(c, "%s: number too large (more than 64 bits)", field);
        v = v * 10 + d;
    }
    if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return bad(c, "%s: expected a non-negative integer, found a fraction or exponent", field);
    *out = v;
    return 0;
}

/* hash_ids: [n, n, ...]; their count into *count, those an earlier line had
 * into *hits. */
static int id_list(cursor_t *c, uint64_t *count, uint64_t *hits)
{
    int ret = expect(c, '[', "to open hash_ids");
    uint64_t n = 0, id;
    skip_space(c);
    if (ret == 0 && c->p < c->end && *c->p == ']') {
        c->p++;
        *count = 0;
        return 0;
    }
    while (ret == 0) {
        if ((ret = number(c, "hash_ids", &id)) < 0)
            break;
        n++;
        const int hit = c->seen ? shmb_workload_seen_add(c->seen, id, c->line) : 0;
        if (hit < 0)
            return hit;
        *hits += (uint64_t)hit;
        skip_space(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        ret = expect(c, ']', "after a hash id");
        break;
    }
    if (ret == 0)
        *count = n;
    return ret;
}

static const char *const fields[] = {"timestamp", "input_length", "output_length", "hash_ids"};
#define FIELDS 4

/* A key: one of the four fields, given once; its index into *which. */
static int key(cursor_t *c, unsigned seen, int *which)
{
    int ret = expect(c, '"', "to open a field name");
    if (ret < 0)
        return ret;
    const char *start = c->p;
    while (c->p < c->end && *c->p != '"')
        c->p++;
    if (c->p == c->end)
        return bad(c, "a field name is not closed");
    const size_t len = (size_t)(c->p++ - start);
    for (int f = 0; f < FIELDS; f++) {
        if (strlen(fields[f]) != len || memcmp(fields[f], start, len) != 0)
            continue;
        if (seen & (1u << f))
            return bad(c, "field \"%s\" given twice", fields[f]);
        *which = f;
        return expect(c, ':', "after a field name");
    }
    return bad(c, "unknown field \"%.*s\" (expected timestamp, input_length, output_length, hash_ids)",
               (int)(len > 40 ? 40 : len), start);
}

static int value(cursor_t *c, int which, shmb_workload_request_t *r)
{
    uint64_t *slots[] = {&r->timestamp_ms, &r->input_length, &r->output_length};
    return which == 3 ? id_list(c, &r->hash_ids, &r->hits) : number(c, fields[which], slots[which]);
}

/* Every field present, and nothing after the object. */
static int complete(cursor_t *c, unsigned seen)
{
    for (int f = 0; f < FIELDS; f++)
        if (!(seen & (1u << f)))
            return bad(c, "missing field \"%s\"", fields[f]);
    skip_space(c);
    if (c->p < c->end && *c->p == '\r' && c->p + 1 == c->end)
        c->p++;
    return c->p == c->end ? 0 : bad(c, "unexpected text after the object");
}

static int parse(const char *line, size_t len, shmb_workload_request_t *out, char *what, size_t cap,
                 shmb_workload_seen_t *ids, uint64_t line_no)
{
    cursor_t c = {line, line, line + len, what, cap, ids, line_no};
    shmb_workload_request_t r = {0};
    unsigned seen = 0;
    int ret = expect(&c, '{', "at the start of the line");
    while (ret == 0) {
        int which = -1;
        if ((ret = key(&c, seen, &which)) < 0 || (ret = value(&c, which, &r)) < 0)
            break;
        seen |= 1u << which;
        skip_space(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if ((ret = expect(&c, '}', "after a value")) == 0)
            ret = complete(&c, seen);
        break;
    }
    if (ret == 0)
        *out = r;
    return ret;
}

int shmb_workload_parse_line(const char *line, size_t len, shmb_workload_request_t *out, char *what, size_t cap)
{
    return parse(line, len, out, what, cap, NULL, 0);
}

/* The checks across lines and on a request's values. */
static int check_request(const shmb_workload_stream_t *s, size_t first, const shmb_workload_request_t *r,
                         char *what, size_t cap)
{
    if (r->input_length == 0) {
        snprintf(what, cap, "input_length must be at least 1");
        return -EINVAL;
    }
    const uint64_t prev = s->n > first ? s->v[s->n - 1].timestamp_ms : 0;
    if (s->n > first && r->timestamp_ms < prev) {
        snprintf(what, cap, "timestamp %llu is before the previous line's %llu (the trace must be in arrival order)",
                 (unsigned long long)r->timestamp_ms, (unsigned long long)prev);
        return -EINVAL;
    }
    return 0;
}

/* One line of the file (len bytes, its newline left out) into out. */
static int read_line(shmb_workload_stream_t *out, size_t first, char *buf, size_t len, shmb_workload_error_t *err,
                     shmb_workload_seen_t *seen)
{
    if (memchr(buf, '\0', len)) {
        snprintf(err->what, sizeof(err->what), "a NUL byte in the line");
        return -EINVAL;
    }
    shmb_workload_request_t r;
    int ret = parse(buf, len, &r, err->what, sizeof(err->what), seen, err->line);
    if (ret == 0)
        ret = check_request(out, first, &r, err->what, sizeof(err->what));
    if (ret == 0 && stream_push(out, &r) < 0)
        ret = -ENOMEM;
    return ret;
}

int shmb_workload_read(FILE *in, size_t max_requests, shmb_workload_stream_t *out, shmb_workload_error_t *err)
{
    const size_t first = out->n;
    memset(err, 0, sizeof(*err));
    /* a line's whole room up front: no file, however long its lines, takes more */
    char *buf = malloc(SHMB_WORKLOAD_MAX_LINE + 1);
    if (!buf)
        return -ENOMEM;
    size_t len;
    int ret = 0;
    shmb_workload_seen_t seen = {0};
    while ((max_requests == 0 || out->n - first < max_requests) &&
           (ret = shmb_file_read_line(in, buf, SHMB_WORKLOAD_MAX_LINE + 1, &len)) > 0) {
        err->line++;
        if ((ret = read_line(out, first, buf, len, err, &seen)) < 0)
            break;
    }
    free(buf);
    shmb_workload_seen_free(&seen);
    if (ret == -E2BIG) {
        err->line++;
        snprintf(err->what, sizeof(err->what), "line longer than %d bytes", SHMB_WORKLOAD_MAX_LINE);
        ret = -EINVAL;
    }
    if (ret == -EINVAL && !err->what[0])
        ret = -EIO; /* the read's own EINVAL (a directory read on some systems) is not a bad line */
    if (ret >= 0 && out->n == first) {
        err->line = 0;
        snprintf(err->what, sizeof(err->what), "no request in the trace (an empty file)");
        ret = -EINVAL;
    }
    if (ret < 0) {
        out->n = first;
        return ret;
    }
    memset(err, 0, sizeof(*err));
    return (int)(out->n - first > INT32_MAX ? INT32_MAX : out->n - first);
}
