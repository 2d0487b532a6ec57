"""The U-test with Holm's correction, the verdict on a change, the gain's bootstrap interval and
the paired runs' rule (src/base/paired.c)."""
import math
import random
import statistics


# Google Benchmark's compare.py (gbench/report.py UTEST_OPTIMAL_REPETITIONS) warns
# "Results unreliable! 9+ repetitions recommended" below this many.
MIN_REPETITIONS = 9
ALPHA = 0.05
# An effect under this share of the baseline's figure is "no practical difference".
PRACTICAL_CHANGE = 0.05
TOO_FEW = "too few reps"


def p_value(a, b):
    """The two-sided U-test's p-value on two rows' samples, or None with too few."""
    if min(len(a.samples), len(b.samples)) < MIN_REPETITIONS:
        return None
    from scipy.stats import mannwhitneyu
    p = mannwhitneyu(a.samples, b.samples, alternative="two-sided").pvalue
    return 1.0 if math.isnan(p) else p  # nan: every sample of both equal, no difference


def holm(ps):
    """Holm's step-down adjusted p-values (None stays None)."""
    tested = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    out, running = list(ps), 0.0
    for k, (p, i) in enumerate(tested):
        running = max(running, min(1.0, p * (len(tested) - k)))
        out[i] = running
    return out


def verdicts(pairs):
    """[(p, 'yes'|'no'|TOO_FEW|'-')] of [(row A, row B)], Holm over the table."""
    ps = [p_value(a, b) if a and b else None for a, b in pairs]
    out = []
    for (a, b), p, adjusted in zip(pairs, ps, holm(ps)):
        if not (a and b):
            out.append((None, "-"))
        elif p is None:
            out.append((None, TOO_FEW))
        else:
            out.append((p, "yes" if adjusted <= ALPHA else "no"))
    return out


def change_of(a, b):
    """B's figure against A's: b / a - 1 (a time: below 0, B is faster)."""
    return b / a - 1.0


def verdict(sig, a, b, lower_is_better=True):
    """A change under PRACTICAL_CHANGE is no practical difference even if significant; larger ones
    say which way, when the test backs them."""
    if sig == "-" or not (a and b):
        return "-"
    change = change_of(a, b)
    if abs(change) < PRACTICAL_CHANGE:
        return "no practical difference"
    if sig == "no":
        return "not significant"
    way = "B faster" if (change < 0) == lower_is_better else "B slower"
    return way if sig == "yes" else way + " (untested)"


def quantile(xs, q):
    """The q quantile of xs, linear between the order statistics (numpy's default)."""
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    i = int(pos)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)


# The gain's interval: a percentile bootstrap of the ratio of the two medians, the
# repetitions of each run resampled on their own (they are independent runs, not pairs),
# with a fixed seed so that a folder always plots the same; none under MIN_REPETITIONS.
BOOTSTRAP_RESAMPLES = 2000


def gain_interval(a, b):
    """(lo, hi) of the 95% bootstrap interval of median(a) / median(b), or None."""
    if min(len(a), len(b)) < MIN_REPETITIONS:
        return None
    rng = random.Random(42)
    ratios = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                    for _ in range(BOOTSTRAP_RESAMPLES))
    return ratios[int(0.025 * BOOTSTRAP_RESAMPLES)], ratios[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]


def control_noisy(c):
    """The control off its own code: interval beyond [1/1.05, 1.05], or off 1 by 5% or more."""
    return c.lo > 1 + PRACTICAL_CHANGE or c.hi < 1 / (1 + PRACTICAL_CHANGE) or \
        (not c.lo <= 1 <= c.hi and abs(c.ratio - 1) >= PRACTICAL_CHANGE)


def paired_verdict(pair, control):
    """src/base/paired.c's rule: a noisy control, too noisy; an interval holding 1 or inside the
    control's, within the noise; under 5%, no practical difference."""
    if control is None or not (pair.has_interval and control.has_interval):
        return "not assessed"
    if control_noisy(control):
        return "too noisy"
    if pair.lo <= 1 <= pair.hi or (pair is not control and control.lo <= pair.lo and pair.hi <= control.hi):
        return "within the noise"
    if abs(pair.ratio - 1) < PRACTICAL_CHANGE:
        return "no practical difference"
    return "faster" if pair.ratio > 1 else "slower"
