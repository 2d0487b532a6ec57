"""Paired runs (--systems, BENCH_paired.json) read and checked, and models against upstream code."""
import os
import re
from collections import OrderedDict

from .files import BadInput, benchmark_json, check_name, number, read
from .fmt import fmt, fmt_ratio, md_head, md_row
from .runs import existing, unique


# A paired run (--systems=LIST) measures its systems in one process, round by round,
# with the baseline's A/A control; run_all.sh --system writes BENCH_paired.json.
PAIRED_BENCHES = ("allocation", "lookup", "transfer", "workload", "zero_copy")
CONTROL_SUFFIX = "_control"
MIN_ROUNDS = 6  # the fewest rounds with a 95% interval of a median (2^-5 < 0.05)
PAIRED_VERDICTS = ("faster", "slower", "no practical difference", "within the noise", "too noisy",
                   "not assessed")
PAIRED_NAME = re.compile(r"^(?P<question>.+)/system:(?P<system>[^/]+)(?:/vs:(?P<vs>[^/]+))?$")


class Pair:
    """A ratio row: ratio baseline / system (above 1: faster) and lo, hi; saved ns and its ends; p."""

    def __init__(self, name, question, system, vs, b):
        self.name, self.question, self.system, self.vs = name, question, system, vs
        self.ratio, self.saved, self.rounds = b["ratio"], b["saved_ns"], b["rounds"]
        self.lo, self.hi = b.get("ratio_lo"), b.get("ratio_hi")
        self.saved_lo, self.saved_hi = b.get("saved_lo"), b.get("saved_hi")
        self.p = b.get("p_value")

    @property
    def has_interval(self):
        return self.lo is not None and self.hi is not None and self.rounds >= MIN_ROUNDS

    @property
    def saved_width(self):
        """The width of the saved time's interval, ns (None without one)."""
        if self.saved_lo is None or self.saved_hi is None:
            return None
        return self.saved_hi - self.saved_lo


class PairedRun:
    """One BENCH_paired.json: questions -> system -> row, pairs -> system -> Pair, baseline, ctx."""

    def __init__(self, path, questions, pairs, baseline, ctx):
        self.path, self.questions, self.pairs, self.baseline, self.ctx = path, questions, pairs, baseline, ctx

    @property
    def control(self):
        return self.baseline + CONTROL_SUFFIX

    def p50(self, question, system):
        """The system row's p50 of a question, or None."""
        row = self.questions.get(question, {}).get(system)
        return row["p50"] if row else None

    def control_of(self, question):
        return self.pairs.get(question, {}).get(self.control)

    def flavours(self):
        """The systems measured against the baseline, the control aside, in file order."""
        return unique(s for by in self.pairs.values() for s in by if s != self.control)


def paired_field(path, b, key, check, what, optional=False):
    """b[key] checked (check(v) true) or BadInput naming the file, the row and the field."""
    if key not in b and optional:
        return None
    v = b.get(key)
    if not check(v):
        raise BadInput("%s: benchmark %s: %s %r is not %s" % (path, b["name"], key, v, what))
    return v


def parse_paired(path, text):
    """The PairedRun of a paired JSON text, every field read checked."""
    data, ctx = benchmark_json(path, text)
    questions, pairs, baselines = OrderedDict(), OrderedDict(), set()
    positive = lambda v: number(v) and v > 0  # noqa: E731
    optional_number = lambda v: v is None or number(v)  # noqa: E731
    for i, b in enumerate(data["benchmarks"]):
        check_name(path, i, b)
        m = PAIRED_NAME.match(b["name"])
        if not m or b.get("run_type") == "aggregate":
            continue  # a row of no system (a kernel) is no part of a pair
        q, s, vs = m.group("question", "system", "vs")
        if vs is None:
            paired_field(path, b, "p50", positive, "a time")
            questions.setdefault(q, OrderedDict())[s] = b
            continue
        paired_field(path, b, "ratio", positive, "a positive ratio")
        paired_field(path, b, "saved_ns", number, "a number of ns")
        paired_field(path, b, "rounds", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                     "a count of rounds")
        for key in ("ratio_lo", "ratio_hi", "saved_lo", "saved_hi"):
            paired_field(path, b, key, optional_number, "a number", optional=True)
        paired_field(path, b, "p_value", lambda v: number(v) and 0 <= v <= 1, "a p-value", optional=True)
        paired_field(path, b, "verdict", lambda v: v in PAIRED_VERDICTS, "one of: " + ", ".join(PAIRED_VERDICTS),
                     optional=True)
        pairs.setdefault(q, OrderedDict())[s] = Pair(b["name"], q, s, vs, b)
        baselines.add(vs)
    if not pairs:
        raise BadInput("%s: no ratio row (NAME/system:S/vs:BASELINE): not a paired run (--systems)" % path)
    if len(baselines) != 1:
        raise BadInput("%s: ratio rows against %s: one baseline per paired run" % (path, ", ".join(sorted(baselines))))
    return PairedRun(path, questions, pairs, baselines.pop(), ctx)


def load_paired(path):
    return parse_paired(path, read(path))


def paired_files(folder):
    """OrderedDict bench -> path of BENCH_paired.json in a results folder."""
    return existing(folder, PAIRED_BENCHES, "_paired.json")


# run_all.sh --system's axes: each point a paired run of shm_transfer_bench of its own
AXIS_FILE = re.compile(r"^transfer_axis_(buffers|size|submit|threads)_(\d+)\.json$")
AXIS_POINT = OrderedDict((("buffers", "buffers"), ("size", "size_kb"), ("submit", "per_submit"),
                          ("threads", "threads")))  # an axis -> its point as a row's name says it


def axis_files(folder):
    """[(axis, point, path)] of a folder's axis files by axis and N; point as rows say: 'buffers:10'."""
    found = []
    for name in os.listdir(folder):
        m = AXIS_FILE.match(name)
        if m and os.path.isfile(os.path.join(folder, name)):
            found.append((list(AXIS_POINT).index(m.group(1)), int(m.group(2)), m.group(1), name))
    return [(axis, "%s:%d" % (AXIS_POINT[axis], n), os.path.join(folder, name)) for _, n, axis, name in sorted(found)]


def is_paired_file(path):
    """Does a results file hold a paired run's rows (a name with /system:...)?"""
    return os.path.isfile(path) and re.search(r'"name": *"[^"]*/system:[^"/]+/vs:', read(path)) is not None


def control_width(run, question):
    """The control's ratio interval width of a question (None without one)."""
    c = run.control_of(question)
    return c.hi - c.lo if c is not None and c.has_interval else None


def ratio_change(a_run, b_run, q, a, b):
    """'changed' when the intervals are apart and the ratio moved beyond either control's width."""
    if not (a.has_interval and b.has_interval):
        return "not assessed"
    noise = [control_width(a_run, q), control_width(b_run, q)]
    if None in noise:
        return "not assessed"
    apart = a.hi < b.lo or b.hi < a.lo
    return "changed" if apart and abs(b.ratio - a.ratio) > max(noise) else "within the noise"


MODEL, UPSTREAM = "mooncake", "mooncake_upstream"
# Each upstream system and the model it is held against (its run's baseline, docs/upstream.md).
UPSTREAMS = OrderedDict([(UPSTREAM, MODEL), ("flowipc_classic_upstream", "flowipc_classic"),
                         ("flowipc_jemalloc_upstream", "flowipc_jemalloc")])
MODEL_OFF = 0.25  # a model whose time is off upstream's by more than this share gets a line


def upstream_commit(run, upstream=UPSTREAM):
    """The commit(s) the run's upstream rows ran, from its notes, or None."""
    pattern = r"^mooncake_upstream: .* commit (\S+)" if upstream == UPSTREAM else \
        r"^%s: .* compiled from (flow .*) \(docs/upstream\.md\)" % re.escape(upstream)
    for note in run.ctx.get("notes") or []:
        m = re.match(pattern, str(note))
        if m:
            return m.group(1)
    return None


def upstream_of(run):
    """The upstream system held against the run's baseline, or None."""
    for upstream, model in UPSTREAMS.items():
        if run.baseline == model and any(upstream in by for by in run.pairs.values()):
            return upstream
    return None


def model_upstream(run):
    """[(question, model p50, upstream p50, Pair, control)] where the run also ran the model's
    upstream code; the Pair is model / upstream."""
    upstream = upstream_of(run)
    if upstream is None:
        return []
    out = []
    for q, by in run.pairs.items():
        if upstream in by:
            out.append((q, run.p50(q, run.baseline), run.p50(q, upstream), by[upstream], run.control_of(q)))
    return out


def buffers_said(run):
    """' Registered buffers: N (--num_segments).' of a transfer run, else ''."""
    m = re.search(r"(?:^| )num_segments=(\d+)", str(run.ctx.get("flags", "")))
    exe = str(run.ctx.get("executable", ""))
    return " Registered buffers: %s (--num_segments)." % m.group(1) if m and "transfer" in exe else ""


def model_upstream_lines(run):
    """The model-against-upstream table and a line per row off by more than MODEL_OFF; [] without."""
    rows = model_upstream(run)
    if not rows:
        return []
    upstream = upstream_of(run)
    commit = upstream_commit(run, upstream)
    whose = "Mooncake's own code (mooncake_upstream%s, " % (", commit " + commit if commit else "") \
        if upstream == UPSTREAM else "Flow-IPC's own code (%s%s, " % (upstream, ", " + commit if commit else "")
    out = ["Each covered row of the model (%s) against %s"
           "docs/upstream.md), measured paired in one process: model / upstream is the ratio row "
           "QUESTION/system:%s/vs:%s as it is (the median over rounds of the model's time / upstream's, "
           "95%% interval); above 1 the model is slower than upstream's code, below 1 faster. The A/A "
           "control's ratio is the run's noise.%s" % (run.baseline, whose, upstream, run.baseline,
                                                     buffers_said(run)),
           ""] + md_head(["row", "model", "upstream", "model / upstream [95%]", "control [95%]"])
    off = []
    for q, model, upstream, pair, control in rows:
        out.append(md_row([q, fmt(model) + " ns" if model else "-", fmt(upstream) + " ns" if upstream else "-",
                           fmt_ratio(pair), fmt_ratio(control) if control else "-"]))
        if abs(pair.ratio - 1) > MODEL_OFF:
            off.append("- %s: the model is off by more than %.0f%%: %.0f%% %s than upstream (model / upstream %s)"
                       % (q, MODEL_OFF * 100, abs(pair.ratio - 1) * 100, "slower" if pair.ratio > 1 else "faster",
                          fmt_ratio(pair)))
    out += [""] + (off or ["No model is off upstream's time by more than %.0f%%." % (MODEL_OFF * 100)])
    return out + [""]
