"""compare.sh's tables: headlines, gains per row, ratio rows, before and after."""
import os
import sys
from collections import OrderedDict

from .files import BadInput
from .fmt import fmt, fmt_change, fmt_p, fmt_ratio, fmt_saved
from .paired import axis_files, load_paired, model_upstream_lines, paired_files, ratio_change
from .pairing import check, folder_pairs, merged_keys, pair_runs, pairing_of, system_pairs, unpaired
from .runs import load_run, parts, same, split_key, unique
from .space_report import FILE as SPACE_FILE, load_space, space_before_after, space_summary
from .stats import ALPHA, MIN_REPETITIONS, PRACTICAL_CHANGE, TOO_FEW, paired_verdict, verdict, verdicts


def reps_text(rows):
    counts = sorted(set(len(r.samples) for r in rows if r.samples))
    if not counts:
        return "no rows"
    return "%d repetitions" % counts[0] if len(counts) == 1 else "%d-%d repetitions" % (counts[0], counts[-1])


def print_notes(what, pairs, notes):
    """The lines under a table: what A, B and the figures are, the verdicts, the U-test, notes."""
    print(what)
    print("change: B against A; verdict: B faster or B slower: significant and a change of %g%% or more; "
          "no practical difference: a change under %g%%, significant or not; not significant: %g%% or "
          "more, and no evidence the runs differ; (untested): %s for the U-test, the medians alone"
          % (PRACTICAL_CHANGE * 100, PRACTICAL_CHANGE * 100, PRACTICAL_CHANGE * 100, TOO_FEW))
    print("significant: two-sided Mann-Whitney U-test on the repetitions' p50s (p), at %.2f for "
          "the whole table (Holm's correction over its %d tested rows); yes: the runs differ, "
          "no: no evidence they do; %s: fewer than %d repetitions in A or B (A has %s, B has %s), "
          "the test cannot tell: run both with --repetitions=%d or more"
          % (ALPHA, sum(1 for a, b in pairs if min(len(a.samples), len(b.samples)) >= MIN_REPETITIONS),
             TOO_FEW, MIN_REPETITIONS, reps_text([a for a, _ in pairs]), reps_text([b for _, b in pairs]),
             MIN_REPETITIONS))
    for n in notes:
        print(n)


def headline_rows(key, rows):
    """[(row key, unit, Row, to_value)]: the rows of one file that make its headline."""
    bench = split_key(key)[0]
    sizes = [parts(n)[2] for n in rows if parts(n)[2] is not None]
    ends = (min(sizes), max(sizes)) if sizes else ()
    out = []
    for name, row in rows.items():
        middle, _, arg, _ = parts(name)
        if bench == "allocation":
            if arg in ends and middle and middle[-1] in ("total", "alloc", "register", "attach"):
                out.append((name, "ns", row, same))
        elif bench in ("lookup", "lookup_sweep", "workload"):  # workload: a request's parts, ns per request
            out.append((name, "ns", row, same))
        elif bench == "transfer" and arg in ends:
            if middle[:1] in (["request_path"], ["translate"]):  # parts of a request, not copies
                out.append((name, "ns", row, same))
            else:  # GB/s of the median: bytes per ns
                out.append((name, "GB/s", row, lambda v, b=arg * 1024: b / v))
    return out


def headline_lines(key, pairing):
    """[(label, unit, A, B, B/A, change, rows, figures)] of one pair of files' headline rows."""
    # the sweep repeats lookup's rows at more counts: its rows say so
    bench, system = split_key(key)
    tag = " ".join(t for t in (system, "sweep" if bench == "lookup_sweep" else "") if t)
    prefix = tag + ": " if tag else ""
    a_head = OrderedDict((k, (u, r, f)) for k, u, r, f in headline_rows(key, pairing.a))
    b_head = OrderedDict((k, (u, r, f)) for k, u, r, f in headline_rows(key, pairing.b))
    out = []
    for k in merged_keys(a_head, b_head):
        unit, _, f = a_head.get(k) or b_head[k]
        ra = a_head[k][1] if k in a_head else None
        rb = b_head[k][1] if k in b_head else None
        va = f(ra.p50) if ra and ra.samples else None
        vb = f(rb.p50) if rb and rb.samples else None
        out.append((prefix + pairing.names[k], unit, fmt(va), fmt(vb), "%.3f" % (vb / va) if va and vb else "-",
                    fmt_change(va, vb), (ra if va else None, rb if vb else None), (va, vb, unit == "ns")))
    return out


def summary(a_dir, b_dir):
    pairs = folder_pairs(a_dir, b_dir)
    for key in unpaired(a_dir, b_dir, pairs):
        sys.stderr.write("== %s: skipped, not in both folders\n" % key)
    lines, notes = [], []
    for key, a_path, b_path in pairs:
        pairing = pairing_of(a_path, b_path)
        if not any(k in pairing.b for k in pairing.a):
            sys.stderr.write("== %s: skipped, %s and %s have no row in common (%s)\n"
                             % (key, a_path, b_path, "; ".join(pairing.notes)))
            continue
        notes.extend(n for n in pairing.notes if n not in notes)
        lines.extend(headline_lines(key, pairing))
    if not lines:
        print("no headline rows in both %s and %s" % (a_dir, b_dir))
        return 1
    width = max(len(l[0]) for l in lines) + 2
    row_fmt = "%-*s %5s %12s %12s %8s %8s %7s  %-12s  %s"
    print(row_fmt % (width, "headline (p50; medians over repetitions)", "unit", "A", "B", "B/A", "change", "p",
                     "significant", "verdict"))
    for l, (p, sig) in zip(lines, verdicts([l[6] for l in lines])):
        print(row_fmt % ((width,) + l[:6] + (fmt_p(p), sig, verdict(sig, *l[7]))))
    print_notes("A = %s, B = %s; every figure is a median: ns = p50 per operation, GB/s = size / p50 "
                "(10^9 bytes/s), with repetitions the median of the repetitions' p50s; ns: lower is "
                "better, GB/s: higher is better" % (a_dir, b_dir), [l[6] for l in lines if l[6][0] and l[6][1]], notes)
    return 0


def gain_rows(pairing):
    """[(name, Row A, Row B, p, significant, verdict)] of a Pairing (None: not in that run)."""
    pairs = []
    for k in pairing.names:
        ra, rb = pairing.a.get(k), pairing.b.get(k)
        pairs.append((ra if ra and ra.samples else None, rb if rb and rb.samples else None))
    out = []
    for k, (ra, rb), (p, sig) in zip(pairing.names, pairs, verdicts(pairs)):
        out.append((pairing.names[k], ra, rb, p, sig,
                    verdict(sig, ra.p50 if ra else None, rb.p50 if rb else None)))
    return out


def gain_table(pairing, a_name, b_name):
    rows = gain_rows(pairing)
    if not rows:
        print("no rows in %s or %s" % (a_name, b_name))
        return 1
    width = max(len(r[0]) for r in rows) + 2
    row_fmt = "%-*s %12s %12s %9s %8s %7s  %-12s  %s"
    print(row_fmt % (width, "row", "A_p50_ns", "B_p50_ns", "gain", "change", "p", "significant", "verdict"))
    for name, ra, rb, p, sig, word in rows:
        va = ra.p50 if ra else None
        vb = rb.p50 if rb else None
        g = "%.2f" % (va / vb) if va and vb else "-"
        print(row_fmt % (width, name, fmt(va), fmt(vb), g, fmt_change(va, vb), fmt_p(p), sig, word))
    print_notes("A = %s, B = %s; gain = A p50 / B p50 (medians over repetitions; above 1: B is faster); "
                "- = not in that run" % (a_name, b_name), [(ra, rb) for _, ra, rb, _, _, _ in rows if ra and rb],
                pairing.notes)
    return 0


def gain(a_path, b_path):
    return gain_table(pair_runs(load_run(a_path), load_run(b_path)), a_path, b_path)


def systems(folder):
    pairs, files = system_pairs(folder)
    check([folder])
    if not pairs:
        sys.stderr.write("results.py systems: %s holds no mooncake and Flow-IPC pair "
                         "(written by run_all.sh --system)\n" % folder)
        return 1
    for bench, a, b in pairs:
        print("== %s: %s against %s" % (bench, split_key(a)[1], split_key(b)[1]))
        gain_table(pair_runs(load_run(files[a]), load_run(files[b])), files[a], files[b])
        print()
    return 0


def paired_rows(run):
    """[(name, Pair, verdict)] of a paired run's ratio rows, the verdict by paired_verdict."""
    return [(pair.name, pair, paired_verdict(pair, run.control_of(q)))
            for q, by in run.pairs.items() for pair in by.values()]


def ratio_table(rows, baseline, control, points=None):
    """The ratio rows [(name, Pair, verdict)], each after its axis point when points is given."""
    width = max(len(n) for n, _, _ in rows) + 2
    row_fmt = "%-*s %24s %26s %7s %7s  %s"
    lead = "%-*s " % (max(len(p) for p in points + ["point"]), "point") if points else ""
    print(lead + row_fmt % (width, "row (system/vs:baseline)", "ratio [95%]", "saved_ns [95%]", "p", "rounds",
                            "verdict"))
    for i, (name, pair, word) in enumerate(rows):
        lead = "%-*s " % (max(len(p) for p in points + ["point"]), points[i]) if points else ""
        print(lead + row_fmt % (width, name, fmt_ratio(pair), fmt_saved(pair), fmt_p(pair.p), pair.rounds, word))
    print("ratio = median over rounds of %s / system (above 1: the system is faster), 95%% interval "
          "distribution-free; saved = %s - system, ns per operation; p: sign test, per row (report.md "
          "corrects per question); %s: the A/A control, the run's noise" % (baseline, baseline, control))
    return 0


def axes_summary(folder):
    """One paired folder's axes: per axis every ratio row of its runs, each after its point."""
    groups = OrderedDict()  # axis -> [(point, its run)]
    for axis, point, path in axis_files(folder):
        groups.setdefault(axis, []).append((point, load_paired(path)))
    for axis, runs in groups.items():
        baselines = unique(r.baseline for _, r in runs)
        if len(baselines) != 1:
            raise BadInput("%s: transfer_axis_%s_*.json paired against %s: one baseline per axis"
                           % (folder, axis, ", ".join(baselines)))
        rows, points = [], []
        for point, run in runs:
            rows += paired_rows(run)
            points += [point] * (len(rows) - len(points))
        print("== axis %s: paired, against %s (transfer_axis_%s_N.json, a run per point: %s)"
              % (axis, baselines[0], axis, ", ".join(p for p, _ in runs)))
        ratio_table(rows, baselines[0], runs[0][1].control, points)
        print()


def paired_summary(folder):
    """One paired folder or file: every ratio row, and the model against upstream."""
    files = paired_files(folder) if os.path.isdir(folder) else OrderedDict([("paired", folder)])
    runs = [(bench, load_paired(path)) for bench, path in files.items()]
    for bench, run in runs:
        print("== %s: paired, against %s (%s)" % (bench, run.baseline, os.path.basename(run.path)))
        ratio_table(paired_rows(run), run.baseline, run.control)
        print()
        lines = model_upstream_lines(run)
        if lines:
            print("\n".join(["== %s: model against upstream" % bench] + lines))
    if os.path.isdir(folder):
        extras(folder)
    return 0


def extras(folder):
    """A --system folder's axes' ratio rows and space table."""
    axes_summary(folder)
    space = os.path.join(folder, SPACE_FILE)
    if os.path.isfile(space):
        space_summary(space)
        print()


def paired_before_after(a_path, b_path, label=None):
    """Two paired runs of one binary: each system row's time, each ratio row's ratio."""
    a, b = load_paired(a_path), load_paired(b_path)
    if a.baseline != b.baseline:
        raise BadInput("%s is paired against %s and %s against %s: one baseline for both"
                       % (a_path, a.baseline, b_path, b.baseline))
    common = [q for q in unique(list(a.questions) + list(a.pairs)) if q in b.questions or q in b.pairs]
    if not common:
        raise BadInput("%s and %s have no row in common: not two paired runs of one binary" % (a_path, b_path))
    print("== %s: %s against %s" % (label or "paired", a_path, b_path))
    systems = [("%s/system:%s" % (q, s), ra["p50"], b.questions[q][s]["p50"])
               for q in common for s, ra in a.questions.get(q, {}).items() if s in b.questions.get(q, {})]
    if systems:
        width = max(len(n) for n, _, _ in systems) + 2
        print("%-*s %12s %12s %8s" % (width, "system row (p50 ns; separate runs: drift included)", "before",
                                      "after", "change"))
    for name, va, vb in systems:
        print("%-*s %12s %12s %8s" % (width, name, fmt(va), fmt(vb), fmt_change(va, vb)))
    ratios = [(q, s, pa, b.pairs[q][s]) for q in a.pairs if q in b.pairs for s, pa in a.pairs[q].items()
              if s in b.pairs[q]]
    if ratios:
        width = max(len(pa.name) for _, _, pa, _ in ratios) + 2
        print()
        print("%-*s %24s %24s  %s" % (width, "ratio row", "before [95%]", "after [95%]", "verdict"))
        for q, s, pa, pb in ratios:
            print("%-*s %24s %24s  %s" % (width, pa.name, fmt_ratio(pa), fmt_ratio(pb), ratio_change(a, b, q, pa, pb)))
    print("changed: the two intervals do not overlap and the ratio moved by more than either run's A/A "
          "control interval (%s's width); else within the noise" % a.control)
    return 0


def paired_compare(a_dir, b_dir):
    """Two paired folders (before and after a change): each file both hold."""
    a_files, b_files = paired_files(a_dir), paired_files(b_dir)
    both = [bench for bench in a_files if bench in b_files]
    for bench in [x for x in list(a_files) + list(b_files) if x not in both]:
        sys.stderr.write("== %s: skipped, not in both folders\n" % bench)
    if not both:
        print("no paired run in both %s and %s" % (a_dir, b_dir))
        return 1
    for bench in both:
        paired_before_after(a_files[bench], b_files[bench], bench)
        print()
    for point, a_path, b_path in extra_pairs(a_dir, b_dir):
        if point == "space":
            space_before_after(a_path, b_path)
        else:
            paired_before_after(a_path, b_path, "axis " + point)
        print()
    return 0


def extra_pairs(a_dir, b_dir, quiet=False):
    """[(point or 'space', A's file, B's file)] both folders hold; the others named on stderr."""
    a = OrderedDict((p, path) for _, p, path in axis_files(a_dir))
    b = OrderedDict((p, path) for _, p, path in axis_files(b_dir))
    for d, files in ((a_dir, a), (b_dir, b)):
        if os.path.isfile(os.path.join(d, SPACE_FILE)):
            files["space"] = os.path.join(d, SPACE_FILE)
    for p in [x for x in list(a) + [y for y in b if y not in a] if not quiet and (x not in a or x not in b)]:
        sys.stderr.write("== %s: skipped, not in both folders\n" % os.path.basename((a.get(p) or b[p])))
    return [(p, a[p], b[p]) for p in a if p in b]


def paired_check(paths):
    """Reads every paired file that the paired commands will read (exit 2 on a bad one)."""
    for p in paths:
        for path in (paired_files(p).values() if os.path.isdir(p) else [p]):
            load_paired(path)
        if os.path.isdir(p):
            for _, _, path in axis_files(p):
                load_paired(path)
            if os.path.isfile(os.path.join(p, SPACE_FILE)):
                load_space(os.path.join(p, SPACE_FILE))
    return 0
