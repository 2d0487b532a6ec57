"""report.md's "Where the answer changes": per axis the savings, axes.png, the break-evens."""
import os

from .axes import AXIS_SIZES_KB, BUFFER_COUNTS, NO, PER_SUBMIT, SUBMIT_BUFFERS, SUBMITTERS, UNDECIDED, YES, Axis, \
    axes_of
from .fmt import fmt_pct, fmt_ratio, fmt_size, fmt_time, md_head, md_row
from .paired_folder import saved_text
from .paired_sections import write_path_legend
from .stats import PRACTICAL_CHANGE, control_noisy
from .verdict_base import FLAVOURS, TITLE

TITLE_AXES = "Where the answer changes"
RULE = {True: "the first point from which the lower end of the saving's 95%% interval stays at %s of Mooncake's "
              "request or more, at that point and every larger one measured",
        False: "the last point up to which the lower end of the saving's 95%% interval stays at %s of Mooncake's "
               "request or more, at that point and every smaller one measured"}
UNIT = {"buffers": "registered buffers", "submit": "descriptors per submit",
        "threads": "submitters"}  # a rising axis's x, in a sentence
ONE = {"buffers": "registered buffer", "submit": "descriptor per submit", "threads": "submitter"}


def counted(axis, x):
    """x with the axis's unit: "2 submitters", "1 submitter"."""
    return "%s %s" % (axis.name(x), (ONE if axis.name(x) == "1" else UNIT)[axis.key])


def who(f):
    """A flavour as the sentences name it: SHM-jemalloc's request is its write path."""
    return TITLE[f] + (" (its write path)" if f == "flowipc_jemalloc" else "")


def point_cells(axis, p, s):
    pair = p.pairs[s]
    other = p.run.p50(p.question, s)
    if s in FLAVOURS:
        said = p.saves_enough(s)
        share = fmt_pct(pair.saved_lo / p.base) if pair.saved_lo is not None and p.base else "-"
        name, rule = TITLE[s], {YES: "yes", NO: "no", UNDECIDED: "undecided"}[said]
    else:
        name, share, rule = "%s (A/A control)" % s, "-", "the noise"
    return [axis.name(p.x), name, fmt_time(p.base) if p.base else "-", fmt_time(other) if other else "-",
            fmt_ratio(pair), saved_text(pair), share, rule]


def sentence(axis, f):
    """The break-even of flavour f along an axis (RULE), the unmeasured points named."""
    pts = [p for p in axis.points if f in p.pairs]
    if not pts:
        return None
    absent = [axis.name(p.x) for p in axis.points if f not in p.pairs]
    axis = Axis(axis.key, pts, axis.rising)
    if axis.key in UNIT:
        what = "a %s request" % fmt_size(pts[0].kb) if axis.key in ("buffers", "threads") else \
            "Mooncake's request per %s descriptor" % fmt_size(pts[0].kb)
        span = "%s to %s %s" % (axis.name(pts[0].x), axis.name(pts[-1].x), UNIT[axis.key]) if len(pts) > 1 else \
            "%s alone" % counted(axis, pts[0].x)
    else:
        what = "Mooncake's request"
        span = "%s to %s" % (axis.name(pts[0].x), axis.name(pts[-1].x))
    said = dict((p.x, p.saves_enough(f)) for p in pts)
    dec = axis.decided(f)
    i = axis.reach(f)
    if i is None and axis.key == "threads":  # no direction known: from N on, else up to N
        axis = Axis(axis.key, pts, False)
        i = axis.reach(f)
    enough = "saves at least %s of %s" % (fmt_pct(PRACTICAL_CHANGE), what)
    unit = " " + UNIT[axis.key] if axis.key in UNIT else ""
    names = lambda ps: ", ".join(axis.name(p.x) for p in ps)  # noqa: E731
    if not dec:
        text = "%s %s or not: undecided at every point measured (%s)" % (who(f), enough, span)
    elif YES not in [said[p.x] for p in dec]:
        text = "%s never %s %s" % (who(f), enough, "within the range (%s)" % span if len(dec) == len(pts) else
                                   "at a decided point (%s)" % span)
    elif i is None:
        text = "%s %s at %s%s, not at %s: no break-even within the range (%s)" % (
            who(f), enough, names([p for p in dec if said[p.x] == YES]), unit,
            names([p for p in dec if said[p.x] == NO]), span)
    elif i == (0 if axis.rising else len(dec) - 1):
        text = "%s %s %s" % (who(f), enough, "at every point measured (%s)" % span if len(dec) == len(pts) else
                             "at every decided point (%s)" % span)
    else:
        p, q = dec[i], dec[i - 1 if axis.rising else i + 1]
        near = "" if abs(pts.index(p) - pts.index(q)) == 1 else "decided "
        where = ("from about %s (not at %s, the %scount before it)" % (counted(axis, p.x), axis.name(q.x), near)
                 if axis.rising else
                 "up to about %s (not at %s, the %scount after it)" % (counted(axis, p.x), axis.name(q.x), near)
                 if axis.key in UNIT else
                 "up to about %s requests (not at %s, the %ssize after it)" % (axis.name(p.x), axis.name(q.x), near))
        pair = p.pairs[f]
        text = "%s %s %s; at %s it saves %s of Mooncake's %s (lower end %s)" % (
            who(f), enough, where, axis.name(p.x), saved_text(pair), fmt_time(p.base),
            fmt_pct(pair.saved_lo / p.base))
    open_ = ["%s (%s)" % (axis.name(p.x), "the A/A control off by %s or more" % fmt_pct(PRACTICAL_CHANGE)
                          if p.control is not None and p.control.has_interval and control_noisy(p.control)
                          else "no interval")
             for p in pts if p.saves_enough(f) == UNDECIDED]
    if open_:  # the points the sentence rests on, then the others
        text += "; %sundecided at %s" % ("decided at %s; " % names(dec) if dec else "", ", ".join(open_))
    if absent:
        text += "; not measured at %s %s (the run's note says why)" % (", ".join(absent), UNIT.get(axis.key, ""))
    return text + "."


def axis_lines(folder, axis):
    """An axis's table and its break-even sentences."""
    head = [UNIT.get(axis.key, "request size"), "system", "Mooncake's request",
            "its request", "ratio [95%]", "saved [95%]", "lower end / Mooncake's", "saves >= %s" %
            fmt_pct(PRACTICAL_CHANGE)]
    wanted = {"buffers": BUFFER_COUNTS, "sizes": AXIS_SIZES_KB, "submit": PER_SUBMIT, "threads": SUBMITTERS}[axis.key]
    missing = [w for w in wanted if w not in [p.x for p in axis.points]]
    if axis.key == "buffers":
        title = "### Registered buffers per peer (the %s request)" % fmt_size(axis.points[0].kb)
        where = "One paired run per count (transfer_axis_buffers_N.json: --num_segments=N)"
        missing = ", ".join("%d buffers" % w for w in missing)
    elif axis.key == "submit":
        title = "### Descriptors per submit (the %s request per descriptor, %d registered buffers)" % (
            fmt_size(axis.points[0].kb), SUBMIT_BUFFERS)
        where = ("One paired run per count, all of a request's descriptors in one TENT submitTransfer "
                 "(transfer_axis_submit_N.json: --descriptors_per_submit=N; 1: transfer_axis_buffers_%d.json); "
                 "times per descriptor (the batch's / N)%s; the rows "
                 "shm_transfer/request/size_kb:N/per_submit:M/system:S/vs:mooncake (size_kb:N alone at 1)"
                 % (SUBMIT_BUFFERS, ", SHM-jemalloc's write path one per descriptor"
                    if "flowipc_jemalloc" in folder.flavours else ""))
        missing = ", ".join("%d" % w for w in missing)
    elif axis.key == "threads":
        title = "### Threads submitting at once (the %s request, %d registered buffers)" % (
            fmt_size(axis.points[0].kb), SUBMIT_BUFFERS)
        where = ("One paired run per count (transfer_axis_threads_N.json: --submitters=N; 1: "
                 "transfer_axis_buffers_%d.json): each round every system's batch run by N threads at once over "
                 "its one registrations, engine and translation, each into its own destination; times per request "
                 "as one submitter sees it (the batch's wall span / its requests, not divided by N); the rows "
                 "shm_transfer/request/size_kb:N/threads:M/system:S/vs:mooncake (size_kb:N alone at 1)%s"
                 % (SUBMIT_BUFFERS, "; SHM-jemalloc's write path with a borrower process per submitter, on its "
                    "CPU" if "flowipc_jemalloc" in folder.flavours else ""))
        missing = ", ".join("%d" % w for w in missing) + (" (more submitters than CPUs allowed are refused)"
                                                          if missing else "")
    else:
        counts = sorted(set(p.buffers for p in axis.points if p.buffers is not None))
        title = "### Descriptor size (the request at %s registered buffers)" % (
            " / ".join(str(c) for c in counts) if counts else "the default")
        where = ("Each size's request from the paired run that measured it (transfer_axis_size_1.json for 1 KB, "
                 "transfer_paired.json for the others)")
        missing = ", ".join(fmt_size(w) for w in missing)
    rows = "" if axis.key in ("submit", "threads") else "; the rows shm_transfer/request/size_kb:N/system:S/vs:mooncake"
    out = [title, "", "%s%s%s." % (where, rows, "; not measured in this run: " + missing if missing else ""), ""]
    out += md_head(head)
    for p in axis.points:
        out += [md_row(point_cells(axis, p, s)) for s in list(folder.flavours) + [folder.control] if s in p.pairs]
    lines = [sentence(axis, f) for f in folder.flavours]
    return out + [""] + ["- " + l for l in lines if l] + [""]


def axes_section(folder):
    """The section: its legend, per axis its table and sentences, axes.png when plot.sh made it."""
    out = ["## " + TITLE_AXES, ""]
    axes = axes_of(folder.path)
    if not axes:
        return out + ["Not run: no transfer_axis_*.json in this folder (run_all.sh --system runs them).", ""]
    out += ["Per request answers at one point: its registered buffers (transfer_paired.json's "
            "--num_segments), one descriptor per submit, one thread. Here each axis moves one thing, every "
            "point a paired run of its own with its own A/A control: each flavour's whole request (rows shm_transfer/request/size_kb:N: the request "
            "path, the translation and the copy, not only the steps Per request credits) against Mooncake's; "
            "saved: Mooncake - the flavour per round, the median and its 95%% interval; lower end / Mooncake's: "
            "that interval's lower end as a share of Mooncake's request (its p50). The break-even rule: along "
            "the buffers and the descriptors per submit, %s; along the sizes, %s; along the submitters, the "
            "first rule, else the second. A point without an interval, or whose A/A control is off by "
            "%s or more, is undecided: neither yes nor no, the rule runs over the decided points and the "
            "sentence names the undecided ones. Along the buffers, Mooncake's "
            "relocation walks its mapped buffers in its hash map's order until one holds the range: each point "
            "is one destination (the middle buffer) at its place in that walk, not a mean over destinations, "
            "and at 1000 buffers that place differed between the model and TENT's own code "
            "(docs/models.md).%s" % (
                RULE[True] % fmt_pct(PRACTICAL_CHANGE), RULE[False] % fmt_pct(PRACTICAL_CHANGE),
                fmt_pct(PRACTICAL_CHANGE), write_path_legend(folder)), ""]
    for axis in axes.values():
        out += axis_lines(folder, axis)
    if os.path.isfile(os.path.join(folder.path, "axes.png")):
        out += ["![axes](axes.png)", ""]
    return out
