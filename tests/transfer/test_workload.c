/* workload: the presets' bytes, a request's fan-out, the synthetic stream, the trace reader's
 * errors, and the replay through each system. */
#include <sys/resource.h>

#include "helpers.h"
#include "workload_fixture.h"

#include "shmbench/workload.h"
#include "transfer/workload_internal.h"

#define PREFIX shmb_test_prefix()
#define MIB (1ull << 20)

static const shmb_workload_model_t *model(const char *name)
{
    const shmb_workload_model_t *m = shmb_workload_model_find(name);
    assert_non_null(m);
    return m;
}

/* 2 * kv_heads * head_dim * dtype per token and layer; MLA one latent. */
static void test_presets(void **state)
{
    static const struct { const char *name; uint64_t bytes, layers; } want[] = {
        {"llama3_8b", 2 * 8 * 128 * 2, 32}, {"llama31_70b", 2 * 8 * 128 * 2, 80}, {"qwen3_8b", 2 * 8 * 128 * 2, 36},
        {"deepseek_v3", (512 + 64) * 2, 61}, {"deepseek_v3_fp8", (512 + 64) * 1, 61}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(shmb_workload_token_layer_bytes(model(want[i].name)), want[i].bytes);
        assert_int_equal(model(want[i].name)->layers, want[i].layers);
    }
    assert_null(shmb_workload_model_find("llama3"));
    assert_null(shmb_workload_model_find(NULL));
    for (int i = 0; i < SHMB_WORKLOAD_MODELS; i++)
        assert_ptr_equal(shmb_workload_model_find(shmb_workload_models[i].name), &shmb_workload_models[i]);
}

static shmb_workload_shape_t shape(const char *name, uint64_t block_tokens, shmb_workload_granularity_t g,
                                   uint64_t max)
{
    shmb_workload_shape_t s = {model(name), block_tokens, g, max, SHMB_WORKLOAD_LAYOUT_LAYER, 1, 0};
    return s;
}

static shmb_workload_shape_t engine(const char *name, shmb_workload_layout_t l, uint64_t block_tokens, uint32_t tp)
{
    shmb_workload_shape_t s = {model(name), block_tokens, SHMB_WORKLOAD_LAYER, 1ull << 40, l, tp, 0};
    return s;
}

/* Every descriptor: offset and length from the fan-out, its index from any of its bytes; they tile it. */
static void check_tiling(const shmb_workload_fanout_t *f)
{
    uint64_t next = 0, at;
    for (uint64_t k = 0; k < f->descriptors; k++) {
        const uint64_t len = shmb_workload_descriptor(f, k, &at);
        assert_int_equal(at, next);
        assert_int_equal(shmb_workload_descriptor_at(f, at), k);
        assert_int_equal(shmb_workload_descriptor_at(f, at + len - 1), k);
        next += len;
    }
    assert_int_equal(next, f->bytes);
}

/* The engines' layouts, counted by hand for a 1000-token request:
 * vllm, llama3_8b (32 layers, 8 KV heads x 128, bf16), 16-token blocks:
 *   ceil(1000 / 16) = 63 blocks (62 x 16 = 992, 8 tokens left, a whole block);
 *   streams 32 layers x (K, V) = 64; descriptor 16 x 8 x 128 x 2 B = 32768 B;
 *   63 x 64 = 4032 descriptors, 4032 x 32768 = 132120576 B.
 *   tp=4: 2 heads per rank: 16 x 2 x 128 x 2 = 8192 B, still 4032 of them;
 *   tp=16 (a multiple of 8): one head, 4096 B; tp=3: neither, -EINVAL.
 *   1024 tokens: 64 x 64 = 4096 descriptors; 8192: 512 x 64 = 32768 (1 GiB).
 *   tp=4, 10016 tokens: 626 blocks x 64 = 40064 descriptors of 8192 B,
 *   313 MiB: the figures vLLM issue 34054 logged for one transfer.
 * vllm, deepseek_v3 (61 layers, MLA latent 576, bf16): 61 streams (no K|V),
 *   63 x 61 = 3843 descriptors of 16 x 576 x 2 = 18432 B; tp=8 changes
 *   nothing (the latent is replicated); deepseek_v3_fp8: 16 x 576 = 9216 B.
 * sglang, llama3_8b, runs of 512 tokens: ceil(1000 / 512) = 2 runs; 64
 *   streams: 128 descriptors, each stream a 512 x 8 x 128 x 2 = 1048576 B
 *   run and a last run of 488 tokens, 488 x 2048 = 999424 B;
 *   64 x 1000 x 2048 = 131072000 B in all.
 * sglang, deepseek_v3, runs of 512: 61 x 2 = 122 descriptors of 512 x 1152
 *   = 589824 B and 488 x 1152 = 562176 B; 61 x 1000 x 1152 = 70272000 B. */
static void test_fanout_layouts(void **state)
{
    enum { LAYER = SHMB_WORKLOAD_LAYOUT_LAYER, VLLM = SHMB_WORKLOAD_LAYOUT_VLLM, SGLANG = SHMB_WORKLOAD_LAYOUT_SGLANG,
           BLOCK = SHMB_WORKLOAD_BLOCK };
    static const struct {
        const char *model;
        int layout, granularity;
        uint64_t block_tokens, tp, input, blocks, descriptors, d, last, bytes;
    } want[] = {
        {"llama3_8b", VLLM, 0, 16, 1, 1000, 63, 4032, 32768, 32768, 132120576},
        {"llama3_8b", VLLM, 0, 16, 4, 1000, 63, 4032, 8192, 8192, 4032 * 8192},
        {"llama3_8b", VLLM, 0, 16, 16, 1000, 63, 4032, 4096, 4096, 4032 * 4096},
        {"llama3_8b", VLLM, 0, 16, 1, 1024, 64, 4096, 32768, 32768, 128 * MIB},
        {"llama3_8b", VLLM, 0, 16, 1, 8192, 512, 32768, 32768, 32768, 1024 * MIB},
        {"llama3_8b", VLLM, 0, 16, 4, 10016, 626, 40064, 8192, 8192, 313 * MIB},
        {"deepseek_v3", VLLM, 0, 16, 1, 1000, 63, 3843, 18432, 18432, 3843 * 18432},
        {"deepseek_v3", VLLM, 0, 16, 8, 1000, 63, 3843, 18432, 18432, 3843 * 18432},
        {"deepseek_v3_fp8", VLLM, 0, 16, 1, 1000, 63, 3843, 9216, 9216, 3843 * 9216},
        {"llama3_8b", SGLANG, 0, 512, 1, 1000, 2, 128, 1048576, 999424, 131072000},
        {"deepseek_v3", SGLANG, 0, 512, 1, 1000, 2, 122, 589824, 562176, 70272000},
        /* a 4k-token llama3_8b request: 512 MiB, 8 blocks of 512 tokens, 8 * 32 descriptors a layer, 8 a block */
        {"llama3_8b", LAYER, 0, 512, 1, 4096, 8, 8 * 32, 2 * MIB, 2 * MIB, 512 * MIB},
        {"llama3_8b", LAYER, BLOCK, 512, 1, 4096, 8, 8, 64 * MIB, 64 * MIB, 512 * MIB},
        {"llama3_8b", LAYER, BLOCK, 512, 1, 4097, 9, 9, 64 * MIB, 64 * MIB, 576 * MIB}, /* a whole block more */
        {"llama3_8b", LAYER, BLOCK, 512, 1, 1, 1, 1, 64 * MIB, 64 * MIB, 64 * MIB},      /* one token, one block */
        {"deepseek_v3", LAYER, 0, 16, 1, 100, 7, 7 * 61, 16 * 1152, 16 * 1152, 7 * 61 * 16 * 1152},
    };
    shmb_workload_fanout_t f;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        shmb_workload_shape_t s = engine(want[i].model, (shmb_workload_layout_t)want[i].layout, want[i].block_tokens,
                                         (uint32_t)want[i].tp);
        s.granularity = (shmb_workload_granularity_t)want[i].granularity;
        assert_int_equal(shmb_workload_fanout(&s, want[i].input, &f), 0);
        const uint64_t got[] = {f.blocks, f.descriptors, f.descriptor_bytes, f.last_bytes, f.bytes, f.clipped};
        const uint64_t exp[] = {want[i].blocks, want[i].descriptors, want[i].d, want[i].last, want[i].bytes, 0};
        static const char *const field[] = {"blocks", "descriptors", "descriptor bytes", "last", "bytes", "clipped"};
        for (int k = 0; k < 6; k++)
            if (got[k] != exp[k])
                fail_msg("row %zu (%s, %llu tokens): %s %llu, expected %llu", i, want[i].model,
                         (unsigned long long)want[i].input, field[k], (unsigned long long)got[k],
                         (unsigned long long)exp[k]);
        if (f.descriptors < 5000)
            check_tiling(&f);
    }
    /* sglang's second descriptor is stream 0's partial run; the third starts stream 1 */
    shmb_workload_shape_t s = engine("llama3_8b", SHMB_WORKLOAD_LAYOUT_SGLANG, 512, 1);
    uint64_t at;
    assert_int_equal(shmb_workload_fanout(&s, 1000, &f), 0);
    assert_int_equal(shmb_workload_descriptor(&f, 1, &at), 999424);
    assert_int_equal(at, 1048576);
    assert_int_equal(shmb_workload_descriptor(&f, 2, &at), 1048576);
    assert_int_equal(at, 2048000);
    /* cut by the cap: whole runs only (one run of 64 streams x 1 MiB fits in 100 MiB) */
    s.max_request_bytes = 100 * MIB;
    assert_int_equal(shmb_workload_fanout(&s, 1000, &f), 0);
    assert_true(f.clipped && f.blocks == 1 && f.last_bytes == MIB && f.bytes == 64 * MIB);
    /* tp: neither a divisor nor a multiple of the KV heads; tp with the layer layout */
    s = engine("llama3_8b", SHMB_WORKLOAD_LAYOUT_VLLM, 16, 3);
    assert_int_equal(shmb_workload_fanout(&s, 1000, &f), -EINVAL);
    s = engine("llama3_8b", SHMB_WORKLOAD_LAYOUT_LAYER, 16, 2);
    assert_int_equal(shmb_workload_fanout(&s, 1000, &f), -EINVAL);
    s = engine("llama3_8b", SHMB_WORKLOAD_LAYOUTS, 16, 1);
    assert_int_equal(shmb_workload_fanout(&s, 1000, &f), -EINVAL);
    assert_int_equal(shmb_workload_layout_parse("vllm"), SHMB_WORKLOAD_LAYOUT_VLLM);
    assert_int_equal(shmb_workload_layout_parse("sglang"), SHMB_WORKLOAD_LAYOUT_SGLANG);
    assert_int_equal(shmb_workload_layout_parse("trtllm"), -EINVAL);
    assert_null(shmb_workload_layout_name(SHMB_WORKLOAD_LAYOUTS));
}

/* The cap keeps whole blocks; one block over it is -E2BIG. */
static void test_fanout_cap_and_errors(void **state)
{
    shmb_workload_fanout_t f = {0};
    shmb_workload_shape_t s = shape("llama3_8b", 512, SHMB_WORKLOAD_LAYER, 200 * MIB);
    assert_int_equal(shmb_workload_fanout(&s, 4096, &f), 0);
    assert_int_equal(f.blocks, 3);
    assert_int_equal(f.bytes, 192 * MIB);
    assert_int_equal(f.clipped, 1);
    s.max_request_bytes = 64 * MIB;
    assert_int_equal(shmb_workload_fanout(&s, 512, &f), 0);
    assert_int_equal(f.clipped, 0);
    s.max_request_bytes = 64 * MIB - 1;
    assert_int_equal(shmb_workload_fanout(&s, 1, &f), -E2BIG);
    s.max_request_bytes = 1ull << 40;
    assert_int_equal(shmb_workload_fanout(&s, 0, &f), -EINVAL);
    s.block_tokens = 0;
    assert_int_equal(shmb_workload_fanout(&s, 1, &f), -EINVAL);
    s.block_tokens = UINT64_MAX / 1000;
    assert_int_equal(shmb_workload_fanout(&s, 1, &f), -EOVERFLOW);
    s.block_tokens = 512;
    s.granularity = SHMB_WORKLOAD_GRANULARITIES;
    assert_int_equal(shmb_workload_fanout(&s, 1, &f), -EINVAL);
    s.model = NULL;
    s.granularity = SHMB_WORKLOAD_LAYER;
    assert_int_equal(shmb_workload_fanout(&s, 1, &f), -EINVAL);
    assert_int_equal(shmb_workload_granularity_parse("layer"), SHMB_WORKLOAD_LAYER);
    assert_int_equal(shmb_workload_granularity_parse("block"), SHMB_WORKLOAD_BLOCK);
    assert_int_equal(shmb_workload_granularity_parse("page"), -EINVAL);
    assert_null(shmb_workload_granularity_name(SHMB_WORKLOAD_GRANULARITIES));
    assert_string_equal(shmb_workload_part_name(SHMB_WORKLOAD_REQUEST_PATH), "request_path");
    assert_null(shmb_workload_part_name(SHMB_WORKLOAD_PARTS));
}

/* A seed gives one stream, another another; input mean near 12035, arrivals near 3.4/s, as the trace. */
static void test_synthetic(void **state)
{
    shmb_workload_stream_t a = {0}, b = {0}, c = {0};
    assert_int_equal(shmb_workload_synthetic(7, 0, &a), -EINVAL);
    assert_int_equal(shmb_workload_synthetic(7, 20000, &a), 0);
    assert_int_equal(shmb_workload_synthetic(7, 20000, &b), 0);
    assert_int_equal(shmb_workload_synthetic(8, 20000, &c), 0);
    assert_int_equal(a.n, 20000);
    assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
    assert_true(memcmp(a.v, c.v, a.n * sizeof(*a.v)) != 0);
    double sum = 0;
    for (size_t i = 0; i < a.n; i++) {
        const shmb_workload_request_t *r = &a.v[i];
        assert_true(r->input_length >= 1 && r->input_length <= SHMB_WORKLOAD_MAX_INPUT);
        assert_true(r->output_length >= 1);
        assert_int_equal(r->hash_ids, (r->input_length + 511) / 512);
        assert_true(i == 0 || r->timestamp_ms >= a.v[i - 1].timestamp_ms);
        sum += (double)r->input_length;
    }
    const double mean = sum / (double)a.n, rate = (double)a.n * 1000.0 / (double)a.v[a.n - 1].timestamp_ms;
    if (mean < 0.95 * SHMB_WORKLOAD_INPUT_MEAN || mean > 1.05 * SHMB_WORKLOAD_INPUT_MEAN ||
        rate < 0.95 * SHMB_WORKLOAD_RATE_PER_S || rate > 1.05 * SHMB_WORKLOAD_RATE_PER_S)
        fail_msg("input mean %.0f (want ~%.0f), rate %.2f/s (want ~%.2f)", mean, SHMB_WORKLOAD_INPUT_MEAN, rate,
                 SHMB_WORKLOAD_RATE_PER_S);
    shmb_workload_stream_free(&a);
    shmb_workload_stream_free(&b);
    shmb_workload_stream_free(&c);
    assert_null(a.v);
}

static int parse(const char *line, shmb_workload_request_t *r, char *what, size_t cap)
{
    return shmb_workload_parse_line(line, strlen(line), r, what, cap);
}

/* Any order, spaces, a trailing CR, an empty id list. */
static void test_parse_good(void **state)
{
    shmb_workload_request_t r;
    char what[160];
    assert_int_equal(parse("{\"timestamp\": 27482, \"input_length\": 6955, \"output_length\": 52, "
                           "\"hash_ids\": [46, 47, 48]}", &r, what, sizeof(what)), 0);
    assert_int_equal(r.timestamp_ms, 27482);
    assert_int_equal(r.input_length, 6955);
    assert_int_equal(r.output_length, 52);
    assert_int_equal(r.hash_ids, 3);
    assert_int_equal(parse(" {\"hash_ids\":[],\"output_length\":0,\"input_length\":1,"
                           "\"timestamp\":18446744073709551615}\r", &r, what, sizeof(what)), 0);
    assert_int_equal(r.hash_ids, 0);
    assert_true(r.timestamp_ms == UINT64_MAX);
}

/* Each malformed line is -EINVAL and says what is wrong. */
static void test_parse_errors(void **state)
{
    static const struct {
        const char *line, *says;
    } cases[] = {
        {"", "found the end of the line"},
        {"[1]", "expected '{'"},
        {"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3}", "missing field \"hash_ids\""},
        {"{\"timestamp\": \"1\", \"input_length\": 2, \"output_length\": 3, \"hash_ids\": []}",
         "timestamp: expected a non-negative integer"},
        {"{\"timestamp\": -1, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": []}",
         "timestamp: expected a non-negative integer"},
        {"{\"timestamp\": 1.5, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": []}", "fraction"},
        {"{\"timestamp\": 18446744073709551616, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": []}",
         "timestamp: number too large"},
        {"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": [1,]}",
         "hash_ids: expected a non-negative integer"},
        {"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": 4}", "expected '['"},
        {"{\"timestamp\": 1, \"timestamp\": 2}", "field \"timestamp\" given twice"},
        {"{\"ts\": 1}", "unknown field \"ts\""},
        {"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": []} x",
         "unexpected text after the object"},
        {"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": []",
         "found the end of the line"},
        {"{\"timestamp", "a field name is not closed"},
        {"{\"timestamp\" 1}", "expected ':'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        shmb_workload_request_t r = {.input_length = 99};
        char what[160] = "";
        if (parse(cases[i].line, &r, what, sizeof(what)) != -EINVAL || !strstr(what, cases[i].says))
            fail_msg("line '%s': said '%s', want '%s'", cases[i].line, what, cases[i].says);
        assert_int_equal(r.input_length, 99); /* untouched */
    }
}

#define GOOD "{\"timestamp\": %d, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [1, 2]}\n"

/* A trace of text (len bytes) through shmb_workload_read. */
static int read_text(const char *text, size_t len, size_t max, shmb_workload_stream_t *s, shmb_workload_error_t *err)
{
    FILE *f = fmemopen((void *)text, len, "r");
    assert_non_null(f);
    int ret = shmb_workload_read(f, max, s, err);
    fclose(f);
    return ret;
}

static void expect_line_error(const char *text, size_t len, uint64_t line, const char *says)
{
    shmb_workload_stream_t s = {0};
    shmb_workload_error_t err;
    int ret = read_text(text, len, 0, &s, &err);
    if (ret != -EINVAL || err.line != line || !strstr(err.what, says))
        fail_msg("got %d at line %llu: '%s'; want line %llu: '%s'", ret, (unsigned long long)err.line, err.what,
                 (unsigned long long)line, says);
    assert_int_equal(s.n, 0);
    shmb_workload_stream_free(&s);
}

/* Each read error names its line (bad, blank, time going back, input 0, NUL, too long); empty file: line 0. */
static void test_read_errors(void **state)
{
    char text[512];
    snprintf(text, sizeof(text), GOOD GOOD "{\"timestamp\": 3}\n", 1, 2);
    expect_line_error(text, strlen(text), 3, "missing field \"input_length\"");
    snprintf(text, sizeof(text), GOOD "\n" GOOD, 1, 2);
    expect_line_error(text, strlen(text), 2, "found the end of the line");
    snprintf(text, sizeof(text), GOOD GOOD, 5, 4);
    expect_line_error(text, strlen(text), 2, "timestamp 4 is before the previous line's 5");
    snprintf(text, sizeof(text), "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 3, \"hash_ids\": []}\n");
    expect_line_error(text, strlen(text), 1, "input_length must be at least 1");
    snprintf(text, sizeof(text), GOOD, 1);
    text[5] = '\0';
    expect_line_error(text, strlen(text + 6) + 6, 1, "NUL");
    expect_line_error("", 0, 0, "no request");
    const size_t big = SHMB_WORKLOAD_MAX_LINE + 10;
    char *huge = malloc(big + 200);
    assert_non_null(huge);
    int n = snprintf(huge, 200, GOOD, 1);
    memset(huge + n, ' ', big);
    huge[n + big - 1] = '\n';
    expect_line_error(huge, (size_t)n + big, 2, "line longer than 65536 bytes");
    free(huge);
}

/* An endless line (/dev/zero) is refused past the limit in bounded memory (a child with capped memory). */
static void test_read_endless_line(void **state)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* 256 MiB above what is mapped now (a sanitizer maps terabytes) */
        FILE *statm = fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (!statm || fscanf(statm, "%lu", &pages) != 1)
            _exit(2);
        fclose(statm);
        const rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256u << 20);
        struct rlimit lim = {cap, cap};
        FILE *zero = fopen("/dev/zero", "r");
        shmb_workload_stream_t s = {0};
        shmb_workload_error_t err;
        if (!zero || setrlimit(RLIMIT_AS, &lim) != 0)
            _exit(2);
        int ret = shmb_workload_read(zero, 0, &s, &err);
        _exit(ret == -EINVAL && err.line == 1 && strstr(err.what, "line longer than 65536 bytes") ? 0 : 1);
    }
    shmb_test_reap_ok(pid);
}

/* Good lines in order; max_requests stops early; a last line without newline counts; write_line round-trips. */
static void test_read_good_and_round_trip(void **state)
{
    char text[512];
    snprintf(text, sizeof(text), GOOD GOOD "{\"timestamp\": 9, \"input_length\": 1, \"output_length\": 1, "
             "\"hash_ids\": [7]}", 1, 1);
    shmb_workload_stream_t s = {0};
    shmb_workload_error_t err;
    assert_int_equal(read_text(text, strlen(text), 0, &s, &err), 3);
    assert_int_equal(s.v[2].timestamp_ms, 9);
    assert_int_equal(read_text(text, strlen(text), 2, &s, &err), 2);
    assert_int_equal(s.n, 5);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    shmb_workload_request_t r = {1234, 1025, 17, 3, 0};
    assert_int_equal(shmb_workload_write_line(out, &r, 40), 0);
    fclose(out);
    assert_string_equal(buf, "{\"timestamp\": 1234, \"input_length\": 1025, \"output_length\": 17, "
                             "\"hash_ids\": [40, 41, 42]}\n");
    shmb_workload_stream_t back = {0};
    assert_int_equal(read_text(buf, len, 0, &back, &err), 1);
    assert_memory_equal(&back.v[0], &r, sizeof(r));
    free(buf);
    shmb_workload_stream_free(&back);
    shmb_workload_stream_free(&s);
}

/* Totals: clipped requests, the largest, the means, the arrivals' span. */
static void test_totals(void **state)
{
    shmb_workload_stream_t s = {0};
    shmb_workload_totals_t t;
    shmb_workload_shape_t sh = shape("deepseek_v3", 16, SHMB_WORKLOAD_BLOCK, 16 * 61 * 1152 * 3);
    assert_int_equal(shmb_workload_totals(&sh, &s, &t), -EINVAL);
    shmb_workload_error_t err;
    const char *text = "{\"timestamp\": 10, \"input_length\": 16, \"output_length\": 1, \"hash_ids\": []}\n"
                       "{\"timestamp\": 30, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": []}\n";
    assert_int_equal(read_text(text, strlen(text), 0, &s, &err), 2);
    assert_int_equal(shmb_workload_totals(&sh, &s, &t), 0);
    assert_int_equal(t.requests, 2);
    assert_int_equal(t.clipped, 1);
    assert_int_equal(t.max_bytes, 3 * 16 * 61 * 1152);
    assert_true(t.descriptors_mean == 2.0);
    assert_int_equal(t.span_ms, 20);
    assert_int_equal(shmb_workload_shm_bytes(&t), 2 * ((3 * 16 * 61 * 1152 + 4095) / 4096 * 4096));
    /* sglang: 64 streams of a 16-token run (32768 B, 2^15) and of a 100-token one (204800 B, <= 2^18) */
    shmb_workload_shape_t sg = engine("llama3_8b", SHMB_WORKLOAD_LAYOUT_SGLANG, 512, 1);
    assert_int_equal(shmb_workload_totals(&sg, &s, &t), 0);
    assert_true(t.descriptors_min == 64 && t.descriptors_max == 64 && t.sizes[15] == 64 && t.sizes[18] == 64);
    sh.max_request_bytes = 1;
    assert_int_equal(shmb_workload_totals(&sh, &s, &t), -E2BIG);
    shmb_workload_stream_free(&s);
}

static shmb_workload_config_t replay_config(shmb_system_t system)
{
    return shmb_test_workload_config(shape("deepseek_v3", 16, SHMB_WORKLOAD_LAYER, 4 * MIB), system);
}

/* A row's note: SHM-jemalloc's request is its write path, its to_address not upstream; else shares. */
static const char *note_of(int system, int part)
{
    if (system == SHMB_SYSTEM_FLOWIPC_JEMALLOC && part == SHMB_WORKLOAD_REQUEST)
        return "write path: each descriptor handed over";
    if (system == SHMB_SYSTEM_FLOWIPC_JEMALLOC && part == SHMB_WORKLOAD_TRANSLATE)
        return SHMB_TRANSFER_NOT_UPSTREAM;
    return part == SHMB_WORKLOAD_REQUEST ? "parts add up to" : "of request p50";
}

/* Every system and layout: four rows by part and model, a sample per request, shares noted; nothing left. */
static void test_replay_rows(void **state)
{
    shmb_workload_stream_t s = {0};
    assert_int_equal(shmb_workload_synthetic(3, 6, &s), 0);
    for (int run = 0; run < SHMB_SYSTEMS * SHMB_WORKLOAD_LAYOUTS; run++) {
        const int sys = run % SHMB_SYSTEMS;
        shmb_workload_config_t c = replay_config((shmb_system_t)sys);
        c.shape.layout = (shmb_workload_layout_t)(run / SHMB_SYSTEMS); /* each layout verified on each system */
        c.shape.tp = c.shape.layout == SHMB_WORKLOAD_LAYOUT_VLLM ? 2 : 1;
        c.name_system = sys == 1;
        shmb_rows_t rows = shmb_test_workload_rows(&c, &s);
        assert_int_equal(rows.n, SHMB_WORKLOAD_PARTS);
        shmb_test_assert_row_name("shm_transfer/workload", &rows.v[SHMB_WORKLOAD_REQUEST],
                                  sys == 1 ? "shm_transfer/workload/request/flowipc_classic/model:deepseek_v3"
                                           : "shm_transfer/workload/request/model:deepseek_v3");
        for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++) {
            assert_string_equal(rows.v[p].variant, shmb_workload_part_name((shmb_workload_part_t)p));
            assert_int_equal(rows.v[p].iterations, 6);
            assert_true(rows.v[p].ns.p50 > 0);
            assert_non_null(strstr(rows.v[p].note, note_of(sys, p)));
        }
        assert_true(rows.v[SHMB_WORKLOAD_COPY].bytes_per_second > 0);
        assert_true(rows.v[SHMB_WORKLOAD_TRANSLATE].bytes_per_second == 0);
        shmb_rows_free(&rows);
        assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    }
    shmb_workload_stream_free(&s);
}

/* SHM-jemalloc's replay fails on a wrong payload byte before timing or a wrong tag in a timed hand-off. */
static void test_replay_handoff_planted_faults(void **state)
{
    shmb_workload_stream_t s = {0};
    assert_int_equal(shmb_workload_synthetic(3, 2, &s), 0);
    shmb_workload_config_t c = replay_config(SHMB_SYSTEM_FLOWIPC_JEMALLOC);
    for (int k = 0; k < 2; k++) {
        shmb_rows_t rows = {0};
        char why[256] = "";
        if (k == 0)
            shmb_handoff_bench_wrong_byte = 1;
        else
            shmb_handoff_bench_wrong_tag = 3;
        const int ret = shmb_workload_run(&c, &s, &rows, why, sizeof(why));
        shmb_handoff_bench_wrong_byte = shmb_handoff_bench_wrong_tag = 0;
        shmb_rows_free(&rows);
        assert_int_equal(ret, -EPROTO);
        assert_non_null(strstr(why, k == 0 ? "payload" : "not the lender's tag"));
        assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    }
    shmb_workload_stream_free(&s);
}

/* Paired: per part each system's row, then ratio rows (a round per request); a bad pairing refused. */
static void test_replay_paired(void **state)
{
    static const char *const names[] = {"flowipc_jemalloc", "mooncake", "flowipc_classic", "flowipc_jemalloc_control"};
    static const int systems[] = {SHMB_SYSTEM_FLOWIPC_JEMALLOC, SHMB_SYSTEM_MOONCAKE, SHMB_SYSTEM_FLOWIPC_CLASSIC,
                                  SHMB_SYSTEM_FLOWIPC_JEMALLOC};
    shmb_workload_stream_t s = {0};
    assert_int_equal(shmb_workload_synthetic(3, 6, &s), 0);
    shmb_workload_config_t c = replay_config(SHMB_SYSTEM_MOONCAKE);
    c.nsystems = 4;
    c.systems[0] = c.systems[3] = SHMB_SYSTEM_FLOWIPC_JEMALLOC;
    c.systems[1] = SHMB_SYSTEM_MOONCAKE;
    c.systems[2] = SHMB_SYSTEM_FLOWIPC_CLASSIC;
    shmb_rows_t rows = shmb_test_workload_rows(&c, &s);
    assert_int_equal(rows.n, SHMB_WORKLOAD_PARTS * (4 + 3));
    size_t i = 0;
    for (int p = 0; p < SHMB_WORKLOAD_PARTS; p++) {
        const char *part = shmb_workload_part_name((shmb_workload_part_t)p);
        const int moves = p == SHMB_WORKLOAD_COPY || p == SHMB_WORKLOAD_REQUEST;
        for (int k = 0; k < 4 + 3; k++, i++) {
            const shmb_row_t *row = &rows.v[i];
            char want[160];
            snprintf(want, sizeof(want), "shm_transfer/workload/%s/model:deepseek_v3/system:%s%s", part,
                     names[k < 4 ? k : k - 3], k < 4 ? "" : "/vs:flowipc_jemalloc");
            shmb_test_assert_row_name("shm_transfer/workload", row, want);
            assert_int_equal(row->iterations, 6);
            if (k < 4) {
                assert_true(row->ns.p50 > 0 && !row->verdict);
                assert_int_equal(row->bytes_per_second > 0, moves);
                assert_non_null(strstr(row->note, note_of(systems[k], p)));
            } else {
                assert_true(row->speedup > 0 && row->bytes_per_second == 0 && row->verdict);
                assert_non_null(strstr(row->note, "95% ["));
            }
        }
    }
    shmb_rows_free(&rows);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    c.nsystems = 1;
    shmb_test_workload_refused(&c, &s, -EINVAL);
    c.nsystems = 3; /* its last is flowipc_classic, not the baseline */
    shmb_test_workload_refused(&c, &s, -EINVAL);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_workload_stream_free(&s);
}

/* A copy that leaves one byte of a descriptor out. */
static void short_copy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n > 1 ? n - 1 : n);
}

static int replay_one(shmb_workload_replay_t *w, shmb_workload_config_t *c, char *why, size_t cap)
{
    shmb_workload_fanout_t f;
    assert_int_equal(shmb_workload_fanout(&c->shape, 100, &f), 0);
    assert_int_equal(shmb_workload_replay_start(w, c, f.bytes, why, cap), 0);
    return shmb_workload_replay_request(w, &f);
}

/* A planted fault fails the replay for every system: a dropped byte (the descriptor named), a pool 64 off. */
static void test_replay_planted_fault(void **state)
{
    for (int sys = 0; sys < SHMB_SYSTEMS; sys++) {
        shmb_workload_config_t c = replay_config((shmb_system_t)sys);
        shmb_workload_replay_t w;
        char why[256] = "";
        assert_int_equal(replay_one(&w, &c, why, sizeof(why)), 0);
        w.copy = short_copy;
        assert_int_equal(shmb_workload_replay_request(&w, &(shmb_workload_fanout_t){1, 1, 4096, 4096, 0, 1, 4096}), -EPROTO);
        if (!strstr(why, "copy: descriptor 0 of 1: first differing byte at offset 4095"))
            fail_msg("%s", why);
        shmb_workload_replay_stop(&w);
        assert_int_equal(replay_one(&w, &c, why, sizeof(why)), 0);
        w.r.dst.addr = (unsigned char *)w.r.dst.addr + 64;
        const int ret = shmb_workload_replay_request(&w, &(shmb_workload_fanout_t){1, 1, 4096, 4096, 0, 1, 4096});
        w.r.dst.addr = (unsigned char *)w.r.dst.addr - 64;
        assert_int_equal(ret, -EPROTO);
        if (!strstr(why, "did not reach their place in dst"))
            fail_msg("%s", why);
        shmb_workload_replay_stop(&w);
        assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    }
}

/* The backing reaches src and dst: named in /dev/shm on tmpfs, not on memfd; rows and residency alike. */
static void test_replay_backing(void **state)
{
    for (int kind = SHMB_BACKING_TMPFS; kind <= SHMB_BACKING_MEMFD; kind++) {
        shmb_workload_config_t c = replay_config(SHMB_SYSTEM_MOONCAKE);
        shmb_backing_residency_t granted = {0, 0, 0};
        c.backing.kind = (shmb_backing_kind_t)kind;
        c.granted = &granted;
        shmb_workload_replay_t w;
        char why[256] = "";
        if (replay_one(&w, &c, why, sizeof(why)) != 0)
            fail_msg("%s", why);
        assert_int_equal(w.tc.backing.kind, kind);
        assert_int_equal(shmb_test_count_ours(NULL, 0), kind == SHMB_BACKING_TMPFS ? 2 : 0);
        assert_true(granted.resident_bytes >= 2 * w.tc.max_transfer_size_kb * 1024);
        shmb_workload_replay_stop(&w);
        assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    }
    shmb_workload_stream_t s = {0};
    assert_int_equal(shmb_workload_synthetic(5, 3, &s), 0);
    shmb_workload_config_t c = replay_config(SHMB_SYSTEM_MOONCAKE);
    c.backing.kind = SHMB_BACKING_MEMFD;
    shmb_rows_t rows = shmb_test_workload_rows(&c, &s);
    assert_int_equal(rows.n, SHMB_WORKLOAD_PARTS);
    assert_int_equal(rows.v[SHMB_WORKLOAD_REQUEST].iterations, 3);
    shmb_rows_free(&rows);
    shmb_workload_stream_free(&s);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
}

/* Bad configs are refused before anything is made. */
static void test_replay_bad_config(void **state)
{
    shmb_workload_stream_t s = {0};
    shmb_workload_config_t c = replay_config(SHMB_SYSTEM_MOONCAKE);
    shmb_test_workload_refused(&c, &s, -EINVAL); /* no request */
    assert_int_equal(shmb_workload_synthetic(1, 2, &s), 0);
    c.num_segments = 0;
    shmb_test_workload_refused(&c, &s, -EINVAL);
    c = replay_config(SHMB_SYSTEMS);
    shmb_test_workload_refused(&c, &s, -EINVAL);
    c = replay_config(SHMB_SYSTEM_MOONCAKE);
    c.shape.max_request_bytes = 1;
    shmb_test_workload_refused(&c, &s, -EINVAL);
    assert_int_equal(shmb_test_count_ours(NULL, 0), 0);
    shmb_workload_stream_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_fanout_cap_and_errors),
        cmocka_unit_test(test_fanout_layouts),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_read_endless_line),
        cmocka_unit_test(test_read_good_and_round_trip),
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_replay_rows),
        cmocka_unit_test(test_replay_paired),
        cmocka_unit_test(test_replay_handoff_planted_faults),
        cmocka_unit_test(test_replay_planted_fault),
        cmocka_unit_test(test_replay_backing),
        cmocka_unit_test(test_replay_bad_config),
    };
    return shmb_test_run_shm("/shmb_test_workload_", tests, NULL, shmb_test_remove_leftovers);
}
