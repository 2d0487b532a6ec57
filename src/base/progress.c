/* progress: the contract is in shmbench/progress.h. */
#include "shmbench/progress.h"

#include "shmbench/clock.h"

#include <errno.h>
#include <string.h>

void shmb_progress_start(shmb_progress_t *p, FILE *out, const char *name)
{
    if (!p)
        return;
    memset(p, 0, sizeof(*p));
    p->out = out;
    p->name = name ? name : "";
    p->outers = 1;
    p->start_ns = shmb_clock_now_ns();
}

void shmb_progress_outer(shmb_progress_t *p, uint64_t outer, uint64_t outers)
{
    if (!p || !p->out)
        return;
    p->outer = outer;
    p->outers = outers ? outers : 1;
    p->done = p->total = 0;
}

void shmb_progress_plan(shmb_progress_t *p, uint64_t total)
{
    if (!p || !p->out)
        return;
    p->done = 0;
    p->total = total;
}

double shmb_progress_share(uint64_t outer, uint64_t outers, uint64_t done, uint64_t total)
{
    if (outers == 0)
        return 0;
    double inner = total ? (double)(done < total ? done : total) / (double)total : 0;
    double share = ((double)outer + inner) / (double)outers;
    return share > 1 ? 1 : share;
}

int64_t shmb_progress_left_ns(double share, uint64_t elapsed_ns)
{
    if (!(share > 0) || elapsed_ns < 1000000000ull)
        return -1;
    return (int64_t)((double)elapsed_ns * (1 - share) / share);
}

/* "<1 s", "45 s", "3 min 05 s", "1 h 02 min". */
static void duration(char *buf, size_t cap, int64_t ns)
{
    const long long s = (long long)((ns + 500000000) / 1000000000);
    if (s < 1)
        snprintf(buf, cap, "<1 s");
    else if (s < 60)
        snprintf(buf, cap, "%lld s", s);
    else if (s < 3600)
        snprintf(buf, cap, "%lld min %02lld s", s / 60, s % 60);
    else
        snprintf(buf, cap, "%lld h %02lld min", s / 3600, s / 60 % 60);
}

int shmb_progress_format(char *buf, size_t cap, const char *name, const char *label, double share,
                         int64_t left_ns)
{
    if (!buf || cap == 0 || !name || !label)
        return -EINVAL;
    char tail[48], left[32] = "";
    if (left_ns >= 0) {
        duration(left, sizeof(left), left_ns);
        snprintf(tail, sizeof(tail), "  %3d%%  ~%s left", (int)(share * 100), left);
    } else {
        snprintf(tail, sizeof(tail), "  %3d%%", (int)(share * 100));
    }
    /* The label gives way, so that the share and the time left always show. */
    size_t room = (cap - 1 < SHMB_PROGRESS_WIDTH ? cap - 1 : SHMB_PROGRESS_WIDTH);
    const size_t head = strlen(name) + 2, fixed = head + strlen(tail);
    const int keep = fixed < room ? (int)(room - fixed) : 0;
    int n = snprintf(buf, cap, "%s: %.*s%s", name, keep, label, tail);
    if (n < 0)
        return -EINVAL;
    if ((size_t)n > room) {
        buf[room] = '\0';
        n = (int)room;
    }
    return n;
}

/* Writes the line over the one shown, padding over what was longer. */
static void draw(shmb_progress_t *p, const char *label, uint64_t now)
{
    char line[SHMB_PROGRESS_WIDTH + 1];
    const double share = shmb_progress_share(p->outer, p->outers, p->done, p->total);
    int n = shmb_progress_format(line, sizeof(line), p->name, label, share,
                                 shmb_progress_left_ns(share, now - p->start_ns));
    if (n < 0)
        return;
    const int pad = p->shown > (size_t)n ? (int)(p->shown - (size_t)n) : 0;
    fprintf(p->out, "\r%s%*s", line, pad, "");
    if (pad)
        fprintf(p->out, "\r%s", line);
    fflush(p->out);
    p->shown = (size_t)n;
    p->drawn_ns = now;
}

void shmb_progress_step(shmb_progress_t *p, uint64_t done, const char *label)
{
    if (!p || !p->out || !label)
        return;
    p->done = done;
    const uint64_t now = shmb_clock_now_ns();
    if (p->shown == 0 || now - p->drawn_ns >= SHMB_PROGRESS_INTERVAL_NS)
        draw(p, label, now);
}

void shmb_progress_clear(shmb_progress_t *p)
{
    if (!p || !p->out || p->shown == 0)
        return;
    fprintf(p->out, "\r%*s\r", (int)p->shown, "");
    fflush(p->out);
    p->shown = 0;
}
