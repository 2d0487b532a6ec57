/* report_json: the JSON (Google Benchmark's names) and CSV writers. */
#include "report_internal.h"
#include "shmbench_build_info.h"

#include <math.h>
#include <string.h>

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
    shmb_report_format_date(r->date, date, sizeof(date), 1);
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
                row->aggregate, shmb_report_is_cv(row) ? "percentage" : "time");
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
        shmb_report_format_cell(cell, row, counters[i].col, 1);
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
            shmb_report_format_cell(cell, order[i], cols[c], 1);
            csv_cell(out, cell, c + 1 == ncols);
        }
    }
}
