"""A folder's paired runs as verdicts: the design credited with the steps it changes, Holm's
correction per section, a section's table."""
import json
import os
import re
from collections import OrderedDict

from .files import BadInput, read
from .fmt import change_text, ends_text, fmt_p, fmt_pct, fmt_ratio, fmt_time, md_head, md_row
from .paired import CONTROL_SUFFIX, UPSTREAMS, load_paired, model_upstream, paired_files
from .stats import ALPHA, PRACTICAL_CHANGE, holm, paired_verdict
from .verdict_base import BASE, FLAVOURS, TITLE, question_sizes


class Verdict:
    """One flavour against Mooncake on one question: its Pair, control, times and verdict."""

    def __init__(self, label, flavour, pair, control, base, other):
        self.label, self.flavour, self.pair, self.control = label, flavour, pair, control
        self.base, self.other = base, other
        self.word = paired_verdict(pair, control)
        self.p_holm = None
        self.credit = None  # (the differing step's Pair, explained or not), where one is checked

    @property
    def saved(self):
        return self.pair.saved

    @property
    def counts(self):
        """Does the verdict count (a pair the section can judge)?"""
        return self.word not in ("too noisy", "not assessed")

    @property
    def tested(self):
        """The Pair the verdict rests on: the credited step's, else the row's own."""
        return self.credit[0] if self.credit and self.credit[1] else self.pair

    def cells(self, credit_column):
        p = self.pair
        cells = [self.label, fmt_time(self.base) if self.base else "-", TITLE.get(self.flavour, self.flavour),
                 fmt_time(self.other) if self.other else "-", fmt_ratio(p), saved_text(p)]
        if credit_column:
            cells.append(saved_text(self.credit[0]) if self.credit else "-")
        t = self.tested
        cells += ["%s (%s)" % (fmt_p(t.p), fmt_p(self.p_holm)) if t.p is not None else "-", self.word]
        return cells

    def clause(self):
        """'SHM-classic **faster**: saves 5.45 ns [3.93, 6.90] (ratio 1.10 [1.07, 1.13])'"""
        p = self.pair
        text = "%s **%s**: %s (ratio %s)" % (TITLE.get(self.flavour, self.flavour), self.word,
                                            pair_change(p), fmt_ratio(p))
        if self.credit:
            step = self.credit[0]
            text += "; %s %s %s %s%s%s" % (
                "the verdict rests on" if self.credit[1] else "credited to the design:", step_what(step),
                "saving," if step.saved >= 0 else "cost,", fmt_time(abs(step.saved)),
                ends_text(step.saved_lo, step.saved_hi),
                ", %s of the request" % fmt_pct(step.saved / self.base) if self.base else "")
        return text


def saved_text(p):
    return fmt_time(p.saved) + ends_text(p.saved_lo, p.saved_hi)


def pair_change(p):
    """change_text of a Pair's saved time."""
    return change_text(p.saved, p.saved_lo, p.saved_hi)


class PairedFolder:
    """The paired runs of a run_all.sh --system folder: runs[bench] = PairedRun."""

    def __init__(self, path):
        self.path = path
        self.runs = OrderedDict((b, load_paired(f)) for b, f in paired_files(path).items())
        bases = set(r.baseline for r in self.runs.values())
        # runs that each hold a model against its upstream code alone (flowipc_classic_upstream
        # against flowipc_classic) give the model-against-upstream tables alone
        upstream_only = self.runs and all(set(r.flavours()) <= set(UPSTREAMS) for r in self.runs.values())
        if bases != {BASE} and not upstream_only:
            raise BadInput("%s: paired runs against %s: the report compares against %s"
                             % (path, ", ".join(sorted(bases)), BASE))
        self.flavours = [f for f in FLAVOURS if any(f in r.flavours() for r in self.runs.values())]
        if not self.flavours and not any(model_upstream(r) for r in self.runs.values()):
            raise BadInput("%s: its paired runs hold no Flow-IPC flavour against mooncake" % path)
        self.control = BASE + CONTROL_SUFFIX
        self.loads = read_run_json(path)

    def verdicts(self, bench, question, label):
        """[Verdict] of each flavour on one question, then the control's (None: not measured)."""
        run = self.runs.get(bench)
        if run is None or question not in run.pairs:
            return None
        control = run.control_of(question)
        t = lambda s: run.p50(question, s)  # noqa: E731
        out = [Verdict(label, f, run.pairs[question][f], control, t(BASE), t(f))
               for f in self.flavours if f in run.pairs[question]]
        if control is not None:
            out.append(Verdict(label, self.control, control, control, t(BASE), t(self.control)))
        return out


def read_run_json(path):
    """run_all.sh's run.json: [(run name, load before, load after)] (1, 5, 15 min), [] without it."""
    f = os.path.join(path, "run.json")
    if not os.path.isfile(f):
        return []
    text = read(f)
    try:
        runs = json.loads(text).get("runs")
        out = [(str(r["name"]), [float(x) for x in r["load_before"]], [float(x) for x in r["load_after"]])
               for r in runs]
    except (ValueError, AttributeError, KeyError, TypeError):
        raise BadInput("%s: not run_all.sh's record of the runs (runs: name, load_before, load_after)" % f)
    return out


class Summed:
    """The translation and the request path as one credited step: sums of medians and ends (90%+)."""

    what = "the translation's and the request path's"

    def __init__(self, pairs):
        self.saved = sum(p.saved for p in pairs)
        ends = [(p.saved_lo, p.saved_hi) for p in pairs]
        known = all(None not in e for e in ends)
        self.saved_lo = sum(e[0] for e in ends) if known else None
        self.saved_hi = sum(e[1] for e in ends) if known else None
        ps = [p.p for p in pairs]
        self.p = None if None in ps else max(ps)


def step_what(step):
    """'the translation's' or, summed, 'the translation's and the request path's'."""
    return getattr(step, "what", "the translation's")


def differing_steps(folder, bench, translate, request_path):
    """flavour -> the step(s) its design changes: its translation (upstream_steps), plus its request
    path when that saving's interval excludes 0."""
    paths = step_pairs(folder, bench, request_path)
    out = OrderedDict()
    for f, t in upstream_steps(folder, bench, translate).items():
        rp = paths.get(f)
        differs = rp is not None and rp.saved_lo is not None and rp.saved_hi is not None and \
            (rp.saved_lo > 0 or rp.saved_hi < 0)
        out[f] = Summed([t, rp]) if differs else t
    return out


def credit(verdicts, steps):
    """A request's verdict rests on its differing step's saving unless the request saved another amount
    beyond the control's noise: then 'unexplained by the design'."""
    for v in verdicts:
        step = steps.get(v.flavour)
        if v.flavour not in FLAVOURS or step is None or not v.counts:
            continue
        noise = v.control.saved_width if v.control else None
        if noise is None:
            continue
        explained = abs(v.pair.saved - step.saved) <= noise
        v.credit = (step, explained)
        v.word = step_word(step, v.base) if explained else "unexplained by the design"


def step_word(step, base):
    """The verdict of a request its step explains, by the step's saving interval and share."""
    if step.saved_lo is None or step.saved_hi is None or step.saved_lo <= 0 <= step.saved_hi:
        return "within the noise"
    if not base or abs(step.saved / base) < PRACTICAL_CHANGE:
        return "no practical difference"
    return "faster" if step.saved > 0 else "slower"


def holm_section(verdicts):
    """Holm over the section's rows: a row not significant after it reads within the noise."""
    rows = [v for v in verdicts if v.flavour in FLAVOURS and v.counts and v.tested.p is not None]
    for v, adj in zip(rows, holm([v.tested.p for v in rows])):
        v.p_holm = adj
        if adj > ALPHA and v.word in ("faster", "slower", "no practical difference"):
            v.word = "within the noise"


PAIRED_HEADER = ["question", "Mooncake", "system", "its time", "ratio [95%]", "saved [95%]", "p (Holm)", "verdict"]


def paired_render(title, legend, groups, unit, credit_what=None):
    """A section: its table, the controls' lines, what is too noisy, a line per question."""
    out = ["## " + title, "", legend, ""]
    rows = [v for g in groups for v in g]
    holm_section(rows)
    if not rows:
        return out + ["Not measured in this run.", ""]
    if credit_what and any(isinstance(v.credit[0], Summed) for v in rows if v.credit):
        credit_what = "credited saving"  # the translation, with the request path where it differs
    credit_head = "%s [95%%]" % credit_what if credit_what == "credited saving" else "%s saves [95%%]" % credit_what
    head = PAIRED_HEADER[:6] + ([credit_head] if credit_what else []) + PAIRED_HEADER[6:]
    out += md_head(head) + [md_row(v.cells(bool(credit_what))) for v in rows]
    out += ["", "Noise of this run (Mooncake against itself, identical code):", ""]
    noisy = []
    for g in groups:
        c = [v for v in g if v.flavour not in FLAVOURS]
        if not c:
            out.append("- %s: no A/A control row: no verdict" % g[0].label)
            continue
        out.append("- %s: %s: A/A control, ratio %s, saved %s: the run's noise" % (
            g[0].label, c[0].flavour, fmt_ratio(c[0].pair), saved_text(c[0].pair)))
        if c[0].word == "too noisy":
            noisy.append(g[0].label)
    if noisy:
        out += ["", "**Too noisy for a verdict** on %s: the A/A control itself is off by more than %s, so this "
                "run cannot tell the designs apart there. For a quieter run: pin one CPU (run_all.sh pins the "
                "last allowed CPU by default; --cpu=N picks another), stop other work on the machine (the load "
                "average is in The run), and give it more rounds (leave --quick out)."
                % (", ".join(noisy), fmt_pct(PRACTICAL_CHANGE))]
    out += ["", "What this means:", ""]
    for g in groups:
        flav = [v for v in g if v.flavour in FLAVOURS]
        if flav:
            base = "Mooncake %s %s" % (fmt_time(g[0].base), unit) if g[0].base else "Mooncake's row not in the run"
            out.append("- %s (%s): %s." % (g[0].label, base, "; ".join(v.clause() for v in flav)))
    return out + [""]


def paired_questions(folder, bench, pattern, label, sizes=None):
    """[Verdict groups] of bench's questions matching pattern (group 1: size or count), file order."""
    run = folder.runs.get(bench)
    if run is None:
        return []
    groups = []
    for q in run.pairs:
        m = re.match(pattern, q)
        if m and (sizes is None or int(m.group(1)) in sizes):
            groups.append(folder.verdicts(bench, q, label(m)))
    return [g for g in groups if g]


def paired_sizes(folder, bench, pattern):
    run = folder.runs.get(bench)
    found = sorted(set(int(m.group(1)) for m in (re.match(pattern, q) for q in (run.pairs if run else [])) if m))
    return question_sizes(found) if found else []


def step_pairs(folder, bench, question):
    run = folder.runs.get(bench)
    return run.pairs.get(question, {}) if run else {}


def not_upstream(row):
    """Is a system row labelled not possible upstream (what the flavour's upstream cannot do)?"""
    return str(row.get("label", "")).startswith("not possible upstream")


def upstream_steps(folder, bench, question):
    """step_pairs but rows labelled not possible upstream, which never reach a verdict."""
    run = folder.runs.get(bench)
    rows = run.questions.get(question, {}) if run else {}
    return OrderedDict((f, p) for f, p in step_pairs(folder, bench, question).items()
                       if not not_upstream(rows.get(f, {})))
