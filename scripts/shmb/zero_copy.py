"""report.md's zero-copy section: Mooncake's whole request against each flavour's hand-off."""
from .fmt import fmt_ratio, fmt_size
from .paired_folder import paired_questions, paired_render
from .verdict_base import TITLE, not_run


FREES = {"flowipc_classic": "SHM-classic: the last owner frees",
         "flowipc_jemalloc": "SHM-jemalloc: then the return message and the lender's free"}
ZERO_COPY_CONDITION = ("the reader must be able to use the object in place (read it where it lies in the "
                       "writer's memory): an application change, not a transport swap")


def paired_zero_copy(folder):
    """The zero-copy section: its table, where each hand-off beats Mooncake's request. (lines, groups)"""
    title = "Zero copy: Mooncake's whole request against each flavour's hand-off, per object size"
    bench = "zero_copy" if "zero_copy" in folder.runs else "transfer"
    groups = paired_questions(folder, bench, r"^shm_transfer/zero_copy/size_kb:(\d+)$",
                              lambda m: "zero copy, %s" % fmt_size(int(m.group(1))))
    if not groups:
        return not_run(title, "no shm_transfer/zero_copy/... ratio rows in this folder (shm_transfer_bench "
                              "--systems=... --zero_copy, run_all.sh --system)"), []
    legend = ("Flow-IPC exists to hand objects over instead of copying them. Per object size (rows "
              "shm_transfer/zero_copy/size_kb:N of %s_paired.json): Mooncake's whole request (the request path, "
              "relocate, the copy into the peer's buffer) against each flavour's hand-off of an object of that "
              "size to a borrower process, with no copy: construct (timed: every hand-off pays its allocation, "
              "as it pays the free), lend, the handle message, borrow, tag check, release%s. The condition: %s."
              % (bench, " (%s)" % "; ".join(FREES[f] for f in folder.flavours), ZERO_COPY_CONDITION))
    out = paired_render(title, legend, groups, "per object", None)
    lines = [zero_copy_line(f, groups) for f in folder.flavours]
    out = out[:-1] + ["", "Where the hand-off is cheaper:", ""] + ["- " + l for l in lines if l] + [""]
    return out, groups


def zero_copy_sizes(f, groups):
    """[(size label, Verdict)] of flavour f, by size."""
    return [(v.label.split(", ", 1)[1], v) for g in groups for v in g if v.flavour == f]


def zero_copy_break_even(f, groups):
    """From the smallest size where the hand-off is faster and no larger size refutes it, the text
    of where it is cheaper than Mooncake's request; None when f was not measured."""
    sizes = zero_copy_sizes(f, groups)
    if not sizes:
        return None
    span = "%s to %s" % (sizes[0][0], sizes[-1][0])
    refutes = ("slower", "no practical difference")
    first = next((i for i, (_, v) in enumerate(sizes)
                  if v.word == "faster" and not any(w.word in refutes for _, w in sizes[i:])), None)
    if first is None:
        return "is never cheaper than Mooncake's whole request within %s" % span
    open_ = ["%s %s" % (size, v.word) for size, v in sizes[first:] if v.word != "faster"]
    tail = "; undecided above: %s" % ", ".join(open_) if open_ else ""
    if first == 0:
        return "is cheaper than Mooncake's whole request at every size from %s%s" % (
            span, " (%s)" % tail[2:] if tail else "")
    return "is cheaper than Mooncake's whole request from about %s (not faster at %s%s)" % (
        sizes[first][0], sizes[first - 1][0], tail)


def zero_copy_line(f, groups):
    """'SHM-classic's hand-off is cheaper than Mooncake's whole request from about 1 MB (...); ...'"""
    where = zero_copy_break_even(f, groups)
    if where is None:
        return None
    sizes = zero_copy_sizes(f, groups)
    ends = "; ".join("%s ratio %s" % (size, fmt_ratio(v.pair)) for size, v in (sizes[0], sizes[-1]))
    return "%s's hand-off %s (%s); the condition: %s." % (TITLE[f], where, ends, ZERO_COPY_CONDITION)
