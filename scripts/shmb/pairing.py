"""Two runs of one binary paired row by row, across --system and the one-off steps' older names."""
import os
from collections import OrderedDict

from .files import BadInput
from .runs import BENCHES, SYSTEMS, attach_total, folder_files, load_run, parts, unique


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
    'segments:100')."""
    fields = name.split("/")
    end = next((i for i, f in enumerate(fields) if ":" in f and i > 0), len(fields))
    return fields[0], fields[1:end], "/".join(fields[end:])


def canonical(name):
    """A row name with its one-off step under today's name (STEP_ALIASES)."""
    bench, middle, arg = split_name(name)
    return "/".join([bench] + [STEP_ALIASES.get(m, m) for m in middle] + ([arg] if arg else []))


def as_system(name, system):
    """The name a --system=SYSTEM run gives a row of a run without --system, or None if not SYSTEM's."""
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
    """canonical name -> (name, Row); with system, under the names a --system run gives them."""
    out = OrderedDict()
    for name, row in rows.items():
        key = as_system(name, system) if system else name
        if key is not None:
            out.setdefault(canonical(key), (name, row))
    return out


def merged_keys(a, b):
    """a's keys, with each key only b has placed after the key that precedes it in b."""
    keys = list(a)
    prev = None
    for k in b:
        if k not in a and k not in keys:
            keys.insert(0 if prev is None else keys.index(prev) + 1, k)
        prev = k
    return keys


class Pairing:
    """Two runs' rows keyed alike: a, b (key -> Row), names (key -> JSON name), notes."""

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


def pair_runs(a, b):
    """The Pairing of two Runs of one binary, in one format, sharing rows."""
    if a.kind != b.kind:
        raise BadInput("%s is a %s and %s a %s: give two tables or two JSON files" % (a.path, a.kind, b.path, b.kind))
    if a.binary != b.binary:
        raise BadInput("%s is %s's output and %s %s's: compare two runs of one binary"
                       % (a.path, a.binary, b.path, b.binary))
    pairing = Pairing(a.rows, b.rows, a.system, b.system)
    if not any(k in pairing.b for k in pairing.a):
        raise BadInput("%s and %s have no row in common: not two runs of one binary" % (a.path, b.path))
    return pairing


def folder_pairs(a_dir, b_dir):
    """[(key, A's file, B's file)] of two folders, a run without --system against --system files."""
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
    return unique(k for d in (a_dir, b_dir) for k, p in folder_files(d).items() if p not in used)


def pairing_of(a_path, b_path):
    a, b = load_run(a_path), load_run(b_path)
    return Pairing(a.rows, b.rows, a.system, b.system, "A's " + os.path.basename(a_path),
                   "B's " + os.path.basename(b_path))


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
    """Reads every file the command will read, so that a bad one stops it before it prints."""
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


def one_off(middle):
    """Is a row of these middle parts a one-off cost (per buffer, pool or peer)?"""
    return any(m in ONE_OFF for m in middle)
