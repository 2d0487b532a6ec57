"""The axes of "Where the answer changes": their points, the break-even rule, axes.png."""
import os
import re
from collections import OrderedDict

from .fmt import fmt_size, size_label
from .gnuplot import PALETTE, Series, context_lines, log_ytics, panel, script, ticks, write_data
from .paired import load_paired, paired_files
from .stats import PRACTICAL_CHANGE, control_noisy

BUFFER_COUNTS = (10, 100, 1000, 10000)  # run_all.sh --system's buffers axis
AXIS_SIZES_KB = (1, 8, 64, 1024, 16384)  # the sizes axis: 1 KB its own run, the others transfer_paired's
PER_SUBMIT = (1, 32, 256, 2048)  # the submit axis: 1 is the buffers axis's 100 point, the others their own runs
SUBMIT_BUFFERS = 100  # the buffers of the submit and threads axes' runs
SUBMITTERS = (1, 2, 4, 8)  # the threads axis: 1 is the buffers axis's 100 point; above 2 where CPUs allow
REQUEST = re.compile(r"^shm_transfer/request/size_kb:(\d+)$")
SUBMIT_REQUEST = re.compile(r"^shm_transfer/request/size_kb:(\d+)/per_submit:(\d+)$")  # per descriptor
THREADS_REQUEST = re.compile(r"^shm_transfer/request/size_kb:(\d+)/threads:(\d+)$")  # N submitting at once
AXIS_FILE = re.compile(r"^transfer_axis_(buffers|size|submit|threads)_\d+\.json$")
# What a point's rule says (saves_enough)
YES, NO, UNDECIDED = "yes", "no", "undecided"


def num_segments(run):
    """The registered buffers a transfer run measured at (--num_segments in its flags), or None."""
    m = re.search(r"(?:^| )num_segments=(\d+)(?: |$)", str(run.ctx.get("flags", "")))
    return int(m.group(1)) if m else None


class Point:
    """The whole request of one size in one paired run: x its buffers, count or KB; pairs by system."""

    def __init__(self, x, run, question, kb):
        self.x, self.run, self.question, self.kb = x, run, question, kb
        self.base = run.p50(question, run.baseline)
        self.pairs = run.pairs[question]
        self.control = run.control_of(question)
        self.buffers = num_segments(run)

    def saves_enough(self, system):
        """YES when the saving's lower 95% end is PRACTICAL_CHANGE of Mooncake's request or more;
        UNDECIDED without an interval or a quiet control; else NO."""
        p = self.pairs.get(system)
        c = self.control
        if p is None or not p.has_interval or p.saved_lo is None or c is None or not c.has_interval \
                or control_noisy(c) or not self.base:
            return UNDECIDED
        return YES if p.saved_lo >= PRACTICAL_CHANGE * self.base else NO


class Axis:
    """points by x; rising: a flavour's saving grows along it (break-even where it starts), else shrinks."""

    def __init__(self, key, points, rising):
        self.key, self.points, self.rising = key, sorted(points, key=lambda p: p.x), rising

    def label(self, x):
        """A tick's label: '1000', '64K'."""
        return "%d" % x if self.key != "sizes" else size_label(x)

    def name(self, x):
        """A point as a sentence says it: '1000', '64 KB'."""
        return "%d" % x if self.key != "sizes" else fmt_size(x)

    def decided(self, system):
        """The points whose rule says YES or NO for system (an undecided point is neither)."""
        return [p for p in self.points if p.saves_enough(system) != UNDECIDED]

    def reach(self, system):
        """Index among the decided points of the break-even (rising: first of a YES run to the end;
        falling: last of one from the start), None when none qualifies."""
        said = [p.saves_enough(system) for p in self.decided(system)]
        order = range(len(said) - 1, -1, -1) if self.rising else range(len(said))
        found = None
        for i in order:
            if said[i] != YES:
                break
            found = i
        return found


def axes_of(folder):
    """OrderedDict axis -> Axis of a folder's transfer_axis_*.json (sizes also of transfer_paired.json);
    none without an axis file, an axis without points left out."""
    runs = OrderedDict()
    for name in sorted(os.listdir(folder)):
        if AXIS_FILE.match(name):
            runs[name] = load_paired(os.path.join(folder, name))
    if not runs:  # a folder of run_all.sh before the axes: none, not the sizes transfer_paired.json has
        return OrderedDict()
    transfer = paired_files(folder).get("transfer")
    buffers, sizes = [], OrderedDict()
    for name, run in runs.items():
        kbs = requests(run)
        if name.startswith("transfer_axis_buffers_") and kbs and num_segments(run) is not None:
            kb, q = kbs[0]  # run_all.sh runs one size
            buffers.append(Point(num_segments(run), run, q, kb))
    for run in [r for n, r in runs.items() if n.startswith("transfer_axis_size_")] + \
            ([load_paired(transfer)] if transfer else []):
        for kb, q in requests(run):
            if kb in AXIS_SIZES_KB and kb not in sizes:
                sizes[kb] = Point(kb, run, q, kb)
    submit = counted(runs, "transfer_axis_submit_", SUBMIT_REQUEST, buffers)
    threads = counted(runs, "transfer_axis_threads_", THREADS_REQUEST, buffers)
    out = OrderedDict()
    if buffers:
        out["buffers"] = Axis("buffers", buffers, True)
    if sizes:
        out["sizes"] = Axis("sizes", list(sizes.values()), False)
    if submit:
        out["submit"] = Axis("submit", submit, True)
    if threads:
        out["threads"] = Axis("threads", threads, True)
    return out


def counted(runs, prefix, pattern, buffers):
    """A counted axis's points (runs prefix + N at SUBMIT_BUFFERS); N = 1 is the buffers axis's point."""
    points = []
    for name, run in runs.items():
        found = sorted(((int(m.group(1)), int(m.group(2))), q) for q in run.pairs for m in [pattern.match(q)] if m) \
            if name.startswith(prefix) else []
        if found and num_segments(run) == SUBMIT_BUFFERS:
            (kb, n), q = found[0]  # run_all.sh runs one size, one count
            points.append(Point(n, run, q, kb))
    one = [p for p in buffers if p.x == SUBMIT_BUFFERS]
    if points and one and one[0].kb == points[0].kb:
        points.append(Point(1, one[0].run, one[0].question, one[0].kb))
    return points


def requests(run):
    """[(size in KB, question)] of a paired run's whole-request questions, by size."""
    found = [(int(m.group(1)), q) for q in run.pairs for m in [REQUEST.match(q)] if m]
    return sorted(found)


AXIS_TITLE = {"buffers": ("the 4 KB request by registered buffers per peer", "registered buffers (log scale)"),
              "sizes": ("the request by descriptor size", "request size (1K = 1024 bytes; log scale)"),
              "submit": ("the 4 KB request per descriptor by descriptors per submit",
                         "descriptors per submit (log scale)"),
              "threads": ("the 4 KB request by threads submitting at once", "submitters (log scale)")}


def axes_panel(out_dir, index, axis, first):
    """One panel of axes.png: each system's ratio per point, a line at 1 and one at a 5% saving."""
    series = OrderedDict()
    systems = [s for p in axis.points for s in p.pairs]
    order = [s for i, s in enumerate(systems) if s not in systems[:i]]
    for p in axis.points:
        for s, pair in p.pairs.items():
            # apart by a few percent along x, so that the bars at one point do not cover each other
            x = p.x * 1.06 ** (order.index(s) - (len(order) - 1) / 2.0)
            lo, hi = (pair.lo, pair.hi) if pair.has_interval and pair.lo > 0 else (pair.ratio, pair.ratio)
            series.setdefault(s, Series(s, s, "")).points.append((x, pair.ratio, lo, hi))
    series = list(series.values())
    data = write_data(out_dir, "axes%d" % index, series)
    enough = 1 / (1 - PRACTICAL_CHANGE)
    ys = [v for s in series for pt in s.points for v in pt[1:]] + [1.0, enough]
    lo, hi = min(ys) / 1.4, max(ys) * 1.4
    xs = [p.x for p in axis.points]
    title, xlabel = AXIS_TITLE[axis.key]
    extra = ["set yrange [%r:%r]" % (lo, hi), log_ytics(lo, hi),
             "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb \"#000000\"",
             "set arrow from graph 0, first %r to graph 1, first %r nohead dt 2 lw 1.2 lc rgb \"%s\""
             % (enough, enough, PALETTE[3]),
             "set label \"saves %g%% of Mooncake's request\" at graph 0.99, first %r right offset 0,0.6 font \",8\" "
             "textcolor rgb \"%s\"" % (PRACTICAL_CHANGE * 100, enough * 1.02, PALETTE[3])]
    cmds = panel(data, series, "%s: Mooncake / system per round, median and 95%% interval (above 1: the system "
                 "is faster)" % title, xlabel, "ratio (log scale)", ticks(xs, axis.label), extra, logy=True)
    return cmds if first else ["unset key"] + cmds


def plot_axes(folder, out_dir):
    """axes.png of a folder's axes, a panel each (None without one)."""
    axes = axes_of(folder)
    if not axes:
        return None
    panels = [axes_panel(out_dir, i, axis, i == 0) for i, axis in enumerate(axes.values())]
    runs = [("", p.run.ctx) for axis in axes.values() for p in axis.points]
    title = ["Where the answer changes: each flavour's whole request against Mooncake's along each axis, paired "
             "(one run per point); grey: the A/A control; dashed: a saving of %g%% of Mooncake's request"
             % (PRACTICAL_CHANGE * 100)] + context_lines(runs, flags=False)
    return script(title, panels, size=(1100, 420 * len(panels) + 160))
