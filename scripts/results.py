#!/usr/bin/python3
"""Reads shmbench's JSON results (Google Benchmark's schema).

  results.py summary A_DIR B_DIR     headline figures of two results folders side by side
  results.py gain A B                per row of two runs of one binary (two --system runs:
                                     the integration gain), each a table or a JSON file
  results.py systems DIR             the gain per row between the two systems of a folder
                                     written by run_all.sh --system
  results.py plotdata DIR OUT_DIR    gnuplot data and scripts for plot.sh
  results.py check A [B]             reads the files the commands above would read, of
                                     two files, two folders or one --system folder
A first argument --as=NAME starts error lines with NAME. A file that cannot be read as
results (truncated, not one of shmbench's, a table against a JSON file, two files with no
row in common) stops it: one line naming the file and what is wrong, exit 2.

Every figure is a median: a row's p50, and with --repetitions the median of the
repetitions' p50s (never the mean). A ratio is marked significant or not by the
two-sided Mann-Whitney U-test on the repetitions' p50s, when both runs have at least
MIN_REPETITIONS repetitions (compare.py's threshold); below that it says there are
too few repetitions to tell."""
import json
import math
import os
import re
import signal
import statistics
import sys
from collections import OrderedDict

BENCHES = ("allocation", "lookup", "lookup_sweep", "transfer")
SYSTEMS = ("mooncake", "flowipc_classic", "flowipc_jemalloc")
# Google Benchmark's compare.py (gbench/report.py UTEST_OPTIMAL_REPETITIONS) warns
# "Results unreliable! 9+ repetitions recommended" below this many.
MIN_REPETITIONS = 9
ALPHA = 0.05
# An effect under this share of the baseline's figure is "no practical difference".
PRACTICAL_CHANGE = 0.05
TOO_FEW = "too few reps"
# Control characters but the newline (which gp_string turns into a line break).
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


# ---------------------------------------------------------------- reading

class Row:
    """One benchmark row over its repetitions: the p50 of each repetition."""

    def __init__(self, name):
        self.name = name
        self.samples = []
        self.runs = []  # each repetition's JSON row (JSON files only), for its other counters

    @property
    def p50(self):
        return statistics.median(self.samples)


class BadInput(Exception):
    """A results file that cannot be read as one: its message names the file and what is
    wrong, in one line (main prints it and exits 2)."""


TIME_UNITS = ("ns", "us", "ms", "s")  # compare.py's


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput("%s: cannot be read: %s" % (path, getattr(e, "strerror", None) or e))


def parse_json(path, text):
    """(OrderedDict name -> Row, context) of a benchmark JSON file's text, every row
    checked for what results.py and compare.py read; aggregate rows are left out (the
    median is taken here, of the iteration rows' p50s)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise BadInput("%s: not valid JSON (truncated?): %s" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BadInput("%s: not a benchmark JSON file (no \"benchmarks\" list)" % path)
    ctx = data.get("context", {})
    if not isinstance(ctx, dict):
        raise BadInput("%s: its \"context\" is not an object" % path)
    rows = OrderedDict()
    for i, b in enumerate(data["benchmarks"]):
        what = "benchmark %d" % i
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise BadInput("%s: %s has no name" % (path, what))
        if CONTROL.search(b["name"]) or "\n" in b["name"]:
            # printed to a terminal (an escape sequence) and written into gnuplot's data
            raise BadInput("%s: %s has a control character in its name" % (path, what))
        what = "benchmark %s" % b["name"]
        if not (number(b.get("real_time")) and number(b.get("cpu_time"))) or b.get("time_unit") not in TIME_UNITS:
            raise BadInput("%s: %s lacks a real_time, cpu_time or time_unit" % (path, what))
        if b.get("run_type") == "aggregate" or b.get("p50") is None:
            continue
        if not number(b["p50"]) or b["p50"] <= 0:
            raise BadInput("%s: %s has p50 %r, not a time" % (path, what, b["p50"]))
        row = rows.setdefault(b["name"], Row(b["name"]))
        row.samples.append(float(b["p50"]))
        row.runs.append(b)
    if not rows:
        raise BadInput("%s: no benchmark row with a p50" % path)
    return rows, ctx


def load(path):
    """(OrderedDict name -> Row, context) of a JSON file (see parse_json)."""
    return parse_json(path, read(path))


def load_table(path, text):
    """OrderedDict key -> Row of a table: the key is the columns before 'iterations'
    except 'rep'; a row not measured ('-') has no samples."""
    if not text.endswith("\n"):
        raise BadInput("%s: truncated (its last line has no end)" % path)
    lines = [(n, l.split()) for n, l in enumerate(text.splitlines(), 1) if l.strip() and not l.startswith("#")]
    if not lines or "iterations" not in lines[0][1] or "p50_ns" not in lines[0][1]:
        raise BadInput("%s: neither a shmbench table nor its JSON" % path)
    head = lines[0][1]
    nkeys, p50 = head.index("iterations"), head.index("p50_ns")
    rep = head.index("rep") if "rep" in head else None
    rows = OrderedDict()
    for n, fields in lines[1:]:
        if any(CONTROL.search(f) for f in fields):
            raise BadInput("%s: line %d has a control character" % (path, n))
        if len(fields) <= p50:
            raise BadInput("%s: line %d has %d columns, too few to reach p50_ns (truncated?)" % (path, n, len(fields)))
        if rep is not None and not fields[rep].isdigit():
            continue  # an aggregate row of --repetitions
        key = " ".join(f for i, f in enumerate(fields[:nkeys]) if i != rep)
        row = rows.setdefault(key, Row(key))
        if fields[p50] != "-":
            try:
                value = float(fields[p50])
            except ValueError:
                value = -1.0
            if not (math.isfinite(value) and value > 0):
                raise BadInput("%s: line %d: p50_ns '%s' is not a time" % (path, n, fields[p50]))
            row.samples.append(value)
    if not rows:
        raise BadInput("%s: a table header and no row (truncated?)" % path)
    return rows


def load_any(path):
    """(OrderedDict key -> Row, 'JSON' or 'table') of a table or a JSON file."""
    text = read(path)
    if text.lstrip().startswith("{"):
        return parse_json(path, text)[0], "JSON"
    return load_table(path, text), "table"


def require_common(a, b, a_path, b_path):
    if not any(k in b for k in a):
        raise BadInput("%s and %s have no row in common: not two runs of one binary" % (a_path, b_path))


def load_pair(a_path, b_path):
    """The rows of two output files of one binary: both tables or both JSON, sharing rows
    (a table's keys are not JSON names: every row would show '-')."""
    (a, a_kind), (b, b_kind) = load_any(a_path), load_any(b_path)
    if a_kind != b_kind:
        raise BadInput("%s is a %s and %s a %s: give two tables or two JSON files" % (a_path, a_kind, b_path, b_kind))
    require_common(a, b, a_path, b_path)
    return a, b


def folder_files(folder):
    """OrderedDict key -> JSON path of a results folder: 'transfer' for transfer.json,
    'transfer_mooncake' for transfer_mooncake.json (run_all.sh --system)."""
    out = OrderedDict()
    for bench in BENCHES:
        for key in [bench] + ["%s_%s" % (bench, s) for s in SYSTEMS]:
            path = os.path.join(folder, key + ".json")
            if os.path.isfile(path):
                out[key] = path
    return out


def split_key(key):
    """'lookup_sweep_mooncake' -> ('lookup_sweep', 'mooncake'); 'transfer' -> ('transfer', '')."""
    for s in SYSTEMS:
        if key.endswith("_" + s):
            return key[:-len(s) - 1], s
    return key, ""


def parts(name):
    """'shm_transfer/memcpy/cold/size_kb:4/threads:2' -> (['memcpy', 'cold'], 'size_kb', 4, 2).
    The middle parts are whatever the row names hold (variant, step, mode: any of them
    may be absent, e.g. with --system)."""
    fields = name.split("/")
    threads = 1
    if len(fields) > 2 and re.match(r"threads:\d+$", fields[-1]):
        threads = int(fields.pop().split(":")[1])
    arg_name, _, arg = fields.pop().partition(":")
    try:
        value = int(arg)
    except ValueError:
        value = None
    return fields[1:], arg_name, value, threads


# ---------------------------------------------------------------- significance

def p_value(a, b):
    """The two-sided U-test's p-value on two rows' samples, or None with too few."""
    if min(len(a.samples), len(b.samples)) < MIN_REPETITIONS:
        return None
    from scipy.stats import mannwhitneyu
    p = mannwhitneyu(a.samples, b.samples, alternative="two-sided").pvalue
    return 1.0 if math.isnan(p) else p  # nan: every sample of both equal, no difference


def verdicts(pairs):
    """[(p, 'yes'|'no'|TOO_FEW|'-')] of [(row A, row B)] (a None row: '-'). The rows of one
    table are one family: Holm's step-down correction keeps the chance of any false 'yes'
    in the table below ALPHA, where a per-row test would give one in 1/ALPHA rows by chance."""
    ps = [p_value(a, b) if a and b else None for a, b in pairs]
    tested = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    significant = set()
    for k, (p, i) in enumerate(tested):
        if p > ALPHA / (len(tested) - k):
            break
        significant.add(i)
    out = []
    for i, (a, b) in enumerate(pairs):
        if not (a and b):
            out.append((None, "-"))
        elif ps[i] is None:
            out.append((None, TOO_FEW))
        else:
            out.append((ps[i], "yes" if i in significant else "no"))
    return out


def reps_text(rows):
    counts = sorted(set(len(r.samples) for r in rows if r.samples))
    if not counts:
        return "no rows"
    return "%d repetitions" % counts[0] if len(counts) == 1 else "%d-%d repetitions" % (counts[0], counts[-1])


def significance_note(a_rows, b_rows):
    return ("significant: two-sided Mann-Whitney U-test on the repetitions' p50s (p), at %.2f for "
            "the whole table (Holm's correction over its %d tested rows); yes: the runs differ, "
            "no: no evidence they do; %s: fewer than %d repetitions in A or B (A has %s, B has %s), "
            "the test cannot tell: run both with --repetitions=%d or more"
            % (ALPHA, sum(1 for a, b in zip(a_rows, b_rows)
                          if min(len(a.samples), len(b.samples)) >= MIN_REPETITIONS),
               TOO_FEW, MIN_REPETITIONS, reps_text(a_rows), reps_text(b_rows), MIN_REPETITIONS))


def fmt(v):
    if v is None:
        return "-"
    return "%.0f" % v if v >= 100 else "%.1f" % v if v >= 10 else "%.2f" % v


def fmt_p(p):
    return "-" if p is None else ("%.3f" % p if p >= 0.001 else "%.0e" % p)


# ---------------------------------------------------------------- summary

def headline_rows(key, rows):
    """[(label, unit, Row, to_value)]: the rows of one file that make its headline."""
    bench, system = split_key(key)
    prefix = system + ": " if system else ""
    sizes = [parts(n)[2] for n in rows if parts(n)[2] is not None]
    ends = (min(sizes), max(sizes)) if sizes else ()
    out = []
    for name, row in rows.items():
        middle, _, arg, _ = parts(name)
        if bench == "allocation":
            if arg in ends and middle and middle[-1] in ("total", "alloc"):
                out.append((prefix + name, "ns", row, lambda v: v))
        elif bench == "lookup":
            out.append((prefix + name, "ns", row, lambda v: v))
        elif bench == "transfer":
            if arg in ends:
                # GB/s of the median: bytes per ns
                out.append((prefix + name, "GB/s", row, lambda v, b=arg * 1024: b / v))
    return out


def summary(a_dir, b_dir):
    a_files, b_files = folder_files(a_dir), folder_files(b_dir)
    keys = [k for k in a_files if k in b_files]
    lines, pairs = [], []
    for key in keys:
        a_rows, _ = load(a_files[key])
        b_rows, _ = load(b_files[key])
        a_head = OrderedDict((l, (u, r, f)) for l, u, r, f in headline_rows(key, a_rows))
        b_head = OrderedDict((l, (u, r, f)) for l, u, r, f in headline_rows(key, b_rows))
        for label in merged_keys(a_head, b_head):
            unit, _, f = a_head.get(label) or b_head[label]
            ra = a_head[label][1] if label in a_head else None
            rb = b_head[label][1] if label in b_head else None
            va = f(ra.p50) if ra and ra.samples else None
            vb = f(rb.p50) if rb and rb.samples else None
            ratio = "%.3f" % (vb / va) if va and vb else "-"
            lines.append((label, unit, fmt(va), fmt(vb), ratio))
            pairs.append((ra if va else None, rb if vb else None))
    if not lines:
        print("no headline rows in both %s and %s" % (a_dir, b_dir))
        return 1
    width = max(len(l[0]) for l in lines) + 2
    row_fmt = "%-*s %5s %12s %12s %8s %7s  %s"
    print(row_fmt % (width, "headline (p50; medians over repetitions)", "unit", "A", "B", "B/A", "p",
                     "significant"))
    for l, (p, sig) in zip(lines, verdicts(pairs)):
        print(row_fmt % ((width,) + l + (fmt_p(p), sig)))
    print("A = %s, B = %s; every figure is a median: ns = p50 per operation, GB/s = size / p50 "
          "(10^9 bytes/s), with repetitions the median of the repetitions' p50s; ns: lower is "
          "better, GB/s: higher is better" % (a_dir, b_dir))
    tested = [(a, b) for a, b in pairs if a and b]
    print(significance_note([a for a, _ in tested], [b for _, b in tested]))
    return 0


# ---------------------------------------------------------------- gain

def merged_keys(a, b):
    """a's keys, with each key only b has placed after the key that precedes it in b."""
    keys = list(a)
    prev = None
    for k in b:
        if k not in a and k not in keys:
            keys.insert(0 if prev is None else keys.index(prev) + 1, k)
        prev = k
    return keys


def gain_table(a, b, a_name, b_name):
    keys = merged_keys(a, b)
    if not keys:
        print("no rows in %s or %s" % (a_name, b_name))
        return 1
    width = max(len(k) for k in keys) + 2
    row_fmt = "%-*s %12s %12s %9s %7s  %s"
    print(row_fmt % (width, "row", "A_p50_ns", "B_p50_ns", "gain", "p", "significant"))
    pairs = []
    for k in keys:
        ra, rb = a.get(k), b.get(k)
        pairs.append((ra if ra and ra.samples else None, rb if rb and rb.samples else None))
    for k, (ra, rb), (p, sig) in zip(keys, pairs, verdicts(pairs)):
        va = ra.p50 if ra else None
        vb = rb.p50 if rb else None
        g = "%.2f" % (va / vb) if va and vb else "-"
        print(row_fmt % (width, k, fmt(va), fmt(vb), g, fmt_p(p), sig))
    paired_a = [ra for ra, rb in pairs if ra and rb]
    paired_b = [rb for ra, rb in pairs if ra and rb]
    # one line: a table's line count is rows + 2
    print("A = %s, B = %s; gain = A p50 / B p50 (medians over repetitions; above 1: B is faster); "
          "- = not in that run; %s" % (a_name, b_name, significance_note(paired_a, paired_b)))
    return 0


def gain(a_path, b_path):
    a, b = load_pair(a_path, b_path)
    return gain_table(a, b, a_path, b_path)


def system_pairs(folder):
    """[(bench, baseline key, other key)] of a run_all.sh --system folder."""
    files = folder_files(folder)
    out = []
    for bench in BENCHES:
        systems = [s for s in SYSTEMS if "%s_%s" % (bench, s) in files]
        if "mooncake" in systems and len(systems) > 1:
            for other in systems[1:]:
                out.append((bench, "%s_mooncake" % bench, "%s_%s" % (bench, other)))
    return out, files


def check(paths):
    """Reads every results file that the command on these paths will read (two files,
    two folders, or one --system folder), so that a bad one stops it before it prints."""
    if len(paths) == 2 and all(os.path.isfile(p) for p in paths):
        load_pair(*paths)
        return 0
    folders = [folder_files(d) for d in paths]
    rows = [OrderedDict((k, load(path)[0]) for k, path in f.items()) for f in folders]
    if len(paths) == 2:
        same = [(k, k) for k in rows[0] if k in rows[1]]
    else:
        rows.append(rows[0])
        folders.append(folders[0])
        same = [(a, b) for _, a, b in system_pairs(paths[0])[0]]
    for a, b in same:
        require_common(rows[0][a], rows[1][b], folders[0][a], folders[1][b])
    return 0


def systems(folder):
    pairs, files = system_pairs(folder)
    check([folder])
    if not pairs:
        sys.stderr.write("results.py systems: %s holds no mooncake and Flow-IPC pair "
                         "(written by run_all.sh --system)\n" % folder)
        return 1
    for bench, a, b in pairs:
        print("== %s: %s against %s" % (bench, split_key(a)[1], split_key(b)[1]))
        gain_table(load(files[a])[0], load(files[b])[0], files[a], files[b])
        print()
    return 0


# ---------------------------------------------------------------- plots

# Okabe-Ito's colour-blind-safe palette, its yellow (too faint on white) replaced by grey.
PALETTE = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#999999")
# The same colour for a name in every plot.
PREFERRED = {
    "mooncake": 0, "posix": 0, "flowipc_classic": 4, "bipc": 4, "flowipc_jemalloc": 5,
    "jemalloc": 5, "jemalloc_tcache": 6, "arena": 3, "offset": 1, "memcpy": 0, "loop": 1, "nt": 3, "movsb": 4,
    "linear": 1, "lower_bound": 6, "tree": 3, "arithmetic": 7,
    "shm_open": 2, "ftruncate": 1, "mmap": 3, "close": 6, "total": 0, "cleanup": 5, "touch": 4,
    "touch_reuse": 7,
}
POINTS = (7, 5, 9, 13, 11, 15, 6, 4, 8, 12)
# The same dash type for a step or mode in every plot: solid for the main figure.
DASHES = {"": 1, "alloc": 1, "total": 1, "free": 2, "cold": 2, "latency": 2, "alloc_reuse": 3,
          "first_use": 4, "touch": 5, "touch_reuse": 5}


def size_label(kb):
    """4 -> '4K', 1024 -> '1M', 65536 -> '64M' (1 K = 1024 bytes)."""
    for unit, scale in (("G", 1024 * 1024), ("M", 1024), ("K", 1)):
        if kb >= scale and kb % scale == 0:
            return "%d%s" % (kb // scale, unit)
    return "%gK" % kb


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
    """A gnuplot string expression that stays inert whatever text holds (a host name, a
    flag value or a row name of a results file someone sent): single-quoted parts, where
    gnuplot substitutes neither `backquotes` nor @macros and '' is a quote, joined by a
    "\\n" constant at each line break; other control characters become '?'."""
    lines = CONTROL.sub("?", str(text)).split("\n")
    return '."\\n".'.join("'%s'" % l.replace("'", "''") for l in lines)


def dat_string(text):
    """A string column of a gnuplot data file (read as data, never run): one line, double
    quotes, none inside."""
    return '"%s"' % re.sub(r"[\x00-\x1f\x7f]", "?", str(text)).replace('"', "'")


def context_lines(ctx):
    """Title lines of a run's context: CPU, host, date, build; its flags."""
    cpu = "%s, %s cpus" % (ctx.get("cpu_model", "?"), ctx.get("num_cpus", "?"))
    if ctx.get("mhz_per_cpu"):
        cpu += ", %s MHz" % ctx["mhz_per_cpu"]
    first = "%s; host %s; %s" % (cpu, ctx.get("host_name", "?"), str(ctx.get("date", "?"))[:16].replace("T", " "))
    build = ["shmbench " + str(ctx.get("shmbench_version", "?"))]
    for k, v in ctx.items():
        if ("commit" in k or "compiler" in k) and isinstance(v, str) and v:
            build.append(v)
    first += "; " + " ".join(build)
    flags = ctx.get("flags")
    return [first] + (wrap("flags: %s" % flags) if flags else [])


class Series:
    def __init__(self, label, primary, secondary):
        self.label, self.primary, self.secondary = label, primary, secondary
        self.points = []  # (x, y, lo, hi)


def styles(series):
    """gnuplot line styles: a colour and point type per primary name, a dash type per
    secondary name, so that no two series look alike, in colour or in grey."""
    colours, taken = {}, set()
    primaries = list(OrderedDict.fromkeys(s.primary for s in series))
    for name in primaries:
        want = PREFERRED.get(name.split()[0] if name else name)
        if want is not None and want not in taken:
            colours[name] = want
            taken.add(want)
    free = [i for i in range(len(PALETTE)) if i not in taken]
    for name in primaries:
        if name not in colours:
            colours[name] = free.pop(0) if free else len(colours) % len(PALETTE)
    secondaries = list(OrderedDict.fromkeys(s.secondary for s in series))
    dashes = {}
    for name in secondaries:
        dashes[name] = DASHES.get(name.split(" ")[0], 1 + len(dashes) % 5)
    out = []
    for s in series:
        pt = POINTS[primaries.index(s.primary) % len(POINTS)]
        out.append((PALETTE[colours[s.primary]], pt, dashes[s.secondary]))
    return out


def series_of(files, keys, point):
    """OrderedDict label -> Series over the files of keys; point(middle, arg, threads, row)
    -> (primary, secondary, x, p50 ns -> y) or None to leave the row out. y is taken of the
    median of the repetitions' p50s, its bars of their min and max."""
    out = OrderedDict()
    reps = set()
    ctx = None
    for key in keys:
        rows, c = load(files[key])
        ctx = ctx or dict(c)
        system = split_key(key)[1]
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
    systems = [split_key(k)[1] for k in keys if split_key(k)[1]]
    if ctx and len(systems) > 1:  # one title for the systems' runs, which differ only there
        ctx["flags"] = re.sub(r"\bsystem=\S*", "system=" + ",".join(systems), str(ctx.get("flags", "")))
    return out, reps, ctx


def write_data(out_dir, name, series):
    """Writes NAME.dat into out_dir; returns its name, which the gnuplot script (run
    there) reads."""
    with open(os.path.join(out_dir, name + ".dat"), "w") as f:
        for s in series:
            f.write("# %s\n" % dat_string(s.label))
            for p in sorted(s.points):
                f.write("%s %r %r %r\n" % p)
            f.write("\n\n")
    return name + ".dat"


def bars_note(reps):
    n = max(reps) if reps else 1
    if n < 2:
        return "one repetition: no error bars (run with --repetitions=N for p10-p90 bars)"
    return "error bars: p10-p90 of the %s repetitions' p50s; points: their median" % (
        "/".join(str(r) for r in sorted(reps)))


def quantile(xs, q):
    """The q quantile of xs, linear between the order statistics (numpy's default)."""
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    i = int(pos)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)


def time_label(ns):
    """A tick label of a time in ns: 500 ns, 2 µs, 10 ms."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return "%g %s" % (ns / scale, unit)
    return "%g ns" % ns


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
    cmds = ["unset arrow", "unset label", "set title %s" % gp_string(title),
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


def script(title_lines, panels, layout=None, size=(1100, 700), key=True):
    """The gnuplot script of one PNG, written to stdout (plot.sh names the file: no path
    of the user's enters the script)."""
    head = ["set terminal pngcairo noenhanced size %d,%d font \"sans,10\"" % size,
            "set grid lc rgb \"#dddddd\"",
            "set key outside right top Left reverse samplen 3",
            "set bars small"]
    if layout:
        head.append("set lmargin at screen 0.08")
        head.append("set rmargin at screen %s" % (0.74 if key else 0.97))
        if key:
            head.append("set key at screen 0.76, graph 1 left top Left reverse samplen 3")
        head.append("set multiplot layout %d,%d title %s" % (layout[0], layout[1],
                                                              gp_string("\n".join(title_lines))))
        body = []
        for p in panels:
            body.extend(p)
        return "\n".join(head + body + ["unset multiplot"]) + "\n"
    p = panels[0]
    p[2] = "set title %s" % gp_string("\n".join(title_lines))
    return "\n".join(head + p) + "\n"


def transfer_point(middle, arg, threads, row):
    method = middle[0] if middle else "memcpy"
    rest = middle[1:] + (["%d threads" % threads] if threads > 1 else [])
    return method, " ".join(rest), arg, lambda ns: arg * 1024 / ns  # GB/s: bytes per ns


def same(ns):
    return ns


KERNELS = ("linear", "lower_bound", "tree", "arithmetic")


def lookup_point(middle, arg, threads, row):
    primary = middle[0] if middle else "?"
    if primary in KERNELS:
        primary += " (kernel)"
    return primary, " ".join(middle[1:]), arg, same


def plot_transfer(files, keys, out_dir):
    series, reps, ctx = series_of(files, keys, transfer_point)
    if not series:
        return None
    series = list(series.values())
    data = write_data(out_dir, "transfer", series)
    xs = [p[0] for s in series for p in s.points]
    extra = []
    for c in ctx.get("caches") or []:
        if not isinstance(c, dict) or c.get("type") not in ("Data", "Unified") or not number(c.get("size")) \
                or not isinstance(c.get("level"), int):
            continue
        kb = c["size"] / 1024
        name = "L%d%s" % (c["level"], "d" if c["type"] == "Data" else "")
        if min(xs) <= kb <= max(xs):
            extra.append("set arrow from %s, graph 0 to %s, graph 1 nohead dt 3 lw 1.2 lc rgb \"#555555\"" % (kb, kb))
            extra.append("set label %s at %s, graph 0.98 rotate by 90 right offset -1.2,0 textcolor rgb \"#555555\""
                         % (gp_string("%s %s" % (name, size_label(int(kb)))), kb))
    title = ["shm_transfer_bench: copy bandwidth through SHM, GB/s = size / p50 (10^9 bytes/s); "
             "dotted lines: cache sizes"] + context_lines(ctx) + [bars_note(reps)]
    p = panel(data, series, "", "transfer size (1K = 1024 bytes)", "GB/s (higher is better)",
              ticks(xs, size_label), extra, with_bars=max(reps) > 1)
    return script(title, [p])


def plot_lookup(files, keys, out_dir):
    series, reps, ctx = series_of(files, keys, lookup_point)
    if not series:
        return None
    series = list(series.values())
    data = write_data(out_dir, "lookup", series)
    xs = [p[0] for s in series for p in s.points]
    title = ["shm_address_lookup_bench: time per address translation (p50), by registered segments; "
             "kernels are bounds, the others the systems' paths"] + context_lines(ctx) + [bars_note(reps)]
    p = panel(data, series, "", "registered segments", "time per lookup, p50 (lower is better)",
              ticks(xs, lambda x: "%d" % x), logy=True, with_bars=max(reps) > 1, ylabels=time_label)
    return script(title, [p])


def plot_allocation(files, keys, out_dir):
    def posix(middle, arg, threads, row):
        if middle[:1] == ["posix"]:
            return " ".join(middle[1:]) or "?", "", arg, same
        return None

    def pools(middle, arg, threads, row):
        if middle[:1] != ["posix"] and middle[-1:] != ["register"]:
            return middle[0], " ".join(middle[1:]), arg, same
        return None

    def register(middle, arg, threads, row):
        if middle[-1:] == ["register"]:
            return " ".join(middle[:-1]) or "?", "register", arg, same
        if middle == ["posix", "total"]:
            return "posix", "register", arg, same
        return None

    panels, reps, ctx = [], set(), None
    specs = (
        (posix, "posix (Mooncake's createSharedMemory), per step", "time per operation, p50"),
        (pools, "per block: colour = allocator (offset: Mooncake's), line = step", "time per operation, p50"),
        (register, "register: a buffer or pool made and known (posix total: Mooncake's createSharedMemory; "
         "a pool: once per size)", "time per buffer or pool, p50"),
    )
    for i, (point, ptitle, ylabel) in enumerate(specs):
        series, r, c = series_of(files, keys, point)
        if not series:
            continue
        reps |= r
        ctx = ctx or c
        series = list(series.values())
        data = write_data(out_dir, "allocation%d" % i, series)
        xs = [p[0] for s in series for p in s.points]
        panels.append(panel(data, series, ptitle, "allocation size (1K = 1024 bytes)", ylabel,
                            ticks(xs, size_label), logy=True, with_bars=max(r) > 1, ylabels=time_label))
    if not panels:
        return None
    title = ["shm_allocation_bench: what one SHM allocation costs (log-log)"] + context_lines(ctx) + \
        [bars_note(reps)]
    return script(title, panels, layout=(len(panels), 1), size=(1100, 380 * len(panels) + 120))


def plot_gain(folder, out_dir):
    pairs, files = system_pairs(folder)
    if not pairs:
        return None
    panels = []
    ctx = None
    used = [b for b, _, _ in pairs]
    for bench, a_key, b_key in pairs:
        if bench == "lookup" and "lookup_sweep" in used:
            continue  # the sweep holds the same rows at more counts
        a, ca = load(files[a_key])
        b, _ = load(files[b_key])
        ctx = ctx or ca
        bars = []
        for name, ra in a.items():
            rb = b.get(name)
            if rb is None or not ra.samples or not rb.samples:
                continue
            middle, arg_name, arg, threads = parts(name)
            x = size_label(arg) if arg_name.startswith("size") else "%s segs" % arg
            label = " ".join(middle + [x] + (["%dT" % threads] if threads > 1 else []))
            bars.append((label, " ".join(middle), ra.p50 / rb.p50))
        if not bars:
            continue
        data = "gain_%s.dat" % bench
        steps = list(OrderedDict.fromkeys(s for _, s, _ in bars))
        with open(os.path.join(out_dir, data), "w") as f:
            for i, (label, step, g) in enumerate(bars):
                colour = int(PALETTE[(4 + 2 * steps.index(step)) % len(PALETTE)][1:], 16)
                f.write("%d %r %d %s %s %r\n" % (i, g, colour, dat_string(label),
                                                 dat_string("%.2f" % g if g < 10 else "%.0f" % g),
                                                 g * 1.12 if g >= 1 else g / 1.12))
        other = split_key(b_key)[1]
        ys = [g for _, _, g in bars]
        lo, hi = min(ys + [1.0]) / 1.6, max(ys + [1.0]) * 1.8
        p = ["unset arrow", "unset label",
             "set title %s" % gp_string("%s: mooncake p50 / %s p50 per row (above 1: %s is faster)"
                                        % (bench, other, other)),
             "unset xlabel", "set ylabel \"gain (log scale)\"", "unset logscale x", "set logscale y",
             "set yrange [%r:%r]" % (lo, hi), "set xrange [-0.7:%r]" % (len(bars) - 0.3),
             log_ytics(lo, hi),
             "set xtics rotate by 45 right font \",8\"", "set style fill solid 0.85 border -1",
             "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb \"#000000\"",
             # a bar from 1 to the gain: up when the Flow-IPC path is faster, down when slower
             "plot %s using 1:2:($1-0.35):($1+0.35):($2<1?$2:1):($2<1?1:$2):3:xtic(4) "
             "with boxxyerror lc rgb variable notitle, \\\n"
             "     '' using 1:6:5 with labels font \",8\" notitle"
             % gp_string(data)]
        panels.append(p)
    if not panels:
        return None
    title = ["Gain of Flow-IPC (%s) over Mooncake per row: p50 ratio, medians over repetitions; "
             "bar colour = step" % ", ".join(sorted(set(split_key(b)[1] for _, _, b in pairs)))] + context_lines({k: v for k, v in ctx.items() if k != "flags"})
    return script(title, panels, layout=(len(panels), 1), size=(1200, 420 * len(panels) + 100),
                  key=False)


def plotdata(folder, out_dir):
    files = folder_files(folder)
    made = []
    by_bench = OrderedDict((b, [k for k in files if split_key(k)[0] == b]) for b in BENCHES)
    lookup_keys = by_bench["lookup_sweep"] or by_bench["lookup"]
    jobs = (("transfer", plot_transfer, by_bench["transfer"]),
            ("lookup", plot_lookup, lookup_keys),
            ("allocation", plot_allocation, by_bench["allocation"]))
    for name, fn, keys in jobs:
        if not keys:
            continue
        text = fn(files, keys, out_dir)
        if text:
            with open(os.path.join(out_dir, name + ".gp"), "w") as f:
                f.write(text)
            made.append(name)
    text = plot_gain(folder, out_dir)
    if text:
        with open(os.path.join(out_dir, "gain.gp"), "w") as f:
            f.write(text)
        made.append("gain")
    print(" ".join(made))
    return 0 if made else 1


def run(argv):
    if len(argv) == 4 and argv[1] == "summary":
        return summary(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "gain":
        return gain(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "systems":
        return systems(argv[2])
    if len(argv) == 4 and argv[1] == "plotdata":
        return plotdata(argv[2], argv[3])
    if len(argv) in (3, 4) and argv[1] == "check":
        return check(argv[2:])
    sys.stderr.write(__doc__)
    return 2


def main(argv):
    """--as=NAME first: the script whose name starts an error line (compare.sh, plot.sh)."""
    prog = "results.py"
    if len(argv) > 1 and argv[1].startswith("--as="):
        prog = argv.pop(1)[len("--as="):]
    try:
        return run(argv)
    except BadInput as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return 2


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head: end quietly
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: no traceback
    sys.exit(main(sys.argv))
