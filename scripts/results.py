#!/usr/bin/python3
"""Reads shmbench's results (Google Benchmark's JSON schema, and the binaries' tables).

  results.py summary A_DIR B_DIR     headline figures of two results folders side by side
  results.py gain A B                per row of two runs of one binary (two --system runs:
                                     the integration gain), two tables or two JSON files
  results.py systems DIR             the gain per row of each Flow-IPC flavour over Mooncake
                                     in a folder written by run_all.sh --system
  results.py plotdata DIR OUT_DIR    gnuplot data and scripts for plot.sh
  results.py check A [B]             reads the files the commands above would read, of
                                     two files, two folders or one --system folder
  results.py place SRC DEST          puts the file SRC at DEST as every output is written
  results.py paired DIR              the ratio rows of a paired folder (BENCH_paired.json)
  results.py paired A B              two paired folders or files (before, after): each system
                                     row's time, each ratio row's interval, changed or not
  results.py pairedcheck A [B]       reads the paired files those two would read
  results.py gate PCT A B            the rows of B slower than A by more than PCT percent (two
                                     files or folders, paired or not), first; exit 1 if any
  results.py flags A B               one warning line on stderr when A and B ran with
                                     different flags
A first argument --as=NAME starts error lines with NAME. A file that cannot be read as
results (truncated, not one of shmbench's, a table against a JSON file, two binaries'
files, two files with no row in common) stops it: one line naming the file and what is
wrong, exit 2. Every file is written by write_output (a temporary file renamed over a
regular file, a device or FIFO written through, a link or other kind of file refused:
exit 2); a write that fails, to a file or to stdout, is one line naming it, exit 1.

Every row is named as the JSON file names it (a table's rows too). Two runs pair row by
row: a run without --system against a --system run through that system's rows (as_system),
and a one-off step under its older name with today's (first_use with attach, setup with
register). Every figure is a median: a row's p50, and with --repetitions the median of the
repetitions' p50s (never the mean). A change is marked significant or not by the two-sided
Mann-Whitney U-test on the repetitions' p50s, when both runs have at least MIN_REPETITIONS
repetitions (compare.py's threshold; below that it says there are too few repetitions to
tell), and a change under PRACTICAL_CHANGE is no practical difference, significant or not."""
import json
import math
import os
import random
import re
import signal
import stat
import statistics
import sys
import tempfile
from collections import OrderedDict

BENCHES = ("allocation", "lookup", "lookup_sweep", "transfer", "workload")  # workload: the KV-cache replay
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


def attach_total(row):
    """A Row whose samples are each repetition's total: attaches (iterations) x p50, the
    receiver's whole first-use cost; None if a repetition lacks its count. Mooncake attaches
    each buffer and Flow-IPC each pool, so only totals compare across the systems."""
    out = Row(row.name + " total")
    out.samples = [float(b.get("iterations") or 0) * b["p50"] for b in row.runs]
    out.count = statistics.median(float(b.get("iterations") or 0) for b in row.runs) if row.runs else 0
    return out if out.samples and all(s > 0 for s in out.samples) else None


class BadInput(Exception):
    """A results file that cannot be read as one: its message names the file and what is
    wrong, in one line (main prints it and exits 2)."""


TIME_UNITS = ("ns", "us", "ms", "s")  # compare.py's


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# A results file is a few MB at most: a larger one is not read whole.
MAX_READ = 64 << 20


def read(path):
    try:
        with open(path) as f:
            text = f.read(MAX_READ + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput("%s: cannot be read: %s" % (path, getattr(e, "strerror", None) or e))
    if len(text) > MAX_READ:
        raise BadInput("%s: more than %d MiB: not a results file" % (path, MAX_READ >> 20))
    return text


def benchmark_json(path, text):
    """(the whole object, its context) of a benchmark JSON file's text: valid JSON, an object
    with a "benchmarks" list and a context object, else BadInput naming path."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise BadInput("%s: not valid JSON (truncated?): %s" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise BadInput("%s: not a benchmark JSON file (no \"benchmarks\" list)" % path)
    ctx = data.get("context", {})
    if not isinstance(ctx, dict):
        raise BadInput("%s: its \"context\" is not an object" % path)
    return data, ctx


def parse_json(path, text):
    """(OrderedDict name -> Row, context) of a benchmark JSON file's text, every row
    checked for what results.py and compare.py read; aggregate rows are left out (the
    median is taken here, of the iteration rows' p50s)."""
    data, ctx = benchmark_json(path, text)
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


# ---------------------------------------------------------------- writing

class WriteFailed(Exception):
    """An output that could not be written: its message names the file (or stdout) and the
    errno text, in one line (main prints it and exits 1)."""


def output_kind(path, st):
    """'replace' (a regular file, or none: st None), 'through' (a character device or a FIFO)
    of path's lstat st; anything else is refused (BadInput): a link to a file would be lost
    by a rename or lead the write elsewhere, a directory, socket or block device is no output."""
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            target = None
        if target is not None and (stat.S_ISCHR(target.st_mode) or stat.S_ISFIFO(target.st_mode)):
            return "through"
        raise BadInput("%s: a symbolic link to neither a device nor a FIFO: refused (give the file itself)" % path)
    if st is None or stat.S_ISREG(st.st_mode):
        return "replace"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "through"
    if stat.S_ISDIR(st.st_mode):
        raise BadInput("%s: a directory, not a file" % path)
    raise BadInput("%s: neither a regular file, a character device nor a FIFO: refused" % path)


def write_output(path, data):
    """Writes data (str or bytes) to path, the one way every script writes a file: a
    regular file (or none yet) through a private temporary file beside it (mkstemp: a
    regular file of ours, checked), fsynced and renamed over it, so that a failed write
    leaves the old file whole and nothing else, and of two writers at once the last rename
    wins; a character device or FIFO written straight through. Raises BadInput for a path
    that is no output (output_kind), WriteFailed naming path for a failed write."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if output_kind(path, st) == "through":
            fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
            with open(fd, "wb") as f:
                if output_kind(path, os.fstat(f.fileno())) != "through":
                    raise BadInput("%s: changed while opened: refused" % path)
                f.write(data)
            return
        mask = os.umask(0)  # the umask is read by setting it: put back at once
        os.umask(mask)
        mode = stat.S_IMODE(st.st_mode) if st else 0o666 & ~mask
        folder, base = os.path.split(path)
        fd, tmp = tempfile.mkstemp(prefix="." + base + ".tmp.", dir=folder or ".")
    except OSError as e:
        raise WriteFailed("cannot write %s: %s" % (path, e.strerror))
    try:
        with open(fd, "wb") as f:
            own = os.fstat(f.fileno())
            if not stat.S_ISREG(own.st_mode) or own.st_nlink != 1 or own.st_uid != os.geteuid():
                raise WriteFailed("cannot write %s: its temporary file %s is not ours alone" % (path, tmp))
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            now = os.lstat(path)
        except FileNotFoundError:
            now = None
        if now is not None and not stat.S_ISREG(now.st_mode):
            raise WriteFailed("cannot write %s: it is no longer a regular file (not replaced)" % path)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise WriteFailed("cannot write %s: %s" % (path, e.strerror))
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


PROG = "results.py"  # what starts a warning line: the script run (main_of sets it)


def main_of(run, prog, argv):
    """run(argv)'s exit status, with the scripts' error contract: a first argument --as=NAME
    starts error lines with NAME; a bad results file or output path is one line, exit 2; a
    failed write, of a file or of stdout (a full disk, /dev/full), one line, exit 1."""
    global PROG
    if len(argv) > 1 and argv[1].startswith("--as="):
        prog = argv.pop(1)[len("--as="):]
    PROG = prog
    try:
        rc = run(argv)
        sys.stdout.flush()
        return rc
    except BadInput as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return 2
    except WriteFailed as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return 1
    except OSError as e:
        if e.filename is not None:
            sys.stderr.write("%s: %s: %s\n" % (prog, e.filename, e.strerror))
        else:
            sys.stderr.write("%s: cannot write to stdout: %s\n" % (prog, e.strerror))
            # what stdout still buffers goes nowhere: no second complaint at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


# The binaries' names and the first part of their rows' JSON names.
BINARIES = OrderedDict((("shm_allocation_bench", "shm_alloc"), ("shm_address_lookup_bench", "shm_lookup"),
                        ("shm_transfer_bench", "shm_transfer")))
# The key columns of a table that are not its variant: the first column is the argument
# (its header its name: size_kb, segments).
TABLE_KEYS = ("step", "threads", "rep")


def table_name(bench, arg_name, cells):
    """The JSON name of a table row: bench/variant/step/arg_name:arg[/threads:T][/system:S
    [/vs:B]], as the report writer builds it ('-' and an absent column: no part; threads
    only above 1; the system column of a paired run's ratio row reads S/vs:B)."""
    middle = [cells[c] for c in ("variant", "step") if cells.get(c, "-") != "-"]
    name = "/".join([bench] + middle + ["%s:%s" % (arg_name, cells["arg"])])
    threads = cells.get("threads", "1")
    name += "/threads:%s" % threads if threads not in ("1", "-") else ""
    system = cells.get("system", "-")
    return name + ("/system:%s" % system if system != "-" else "")


def load_table(path, text):
    """OrderedDict JSON name -> Row of a table, its rows named as its JSON file names them
    (see table_name); the 'rep' and 'threads' columns may be there or not (older tables
    have them only with --repetitions or --threads); a row not measured ('-') has no
    samples; aggregate rows of --repetitions are left out."""
    return read_table(path, text)[0]


def read_table(path, text):
    """(rows as load_table, binary's name, its --system or '') of a table's text."""
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
    """One output file of one binary: rows (OrderedDict JSON name -> Row), kind ('JSON'
    or 'table'), binary (shm_allocation_bench, ...), system (its --system, or '')."""

    def __init__(self, path, rows, kind, binary, system):
        self.path, self.rows, self.kind, self.binary, self.system = path, rows, kind, binary, system


def json_run_facts(path, rows, ctx):
    """(binary, system) of a JSON file: the binary its row names say (each row of one),
    the system its context says (older files: only in its flags)."""
    benches = set(name.split("/")[0] for name in rows)
    binaries = [b for b, prefix in BINARIES.items() if benches == {prefix}]
    if not binaries:
        raise BadInput("%s: rows named %s, not of one shmbench binary (%s)"
                       % (path, ", ".join(sorted(benches))[:80], ", ".join(BINARIES.values())))
    system = ctx.get("system")
    if not isinstance(system, str):
        m = re.search(r"(?:^| )system=(\S*)", str(ctx.get("flags", "")))
        system = m.group(1) if m else ""
    return binaries[0], system


def load_run(path):
    """The Run of a table or a JSON file."""
    text = read(path)
    if text.lstrip().startswith("{"):
        rows, ctx = parse_json(path, text)
        return Run(path, rows, "JSON", *json_run_facts(path, rows, ctx))
    rows, binary, system = read_table(path, text)
    return Run(path, rows, "table", binary, system)


def load_any(path):
    """(OrderedDict JSON name -> Row, 'JSON' or 'table') of a table or a JSON file."""
    run = load_run(path)
    return run.rows, run.kind


# ---------------------------------------------------------------- pairing

# The one-off steps' names in older runs, and mooncake's first use without --system: each
# pairs with the step's name today.
STEP_ALIASES = {"first_use": "attach", "setup": "register"}
# One-off costs: paid once per buffer, pool or peer, not per operation.
ONE_OFF = ("register", "attach", "detach", "setup", "first_use", "pool_once")
# What a --system=SYSTEM run of shm_allocation_bench takes from which allocator of a run
# without --system (alloc_bench.c, system_rows): variant -> {step there: step with --system};
# None: every step under its own name.
SYSTEM_ALLOCATORS = {
    "mooncake": {"posix": {"total": "register", "attach": "attach", "detach": "detach"},
                 "offset": {s: s for s in ("alloc", "free", "alloc_reuse", "touch", "touch_reuse", "translate")}},
    "flowipc_classic": {"bipc": None},
    "flowipc_jemalloc": {"jemalloc": None},
}


def split_name(name):
    """'shm_lookup/mooncake/first_use/segments:100' -> ('shm_lookup', ['mooncake', 'first_use'],
    'segments:100'): the middle parts end where the argument (a part with ':') begins."""
    fields = name.split("/")
    end = next((i for i, f in enumerate(fields) if ":" in f and i > 0), len(fields))
    return fields[0], fields[1:end], "/".join(fields[end:])


def canonical(name):
    """A row name with its one-off step under today's name (STEP_ALIASES)."""
    bench, middle, arg = split_name(name)
    return "/".join([bench] + [STEP_ALIASES.get(m, m) for m in middle] + ([arg] if arg else []))


def as_system(name, system):
    """The name a --system=SYSTEM run gives the row NAME of a run without --system, or None
    when that row is not one of SYSTEM's (lookup: the system's own rows; allocation: its
    allocators' rows, as SYSTEM_ALLOCATORS says; transfer: the copy rows, named alike)."""
    bench, middle, arg = split_name(name)
    if bench == "shm_transfer":
        return name
    if not middle:
        return None
    if bench == "shm_lookup":
        return "/".join([bench] + middle[1:] + [arg]) if middle[0] == system else None
    steps = SYSTEM_ALLOCATORS.get(system, {})
    if middle[0] not in steps or len(middle) != 2:
        return None
    step = STEP_ALIASES.get(middle[1], middle[1])
    if steps[middle[0]] is not None:
        step = steps[middle[0]].get(step)
    return "/".join([bench, step, arg]) if step else None


def keyed(rows, system=None):
    """OrderedDict canonical name -> (name, Row) of one run's rows; with system, a run
    without --system's rows of that system under the names a --system run gives them."""
    out = OrderedDict()
    for name, row in rows.items():
        key = as_system(name, system) if system else name
        if key is not None:
            out.setdefault(canonical(key), (name, row))
    return out


class Pairing:
    """Two runs of one binary, their rows keyed alike: a (and b): OrderedDict key -> Row;
    names: key -> the row's JSON name in B (in A when only A has it); notes: what was
    paired under another name, one sentence each."""

    def __init__(self, a_rows, b_rows, a_system="", b_system="", a_label="A", b_label="B"):
        a_sys = b_system if b_system and not a_system else None
        b_sys = a_system if a_system and not b_system else None
        ka, kb = keyed(a_rows, a_sys), keyed(b_rows, b_sys)
        # a run without --system holds every system's rows: only those the other run has pair
        ka = OrderedDict((k, v) for k, v in ka.items() if not a_sys or k in kb)
        kb = OrderedDict((k, v) for k, v in kb.items() if not b_sys or k in ka)
        self.a = OrderedDict((k, r) for k, (_, r) in ka.items())
        self.b = OrderedDict((k, r) for k, (_, r) in kb.items())
        self.names = OrderedDict((k, (kb.get(k) or ka[k])[0]) for k in merged_keys(self.a, self.b))
        self.notes = []
        bench = split_name(next(iter(a_rows), "?"))[0]
        for label, system in ((a_label, a_sys), (b_label, b_sys)):
            if system:
                self.notes.append("%s ran without --system: %s paired with the --system=%s run's rows"
                                  % (label, projection_text(bench, system), system))
        renamed = set()
        for k in (k for k in ka if k in kb):
            ma, mb = split_name(ka[k][0])[1], split_name(kb[k][0])[1]
            renamed |= set("%s with %s" % (old, new) for old, new in STEP_ALIASES.items()
                           if old in ma and new in mb or old in mb and new in ma)
        if renamed:
            self.notes.append("paired across names: %s (older runs' and, without --system, mooncake's names "
                              "of these one-off steps)" % ", ".join(renamed))
        systems = (a_system or a_sys, b_system or b_sys)
        if systems[0] and systems[1] and systems[0] != systems[1] and self.attach_totals():
            self.notes.append("attach rows of %s against %s are the receiver's totals, attaches x p50 "
                              "(mooncake attaches each buffer, Flow-IPC each pool)" % systems)

    def attach_totals(self):
        """Puts each attach row pair's totals in place of its per-attach figures; whether any."""
        done = False
        for k in [k for k in self.a if k in self.b and parts(self.names[k])[0] == ["attach"]]:
            ta, tb = attach_total(self.a[k]), attach_total(self.b[k])
            if ta and tb:
                self.a[k], self.b[k], done = ta, tb, True
        return done


def projection_text(bench, system):
    """What of a run without --system as_system pairs with a --system=SYSTEM run's rows."""
    if bench == "shm_lookup":
        return "its %s rows, the system's name left out, are" % system
    if bench == "shm_transfer":
        return "its copy rows (named alike) are"
    out = []
    for variant, steps in SYSTEM_ALLOCATORS.get(system, {}).items():
        if steps is None:
            out.append("%s rows" % variant)
        else:
            out.append("%s %s" % (variant, ", ".join("%s as %s" % (a, b) if a != b else a for a, b in steps.items())))
    return "its %s are" % " and ".join(out)


def require_common(a, b, a_path, b_path):
    if not any(k in b for k in a):
        raise BadInput("%s and %s have no row in common: not two runs of one binary" % (a_path, b_path))


def pair_runs(a, b):
    """The Pairing of two Runs of one binary, in one format, sharing rows."""
    if a.kind != b.kind:
        raise BadInput("%s is a %s and %s a %s: give two tables or two JSON files" % (a.path, a.kind, b.path, b.kind))
    if a.binary != b.binary:
        raise BadInput("%s is %s's output and %s %s's: compare two runs of one binary"
                       % (a.path, a.binary, b.path, b.binary))
    pairing = Pairing(a.rows, b.rows, a.system, b.system)
    require_common(pairing.a, pairing.b, a.path, b.path)
    return pairing


def load_pair(a_path, b_path):
    """The rows of two output files of one binary, both tables or both JSON, sharing rows:
    (OrderedDict key -> Row of A, of B), keyed as Pairing keys them."""
    pairing = pair_runs(load_run(a_path), load_run(b_path))
    return pairing.a, pairing.b


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


def change_of(a, b):
    """B's figure against A's: b / a - 1 (a time: below 0, B is faster)."""
    return b / a - 1.0


def verdict(sig, a, b, lower_is_better=True):
    """The verdict on a pair's figures (a, b: A's and B's medians) and their U-test's
    (sig, of verdicts): a change under PRACTICAL_CHANGE is no practical difference, even
    when significant; larger ones say which way, when the test backs them."""
    if sig == "-" or not (a and b):
        return "-"
    change = change_of(a, b)
    if abs(change) < PRACTICAL_CHANGE:
        return "no practical difference"
    if sig == "no":
        return "not significant"
    way = "B faster" if (change < 0) == lower_is_better else "B slower"
    return way if sig == "yes" else way + " (untested)"


def verdict_note():
    return ("change: B against A; verdict: B faster or B slower: significant and a change of %g%% or more; "
            "no practical difference: a change under %g%%, significant or not; not significant: %g%% or "
            "more, and no evidence the runs differ; (untested): %s for the U-test, the medians alone"
            % (PRACTICAL_CHANGE * 100, PRACTICAL_CHANGE * 100, PRACTICAL_CHANGE * 100, TOO_FEW))


def fmt_change(a, b):
    return "%+.1f%%" % (change_of(a, b) * 100) if a and b else "-"


# ---------------------------------------------------------------- summary

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
                out.append((name, "ns", row, lambda v: v))
        elif bench in ("lookup", "lookup_sweep"):
            out.append((name, "ns", row, lambda v: v))
        elif bench == "workload":  # a request's parts, ns per request
            out.append((name, "ns", row, lambda v: v))
        elif bench == "transfer" and arg in ends:
            if middle[:1] in (["request_path"], ["translate"]):  # parts of a request, not copies
                out.append((name, "ns", row, lambda v: v))
            else:  # GB/s of the median: bytes per ns
                out.append((name, "GB/s", row, lambda v, b=arg * 1024: b / v))
    return out


def folder_pairs(a_dir, b_dir):
    """[(key, A's file, B's file)] of two results folders: each file both hold, and a
    file of a run without --system against each of the other folder's --system files of
    that binary (e.g. lookup.json against lookup_mooncake.json)."""
    a_files, b_files = folder_files(a_dir), folder_files(b_dir)
    out = []
    for bench in BENCHES:
        for system in ("",) + SYSTEMS:
            key = "%s_%s" % (bench, system) if system else bench
            a = a_files.get(key) or (a_files.get(bench) if system and key in b_files else None)
            b = b_files.get(key) or (b_files.get(bench) if system and key in a_files else None)
            if a and b:
                out.append((key, a, b))
    return out


def unpaired(a_dir, b_dir, pairs):
    """The keys of the files of either folder that no pair reads."""
    used = set(p for _, a, b in pairs for p in (a, b))
    keys = [k for d in (a_dir, b_dir) for k, p in folder_files(d).items() if p not in used]
    return list(OrderedDict.fromkeys(keys))


def pairing_of(a_path, b_path):
    a, b = load_run(a_path), load_run(b_path)
    return Pairing(a.rows, b.rows, a.system, b.system, "A's " + os.path.basename(a_path),
                   "B's " + os.path.basename(b_path))


def headline_lines(key, pairing):
    """[(label, unit, A, B, B/A, change, (Row A, Row B), (A's figure, B's, lower is better))]
    of one pair of files' headline rows."""
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
    print("A = %s, B = %s; every figure is a median: ns = p50 per operation, GB/s = size / p50 "
          "(10^9 bytes/s), with repetitions the median of the repetitions' p50s; ns: lower is "
          "better, GB/s: higher is better" % (a_dir, b_dir))
    print(verdict_note())
    tested = [l[6] for l in lines if l[6][0] and l[6][1]]
    print(significance_note([a for a, _ in tested], [b for _, b in tested]))
    for n in notes:
        print(n)
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


def gain_rows(pairing):
    """[(JSON name, Row of A or None, Row of B or None, p, significant, verdict)] of a
    Pairing, a row measured in one run only with None for the other."""
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
    paired_a = [ra for _, ra, rb, _, _, _ in rows if ra and rb]
    paired_b = [rb for _, ra, rb, _, _, _ in rows if ra and rb]
    print("A = %s, B = %s; gain = A p50 / B p50 (medians over repetitions; above 1: B is faster); "
          "- = not in that run" % (a_name, b_name))
    print(verdict_note())
    print(significance_note(paired_a, paired_b))
    for n in pairing.notes:
        print(n)
    return 0


def gain(a_path, b_path):
    return gain_table(pair_runs(load_run(a_path), load_run(b_path)), a_path, b_path)


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
        pair_runs(load_run(paths[0]), load_run(paths[1]))
        return 0
    if len(paths) == 2:
        same = folder_pairs(*paths)
    else:
        pairs, files = system_pairs(paths[0])
        same = [(b, files[a], files[o]) for b, a, o in pairs]
        for path in files.values():
            load_run(path)
    for _, a, b in same:
        a_run, b_run = load_run(a), load_run(b)
        if bool(a_run.system) == bool(b_run.system):
            pair_runs(a_run, b_run)  # a run without --system may hold none of a system's rows
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
        gain_table(pair_runs(load_run(files[a]), load_run(files[b])), files[a], files[b])
        print()
    return 0


# ---------------------------------------------------------------- paired runs

# A paired run (--systems=LIST) measures its systems in one process, round by round,
# with the baseline's A/A control; run_all.sh --system writes BENCH_paired.json.
PAIRED_BENCHES = ("allocation", "lookup", "transfer", "workload", "zero_copy")
CONTROL_SUFFIX = "_control"
MIN_ROUNDS = 6  # the fewest rounds with a 95% interval of a median (2^-5 < 0.05)
PAIRED_VERDICTS = ("faster", "slower", "no practical difference", "within the noise", "too noisy",
                   "not assessed")
PAIRED_NAME = re.compile(r"^(?P<question>.+)/system:(?P<system>[^/]+)(?:/vs:(?P<vs>[^/]+))?$")


class Pair:
    """A ratio row of a paired run: one system against the baseline over the rounds.
    ratio = median of the rounds' baseline / system (above 1: the system is faster), lo
    and hi its 95% interval (None with too few rounds); saved the median of the rounds'
    baseline - system in ns per operation, saved_lo/saved_hi its interval; p the sign
    test's p-value (None if absent)."""

    def __init__(self, name, question, system, vs, b):
        self.name, self.question, self.system, self.vs = name, question, system, vs
        self.ratio, self.saved, self.rounds = b["ratio"], b["saved_ns"], b["rounds"]
        self.lo, self.hi = b.get("ratio_lo"), b.get("ratio_hi")
        self.saved_lo, self.saved_hi = b.get("saved_lo"), b.get("saved_hi")
        self.p = b.get("p_value")

    @property
    def has_interval(self):
        return self.lo is not None and self.hi is not None and self.rounds >= MIN_ROUNDS

    @property
    def saved_width(self):
        """The width of the saved time's interval, ns (None without one)."""
        if self.saved_lo is None or self.saved_hi is None:
            return None
        return self.saved_hi - self.saved_lo


class PairedRun:
    """One BENCH_paired.json: questions (OrderedDict question -> OrderedDict system ->
    its row's JSON object, the control among them), pairs (OrderedDict question ->
    OrderedDict system -> Pair), baseline, context."""

    def __init__(self, path, questions, pairs, baseline, ctx):
        self.path, self.questions, self.pairs, self.baseline, self.ctx = path, questions, pairs, baseline, ctx

    @property
    def control(self):
        return self.baseline + CONTROL_SUFFIX

    def control_of(self, question):
        return self.pairs.get(question, {}).get(self.control)

    def flavours(self):
        """The systems measured against the baseline, the control aside, in file order."""
        return unique(s for by in self.pairs.values() for s in by if s != self.control)


def paired_field(path, b, key, check, what, optional=False):
    """b[key] checked (check(v) true) or BadInput naming the file, the row and the field."""
    if key not in b and optional:
        return None
    v = b.get(key)
    if not check(v):
        raise BadInput("%s: benchmark %s: %s %r is not %s" % (path, b["name"], key, v, what))
    return v


def parse_paired(path, text):
    """The PairedRun of a paired run's JSON text, every field the scripts read checked
    (a ratio row's times are savings: zero or negative is fine there)."""
    data, ctx = benchmark_json(path, text)
    questions, pairs, baselines = OrderedDict(), OrderedDict(), set()
    positive = lambda v: number(v) and v > 0  # noqa: E731
    optional_number = lambda v: v is None or number(v)  # noqa: E731
    for i, b in enumerate(data["benchmarks"]):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise BadInput("%s: benchmark %d has no name" % (path, i))
        if CONTROL.search(b["name"]) or "\n" in b["name"]:
            raise BadInput("%s: benchmark %d has a control character in its name" % (path, i))
        m = PAIRED_NAME.match(b["name"])
        if not m or b.get("run_type") == "aggregate":
            continue  # a row of no system (a kernel) is no part of a pair
        q, s, vs = m.group("question", "system", "vs")
        if vs is None:
            paired_field(path, b, "p50", positive, "a time")
            questions.setdefault(q, OrderedDict())[s] = b
            continue
        paired_field(path, b, "ratio", positive, "a positive ratio")
        paired_field(path, b, "saved_ns", number, "a number of ns")
        paired_field(path, b, "rounds", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                     "a count of rounds")
        for key in ("ratio_lo", "ratio_hi", "saved_lo", "saved_hi"):
            paired_field(path, b, key, optional_number, "a number", optional=True)
        paired_field(path, b, "p_value", lambda v: number(v) and 0 <= v <= 1, "a p-value", optional=True)
        paired_field(path, b, "verdict", lambda v: v in PAIRED_VERDICTS, "one of: " + ", ".join(PAIRED_VERDICTS),
                     optional=True)
        pairs.setdefault(q, OrderedDict())[s] = Pair(b["name"], q, s, vs, b)
        baselines.add(vs)
    if not pairs:
        raise BadInput("%s: no ratio row (NAME/system:S/vs:BASELINE): not a paired run (--systems)" % path)
    if len(baselines) != 1:
        raise BadInput("%s: ratio rows against %s: one baseline per paired run" % (path, ", ".join(sorted(baselines))))
    return PairedRun(path, questions, pairs, baselines.pop(), ctx)


def load_paired(path):
    return parse_paired(path, read(path))


def paired_files(folder):
    """OrderedDict bench -> path of BENCH_paired.json in a results folder."""
    out = OrderedDict()
    for bench in PAIRED_BENCHES:
        path = os.path.join(folder, bench + "_paired.json")
        if os.path.isfile(path):
            out[bench] = path
    return out


def is_paired_file(path):
    """Does a results file hold a paired run's rows (a name with /system:...)?"""
    return os.path.isfile(path) and re.search(r'"name": *"[^"]*/system:[^"/]+/vs:', read(path)) is not None


def fmt_ratio(pair):
    """'1.10 [1.07, 1.13]' (no interval: '1.10 [-]')."""
    if not pair.has_interval:
        return "%s [-]" % fmt_r(pair.ratio)
    fine = pair.hi - pair.lo < 0.02  # three decimals, or a narrow interval reads [1.00, 1.00]
    return "%s [%s, %s]" % tuple(fmt_r(r, fine) for r in (pair.ratio, pair.lo, pair.hi))


def fmt_r(r, fine=False):
    """A ratio: two decimals (three if fine), two significant digits below 0.1, none from 100."""
    if r < 0.1:
        return "%.2g" % r
    return ("%.3f" if fine else "%.2f") % r if r < 10 else "%.1f" % r if r < 100 else "%.0f" % r


def fmt_saved(pair):
    """'184 [180, 188]' ns saved per operation (negative: slower)."""
    if pair.saved_lo is None or pair.saved_hi is None:
        return "%s [-]" % fmt_signed(pair.saved)
    return "%s [%s, %s]" % tuple(fmt_signed(v) for v in (pair.saved, pair.saved_lo, pair.saved_hi))


def fmt_signed(v):
    return fmt(v) if v >= 0 else "-" + fmt(-v)


def practical(pair):
    """The interval lies wholly on one side of [1/1.05, 1.05]."""
    return pair.lo > 1 + PRACTICAL_CHANGE or pair.hi < 1 / (1 + PRACTICAL_CHANGE)


def control_noisy(control):
    """The control differs from its own code: its interval wholly beyond 5%, or its
    interval off 1 with its median 5% or more away."""
    return practical(control) or (not control.lo <= 1 <= control.hi and abs(control.ratio - 1) >= PRACTICAL_CHANGE)


def paired_verdict(pair, control):
    """The binary's rule (src/base/paired.c, shmb_paired_verdict): a control off by 5% or more
    (control_noisy) makes every pair of its question too noisy; an interval that holds 1,
    or lies inside the control's, is within the noise; a change under 5% is no practical
    difference; else faster or slower."""
    if control is None or not (pair.has_interval and control.has_interval):
        return "not assessed"
    if control_noisy(control):
        return "too noisy"
    if pair.lo <= 1 <= pair.hi or (pair is not control and control.lo <= pair.lo and pair.hi <= control.hi):
        return "within the noise"
    if abs(pair.ratio - 1) < PRACTICAL_CHANGE:
        return "no practical difference"
    return "faster" if pair.ratio > 1 else "slower"


def holm(ps):
    """Holm's step-down adjusted p-values of ps (None stays None): the chance that any
    of the family's significant rows is a false alarm stays below ALPHA."""
    tested = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    out, running = list(ps), 0.0
    for k, (p, i) in enumerate(tested):
        running = max(running, min(1.0, p * (len(tested) - k)))
        out[i] = running
    return out


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


# ---------------------------------------------------------------- the model against upstream

MODEL, UPSTREAM = "mooncake", "mooncake_upstream"
MODEL_OFF = 0.25  # a model whose time is off upstream's by more than this share gets a line


def upstream_commit(run):
    """The Mooncake commit the run's mooncake_upstream rows ran (its note), or None."""
    for note in run.ctx.get("notes") or []:
        m = re.match(r"^mooncake_upstream: .* commit (\S+)", str(note))
        if m:
            return m.group(1)
    return None


def model_upstream(run):
    """[(question, model's p50, upstream's p50, Pair, control Pair)] of the questions where a
    paired run against mooncake also ran mooncake_upstream (upstream's own code,
    docs/upstream.md). The Pair is the ratio row QUESTION/system:mooncake_upstream/vs:mooncake
    as it is: the median over rounds of mooncake / mooncake_upstream, i.e. model / upstream
    (above 1: the model is slower than upstream's code)."""
    if run.baseline != MODEL:
        return []
    out = []
    for q, by in run.pairs.items():
        if UPSTREAM in by:
            times = run.questions.get(q, {})
            t = lambda s: times[s]["p50"] if s in times else None  # noqa: E731
            out.append((q, t(MODEL), t(UPSTREAM), by[UPSTREAM], run.control_of(q)))
    return out


def model_upstream_lines(run):
    """The "model against upstream" table of a paired run (markdown), then a line per row
    whose model is off upstream's time by more than MODEL_OFF; [] when the run holds no
    mooncake_upstream row."""
    rows = model_upstream(run)
    if not rows:
        return []
    commit = upstream_commit(run)
    out = ["Each covered row of the model (mooncake) against Mooncake's own code (mooncake_upstream%s, "
           "docs/upstream.md), measured paired in one process: model / upstream is the ratio row "
           "QUESTION/system:%s/vs:%s as it is (the median over rounds of the model's time / upstream's, "
           "95%% interval); above 1 the model is slower than upstream's code, below 1 faster. The A/A "
           "control's ratio is the run's noise." % (", commit " + commit if commit else "", UPSTREAM, MODEL), "",
           "| row | model | upstream | model / upstream [95%] | control [95%] |", "|---|---|---|---|---|"]
    off = []
    for q, model, upstream, pair, control in rows:
        out.append("| %s | %s | %s | %s | %s |" % (
            q, fmt(model) + " ns" if model else "-", fmt(upstream) + " ns" if upstream else "-", fmt_ratio(pair),
            fmt_ratio(control) if control else "-"))
        if abs(pair.ratio - 1) > MODEL_OFF:
            off.append("- %s: the model is off by more than %.0f%%: %.0f%% %s than upstream (model / upstream %s)"
                       % (q, MODEL_OFF * 100, abs(pair.ratio - 1) * 100, "slower" if pair.ratio > 1 else "faster",
                          fmt_ratio(pair)))
    out += [""] + (off or ["No model is off upstream's time by more than %.0f%%." % (MODEL_OFF * 100)])
    return out + [""]


def control_width(run, question):
    """The control's ratio interval width of a question (None without one)."""
    c = run.control_of(question)
    return c.hi - c.lo if c is not None and c.has_interval else None


def ratio_change(a_run, b_run, q, a, b):
    """'changed' when the two intervals do not overlap and the ratio moved by more than
    either run's control noise (its interval's width), else 'within the noise'."""
    if not (a.has_interval and b.has_interval):
        return "not assessed"
    noise = [control_width(a_run, q), control_width(b_run, q)]
    if None in noise:
        return "not assessed"
    apart = a.hi < b.lo or b.hi < a.lo
    return "changed" if apart and abs(b.ratio - a.ratio) > max(noise) else "within the noise"


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


# ---------------------------------------------------------------- the gate and the flags

# Flags that differ between runs compared on purpose (a --system run against another) or
# that change no figure (where the output goes, the name of the segments).
FLAGS_ASIDE = ("system", "json_out", "format", "shm_prefix")


def file_flags(path):
    """OrderedDict flag -> value of a results file: its JSON context's "flags", or its
    table's '# flags:' line."""
    text = read(path)
    if text.lstrip().startswith("{"):
        flags = str(benchmark_json(path, text)[1].get("flags", ""))
    else:
        m = re.search(r"^# flags: (.*)$", text, re.M)
        flags = m.group(1) if m else ""
    return OrderedDict(f.split("=", 1) if "=" in f else (f, "") for f in flags.split())


def compared_files(a, b):
    """[(label, A's file, B's file)] that compare.sh A B reads: two files, or two folders'
    paired files, else their per-system or plain files."""
    if os.path.isfile(a):
        return [("", a, b)]
    pa, pb = paired_files(a), paired_files(b)
    if pa and pb:
        return [(bench, pa[bench], pb[bench]) for bench in pa if bench in pb]
    return folder_pairs(a, b)


def flags_differ(a, b):
    """One warning line on stderr when the runs compared ran with different flags (each
    flag named with A's and B's value), so that a slower B is not read as a regression
    when it ran with other flags."""
    seen = OrderedDict()  # flag -> (A's value, B's value), over every pair of files
    for _, fa, fb in compared_files(a, b):
        va, vb = file_flags(fa), file_flags(fb)
        for k in unique(list(va) + list(vb)):
            if k not in FLAGS_ASIDE and va.get(k) != vb.get(k):
                seen.setdefault(k, (va.get(k, "unset"), vb.get(k, "unset")))
    if seen:
        sys.stderr.write("%s: warning: A and B ran with different flags: %s\n" % (PROG, ", ".join(
            "%s (A %s, B %s)" % (k, x or "''", y or "''") for k, (x, y) in seen.items())))
    return 0


def gate_paired(a_path, b_path, limit):
    """[(row, before, after, why)] of two paired runs of one binary: a system row whose
    p50 grew by more than limit (separate runs: drift included), a ratio row that changed
    (ratio_change) and fell by more than limit (the flavour slower against the baseline);
    the control's rows aside (the baseline's own code)."""
    a, b = load_paired(a_path), load_paired(b_path)
    out = []
    for q, by in a.questions.items():
        for s, ra in by.items():
            rb = b.questions.get(q, {}).get(s)
            if rb and s != a.control and rb["p50"] > ra["p50"] * (1 + limit):
                out.append(("%s/system:%s" % (q, s), fmt(ra["p50"]), fmt(rb["p50"]),
                            "p50 ns %s" % fmt_change(ra["p50"], rb["p50"])))
    for q, by in a.pairs.items():
        for s, pa in by.items():
            pb = b.pairs.get(q, {}).get(s)
            if pb and s != a.control and ratio_change(a, b, q, pa, pb) == "changed" and pb.ratio * (1 + limit) < pa.ratio:
                out.append((pa.name, fmt_ratio(pa), fmt_ratio(pb), "ratio %s, changed" % fmt_change(pa.ratio, pb.ratio)))
    return out


def gate_rows(a_path, b_path, limit):
    """[(row, A p50, B p50, why)] of two per-system or plain runs of one binary: B's p50
    above A's by more than limit, and significant by the U-test (Holm over the table) when
    both runs have MIN_REPETITIONS repetitions; with fewer, the change alone (untested)."""
    out = []
    for name, ra, rb, p, sig, _ in gain_rows(pairing_of(a_path, b_path)):
        if ra and rb and rb.p50 > ra.p50 * (1 + limit) and sig in ("yes", TOO_FEW):
            out.append((name, fmt(ra.p50), fmt(rb.p50), "p50 ns %s, %s" % (
                fmt_change(ra.p50, rb.p50), "significant (p = %s)" % fmt_p(p) if sig == "yes" else "untested: " + TOO_FEW)))
    return out


def gate(pct, a, b):
    """compare.sh --fail-above=PCT A B: the rows of B slower than A by more than PCT
    percent, listed first; 1 when any, else 0."""
    try:
        limit = float(pct) / 100
    except ValueError:
        limit = -1.0
    if not (math.isfinite(limit) and limit >= 0):
        raise BadInput("--fail-above=%s: a percentage, a number 0 or more (e.g. 10)" % pct)
    rows = []
    for _, fa, fb in compared_files(a, b):
        paired = is_paired_file(fa) and is_paired_file(fb)
        rows += (gate_paired if paired else gate_rows)(fa, fb, limit)
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


def unique(xs):
    return list(OrderedDict.fromkeys(xs))


def run_system(path, key, ctx):
    """The --system of a folder's file, as its context says (its flags in older files),
    which must agree with the file's name (lookup_mooncake.json: mooncake)."""
    named = split_key(key)[1]
    said = ctx.get("system")
    if not isinstance(said, str):
        m = re.search(r"(?:^| )system=(\S*)", str(ctx.get("flags", "")))
        said = m.group(1) if m else None
    if said is not None and said != named:
        raise BadInput("%s: its context says --system=%s, its name %s" % (path, said, named or "no system"))
    return named


def context_lines(runs, flags=True):
    """Title lines of the runs (system, context) one plot shows, from their contexts: the
    machine, the dates, the builds, the systems, and (flags) their flags_lines."""
    ctx = runs[0][1]
    cpu = "%s, %s cpus" % (ctx.get("cpu_model", "?"), ctx.get("num_cpus", "?"))
    if ctx.get("mhz_per_cpu"):
        cpu += ", %s MHz" % ctx["mhz_per_cpu"]
    dates = sorted(unique(str(c.get("date", "?"))[:16].replace("T", " ") for _, c in runs))
    builds = []
    for _, c in runs:
        build = ["shmbench " + str(c.get("shmbench_version", "?"))]
        build += [v for k, v in c.items() if ("commit" in k or "compiler" in k) and isinstance(v, str) and v]
        builds.append(" ".join(build))
    lines = ["%s; host %s; %s; %s" % (cpu, ", ".join(unique(str(c.get("host_name", "?")) for _, c in runs)),
                                      dates[0] if len(dates) == 1 else "%s to %s" % (dates[0], dates[-1]),
                                      "; ".join(unique(builds)))]
    systems = unique(system for system, _ in runs if system)
    if systems:
        lines.append("--system runs: %s (as each run's context says)" % ", ".join(systems))
    return lines + (flags_lines(runs) if flags else [])


def flags_lines(runs, label="flags"):
    """Title lines of the runs' flags: those every run shares, then each run's own (but
    --system, which context_lines says)."""
    flags = [str(c.get("flags", "")).split() for _, c in runs]
    common = [f for f in flags[0] if all(f in other for other in flags)]
    lines = ["%s: %s" % (label, " ".join(common))] if common else []
    for (system, _), own in zip(runs, flags):
        own = [f for f in own if f not in common and not f.startswith("system=")]
        if own:
            lines.append("%s of the %s run: %s" % (label, system or "other", " ".join(own)))
    return lines


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
    """(OrderedDict label -> Series, repetition counts, [(system, context)]) over the files
    of keys; point(middle, arg, threads, row) -> (primary, secondary, x, p50 ns -> y) or
    None to leave the row out (middle starts with the system of a --system file). y is
    taken of the median of the repetitions' p50s, its bars of their p10 and p90."""
    out = OrderedDict()
    reps = set()
    runs = []
    for key in keys:
        rows, c = load(files[key])
        system = run_system(files[key], key, c)
        runs.append((system, c))
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
    return out, reps, runs


def write_data(out_dir, name, series):
    """Writes NAME.dat into out_dir; returns its name, which the gnuplot script (run
    there) reads."""
    text = []
    for s in series:
        text.append("# %s\n" % dat_string(s.label))
        text.extend("%s %r %r %r\n" % p for p in sorted(s.points))
        text.append("\n\n")
    write_output(os.path.join(out_dir, name + ".dat"), "".join(text))
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
    # a panel's title is centred over its plot area: wrapped to fit it
    cmds = ["unset arrow", "unset label", "set title %s" % gp_string("\n".join(wrap(title, 95))),
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


def script(title_lines, panels, size=(1100, 700), right=0.74):
    """The gnuplot script of one PNG, written to stdout (plot.sh names the file: no path
    of the user's enters the script). Its title is the canvas's, centred, each line
    wrapped to the canvas's width (a line wider than the canvas loses both ends); the
    panels are stacked, their legends at the right."""
    lines = [part for line in title_lines for part in wrap(line, int(size[0] / 7.5))]
    head = ["set terminal pngcairo noenhanced size %d,%d font \"sans,10\"" % size,
            "set grid lc rgb \"#dddddd\"",
            "set bars small",
            "set lmargin at screen 0.08",
            "set rmargin at screen %s" % right,
            "set key at screen %s, graph 1 left top Left reverse samplen 3" % (right + 0.02),
            "set multiplot layout %d,1 title %s" % (len(panels), gp_string("\n".join(lines)))]
    body = []
    for p in panels:
        body.extend(p)
    return "\n".join(head + body + ["unset multiplot"]) + "\n"


def one_off(middle):
    """Is a row of this name's middle parts a one-off cost (paid once per buffer, pool or
    peer), not one per operation?"""
    return any(m in ONE_OFF for m in middle)


REQUEST_PARTS = ("request_path", "translate", "request")


def transfer_point(middle, arg, threads, row):
    if any(m in REQUEST_PARTS for m in middle):
        return None
    method = middle[0] if middle else "memcpy"
    rest = middle[1:] + (["%d threads" % threads] if threads > 1 else [])
    return method, " ".join(rest), arg, lambda ns: arg * 1024 / ns  # GB/s: bytes per ns


def request_point(middle, arg, threads, row):
    """A --system run's request and its parts (the copy among them), ns per request."""
    if middle[:1] and middle[0] in SYSTEMS and threads == 1:
        return middle[0], " ".join(middle[1:]), arg, same
    return None


def same(ns):
    return ns


KERNELS = ("linear", "lower_bound", "tree", "arithmetic")


def lookup_point(middle, arg, threads, row):
    if one_off(middle):
        return None
    primary = middle[0] if middle else "?"
    if primary in KERNELS:
        primary += " (kernel)"
    return primary, " ".join(middle[1:]), arg, same


def lookup_once_point(middle, arg, threads, row):
    if not one_off(middle):
        return None
    return middle[0] if middle else "?", " ".join(middle[1:]), arg, same


def caches_marks(ctx, xs):
    """gnuplot arrows and labels at the cache sizes of the run's CPU within xs (KB)."""
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
    return extra


def bench_figure(files, keys, out_dir, name, head, specs, draw, panel_height=400):
    """One bench's figure: a panel for each spec whose point function (spec[0]) finds rows,
    its series written to out_dir as NAME<i>.dat, drawn by draw(spec, data, series, xs,
    with_bars, runs); None when no spec found any."""
    panels, reps, runs = [], set(), None
    for i, spec in enumerate(specs):
        series, r, got = series_of(files, keys, spec[0])
        runs = runs or got
        if not series:
            continue
        reps |= r
        series = list(series.values())
        data = write_data(out_dir, "%s%d" % (name, i), series)
        xs = [p[0] for s in series for p in s.points]
        panels.append(draw(spec, data, series, xs, max(r) > 1, runs))
    if not panels:
        return None
    title = [head] + context_lines(runs) + [bars_note(reps)]
    return script(title, panels, size=(1100, panel_height * len(panels) + 160))


def plot_transfer(files, keys, out_dir):
    specs = ((transfer_point, "copies: GB/s = size / p50 (10^9 bytes/s); dotted lines: cache sizes",
              "GB/s (higher is better)", True),
             (request_point, "per request (--system): the whole request and its parts, time per request (p50)",
              "time per request, p50 (lower is better)", False))

    def draw(spec, data, series, xs, with_bars, runs):
        _, ptitle, ylabel, copies = spec
        extra = caches_marks(runs[0][1], xs) if copies else []
        return panel(data, series, ptitle, "transfer size (1K = 1024 bytes)", ylabel, ticks(xs, size_label), extra,
                     logy=None if copies else True, with_bars=with_bars, ylabels=None if copies else time_label)

    return bench_figure(files, keys, out_dir, "transfer", "shm_transfer_bench: moving bytes through SHM", specs,
                        draw)


def plot_lookup(files, keys, out_dir):
    specs = ((lookup_point, "per request: time per address translation (p50); kernels are reference points, "
              "the others the systems' paths", "time per lookup, p50 (lower is better)"),
             (lookup_once_point, "one-off: the receiver's first use of a buffer or pool (attach, first_use), "
              "each pool lent once (pool_once)", "time per buffer or pool, p50"))

    def draw(spec, data, series, xs, with_bars, runs):
        return panel(data, series, spec[1], "registered segments", spec[2], ticks(xs, lambda x: "%d" % x),
                     logy=True, with_bars=with_bars, ylabels=time_label)

    return bench_figure(files, keys, out_dir, "lookup",
                        "shm_address_lookup_bench: translating a peer's address, by registered segments", specs, draw)


def plot_allocation(files, keys, out_dir):
    def posix(middle, arg, threads, row):
        if middle[:1] == ["posix"] and not one_off(middle):
            return " ".join(middle[1:]) or "?", "", arg, same
        return None

    def pools(middle, arg, threads, row):
        if middle[:1] != ["posix"] and not one_off(middle):
            return middle[0], " ".join(middle[1:]), arg, same
        return None

    def once(middle, arg, threads, row):
        if middle == ["posix", "total"]:
            return "posix", "register", arg, same
        if one_off(middle):
            return middle[0], " ".join(middle[1:]), arg, same
        return None

    specs = (
        (posix, "posix (Mooncake's createSharedMemory), per step, once per buffer", "time per buffer, p50"),
        (pools, "per block: colour = allocator or system, line = step", "time per operation, p50"),
        (once, "one-off: register (a buffer or pool made and known; posix total: createSharedMemory), "
         "the peer's attach and detach", "time per buffer, pool or peer, p50"),
    )

    def draw(spec, data, series, xs, with_bars, runs):
        return panel(data, series, spec[1], "allocation size (1K = 1024 bytes)", spec[2], ticks(xs, size_label),
                     logy=True, with_bars=with_bars, ylabels=time_label)

    return bench_figure(files, keys, out_dir, "allocation",
                        "shm_allocation_bench: what one SHM allocation costs (log-log)", specs, draw, panel_height=380)


# gain.png: a bar's fill says what the U-test says of it.
FILLS = (("yes", "lc rgb \"%s\" fs solid 0.85 border", "solid: significant (U-test)"),
         ("no", "lc rgb \"%s\" fs empty border", "hollow: not significant"),
         (TOO_FEW, "lc rgb \"%s\" fs pattern 4 border", "hatched: untested, < %d reps" % MIN_REPETITIONS))
FLAVOUR_COLOURS = {"flowipc_classic": PALETTE[4], "flowipc_jemalloc": PALETTE[5]}


# The gain's interval: a percentile bootstrap of the ratio of the two medians, the
# repetitions of each run resampled on their own (they are independent runs, not pairs),
# with a fixed seed so that a folder always plots the same; none under MIN_REPETITIONS.
BOOTSTRAP_RESAMPLES = 2000


def gain_interval(a, b):
    """(lo, hi) of the 95% bootstrap interval of median(a) / median(b), or None."""
    if min(len(a), len(b)) < MIN_REPETITIONS:
        return None
    rng = random.Random(42)
    ratios = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                    for _ in range(BOOTSTRAP_RESAMPLES))
    return ratios[int(0.025 * BOOTSTRAP_RESAMPLES)], ratios[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]


def gain_bars(folder):
    """OrderedDict (bench, 'per operation'|'one-off') -> OrderedDict row label ->
    {flavour: (gain, significant, interval)} of a --system folder: Mooncake's p50 / each
    Flow-IPC flavour's, with compare.sh's verdicts (one U-test family per binary and
    flavour) and gain_interval's (lo, hi) or None."""
    pairs, files = system_pairs(folder)
    out = OrderedDict()
    for bench, a_key, b_key in pairs:
        a, b = load_run(files[a_key]), load_run(files[b_key])
        run_system(files[a_key], a_key, load(files[a_key])[1])
        flavour = run_system(files[b_key], b_key, load(files[b_key])[1])
        for name, ra, rb, _, sig, _ in gain_rows(pair_runs(a, b)):
            if not (ra and rb):
                continue
            middle, arg_name, arg, threads = parts(name)
            x = size_label(arg) if arg_name.startswith("size") else "%s segs" % arg if arg_name == "segments" \
                else name.rsplit(":", 1)[1]  # a name (a workload's model)
            kind = "one-off" if one_off(middle) else "per operation"
            if middle == ["attach"] and ra.name.endswith(" total"):
                middle = ["attach total"]  # the receiver's, as the Pairing compares them
            label = " ".join(middle + [x] + (["%dT" % threads] if threads > 1 else []))
            out.setdefault((bench, kind), OrderedDict()).setdefault(label, OrderedDict())[flavour] = \
                (ra.p50 / rb.p50, sig, gain_interval(ra.samples, rb.samples))
    for kind in ("per operation", "one-off"):  # the sweep holds lookup's rows at more counts
        if ("lookup_sweep", kind) in out:
            out.pop(("lookup", kind), None)
    return out


def write_gain_data(path, bars, flavours):
    """Writes a gain panel's data: a block per flavour and verdict (FILLS), each bar's x,
    gain, left and right edges, its interval's ends (NaN without one), where its figure
    goes and the figure; returns the blocks' (flavour, verdict)."""
    width = 0.8 / len(flavours)
    blocks, out = [], []
    for j, flavour in enumerate(flavours):
        for sig, _, _ in FILLS:
            out.append("# %s %s\n" % (flavour, dat_string(sig)))
            n = 0
            for g, by in enumerate(bars.values()):
                if flavour in by and by[flavour][1] == sig:
                    x, (v, _, ci) = g - 0.4 + width * (j + 0.5), by[flavour]
                    # no figure inside the band: a change too small to matter
                    text = "" if abs(v - 1) < PRACTICAL_CHANGE else "%.2f" % v if v < 10 else "%.0f" % v
                    lo, hi = ci or (float("nan"), float("nan"))
                    # the figure beyond the bar's end and its interval's
                    at = min(v, lo if ci else v) / 1.12 if v < 1 else max(v, hi if ci else v) * 1.12
                    out.append("%r %r %r %r %r %r %r %s\n" % (x, v, x - width / 2, x + width / 2, lo, hi, at,
                                                             dat_string(text)))
                    n += 1
            if not n:
                out.append("nan nan nan nan nan nan nan \"\"\n")
            out.append("\n\n")
            blocks.append((flavour, sig))
    write_output(path, "".join(out))
    return blocks


def gain_legend(flavours):
    """The gain plot's legend entries: the flavours' colours, the fills, the band."""
    plots = ["NaN with boxes fs solid 0.85 lc rgb \"%s\" title %s"
             % (FLAVOUR_COLOURS.get(flavour, PALETTE[2]), gp_string(flavour)) for flavour in flavours]
    plots += ["NaN with boxes lw 1.5 %s title %s" % (style % "#555555", gp_string(text)) for _, style, text in FILLS]
    plots.append("NaN with boxes fs solid 1.0 lc rgb \"#e8e8e8\" title %s"
                 % gp_string("grey band: under %g%%, no practical difference" % (PRACTICAL_CHANGE * 100)))
    plots.append("NaN with lines lc rgb \"#000000\" lw 1 title %s"
                 % gp_string("error bar: 95%% bootstrap interval (%d+ reps)" % MIN_REPETITIONS))
    return plots


def gain_panel(out_dir, index, title, bars, flavours, first):
    """The gnuplot commands of one gain panel: a group of bars per row, one bar per flavour
    from 1 to its gain (up: Flow-IPC faster), filled as FILLS says; the legend in the first."""
    data = "gain%d.dat" % index
    blocks = write_gain_data(os.path.join(out_dir, data), bars, flavours)
    ys = [y for by in bars.values() for v, _, ci in by.values() for y in (v,) + (ci or ())]
    lo, hi = min(ys + [1.0]) / 1.6, max(ys + [1.0]) * 1.8
    xt = ", ".join("%s %d" % (gp_string(label), g) for g, label in enumerate(bars))
    cmds = ["unset arrow", "unset label", "unset object",
            "set title %s" % gp_string("%s: mooncake p50 / Flow-IPC p50 per row (above 1: Flow-IPC is faster)" % title),
            "unset xlabel", "set ylabel \"gain (log scale)\"", "unset logscale x", "set logscale y",
            "set yrange [%r:%r]" % (lo, hi), "set xrange [-0.7:%r]" % (len(bars) - 0.3), log_ytics(lo, hi),
            "set xtics (%s) rotate by 45 right font \",8\"" % xt,
            "set object 1 rect from graph 0, first %r to graph 1, first %r fc rgb \"#e8e8e8\" fs solid 1.0 noborder behind"
            % (1 - PRACTICAL_CHANGE, 1 + PRACTICAL_CHANGE),
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb \"#000000\"",
            "set key" if first else "unset key"]
    plots = []
    fills = dict((sig, style) for sig, style, _ in FILLS)
    for i, (flavour, sig) in enumerate(blocks):
        colour = FLAVOUR_COLOURS.get(flavour, PALETTE[2])
        # a bar from 1 to the gain: up when the Flow-IPC path is faster, down when slower
        plots.append("%s index %d using 1:2:3:4:($2<1?$2:1):($2<1?1:$2) with boxxyerror lw 1.5 %s notitle"
                     % (gp_string(data), i, fills[sig] % colour))
        # the interval as a capped line (yerrorbars would break it around its point)
        plots.append("%s index %d using 1:5:(0):($6-$5) with vectors heads size screen 0.005,90 lc rgb \"#000000\" "
                     "lw 1.5 notitle" % (gp_string(data), i))
        plots.append("%s index %d using 1:7:8 with labels font \",7\" notitle" % (gp_string(data), i))
    cmds.append("plot " + ", \\\n     ".join(plots + (gain_legend(flavours) if first else [])))
    return cmds


def gain_panels(groups):
    """[(title, bars)] of gain.png: first the rows that decide (the whole request per size,
    the workload request), then each binary's other rows (translation alone, the sweep,
    per block) and one-off costs on their own scale; at most PANEL_QUESTIONS rows a panel."""
    decide, rest = OrderedDict(), []
    for bench, kind in [(b, k) for b in BENCHES for k in ("per operation", "one-off") if (b, k) in groups]:
        bars = groups[(bench, kind)]
        what = "%s, %s" % (bench, "per operation or request" if kind == "per operation" else "one-off costs")
        others = OrderedDict()
        for label, by in bars.items():
            request = bench in ("transfer", "workload") and kind == "per operation" and \
                (label.startswith("request ") or label.startswith("workload request "))
            (decide if request else others)[label] = by
        if others:
            rest.append((what, others))
    out = []
    for title, bars in ([("what decides: the whole request, per size and per workload request", decide)]
                        if decide else []) + rest:
        chunks = even_chunks(list(bars))
        for k, chunk in enumerate(chunks):
            part = " (%d of %d)" % (k + 1, len(chunks)) if len(chunks) > 1 else ""
            out.append((title + part, OrderedDict((l, bars[l]) for l in chunk)))
    return out


def plot_gain(folder, out_dir):
    groups = gain_bars(folder)
    if not groups:
        return None
    pairs, files = system_pairs(folder)
    flavours = unique(split_key(b)[1] for _, _, b in pairs)
    panels = [gain_panel(out_dir, i, title, bars, flavours, i == 0)
              for i, (title, bars) in enumerate(gain_panels(groups))]
    benches = unique(b for b, _ in groups)
    runs = [(run_system(files[k], k, ctx), ctx) for bench, a, b in pairs if bench in benches
            for k in (a, b) for ctx in [load(files[k])[1]]]
    title = ["Gain of Flow-IPC (%s) over Mooncake per row: p50 ratio, medians over repetitions, 95%% bootstrap "
             "interval; colour = flavour, fill = significance; the rows that decide first; flags: in report.md"
             % ", ".join(flavours)] + \
        context_lines(runs, flags=False)
    return script(title, panels, size=(1300, 380 * len(panels) + 200), right=0.71)


def question_label(question):
    """'shm_transfer/request/size_kb:4' -> 'request 4K'; a count or a name as it is."""
    middle, arg_name, arg, threads = parts(question)
    x = size_label(arg) if arg_name.startswith("size") and arg is not None else \
        "%s segs" % arg if arg_name == "segments" else question.rsplit(":", 1)[-1]
    return " ".join(middle + [x] + (["%dT" % threads] if threads > 1 else []))


def paired_panel(out_dir, index, title, questions, baseline, control, first):
    """The gnuplot commands of one panel of paired.png: per question (questions: [(question,
    OrderedDict system -> Pair)]), each system's ratio to the baseline (log scale) with its
    95% interval as an error bar, a grey band where a change is under PRACTICAL_CHANGE; the
    control in grey."""
    systems = unique(s for _, by in questions for s in by)
    data = "paired%d.dat" % index
    width = 0.8 / len(systems)
    ys = [1.0]
    lines = []
    for j, s in enumerate(systems):
        lines.append("# %s\n" % dat_string(s))
        n = 0
        for x, (q, by) in enumerate(questions):
            p = by.get(s)
            if p is None:
                continue
            lo, hi = (p.lo, p.hi) if p.has_interval and p.lo > 0 else (p.ratio, p.ratio)
            lines.append("%r %r %r %r\n" % (x - 0.4 + width * (j + 0.5), p.ratio, lo, hi))
            ys += [p.ratio, lo, hi]
            n += 1
        if not n:
            lines.append("nan nan nan nan\n")
        lines.append("\n\n")
    write_output(os.path.join(out_dir, data), "".join(lines))
    lo, hi = min(ys) / 1.3, max(ys) * 1.3
    xt = ", ".join("%s %d" % (gp_string(question_label(q)), x) for x, (q, _) in enumerate(questions))
    cmds = ["unset arrow", "unset label", "unset object", "set title %s" % gp_string(title),
            "unset xlabel", "set ylabel \"ratio (log scale)\"", "unset logscale x", "set logscale y",
            "set yrange [%r:%r]" % (lo, hi), "set xrange [-0.7:%r]" % (len(questions) - 0.3), log_ytics(lo, hi),
            "set xtics (%s) rotate by 30 right font \",9\"" % xt,
            "set object 1 rect from graph 0, first %r to graph 1, first %r fc rgb \"#e8e8e8\" fs solid 1.0 noborder behind"
            % (1 / (1 + PRACTICAL_CHANGE), 1 + PRACTICAL_CHANGE),
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb \"#000000\"",
            "set key" if first else "unset key"]
    plots = []
    for i, s in enumerate(systems):
        colour = PALETTE[7] if s == control else FLAVOUR_COLOURS.get(s, PALETTE[2])
        plots.append("%s index %d using 1:2:3:4 with yerrorbars lc rgb \"%s\" pt 7 ps 0.8 lw 1.5 title %s"
                     % (gp_string(data), i, colour, gp_string(s)))
    if first:
        plots.append("NaN with boxes fs solid 1.0 lc rgb \"#e8e8e8\" title %s"
                     % gp_string("grey band: under %g%%" % (PRACTICAL_CHANGE * 100)))
    cmds.append("plot " + ", \\\n     ".join(plots))
    return cmds


# At most this many questions share a panel: more, and their labels overlap.
PANEL_QUESTIONS = 12


def even_chunks(xs):
    """xs in as few panels of at most PANEL_QUESTIONS as hold them, alike in size (14 rows:
    7 and 7, not 12 and 2)."""
    n = -(-len(xs) // PANEL_QUESTIONS)
    size = -(-len(xs) // n) if n else 1
    return [xs[i:i + size] for i in range(0, len(xs), size)]


def paired_panels(runs):
    """[(title, [(question, pairs)])] of paired.png: first the rows that decide (the whole
    request per size and per workload request: what a user waits for), then each run's
    other questions (per block, one-off, translation alone, the request's parts) on their
    own scale; a panel holds at most PANEL_QUESTIONS questions."""
    decide, rest = [], OrderedDict()
    for bench, run in runs:
        for q, by in run.pairs.items():
            if bench in ("transfer", "workload") and parts(q)[0][-1:] == ["request"]:
                decide.append((q, by))
            else:
                rest.setdefault("%s (%s)" % (bench, os.path.basename(run.path)), []).append((q, by))
    base = runs[0][1].baseline
    groups = [("what decides: the whole request, per size and per workload request", decide)] if decide else []
    groups += list(rest.items())
    out = []
    for title, questions in groups:
        chunks = even_chunks(questions)
        for k, chunk in enumerate(chunks):
            part = " (%d of %d)" % (k + 1, len(chunks)) if len(chunks) > 1 else ""
            out.append(("%s%s: %s / system per round, median and 95%% interval (above 1: the system is faster)"
                        % (title, part, base), chunk))
    return out


def plot_paired(folder, out_dir):
    """paired.png of a folder's paired runs: the deciding rows first, then a panel per run
    (None without one)."""
    runs = [(bench, load_paired(path)) for bench, path in paired_files(folder).items()]
    if not runs:
        return None
    base, control = runs[0][1].baseline, runs[0][1].control
    panels = [paired_panel(out_dir, i, title, questions, base, control, i == 0)
              for i, (title, questions) in enumerate(paired_panels(runs))]
    title = ["Paired runs: each system against %s, measured in one process in turn; grey: the A/A control "
             "(%s), the run's noise; flags: in report.md" % (base, control)] + \
        context_lines([("", run.ctx) for _, run in runs], flags=False)
    return script(title, panels, size=(1300, 380 * len(panels) + 200), right=0.78)


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
            write_output(os.path.join(out_dir, name + ".gp"), text)
            made.append(name)
    for name, fn in (("gain", plot_gain), ("paired", plot_paired)):
        text = fn(folder, out_dir)
        if text:
            write_output(os.path.join(out_dir, name + ".gp"), text)
            made.append(name)
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
    if len(argv) == 4 and argv[1] == "place":
        return place(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "paired":
        return paired_summary(argv[2])
    if len(argv) == 4 and argv[1] == "paired":
        if os.path.isdir(argv[2]):
            return paired_compare(argv[2], argv[3])
        return paired_before_after(argv[2], argv[3])
    if len(argv) in (3, 4) and argv[1] == "pairedcheck":
        return paired_check(argv[2:])
    if len(argv) == 5 and argv[1] == "gate":
        return gate(argv[2], argv[3], argv[4])
    if len(argv) == 4 and argv[1] == "flags":
        return flags_differ(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


def place(src, dest):
    """Puts the file src (plot.sh's PNG, in its private folder) at dest as write_output
    writes: whole or not at all, never through a link."""
    try:
        with open(src, "rb") as f:
            data = f.read()
    except OSError as e:
        raise WriteFailed("cannot read %s: %s" % (src, e.strerror))
    write_output(dest, data)
    return 0


def main(argv):
    """--as=NAME first: the script whose name starts an error line (compare.sh, plot.sh)."""
    return main_of(run, "results.py", argv)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head: end quietly
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: no traceback
    sys.exit(main(sys.argv))
