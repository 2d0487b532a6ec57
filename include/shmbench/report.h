/* report: result rows and the run's context, as an aligned table, CSV (RFC
 * 4180) or Google Benchmark's JSON. A row's name is
 * <bench>/<variant>/<step>/<arg_name>:<arg>[/threads:T][/system:S][/vs:B];
 * a row with iterations 0 was not measured ("-" in a table, empty in CSV,
 * absent from JSON). The columns never depend on the flags or the rows, so
 * two runs pair line by line in diff. Times in ns per operation; GB/s =
 * 10^9 B/s. With repetitions > 1 each row's repetitions are followed by their
 * mean, median, stddev and cv. */
#ifndef SHMBENCH_REPORT_H
#define SHMBENCH_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shmbench/stats.h"
#include "shmbench/sysinfo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum shmb_format {
    SHMB_FORMAT_TABLE,
    SHMB_FORMAT_CSV,
    SHMB_FORMAT_JSON,
} shmb_format_t;

typedef struct shmb_row {
    char variant[32];        /* "posix", "linear", "memcpy" */
    char step[32];           /* "shm_open"; "" when the bench has no steps */
    char arg_name[16];       /* "size_kb", "segments" */
    uint64_t arg;            /* the argument's value */
    char arg_text[24];       /* the value when it is a name ("llama3_8b"): shown instead of arg; "" = arg */
    int threads;             /* 1 unless split across threads */
    int repetition;          /* 0-based index of the repetition */
    char aggregate[8];       /* "" for a measured row; "mean", "median", "stddev", "cv" */
    uint64_t iterations;     /* operations measured; 0 = not measured (a dash row) */
    shmb_stats_t ns;         /* nanoseconds per operation: of each sample, or of each batch */
    double items_per_second; /* operations per second from ns.mean; 0 = not reported */
    double bytes_per_second; /* bytes moved per second; 0 = not reported */
    double speedup;          /* baseline p50 / this p50; 0 = not reported */
    char note[64];           /* e.g. "verified 10000/10000", "cold"; "" = none */
    /* A paired run (shmbench/paired.h): */
    char system[32];         /* the system the row measured ("mooncake_control"); "" = not paired */
    char vs[32];             /* a ratio row: the baseline it is against; "" = a measured row */
    double ratio_lo;         /* a ratio row: the 95% interval of its ratio (speedup) */
    double ratio_hi;
    double saved_lo;         /* a ratio row: the 95% interval of the median saved ns (ns.p50) */
    double saved_hi;
    double p_value;          /* a ratio row: the sign test's p-value */
    const char *verdict;     /* a ratio row: shmb_paired_verdict_name(); NULL = none */
} shmb_row_t;

typedef struct shmb_rows {
    shmb_row_t *v;
    size_t n;
    size_t cap;
} shmb_rows_t;

#define SHMB_REPORT_MAX_NOTES 15 /* context lines a report carries */

typedef struct shmb_report {
    const char *program;       /* "shm_allocation_bench" */
    const char *version;       /* "0.1.0" */
    const char *bench;         /* JSON name prefix: "shm_alloc" */
    const char *variant_label; /* table header of row.variant: "allocator"; NULL: "variant" */
    const char *system;        /* --system: the one system measured, or NULL */
    int rate_is_bytes;         /* 1: a GB_s column; 0: an ops_per_s column */
    const char *executable;    /* argv[0] */
    const char *flags;         /* "name=value ..." of every flag of the binary */
    const char *notes[SHMB_REPORT_MAX_NOTES + 1]; /* further context lines, NULL-terminated */
    const shmb_sysinfo_t *sys;
    double timer_overhead_ns;
    int cpu;                   /* pinned CPU, or -1 */
    int repetitions;           /* >= 1 */
    int64_t date;              /* seconds since the epoch of the run's start */
} shmb_report_t;

/* A row not measured yet: one thread, every other field zero. */
shmb_row_t shmb_row_make(const char *variant, const char *arg_name, uint64_t arg, int repetition);

/* Appends a copy of *row. Returns 0 or -ENOMEM. */
int shmb_rows_push(shmb_rows_t *rows, const shmb_row_t *row);

/* row->ns from samples[0..n) (reordered), items_per_second = 10^9 / mean, then
 * appends it. 0, -EINVAL (n 0) or -ENOMEM. */
int shmb_rows_push_samples(shmb_rows_t *rows, shmb_row_t *row, double *samples, size_t n);

/* The first row with this variant, step, argument and repetition, or NULL. */
shmb_row_t *shmb_rows_find(const shmb_rows_t *rows, const char *variant, const char *step,
                           uint64_t arg, int repetition);

/* Frees the rows' storage; rows is empty afterwards. */
void shmb_rows_free(shmb_rows_t *rows);

/* "table", "csv" or "json" -> *out. Returns 0 or -EINVAL. */
int shmb_report_parse_format(const char *text, shmb_format_t *out);

/* The row's name, "shm_alloc/posix/total/size_kb:4", "_<aggregate>" appended for aggregates. */
void shmb_report_row_name(const shmb_report_t *report, const shmb_row_t *row, char *buf,
                          size_t cap);

/* Adds to out the mean, median, stddev and cv rows of every name with several
 * repetitions (iterations: their sum). 0 or -ENOMEM. */
int shmb_report_aggregate(const shmb_rows_t *rows, shmb_rows_t *out);

/* Writes the context and rows (and aggregates when repetitions > 1). 0, -ENOMEM
 * or the failed write's -errno (-EIO). */
int shmb_report_write(FILE *out, shmb_format_t format, const shmb_report_t *report,
                      const shmb_rows_t *rows);

#ifdef __cplusplus
}
#endif

#endif
