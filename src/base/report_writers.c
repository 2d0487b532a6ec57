/* report_writers: the table, CSV and JSON writers of a report (their
 * contract: shmbench/report.h), with the cells and the context header each
 * prints. The rows and their order come from report.c. */
#include "shmbench/report.h"

#include "report_internal.h"
#include "shmbench_build_info.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_COLUMNS 24
#define CELL 96

/* ---- cells ---- */

enum column {
    COL_ARG_NAME, COL_ARG, COL_VARIANT, COL_STEP, COL_SYSTEM, COL_THREADS, COL_REP, COL_ITERATIONS,
    COL_MEAN, COL_MIN, COL_P50, COL_P90, COL_P99, COL_P999, COL_MAX, COL_STDDEV,
    COL_OPS, COL_GBS, COL_SPEEDUP, COL_NOTE,
};

static int is_cv(const shmb_row_t *row)
{
    return strcmp(row->aggregate, "cv") == 0;
}

/* Fewer digits as numbers grow: a decimal is shown only where it says something. */
static void format_human(char *buf, double v)
{
    double a = v < 0 ? -v : v;
    snprintf(buf, CELL, a >= 100.0 ? "%.0f" : a >= 10.0 ? "%.1f" : "%.2f", v);
}

static void format_number(char *buf, const shmb_row_t *row, double v, int precise, int is_rate)
{
    if (is_cv(row))
        snprintf(buf, CELL, precise ? "%.4f" : "%.1f%%", precise ? v : v * 100.0);
    else if (precise)
        snprintf(buf, CELL, is_rate ? "%.0f" : "%.3f", v);
    else if (is_rate)
        snprintf(buf, CELL, "%.0f", v);
    else
        format_human(buf, v);
}

/* A row with no measurement (a step this system does not have) shows "-" in
 * every measured column of the table, and nothing in CSV. */
static int unmeasured(const shmb_row_t *row, enum column c)
{
    return row->iterations == 0 && c >= COL_ITERATIONS && c != COL_NOTE;
}

static void format_cell(char *buf, const shmb_row_t *row, enum column c, int precise)
{
    buf[0] = '\0';
    if (unmeasured(row, c)) {
        snprintf(buf, CELL, "%s", precise ? "" : "-");
        return;
    }
    switch (c) {
    case COL_ARG_NAME: snprintf(buf, CELL, "%s", row->arg_name); break;
    case COL_ARG:
        if (row->arg_text[0])
            snprintf(buf, CELL, "%s", row->arg_text);
        else
            snprintf(buf, CELL, "%llu", (unsigned long long)row->arg);
        break;
    case COL_VARIANT: snprintf(buf, CELL, "%s", row->variant); break;
    case COL_STEP: snprintf(buf, CELL, "%s", row->step); break;
    case COL_SYSTEM:
        snprintf(buf, CELL, "%s%s%s", row->system, row->vs[0] ? "/vs:" : "", row->vs);
        break;
    case COL_THREADS: snprintf(buf, CELL, "%d", row->threads); break;
    case COL_REP:
        if (row->aggregate[0])
            snprintf(buf, CELL, "%s", row->aggregate);
        else
            snprintf(buf, CELL, "%d", row->repetition);
        break;
    case COL_ITERATIONS: snprintf(buf, CELL, "%llu", (unsigned long long)row->iterations); break;
    case COL_MEAN: format_number(buf, row, row->ns.mean, precise, 0); break;
    case COL_MIN: format_number(buf, row, row->ns.min, precise, 0); break;
    case COL_P50: format_number(buf, row, row->ns.p50, precise, 0); break;
    case COL_P90: format_number(buf, row, row->ns.p90, precise, 0); break;
    case COL_P99: format_number(buf, row, row->ns.p99, precise, 0); break;
    case COL_P999: format_number(buf, row, row->ns.p999, precise, 0); break;
    case COL_MAX: format_number(buf, row, row->ns.max, precise, 0); break;
    case COL_STDDEV: format_number(buf, row, row->ns.stddev, precise, 0); break;
    case COL_OPS:
        if (row->items_per_second > 0)
            format_number(buf, row, row->items_per_second, precise, 1);
        break;
    case COL_GBS:
        if (row->bytes_per_second > 0) {
            double v = is_cv(row) ? row->bytes_per_second : row->bytes_per_second / 1e9;
            if (is_cv(row))
                format_number(buf, row, v, precise, 0);
            else
                snprintf(buf, CELL, precise ? "%.4f" : "%.2f", v);
        }
        break;
    case COL_SPEEDUP:
        if (row->speedup > 0)
            format_number(buf, row, row->speedup, precise, 0);
        break;
    case COL_NOTE: snprintf(buf, CELL, "%s", row->note); break;
    }
    if (!precise && buf[0] == '\0') /* not for this row (no step, speedup, note): a table cell is never
                                       blank, so columns split on spaces */
        snprintf(buf, CELL, "-");
}

/* ---- context ---- */

static void format_date(int64_t date, char *buf, size_t cap, int json)
{
    time_t t = (time_t)date;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, json ? "%Y-%m-%dT%H:%M:%S+00:00" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *cache_type_letter(const char *type)
{
    return strcmp(type, "Data") == 0 ? "d" : strcmp(type, "Instruction") == 0 ? "i" : "";
}

static void write_table_context(FILE *out, const shmb_report_t *r)
{
    const shmb_sysinfo_t *s = r->sys;
    char date[64], a[32], b[32];
    format_date(r->date, date, sizeof(date), 0);
    fprintf(out, "# %s %s\n# date: %s\n# host: %s\n", r->program, r->version, date, s->host);
    fprintf(out, "# cpu: %s, %d cpus", s->cpu_model, s->num_cpus);
    if (s->mhz > 0)
        fprintf(out, ", %.0f MHz", s->mhz);
    fprintf(out, "\n# caches:");
    for (int i = 0; i < s->num_caches; i++) {
        shmb_sysinfo_format_bytes(s->caches[i].size, a, sizeof(a));
        fprintf(out, "%s L%d%s %s", i ? "," : "", s->caches[i].level,
                cache_type_letter(s->caches[i].type), a);
        if (s->caches[i].num_sharing > 1)
            fprintf(out, " (shared by %d cpus)", s->caches[i].num_sharing);
    }
    fprintf(out, "%s\n", s->num_caches ? "" : " unknown");
    fprintf(out, "# kernel: %s\n# clocksource: %s\n# cpu governor: %s\n", s->kernel,
            s->clocksource, s->governor);
    fprintf(out, "# transparent hugepages: enabled=%s, shmem_enabled=%s\n", s->thp_enabled,
            s->thp_shmem);
    if (s->shm_total >= 0) {
        shmb_sysinfo_format_bytes(s->shm_total, a, sizeof(a));
        shmb_sysinfo_format_bytes(s->shm_free, b, sizeof(b));
        fprintf(out, "# /dev/shm: %s total, %s free\n", a, b);
    } else {
        fprintf(out, "# /dev/shm: unknown\n");
    }
    fprintf(out, "# glibc: %s", s->glibc_version);
    if (s->nt_threshold >= 0) {
        shmb_sysinfo_format_bytes(s->nt_threshold, a, sizeof(a));
        fprintf(out, ", x86_non_temporal_threshold %s", a);
    }
    if (s->rep_movsb_threshold >= 0) {
        shmb_sysinfo_format_bytes(s->rep_movsb_threshold, a, sizeof(a));
        fprintf(out, ", x86_rep_movsb_threshold %s", a);
    }
    fprintf(out, "\n# timer overhead: %.0f ns\n", r->timer_overhead_ns);
    if (r->cpu >= 0)
        fprintf(out, "# pinned: cpu %d\n", r->cpu);
    else
        fprintf(out, "# pinned: no\n");
    if (r->system)
        fprintf(out, "# system: %s\n", r->system);
    fprintf(out, "# build: %s; %s; flags: %s\n", SHMB_BUILD_TYPE, SHMB_BUILD_COMPILER,
            SHMB_BUILD_FLAGS);
    fprintf(out, "# commit: %s\n", SHMB_BUILD_COMMIT[0] ? SHMB_BUILD_COMMIT
                                                      : "unknown (not built from a git checkout)");
    fprintf(out, "# flags: %s\n", r->flags);
    for (int i = 0; i < SHMB_REPORT_MAX_NOTES && r->notes[i]; i++)
        fprintf(out, "# %s\n", r->notes[i]);
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void json_field(FILE *out, const char *key, const char *value)
{
    fprintf(out, ",\n    ");
    json_string(out, key);
    fprintf(out, ": ");
    json_string(out, value);
}

static void json_number(FILE *out, const char *key, double value)
{
    fprintf(out, ",\n    \"%s\": %.10g", key, value);
}

static void write_json_context(FILE *out, const shmb_report_t *r)
{
    const shmb_sysinfo_t *s = r->sys;
    char date[64];
    format_date(r->date, date, sizeof(date), 1);
    fprintf(out, "{\n  \"context\": {\n    \"date\": ");
    json_string(out, date);
    json_field(out, "host_name", s->host);
    json_field(out, "executable", r->executable);
    fprintf(out, ",\n    \"num_cpus\": %d", s->num_cpus);
    fprintf(out, ",\n    \"mhz_per_cpu\": %d", s->mhz > 0 ? (int)(s->mhz + 0.5) : 0);
    fprintf(out, ",\n    \"cpu_scaling_enabled\": %s", s->scaling_enabled == 1 ? "true" : "false");
    fprintf(out, ",\n    \"caches\": [");
    for (int i = 0; i < s->num_caches; i++)
        fprintf(out, "%s\n      {\"type\": \"%s\", \"level\": %d, \"size\": %lld, \"num_sharing\": %d}",
                i ? "," : "", s->caches[i].type, s->caches[i].level, (long long)s->caches[i].size,
                s->caches[i].num_sharing);
    fprintf(out, "%s],\n    \"load_avg\": [%g, %g, %g]", s->num_caches ? "\n    " : "",
            s->load_avg[0], s->load_avg[1], s->load_avg[2]);
    json_field(out, "library_build_type", strcmp(SHMB_BUILD_TYPE, "Debug") == 0 ? "debug" : "release");
    json_field(out, "build_type", SHMB_BUILD_TYPE);
    json_field(out, "compiler", SHMB_BUILD_COMPILER);
    json_field(out, "build_flags", SHMB_BUILD_FLAGS);
    if (SHMB_BUILD_COMMIT[0])
        json_field(out, "git_commit", SHMB_BUILD_COMMIT);
    json_field(out, "shmbench_version", r->version);
    json_field(out, "cpu_model", s->cpu_model);
    json_field(out, "kernel", s->kernel);
    json_field(out, "clocksource", s->clocksource);
    json_field(out, "cpu_governor", s->governor);
    json_field(out, "thp_enabled", s->thp_enabled);
    json_field(out, "thp_shmem_enabled", s->thp_shmem);
    json_number(out, "dev_shm_total_bytes", (double)s->shm_total);
    json_number(out, "dev_shm_free_bytes", (double)s->shm_free);
    json_field(out, "glibc_version", s->glibc_version);
    json_number(out, "glibc_x86_non_temporal_threshold", (double)s->nt_threshold);
    json_number(out, "glibc_x86_rep_movsb_threshold", (double)s->rep_movsb_threshold);
    json_number(out, "timer_overhead_ns", r->timer_overhead_ns);
    json_number(out, "pinned_cpu", r->cpu);
    json_field(out, "flags", r->flags);
    if (r->system)
        json_field(out, "system", r->system);
    fprintf(out, ",\n    \"notes\": [");
    for (int i = 0; i < SHMB_REPORT_MAX_NOTES && r->notes[i]; i++) {
        fprintf(out, "%s", i ? ", " : "");
        json_string(out, r->notes[i]);
    }
    fprintf(out, "]\n  },\n  \"benchmarks\": [");
}

/* ---- writers ---- */

static int group_index(const shmb_row_t *const *order, size_t i)
{
    int g = 0;
    for (size_t j = 1; j <= i; j++)
        g += !shmb_report_same_name(order[j], order[j - 1]);
    return g;
}

/* A ratio row's figures: the baseline, the ratio and the saved ns with their
 * intervals (an interval that does not exist, too few rounds, is left
 * out), the sign test's p-value, the verdict. */
static void write_json_ratio(FILE *out, const shmb_row_t *row)
{
    fprintf(out, ",\n      \"vs\": ");
    json_string(out, row->vs);
    const struct { const char *key; double v; } fields[] = {
        {"ratio", row->speedup}, {"ratio_lo", row->ratio_lo}, {"ratio_hi", row->ratio_hi},
        {"saved_ns", row->ns.p50}, {"saved_lo", row->saved_lo}, {"saved_hi", row->saved_hi},
        {"p_value", row->p_value},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (isfinite(fields[i].v) && !(i == 1 && row->ratio_hi == INFINITY))
            fprintf(out, ",\n      \"%s\": %.10g", fields[i].key, fields[i].v);
    fprintf(out, ",\n      \"rounds\": %llu", (unsigned long long)row->iterations);
    if (row->verdict) {
        fprintf(out, ",\n      \"verdict\": ");
        json_string(out, row->verdict);
    }
}

static void write_json_row(FILE *out, const shmb_report_t *r, const shmb_row_t *row, int family,
                           int first)
{
    char name[256], run_name[256], cell[CELL];
    shmb_report_row_name(r, row, name, sizeof(name));
    shmb_report_base_name(r, row, run_name, sizeof(run_name));
    fprintf(out, "%s\n    {\n      \"name\": ", first ? "" : ",");
    json_string(out, name);
    fprintf(out, ",\n      \"family_index\": %d,\n      \"per_family_instance_index\": 0", family);
    fprintf(out, ",\n      \"run_name\": ");
    json_string(out, run_name);
    fprintf(out, ",\n      \"run_type\": \"%s\"", row->aggregate[0] ? "aggregate" : "iteration");
    fprintf(out, ",\n      \"repetitions\": %d", r->repetitions);
    if (row->aggregate[0])
        fprintf(out, ",\n      \"aggregate_name\": \"%s\",\n      \"aggregate_unit\": \"%s\"",
                row->aggregate, is_cv(row) ? "percentage" : "time");
    else
        fprintf(out, ",\n      \"repetition_index\": %d", row->repetition);
    fprintf(out, ",\n      \"threads\": %d,\n      \"iterations\": %llu", row->threads,
            (unsigned long long)row->iterations);
    fprintf(out, ",\n      \"real_time\": %.10g,\n      \"cpu_time\": %.10g", row->ns.mean,
            row->ns.mean);
    fprintf(out, ",\n      \"time_unit\": \"ns\"");
    static const struct { const char *key; enum column col; } counters[] = {
        {"min", COL_MIN}, {"p50", COL_P50}, {"p90", COL_P90}, {"p99", COL_P99},
        {"p999", COL_P999}, {"max", COL_MAX}, {"stddev", COL_STDDEV},
    };
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        format_cell(cell, row, counters[i].col, 1);
        fprintf(out, ",\n      \"%s\": %s", counters[i].key, cell);
    }
    if (row->items_per_second > 0)
        fprintf(out, ",\n      \"items_per_second\": %.10g", row->items_per_second);
    if (row->bytes_per_second > 0)
        fprintf(out, ",\n      \"bytes_per_second\": %.10g", row->bytes_per_second);
    if (row->speedup > 0)
        fprintf(out, ",\n      \"speedup\": %.10g", row->speedup);
    if (row->system[0]) {
        fprintf(out, ",\n      \"system\": ");
        json_string(out, row->system);
    }
    if (row->vs[0])
        write_json_ratio(out, row);
    if (row->note[0]) {
        fprintf(out, ",\n      \"label\": ");
        json_string(out, row->note);
    }
    fprintf(out, "\n    }");
}

void shmb_report_write_json(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n)
{
    write_json_context(out, r);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (order[i]->iterations == 0) /* compare.py needs a time on every row */
            continue;
        write_json_row(out, r, order[i], group_index(order, i), first);
        first = 0;
    }
    fprintf(out, "\n  ]\n}\n");
}

static void csv_cell(FILE *out, const char *cell, int last)
{
    if (strpbrk(cell, ",\"\r\n")) {
        fputc('"', out);
        for (const char *p = cell; *p; p++) {
            if (*p == '"')
                fputc('"', out);
            fputc(*p, out);
        }
        fputc('"', out);
    } else {
        fputs(cell, out);
    }
    fputs(last ? "\r\n" : ",", out);
}

void shmb_report_write_csv(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n)
{
    static const enum column cols[] = {
        COL_VARIANT, COL_STEP, COL_ARG_NAME, COL_ARG, COL_THREADS, COL_REP, COL_ITERATIONS,
        COL_MEAN, COL_MIN, COL_P50, COL_P90, COL_P99, COL_P999, COL_MAX, COL_STDDEV, COL_OPS,
        COL_GBS, COL_SPEEDUP, COL_SYSTEM, COL_NOTE,
    };
    const char *headers[] = {
        "variant", "step", "arg_name", "arg", "threads", "repetition", "iterations", "mean_ns",
        "min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "stddev_ns", "ops_per_s",
        "GB_s", "speedup", "system", "note",
    };
    const size_t ncols = sizeof(cols) / sizeof(cols[0]);
    csv_cell(out, "name", 0);
    for (size_t c = 0; c < ncols; c++)
        csv_cell(out, headers[c], c + 1 == ncols);
    for (size_t i = 0; i < n; i++) {
        char cell[256];
        shmb_report_row_name(r, order[i], cell, sizeof(cell));
        csv_cell(out, cell, 0);
        for (size_t c = 0; c < ncols; c++) {
            format_cell(cell, order[i], cols[c], 1);
            csv_cell(out, cell, c + 1 == ncols);
        }
    }
}

/* The table's columns: the same for every run of a binary whatever its flags
 * (a cell that does not apply shows "-"), so that two runs pair line by line
 * in diff -y and diff -u. Only the header of the variant column is the
 * binary's own. */
static size_t table_columns(const shmb_report_t *r, const shmb_row_t *const *order, size_t n,
                            enum column *cols, const char **headers)
{
    size_t k = 0;
#define ADD(col, header) (cols[k] = (col), headers[k++] = (header))
    ADD(COL_ARG, n ? order[0]->arg_name : "arg");
    ADD(COL_VARIANT, r->variant_label ? r->variant_label : "variant");
    ADD(COL_STEP, "step");
    ADD(COL_THREADS, "threads");
    ADD(COL_REP, "rep");
    ADD(COL_ITERATIONS, "iterations");
    ADD(COL_MEAN, "mean_ns");
    ADD(COL_P50, "p50_ns");
    ADD(COL_P99, "p99_ns");
    ADD(COL_MAX, "max_ns");
    ADD(r->rate_is_bytes ? COL_GBS : COL_OPS, r->rate_is_bytes ? "GB_s" : "ops_per_s");
    ADD(COL_SPEEDUP, "speedup"); /* against what: the notes say (a header naming it is too wide) */
    ADD(COL_SYSTEM, "system");
    ADD(COL_NOTE, "note");
#undef ADD
    return k;
}

/* Key columns are as wide as their widest cell (or header): the same for two
 * runs of the same flags, and for two --system runs, whose keys match. A
 * figure's width never depends on the figures, so two runs' tables line up
 * and diff figure by figure: a mean up to 7 characters, the other times up
 * to 6 (from 1 ms on 1.23e6, fit_figure), rates up to 9 digits, GB/s up to
 * 5 characters; a figure that cannot be shortened enough (a negative saving
 * of 1 ms) shifts its own row only. One space between columns, and a note
 * that would pass TABLE_WIDTH on a line of its own below its row, keep a
 * default table within 120 characters. */
static int is_key(enum column c)
{
    return c < COL_ITERATIONS || c == COL_SYSTEM;
}

static size_t column_width(enum column c, const char *header, const shmb_row_t *const *order, size_t n)
{
    static const size_t figure_width[] = {
        [COL_ITERATIONS] = 9, [COL_MEAN] = 7, [COL_MIN] = 6, [COL_P50] = 6, [COL_P90] = 6,
        [COL_P99] = 6, [COL_P999] = 6, [COL_MAX] = 6, [COL_STDDEV] = 6, [COL_OPS] = 9,
        [COL_GBS] = 5, [COL_SPEEDUP] = 5, [COL_NOTE] = 0,
    };
    size_t w = strlen(header);
    if (!is_key(c))
        return figure_width[c] > w ? figure_width[c] : w;
    for (size_t i = 0; i < n; i++) {
        char cell[CELL];
        format_cell(cell, order[i], c, 0);
        if (strlen(cell) > w)
            w = strlen(cell);
    }
    return w;
}

/* A table's figure wider than its column, shortened to fit where it can: a
 * decimal less ("103.0" GB/s), then a power of ten with as many significant
 * digits as the width leaves, three at least ("1.26e7" ns, "1.288e9"
 * ops/s), which float() and awk read as numbers. The table is for reading
 * and diffing; CSV and JSON keep every digit. */
static void fit_figure(char *cell, size_t width)
{
    char *end, *dot = strchr(cell, '.');
    double v = strtod(cell, &end);
    if (strlen(cell) <= width || end == cell || *end != '\0' || !isfinite(v) || v == 0.0)
        return;
    for (int d = dot ? (int)strlen(dot + 1) - 1 : -1; d >= 0; d--) {
        char buf[CELL];
        snprintf(buf, CELL, "%.*f", d, v);
        if (strlen(buf) <= width) {
            memcpy(cell, buf, strlen(buf) + 1);
            return;
        }
    }
    for (int d = 3; d >= 2; d--) { /* three significant digits at least: a wider one shifts its row */
        int e = (int)floor(log10(fabs(v)));
        char buf[CELL];
        snprintf(buf, CELL, "%.*f", d, v / pow(10.0, e));
        if (strstr(buf, "10") == buf + (v < 0)) /* 9.9996 rounds up to the next power */
            snprintf(buf, CELL, "%.*f", d, v / pow(10.0, ++e));
        snprintf(buf + strlen(buf), CELL - strlen(buf), "e%d", e);
        if (strlen(buf) <= width || d == 2) {
            memcpy(cell, buf, strlen(buf) + 1);
            return;
        }
    }
}

/* The context's lines, each longer than WRAP broken at spaces into lines of
 * at most WRAP characters (a word longer than that stays whole), so they fit
 * a terminal; a continuation starts "#   ", so a reader sees one fact and
 * joining it to the line before with one space gives the fact back. */
#define WRAP 100

static void write_wrapped(FILE *out, const char *text)
{
    while (*text) {
        const char *end = strchrnul(text, '\n'), *p = text, *prefix = "";
        while ((size_t)(end - p) + strlen(prefix) > WRAP) {
            const size_t room = WRAP - strlen(prefix);
            const char *lo = prefix[0] ? p : p + 1, *cut = p + room; /* lo: the space of "# " */
            while (cut > lo && *cut != ' ')
                cut--;
            if (cut == lo && (cut = memchr(p + room, ' ', (size_t)(end - p) - room)) == NULL)
                break; /* one word longer than a line */
            fprintf(out, "%s%.*s\n", prefix, (int)(cut - p), p);
            p = cut + 1;
            prefix = "#   ";
        }
        fprintf(out, "%s%.*s\n", prefix, (int)(end - p), p);
        text = *end ? end + 1 : end;
    }
}

/* The widest table line a terminal of 120 columns shows whole. A row whose
 * note would pass it shows "v" there, and its note follows the table, in
 * the rows' order, as "# note NAME: NOTE" (NAME the row's JSON name, with
 * "rep K" in a run of repetitions): '#' lines, so that scripts reading the
 * table skip them, and after it, so that the table has one line per row
 * whatever its notes, and two systems' tables pair row by row in diff -y
 * (a note one system has and another has not would shift the rows). The
 * same row of two runs decides alike: the columns before the note count at
 * their widths, and the note's numbers at two digits at least, three before
 * a decimal point (note_room), so "9.35% of request p50", "80.60% of ..."
 * and "100.00% of ..." go the same way. */
#define TABLE_WIDTH 120

static size_t note_room(const char *note)
{
    size_t room = 0, digits = 0;
    for (const char *p = note;; p++) {
        if (*p >= '0' && *p <= '9') {
            digits++;
            continue;
        }
        const size_t least = *p == '.' ? 3 : 2; /* a percentage's whole part up to 100 */
        room += digits ? (digits < least ? least : digits) : 0;
        digits = 0;
        if (!*p)
            return room;
        room++;
    }
}

int shmb_report_write_table(FILE *out, const shmb_report_t *r, const shmb_row_t *const *order, size_t n)
{
    enum column cols[MAX_COLUMNS];
    const char *headers[MAX_COLUMNS];
    size_t widths[MAX_COLUMNS];
    size_t ncols = table_columns(r, order, n, cols, headers);
    for (size_t c = 0; c < ncols; c++)
        widths[c] = column_width(cols[c], headers[c], order, n);
    size_t line_cap = ncols * (CELL + 1) + 1, context_len = 0, notes_len = 0;
    char *line = malloc(line_cap), *context = NULL, *notes = NULL;
    FILE *mem = line ? open_memstream(&context, &context_len) : NULL;
    FILE *notes_out = mem ? open_memstream(&notes, &notes_len) : NULL;
    if (!notes_out) {
        if (mem)
            fclose(mem);
        free(context);
        free(line);
        return -ENOMEM;
    }
    write_table_context(mem, r);
    if (fclose(mem) != 0) {
        fclose(notes_out);
        free(notes);
        free(context);
        free(line);
        return -ENOMEM;
    }
    write_wrapped(out, context);
    free(context);
    size_t before_note = 0;
    for (size_t c = 0; c < ncols; c++)
        before_note += cols[c] == COL_NOTE ? 0 : widths[c] + 1;
    for (size_t i = 0; i <= n; i++) {
        size_t len = 0;
        for (size_t c = 0; c < ncols; c++) {
            char cell[CELL];
            if (i == 0)
                snprintf(cell, CELL, "%s", headers[c]);
            else
                format_cell(cell, order[i - 1], cols[c], 0);
            if (i > 0 && !is_key(cols[c]) && cols[c] != COL_ITERATIONS && cols[c] != COL_NOTE)
                fit_figure(cell, widths[c]);
            if (i > 0 && cols[c] == COL_NOTE && strcmp(cell, "-") != 0
                && before_note + note_room(cell) > TABLE_WIDTH) {
                const shmb_row_t *row = order[i - 1];
                char name[256];
                shmb_report_row_name(r, row, name, sizeof(name));
                fprintf(notes_out, "# note %s", name);
                if (r->repetitions > 1 && !row->aggregate[0])
                    fprintf(notes_out, " rep %d", row->repetition);
                fprintf(notes_out, ": %s\n", cell);
                snprintf(cell, CELL, "v");
            }
            len += (size_t)snprintf(line + len, line_cap - len, "%-*s ", (int)widths[c], cell);
        }
        while (len > 0 && line[len - 1] == ' ')
            len--;
        fprintf(out, "%.*s\n", (int)len, line);
    }
    free(line);
    if (fclose(notes_out) != 0) {
        free(notes);
        return -ENOMEM;
    }
    write_wrapped(out, notes);
    free(notes);
    return 0;
}
