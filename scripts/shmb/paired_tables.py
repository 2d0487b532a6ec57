"""compare.sh's tables of paired runs: one folder's ratio rows, two folders before and after."""
import os
import sys
from collections import OrderedDict

from .files import BadInput
from .fmt import fmt, fmt_change, fmt_p, fmt_ratio, fmt_saved
from .paired import load_paired, model_upstream_lines, paired_files, ratio_change
from .runs import unique
from .stats import paired_verdict


def paired_rows(run):
    """[(name, Pair, verdict)] of a paired run's ratio rows, the verdict by paired_verdict."""
    return [(pair.name, pair, paired_verdict(pair, run.control_of(q)))
            for q, by in run.pairs.items() for pair in by.values()]


def paired_table(run):
    rows = paired_rows(run)
    width = max(len(n) for n, _, _ in rows) + 2
    row_fmt = "%-*s %24s %26s %7s %7s  %s"
    print(row_fmt % (width, "row (system/vs:baseline)", "ratio [95%]", "saved_ns [95%]", "p", "rounds", "verdict"))
    for name, pair, word in rows:
        print(row_fmt % (width, name, fmt_ratio(pair), fmt_saved(pair), fmt_p(pair.p), pair.rounds, word))
    print("ratio = median over rounds of %s / system (above 1: the system is faster), 95%% interval "
          "distribution-free; saved = %s - system, ns per operation; p: sign test, per row (report.md "
          "corrects per question); %s: the A/A control, the run's noise" % (run.baseline, run.baseline, run.control))
    return 0


def paired_summary(folder):
    """One paired folder: per file, every ratio row, and the model against upstream where
    the file holds both."""
    files = paired_files(folder) if os.path.isdir(folder) else OrderedDict([("paired", folder)])
    runs = [(bench, load_paired(path)) for bench, path in files.items()]
    for bench, run in runs:
        print("== %s: paired, against %s (%s)" % (bench, run.baseline, os.path.basename(run.path)))
        paired_table(run)
        print()
        lines = model_upstream_lines(run)
        if lines:
            print("\n".join(["== %s: model against upstream" % bench] + lines))
    return 0


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
    return 0


def paired_check(paths):
    """Reads every paired file that the paired commands will read (exit 2 on a bad one)."""
    for p in paths:
        for path in (paired_files(p).values() if os.path.isdir(p) else [p]):
            load_paired(path)
    return 0
