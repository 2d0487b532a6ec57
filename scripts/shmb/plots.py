"""plot.sh's figures of each binary, and plotdata, which writes every figure of a folder."""
import os
from collections import OrderedDict

from .axes import plot_axes
from .files import number, write_output
from .fmt import size_label, time_label
from .gnuplot import bars_note, context_lines, gp_string, panel, script, series_of, ticks, write_data
from .pairing import one_off
from .ratio_plots import plot_gain, plot_paired
from .runs import BENCHES, SYSTEMS, folder_files, same, split_key


REQUEST_PARTS = ("request_path", "translate", "request")


def transfer_point(middle, arg, threads, row):
    if any(m in REQUEST_PARTS for m in middle):
        return None
    method = middle[0] if middle else "memcpy"
    rest = middle[1:] + (["%d threads" % threads] if threads > 1 else [])
    return method, " ".join(rest), arg, lambda ns: arg * 1024 / ns  # GB/s: bytes per ns


def request_point(middle, arg, threads, row):
    """A --system run's request and its parts (the copy among them), ns per request."""
    if middle[:1] and middle[0] in SYSTEMS and threads == 1:
        return middle[0], " ".join(middle[1:]), arg, same
    return None


KERNELS = ("linear", "lower_bound", "tree", "arithmetic")


def lookup_point(middle, arg, threads, row):
    if one_off(middle):
        return None
    primary = middle[0] if middle else "?"
    if primary in KERNELS:
        primary += " (kernel)"
    return primary, " ".join(middle[1:]), arg, same


def lookup_once_point(middle, arg, threads, row):
    if not one_off(middle):
        return None
    return middle[0] if middle else "?", " ".join(middle[1:]), arg, same


def caches_marks(ctx, xs):
    """gnuplot arrows and labels at the cache sizes of the run's CPU within xs (KB)."""
    extra = []
    for c in ctx.get("caches") or []:
        if not isinstance(c, dict) or c.get("type") not in ("Data", "Unified") or not number(c.get("size")) \
                or not isinstance(c.get("level"), int):
            continue
        kb = c["size"] / 1024
        name = "L%d%s" % (c["level"], "d" if c["type"] == "Data" else "")
        if min(xs) <= kb <= max(xs):
            extra.append("set arrow from %s, graph 0 to %s, graph 1 nohead dt 3 lw 1.2 lc rgb \"#555555\"" % (kb, kb))
            extra.append("set label %s at %s, graph 0.98 rotate by 90 right offset -1.2,0 textcolor rgb \"#555555\""
                         % (gp_string("%s %s" % (name, size_label(int(kb)))), kb))
    return extra


def bench_figure(files, keys, out_dir, name, head, specs, draw, panel_height=400):
    """A panel per spec whose point function finds rows, its data NAME<i>.dat; None when none."""
    panels, reps, runs = [], set(), None
    for i, spec in enumerate(specs):
        series, r, got = series_of(files, keys, spec[0])
        runs = runs or got
        if not series:
            continue
        reps |= r
        series = list(series.values())
        data = write_data(out_dir, "%s%d" % (name, i), series)
        xs = [p[0] for s in series for p in s.points]
        panels.append(draw(spec, data, series, xs, max(r) > 1, runs))
    if not panels:
        return None
    title = [head] + context_lines(runs) + [bars_note(reps)]
    return script(title, panels, size=(1100, panel_height * len(panels) + 160))


def plot_transfer(files, keys, out_dir):
    specs = ((transfer_point, "copies: GB/s = size / p50 (10^9 bytes/s); dotted lines: cache sizes",
              "GB/s (higher is better)", True),
             (request_point, "per request (--system): the whole request and its parts, time per request (p50)",
              "time per request, p50 (lower is better)", False))

    def draw(spec, data, series, xs, with_bars, runs):
        _, ptitle, ylabel, copies = spec
        extra = caches_marks(runs[0][1], xs) if copies else []
        return panel(data, series, ptitle, "transfer size (1K = 1024 bytes)", ylabel, ticks(xs, size_label), extra,
                     logy=None if copies else True, with_bars=with_bars, ylabels=None if copies else time_label)

    return bench_figure(files, keys, out_dir, "transfer", "shm_transfer_bench: moving bytes through SHM", specs,
                        draw)


def plot_lookup(files, keys, out_dir):
    specs = ((lookup_point, "per request: time per address translation (p50); kernels are reference points, "
              "the others the systems' paths", "time per lookup, p50 (lower is better)"),
             (lookup_once_point, "one-off: the receiver's first use of a buffer or pool (attach, first_use), "
              "each pool lent once (pool_once)", "time per buffer or pool, p50"))

    def draw(spec, data, series, xs, with_bars, runs):
        return panel(data, series, spec[1], "registered segments", spec[2], ticks(xs, lambda x: "%d" % x),
                     logy=True, with_bars=with_bars, ylabels=time_label)

    return bench_figure(files, keys, out_dir, "lookup",
                        "shm_address_lookup_bench: translating a peer's address, by registered segments", specs, draw)


def plot_allocation(files, keys, out_dir):
    def posix(middle, arg, threads, row):
        if middle[:1] == ["posix"] and not one_off(middle):
            return " ".join(middle[1:]) or "?", "", arg, same
        return None

    def pools(middle, arg, threads, row):
        if middle[:1] != ["posix"] and not one_off(middle):
            return middle[0], " ".join(middle[1:]), arg, same
        return None

    def once(middle, arg, threads, row):
        if middle == ["posix", "total"]:
            return "posix", "register", arg, same
        if one_off(middle):
            return middle[0], " ".join(middle[1:]), arg, same
        return None

    specs = (
        (posix, "posix (Mooncake's createSharedMemory), per step, once per buffer", "time per buffer, p50"),
        (pools, "per block: colour = allocator or system, line = step", "time per operation, p50"),
        (once, "one-off: register (a buffer or pool made and known; posix total: createSharedMemory), "
         "the peer's attach and detach", "time per buffer, pool or peer, p50"),
    )

    def draw(spec, data, series, xs, with_bars, runs):
        return panel(data, series, spec[1], "allocation size (1K = 1024 bytes)", spec[2], ticks(xs, size_label),
                     logy=True, with_bars=with_bars, ylabels=time_label)

    return bench_figure(files, keys, out_dir, "allocation",
                        "shm_allocation_bench: what one SHM allocation costs (log-log)", specs, draw, panel_height=380)


def plotdata(folder, out_dir):
    files = folder_files(folder)
    made = []
    by_bench = OrderedDict((b, [k for k in files if split_key(k)[0] == b]) for b in BENCHES)
    lookup_keys = by_bench["lookup_sweep"] or by_bench["lookup"]
    jobs = [(name, lambda fn=fn, keys=keys: keys and fn(files, keys, out_dir)) for name, fn, keys in (
        ("transfer", plot_transfer, by_bench["transfer"]), ("lookup", plot_lookup, lookup_keys),
        ("allocation", plot_allocation, by_bench["allocation"]))]
    jobs += [(name, lambda fn=fn: fn(folder, out_dir)) for name, fn in (
        ("gain", plot_gain), ("paired", plot_paired), ("axes", plot_axes))]
    for name, make in jobs:
        text = make()
        if text:
            write_output(os.path.join(out_dir, name + ".gp"), text)
            made.append(name)
    print(" ".join(made))
    return 0 if made else 1
