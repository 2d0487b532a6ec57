"""The binaries' results files, JSON or table, read into rows, and a results folder's files."""
import math
import os
import re
import statistics
from collections import OrderedDict

from .files import BadInput, CONTROL, benchmark_json, check_name, number, read


BENCHES = ("allocation", "lookup", "lookup_sweep", "transfer", "workload")  # workload: the KV-cache replay
SYSTEMS = ("mooncake", "flowipc_classic", "flowipc_jemalloc")
TIME_UNITS = ("ns", "us", "ms", "s")  # compare.py's
# The binaries' names and the first part of their rows' JSON names.
BINARIES = OrderedDict((("shm_allocation_bench", "shm_alloc"), ("shm_address_lookup_bench", "shm_lookup"),
                        ("shm_transfer_bench", "shm_transfer")))
# The key columns of a table that are not its variant: the first column is the argument
# (its header its name: size_kb, segments).
TABLE_KEYS = ("step", "threads", "rep")


class Row:
    """One benchmark row over its repetitions: the p50 of each repetition."""

    def __init__(self, name):
        self.name = name
        self.samples = []
        self.runs = []  # each repetition's JSON row (JSON files only), for its other counters

    @property
    def p50(self):
        return statistics.median(self.samples)


def attach_total(row):
    """A Row of each repetition's attaches x p50 (None without counts): Mooncake attaches each
    buffer, Flow-IPC each pool, so only totals compare."""
    out = Row(row.name + " total")
    out.samples = [float(b.get("iterations") or 0) * b["p50"] for b in row.runs]
    out.count = statistics.median(float(b.get("iterations") or 0) for b in row.runs) if row.runs else 0
    return out if out.samples and all(s > 0 for s in out.samples) else None


def parse_json(path, text):
    """(name -> Row, context) of a JSON text, every row checked; aggregate rows left out."""
    data, ctx = benchmark_json(path, text)
    rows = OrderedDict()
    for i, b in enumerate(data["benchmarks"]):
        check_name(path, i, b)
        what = "benchmark %s" % b["name"]
        if not (number(b.get("real_time")) and number(b.get("cpu_time"))) or b.get("time_unit") not in TIME_UNITS:
            raise BadInput("%s: %s lacks a real_time, cpu_time or time_unit" % (path, what))
        if "iterations" in b and not (number(b["iterations"]) and b["iterations"] >= 0):
            raise BadInput("%s: %s has iterations %r, not a count" % (path, what, b["iterations"]))
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


def table_name(bench, arg_name, cells):
    """A table row's JSON name, bench/variant/step/arg[/threads:T][/system:S], as the binary builds it."""
    middle = [cells[c] for c in ("variant", "step") if cells.get(c, "-") != "-"]
    name = "/".join([bench] + middle + ["%s:%s" % (arg_name, cells["arg"])])
    threads = cells.get("threads", "1")
    name += "/threads:%s" % threads if threads not in ("1", "-") else ""
    system = cells.get("system", "-")
    return name + ("/system:%s" % system if system != "-" else "")


def read_table(path, text):
    """(JSON name -> Row, binary, --system or '') of a table's text; aggregate rows left out."""
    if not text.endswith("\n"):
        raise BadInput("%s: truncated (its last line has no end)" % path)
    first = text.split(None, 2)
    binary = first[1] if len(first) > 1 and first[0] == "#" else ""
    if binary not in BINARIES:
        raise BadInput("%s: neither a shmbench table nor its JSON (no '# shm_..._bench' first line)" % path)
    system = re.search(r"^# system: (\S+)$", text, re.M)
    lines = [(n, l.split()) for n, l in enumerate(text.splitlines(), 1) if l.strip() and not l.startswith("#")]
    if not lines or "iterations" not in lines[0][1] or "p50_ns" not in lines[0][1]:
        raise BadInput("%s: neither a shmbench table nor its JSON (no column header)" % path)
    head = lines[0][1]
    nkeys, p50 = head.index("iterations"), head.index("p50_ns")
    roles = ["arg"] + [h if h in TABLE_KEYS else "variant" for h in head[1:nkeys]]
    if roles.count("variant") > 1:
        raise BadInput("%s: columns %s before 'iterations': not a shmbench table" % (path, " ".join(head[:nkeys])))
    system_col = head.index("system") if "system" in head else None  # a paired run's system
    rows = OrderedDict()
    for n, fields in lines[1:]:
        if any(CONTROL.search(f) for f in fields):
            raise BadInput("%s: line %d has a control character" % (path, n))
        if len(fields) <= p50:
            raise BadInput("%s: line %d has %d columns, too few to reach p50_ns (truncated?)" % (path, n, len(fields)))
        cells = dict(zip(roles, fields))
        if system_col is not None and len(fields) > system_col:
            cells["system"] = fields[system_col]
        if not cells.get("rep", "0").isdigit():
            continue  # an aggregate row of --repetitions
        key = table_name(BINARIES[binary], head[0], cells)
        row = rows.setdefault(key, Row(key))
        if "/vs:" in cells.get("system", ""):
            continue  # a ratio row: its times are savings, its figures are read from JSON
        if fields[p50] != "-":
            try:
                value = float(fields[p50])
            except ValueError:
                value = -1.0
            if not (math.isfinite(value) and value > 0):
                raise BadInput("%s: line %d: p50_ns '%s' is not a time" % (path, n, fields[p50]))
            row.samples.append(value)
            if fields[nkeys].isdigit():
                row.runs.append({"iterations": int(fields[nkeys]), "p50": value})
    if not rows:
        raise BadInput("%s: a table header and no row (truncated?)" % path)
    return rows, binary, system.group(1) if system else ""


class Run:
    """One output file: rows, kind ('JSON' or 'table'), binary, system ('' without --system)."""

    def __init__(self, path, rows, kind, binary, system):
        self.path, self.rows, self.kind, self.binary, self.system = path, rows, kind, binary, system


def json_run_facts(path, rows, ctx):
    """(binary, system) of a JSON file, by its row names and its context."""
    benches = set(name.split("/")[0] for name in rows)
    binaries = [b for b, prefix in BINARIES.items() if benches == {prefix}]
    if not binaries:
        raise BadInput("%s: rows named %s, not of one shmbench binary (%s)"
                       % (path, ", ".join(sorted(benches))[:80], ", ".join(BINARIES.values())))
    system = context_system(ctx)
    return binaries[0], "" if system is None else system


def context_system(ctx):
    """The --system a file's context says (older files: only in its flags), or None."""
    system = ctx.get("system")
    if isinstance(system, str):
        return system
    m = re.search(r"(?:^| )system=(\S*)", str(ctx.get("flags", "")))
    return m.group(1) if m else None


def is_json(text):
    """Is a results file's text JSON (else a table)?"""
    return text.lstrip().startswith("{")


def load_run(path):
    """The Run of a table or a JSON file."""
    text = read(path)
    if is_json(text):
        rows, ctx = parse_json(path, text)
        return Run(path, rows, "JSON", *json_run_facts(path, rows, ctx))
    rows, binary, system = read_table(path, text)
    return Run(path, rows, "table", binary, system)


def folder_files(folder):
    """key -> JSON path of a results folder: 'transfer', 'transfer_mooncake', ..."""
    keys = [k for bench in BENCHES for k in [bench] + ["%s_%s" % (bench, s) for s in SYSTEMS]]
    return existing(folder, keys, ".json")


def existing(folder, keys, suffix):
    """key -> folder/KEY+suffix of the keys whose file is there, in keys' order."""
    return OrderedDict((k, p) for k in keys for p in [os.path.join(folder, k + suffix)] if os.path.isfile(p))


def split_key(key):
    """'lookup_sweep_mooncake' -> ('lookup_sweep', 'mooncake'); 'transfer' -> ('transfer', '')."""
    for s in SYSTEMS:
        if key.endswith("_" + s):
            return key[:-len(s) - 1], s
    return key, ""


def parts(name):
    """'shm_transfer/memcpy/cold/size_kb:4/threads:2' -> (['memcpy', 'cold'], 'size_kb', 4, 2)."""
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


def run_system(path, key, ctx):
    """A folder file's --system, which its context must not contradict."""
    named = split_key(key)[1]
    said = context_system(ctx)
    if said is not None and said != named:
        raise BadInput("%s: its context says --system=%s, its name %s" % (path, said, named or "no system"))
    return named


def same(ns):
    """A figure as it is (a time in ns)."""
    return ns


def flag_dict(flags):
    """OrderedDict flag -> value of a context's "flags" text ('' for a flag without '=')."""
    return OrderedDict(f.split("=", 1) if "=" in f else (f, "") for f in str(flags).split())


def unique(xs):
    return list(OrderedDict.fromkeys(xs))
