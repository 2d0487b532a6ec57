"""verdict.py merge: one-repetition runs in one file, as --repetitions=N writes it."""
import json
import re
import statistics
from collections import OrderedDict

from .files import BadInput, number, read, write_output
from .runs import parse_json


METRICS = ("real_time", "cpu_time", "min", "stddev", "p50", "p90", "p99", "p999", "max",
           "items_per_second", "bytes_per_second", "speedup")  # the binaries' aggregated fields


def aggregates(name, reps):
    """The mean, median, stddev, cv rows of one row's repetitions (src/base/report.c's fields)."""
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
            if not all(number(v) for v in values):
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
        text = read(p)
        parse_json(p, text)
        d = json.loads(text, object_pairs_hook=OrderedDict)
        names = [b["name"] for b in d["benchmarks"]]
        if any(b.get("run_type") == "aggregate" for b in d["benchmarks"]) or len(set(names)) != len(names):
            raise BadInput("%s: a run of more than one repetition: merge takes runs of one" % p)
        for key in ("executable", "system", "host_name"):
            if docs and d["context"].get(key) != docs[0]["context"].get(key):
                raise BadInput("%s: its %s differs from %s's" % (p, key, paths[0]))
        docs.append(d)
    return docs


def merge(out, paths):
    """Each row's repetitions, then its aggregates; a row some repetition lacks keeps the others."""
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
    write_output(out, '{\n  "context": %s,\n  "benchmarks": [\n%s\n  ]\n}\n' % (
        json.dumps(ctx), ",\n".join("    " + json.dumps(b) for b in rows)))
    return 0
