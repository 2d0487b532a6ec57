/* report_table: the table writer, with its context header and the notes
 * too wide for a row. */
#include "report_internal.h"
#include "shmbench_build_info.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS 24

static const char *cache_type_letter(const char *type)
{
    return strcmp(type, "Data") == 0 ? "d" : strcmp(type, "Instruction") == 0 ? "i" : "";
}

static void write_table_context(FILE *out, const shmb_report_t *r)
{
    const shmb_sysinfo_t *s = r->sys;
    char date[64], a[32], b[32];
    shmb_report_format_date(r->date, date, sizeof(date), 0);
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

/* The same columns for every run of a binary whatever its flags ("-" where a
 * cell does not apply), so two runs pair line by line in diff. */
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

/* Key columns are as wide as their widest cell; a figure's width never
 * depends on the figures (fit_figure shortens the wider ones), so two runs'
 * tables line up and diff figure by figure. */
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
        shmb_report_format_cell(cell, order[i], c, 0);
        if (strlen(cell) > w)
            w = strlen(cell);
    }
    return w;
}

/* A figure wider than its column: a decimal less ("103.0"), then a power of
 * ten with three significant digits at least ("1.26e7"), which float() and
 * awk still read; CSV and JSON keep every digit. */
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

/* '#' lines broken at spaces into lines of at most WRAP (a longer word stays
 * whole); a continuation starts "#   ": joined with one space, the fact is back. */
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

/* A row whose note would pass TABLE_WIDTH shows "v" there, and the note
 * follows the table as "# note NAME[ rep K]: NOTE", so the table keeps one
 * line per row and two systems' tables pair in diff -y. The note's numbers
 * count at two digits at least, three before a point (note_room), so the same
 * row of two runs ("9.35% ...", "100.00% ...") decides alike. */
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
    if (notes_out)
        write_table_context(mem, r);
    if (mem && fclose(mem) != 0 && notes_out) {
        fclose(notes_out);
        notes_out = NULL;
    }
    if (!notes_out) {
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
                shmb_report_format_cell(cell, order[i - 1], cols[c], 0);
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
