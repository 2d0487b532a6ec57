"""What report.md of paired runs and of per-system files share."""
import math
import os
import re
from collections import OrderedDict

from .files import write_output
from .fmt import fmt_pct, fmt_size, fmt_time, md_head
from .runs import unique


BASE = "mooncake"
FLAVOURS = ("flowipc_classic", "flowipc_jemalloc")
TITLE = {"mooncake": "Mooncake", "flowipc_classic": "SHM-classic", "flowipc_jemalloc": "SHM-jemalloc"}
QUESTION_SIZES_KB = (4, 64, 1024, 16384)  # the per-request sizes the report answers for
BLOCK_STEPS = ("alloc", "free", "alloc_reuse")  # the object layer's rows
BARE_STEPS = ("alloc_bare", "free_bare")  # the bare allocator's rows
WORKLOAD_PARTS = ("request_path", "translate", "copy")
# What each system places an object with, and the bare allocator under it (the per-block
# section's legend: the object layer's rows alloc, free, alloc_reuse; the bare rows alloc_bare,
# free_bare).
OBJECT_LAYER = {"mooncake": "OffsetBufferAllocator::allocate with its AllocatedBuffer (mooncake-store/src/allocator.cpp)",
                "flowipc_classic": "Pool_arena::construct with its boost::shared_ptr (ipc_shm, classic/pool_arena.hpp)",
                "flowipc_jemalloc": "Ipc_arena::construct with its std::shared_ptr (ipc_shm_arena_lend, "
                                    "jemalloc/ipc_arena.hpp)"}
ALLOCATOR = {"mooncake": "OffsetAllocator alone (mooncake-store/src/offset_allocator.cpp)",
             "flowipc_classic": "boost.interprocess rbtree_best_fit allocate/deallocate",
             "flowipc_jemalloc": "mallocx/dallocx"}
# What each system registers for N blocks of a size (the registration section's legend).
DEPLOYMENT = {"mooncake": "N buffers, each createSharedMemory (shm_open + ftruncate + mmap + close)",
              "flowipc_classic": "one pool of N blocks",
              "flowipc_jemalloc": "its arena and N mallocx, with the SHM pools its extent hooks create"}
PLOTS = ("paired", "gain", "transfer", "lookup", "allocation")
# The sections both reports have, titled alike.
BLOCK_TITLE = "Per block: an object inside registered memory (object layer), and the bare allocator under it"
REGISTRATION_TITLE = "Registration: making N blocks usable, deployment totals (one-off)"
ATTACH_TITLE = "First attach: what the receiver pays before its first request (one-off)"
REQUEST_TITLE = "Per request at 4 KB, 64 KB, 1 MB, 16 MB"
BREAK_EVEN_HEAD = "## Break-even of the one-off costs"


def question_sizes(measured):
    """The question sizes measured, else the smallest and largest measured."""
    sizes = [s for s in QUESTION_SIZES_KB if s in measured]
    return sizes or sorted(set(measured[:1] + measured[-1:]))


def who(folder, what):
    """'Mooncake: X; SHM-classic: Y.' of the systems in the folder (what: system -> text)."""
    return "; ".join("%s: %s" % (TITLE[s], what[s]) for s in (BASE,) + FLAVOURS
                     if s == BASE or s in folder.flavours) + "."


def glance_head(folder, what):
    """The opening of the "At a glance" table: what it counts, a column per flavour."""
    return ["## At a glance", "", what, ""] + md_head(["question"] + [TITLE[f] for f in folder.flavours])


def counted(words):
    """'faster 2; within the noise 1' of verdicts, in their first order."""
    return "; ".join("%s %d" % (w, words.count(w)) for w in unique(words))


def parts_line(what, system, shares):
    """'model:X, Mooncake: request_path 54%, translate 2.1%, copy 38% of the request p50.'"""
    return "%s, %s: %s of the request p50." % (what, TITLE[system], ", ".join("%s %s" % (p, fmt_pct(s))
                                                                              for p, s in shares))


def not_run(title, why):
    return ["## " + title, "", "Not run: %s." % why, ""]


def layers_legend(folder):
    """Both layers of the per-block section, per system, with the upstream function each row times."""
    return ("Object layer (rows alloc, free, alloc_reuse; the verdict): " +
            who(folder, OBJECT_LAYER) +
            " Bare allocator (rows alloc_bare, free_bare; stated beside it): " +
            who(folder, ALLOCATOR))


def register_label(buffers, kb):
    """'register 100 buffers, 64 KB': the size after the comma, as the per-block labels have it."""
    return "register %d buffers, %s" % (buffers, fmt_size(kb))


def registration_legend(folder, where):
    return ("Deployment totals: the whole cost of making N blocks of one size usable, for N = 10, 100, 1000. " +
            who(folder, DEPLOYMENT) +
            " Teardown untimed; no page is touched (rows shm_alloc/register/size_kb:S/buffers:N%s)." % where)


def break_even(extra, saving):
    """'after N' operations, 'never', or 'at once' (no extra one-off to pay back)."""
    if extra <= 0:
        return "at once"
    if saving <= 0:
        return "never"
    return "after {:,}".format(int(math.ceil(extra / saving)))


def one_off_line(c, againsts):
    """A line: the flavour's extra one-off and when each per-operation saving pays it back."""
    extra = -c.saved
    if extra <= 0:
        than = "the same as Mooncake's" if extra == 0 else "%s less than Mooncake's" % fmt_time(-extra)
        return "- %s, %s: costs %s: nothing to pay back." % (c.label, TITLE[c.flavour], than)
    parts = []
    for what, saving, note in againsts:
        if saving < 0:
            parts.append("never by %s (%s more each%s)" % (what, fmt_time(-saving), note))
        elif saving == 0:
            parts.append("never by %s (the same each%s)" % (what, note))
        else:
            parts.append("%s %s (%s saved each%s)" % (break_even(extra, saving), what, fmt_time(saving), note))
    return "- %s, %s: costs %s more than Mooncake's; paid back: %s." % (
        c.label, TITLE[c.flavour], fmt_time(extra),
        "; ".join(parts) if parts else "by nothing measured in this folder")


def distinct(ctxs, key):
    """OrderedDict value -> [file keys] of a context key over the files (absent: left out)."""
    out = OrderedDict()
    for bench, system, ctx in ctxs:
        if key in ctx:
            out.setdefault(str(ctx[key]), []).append("%s_%s" % (bench, system))
    return out


def one_or_each(ctxs, key):
    """A context value, or each value with the files it came from when they differ."""
    got = distinct(ctxs, key)
    if len(got) <= 1:
        return next(iter(got), "not recorded")
    return "DIFFERS: " + "; ".join("%s (%s)" % (v, ", ".join(files)) for v, files in got.items())


def listed(ctx, each, one):
    """A context's list of each repetition's values, else its one value (a crafted list ignored)."""
    values = ctx.get(each)
    return values if isinstance(values, list) and values else [ctx.get(one)]


def machine_lines(ctxs):
    """The run's machine and build, one line each, from the files' contexts."""
    return ["- Machine: %s; CPU %s, %s cpus, %s MHz; kernel %s; clocksource %s; governor %s; "
            "transparent hugepages %s, shmem %s" % tuple(one_or_each(ctxs, k) for k in (
                "host_name", "cpu_model", "num_cpus", "mhz_per_cpu", "kernel", "clocksource",
                "cpu_governor", "thp_enabled", "thp_shmem_enabled")),
            "- Build: commit %s; %s, %s, %s" % tuple(one_or_each(ctxs, k) for k in (
                "git_commit", "build_type", "compiler", "build_flags"))]


def plots_section(folder, skip=()):
    """The folder's PNGs, but those a section embeds (skip)."""
    names = [p + ".png" for p in PLOTS if os.path.isfile(os.path.join(folder.path, p + ".png"))]
    names += sorted(n for n in os.listdir(folder.path) if n.endswith(".png") and n not in names)
    names = [n for n in names if n not in skip]
    out = ["## Plots", ""]
    if not names:
        return out + ["No plots in this folder: ./scripts/plot.sh on it makes them.", ""]
    from urllib.parse import quote
    for n in names:
        out += ["![%s](%s)" % (n[:-4].replace("]", ""), quote(n)), ""]
    return out


def write_report(path, text):
    """Writes DIR/report.md whole (a partial file renamed) and prints its path."""
    out = os.path.join(path, "report.md")
    write_output(out, re.sub(r"\n{3,}", "\n\n", "\n".join(text)).rstrip("\n") + "\n")
    print(out)
    return 0
