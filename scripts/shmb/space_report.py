"""allocation_space.json (--allocator=space): report.md's table, compare.sh's and the gate's."""
import json
import os
import re
import sys
from collections import OrderedDict

from .files import BadInput, benchmark_json, check_name, number, read
from .fmt import fmt, fmt_change, fmt_time, md_head, md_row

TITLE_SPACE = "Space: what each allocator can hold"
FILE = "allocation_space.json"
WHO = {"offset": "Mooncake Store: OffsetBufferAllocator (object layer, as the Store calls it)",
       "bipc": "SHM-classic: boost.interprocess rbtree_best_fit",
       "jemalloc": "SHM-jemalloc: jemalloc arena over SHM pools (mallocx, no thread cache)"}
HOW = {"offset": "its storageReport (largestFreeRegion: the largest bin with a free node, rounded down)",
       "bipc": "get_free_memory; largest: a binary search of the largest request that allocates, each probe "
               "freed at once",
       "jemalloc": "'-': it maps SHM pools as it grows, so there is no fixed pool whose free space it could "
                   "report"}
FLAVOUR = {"bipc": "flowipc_classic", "jemalloc": "flowipc_jemalloc"}  # the flavour whose allocator it is
LABEL = re.compile(r"util (?P<util>[\d.]+) frag (?:(?P<frag>[\d.]+) \((?P<largest>[\d.]+) of (?P<total>[\d.]+) MiB\)|-)")
NAME = re.compile(r"shm_alloc/(?P<alloc>[a-z_]+)/space_(?P<step>alloc|free)/pool_mb:(?P<mb>\d+)$")


def space_rows(path):
    """{allocator: {"alloc": row, "free": row}} of the first repetition's measured rows, and the pool's MB."""
    with open(path) as f:
        rows = json.load(f).get("benchmarks", [])
    out, mb = {}, None
    for b in rows:
        m = NAME.match(b.get("name", ""))
        if not m or b.get("run_type", "iteration") != "iteration" or b.get("repetition_index", 0) != 0:
            continue
        mb = int(m.group("mb"))
        out.setdefault(m.group("alloc"), {})[m.group("step")] = b
    return out, mb


def space_cells(alloc, pair):
    m = LABEL.match(pair["alloc"].get("label", ""))
    util = "%.2f%%" % (100 * float(m.group("util"))) if m else "-"
    frag = "%.2f%%" % (100 * float(m.group("frag"))) if m and m.group("frag") else "-"
    free = "%s of %s MiB" % (m.group("largest"), m.group("total")) if m and m.group("frag") else "-"
    ns = [fmt_time(pair[s]["p50"]) if s in pair and "p50" in pair[s] else "-" for s in ("alloc", "free")]
    return [alloc, WHO.get(alloc, alloc), util, frag, free] + ns + [str(pair["alloc"].get("iterations", "-"))]


def space_section(folder):
    """The section: how it was measured, the table, and how each allocator's largest free block was found."""
    out = ["### " + TITLE_SPACE, ""]
    path = os.path.join(folder.path, FILE)
    if not os.path.isfile(path):
        return out + ["Not run: no %s in this folder (run_all.sh --system runs it)." % FILE, ""]
    rows, mb = space_rows(path)
    out += ["One pool of %s MiB per allocator, filled with Mooncake Store's KV mix (4 KiB 70%%, 256 KiB 20%%, "
            "3,274,752 B 10%%, seeded; docs/allocation.md cites it) until an allocation first fails: "
            "utilization = requested bytes live / pool size then. Then a churn of 20 rounds, each freeing a "
            "seeded random 50%% of the live blocks and allocating again until the first failure; fragmentation "
            "= 1 - largest free block / total free after it. ns: p50 of each allocation of the same run (timed "
            "alone, one clock read included) and of each round's free batch per free. Every live set was "
            "checked inside its pool and disjoint before it counted." % mb, ""]
    out += md_head(["allocator", "what", "utilization at first failure", "fragmentation after churn",
                    "largest of total free", "ns per alloc (p50)", "ns per free (p50)", "allocs timed"])
    shown = [a for a in ("offset", "bipc", "jemalloc") if "alloc" in rows.get(a, {}) and
             (a == "offset" or FLAVOUR[a] in getattr(folder, "flavours", FLAVOUR.values()))]
    out += [md_row(space_cells(a, rows[a])) for a in shown]
    out += ["", "Largest free block, per allocator:"] + ["- %s: %s." % (a, HOW[a]) for a in shown]
    if "jemalloc" in shown:
        out += ["- jemalloc: an allocation counts as failed when it maps SHM past the pool size; its churn "
                "refills up to the live bytes of its fill (the extent the failed allocation mapped stays "
                "with the arena)."]
    return out + [""]


SPACE_CHANGE = 0.5  # percentage points: utilization and fragmentation are deterministic for a seed
ORDER = ("offset", "bipc", "jemalloc")


class Space:
    """An allocator's util and frag (%, frag None: '-'), alloc_ns and free_ns p50s."""

    def __init__(self, util, frag, alloc_ns, free_ns):
        self.util, self.frag, self.alloc_ns, self.free_ns = util, frag, alloc_ns, free_ns


def load_space(path):
    """(allocator -> Space of the first repetition, pool MB), every figure read checked."""
    data, _ = benchmark_json(path, read(path))
    got, mb = {}, None
    for i, b in enumerate(data["benchmarks"]):
        check_name(path, i, b)
        m = NAME.match(b["name"])
        if not m or b.get("run_type", "iteration") != "iteration" or b.get("repetition_index", 0) != 0:
            continue
        if "p50" in b and not (number(b["p50"]) and b["p50"] > 0):
            raise BadInput("%s: benchmark %s: p50 %r is not a time" % (path, b["name"], b["p50"]))
        mb = int(m.group("mb"))
        got.setdefault(m.group("alloc"), {})[m.group("step")] = b
    out = OrderedDict()
    for alloc in sorted(got, key=lambda a: (ORDER.index(a) if a in ORDER else len(ORDER), a)):
        steps = got[alloc]
        if "alloc" not in steps:
            continue
        m = LABEL.match(str(steps["alloc"].get("label", "")))
        if not m:
            raise BadInput("%s: benchmark %s: label %r is not 'util U frag F (L of T MiB)'"
                           % (path, steps["alloc"]["name"], steps["alloc"].get("label")))
        out[alloc] = Space(100 * float(m.group("util")), 100 * float(m.group("frag")) if m.group("frag") else None,
                           steps["alloc"].get("p50"), steps.get("free", {}).get("p50"))
    if not out:
        raise BadInput("%s: no space_alloc row (shm_alloc/ALLOCATOR/space_alloc/pool_mb:N): not a "
                       "--allocator=space run" % path)
    return out, mb


def space_change(a, b):
    """'changed' beyond SPACE_CHANGE points, else 'unchanged'; '-' when either is missing."""
    if a is None or b is None:
        return "-"
    return "changed" if abs(b - a) > SPACE_CHANGE else "unchanged"


def pct_cell(v):
    return "-" if v is None else "%.2f%%" % v


SPACE_NOTE = "utilization at first failure and fragmentation after churn are deterministic for a seed (--seed)%s; %s"


def space_summary(path):
    """compare.sh DIR: allocation_space.json's figures, one row per allocator."""
    rows, mb = load_space(path)
    row_fmt = "%-10s %12s %14s %9s %9s"
    print("== space: %s (one pool of %s MiB per allocator)" % (os.path.basename(path), mb))
    print(row_fmt % ("allocator", "utilization", "fragmentation", "alloc_ns", "free_ns"))
    for alloc, s in rows.items():
        print(row_fmt % (alloc, pct_cell(s.util), pct_cell(s.frag), fmt(s.alloc_ns), fmt(s.free_ns)))
    print(SPACE_NOTE % ("", "ns: the p50 of each allocation and of each round's frees per free, each allocator "
                              "timed on its own, not paired"))
    return 0


def space_before_after(a_path, b_path):
    """compare.sh A B: utilization and fragmentation judged, ns shown unpaired, never judged."""
    a, _ = load_space(a_path)
    b, _ = load_space(b_path)
    both = [x for x in a if x in b]
    if not both:
        raise BadInput("%s and %s have no allocator in common" % (a_path, b_path))
    for x in [x for x in a if x not in b] + [x for x in b if x not in a]:
        print("compare.sh: space: %s is in %s only, not compared" % (x, a_path if x in a else b_path),
              file=sys.stderr)
    row_fmt = "%-10s %9s %9s  %-9s  %9s %9s  %-9s  %9s %9s %9s %9s"
    print("== space: %s against %s" % (a_path, b_path))
    print(row_fmt % ("allocator", "util A", "util B", "verdict", "frag A", "frag B", "verdict", "alloc_ns A",
                     "alloc_ns B", "free_ns A", "free_ns B"))
    for x in both:
        sa, sb = a[x], b[x]
        print(row_fmt % (x, pct_cell(sa.util), pct_cell(sb.util), space_change(sa.util, sb.util), pct_cell(sa.frag),
                         pct_cell(sb.frag), space_change(sa.frag, sb.frag), fmt(sa.alloc_ns), fmt(sb.alloc_ns),
                         fmt(sa.free_ns), fmt(sb.free_ns)))
    print(SPACE_NOTE % (": changed when A and B differ by more than %g percentage points, else unchanged"
                        % SPACE_CHANGE, "ns per alloc and per free (p50) are of separate runs, unpaired (drift "
                        "included): shown, never judged nor gated"))
    return 0


def gate_space(a_path, b_path, limit):
    """An allocator whose utilization changed and fell beyond limit (relative) trips the gate."""
    a, _ = load_space(a_path)
    b, _ = load_space(b_path)
    out = []
    for x, sa in a.items():
        sb = b.get(x)
        if not sb:
            out.append(("space/%s utilization at first failure" % x, pct_cell(sa.util), "-",
                        "the allocator is missing from %s" % b_path))
        elif space_change(sa.util, sb.util) == "changed" and sb.util < sa.util * (1 - limit):
            out.append(("space/%s utilization at first failure" % x, pct_cell(sa.util), pct_cell(sb.util),
                        "utilization %s, changed" % fmt_change(sa.util, sb.util)))
    return out
