/* report_names: a row's name and which rows share it, for report.c and the
 * writers below it. */
#include "report_internal.h"

#include <stdio.h>
#include <string.h>

size_t shmb_report_base_name(const shmb_report_t *report, const shmb_row_t *row, char *buf, size_t cap)
{
    const char *parts[] = {report->bench, row->variant, row->step};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (parts[i][0] && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "/" : "", parts[i]);
    if (n < cap)
        n += row->arg_text[0]
                 ? (size_t)snprintf(buf + n, cap - n, "/%s:%s", row->arg_name, row->arg_text)
                 : (size_t)snprintf(buf + n, cap - n, "/%s:%llu", row->arg_name, (unsigned long long)row->arg);
    if (row->threads > 1 && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "/threads:%d", row->threads);
    if (row->system[0] && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "/system:%s", row->system);
    if (row->vs[0] && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "/vs:%s", row->vs);
    return n < cap ? n : cap - 1;
}

void shmb_report_row_name(const shmb_report_t *report, const shmb_row_t *row, char *buf,
                          size_t cap)
{
    size_t n = shmb_report_base_name(report, row, buf, cap);
    if (row->aggregate[0] && n < cap)
        snprintf(buf + n, cap - n, "_%s", row->aggregate);
}

int shmb_report_same_name(const shmb_row_t *a, const shmb_row_t *b)
{
    return a->arg == b->arg && a->threads == b->threads && strcmp(a->variant, b->variant) == 0 &&
           strcmp(a->arg_text, b->arg_text) == 0 && strcmp(a->system, b->system) == 0 &&
           strcmp(a->vs, b->vs) == 0 &&
           strcmp(a->step, b->step) == 0 && strcmp(a->arg_name, b->arg_name) == 0;
}
