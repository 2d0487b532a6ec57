"""compare.sh --fail-above, and the warning when A and B ran with different flags."""
import math
import os
import re
import sys
from collections import OrderedDict

from . import files
from .files import BadInput, benchmark_json, read
from .fmt import fmt, fmt_change, fmt_p, fmt_ratio
from .paired import AXIS_FILE, is_paired_file, load_paired, paired_files, ratio_change
from .pairing import folder_pairs, pairing_of
from .runs import flag_dict, is_json, unique
from .stats import TOO_FEW
from .space_report import gate_space
from .tables import extra_pairs, gain_rows


# Flags that differ between runs compared on purpose (a --system run against another) or
# that change no figure (where the output goes, the name of the segments).
FLAGS_ASIDE = ("system", "json_out", "format", "shm_prefix")


def file_flags(path):
    """OrderedDict flag -> value of a results file (JSON context's flags, a table's '# flags:')."""
    text = read(path)
    if is_json(text):
        return flag_dict(benchmark_json(path, text)[1].get("flags", ""))
    m = re.search(r"^# flags: (.*)$", text, re.M)
    return flag_dict(m.group(1) if m else "")


def compared_files(a, b):
    """[(label, A's file, B's file)] that compare.sh A B reads (label: the axis point, 'space')."""
    if os.path.isfile(a):
        return [("", a, b)]
    pa, pb = paired_files(a), paired_files(b)
    if pa and pb:
        return [(bench, pa[bench], pb[bench]) for bench in pa if bench in pb] + \
            [(point, fa, fb) for point, fa, fb in extra_pairs(a, b, quiet=True)]
    return folder_pairs(a, b)


def flags_differ(a, b):
    """One warning line when the runs ran with other flags: a slower B is then no regression."""
    seen = OrderedDict()  # flag -> (A's value, B's value), over every pair of files
    for _, fa, fb in compared_files(a, b):
        va, vb = file_flags(fa), file_flags(fb)
        for k in unique(list(va) + list(vb)):
            if k not in FLAGS_ASIDE and va.get(k) != vb.get(k):
                seen.setdefault(k, (va.get(k, "unset"), vb.get(k, "unset")))
    if seen:
        sys.stderr.write("%s: warning: A and B ran with different flags: %s\n" % (files.PROG, ", ".join(
            "%s (A %s, B %s)" % (k, x or "''", y or "''") for k, (x, y) in seen.items())))
    return 0


def gate_paired(a_path, b_path, limit, point=""):
    """[(row, before, after, why)] of two paired runs: a system row's p50 beyond limit, or a ratio row
    that changed and fell beyond it; the control aside."""
    a, b = load_paired(a_path), load_paired(b_path)
    lead = point + " " if point else ""
    out = []
    for q, by in a.questions.items():
        for s, ra in by.items():
            rb = b.questions.get(q, {}).get(s)
            if rb and s != a.control and rb["p50"] > ra["p50"] * (1 + limit):
                out.append(("%s%s/system:%s" % (lead, q, s), fmt(ra["p50"]), fmt(rb["p50"]),
                            "p50 ns %s" % fmt_change(ra["p50"], rb["p50"])))
    for q, by in a.pairs.items():
        for s, pa in by.items():
            pb = b.pairs.get(q, {}).get(s)
            if pb and s != a.control and ratio_change(a, b, q, pa, pb) == "changed" and pb.ratio * (1 + limit) < pa.ratio:
                out.append((lead + pa.name, fmt_ratio(pa), fmt_ratio(pb),
                            "ratio %s, changed" % fmt_change(pa.ratio, pb.ratio)))
    return out


def gate_rows(a_path, b_path, limit):
    """[(row, A p50, B p50, why)]: B's p50 beyond limit, significant when the runs can tell."""
    out = []
    for name, ra, rb, p, sig, _ in gain_rows(pairing_of(a_path, b_path)):
        if ra and rb and rb.p50 > ra.p50 * (1 + limit) and sig in ("yes", TOO_FEW):
            out.append((name, fmt(ra.p50), fmt(rb.p50), "p50 ns %s, %s" % (
                fmt_change(ra.p50, rb.p50), "significant (p = %s)" % fmt_p(p) if sig == "yes" else "untested: " + TOO_FEW)))
    return out


def gate(pct, a, b):
    """compare.sh --fail-above=PCT A B: the rows that tripped it, first; 1 when any."""
    try:
        limit = float(pct) / 100
    except ValueError:
        limit = -1.0
    if not (math.isfinite(limit) and limit >= 0):
        raise BadInput("--fail-above=%s: a percentage, a number 0 or more (e.g. 10)" % pct)
    rows = []
    for label, fa, fb in compared_files(a, b):
        if label == "space" and os.path.isdir(a):
            rows += gate_space(fa, fb, limit)
        elif AXIS_FILE.match(os.path.basename(fa)) and os.path.isdir(a):
            rows += gate_paired(fa, fb, limit, label)
        elif is_paired_file(fa) and is_paired_file(fb):
            rows += gate_paired(fa, fb, limit)
        else:
            rows += gate_rows(fa, fb, limit)
    if not rows:
        print("== pass: no row of B slower than A by more than %s%% (--fail-above)" % pct)
        return 0
    print("== FAIL: %d row%s of B slower than A by more than %s%% (--fail-above)" % (
        len(rows), "" if len(rows) == 1 else "s", pct))
    width = max(len(r[0]) for r in rows) + 2
    for r in rows:
        print("%-*s %24s %24s  %s" % ((width,) + r))
    print()
    return 1
