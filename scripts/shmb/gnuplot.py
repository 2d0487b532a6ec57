"""gnuplot's side of plot.sh: styles, inert strings, data files, panels, scripts."""
import os
import re
from collections import OrderedDict

from .files import CONTROL, write_output
from .runs import load, parts, run_system, unique
from .stats import quantile


# Okabe-Ito's colour-blind-safe palette, its yellow (too faint on white) replaced by grey.
PALETTE = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#999999")
# The same colour for a name in every plot.
PREFERRED = {
    "mooncake": 0, "mooncake_control": 7, "posix": 0, "flowipc_classic": 4, "bipc": 4, "flowipc_jemalloc": 5,
    "jemalloc": 5, "jemalloc_tcache": 6, "arena": 3, "offset": 1, "memcpy": 0, "loop": 1, "nt": 3, "movsb": 4,
    "linear": 1, "lower_bound": 6, "tree": 3, "arithmetic": 7,
    "shm_open": 2, "ftruncate": 1, "mmap": 3, "close": 6, "total": 0, "cleanup": 5, "touch": 4,
    "touch_reuse": 7,
}
POINTS = (7, 5, 9, 13, 11, 15, 6, 4, 8, 12)
# The same dash type for a step or mode in every plot: solid for the main figure.
DASHES = {"": 1, "alloc": 1, "total": 1, "free": 2, "cold": 2, "latency": 2, "alloc_reuse": 3,
          "first_use": 4, "touch": 5, "touch_reuse": 5}
FLAVOUR_COLOURS = {"flowipc_classic": PALETTE[4], "flowipc_jemalloc": PALETTE[5]}


def ticks(xs, label):
    """gnuplot xtics at the measured x values (every other one while more than 9)."""
    xs = sorted(set(xs))
    while len(xs) > 9:
        xs = xs[::2]
    return "set xtics (%s)" % ", ".join('"%s" %s' % (label(x), x) for x in xs)


def wrap(text, width=115):
    out, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = (line + " " + word).strip()
    return out + ([line] if line else [])


def gp_string(text):
    """A gnuplot string that stays inert whatever text holds: single-quoted parts (no `` nor @macros)
    joined by "\\n"; other control characters become '?'."""
    lines = CONTROL.sub("?", str(text)).split("\n")
    return '."\\n".'.join("'%s'" % l.replace("'", "''") for l in lines)


def dat_string(text):
    """A data file's string column: one line, double quotes, none inside."""
    return '"%s"' % re.sub(r"[\x00-\x1f\x7f]", "?", str(text)).replace('"', "'")


def context_lines(runs, flags=True):
    """Title lines of the runs (system, context): machine, dates, builds, systems, and flags."""
    ctx = runs[0][1]
    cpu = "%s, %s cpus" % (ctx.get("cpu_model", "?"), ctx.get("num_cpus", "?"))
    if ctx.get("mhz_per_cpu"):
        cpu += ", %s MHz" % ctx["mhz_per_cpu"]
    dates = sorted(unique(str(c.get("date", "?"))[:16].replace("T", " ") for _, c in runs))
    builds = []
    for _, c in runs:
        build = ["shmbench " + str(c.get("shmbench_version", "?"))]
        build += [v for k, v in c.items() if ("commit" in k or "compiler" in k) and isinstance(v, str) and v]
        builds.append(" ".join(build))
    lines = ["%s; host %s; %s; %s" % (cpu, ", ".join(unique(str(c.get("host_name", "?")) for _, c in runs)),
                                      dates[0] if len(dates) == 1 else "%s to %s" % (dates[0], dates[-1]),
                                      "; ".join(unique(builds)))]
    systems = unique(system for system, _ in runs if system)
    if systems:
        lines.append("--system runs: %s (as each run's context says)" % ", ".join(systems))
    return lines + (flags_lines(runs) if flags else [])


def flags_lines(runs, label="flags"):
    """Title lines of the runs' flags: the common ones, then each run's own (--system aside)."""
    flags = [str(c.get("flags", "")).split() for _, c in runs]
    common = [f for f in flags[0] if all(f in other for other in flags)]
    lines = ["%s: %s" % (label, " ".join(common))] if common else []
    for (system, _), own in zip(runs, flags):
        own = [f for f in own if f not in common and not f.startswith("system=")]
        if own:
            lines.append("%s of the %s run: %s" % (label, system or "other", " ".join(own)))
    return lines


class Series:
    def __init__(self, label, primary, secondary):
        self.label, self.primary, self.secondary = label, primary, secondary
        self.points = []  # (x, y, lo, hi)


def styles(series):
    """A colour and point per primary name, a dash per secondary: no two series alike, in grey too."""
    colours, taken = {}, set()
    primaries = unique(s.primary for s in series)
    for name in primaries:
        want = PREFERRED.get(name.split()[0] if name else name)
        if want is not None and want not in taken:
            colours[name] = want
            taken.add(want)
    free = [i for i in range(len(PALETTE)) if i not in taken]
    for name in primaries:
        if name not in colours:
            colours[name] = free.pop(0) if free else len(colours) % len(PALETTE)
    secondaries = unique(s.secondary for s in series)
    dashes = {}
    for name in secondaries:
        dashes[name] = DASHES.get(name.split(" ")[0], 1 + len(dashes) % 5)
    out = []
    for s in series:
        pt = POINTS[primaries.index(s.primary) % len(POINTS)]
        out.append((PALETTE[colours[s.primary]], pt, dashes[s.secondary]))
    return out


def series_of(files, keys, point):
    """(label -> Series, repetition counts, runs) of the files of keys, point() mapping each row to
    (primary, secondary, x, to_y) or None; y the median, bars p10-p90."""
    out = OrderedDict()
    reps = set()
    runs = []
    for key in keys:
        rows, c = load(files[key])
        system = run_system(files[key], key, c)
        runs.append((system, c))
        for name, row in rows.items():
            middle, _, arg, threads = parts(name)
            if system:
                middle = [system] + middle
            got = point(middle, arg, threads, row)
            if not got or arg is None:
                continue
            primary, secondary, x, to_y = got
            label = " ".join(p for p in (primary, secondary) if p)
            s = out.setdefault(label, Series(label, primary, secondary))
            ends = sorted((to_y(quantile(row.samples, 0.1)), to_y(quantile(row.samples, 0.9))))
            s.points.append((x, to_y(row.p50), ends[0], ends[1]))
            reps.add(len(row.samples))
    return out, reps, runs


def write_blocks(path, blocks, empty=""):
    """Writes a data file of [(header, lines)], an index each (empty: the line of a block without any)."""
    write_output(path, "".join("# %s\n%s\n\n" % (head, "".join(lines) or empty) for head, lines in blocks))


def write_data(out_dir, name, series):
    """Writes NAME.dat into out_dir and returns its name."""
    write_blocks(os.path.join(out_dir, name + ".dat"),
                 [(dat_string(s.label), ["%s %r %r %r\n" % p for p in sorted(s.points)]) for s in series])
    return name + ".dat"


def bars_note(reps):
    n = max(reps) if reps else 1
    if n < 2:
        return "one repetition: no error bars (run with --repetitions=N for p10-p90 bars)"
    return "error bars: p10-p90 of the %s repetitions' p50s; points: their median" % (
        "/".join(str(r) for r in sorted(reps)))


def log_ytics(lo, hi, label=lambda t: "%g" % t):
    """Labelled y tics at 1, 2, 5 x 10^n on a log axis when there are few decades, else per decade."""
    steps = [m * 10.0 ** e for e in range(-4, 10) for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    if len(steps) > 12:
        steps = [t for t in steps if ("%g" % t).startswith("1")]
    return "set ytics (%s)" % ", ".join("%s %r" % (gp_string(label(t)), t) for t in steps)


def panel(data, series, title, xlabel, ylabel, xtics, extra=(), logy=None, with_bars=True, ylabels=None):
    """gnuplot commands of one panel with its series (index i of data)."""
    ys = [p[1] for s in series for p in s.points if p[1] > 0]
    if logy is None:
        logy = bool(ys) and max(ys) / min(ys) >= 20
    lo = min(p[2] for s in series for p in s.points)
    hi = max(p[3] for s in series for p in s.points)
    xs = [p[0] for s in series for p in s.points]
    # a panel's title is centred over its plot area: wrapped to fit it
    cmds = ["unset arrow", "unset label", "set title %s" % gp_string("\n".join(wrap(title, 95))),
            "set xlabel %s" % gp_string(xlabel), "set ylabel %s" % gp_string(ylabel),
            "set logscale x 2" if xtics else "unset logscale x", xtics or "set xtics",
            "set logscale y" if logy else "unset logscale y", "set format y \"%g\""]
    cmds.append("set yrange [%r:%r]" % ((lo / 1.4, hi * 1.4) if logy and lo > 0 else (0, hi * 1.1)))
    cmds.append(log_ytics(lo / 1.4, hi * 1.4, *([ylabels] if ylabels else [])) if logy and lo > 0
                else "set ytics autofreq")
    if xtics:
        cmds.append("set xrange [%r:%r]" % (min(xs) / 1.2, max(xs) * 1.2))
    cmds.extend(extra)
    plots = []
    for i, (s, (colour, pt, dt)) in enumerate(zip(series, styles(series))):
        if with_bars:  # solid bars, whatever the line's dash type
            plots.append('%s index %d using 1:2:3:4 with yerrorbars lc rgb "%s" dt 1 lw 1.2 ps 0 notitle'
                         % (gp_string(data), i, colour))
        plots.append('%s index %d using 1:2 with linespoints lc rgb "%s" pt %d dt %d lw 1.6 ps 0.9 title %s'
                     % (gp_string(data), i, colour, pt, dt, gp_string(s.label)))
    cmds.append("plot " + ", \\\n     ".join(plots))
    return cmds


def script(title_lines, panels, size=(1100, 700), right=0.74):
    """The gnuplot script of one PNG (to stdout: no path of the user's enters it), panels stacked."""
    lines = [part for line in title_lines for part in wrap(line, int(size[0] / 7.5))]
    head = ["set terminal pngcairo noenhanced size %d,%d font \"sans,10\"" % size,
            "set grid lc rgb \"#dddddd\"",
            "set bars small",
            "set lmargin at screen 0.08",
            "set rmargin at screen %s" % right,
            "set key at screen %s, graph 1 left top Left reverse samplen 3" % (right + 0.02),
            "set multiplot layout %d,1 title %s" % (len(panels), gp_string("\n".join(lines)))]
    body = []
    for p in panels:
        body.extend(p)
    return "\n".join(head + body + ["unset multiplot"]) + "\n"


# At most this many questions share a panel: more, and their labels overlap.
PANEL_QUESTIONS = 12


def chunked(groups):
    """Each group in as few panels of PANEL_QUESTIONS as hold it, alike in size, titled ' (k of n)'."""
    out = []
    for title, xs in groups:
        n = -(-len(xs) // PANEL_QUESTIONS)
        size = -(-len(xs) // n) if n else 1
        chunks = [xs[i:i + size] for i in range(0, len(xs), size)]
        for k, chunk in enumerate(chunks):
            out.append((title + (" (%d of %d)" % (k + 1, len(chunks)) if len(chunks) > 1 else ""), chunk))
    return out


def ratio_axes(title, ylabel, lo, hi, labels, xtics, band, first):
    """The commands that open a ratio panel: log y, a tick per label, a grey band, a line at 1."""
    xt = ", ".join("%s %d" % (gp_string(label), x) for x, label in enumerate(labels))
    return ["unset arrow", "unset label", "unset object", "set title %s" % gp_string(title),
            "unset xlabel", "set ylabel \"%s (log scale)\"" % ylabel, "unset logscale x", "set logscale y",
            "set yrange [%r:%r]" % (lo, hi), "set xrange [-0.7:%r]" % (len(labels) - 0.3), log_ytics(lo, hi),
            "set xtics (%s) %s" % (xt, xtics),
            "set object 1 rect from graph 0, first %r to graph 1, first %r fc rgb \"#e8e8e8\" fs solid 1.0 noborder behind"
            % band,
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb \"#000000\"",
            "set key" if first else "unset key"]
