/* The one timed loop (runner_internal.h). */
#include "runner_internal.h"

#include <errno.h>

#include "shmbench/clock.h"

uint64_t shmb_runner_batch(shmb_runner_fn fn, void *ctx, double min_ns, uint64_t cap, int *err)
{
    *err = 0;
    for (uint64_t count = 1;; count *= 2) {
        const uint64_t t0 = shmb_clock_now_ns();
        if ((*err = fn(ctx, count)) < 0)
            return 0;
        if ((double)(shmb_clock_now_ns() - t0) >= min_ns || count >= cap)
            return count;
    }
}

int shmb_runner_run(const shmb_runner_plan_t *plan, shmb_runner_fn fn, void *ctx, shmb_samples_t *out,
                    uint64_t *done)
{
    if (plan->ops == 0)
        return -EINVAL;
    const uint64_t batches = !plan->batches ? UINT64_MAX : plan->batches < plan->ops ? plan->batches : plan->ops;
    uint64_t spent = 0;
    for (uint64_t b = 0; b < batches; b++) {
        if (b > 0 && ((spent >= plan->budget_ns && b >= plan->min_batches) ||
                      (plan->stop && atomic_load_explicit(plan->stop, memory_order_relaxed))))
            break;
        const uint64_t count = plan->batches ? plan->ops / batches + (b < plan->ops % batches) : plan->ops;
        int ret = plan->before ? plan->before(ctx, count) : 0;
        if (ret < 0)
            return ret;
        const uint64_t t0 = shmb_clock_now_ns();
        ret = fn(ctx, count);
        const uint64_t t1 = shmb_clock_now_ns();
        if (plan->clocks) {
            plan->clocks[0] = t0;
            plan->clocks[1] = t1;
        }
        if (plan->after) {
            const int late = plan->after(ctx, count);
            ret = ret < 0 ? ret : late;
        }
        if (ret < 0)
            return ret;
        if (shmb_stats_append(out, (double)(t1 - t0) / (double)count) < 0)
            return -ENOMEM;
        if (done)
            *done += count;
        spent += t1 - t0;
    }
    return 0;
}
