"""report.md of a folder of per-system files (older folders, --per-system)."""
import math
import os
import re
from collections import OrderedDict

from .files import BadInput, number
from .fmt import change_text, fmt_gain, fmt_p, fmt_pct, fmt_size, fmt_time, md_head, md_row
from .runs import Row, attach_total, folder_files, load, parts, split_key, unique
from .stats import ALPHA, MIN_REPETITIONS, PRACTICAL_CHANGE, TOO_FEW, verdicts
from .verdict_base import (ATTACH_TITLE, BARE_STEPS, BASE, BLOCK_STEPS, BLOCK_TITLE, BREAK_EVEN_HEAD, FLAVOURS,
                           QUESTION_SIZES_KB, REGISTRATION_TITLE, REQUEST_TITLE, TITLE, WORKLOAD_PARTS, counted,
                           glance_head, layers_legend, listed, machine_lines, not_run, one_off_line, parts_line,
                           plots_section, question_sizes, register_label, registration_legend, who, write_report)


REGISTER = re.compile(r"^shm_alloc/register/size_kb:(\d+)/buffers:(\d+)$")  # a deployment total
WORKLOAD = re.compile(r"^shm_transfer/workload/(?P<part>[^/]+)/(?P<what>model:.+)$")


class Cmp:
    """Mooncake's Row against one flavour's (b None: not measured) on one question."""

    def __init__(self, label, flavour, a, b, kb=None):
        self.label, self.flavour, self.a, self.b, self.kb = label, flavour, a, b, kb
        self.p, self.sig = None, "-"

    @property
    def base(self):
        return self.a.p50

    @property
    def other(self):
        return self.b.p50

    @property
    def saved(self):
        return self.base - self.other

    @property
    def share(self):
        return self.saved / self.base

    @property
    def matters(self):
        return abs(self.share) >= PRACTICAL_CHANGE

    def significance(self):
        reps = min(len(self.a.samples), len(self.b.samples))
        if self.sig == TOO_FEW:
            if reps == 1:
                return "one repetition: significance not assessed"
            return "%d repetitions: significance not assessed (%d needed)" % (reps, MIN_REPETITIONS)
        return "%s (p = %s)" % (self.sig, fmt_p(self.p))

    def verdict(self):
        """One word on the change: faster, slower, no practical difference, or why not."""
        if not self.matters:
            return "no practical difference"
        way = "faster" if self.saved > 0 else "slower"
        if self.sig == "yes":
            return way
        if self.sig == "no":
            return "%s by the medians (not significant)" % way
        return "%s by the medians" % way

    def cells(self):
        return [self.label, fmt_time(self.base), TITLE[self.flavour], fmt_time(self.other),
                fmt_gain(self.base / self.other), "%s (%s)" % (fmt_time(self.saved), fmt_pct(self.share)),
                self.significance(), "yes" if self.matters else "no practical difference"]

    def clause(self):
        """'SHM-classic **faster**: saves 60.0 ns (12%, significant (p = 0.001))'"""
        change = change_text(self.saved, None, None)
        sig = "" if self.sig == TOO_FEW else ", %s" % self.significance().replace(
            "yes (", "significant (").replace("no (", "not significant (")
        return "%s **%s**: %s (%s%s)" % (TITLE[self.flavour], self.verdict(), change,
                                         fmt_pct(abs(self.share)), sig)


def sentences(cmps, what, unit):
    """One line per question: Mooncake's figure, then each flavour's change."""
    out = []
    for label in unique(c.label for c in cmps):
        group = [c for c in cmps if c.label == label]
        line = "- %s (Mooncake %s %s): %s." % (what(group[0]), fmt_time(group[0].base), unit,
                                              "; ".join(c.clause() for c in group))
        untested = set(c.significance() for c in group if c.sig == TOO_FEW)
        out.append(line + "".join(" %s%s." % (u[0].upper(), u[1:]) for u in sorted(untested)))
    return out


def judge(cmps):
    """Significance of one table's comparisons, Holm's correction over the table."""
    done = [c for c in cmps if c.b is not None]
    for c, (p, sig) in zip(done, verdicts([(c.a, c.b) for c in done])):
        c.p, c.sig = p, sig
    return done


HEADER = ["question", "Mooncake", "Flow-IPC", "its figure", "gain", "saved (share)", "significant",
          "over %s?"]


def table(cmps):
    head = [h % fmt_pct(PRACTICAL_CHANGE) if "%" in h else h for h in HEADER]
    return md_head(head) + [md_row(c.cells()) for c in cmps]


def counter_row(row, counter):
    """A Row of another counter (p99, p999) of row's repetitions, or None."""
    values = [b.get(counter) for b in row.runs]
    if not values or not all(number(v) and v > 0 for v in values):
        return None
    out = Row(row.name + " " + counter)
    out.samples = [float(v) for v in values]
    return out


class Folder:
    """files[bench][system] = (rows, context) of a --system folder, each checked."""

    def __init__(self, path):
        self.path = path
        self.files = OrderedDict()
        for key, file in folder_files(path).items():
            bench, system = split_key(key)
            if system:
                self.files.setdefault(bench, OrderedDict())[system] = load(file)
        have = set(s for by in self.files.values() for s in by)
        if BASE not in have:
            raise BadInput("%s: no mooncake results (BENCH_mooncake.json): not a run_all.sh --system folder" % path)
        self.flavours = [f for f in FLAVOURS if f in have]
        if not self.flavours:
            raise BadInput("%s: no Flow-IPC results (BENCH_flowipc_*.json) beside mooncake's" % path)

    def rows(self, bench, system):
        return self.files.get(bench, {}).get(system, (OrderedDict(), {}))[0]

    def contexts(self):
        return [(b, s, ctx) for b, by in self.files.items() for s, (_, ctx) in by.items()]

    def ran(self, bench):
        return BASE in self.files.get(bench, {})


def sizes_of(rows, step, prefix):
    pat = re.compile(r"^%s/%s/size_kb:(\d+)$" % (re.escape(prefix), re.escape(step)))
    return sorted(int(m.group(1)) for m in (pat.match(n) for n in rows) if m)


def compare_rows(folder, bench, name, label, kb=None):
    base = folder.rows(bench, BASE).get(name)
    if base is None:
        return []
    return [Cmp(label, f, base, folder.rows(bench, f).get(name), kb) for f in folder.flavours]


def render(title, legend, cmps, what, unit="per operation"):
    """A question's section: its table, what is missing, and a line per question."""
    missing = [c for c in cmps if c.b is None]
    done = judge(cmps)
    out = ["## " + title, "", legend, ""]
    if done:
        out += table(done) + [""]
    if missing:
        out += ["Not measured for %s: %s." % (TITLE[c.flavour], c.label) for c in missing] + [""]
    if done:
        out += ["What this means:", ""] + sentences(done, what, unit)
    return out + [""]


def per_block(folder):
    title = BLOCK_TITLE
    if not folder.ran("allocation"):
        return not_run(title, "no allocation_mooncake.json in this folder"), []
    sizes = question_sizes(sizes_of(folder.rows("allocation", BASE), "alloc", "shm_alloc"))
    cmps = [c for kb in sizes for step in BLOCK_STEPS + BARE_STEPS
            for c in compare_rows(folder, "allocation", "shm_alloc/%s/size_kb:%d" % (step, kb),
                                  "%s, %s" % (step, fmt_size(kb)))]
    legend = layers_legend(folder) + \
        " Time per operation (rows shm_alloc/STEP/size_kb:N of allocation_SYSTEM.json)."
    return render(title, legend, cmps, lambda c: c.label), cmps


def registration(folder):
    title = REGISTRATION_TITLE
    if not folder.ran("allocation"):
        return not_run(title, "no allocation_mooncake.json in this folder"), []
    found = sorted(set((int(m.group(1)), int(m.group(2))) for m in
                       (REGISTER.match(n) for n in folder.rows("allocation", BASE)) if m))
    sizes = question_sizes(sorted(set(kb for kb, _ in found)))
    cmps = []
    for kb, n in found:
        if kb in sizes:
            for c in compare_rows(folder, "allocation", "shm_alloc/register/size_kb:%d/buffers:%d" % (kb, n),
                                  register_label(n, kb), kb):
                c.buffers = n
                cmps.append(c)
    return render(title, registration_legend(folder, " of allocation_SYSTEM.json"), cmps, lambda c: c.label,
                  "once"), cmps


def first_attach(folder):
    title = ATTACH_TITLE
    if not folder.ran("lookup"):
        return not_run(title, "no lookup_mooncake.json in this folder"), []
    cmps = []
    for name, row in folder.rows("lookup", BASE).items():
        middle, arg_name, arg, _ = parts(name)
        if middle != ["attach"] or attach_total(row) is None:
            continue
        others = [folder.rows("lookup", f).get(name) for f in folder.flavours]
        label = "attach, %s %s" % (arg, arg_name)
        cmps += [Cmp(label, f, attach_total(row), attach_total(o) if o else None)
                 for f, o in zip(folder.flavours, others)]
    if not cmps:
        return not_run(title, "lookup_mooncake.json has no attach row"), []
    counts = ["%s %g" % (TITLE[s], t.count) for s in [BASE] + folder.flavours
              for n, r in folder.rows("lookup", s).items() if parts(n)[0] == ["attach"]
              for t in [attach_total(r)] if t]
    legend = who(folder, dict(zip((BASE,) + FLAVOURS, (
        "shm_open + mmap of each buffer on its first request", "the pool",
        "each pool's lend: LendPool, the open and map, the Response")))) + \
        (" Figure: the receiver's total, attaches x p50 per attach (rows shm_lookup/attach/segments:N "
         "of lookup_SYSTEM.json; Flow-IPC's need --peer_process). Attaches: %s." % ", ".join(counts))
    return render(title, legend, cmps, lambda c: c.label, "once"), cmps


def per_request(folder):
    title = REQUEST_TITLE
    if not folder.ran("transfer"):
        return not_run(title, "no transfer_mooncake.json in this folder"), []
    measured = sizes_of(folder.rows("transfer", BASE), "request", "shm_transfer")
    if not measured:
        return not_run(title, "transfer_mooncake.json has no request row (a --system run writes them)"), []
    cmps = [c for kb in QUESTION_SIZES_KB if kb in measured
            for c in compare_rows(folder, "transfer", "shm_transfer/request/size_kb:%d" % kb,
                                  "request, %s" % fmt_size(kb), kb)]
    absent = [fmt_size(kb) for kb in QUESTION_SIZES_KB if kb not in measured]
    legend = ("The whole request: the request path both designs keep, each system's translation "
              "and the copy (rows shm_transfer/request/size_kb:N of transfer_SYSTEM.json).")
    if absent:
        legend += " Not measured in this run: %s (its sizes: %s to %s)." % (
            ", ".join(absent), fmt_size(measured[0]), fmt_size(measured[-1]))
    return render(title, legend, cmps, lambda c: "%s request" % fmt_size(c.kb), "per request"), cmps


def workload_rows(folder, system):
    """workload -> {part: Row} of a system's workload rows (transfer or workload file)."""
    out = OrderedDict()
    for bench in ("transfer", "workload"):
        for name, row in folder.rows(bench, system).items():
            m = WORKLOAD.match(name)
            if m:
                out.setdefault(m.group("what"), OrderedDict())[m.group("part")] = row
    return out


def workload_cmps(what, req, others):
    """The request's p50, p99 and p999 of one workload, Mooncake's against each flavour's."""
    cmps = []
    for counter in ("p50", "p99", "p999"):
        a = req if counter == "p50" else counter_row(req, counter)
        for f, rows in others.items():
            b = rows.get(what, {}).get("request")
            if a is not None:
                b = b if counter == "p50" or b is None else counter_row(b, counter)
                cmps.append(Cmp("%s request %s" % (what, counter), f, a, b))
    return cmps


def workload_share(what, system, parts):
    return parts_line(what, system, [(p, parts[p].p50 / parts["request"].p50) for p in WORKLOAD_PARTS if p in parts])


def workloads(folder):
    title = "Per KV-cache workload: per-request p50, p99, p99.9"
    base = workload_rows(folder, BASE)
    if not base:
        return ["## " + title, "", "The KV-cache workload was not run: no shm_transfer/workload/... rows "
                "in this folder.", ""], []
    others = OrderedDict((f, workload_rows(folder, f)) for f in folder.flavours)
    cmps, shares = [], []
    for what, parts in base.items():
        if "request" not in parts:
            continue
        cmps += workload_cmps(what, parts["request"], others)
        shares += [workload_share(what, s, rows[what]) for s, rows in [(BASE, base)] + list(others.items())
                   if "request" in rows.get(what, {})]
    legend = ("Requests replayed from the workload (rows shm_transfer/workload/PART/model:PRESET): per "
              "request, the request path, each descriptor's translation and copy.")
    out = render(title, legend, cmps, lambda c: c.label, "per request")
    return out[:-1] + ["", "Parts:", ""] + ["- " + s for s in shares] + [""], cmps


def cycle_saving(folder, flavour, kb):
    """Mooncake's alloc + free p50 minus the flavour's at kb (None if a row is missing)."""
    total = {}
    for s in (BASE, flavour):
        rows = folder.rows("allocation", s)
        got = [rows.get("shm_alloc/%s/size_kb:%d" % (step, kb)) for step in ("alloc", "free")]
        if None in got:
            return None
        total[s] = sum(r.p50 for r in got)
    return total[BASE] - total[flavour]


def saving_note(c):
    """What weakens a per-request saving a break-even rests on: ', not significant', ..."""
    notes = ([] if c.matters else ["under the %s threshold" % fmt_pct(PRACTICAL_CHANGE)]) + \
        (["not significant"] if c.sig == "no" else [])
    return "".join(", " + n for n in notes)


def buffers_line(c):
    """The flavour's one-off in Mooncake registrations: Mooncake pays per buffer, Flow-IPC per pool."""
    if c.saved >= 0 or c.base <= 0 or getattr(c, "buffers", None):  # a deployment total: no unit to convert
        return ""
    return ("\n  - in Mooncake's unit: one %s registration costs as much as {:,} Mooncake registrations of a "
            "%s buffer (Mooncake pays one per registered buffer, Flow-IPC one per pool).").format(
                int(math.ceil(c.other / c.base))) % (TITLE[c.flavour], fmt_size(c.kb))


def break_evens(folder, register, attach, request):
    out = [BREAK_EVEN_HEAD, "",
           "When a flavour's one-off cost exceeds Mooncake's, the number of operations whose saving "
           "pays the difference back (the difference / the saving per operation, rounded up); never "
           "when that operation saves nothing.", ""]
    register, attach, request = ([c for c in cs if c.b is not None] for cs in (register, attach, request))
    req = OrderedDict(((c.flavour, c.kb), ("requests of %s" % fmt_size(c.kb), c.saved, saving_note(c)))
                      for c in request)
    for c in register:
        againsts = []
        cyc = cycle_saving(folder, c.flavour, c.kb)
        if cyc is not None:
            againsts.append(("blocks of %s (alloc + free)" % fmt_size(c.kb), cyc, ""))
        if (c.flavour, c.kb) in req:
            againsts.append(req[(c.flavour, c.kb)])
        out.append(one_off_line(c, againsts) + buffers_line(c))
    for c in attach:
        out.append(one_off_line(c, [r for (f, _), r in req.items() if f == c.flavour]))
    if not (register or attach):
        out.append("No one-off cost measured for both Mooncake and a Flow-IPC flavour.")
    return out + [""]


def flags_of(ctx):
    return re.sub(r"\s*\bsystem=\S*", "", str(ctx.get("flags", ""))).strip()


def run_section(folder):
    ctxs = folder.contexts()
    out = ["## The run", ""]
    out += machine_lines(ctxs)
    dates = sorted(str(d) for _, _, c in ctxs for d in listed(c, "repetition_dates", "date") if d)
    loads = [la[0] for _, _, c in ctxs for la in listed(c, "repetition_load_avg", "load_avg")
             if isinstance(la, list) and la and number(la[0])]
    out.append("- Measured: %s to %s; load average (1 min) at the start of the runs: %s to %s" % (
        dates[0] if dates else "?", dates[-1] if dates else "?",
        "%g" % min(loads) if loads else "?", "%g" % max(loads) if loads else "?"))
    reps = []
    for bench, by in folder.files.items():
        counts = OrderedDict((s, max(len(r.samples) for r in rows.values())) for s, (rows, _) in by.items())
        same = len(set(counts.values())) == 1
        reps.append("%s %s" % (bench, next(iter(counts.values())) if same else
                               ", ".join("%s %d" % (TITLE[s], n) for s, n in counts.items())))
    inter = any(c.get("repetitions_interleaved") for _, _, c in ctxs)
    out.append("- Repetitions per system: %s%s" % ("; ".join(reps), (
        " (interleaved: each repetition a run of its own, the systems in turn)" if inter else "")))
    out.append("- Flags (each binary, system= aside):")
    for bench, by in folder.files.items():
        got = OrderedDict()
        for s, (_, ctx) in by.items():
            got.setdefault(flags_of(ctx), []).append(TITLE[s])
        for flags, systems in got.items():
            who = "" if len(got) == 1 else " (%s)" % ", ".join(systems)
            out.append("  - %s%s: `%s`" % (bench, who, flags.replace("`", "'")))
    return out + [""]


def intro(folder):
    return ["# shmbench verdict: Mooncake against Flow-IPC (%s)" % ", ".join(TITLE[f] for f in folder.flavours),
            "",
            "Generated by scripts/report.sh from the JSON files of `%s`: every figure below comes from "
            "them. A figure is the median of the repetitions' p50s (a row's p50 with one repetition). "
            "gain = Mooncake / Flow-IPC (above 1: Flow-IPC is faster); saved = Mooncake - Flow-IPC "
            "(negative: Flow-IPC costs more), share = saved / Mooncake's figure. significant: two-sided "
            "Mann-Whitney U-test on the repetitions' p50s, at %.2f over each table (Holm's correction), "
            "with at least %d repetitions of each system. Large enough to matter: a share of at least "
            "%s; under it, no practical difference."
            % (os.path.basename(os.path.abspath(folder.path)), ALPHA, MIN_REPETITIONS,
               fmt_pct(PRACTICAL_CHANGE)), ""]


def glance(folder, sections):
    """Per question, how many of its comparisons read faster, slower, no practical difference..."""
    out = glance_head(folder, "Each flavour's verdicts per question, counted over the tables below.")
    for lines, cmps in sections:
        cells = []
        for f in folder.flavours:
            words = [c.verdict() for c in cmps if c.flavour == f and c.b is not None]
            cells.append(counted(words) or ("not measured" if cmps else "not run"))
        out.append(md_row([lines[0][3:].split(":")[0]] + cells))
    return out + [""]


def system_report(path):
    """Writes DIR/report.md of a folder of per-system files."""
    folder = Folder(path)
    sections = [per_block(folder), registration(folder), first_attach(folder), per_request(folder),
                workloads(folder)]
    text = intro(folder) + glance(folder, sections) + run_section(folder)
    for lines, _ in sections:
        text += lines
    text += break_evens(folder, sections[1][1], sections[2][1], sections[3][1]) + plots_section(folder)
    return write_report(path, text)
