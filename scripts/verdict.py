#!/usr/bin/python3
"""The verdict of a run_all.sh --system folder: Mooncake against each Flow-IPC flavour.

  verdict.py report DIR        writes DIR/report.md (every question the suite answers, with
                               its ratio or gain, time saved, significance and effect size)
                               and prints its path: of the paired runs (BENCH_paired.json)
                               when the folder has them, else of its per-system files
  verdict.py merge OUT REP...  merges one-repetition JSON files of one binary and system
                               (run_all.sh --system runs each repetition on its own, the
                               systems in turn) into OUT, as --repetitions=N would write it
A first argument --as=NAME starts error lines with NAME. A file that cannot be read as
results stops it: one line naming the file and what is wrong, exit 2. Files are written as
results.py's write_output writes them (a failed write: one line naming the file, exit 1).

Per-system files: every figure is results.py's, a row's p50, with repetitions the median of
the repetitions' p50s (p99 and p999 likewise); significance is its U-test with Holm's
correction over each table. Paired runs: the ratio rows' figures (docs/methodology.md,
"Paired runs"), Holm's correction over each section."""
import json
import math
import os
import re
import signal
import statistics
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results as R  # noqa: E402  (beside this file, wherever it is run from)

BASE = "mooncake"
FLAVOURS = ("flowipc_classic", "flowipc_jemalloc")
TITLE = {"mooncake": "Mooncake", "flowipc_classic": "SHM-classic", "flowipc_jemalloc": "SHM-jemalloc"}
QUESTION_SIZES_KB = (4, 64, 1024, 16384)  # the per-request sizes the report answers for
BLOCK_STEPS = ("alloc", "free", "alloc_reuse")  # the object layer's rows
BARE_STEPS = ("alloc_bare", "free_bare")  # the bare allocator's rows
REGISTER = re.compile(r"^shm_alloc/register/size_kb:(\d+)/buffers:(\d+)$")  # a deployment total
WORKLOAD = re.compile(r"^shm_transfer/workload/(?P<part>[^/]+)/(?P<what>model:.+)$")
WORKLOAD_PARTS = ("request_path", "translate", "copy")
# What each system places an object with, and the bare allocator under it (the per-block
# section's legend: the object layer's rows alloc, free, alloc_reuse; the bare rows alloc_bare,
# free_bare).
OBJECT_LAYER = {"mooncake": "OffsetBufferAllocator::allocate with its AllocatedBuffer (mooncake-store/src/allocator.cpp)",
                "flowipc_classic": "Pool_arena::construct with its boost::shared_ptr (ipc_shm, classic/pool_arena.hpp)",
                "flowipc_jemalloc": "Ipc_arena::construct with its std::shared_ptr (ipc_shm_arena_lend, "
                                    "jemalloc/ipc_arena.hpp)"}
ALLOCATOR = {"mooncake": "OffsetAllocator alone (mooncake-store/src/offset_allocator.cpp)",
             "flowipc_classic": "boost.interprocess rbtree_best_fit allocate/deallocate",
             "flowipc_jemalloc": "mallocx/dallocx"}
# What each system registers for N blocks of a size (the registration section's legend).
DEPLOYMENT = {"mooncake": "N buffers, each createSharedMemory (shm_open + ftruncate + mmap + close)",
              "flowipc_classic": "one pool of N blocks",
              "flowipc_jemalloc": "its arena and N mallocx, with the SHM pools its extent hooks create"}
PLOTS = ("paired", "gain", "transfer", "lookup", "allocation")


# ---------------------------------------------------------------- figures as text

def fmt_time(ns):
    """3 significant digits in ns, µs, ms or s: '60.2 ns', '1.22 µs', '-57.0 ns'."""
    a = abs(ns)
    unit, scale = next((u, s) for u, s in (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
                       if a >= s or u == "ns")
    v = ns / scale
    digits = 0 if v == 0 else max(0, 2 - int(math.floor(math.log10(abs(v)))))
    text = "%.*f" % (digits, v)
    if float(text) != 0 and abs(float(text)) >= 1000 and unit != "s":
        return fmt_time(math.copysign(1000 * scale, ns))  # 999.7 ns rounds to 1.00 µs
    return "%s %s" % (text, unit)


def fmt_gain(g):
    return "%.2gx" % g if g < 0.1 else "%.2fx" % g if g < 10 else "%.1fx" % g if g < 100 else "%.0fx" % g


def fmt_pct(share):
    p = 100 * share
    return "%.1f%%" % p if abs(p) < 10 else "%.0f%%" % p


def fmt_size(kb):
    return R.size_label(kb).replace("K", " KB").replace("M", " MB").replace("G", " GB")


# ---------------------------------------------------------------- one comparison

class Cmp:
    """Mooncake's row against one flavour's for one question: a and b are results.Row
    (b None: the flavour has no such row); kb: the question's size, if it has one."""

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
        return abs(self.share) >= R.PRACTICAL_CHANGE

    def significance(self):
        reps = min(len(self.a.samples), len(self.b.samples))
        if self.sig == R.TOO_FEW:
            if reps == 1:
                return "one repetition: significance not assessed"
            return "%d repetitions: significance not assessed (%d needed)" % (reps, R.MIN_REPETITIONS)
        return "%s (p = %s)" % (self.sig, R.fmt_p(self.p))

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
        if self.saved >= 0:
            change = "saves %s" % fmt_time(self.saved)
        else:
            change = "costs %s more" % fmt_time(-self.saved)
        sig = "" if self.sig == R.TOO_FEW else ", %s" % self.significance().replace(
            "yes (", "significant (").replace("no (", "not significant (")
        return "%s **%s**: %s (%s%s)" % (TITLE[self.flavour], self.verdict(), change,
                                         fmt_pct(abs(self.share)), sig)


def sentences(cmps, what, unit):
    """One line per question: Mooncake's figure, then each flavour's change."""
    out = []
    for label in OrderedDict.fromkeys(c.label for c in cmps):
        group = [c for c in cmps if c.label == label]
        line = "- %s (Mooncake %s %s): %s." % (what(group[0]), fmt_time(group[0].base), unit,
                                              "; ".join(c.clause() for c in group))
        untested = set(c.significance() for c in group if c.sig == R.TOO_FEW)
        out.append(line + "".join(" %s%s." % (u[0].upper(), u[1:]) for u in sorted(untested)))
    return out


def judge(cmps):
    """Significance of one table's comparisons, Holm's correction over the table."""
    done = [c for c in cmps if c.b is not None]
    for c, (p, sig) in zip(done, R.verdicts([(c.a, c.b) for c in done])):
        c.p, c.sig = p, sig
    return done


HEADER = ["question", "Mooncake", "Flow-IPC", "its figure", "gain", "saved (share)", "significant",
          "over %s?"]


def table(cmps):
    head = [h % fmt_pct(R.PRACTICAL_CHANGE) if "%" in h else h for h in HEADER]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.cells()) + " |" for c in cmps]
    return lines


def counter_row(row, counter):
    """A results.Row of another counter (p99, p999) of row's repetitions, or None."""
    values = [b.get(counter) for b in row.runs]
    if not values or not all(R.number(v) and v > 0 for v in values):
        return None
    out = R.Row(row.name + " " + counter)
    out.samples = [float(v) for v in values]
    return out


# ---------------------------------------------------------------- the folder

class Folder:
    """The JSON files of a run_all.sh --system folder, each read by results.py's checked
    reader: files[bench][system] = (rows, context)."""

    def __init__(self, path):
        self.path = path
        self.files = OrderedDict()
        for key, file in R.folder_files(path).items():
            bench, system = R.split_key(key)
            if system:
                self.files.setdefault(bench, OrderedDict())[system] = R.load(file)
        have = set(s for by in self.files.values() for s in by)
        if BASE not in have:
            raise R.BadInput("%s: no mooncake results (BENCH_mooncake.json): not a run_all.sh --system folder" % path)
        self.flavours = [f for f in FLAVOURS if f in have]
        if not self.flavours:
            raise R.BadInput("%s: no Flow-IPC results (BENCH_flowipc_*.json) beside mooncake's" % path)

    def rows(self, bench, system):
        return self.files.get(bench, {}).get(system, (OrderedDict(), {}))[0]

    def contexts(self):
        return [(b, s, ctx) for b, by in self.files.items() for s, (_, ctx) in by.items()]

    def ran(self, bench):
        return BASE in self.files.get(bench, {})


def sizes_of(rows, step, prefix):
    pat = re.compile(r"^%s/%s/size_kb:(\d+)$" % (re.escape(prefix), re.escape(step)))
    return sorted(int(m.group(1)) for m in (pat.match(n) for n in rows) if m)


def question_sizes(measured):
    """The question sizes measured, else the smallest and largest measured."""
    sizes = [s for s in QUESTION_SIZES_KB if s in measured]
    return sizes or sorted(set(measured[:1] + measured[-1:]))


def who(folder, what):
    """'Mooncake: X; SHM-classic: Y.' of the systems in the folder (what: Mooncake's, then
    each flavour's of FLAVOURS)."""
    systems = (BASE,) + FLAVOURS
    return "; ".join("%s: %s" % (TITLE[s], w) for s, w in zip(systems, what)
                     if s == BASE or s in folder.flavours) + "."


def compare_rows(folder, bench, name, label, kb=None):
    base = folder.rows(bench, BASE).get(name)
    if base is None:
        return []
    return [Cmp(label, f, base, folder.rows(bench, f).get(name), kb) for f in folder.flavours]


# ---------------------------------------------------------------- the questions

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


def not_run(title, why):
    return ["## " + title, "", "Not run: %s." % why, ""]


def layers_legend(folder):
    """Both layers of the per-block section, per system, with the upstream function each row times."""
    return ("Object layer (rows alloc, free, alloc_reuse; the verdict): " +
            who(folder, tuple(OBJECT_LAYER[s] for s in (BASE,) + FLAVOURS)) +
            " Bare allocator (rows alloc_bare, free_bare; stated beside it): " +
            who(folder, tuple(ALLOCATOR[s] for s in (BASE,) + FLAVOURS)))


def per_block(folder):
    title = "Per block: an object inside registered memory (object layer), and the bare allocator under it"
    if not folder.ran("allocation"):
        return not_run(title, "no allocation_mooncake.json in this folder"), []
    sizes = question_sizes(sizes_of(folder.rows("allocation", BASE), "alloc", "shm_alloc"))
    cmps = [c for kb in sizes for step in BLOCK_STEPS + BARE_STEPS
            for c in compare_rows(folder, "allocation", "shm_alloc/%s/size_kb:%d" % (step, kb),
                                  "%s, %s" % (step, fmt_size(kb)))]
    legend = layers_legend(folder) + \
        " Time per operation (rows shm_alloc/STEP/size_kb:N of allocation_SYSTEM.json)."
    return render(title, legend, cmps, lambda c: c.label), cmps


def register_label(buffers, kb):
    """'register 100 buffers, 64 KB': the size after the comma, as the per-block labels have it."""
    return "register %d buffers, %s" % (buffers, fmt_size(kb))


def registration_legend(folder, where):
    return ("Deployment totals: the whole cost of making N blocks of one size usable, for N = 10, 100, 1000. " +
            who(folder, tuple(DEPLOYMENT[s] for s in (BASE,) + FLAVOURS)) +
            " Teardown untimed; no page is touched (rows shm_alloc/register/size_kb:S/buffers:N%s)." % where)


def registration(folder):
    title = "Registration: making N blocks usable, deployment totals (one-off)"
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
    title = "First attach: what the receiver pays before its first request (one-off)"
    if not folder.ran("lookup"):
        return not_run(title, "no lookup_mooncake.json in this folder"), []
    cmps = []
    for name, row in folder.rows("lookup", BASE).items():
        middle, arg_name, arg, _ = R.parts(name)
        if middle != ["attach"] or R.attach_total(row) is None:
            continue
        others = [folder.rows("lookup", f).get(name) for f in folder.flavours]
        label = "attach, %s %s" % (arg, arg_name)
        cmps += [Cmp(label, f, R.attach_total(row), R.attach_total(o) if o else None)
                 for f, o in zip(folder.flavours, others)]
    if not cmps:
        return not_run(title, "lookup_mooncake.json has no attach row"), []
    counts = ["%s %g" % (TITLE[s], t.count) for s in [BASE] + folder.flavours
              for n, r in folder.rows("lookup", s).items() if R.parts(n)[0] == ["attach"]
              for t in [R.attach_total(r)] if t]
    legend = who(folder, ("shm_open + mmap of each buffer on its first request", "the pool",
                          "each pool's lend: LendPool, the open and map, the Response")) + \
        (" Figure: the receiver's total, attaches x p50 per attach (rows shm_lookup/attach/segments:N "
         "of lookup_SYSTEM.json; Flow-IPC's need --peer_process). Attaches: %s." % ", ".join(counts))
    return render(title, legend, cmps, lambda c: c.label, "once"), cmps


def per_request(folder):
    title = "Per request at 4 KB, 64 KB, 1 MB, 16 MB"
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
    """OrderedDict workload -> {part: Row} of a system's workload rows (transfer file or a
    workload file of their own)."""
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
    """'model:X, Mooncake: request_path 54%, translate 2.1%, copy 38% of the request p50.'"""
    return "%s, %s: %s of the request p50." % (what, TITLE[system], ", ".join(
        "%s %s" % (p, fmt_pct(parts[p].p50 / parts["request"].p50)) for p in WORKLOAD_PARTS if p in parts))


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


def break_even(extra, saving):
    """'after N' operations, 'never', or 'at once' (no extra one-off to pay back)."""
    if extra <= 0:
        return "at once"
    if saving <= 0:
        return "never"
    return "after {:,}".format(int(math.ceil(extra / saving)))


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


def one_off_line(c, againsts):
    """A line: the flavour's extra one-off and when each per-operation saving pays it back."""
    extra = -c.saved
    if extra <= 0:
        than = "the same as Mooncake's" if extra == 0 else "%s less than Mooncake's" % fmt_time(-extra)
        return "- %s, %s: costs %s: nothing to pay back." % (c.label, TITLE[c.flavour], than)
    parts = []
    for what, saving, note in againsts:
        if saving < 0:
            parts.append("never by %s (%s more each%s)" % (what, fmt_time(-saving), note))
        elif saving == 0:
            parts.append("never by %s (the same each%s)" % (what, note))
        else:
            parts.append("%s %s (%s saved each%s)" % (break_even(extra, saving), what, fmt_time(saving), note))
    return "- %s, %s: costs %s more than Mooncake's; paid back: %s." % (
        c.label, TITLE[c.flavour], fmt_time(extra),
        "; ".join(parts) if parts else "by nothing measured in this folder")


def saving_note(c):
    """What weakens a per-request saving a break-even rests on: ', not significant', ..."""
    notes = ([] if c.matters else ["under the %s threshold" % fmt_pct(R.PRACTICAL_CHANGE)]) + \
        (["not significant"] if c.sig == "no" else [])
    return "".join(", " + n for n in notes)


def buffers_line(c):
    """Mooncake pays its registration per buffer, Flow-IPC per pool: the flavour's one-off in
    Mooncake registrations, so a deployment can set it against the buffers it registers."""
    if c.saved >= 0 or c.base <= 0 or getattr(c, "buffers", None):  # a deployment total: no unit to convert
        return ""
    return ("\n  - in Mooncake's unit: one %s registration costs as much as {:,} Mooncake registrations of a "
            "%s buffer (Mooncake pays one per registered buffer, Flow-IPC one per pool).").format(
                int(math.ceil(c.other / c.base))) % (TITLE[c.flavour], fmt_size(c.kb))


def break_evens(folder, register, attach, request):
    out = ["## Break-even of the one-off costs", "",
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


# ---------------------------------------------------------------- the run, the plots

def distinct(ctxs, key):
    """OrderedDict value -> [file keys] of a context key over the files (absent: left out)."""
    out = OrderedDict()
    for bench, system, ctx in ctxs:
        if key in ctx:
            out.setdefault(str(ctx[key]), []).append("%s_%s" % (bench, system))
    return out


def one_or_each(ctxs, key, show=lambda v: v):
    """A context value, or each value with the files it came from when they differ."""
    got = distinct(ctxs, key)
    if len(got) <= 1:
        return show(next(iter(got), "not recorded"))
    return "DIFFERS: " + "; ".join("%s (%s)" % (show(v), ", ".join(files)) for v, files in got.items())


def flags_of(ctx):
    return re.sub(r"\s*\bsystem=\S*", "", str(ctx.get("flags", ""))).strip()


def listed(ctx, each, one):
    """A context's list of each repetition's value (merged runs), else its one value; a
    list of another type is no list (a crafted file must not stop the report)."""
    values = ctx.get(each)
    return values if isinstance(values, list) and values else [ctx.get(one)]


def machine_lines(ctxs):
    """The run's machine and build, one line each, from the files' contexts."""
    return ["- Machine: %s; CPU %s, %s cpus, %s MHz; kernel %s; clocksource %s; governor %s; "
            "transparent hugepages %s, shmem %s" % tuple(one_or_each(ctxs, k) for k in (
                "host_name", "cpu_model", "num_cpus", "mhz_per_cpu", "kernel", "clocksource",
                "cpu_governor", "thp_enabled", "thp_shmem_enabled")),
            "- Build: commit %s; %s, %s, %s" % tuple(one_or_each(ctxs, k) for k in (
                "git_commit", "build_type", "compiler", "build_flags"))]


def run_section(folder):
    ctxs = folder.contexts()
    out = ["## The run", ""]
    out += machine_lines(ctxs)
    dates = sorted(str(d) for _, _, c in ctxs for d in listed(c, "repetition_dates", "date") if d)
    loads = [la[0] for _, _, c in ctxs for la in listed(c, "repetition_load_avg", "load_avg")
             if isinstance(la, list) and la and R.number(la[0])]
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


def plots_section(folder):
    names = [p + ".png" for p in PLOTS if os.path.isfile(os.path.join(folder.path, p + ".png"))]
    names += sorted(n for n in os.listdir(folder.path) if n.endswith(".png") and n not in names)
    out = ["## Plots", ""]
    if not names:
        return out + ["No plots in this folder: ./scripts/plot.sh on it makes them.", ""]
    from urllib.parse import quote
    for n in names:
        out += ["![%s](%s)" % (n[:-4].replace("]", ""), quote(n)), ""]
    return out


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
            % (os.path.basename(os.path.abspath(folder.path)), R.ALPHA, R.MIN_REPETITIONS,
               fmt_pct(R.PRACTICAL_CHANGE)), ""]


def glance(folder, sections):
    """Per question, how many of its comparisons read faster, slower, no practical difference..."""
    out = ["## At a glance", "", "Each flavour's verdicts per question, counted over the tables below.", "",
           "| question | %s |" % " | ".join(TITLE[f] for f in folder.flavours),
           "|---|" + "---|" * len(folder.flavours)]
    for lines, cmps in sections:
        cells = []
        for f in folder.flavours:
            words = [c.verdict() for c in cmps if c.flavour == f and c.b is not None]
            cells.append("; ".join("%s %d" % (w, words.count(w)) for w in OrderedDict.fromkeys(words)) or
                         ("not measured" if cmps else "not run"))
        out.append("| %s | %s |" % (lines[0][3:].split(":")[0], " | ".join(cells)))
    return out + [""]


def report(path):
    if R.paired_files(path):  # run_all.sh --system writes paired runs; older folders per-system files
        return paired_report(path)
    folder = Folder(path)
    sections = [per_block(folder), registration(folder), first_attach(folder), per_request(folder),
                workloads(folder)]
    text = intro(folder) + glance(folder, sections) + run_section(folder)
    for lines, _ in sections:
        text += lines
    text += break_evens(folder, sections[1][1], sections[2][1], sections[3][1]) + plots_section(folder)
    return write_report(path, text)


def write_report(path, text):
    """Writes DIR/report.md whole (a partial file renamed) and prints its path."""
    out = os.path.join(path, "report.md")
    R.write_output(out, re.sub(r"\n{3,}", "\n\n", "\n".join(text)).rstrip("\n") + "\n")
    print(out)
    return 0


# ---------------------------------------------------------------- paired runs

class Verdict:
    """One flavour against Mooncake on one question of a paired run: its Pair, the
    question's control, Mooncake's and the flavour's times (their system rows' p50), the
    binary's rule's verdict, then what the section makes of it (Holm, the design's credit)."""

    def __init__(self, label, flavour, pair, control, base, other):
        self.label, self.flavour, self.pair, self.control = label, flavour, pair, control
        self.base, self.other = base, other
        self.word = R.paired_verdict(pair, control)
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
        """The Pair the verdict rests on: the credited step's where the request's saving is
        its step's (credit), else the row's own."""
        return self.credit[0] if self.credit and self.credit[1] else self.pair

    def cells(self, credit_column):
        p = self.pair
        cells = [self.label, fmt_time(self.base) if self.base else "-", TITLE.get(self.flavour, self.flavour),
                 fmt_time(self.other) if self.other else "-", R.fmt_ratio(p), saved_text(p)]
        if credit_column:
            cells.append(saved_text(self.credit[0]) if self.credit else "-")
        t = self.tested
        cells += ["%s (%s)" % (R.fmt_p(t.p), R.fmt_p(self.p_holm)) if t.p is not None else "-", self.word]
        return cells

    def clause(self):
        """'SHM-classic **faster**: saves 5.45 ns [3.93, 6.90] (ratio 1.10 [1.07, 1.13])'"""
        p = self.pair
        if p.saved >= 0:
            change = "saves %s%s" % (fmt_time(p.saved), interval_text(p))
        else:
            change = "costs %s more%s" % (fmt_time(-p.saved), interval_text(p, -1))
        text = "%s **%s**: %s (ratio %s)" % (TITLE.get(self.flavour, self.flavour), self.word, change,
                                            R.fmt_ratio(p))
        if self.credit:
            step = self.credit[0]
            text += "; %s %s %s %s%s%s" % (
                "the verdict rests on" if self.credit[1] else "credited to the design:", step_what(step),
                "saving," if step.saved >= 0 else "cost,", fmt_time(abs(step.saved)), interval_text(step),
                ", %s of the request" % fmt_pct(step.saved / self.base) if self.base else "")
        return text


def interval_text(p, sign=1):
    """' [3.93 ns, 6.90 ns]' of a Pair's saved time (sign -1: of the time it costs), ''
    without one."""
    if p.saved_lo is None or p.saved_hi is None:
        return ""
    return " [%s, %s]" % tuple(fmt_time(sign * v) for v in sorted((p.saved_lo, p.saved_hi), key=lambda v: sign * v))


def saved_text(p):
    return fmt_time(p.saved) + interval_text(p)


class PairedFolder:
    """The paired runs of a run_all.sh --system folder: runs[bench] = results.PairedRun."""

    def __init__(self, path):
        self.path = path
        self.runs = OrderedDict((b, R.load_paired(f)) for b, f in R.paired_files(path).items())
        bases = set(r.baseline for r in self.runs.values())
        if bases != {BASE}:
            raise R.BadInput("%s: paired runs against %s: the report compares against %s"
                             % (path, ", ".join(sorted(bases)), BASE))
        self.flavours = [f for f in FLAVOURS if any(f in r.flavours() for r in self.runs.values())]
        if not self.flavours and not any(R.model_upstream(r) for r in self.runs.values()):
            raise R.BadInput("%s: its paired runs hold no Flow-IPC flavour against mooncake" % path)
        self.control = BASE + R.CONTROL_SUFFIX
        self.loads = read_run_json(path)

    def verdicts(self, bench, question, label):
        """[Verdict] of each flavour on one question, then the control's own (None when the
        question was not measured)."""
        run = self.runs.get(bench)
        if run is None or question not in run.pairs:
            return None
        control = run.control_of(question)
        times = run.questions.get(question, {})
        t = lambda s: times[s]["p50"] if s in times else None  # noqa: E731
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
    text = R.read(f)
    try:
        runs = json.loads(text).get("runs")
        out = [(str(r["name"]), [float(x) for x in r["load_before"]], [float(x) for x in r["load_after"]])
               for r in runs]
    except (ValueError, AttributeError, KeyError, TypeError):
        raise R.BadInput("%s: not run_all.sh's record of the runs (runs: name, load_before, load_after)" % f)
    return out


class Summed:
    """The steps a design changes, summed as one credited step: the translation and, where
    its request path walks other registrations (a pool, not N buffers) and that measurably
    differs, the request path. Its saving is the sum of the medians; its interval the sum of
    the intervals (each holds its median with 95%, the sum the sum's with at least 90%); its
    p the largest of the steps' (the sum is credited only as far as each step is)."""

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
    """flavour -> the step(s) its design changes inside a request: its translation (where
    upstream allows it: upstream_steps), plus its request path when that differs from
    Mooncake's beyond 0 (its interval excludes 0: the engine walks the flavour's pools, not
    Mooncake's buffers); questions translate and request_path of the run bench."""
    paths = step_pairs(folder, bench, request_path)
    out = OrderedDict()
    for f, t in upstream_steps(folder, bench, translate).items():
        rp = paths.get(f)
        differs = rp is not None and rp.saved_lo is not None and rp.saved_hi is not None and \
            (rp.saved_lo > 0 or rp.saved_hi < 0)
        out[f] = Summed([t, rp]) if differs else t
    return out


def credit(verdicts, steps):
    """Credits the design with what differs, no more: where both designs run the same code
    around a step (the request path, the copy), the verdict rests on the step's saving
    (steps: flavour -> Pair) as a share of Mooncake's whole request (step_word), and a
    whole-request saving that differs from the step's by more than the control's noise (the
    width of its saved interval) is not the design's: 'unexplained by the design', its
    verdict does not count. Not called noise: a stable gap with a tight interval is more
    likely the step costing another amount inside the request than alone."""
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
    """The verdict of a request whose saving its differing step explains: within the noise
    when the step's saving interval holds 0; no practical difference under 5% of Mooncake's
    request; else faster or slower by the step."""
    if step.saved_lo is None or step.saved_hi is None or step.saved_lo <= 0 <= step.saved_hi:
        return "within the noise"
    if not base or abs(step.saved / base) < R.PRACTICAL_CHANGE:
        return "no practical difference"
    return "faster" if step.saved > 0 else "slower"


def holm_section(verdicts):
    """Holm's correction over the section's rows (the control's aside): a row that is not
    significant after it reads within the noise, whatever its interval says alone."""
    rows = [v for v in verdicts if v.flavour in FLAVOURS and v.counts and v.tested.p is not None]
    for v, adj in zip(rows, R.holm([v.tested.p for v in rows])):
        v.p_holm = adj
        if adj > R.ALPHA and v.word in ("faster", "slower", "no practical difference"):
            v.word = "within the noise"


PAIRED_HEADER = ["question", "Mooncake", "system", "its time", "ratio [95%]", "saved [95%]", "p (Holm)", "verdict"]


def paired_render(title, legend, groups, unit, credit_what=None):
    """A section: its table (each question's flavours and control), the control's line
    per question, what is too noisy and how to get a quieter run, a line per question."""
    out = ["## " + title, "", legend, ""]
    rows = [v for g in groups for v in g]
    if not rows:
        return out + ["Not measured in this run.", ""]
    if credit_what and any(isinstance(v.credit[0], Summed) for v in rows if v.credit):
        credit_what = "credited saving"  # the translation, with the request path where it differs
    credit_head = "%s [95%%]" % credit_what if credit_what == "credited saving" else "%s saves [95%%]" % credit_what
    head = PAIRED_HEADER[:6] + ([credit_head] if credit_what else []) + PAIRED_HEADER[6:]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(v.cells(bool(credit_what))) + " |" for v in rows]
    out += ["", "Noise of this run (Mooncake against itself, identical code):", ""]
    noisy = []
    for g in groups:
        c = [v for v in g if v.flavour not in FLAVOURS]
        if not c:
            out.append("- %s: no A/A control row: no verdict" % g[0].label)
            continue
        out.append("- %s: %s: A/A control, ratio %s, saved %s: the run's noise" % (
            g[0].label, c[0].flavour, R.fmt_ratio(c[0].pair), saved_text(c[0].pair)))
        if c[0].word == "too noisy":
            noisy.append(g[0].label)
    if noisy:
        out += ["", "**Too noisy for a verdict** on %s: the A/A control itself is off by more than %s, so this "
                "run cannot tell the designs apart there. For a quieter run: pin one CPU (run_all.sh pins the "
                "last allowed CPU by default; --cpu=N picks another), stop other work on the machine (the load "
                "average is in The run), and give it more rounds (leave --quick out)."
                % (", ".join(noisy), fmt_pct(R.PRACTICAL_CHANGE))]
    out += ["", "What this means:", ""]
    for g in groups:
        flav = [v for v in g if v.flavour in FLAVOURS]
        if flav:
            base = "Mooncake %s %s" % (fmt_time(g[0].base), unit) if g[0].base else "Mooncake's row not in the run"
            out.append("- %s (%s): %s." % (g[0].label, base, "; ".join(v.clause() for v in flav)))
    return out + [""]


def paired_questions(folder, bench, pattern, label, sizes=None):
    """[Verdict groups] of the questions of bench whose name matches pattern (its first
    group the size in KB or the count), labelled by label(match), in file order (sizes:
    only those)."""
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


def allocation_section(folder, title, pattern, label, legend, unit, sizes):
    """A section of allocation_paired.json's questions (pattern: their names, its group the
    size in KB), Holm-corrected over its rows."""
    if "allocation" not in folder.runs:
        return not_run(title, "no allocation_paired.json in this folder"), []
    groups = paired_questions(folder, "allocation", pattern, label, sizes(pattern))
    holm_section([v for g in groups for v in g])
    return paired_render(title, legend, groups, unit), groups


def paired_block(folder):
    return allocation_section(
        folder, "Per block: an object inside registered memory (object layer), and the bare allocator under it",
        r"^shm_alloc/(?:alloc|free|alloc_reuse|alloc_bare|free_bare)/size_kb:(\d+)$",
        lambda m: "%s, %s" % (m.group(0).split("/")[1], fmt_size(int(m.group(1)))),
        layers_legend(folder) + " Per size, the verdict is a block's alloc + free at the object layer, the bare "
        "allocator's alloc_bare + free_bare beside it; time per operation (rows shm_alloc/STEP/size_kb:N of "
        "allocation_paired.json).",
        "per operation", lambda pat: paired_sizes(folder, "allocation", pat))


def paired_registration(folder):
    return allocation_section(
        folder, "Registration: making N blocks usable, deployment totals (one-off)",
        r"^shm_alloc/register/size_kb:(\d+)/buffers:(\d+)$",
        lambda m: register_label(int(m.group(2)), int(m.group(1))),
        registration_legend(folder, " of allocation_paired.json"), "once",
        lambda pat: paired_sizes(folder, "allocation", pat))


def paired_attach(folder):
    title = "First attach: what the receiver pays before its first request (one-off)"
    if "lookup" not in folder.runs:
        return not_run(title, "no lookup_paired.json in this folder"), []
    groups = paired_questions(folder, "lookup", r"^shm_lookup/attach/segments:(\d+)$",
                              lambda m: "attach, %s segments" % m.group(1))
    legend = ("The receiver's whole first attach per round (rows shm_lookup/attach/segments:N of "
              "lookup_paired.json, measured with --peer_process): Mooncake opens and maps each buffer on "
              "its first request, SHM-classic its one pool (no message: its name is the session's); "
              "the ratio is of these totals.")
    if "flowipc_jemalloc" in folder.flavours:
        legend += (" SHM-jemalloc's total is its session's lend of every pool to the receiver: LendArena, "
                   "then per pool the LendPool message, the receiver's open and map, its Response back, "
                   "each a round trip between the two processes.")
    holm_section([v for g in groups for v in g])
    return paired_render(title, legend, groups, "once"), groups


def step_pairs(folder, bench, question):
    run = folder.runs.get(bench)
    return run.pairs.get(question, {}) if run else {}


NOT_UPSTREAM = "not possible upstream"  # a row's label: what the flavour's upstream cannot do


def upstream_steps(folder, bench, question):
    """step_pairs of the flavours whose step is possible upstream: a row labelled not possible
    upstream (SHM-jemalloc's to_address: its borrowers map pools read-only) never reaches a
    verdict, not even as a credited step."""
    run = folder.runs.get(bench)
    rows = run.questions.get(question, {}) if run else {}
    return OrderedDict((f, p) for f, p in step_pairs(folder, bench, question).items()
                       if not str(rows.get(f, {}).get("label", "")).startswith(NOT_UPSTREAM))


def write_path_legend(folder):
    """What SHM-jemalloc's request stands for, where it runs."""
    if "flowipc_jemalloc" not in folder.flavours:
        return ""
    return (" SHM-jemalloc cannot take Mooncake's one-sided write (its borrowers map lent pools read-only: "
            "ipc_shm_arena_lend, borrower_shm_pool_collection.cpp, open_shm_pool), so its request is its write "
            "path: the request path around construct in its own arena, the write, lend, the handle message to a "
            "borrower process, borrow, release, the return message and the free. Only the request path is "
            "shared, so its verdict rests on its whole request; its translate row (to_address) is not possible "
            "upstream and reaches no verdict. A reader that needs the bytes in its own buffer adds its copy_out "
            "row.")


def paired_request(folder):
    title = "Per request at 4 KB, 64 KB, 1 MB, 16 MB"
    if "transfer" not in folder.runs:
        return not_run(title, "no transfer_paired.json in this folder"), []
    groups, absent = [], []
    for kb in QUESTION_SIZES_KB:
        g = folder.verdicts("transfer", "shm_transfer/request/size_kb:%d" % kb, "%s request" % fmt_size(kb))
        if not g:
            absent.append(fmt_size(kb))
            continue
        credit(g, differing_steps(folder, "transfer", "shm_transfer/translate/size_kb:%d" % kb,
                                  "shm_transfer/request_path/size_kb:%d" % kb))
        groups.append(g)
    holm_section([v for g in groups for v in g])
    legend = ("The whole request: the request path both designs keep, each system's translation and the copy "
              "(rows shm_transfer/request/size_kb:N of transfer_paired.json). The translation differs (rows "
              "shm_transfer/translate/size_kb:N), and so does the request path where it measurably walks the "
              "flavour's pools instead of Mooncake's N buffers (rows shm_transfer/request_path/size_kb:N: TENT's "
              "findBuffer over the registrations each design makes); the design is credited with those steps' "
              "saving, summed, no more. A whole-request saving that differs from it by more than the A/A "
              "control's noise (the width of its saved interval) reads \"unexplained by the design\" (the same "
              "code around those steps cost another amount: noise, or a step costing more or less inside the "
              "request than timed alone) and is not credited. Where the request's saving is the steps', the "
              "verdict rests on their saving as a share of Mooncake's request (5% or more: faster or slower), "
              "and p is theirs (summed: the larger of the two)." + write_path_legend(folder))
    if absent:
        legend += " Not measured in this run: %s." % ", ".join(absent)
    return paired_render(title, legend, groups, "per request", "translation"), groups


def paired_workload(folder):
    title = "Per KV-cache workload: per request"
    pat = r"^shm_transfer/workload/request/(model:.+)$"
    run = folder.runs.get("workload") or folder.runs.get("transfer")
    bench = "workload" if "workload" in folder.runs else "transfer"
    groups = []
    if run is not None:
        for q in run.pairs:
            m = re.match(pat, q)
            if m:
                g = folder.verdicts(bench, q, "%s request" % m.group(1))
                credit(g, differing_steps(folder, bench, "shm_transfer/workload/translate/%s" % m.group(1),
                                          "shm_transfer/workload/request_path/%s" % m.group(1)))
                groups.append(g)
    holm_section([v for g in groups for v in g])
    if not groups:
        return ["## " + title, "", "The KV-cache workload was not run: no shm_transfer/workload/request/... "
                "ratio rows in this folder.", ""], []
    legend = ("Requests replayed from the workload, request by request in turn (rows shm_transfer/workload/PART/"
              "model:PRESET of workload_paired.json): the request path, each descriptor's translation and copy. "
              "As per request, the verdict rests on the saving of the steps the design changes (rows "
              "shm_transfer/workload/translate/..., and request_path/... where it measurably differs) as a share "
              "of Mooncake's request, and a whole-request saving that differs from it by more than the control's "
              "noise reads \"unexplained by the design\"." + write_path_legend(folder)
              .replace("its request is its write path", "its request hands each descriptor over through its "
                       "write path"))
    out = paired_render(title, legend, groups, "per request", "translation")
    tails, parts = [], []
    for g in groups:
        model = g[0].label.split()[0]
        times = run.questions.get("shm_transfer/workload/request/%s" % model, {})
        tails.append("- %s: %s." % (model, "; ".join(
            "%s p50 %s, p99 %s, p99.9 %s" % (TITLE.get(s, s), fmt_time(b["p50"]), fmt_time(b.get("p99") or 0),
                                             fmt_time(b.get("p999") or 0))
            for s, b in times.items() if s in (BASE,) + FLAVOURS and R.number(b.get("p99")))))
        for s in (BASE,) + tuple(folder.flavours):
            got = [(p, run.questions.get("shm_transfer/workload/%s/%s" % (p, model), {}).get(s))
                   for p in WORKLOAD_PARTS]
            got = [(p, b) for p, b in got if not (b and str(b.get("label", "")).startswith(NOT_UPSTREAM))]
            req = times.get(s)
            if req:
                parts.append("- %s, %s: %s of the request p50." % (model, TITLE[s], ", ".join(
                    "%s %s" % (p, fmt_pct(b["p50"] / req["p50"])) for p, b in got if b)))
    out = out[:-1] + ["", "Tails of each system's requests (its own distribution, not paired):", ""] + tails
    return out + ["", "Parts:", ""] + parts + [""], groups


FREES = {"flowipc_classic": "SHM-classic: the last owner frees",
         "flowipc_jemalloc": "SHM-jemalloc: then the return message and the lender's free"}
ZERO_COPY_CONDITION = ("the reader must be able to use the object in place (read it where it lies in the "
                       "writer's memory): an application change, not a transport swap")


def paired_zero_copy(folder):
    """The zero-copy question (rows shm_transfer/zero_copy/size_kb:N of zero_copy_paired.json):
    its table, the size above which each flavour's hand-off is cheaper than Mooncake's whole
    request, and the condition beside it. Returns (lines, groups)."""
    title = "Zero copy: Mooncake's whole request against each flavour's hand-off, per object size"
    bench = "zero_copy" if "zero_copy" in folder.runs else "transfer"
    groups = paired_questions(folder, bench, r"^shm_transfer/zero_copy/size_kb:(\d+)$",
                              lambda m: "zero copy, %s" % fmt_size(int(m.group(1))))
    if not groups:
        return not_run(title, "no shm_transfer/zero_copy/... ratio rows in this folder (shm_transfer_bench "
                              "--systems=... --zero_copy, run_all.sh --system)"), []
    holm_section([v for g in groups for v in g])
    legend = ("Flow-IPC exists to hand objects over instead of copying them. Per object size (rows "
              "shm_transfer/zero_copy/size_kb:N of %s_paired.json): Mooncake's whole request (the request path, "
              "relocate, the copy into the peer's buffer) against each flavour's hand-off of an object of that "
              "size to a borrower process, with no copy: construct (timed: every hand-off pays its allocation, "
              "as it pays the free), lend, the handle message, borrow, tag check, release%s. The condition: %s."
              % (bench, " (%s)" % "; ".join(FREES[f] for f in folder.flavours), ZERO_COPY_CONDITION))
    out = paired_render(title, legend, groups, "per object", None)
    lines = [zero_copy_line(f, groups) for f in folder.flavours]
    out = out[:-1] + ["", "Where the hand-off is cheaper:", ""] + ["- " + l for l in lines if l] + [""]
    return out, groups


def zero_copy_sizes(f, groups):
    """[(size label, Verdict)] of flavour f, by size."""
    return [(v.label.split(", ", 1)[1], v) for g in groups for v in g if v.flavour == f]


def zero_copy_break_even(f, groups):
    """'is cheaper than Mooncake's whole request from about 1 MB (not faster at 256 KB)', '...
    at every size from 4 KB to 256 MB' or 'is never cheaper than Mooncake's whole request
    within 4 KB to 256 MB': from the smallest size where the hand-off is faster and no larger
    size says otherwise (slower, or no practical difference); larger sizes the run could not
    decide (within the noise, too noisy, not assessed) are named. None when f was not
    measured."""
    sizes = zero_copy_sizes(f, groups)
    if not sizes:
        return None
    span = "%s to %s" % (sizes[0][0], sizes[-1][0])
    refutes = ("slower", "no practical difference")
    first = next((i for i, (_, v) in enumerate(sizes)
                  if v.word == "faster" and not any(w.word in refutes for _, w in sizes[i:])), None)
    if first is None:
        return "is never cheaper than Mooncake's whole request within %s" % span
    open_ = ["%s %s" % (size, v.word) for size, v in sizes[first:] if v.word != "faster"]
    tail = "; undecided above: %s" % ", ".join(open_) if open_ else ""
    if first == 0:
        return "is cheaper than Mooncake's whole request at every size from %s%s" % (
            span, " (%s)" % tail[2:] if tail else "")
    return "is cheaper than Mooncake's whole request from about %s (not faster at %s%s)" % (
        sizes[first][0], sizes[first - 1][0], tail)


def zero_copy_line(f, groups):
    """'SHM-classic's hand-off is cheaper than Mooncake's whole request from about 1 MB (...);
    the condition: ...'"""
    where = zero_copy_break_even(f, groups)
    if where is None:
        return None
    sizes = zero_copy_sizes(f, groups)
    ends = "; ".join("%s ratio %s" % (size, R.fmt_ratio(v.pair)) for size, v in (sizes[0], sizes[-1]))
    return "%s's hand-off %s (%s); the condition: %s." % (TITLE[f], where, ends, ZERO_COPY_CONDITION)


def credited_saving(v):
    """The saving per operation a break-even may count on, and its note: the translation's
    where the whole request's is noise, else the row's own; the verdict said beside it."""
    if v.credit and not v.credit[1]:
        return v.credit[0].saved, ", %s: the request's own is unexplained" % step_what(v.credit[0])
    return v.pair.saved, ", %s" % v.word


def paired_break_evens(register, attach, block, request):
    """When a flavour's one-off (register, attach) costs more than Mooncake's, the number of
    blocks (alloc + free) or requests whose saving pays it back; the savings are medians
    over rounds, each with the verdict that qualifies it."""
    out = ["## Break-even of the one-off costs", "",
           "When a flavour's one-off cost exceeds Mooncake's (its saved time is negative), the number of "
           "operations whose saving pays the difference back (the difference / the saving per operation, "
           "rounded up; medians over rounds); never when that operation saves nothing.", ""]
    flavoured = lambda groups: [v for g in groups for v in g if v.flavour in FLAVOURS]  # noqa: E731
    steps = OrderedDict()  # (flavour, step, label's size) -> Verdict
    for v in flavoured(block):
        step, size = v.label.split(", ", 1)
        steps[(v.flavour, step, size)] = v
    requests = OrderedDict((v.flavour, []) for v in flavoured(request))
    for v in flavoured(request):
        saving, note = credited_saving(v)
        requests[v.flavour].append(("requests of %s" % v.label[:-len(" request")], saving, note))
    lines = []
    for v in flavoured(register):
        size = v.label.split(", ", 1)[1]
        againsts = []
        cycle = [steps.get((v.flavour, s, size)) for s in ("alloc", "free")]
        if None not in cycle:
            againsts.append(("blocks of %s (alloc + free)" % size, sum(c.pair.saved for c in cycle),
                             ", alloc %s, free %s" % (cycle[0].word, cycle[1].word)))
        againsts += [r for r in requests.get(v.flavour, []) if r[0] == "requests of " + size]
        lines.append(one_off_line(v, againsts))
    lines += [one_off_line(v, requests.get(v.flavour, [])) for v in flavoured(attach)]
    return out + (lines or ["No one-off cost measured paired."]) + [""]


def paired_run_section(folder):
    ctxs = [(bench, "paired", run.ctx) for bench, run in folder.runs.items()]
    out = ["## The run", ""]
    out += machine_lines(ctxs)
    pinned = one_or_each(ctxs, "pinned_cpu")
    out.append("- Pinned: %s" % ("no (--cpu=-1): the systems of a run shared whatever CPU the kernel gave"
                                 if pinned == "-1" else "the measuring thread on CPU %s" % pinned))
    dates = sorted(str(c["date"]) for _, _, c in ctxs if c.get("date"))
    out.append("- Measured: %s to %s, each binary once, its systems in turn round by round (order balanced "
               "over the rounds)" % (dates[0] if dates else "?", dates[-1] if dates else "?"))
    # the paired runs' (with --per-system, run.json has every per-system run too)
    loads = [r for r in folder.loads if r[0].endswith("_paired")] or folder.loads
    if loads:
        out.append("- Load average (1, 5, 15 min) before and after each run: %s" % "; ".join(
            "%s %s -> %s" % (name, " ".join("%g" % x for x in before), " ".join("%g" % x for x in after))
            for name, before, after in loads))
    else:
        loads = ["%s %g" % (b, c["load_avg"][0]) for b, _, c in ctxs
                 if isinstance(c.get("load_avg"), list) and c["load_avg"] and R.number(c["load_avg"][0])]
        out.append("- Load average (1 min) at the start of each run: %s (no run.json: not recorded after)"
                   % ("; ".join(loads) or "not recorded"))
    rounds = ["%s %s" % (b, "/".join(str(n) for n in sorted(set(p.rounds for by in r.pairs.values()
                                                                  for p in by.values()))))
              for b, r in folder.runs.items()]
    out.append("- Rounds per question: %s" % "; ".join(rounds))
    out.append("- Flags (each binary):")
    for bench, run in folder.runs.items():
        out.append("  - %s: `%s`" % (bench, str(run.ctx.get("flags", "")).replace("`", "'")))
    return out + [""]


def paired_intro(folder):
    return ["# shmbench verdict: Mooncake against Flow-IPC (%s), paired runs"
            % ", ".join(TITLE[f] for f in folder.flavours), "",
            "Generated by scripts/report.sh from the paired runs (BENCH_paired.json) of `%s`: every figure "
            "below comes from them. Each binary ran once with --systems: Mooncake, each flavour and "
            "Mooncake again as its A/A control (%s, identical code) in one process, over the same buffers "
            "and requests, slice by slice in turn, the order balanced round by round (a Williams square). ratio = the median over "
            "rounds of Mooncake / flavour (above 1: the flavour is faster); [95%%]: its distribution-free "
            "interval (the sign test's); saved = the median over rounds of Mooncake - flavour, with its "
            "interval (negative: the flavour costs more). Mooncake's and the flavour's times are their "
            "rows' p50s. The control's interval is the run's noise. Verdicts: **faster** or **slower**: the "
            "interval excludes 1 and is not inside the control's, the change is %s or more, and the row is "
            "significant at %.2f after Holm's correction over its section (p: the sign test's, then Holm's "
            "in brackets); **no practical difference**: a change under %s; **within the noise**: the "
            "interval holds 1 or lies inside the control's, or the row is not significant after the "
            "correction; **too noisy**: the control itself is off by more than %s; **not assessed**: "
            "fewer than %d rounds; **unexplained by the design**: see per request."
            % (os.path.basename(os.path.abspath(folder.path)), folder.control, fmt_pct(R.PRACTICAL_CHANGE),
               R.ALPHA, fmt_pct(R.PRACTICAL_CHANGE), fmt_pct(R.PRACTICAL_CHANGE), R.MIN_ROUNDS), ""]


def paired_glance(folder, sections, blocks):
    """Each flavour's verdicts per section; per block one per size, alloc + free together
    (what a block costs), not alloc and free apart."""
    out = ["## At a glance", "", "Each flavour's verdicts per question, counted over the tables below; per block, "
           "one verdict per size for alloc + free together at the object layer (alloc_reuse and the bare "
           "allocator's rows are in its table).", "",
           "| question | %s |" % " | ".join(TITLE[f] for f in folder.flavours),
           "|---|" + "---|" * len(folder.flavours)]
    for i, (lines, groups) in enumerate(sections):
        whole = i == 0 and blocks  # a folder without both alloc and free counts its rows
        cells = []
        for f in folder.flavours:
            words = [b.word for b in blocks if b.flavour == f and not b.bare] if whole else \
                [v.word for g in groups for v in g if v.flavour == f]
            cells.append("; ".join("%s %d" % (w, words.count(w)) for w in OrderedDict.fromkeys(words)) or "not run")
        title = lines[0][3:].split(":")[0]
        out.append("| %s | %s |" % (title + " (alloc + free)" if whole else title, " | ".join(cells)))
    return out + [""]


# ---------------------------------------------------------------- the verdict in sentences

class Block:
    """One flavour's block at one size: its alloc and free Verdicts together, as a block
    costs (alloc + free): the sum of their medians, its interval the sum of theirs (both
    intervals hold their medians with 95% each, so their sum holds the sum's with at least
    90%), and one verdict."""

    def __init__(self, size, alloc, free, bare=False):
        self.size, self.flavour, self.steps, self.bare = size, alloc.flavour, (alloc, free), bare
        self.base = alloc.base + free.base if alloc.base and free.base else None
        self.saved = alloc.pair.saved + free.pair.saved
        ends = [e for v in self.steps for e in (v.pair.saved_lo, v.pair.saved_hi)]
        self.lo, self.hi = (None, None) if None in ends else (ends[0] + ends[2], ends[1] + ends[3])
        self.word = self.judge()

    def judge(self):
        """A step that cannot be judged makes the block so; both steps within the noise,
        or a summed interval that holds 0, leave it within the noise; else the summed
        saving's share of Mooncake's block says no practical difference, faster or slower."""
        words = [v.word for v in self.steps]
        for w in ("too noisy", "not assessed"):
            if w in words:
                return w
        if all(w == "within the noise" for w in words) or self.lo is None or self.lo <= 0 <= self.hi:
            return "within the noise"
        if not self.base or abs(self.saved / self.base) < R.PRACTICAL_CHANGE:
            return "no practical difference"
        return "faster" if self.saved > 0 else "slower"

    def change(self):
        """'costs 19.1 ns more [14.6 ns, 22.7 ns]' or 'saves 23.3 ns [20.1 ns, 25.4 ns]'"""
        sign = 1 if self.saved >= 0 else -1
        ends = "" if self.lo is None else " [%s, %s]" % tuple(
            fmt_time(sign * v) for v in sorted((self.lo, self.hi), key=lambda v: sign * v))
        if sign > 0:
            return "saves %s%s" % (fmt_time(self.saved), ends)
        return "costs %s more%s" % (fmt_time(-self.saved), ends)

    def steps_text(self):
        """'alloc faster, free slower' (the bare layer: 'alloc_bare ..., free_bare ...')"""
        return ", ".join("%s %s" % (v.label.split(", ", 1)[0], v.word) for v in self.steps)

    def line(self):
        """'SHM-classic **slower**: costs 19.1 ns more [14.6 ns, 22.7 ns] (alloc faster, free slower)'"""
        return "%s **%s**: %s (%s)" % (TITLE[self.flavour], self.word, self.change(), self.steps_text())


def blocks_of(groups):
    """[Block] of the per-block section's groups: each flavour's alloc and free at each size
    (the object layer: the verdict), then its alloc_bare and free_bare (the bare allocator,
    bare=True: stated beside it)."""
    out = []
    for steps, bare in ((("alloc", "free"), False), (BARE_STEPS, True)):
        by = OrderedDict()
        for g in groups:
            for v in g:
                step, size = v.label.split(", ", 1)
                if v.flavour in FLAVOURS and step in steps:
                    by.setdefault((size, v.flavour), {})[step] = v
        out += [Block(size, s[steps[0]], s[steps[1]], bare) for (size, _), s in by.items() if len(s) == 2]
    return out


def block_lines(blocks):
    """The per-block section's lines on blocks: per size, each flavour's alloc + free at the
    object layer, then its bare allocator's alloc_bare + free_bare."""
    out = []
    for size in R.unique(b.size for b in blocks):
        for bare, what in ((False, "block (alloc + free, object layer)"),
                           (True, "bare allocator (alloc_bare + free_bare)")):
            at = [b for b in blocks if b.size == size and b.bare == bare]
            if not at:
                continue
            base = "Mooncake %s per block" % fmt_time(at[0].base) if at[0].base else "Mooncake's rows not in the run"
            out.append("- %s, %s (%s): %s." % (what, size, base, "; ".join(b.line() for b in at)))
    return out


def said(word):
    """A verdict as a sentence says it: what cannot be judged is undecided."""
    return {"too noisy": "undecided (too noisy: the A/A control is off by %s or more)" % fmt_pct(R.PRACTICAL_CHANGE),
            "not assessed": "undecided (too few rounds)",
            "unexplained by the design": "unexplained by the design (the whole request saved another amount "
                                         "than the steps its design changes, beyond the noise: not credited)"}.get(word, word)


def change_text(p):
    """'saves 184 ns [180 ns, 188 ns]' or 'costs 24.5 ns more [21.5 ns, 26.7 ns]' of a Pair."""
    if p.saved >= 0:
        return "saves %s%s" % (fmt_time(p.saved), interval_text(p))
    return "costs %s more%s" % (fmt_time(-p.saved), interval_text(p, -1))


def span(texts):
    """'x' of equal texts, else 'first to last'."""
    return texts[0] if len(set(texts)) == 1 else "%s to %s" % (texts[0], texts[-1])


def ranged(items):
    """'saves 184 ns [180 ns, 188 ns] at 64 KB to 16 MB (3.0% to 0.0% of Mooncake's 6.19 µs
    to 1.20 ms): no practical difference; ...' of items (change, (preposition, where),
    share or None, Mooncake's time, verdict): consecutive ones that share a verdict said
    together, so that a sentence stays short at any number of sizes."""
    runs = []
    for it in items:
        if runs and runs[-1][-1][4] == it[4]:
            runs[-1].append(it)
        else:
            runs.append([it])
    out = []
    for run in runs:
        cols = list(zip(*run))
        if len(set(cols[0])) > 1:  # each its own figure: said one by one
            out.append("%s: %s" % (", ".join(ranged_one([it]) for it in run), said(run[0][4])))
            continue
        out.append("%s: %s" % (ranged_one(run), said(run[0][4])))
    return "; ".join(out)


def ranged_one(run):
    """'saves 184 ns [180 ns, 188 ns] at 64 KB to 16 MB (3.0% to 0.0% of Mooncake's 6.19 µs
    to 1.20 ms)' of items with one change."""
    cols = list(zip(*run))
    wheres = [w for _, w in cols[1]]
    where = "%s %s" % (cols[1][0][0], wheres[0] if len(run) == 1 else
                       ("%s and %s" if len(run) == 2 else "%s to %s") % (wheres[0], wheres[-1]))
    share = " (%s of Mooncake's %s)" % (span(cols[2]), span(cols[3])) if None not in cols[2] else ""
    return "%s %s%s" % (cols[0][0], where, share)


def request_items(verdicts, where):
    """ranged's items of request verdicts: the credited saving (the translation's where the
    request's is its) and its share of Mooncake's request."""
    out = []
    for v in verdicts:
        p = v.credit[0] if v.credit else v.pair
        out.append((change_text(p), where(v), fmt_pct(abs(p.saved) / v.base) if v.base else None,
                    fmt_time(v.base) if v.base else None, v.word))
    return out


def registration_text(reg):
    """'costs 379 µs to 425 µs more for 10 blocks: slower; saves 217 µs to 395 µs for 100 and
    8.60 ms to 9.42 ms for 1000: faster (blocks of 4 KB to 1 MB; ...)' of register verdicts
    (labels 'register N buffers, SIZE'): per N, the range over the sizes of what it saves or
    costs; consecutive Ns that share a verdict said together. An N whose sizes disagree on
    the verdict or on the sign is said size by size."""
    by, sizes = OrderedDict(), []
    for v in reg:
        count, size = v.label[len("register "):].split(", ", 1)
        by.setdefault(int(count.split()[0]), []).append((size, v))
        sizes += [size] if size not in sizes else []
    of = "" if len(sizes) > 1 else " of %s" % sizes[0]
    runs, ranges = [], False  # runs: [(word, [text, ...])]
    for n, at in sorted(by.items()):
        vs = [v for _, v in at]
        saved = sorted((v.pair.saved for v in vs), key=abs)
        texts = [change_text(v.pair) for v in vs]
        if len(set(v.word for v in vs)) > 1 or (saved[0] < 0) != (saved[-1] < 0):
            runs += [(v.word, ["%s for %d blocks of %s" % (t, n, size)]) for (size, v), t in zip(at, texts)]
            continue
        if len(set(texts)) == 1:
            change = texts[0]
        elif saved[0] >= 0:
            change, ranges = "saves %s to %s" % (fmt_time(saved[0]), fmt_time(saved[-1])), True
        else:
            change, ranges = "costs %s to %s more" % (fmt_time(-saved[0]), fmt_time(-saved[-1])), True
        item = "%s for %d%s" % (change, n, " blocks" + of if not runs or runs[-1][0] != vs[0].word else "")
        if runs and runs[-1][0] == vs[0].word:
            runs[-1][1].append(item)
        else:
            runs.append((vs[0].word, [item]))
    said_runs = "; ".join("%s: %s" % (" and ".join(items) if len(items) < 3 else
                                      ", ".join(items[:-1]) + " and " + items[-1], said(w)) for w, items in runs)
    if len(sizes) > 1:
        said_runs += " (blocks of %s%s)" % (span([sizes[0], sizes[-1]]), "; where a range is given, each size's "
                                            "interval is in the table" if ranges else " alike")
    return said_runs


def credited_words(verdicts, alone=""):
    """Who saves, in a verdict sentence: 'it' (the whole request), 'its translation', or the
    steps its design changes when the request path is credited beside it (Summed)."""
    steps = [v.credit[0] for v in verdicts if v.credit]
    if not steps:
        return "it"
    if any(isinstance(st, Summed) for st in steps):
        return "what its design changes (its translation, and its request path walking its pools, not " \
               "Mooncake's buffers)"
    return ("its translation " + alone).strip()


def flavour_sentences(f, sections, blocks):
    """A flavour's sentences: per request, on the workload, per block, once."""
    block, register, attach, request, workload = (s[1] for s in sections)
    mine = lambda groups: [v for g in groups for v in g if v.flavour == f]  # noqa: E731
    out = []
    req = mine(request)
    if req:
        out.append("Per request, %s %s." % (
            credited_words(req, "(the one step the designs do not share)"),
            ranged(request_items(req, lambda v: ("at", v.label[:-len(" request")])))))
    work = mine(workload)
    if work:
        out.append("On the KV-cache workload, %s %s." % (credited_words(work),
                                                         ranged(request_items(work, lambda v: ("per", v.label)))))
    block_items = lambda bl: [(  # noqa: E731
        "%s (%s)" % (b.change(), b.steps_text()), ("at", b.size),
        fmt_pct(abs(b.saved) / b.base) if b.base else None, fmt_time(b.base) if b.base else None, b.word)
        for b in bl]
    obj = [b for b in blocks if b.flavour == f and not b.bare]
    bare = [b for b in blocks if b.flavour == f and b.bare]
    if obj:
        out.append("Per block, an object and its handle (%s against Mooncake's %s; alloc + free, the sum of the two "
                   "medians), it %s." % (OBJECT_LAYER[f].split(" (")[0], OBJECT_LAYER[BASE].split(" (")[0],
                                         ranged(block_items(obj))))
    if bare:
        out.append("Its bare allocator beside it (%s against Mooncake's %s; alloc_bare + free_bare) %s." % (
            ALLOCATOR[f].split(" (")[0], ALLOCATOR[BASE].split(" (")[0], ranged(block_items(bare))))
    once = []
    reg = mine(register)
    if reg:
        once.append("making N blocks usable (%s against Mooncake's N buffers) %s" % (DEPLOYMENT[f],
                                                                                     registration_text(reg)))
    once += ["the receiver's first attach %s against Mooncake's %s: %s%s" % (
        change_text(v.pair), v.label.split(", ", 1)[1].replace("segments", "buffers"), said(v.word),
        " (its pools' lend round trips included)" if v.flavour == "flowipc_jemalloc" else "")
        for v in mine(attach)]
    if once:
        out.append("Once, %s." % "; ".join(once))
    return out or ["Nothing this report answers was measured for it in full (the tables below hold what was)."]


def verdict_sentences(folder, sections, blocks, zero_copy=()):
    """The answer first: per flavour, what it saves or costs per request, on the workload,
    per block and once, from the sections' verdicts (Holm and the credit applied), with
    their intervals and the conditions (sizes, buffers) they hold under; then where its
    hand-off beats Mooncake's request (zero_copy: that section's groups)."""
    out = ["## Verdict", ""]
    for f in folder.flavours:
        zero = zero_copy_break_even(f, zero_copy)
        tail = [] if zero is None else ["Instead of copying, its hand-off %s; the condition: %s."
                                        % (zero, ZERO_COPY_CONDITION)]
        out += ["%s against Mooncake: %s" % (TITLE[f], " ".join(flavour_sentences(f, sections, blocks) + tail)),
                ""]
    rounds = sorted(set(p.rounds for r in folder.runs.values() for by in r.pairs.values() for p in by.values()))
    return out + ["Measured paired on this machine (%s rounds per question; [a, b]: 95%% intervals; a change under "
                  "%s is no practical difference); the sections below hold every figure." % (
                      span([str(rounds[0]), str(rounds[-1])]), fmt_pct(R.PRACTICAL_CHANGE)), ""]


def paired_report(path):
    folder = PairedFolder(path)
    if not folder.flavours:  # the model against upstream's own code alone: no Flow-IPC verdict to give
        return write_report(path, ["# shmbench: Mooncake's model against its upstream code, paired runs", ""] +
                            model_against_upstream(folder) + paired_run_section(folder))
    sections = [paired_block(folder), paired_registration(folder), paired_attach(folder), paired_request(folder),
                paired_workload(folder)]
    blocks = blocks_of(sections[0][1])
    if blocks:  # the per-block section says what a block costs, alloc + free
        sections[0] = (sections[0][0][:-1] + block_lines(blocks) + [""], sections[0][1])
    intro = paired_intro(folder)
    zero = paired_zero_copy(folder)
    glance = sections + ([zero] if zero[1] else [])
    text = intro[:2] + verdict_sentences(folder, sections, blocks, zero[1]) + ["## How to read it", ""] + \
        intro[2:] + paired_glance(folder, glance, blocks) + paired_run_section(folder)
    for lines, _ in sections:
        text += lines
    text += zero[0]
    text += paired_break_evens(*(sections[i][1] for i in (1, 2, 0, 3)))
    return write_report(path, text + model_against_upstream(folder) + plots_section(folder))


def model_against_upstream(folder):
    """'Model against upstream': per paired file that ran mooncake_upstream beside mooncake,
    each covered row's model / upstream with its interval, and a line per row off by more
    than 25% (results.model_upstream_lines); nothing when no file did."""
    out = []
    for bench, run in folder.runs.items():
        lines = R.model_upstream_lines(run)
        if lines:
            out += ["## Model against upstream: %s_paired.json" % bench, ""] + lines
    return out


# ---------------------------------------------------------------- merge

METRICS = ("real_time", "cpu_time", "min", "stddev", "p50", "p90", "p99", "p999", "max",
           "items_per_second", "bytes_per_second", "speedup")  # the binaries' aggregated fields


def aggregates(name, reps):
    """Google Benchmark's mean, median, stddev, cv rows of one row's repetitions, the fields
    the binaries aggregate (src/base/report.c)."""
    out = []
    for agg in ("mean", "median", "stddev", "cv"):
        b = OrderedDict((k, v) for k, v in reps[0].items() if k != "repetition_index")
        b["name"] = "%s_%s" % (name, agg)
        b["run_type"] = "aggregate"
        b["aggregate_name"] = agg
        b["aggregate_unit"] = "percentage" if agg == "cv" else "time"
        b["iterations"] = sum(r.get("iterations", 0) for r in reps)
        for k in METRICS:
            values = [r.get(k) for r in reps]
            if not all(R.number(v) for v in values):
                b.pop(k, None)
                continue
            mean = statistics.fmean(values)
            sd = statistics.stdev(values)
            b[k] = {"mean": mean, "median": statistics.median(values), "stddev": sd,
                    "cv": sd / mean if mean else 0.0}[agg]
        out.append(b)
    return out


def read_reps(paths):
    """The JSON documents of one-repetition runs of one binary, system and machine."""
    docs = []
    for p in paths:
        text = R.read(p)
        R.parse_json(p, text)
        d = json.loads(text, object_pairs_hook=OrderedDict)
        names = [b["name"] for b in d["benchmarks"]]
        if any(b.get("run_type") == "aggregate" for b in d["benchmarks"]) or len(set(names)) != len(names):
            raise R.BadInput("%s: a run of more than one repetition: merge takes runs of one" % p)
        for key in ("executable", "system", "host_name"):
            if docs and d["context"].get(key) != docs[0]["context"].get(key):
                raise R.BadInput("%s: its %s differs from %s's" % (p, key, paths[0]))
        docs.append(d)
    return docs


def merge(out, paths):
    """Each row's repetitions in turn, then its aggregates, as a --repetitions=N run writes
    them; a row some repetition lacks keeps the repetitions that have it."""
    docs = read_reps(paths)
    n = len(docs)
    ctx = OrderedDict(docs[0]["context"])
    ctx["flags"] = re.sub(r"\brepetitions=\d+", "repetitions=%d" % n, str(ctx.get("flags", "")))
    ctx["repetitions_interleaved"] = True
    ctx["repetition_dates"] = [d["context"].get("date") for d in docs]
    ctx["repetition_load_avg"] = [d["context"].get("load_avg") for d in docs]
    by_name = OrderedDict()
    for k, d in enumerate(docs):
        for b in d["benchmarks"]:
            b = OrderedDict(b)
            b["repetitions"], b["repetition_index"] = n, k
            by_name.setdefault(b["name"], []).append(b)
    rows = []
    for name, reps in by_name.items():
        rows += reps + (aggregates(name, reps) if len(reps) > 1 else [])
    R.write_output(out, '{\n  "context": %s,\n  "benchmarks": [\n%s\n  ]\n}\n' % (
        json.dumps(ctx), ",\n".join("    " + json.dumps(b) for b in rows)))
    return 0


def run(argv):
    if len(argv) == 3 and argv[1] == "report":
        if not os.path.isdir(argv[2]):
            raise R.BadInput("%s: not a folder" % argv[2])
        return report(argv[2])
    if len(argv) >= 4 and argv[1] == "merge":
        return merge(argv[2], argv[3:])
    sys.stderr.write(__doc__)
    return 2


def main(argv):
    return R.main_of(run, "verdict.py", argv)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main(sys.argv))
