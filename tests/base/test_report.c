
#include "helpers.h"

#include "shmbench/report.h"

static shmb_sysinfo_t sys;

static shmb_report_t make_report(int repetitions)
{
    shmb_report_t r;
    memset(&r, 0, sizeof(r));
    r.program = "shm_test_bench";
    r.version = "9.9.9";
    r.bench = "shm_test";
    r.variant_label = "allocator";
    r.executable = "./shm_test_bench";
    r.flags = "a=1 b=2";
    r.notes[0] = "a note";
    r.sys = &sys;
    r.timer_overhead_ns = 20;
    r.cpu = -1;
    r.repetitions = repetitions;
    r.date = 0;
    return r;
}

static shmb_row_t make_row(const char *variant, const char *step, uint64_t arg, double mean, int rep)
{
    shmb_row_t row;
    memset(&row, 0, sizeof(row));
    snprintf(row.variant, sizeof(row.variant), "%s", variant);
    snprintf(row.step, sizeof(row.step), "%s", step);
    snprintf(row.arg_name, sizeof(row.arg_name), "size_kb");
    row.arg = arg;
    row.threads = 1;
    row.repetition = rep;
    row.iterations = 1000;
    double samples[3] = {mean - 1, mean, mean + 1};
    shmb_stats_compute(samples, 3, &row.ns);
    row.items_per_second = 1e9 / mean;
    return row;
}

/* Writes rows in a format into a string the caller frees. */
static char *render(shmb_format_t format, const shmb_report_t *r, const shmb_rows_t *rows)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(shmb_report_write(f, format, r, rows), 0);
    long len = ftell(f);
    assert_true(len > 0);
    rewind(f);
    char *text = calloc((size_t)len + 1, 1);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return text;
}

static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

static void test_parse_format(void **state)
{
    const struct { const char *text; int ret; shmb_format_t f; } cases[] = {
        {"csv", 0, SHMB_FORMAT_CSV},          {"json", 0, SHMB_FORMAT_JSON}, {"table", 0, SHMB_FORMAT_TABLE},
        {"xml", -EINVAL, SHMB_FORMAT_TABLE}, {"", -EINVAL, SHMB_FORMAT_TABLE}, {NULL, -EINVAL, SHMB_FORMAT_TABLE},
    };
    shmb_format_t f = SHMB_FORMAT_TABLE;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(shmb_report_parse_format(cases[i].text, &f), cases[i].ret);
        assert_int_equal(f, cases[i].f); /* a refused name leaves it as it was */
    }
}

static void test_row_names(void **state)
{
    shmb_row_t row = make_row("posix", "total", 4, 10, 0);
    shmb_test_assert_row_name("shm_test", &row, "shm_test/posix/total/size_kb:4");
    row.step[0] = '\0';
    snprintf(row.arg_name, sizeof(row.arg_name), "segments");
    shmb_test_assert_row_name("shm_test", &row, "shm_test/posix/segments:4");
    row.threads = 2;
    shmb_test_assert_row_name("shm_test", &row, "shm_test/posix/segments:4/threads:2");
    snprintf(row.aggregate, sizeof(row.aggregate), "mean");
    shmb_test_assert_row_name("shm_test", &row, "shm_test/posix/segments:4/threads:2_mean");
}

static void test_push_samples_and_find(void **state)
{
    shmb_rows_t rows = {0};
    shmb_row_t row = make_row("arena", "alloc", 8, 1, 0);
    double samples[] = {4, 2};
    assert_int_equal(shmb_rows_push_samples(&rows, &row, samples, 2), 0);
    assert_int_equal(shmb_rows_push_samples(&rows, &row, samples, 0), -EINVAL);
    assert_int_equal(rows.n, 1);
    assert_float_equal(rows.v[0].ns.mean, 3.0, 1e-12);
    assert_float_equal(rows.v[0].items_per_second, 1e9 / 3.0, 1e-3);
    assert_ptr_equal(shmb_rows_find(&rows, "arena", "alloc", 8, 0), &rows.v[0]);
    assert_null(shmb_rows_find(&rows, "arena", "alloc", 8, 1));
    assert_null(shmb_rows_find(&rows, "arena", "free", 8, 0));
    shmb_rows_free(&rows);
    assert_int_equal(rows.n, 0);
}

static void test_aggregates(void **state)
{
    shmb_rows_t rows = {0}, aggs = {0};
    for (int rep = 0; rep < 3; rep++) {
        shmb_row_t a = make_row("posix", "total", 4, 10.0 * (rep + 1), rep);
        shmb_row_t b = make_row("arena", "alloc", 4, 5.0, rep);
        b.iterations = 100 * (uint64_t)(rep + 1);
        snprintf(a.note, sizeof(a.note), "%d.00GB/s", rep + 1); /* a figure of each repetition */
        snprintf(b.note, sizeof(b.note), "verified");             /* the same in every one */
        shmb_rows_push(&rows, &a);
        shmb_rows_push(&rows, &b);
    }
    shmb_row_t lone = make_row("posix", "total", 8, 7.0, 0);
    shmb_rows_push(&rows, &lone);
    assert_int_equal(shmb_report_aggregate(&rows, &aggs), 0);
    assert_int_equal(aggs.n, 8); /* two names with 3 repetitions; the lone row has none */
    assert_string_equal(aggs.v[0].aggregate, "mean");
    assert_float_equal(aggs.v[0].ns.mean, 20.0, 1e-9);
    assert_string_equal(aggs.v[1].aggregate, "median");
    assert_float_equal(aggs.v[1].ns.mean, 20.0, 1e-9);
    assert_string_equal(aggs.v[2].aggregate, "stddev");
    assert_float_equal(aggs.v[2].ns.mean, 10.0, 1e-9);
    assert_string_equal(aggs.v[3].aggregate, "cv");
    assert_float_equal(aggs.v[3].ns.mean, 0.5, 1e-9);
    assert_string_equal(aggs.v[4].variant, "arena");
    assert_float_equal(aggs.v[6].ns.mean, 0.0, 1e-9); /* stddev of equal values */
    for (int a = 0; a < 4; a++) { /* the operations of all repetitions, not repetition 0's */
        assert_int_equal(aggs.v[a].iterations, 3000);
        assert_int_equal(aggs.v[4 + a].iterations, 600);
        /* a note that differs per repetition is not repetition 0's on a summary row */
        assert_string_equal(aggs.v[a].note, "");
        assert_string_equal(aggs.v[4 + a].note, "verified");
    }
    shmb_rows_free(&rows);
    shmb_rows_free(&aggs);
}

static void test_table(void **state)
{
    shmb_report_t r = make_report(1);
    shmb_rows_t rows = {0};
    shmb_row_t a = make_row("posix", "shm_open", 4, 4491.4, 0);
    shmb_row_t b = make_row("arena", "alloc", 1024, 2.25, 0);
    b.speedup = 1996.2;
    shmb_rows_push(&rows, &a);
    shmb_rows_push(&rows, &b);
    char *out = render(SHMB_FORMAT_TABLE, &r, &rows);
    assert_non_null(strstr(out, "# shm_test_bench 9.9.9\n"));
    assert_non_null(strstr(out, "# date: 1970-01-01T00:00:00Z\n"));
    assert_non_null(strstr(out, "# timer overhead: 20 ns\n"));
    assert_non_null(strstr(out, "# flags: a=1 b=2\n"));
    assert_non_null(strstr(out, "# a note\n"));
    /* how the binary was built, one fact per line */
    const char *build = strstr(out, "\n# build: ");
    assert_non_null(build);
    const char *build_end = strchr(build + 1, '\n');
    const char *compilers = strstr(build, "; C: ");
    const char *flags = strstr(build, "; flags: ");
    assert_true(compilers && compilers < build_end && strstr(compilers, ", C++: ") < build_end);
    assert_true(flags && flags < build_end);
    assert_int_equal(count_lines(out, "# commit: "), 1);
    /* key columns as wide as their widest cell, figures of a fixed width, one space apart */
    const char *header = strstr(out, "\nsize_kb allocator step     threads rep iterations mean_ns p50_ns "
                                     "p99_ns max_ns ops_per_s speedup system note\n");
    assert_non_null(header);
    header++;
    assert_int_equal(count_lines(out, "4 "), 1);
    assert_int_equal(count_lines(out, "1024 "), 1);
    /* columns line up: "mean_ns" starts where each row's mean starts */
    const char *row_a = strstr(out, "\n4 ") + 1;
    const char *row_b = strstr(out, "\n1024 ") + 1;
    size_t col = (size_t)(strstr(header, "mean_ns") - header);
    assert_memory_equal(row_a + col, "4491 ", 5);
    assert_memory_equal(row_b + col, "2.25 ", 5);
    /* a cell that does not apply is "-", never blank: one thread, repetition 0, no speedup, no note */
    char threads[8], rep[8], speedup[16], note[8];
    assert_int_equal(sscanf(row_a, "%*s %*s %*s %7s %7s %*s %*s %*s %*s %*s %*s %15s %7s", threads, rep,
                            speedup, note), 4);
    assert_string_equal(threads, "1");
    assert_string_equal(rep, "0");
    assert_string_equal(speedup, "-");
    assert_string_equal(note, "-");
    /* no trailing blanks, so diffs stay clean */
    assert_null(strstr(out, " \n"));
    free(out);
    shmb_rows_free(&rows);
}

static void test_csv(void **state)
{
    shmb_report_t r = make_report(1);
    shmb_rows_t rows = {0};
    shmb_row_t a = make_row("posix", "total", 4, 100, 0);
    snprintf(a.note, sizeof(a.note), "say \"hi\", twice");
    shmb_rows_push(&rows, &a);
    char *out = render(SHMB_FORMAT_CSV, &r, &rows);
    assert_null(strchr(out, '#'));
    assert_true(strncmp(out, "name,variant,step,arg_name,arg,", 31) == 0);
    assert_non_null(strstr(out, "shm_test/posix/total/size_kb:4,posix,total,size_kb,4,1,0,1000,100.000,"));
    assert_non_null(strstr(out, ",\"say \"\"hi\"\", twice\"\r\n"));
    assert_int_equal(count_lines(out, "shm_test/"), 1);
    free(out);
    shmb_rows_free(&rows);
}

static void test_json(void **state)
{
    shmb_report_t r = make_report(2);
    shmb_rows_t rows = {0};
    for (int rep = 0; rep < 2; rep++) {
        shmb_row_t a = make_row("posix", "total", 4, 100 + rep, rep);
        shmb_rows_push(&rows, &a);
    }
    char *out = render(SHMB_FORMAT_JSON, &r, &rows);
    assert_non_null(strstr(out, "\"context\": {"));
    assert_true(strstr(out, "\"library_build_type\": \"release\"") ||
                strstr(out, "\"library_build_type\": \"debug\""));
    assert_non_null(strstr(out, "\"build_type\": \""));
    assert_non_null(strstr(out, "\"compiler\": \"C: "));
    assert_non_null(strstr(out, "\"build_flags\": \""));
    assert_non_null(strstr(out, "\"name\": \"shm_test/posix/total/size_kb:4\""));
    assert_non_null(strstr(out, "\"name\": \"shm_test/posix/total/size_kb:4_mean\""));
    assert_non_null(strstr(out, "\"run_type\": \"aggregate\""));
    assert_non_null(strstr(out, "\"aggregate_name\": \"cv\""));
    assert_non_null(strstr(out, "\"repetition_index\": 1"));
    assert_non_null(strstr(out, "\"real_time\": 100.5"));
    assert_non_null(strstr(out, "\"time_unit\": \"ns\""));
    int depth = 0;
    for (const char *p = out; *p; p++)
        depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
    assert_int_equal(depth, 0);
    free(out);
    shmb_rows_free(&rows);
}

/* --system rows: no variant in name, "-" variant column, system in header; dash rows: "-", empty CSV, no JSON. */
static void test_system_and_dash_rows(void **state)
{
    shmb_report_t r = make_report(1);
    r.variant_label = NULL;
    r.system = "flowipc_jemalloc";
    shmb_rows_t rows = {0};
    shmb_row_t alloc = make_row("", "alloc", 4, 10, 0);
    shmb_row_t setup = make_row("", "setup", 4, 10, 0);
    memset(&setup.ns, 0, sizeof(setup.ns));
    setup.iterations = 0;
    setup.items_per_second = 0;
    assert_int_equal(shmb_rows_push(&rows, &setup), 0);
    assert_int_equal(shmb_rows_push(&rows, &alloc), 0);
    shmb_test_assert_row_name("shm_test", &alloc, "shm_test/alloc/size_kb:4");

    char *table = render(SHMB_FORMAT_TABLE, &r, &rows);
    assert_non_null(strstr(table, "# system: flowipc_jemalloc\n"));
    assert_null(strstr(table, "allocator"));
    const char *line = strstr(table, "\n4 ");
    assert_non_null(line);
    char arg[16], variant[16], step[16], iterations[16], mean[16];
    assert_int_equal(sscanf(line + 1, "%15s %15s %15s %*s %*s %15s %15s", arg, variant, step, iterations,
                            mean), 5);
    assert_string_equal(variant, "-");
    assert_string_equal(step, "setup");
    assert_string_equal(iterations, "-");
    assert_string_equal(mean, "-");
    free(table);

    char *csv = render(SHMB_FORMAT_CSV, &r, &rows);
    assert_non_null(strstr(csv, "shm_test/setup/size_kb:4,,setup,size_kb,4,1,0,,,"));
    free(csv);
    char *json = render(SHMB_FORMAT_JSON, &r, &rows);
    assert_null(strstr(json, "shm_test/setup/"));
    assert_non_null(strstr(json, "\"name\": \"shm_test/alloc/size_kb:4\""));
    assert_non_null(strstr(json, "\"system\": \"flowipc_jemalloc\""));
    free(json);
    shmb_rows_free(&rows);
}

/* Column widths depend on the columns, not the figures: two runs' headers match, figures start alike. */
static void test_fixed_widths(void **state)
{
    shmb_report_t r = make_report(1);
    char *tables[2];
    const double means[2] = {2.5, 12345678};
    for (int t = 0; t < 2; t++) {
        shmb_rows_t rows = {0};
        shmb_row_t row = make_row("jemalloc_tcache", "alloc_reuse", t ? 1048576 : 4, means[t], 0);
        row.iterations = t ? 123456789 : 7;
        assert_int_equal(shmb_rows_push(&rows, &row), 0);
        tables[t] = render(SHMB_FORMAT_TABLE, &r, &rows);
        shmb_rows_free(&rows);
    }
    const char *head[2], *row[2];
    for (int t = 0; t < 2; t++) {
        head[t] = strstr(tables[t], "\nsize_kb");
        assert_non_null(head[t]);
        row[t] = strchr(head[t] + 1, '\n');
    }
    assert_int_equal(row[0] - head[0], row[1] - head[1]);
    assert_memory_equal(head[0], head[1], (size_t)(row[0] - head[0]));
    for (int t = 0; t < 2; t++) { /* the mean starts under its header */
        const char *mean_head = strstr(head[t], "mean_ns");
        char mean[32];
        snprintf(mean, sizeof(mean), t ? "1.235e7 " : "2.50 "); /* 12345678: wider than its column */
        const char *mean_cell = strstr(row[t], mean);
        assert_non_null(mean_cell);
        assert_int_equal(mean_head - head[t], mean_cell - row[t]);
    }
    free(tables[0]);
    free(tables[1]);
}

/* A '#' line over 100 characters wraps at spaces ("#   " continuations) and joins back; long words stay. */
static void test_long_notes_wrap(void **state)
{
    shmb_report_t r = make_report(1);
    char note[400], word[160];
    size_t len = 0;
    for (int i = 0; len < 300; i++)
        len += (size_t)snprintf(note + len, sizeof(note) - len, "%sword%d", i ? " " : "", i);
    memset(word, 'x', sizeof(word) - 1);
    word[sizeof(word) - 1] = '\0';
    r.notes[0] = note;
    r.notes[1] = word;
    shmb_rows_t rows = {0};
    shmb_row_t a = make_row("posix", "total", 4, 100, 0);
    shmb_rows_push(&rows, &a);
    char *out = render(SHMB_FORMAT_TABLE, &r, &rows);
    char joined[512] = "";
    const char *line = strstr(out, "# word0 ");
    assert_non_null(line);
    for (int first = 1; first || strncmp(line, "#   ", 4) == 0; first = 0) {
        const char *end = strchr(line, '\n');
        assert_true(end - line <= 100);
        size_t n = strlen(joined);
        snprintf(joined + n, sizeof(joined) - n, "%s%.*s", first ? "" : " ", (int)(end - line - (first ? 2 : 4)),
                 line + (first ? 2 : 4));
        line = end + 1;
    }
    assert_string_equal(joined, note);
    assert_true(strncmp(line, "# xxx", 5) == 0 && strchr(line, '\n') - line == 2 + (long)strlen(word));
    free(out);
    shmb_rows_free(&rows);
}

/* The column header of a table, as a string the caller frees. */
static char *table_header(const char *table)
{
    const char *p = table;
    while (*p == '#')
        p = strchr(p, '\n') + 1;
    size_t len = (size_t)(strchr(p, '\n') - p);
    char *head = calloc(len + 1, 1);
    assert_non_null(head);
    memcpy(head, p, len);
    return head;
}

/* Each run of spaces of s as one space. */
static void squeeze(char *s)
{
    char *to = s;
    for (const char *from = s; *from; from++)
        if (*from != ' ' || to == s || to[-1] != ' ')
            *to++ = *from;
    *to = '\0';
}

/* Every column of the header starts a cell at the same offset in each row of the table (the note, free text, last). */
static void assert_rows_under_header(const char *table)
{
    char *head = table_header(table);
    const char *row = strstr(table, head) + strlen(head) + 1;
    for (; *row && *row != '#'; row = strchr(row, '\n') + 1) { /* the notes after the table aside */
        size_t len = (size_t)(strchr(row, '\n') - row);
        for (size_t c = 0; head[c]; c++) {
            if (head[c] == ' ' || (c > 0 && head[c - 1] != ' '))
                continue; /* not where a column starts */
            assert_true(c < len);
            assert_true(row[c] != ' ');
            assert_true(c == 0 || row[c - 1] == ' ');
        }
    }
    free(head);
}

/* Columns never depend on flags: the same header and every figure under its column, so runs pair by line. */
static void test_columns_do_not_depend_on_flags(void **state)
{
    enum { PLAIN, REPEATED, THREADS, SYSTEM, RUNS };
    char *tables[RUNS];
    for (int t = 0; t < RUNS; t++) {
        shmb_report_t r = make_report(t == REPEATED ? 3 : 1);
        r.variant_label = t == SYSTEM ? NULL : "variant";
        shmb_rows_t rows = {0};
        for (int rep = 0; rep < r.repetitions; rep++) {
            shmb_row_t row = make_row(t == SYSTEM ? "" : "posix", t == PLAIN ? "" : "total", 4, 100 + rep, rep);
            row.threads = t == THREADS ? 2 : 1;
            if (t != PLAIN) {
                row.speedup = 1.5;
                snprintf(row.note, sizeof(row.note), "a note, with spaces");
            }
            assert_int_equal(shmb_rows_push(&rows, &row), 0);
        }
        tables[t] = render(SHMB_FORMAT_TABLE, &r, &rows);
        shmb_rows_free(&rows);
        assert_rows_under_header(tables[t]);
    }
    char *plain = table_header(tables[PLAIN]);
    squeeze(plain);
    for (int t = 0; t < RUNS; t++) {
        char *head = table_header(tables[t]);
        squeeze(head);
        assert_string_equal(head, plain);
        free(head);
        free(tables[t]);
    }
    assert_non_null(strstr(plain, " threads "));
    assert_non_null(strstr(plain, " rep "));
    assert_non_null(strstr(plain, " speedup "));
    free(plain);
}

/* A note past 120 characters shows "v" and follows the table; a too-wide figure loses a decimal, then 10^k. */
static void test_notes_after_table(void **state)
{
    for (int reps = 1; reps <= 2; reps++) {
        shmb_report_t r = make_report(reps);
        shmb_rows_t rows = {0};
        for (int rep = 0; rep < reps; rep++) {
            shmb_row_t a = make_row("posix", "total", 4, 1234567, rep), b = make_row("posix", "mmap", 4, 100, rep);
            snprintf(a.note, sizeof(a.note), "ok");
            snprintf(b.note, sizeof(b.note), "a long note: %s", "so long that beside its row it would pass 120");
            assert_int_equal(shmb_rows_push(&rows, &a), 0);
            assert_int_equal(shmb_rows_push(&rows, &b), 0);
        }
        char *out = render(SHMB_FORMAT_TABLE, &r, &rows);
        for (const char *line = out; *line; line = strchr(line, '\n') + 1)
            assert_true(strchr(line, '\n') - line <= 120);
        const char *a_row = strstr(out, "\n4       posix     total ");
        const char *b_row = strstr(out, "\n4       posix     mmap ");
        assert_true(a_row && b_row);
        assert_non_null(strstr(a_row, " 1.23e6 ")); /* p50 1234567 in 6 characters */
        assert_true(strstr(a_row, " ok\n") == strchr(a_row + 1, '\n') - 3);
        assert_true(strstr(b_row, " v\n") == strchr(b_row + 1, '\n') - 2);
        assert_null(strstr(out, "\n# note shm_test/posix/total/")); /* the short note stays */
        const char *note = strstr(out, reps == 1 ? "\n# note shm_test/posix/mmap/size_kb:4: a long note: so long"
                                                 : "\n# note shm_test/posix/mmap/size_kb:4 rep 1: a long note");
        assert_non_null(note);
        assert_true(note > strstr(out, reps == 1 ? b_row : strstr(b_row + 1, "\n4       posix     mmap ")));
        assert_int_equal(count_lines(out, "# note "), reps == 1 ? 1 : 6); /* 2 reps and 4 aggregates */
        free(out);
        shmb_rows_free(&rows);
    }
    /* GB/s: a decimal less before a power of ten */
    shmb_report_t r = make_report(1);
    r.rate_is_bytes = 1;
    shmb_rows_t rows = {0};
    shmb_row_t row = make_row("memcpy", "", 4, 100, 0);
    row.bytes_per_second = 103.04e9;
    assert_int_equal(shmb_rows_push(&rows, &row), 0);
    char *out = render(SHMB_FORMAT_TABLE, &r, &rows);
    assert_non_null(strstr(out, " 103.0 "));
    free(out);
    shmb_rows_free(&rows);
}

static void test_row_make(void **state)
{
    shmb_row_t row = shmb_row_make("bipc", "size_kb", 64, 2);
    assert_string_equal(row.variant, "bipc");
    assert_string_equal(row.step, "");
    assert_string_equal(row.arg_name, "size_kb");
    assert_true(row.arg == 64 && row.threads == 1 && row.repetition == 2);
    assert_true(row.iterations == 0 && row.speedup == 0 && row.note[0] == '\0'); /* a dash row until measured */
}

static void test_write_error_is_reported(void **state)
{
    shmb_report_t r = make_report(1);
    shmb_rows_t rows = {0};
    shmb_row_t a = make_row("posix", "total", 4, 100, 0);
    shmb_rows_push(&rows, &a);
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        shmb_test_skip("no /dev/full");
    assert_int_equal(shmb_report_write(f, SHMB_FORMAT_CSV, &r, &rows), -ENOSPC); /* the write's own errno */
    fclose(f);
    shmb_rows_free(&rows);
}

int main(void)
{
    shmb_sysinfo_read(&sys);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_format),   cmocka_unit_test(test_row_names),
        cmocka_unit_test(test_push_samples_and_find), cmocka_unit_test(test_aggregates),
        cmocka_unit_test(test_table),          cmocka_unit_test(test_csv),
        cmocka_unit_test(test_json),           cmocka_unit_test(test_write_error_is_reported),
        cmocka_unit_test(test_system_and_dash_rows), cmocka_unit_test(test_fixed_widths),
        cmocka_unit_test(test_long_notes_wrap), cmocka_unit_test(test_notes_after_table),
        cmocka_unit_test(test_row_make),       cmocka_unit_test(test_columns_do_not_depend_on_flags),
    };
    return shmb_test_run(tests, NULL, NULL);
}
