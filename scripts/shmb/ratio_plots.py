"""gain.png (per-system files) and paired.png (paired runs)."""
import os
from collections import OrderedDict

from .fmt import size_label
from .gnuplot import (FLAVOUR_COLOURS, PALETTE, chunked, context_lines, dat_string, gp_string, ratio_axes, script,
                      write_blocks)
from .paired import load_paired, paired_files
from .pairing import one_off, pair_runs, system_pairs
from .runs import BENCHES, load, load_run, parts, run_system, split_key, unique
from .stats import MIN_REPETITIONS, PRACTICAL_CHANGE, TOO_FEW, gain_interval
from .tables import gain_rows


# gain.png: a bar's fill says what the U-test says of it.
FILLS = (("yes", "lc rgb \"%s\" fs solid 0.85 border", "solid: significant (U-test)"),
         ("no", "lc rgb \"%s\" fs empty border", "hollow: not significant"),
         (TOO_FEW, "lc rgb \"%s\" fs pattern 4 border", "hatched: untested, < %d reps" % MIN_REPETITIONS))


def gain_bars(folder):
    """(bench, kind) -> row label -> flavour -> (gain, significant, interval) of a --system folder."""
    pairs, files = system_pairs(folder)
    out = OrderedDict()
    for bench, a_key, b_key in pairs:
        a, b = load_run(files[a_key]), load_run(files[b_key])
        run_system(files[a_key], a_key, load(files[a_key])[1])
        flavour = run_system(files[b_key], b_key, load(files[b_key])[1])
        for name, ra, rb, _, sig, _ in gain_rows(pair_runs(a, b)):
            if not (ra and rb):
                continue
            middle = parts(name)[0]
            kind = "one-off" if one_off(middle) else "per operation"
            # attach: the receiver's totals, as the Pairing compares them
            label = row_label(name, ["attach total"] if middle == ["attach"] and ra.name.endswith(" total") else None)
            out.setdefault((bench, kind), OrderedDict()).setdefault(label, OrderedDict())[flavour] = \
                (ra.p50 / rb.p50, sig, gain_interval(ra.samples, rb.samples))
    for kind in ("per operation", "one-off"):  # the sweep holds lookup's rows at more counts
        if ("lookup_sweep", kind) in out:
            out.pop(("lookup", kind), None)
    return out


def write_gain_data(path, bars, flavours):
    """Writes a gain panel's data, a block per flavour and fill; returns the blocks."""
    width = 0.8 / len(flavours)
    blocks, out = [], []
    for j, flavour in enumerate(flavours):
        for sig, _, _ in FILLS:
            lines = []
            for g, by in enumerate(bars.values()):
                if flavour in by and by[flavour][1] == sig:
                    x, (v, _, ci) = g - 0.4 + width * (j + 0.5), by[flavour]
                    # no figure inside the band: a change too small to matter
                    text = "" if abs(v - 1) < PRACTICAL_CHANGE else "%.2f" % v if v < 10 else "%.0f" % v
                    lo, hi = ci or (float("nan"), float("nan"))
                    # the figure beyond the bar's end and its interval's
                    at = min(v, lo if ci else v) / 1.12 if v < 1 else max(v, hi if ci else v) * 1.12
                    lines.append("%r %r %r %r %r %r %r %s\n" % (x, v, x - width / 2, x + width / 2, lo, hi, at,
                                                               dat_string(text)))
            out.append(("%s %s" % (flavour, dat_string(sig)), lines))
            blocks.append((flavour, sig))
    write_blocks(path, out, "nan nan nan nan nan nan nan \"\"\n")
    return blocks


def gain_legend(flavours):
    """The gain plot's legend entries: the flavours' colours, the fills, the band."""
    plots = ["NaN with boxes fs solid 0.85 lc rgb \"%s\" title %s"
             % (FLAVOUR_COLOURS.get(flavour, PALETTE[2]), gp_string(flavour)) for flavour in flavours]
    plots += ["NaN with boxes lw 1.5 %s title %s" % (style % "#555555", gp_string(text)) for _, style, text in FILLS]
    plots.append("NaN with boxes fs solid 1.0 lc rgb \"#e8e8e8\" title %s"
                 % gp_string("grey band: under %g%%, no practical difference" % (PRACTICAL_CHANGE * 100)))
    plots.append("NaN with lines lc rgb \"#000000\" lw 1 title %s"
                 % gp_string("error bar: 95%% bootstrap interval (%d+ reps)" % MIN_REPETITIONS))
    return plots


def gain_panel(out_dir, index, title, bars, flavours, first):
    """One gain panel: a bar per flavour from 1 to its gain, filled as FILLS says."""
    data = "gain%d.dat" % index
    blocks = write_gain_data(os.path.join(out_dir, data), bars, flavours)
    ys = [y for by in bars.values() for v, _, ci in by.values() for y in (v,) + (ci or ())]
    lo, hi = min(ys + [1.0]) / 1.6, max(ys + [1.0]) * 1.8
    cmds = ratio_axes("%s: mooncake p50 / Flow-IPC p50 per row (above 1: Flow-IPC is faster)" % title, "gain",
                      lo, hi, list(bars), "rotate by 45 right font \",8\"",
                      (1 - PRACTICAL_CHANGE, 1 + PRACTICAL_CHANGE), first)
    plots = []
    fills = dict((sig, style) for sig, style, _ in FILLS)
    for i, (flavour, sig) in enumerate(blocks):
        colour = FLAVOUR_COLOURS.get(flavour, PALETTE[2])
        # a bar from 1 to the gain: up when the Flow-IPC path is faster, down when slower
        plots.append("%s index %d using 1:2:3:4:($2<1?$2:1):($2<1?1:$2) with boxxyerror lw 1.5 %s notitle"
                     % (gp_string(data), i, fills[sig] % colour))
        # the interval as a capped line (yerrorbars would break it around its point)
        plots.append("%s index %d using 1:5:(0):($6-$5) with vectors heads size screen 0.005,90 lc rgb \"#000000\" "
                     "lw 1.5 notitle" % (gp_string(data), i))
        plots.append("%s index %d using 1:7:8 with labels font \",7\" notitle" % (gp_string(data), i))
    cmds.append("plot " + ", \\\n     ".join(plots + (gain_legend(flavours) if first else [])))
    return cmds


def gain_panels(groups):
    """[(title, bars)] of gain.png: the rows that decide first, then each binary's on its own scale."""
    decide, rest = OrderedDict(), []
    for bench, kind in [(b, k) for b in BENCHES for k in ("per operation", "one-off") if (b, k) in groups]:
        bars = groups[(bench, kind)]
        what = "%s, %s" % (bench, "per operation or request" if kind == "per operation" else "one-off costs")
        others = OrderedDict()
        for label, by in bars.items():
            request = bench in ("transfer", "workload") and kind == "per operation" and \
                (label.startswith("request ") or label.startswith("workload request "))
            (decide if request else others)[label] = by
        if others:
            rest.append((what, others))
    groups = ([("what decides: the whole request, per size and per workload request", decide)] if decide else []) + rest
    return [(title, OrderedDict(chunk)) for title, chunk in chunked([(t, list(b.items())) for t, b in groups])]


def plot_gain(folder, out_dir):
    groups = gain_bars(folder)
    if not groups:
        return None
    pairs, files = system_pairs(folder)
    flavours = unique(split_key(b)[1] for _, _, b in pairs)
    panels = [gain_panel(out_dir, i, title, bars, flavours, i == 0)
              for i, (title, bars) in enumerate(gain_panels(groups))]
    benches = unique(b for b, _ in groups)
    runs = [(run_system(files[k], k, ctx), ctx) for bench, a, b in pairs if bench in benches
            for k in (a, b) for ctx in [load(files[k])[1]]]
    title = ["Gain of Flow-IPC (%s) over Mooncake per row: p50 ratio, medians over repetitions, 95%% bootstrap "
             "interval; colour = flavour, fill = significance; the rows that decide first; flags: in report.md"
             % ", ".join(flavours)] + \
        context_lines(runs, flags=False)
    return script(title, panels, size=(1300, 380 * len(panels) + 200), right=0.71)


def row_label(name, middle=None):
    """'shm_transfer/request/size_kb:4' -> 'request 4K'; middle: other middle parts."""
    own, arg_name, arg, threads = parts(name)
    x = size_label(arg) if arg_name.startswith("size") and arg is not None else \
        "%s segs" % arg if arg_name == "segments" else name.rsplit(":", 1)[-1]
    return " ".join((own if middle is None else middle) + [x] + (["%dT" % threads] if threads > 1 else []))


def paired_panel(out_dir, index, title, questions, baseline, control, first):
    """One panel of paired.png: each system's ratio per question with its interval, the control grey."""
    systems = unique(s for _, by in questions for s in by)
    data = "paired%d.dat" % index
    width = 0.8 / len(systems)
    ys = [1.0]
    blocks = []
    for j, s in enumerate(systems):
        lines = []
        for x, (q, by) in enumerate(questions):
            p = by.get(s)
            if p is None:
                continue
            lo, hi = (p.lo, p.hi) if p.has_interval and p.lo > 0 else (p.ratio, p.ratio)
            lines.append("%r %r %r %r\n" % (x - 0.4 + width * (j + 0.5), p.ratio, lo, hi))
            ys += [p.ratio, lo, hi]
        blocks.append((dat_string(s), lines))
    write_blocks(os.path.join(out_dir, data), blocks, "nan nan nan nan\n")
    lo, hi = min(ys) / 1.3, max(ys) * 1.3
    cmds = ratio_axes(title, "ratio", lo, hi, [row_label(q) for q, _ in questions], "rotate by 30 right font \",9\"",
                      (1 / (1 + PRACTICAL_CHANGE), 1 + PRACTICAL_CHANGE), first)
    plots = []
    for i, s in enumerate(systems):
        colour = PALETTE[7] if s == control else FLAVOUR_COLOURS.get(s, PALETTE[2])
        plots.append("%s index %d using 1:2:3:4 with yerrorbars lc rgb \"%s\" pt 7 ps 0.8 lw 1.5 title %s"
                     % (gp_string(data), i, colour, gp_string(s)))
    if first:
        plots.append("NaN with boxes fs solid 1.0 lc rgb \"#e8e8e8\" title %s"
                     % gp_string("grey band: under %g%%" % (PRACTICAL_CHANGE * 100)))
    cmds.append("plot " + ", \\\n     ".join(plots))
    return cmds


def paired_panels(runs):
    """[(title, questions)] of paired.png: the rows that decide first, then a panel per run."""
    decide, rest = [], OrderedDict()
    for bench, run in runs:
        for q, by in run.pairs.items():
            if bench in ("transfer", "workload") and parts(q)[0][-1:] == ["request"]:
                decide.append((q, by))
            else:
                rest.setdefault("%s (%s)" % (bench, os.path.basename(run.path)), []).append((q, by))
    base = runs[0][1].baseline
    groups = [("what decides: the whole request, per size and per workload request", decide)] if decide else []
    groups += list(rest.items())
    return [("%s: %s / system per round, median and 95%% interval (above 1: the system is faster)" % (title, base),
             chunk) for title, chunk in chunked(groups)]


def plot_paired(folder, out_dir):
    """paired.png's script of a folder's paired runs, or None."""
    runs = [(bench, load_paired(path)) for bench, path in paired_files(folder).items()]
    if not runs:
        return None
    base, control = runs[0][1].baseline, runs[0][1].control
    panels = [paired_panel(out_dir, i, title, questions, base, control, i == 0)
              for i, (title, questions) in enumerate(paired_panels(runs))]
    title = ["Paired runs: each system against %s, measured in one process in turn; grey: the A/A control "
             "(%s), the run's noise; flags: in report.md" % (base, control)] + \
        context_lines([("", run.ctx) for _, run in runs], flags=False)
    return script(title, panels, size=(1300, 380 * len(panels) + 200), right=0.78)
