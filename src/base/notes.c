/* The parts every benchmark's notes share (base/notes_internal.h). */
#include "notes_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "shmbench/sysinfo.h"

void shmb_notes_add(shmb_notes_lines_t *l, const char *note)
{
    if (!note || l->n == SHMB_NOTES_CAP)
        l->full = 1;
    else
        l->v[l->n++] = note;
}

void shmb_notes_keep(shmb_notes_lines_t *l, const shmb_report_t *report)
{
    for (size_t i = 0; i < SHMB_NOTES_CAP && report->notes[i]; i++)
        shmb_notes_add(l, report->notes[i]);
}

int shmb_notes_publish(shmb_report_t *report, const shmb_notes_lines_t *l, shmb_notes_t *store, size_t start)
{
    if (l->full) {
        store->used = start;
        return -EOVERFLOW;
    }
    for (size_t i = 0; i <= SHMB_NOTES_CAP; i++)
        report->notes[i] = i < l->n ? l->v[i] : NULL;
    return (int)l->n;
}

/* A store that overflows stays full (used = its size) until the note ends. */
void shmb_notes_put(shmb_notes_t *s, const char *fmt, ...)
{
    const size_t room = sizeof(s->text) - s->used;
    if (s->used >= sizeof(s->text))
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(s->text + s->used, room, fmt, ap);
    va_end(ap);
    s->used = (w < 0 || (size_t)w >= room) ? sizeof(s->text) : s->used + (size_t)w;
}

const char *shmb_notes_end(shmb_notes_t *s, size_t start)
{
    if (s->used >= sizeof(s->text)) {
        s->used = start;
        return NULL;
    }
    s->text[s->used++] = '\0';
    return s->text + start;
}

int shmb_notes_put_cpus(shmb_notes_t *s, int threads, int cpu)
{
    int cpus[SHMB_NOTES_MAX_THREADS];
    if (threads > SHMB_NOTES_MAX_THREADS)
        return -EOVERFLOW;
    int pinned = shmb_sysinfo_plan_cpus(cpu, threads, cpus);
    if (pinned < 0)
        return pinned;
    if (!pinned) {
        shmb_notes_put(s, "not pinned (more threads than allowed CPUs)");
        return 0;
    }
    shmb_notes_put(s, "pinned to CPUs ");
    for (int i = 0; i < threads; i++)
        shmb_notes_put(s, "%s%d", i ? "," : "", cpus[i]);
    return 0;
}

void shmb_notes_paired_lines(shmb_notes_lines_t *l, shmb_notes_t *s, const char *const *names, size_t nsys, const char *control_is)
{
    size_t at = s->used;
    shmb_notes_put(s, "paired run (--systems): ");
    for (size_t i = 0; i < nsys; i++)
        shmb_notes_put(s, "%s%s", i ? ", " : "", names[i]);
    shmb_notes_put(s, " measured in one run, round by round, each round every system once");
    shmb_notes_add(l, shmb_notes_end(s, at));
    at = s->used;
    shmb_notes_put(s, "baseline: %s; control: %s, %s: identical code, so its ratio is this run's noise", names[0],
        names[nsys - 1], control_is);
    shmb_notes_add(l, shmb_notes_end(s, at));
    shmb_notes_add(l, "order: each round runs every system once, in a row of a Williams square over the listed systems "
           "(the control listed last): over 2 x systems rounds each system runs at each position, and right "
           "after each other one, equally often; each round gives one sample per system");
    shmb_notes_add(l, "rows /system:NAME: that system's samples, one per round; rows /system:NAME/vs:BASELINE: the "
           "median over rounds of baseline / system in the speedup column (above 1 the system is faster), "
           "its 95% interval (sign test's order statistics) and verdict in the note, the ns columns the "
           "per-round saved ns (baseline - system; p50 the median saving), iterations the rounds");
    shmb_notes_add(l, "verdict: faster or slower by 5% or more; no practical difference (interval off 1, change under "
           "5%); within the noise (interval holds 1 or lies inside the control's); too noisy (the control "
           "itself off by 5% or more: no verdict, rerun quieter, e.g. pinned with --cpu on an idle machine); not "
           "assessed (fewer than 6 rounds: no interval)");
}