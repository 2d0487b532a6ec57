"""report.md's "Space: what each allocator can hold" (inside "Per block"): allocation_space.json (shm_allocation_bench
--allocator=space, run by run_all.sh --system) as one table per allocator, utilization and fragmentation
beside the same run's ns per alloc and free."""
import json
import os
import re

from .fmt import fmt_time, md_head, md_row

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
