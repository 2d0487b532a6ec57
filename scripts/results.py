#!/usr/bin/python3
"""Reads shmbench's JSON results (Google Benchmark's schema).

  results.py summary A_DIR B_DIR     headline figures of two runs side by side
  results.py gain A B                per row of two runs (two --system runs: the
                                     integration gain), each a table or a JSON file
  results.py plotdata DIR OUT_DIR    gnuplot data files for plot.sh

Rows with repetitions are averaged over their repetitions (the iteration
rows, as the _mean aggregate does)."""
import json
import os
import sys
from collections import OrderedDict


def load(path):
    """(run_name -> row with values averaged over repetitions, context), or
    (None, None) if there is no such file."""
    if not os.path.exists(path):
        return None, None
    with open(path) as f:
        data = json.load(f)
    rows = OrderedDict()
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        rows.setdefault(b["run_name"], []).append(b)
    merged = OrderedDict()
    for name, reps in rows.items():
        row = dict(reps[0])
        for key in ("real_time", "bytes_per_second", "items_per_second"):
            if key in row:
                row[key] = sum(r[key] for r in reps) / len(reps)
        merged[name] = row
    return merged, data["context"]


STEPS = ("shm_open", "ftruncate", "mmap", "close", "total", "cleanup", "touch", "touch_reuse",
         "setup", "alloc", "free", "alloc_reuse", "first_use", "cold")


def parts(name):
    """'shm_alloc/posix/total/size_kb:4' -> ('posix', 'total', 'size_kb', 4, threads);
    a --system row has no variant: 'shm_alloc/alloc/size_kb:4' -> ('', 'alloc', ...)."""
    fields = name.split("/")
    threads = 1
    if fields[-1].startswith("threads:"):
        threads = int(fields.pop().split(":")[1])
    arg_name, arg = fields.pop().split(":")
    middle = fields[1:]
    step = middle.pop() if middle and middle[-1] in STEPS else ""
    return (middle[0] if middle else ""), step, arg_name, int(arg), threads


def headlines(folder):
    """[(label, unit, value)] of one results folder."""
    out = []
    alloc, _ = load(os.path.join(folder, "allocation.json"))
    if alloc:
        for name, row in alloc.items():
            variant, step, _, kb, _ = parts(name)
            if (variant, step) in (("posix", "total"), ("arena", "alloc")):
                out.append(("allocation %s %s %d KB" % (variant, step, kb), "ns", row["real_time"]))
    lookup, _ = load(os.path.join(folder, "lookup.json"))
    if lookup:
        for name, row in lookup.items():
            strategy, step, _, n, _ = parts(name)
            label = " ".join(x for x in ("lookup", strategy, step) if x)
            out.append(("%s %d segments" % (label, n), "ns", row["real_time"]))
    transfer, _ = load(os.path.join(folder, "transfer.json"))
    if transfer:
        for name, row in transfer.items():
            method, step, _, kb, threads = parts(name)
            if kb in (4, 65536) and step == "" and threads == 1:
                size = "4 KB" if kb == 4 else "64 MB"
                out.append(("transfer %s %s" % (method, size), "GB/s", row["bytes_per_second"] / 1e9))
    return out


def summary(a_dir, b_dir):
    a = OrderedDict((label, (unit, v)) for label, unit, v in headlines(a_dir))
    b = OrderedDict((label, (unit, v)) for label, unit, v in headlines(b_dir))
    labels = list(a) + [k for k in b if k not in a]
    if not labels:
        print("no results to summarise in %s or %s" % (a_dir, b_dir))
        return 1
    width = max(len(l) for l in labels) + 2
    print("%-*s %6s %14s %14s %8s" % (width, "headline", "unit", "A", "B", "B/A"))
    for label in labels:
        unit = (a.get(label) or b.get(label))[0]
        va = a[label][1] if label in a else None
        vb = b[label][1] if label in b else None
        fmt = lambda v: "-" if v is None else ("%.2f" % v if v < 100 else "%.0f" % v)
        ratio = "%.3f" % (vb / va) if va and vb else "-"
        print("%-*s %6s %14s %14s %8s" % (width, label, unit, fmt(va), fmt(vb), ratio))
    print("A = %s, B = %s; ns: lower is better, GB/s: higher is better" % (a_dir, b_dir))
    return 0


def p50_rows(path):
    """OrderedDict row key -> p50 ns of a table (key: the columns before
    'iterations'; '-' for a row not measured) or of a JSON file (key: name)."""
    with open(path) as f:
        text = f.read()
    rows = OrderedDict()
    if text.lstrip().startswith("{"):
        for b in json.loads(text)["benchmarks"]:
            if b.get("run_type") != "aggregate":
                rows.setdefault(b["name"], b["p50"])
        return rows
    lines = [l.split() for l in text.splitlines() if l.strip() and not l.startswith("#")]
    if not lines or "iterations" not in lines[0] or "p50_ns" not in lines[0]:
        raise ValueError("%s is neither a shmbench table nor its JSON" % path)
    keys, p50 = lines[0].index("iterations"), lines[0].index("p50_ns")
    for fields in lines[1:]:
        if "rep" in lines[0] and not fields[lines[0].index("rep")].isdigit():
            continue  # an aggregate row of --repetitions
        rows.setdefault(" ".join(fields[:keys]), None if fields[p50] == "-" else float(fields[p50]))
    return rows


def gain(a_path, b_path):
    try:
        a, b = p50_rows(a_path), p50_rows(b_path)
    except (OSError, ValueError) as e:
        sys.stderr.write("results.py gain: %s\n" % e)
        return 1
    keys = list(a) + [k for k in b if k not in a]
    if not keys:
        print("no rows in %s or %s" % (a_path, b_path))
        return 1
    width = max(len(k) for k in keys) + 2
    fmt = lambda v: "-" if v is None else ("%.2f" % v if v < 100 else "%.0f" % v)
    print("%-*s %12s %12s %9s" % (width, "row", "A_p50_ns", "B_p50_ns", "gain"))
    for k in keys:
        va, vb = a.get(k), b.get(k)
        g = "%.2f" % (va / vb) if va and vb else "-"
        print("%-*s %12s %12s %9s" % (width, k, fmt(va), fmt(vb), g))
    print("A = %s, B = %s; gain = A p50 / B p50 (above 1: B is faster); - = not in that run"
          % (a_path, b_path))
    return 0


def write_series(out_dir, name, series):
    """series: OrderedDict label -> [(x, y)]; writes one gnuplot data block per label."""
    with open(os.path.join(out_dir, name + ".dat"), "w") as f:
        for label, points in series.items():
            f.write('"%s"\n' % label)
            for x, y in sorted(points):
                f.write("%s %s\n" % (x, y))
            f.write("\n\n")
    with open(os.path.join(out_dir, name + ".labels"), "w") as f:
        f.write("\n".join(series.keys()) + "\n")


def transfer_point(name, row):
    method, step, _, kb, threads = parts(name)
    label = method + (" cold" if step else "") + (" %d threads" % threads if threads > 1 else "")
    return label, kb, row["bytes_per_second"] / 1e9


def lookup_point(name, row):
    strategy, step, _, segments, _ = parts(name)
    return " ".join(x for x in (strategy, step) if x), segments, row["real_time"]


def allocation_point(name, row):
    variant, step, _, kb, _ = parts(name)
    # setup is one pool per size, not a per-allocation cost
    return (None if step == "setup" else variant + " " + step), kb, row["real_time"]


# plot name, results file, row -> (series label or None, x, y)
PLOTS = (
    ("transfer", "transfer.json", transfer_point),
    ("lookup", "lookup_sweep.json", lookup_point),
    ("allocation", "allocation.json", allocation_point),
)


def plotdata(folder, out_dir):
    made = []
    meta = None
    for plot, filename, point in PLOTS:
        rows, ctx = load(os.path.join(folder, filename))
        if not rows:
            continue
        meta = meta or ctx
        series = OrderedDict()
        for name, row in rows.items():
            label, x, y = point(name, row)
            if label:
                series.setdefault(label, []).append((x, y))
        write_series(out_dir, plot, series)
        made.append(plot)
    if meta:
        with open(os.path.join(out_dir, "meta"), "w") as f:
            f.write("%s, %s\n" % (meta.get("host_name", "?"), meta.get("date", "?")[:16].replace("T", " ")))
    print(" ".join(made))
    return 0 if made else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "summary":
        return summary(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "gain":
        return gain(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "plotdata":
        return plotdata(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
