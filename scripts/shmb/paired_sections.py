"""report.md's sections of paired runs."""
import re

from .files import number
from .fmt import fmt_size, fmt_time
from .paired_folder import credit, differing_steps, not_upstream, paired_questions, paired_render, paired_sizes
from .verdict_base import (ATTACH_TITLE, BASE, BLOCK_TITLE, FLAVOURS, QUESTION_SIZES_KB, REGISTRATION_TITLE,
                           REQUEST_TITLE, TITLE, WORKLOAD_PARTS, layers_legend, not_run, parts_line, register_label,
                           registration_legend)


def allocation_section(folder, title, pattern, label, legend, unit, sizes):
    """A section of allocation_paired.json's questions matching pattern (group 1: KB)."""
    if "allocation" not in folder.runs:
        return not_run(title, "no allocation_paired.json in this folder"), []
    groups = paired_questions(folder, "allocation", pattern, label, sizes(pattern))
    return paired_render(title, legend, groups, unit), groups


def paired_block(folder):
    return allocation_section(
        folder, BLOCK_TITLE,
        r"^shm_alloc/(?:alloc|free|alloc_reuse|alloc_bare|free_bare)/size_kb:(\d+)$",
        lambda m: "%s, %s" % (m.group(0).split("/")[1], fmt_size(int(m.group(1)))),
        layers_legend(folder) + " Per size, the verdict is a block's alloc + free at the object layer, the bare "
        "allocator's alloc_bare + free_bare beside it; time per operation (rows shm_alloc/STEP/size_kb:N of "
        "allocation_paired.json).",
        "per operation", lambda pat: paired_sizes(folder, "allocation", pat))


def paired_registration(folder):
    return allocation_section(
        folder, REGISTRATION_TITLE,
        r"^shm_alloc/register/size_kb:(\d+)/buffers:(\d+)$",
        lambda m: register_label(int(m.group(2)), int(m.group(1))),
        registration_legend(folder, " of allocation_paired.json"), "once",
        lambda pat: paired_sizes(folder, "allocation", pat))


def paired_attach(folder):
    title = ATTACH_TITLE
    if "lookup" not in folder.runs:
        return not_run(title, "no lookup_paired.json in this folder"), []
    groups = paired_questions(folder, "lookup", r"^shm_lookup/attach/segments:(\d+)$",
                              lambda m: "attach, %s segments" % m.group(1))
    legend = ("The receiver's whole first attach per round (rows shm_lookup/attach/segments:N of "
              "lookup_paired.json, measured with --peer_process): Mooncake opens and maps each buffer on "
              "its first request, SHM-classic its one pool (no message: its name is the session's); "
              "the ratio is of these totals.")
    if "flowipc_jemalloc" in folder.flavours:
        legend += (" SHM-jemalloc's total is its session's lend of every pool to the receiver: LendArena, "
                   "then per pool the LendPool message, the receiver's open and map, its Response back, "
                   "each a round trip between the two processes.")
    return paired_render(title, legend, groups, "once"), groups


def write_path_legend(folder):
    """What SHM-jemalloc's request stands for, where it runs."""
    if "flowipc_jemalloc" not in folder.flavours:
        return ""
    return (" SHM-jemalloc cannot take Mooncake's one-sided write (its borrowers map lent pools read-only: "
            "ipc_shm_arena_lend, borrower_shm_pool_collection.cpp, open_shm_pool), so its request is its write "
            "path: the request path around construct in its own arena, the write, lend, the handle message to a "
            "borrower process, borrow, release, the return message and the free. Only the request path is "
            "shared, so its verdict rests on its whole request; its translate row (to_address) is not possible "
            "upstream and reaches no verdict. A reader that needs the bytes in its own buffer adds its copy_out "
            "row.")


def paired_request(folder):
    title = REQUEST_TITLE
    if "transfer" not in folder.runs:
        return not_run(title, "no transfer_paired.json in this folder"), []
    groups, absent = [], []
    for kb in QUESTION_SIZES_KB:
        g = folder.verdicts("transfer", "shm_transfer/request/size_kb:%d" % kb, "%s request" % fmt_size(kb))
        if not g:
            absent.append(fmt_size(kb))
            continue
        credit(g, differing_steps(folder, "transfer", "shm_transfer/translate/size_kb:%d" % kb,
                                  "shm_transfer/request_path/size_kb:%d" % kb))
        groups.append(g)
    legend = ("The whole request: the request path both designs keep, each system's translation and the copy "
              "(rows shm_transfer/request/size_kb:N of transfer_paired.json). The translation differs (rows "
              "shm_transfer/translate/size_kb:N), and so does the request path where it measurably walks the "
              "flavour's pools instead of Mooncake's N buffers (rows shm_transfer/request_path/size_kb:N: TENT's "
              "findBuffer over the registrations each design makes); the design is credited with those steps' "
              "saving, summed, no more. A whole-request saving that differs from it by more than the A/A "
              "control's noise (the width of its saved interval) reads \"unexplained by the design\" (the same "
              "code around those steps cost another amount: noise, or a step costing more or less inside the "
              "request than timed alone) and is not credited. Where the request's saving is the steps', the "
              "verdict rests on their saving as a share of Mooncake's request (5% or more: faster or slower), "
              "and p is theirs (summed: the larger of the two)." + write_path_legend(folder))
    if absent:
        legend += " Not measured in this run: %s." % ", ".join(absent)
    return paired_render(title, legend, groups, "per request", "translation"), groups


def paired_workload(folder):
    title = "Per KV-cache workload: per request"
    pat = r"^shm_transfer/workload/request/(model:.+)$"
    run = folder.runs.get("workload") or folder.runs.get("transfer")
    bench = "workload" if "workload" in folder.runs else "transfer"
    groups = []
    if run is not None:
        for q in run.pairs:
            m = re.match(pat, q)
            if m:
                g = folder.verdicts(bench, q, "%s request" % m.group(1))
                credit(g, differing_steps(folder, bench, "shm_transfer/workload/translate/%s" % m.group(1),
                                          "shm_transfer/workload/request_path/%s" % m.group(1)))
                groups.append(g)
    if not groups:
        return ["## " + title, "", "The KV-cache workload was not run: no shm_transfer/workload/request/... "
                "ratio rows in this folder.", ""], []
    legend = ("Requests replayed from the workload, request by request in turn (rows shm_transfer/workload/PART/"
              "model:PRESET of workload_paired.json): the request path, each descriptor's translation and copy. "
              "As per request, the verdict rests on the saving of the steps the design changes (rows "
              "shm_transfer/workload/translate/..., and request_path/... where it measurably differs) as a share "
              "of Mooncake's request, and a whole-request saving that differs from it by more than the control's "
              "noise reads \"unexplained by the design\"." + write_path_legend(folder)
              .replace("its request is its write path", "its request hands each descriptor over through its "
                       "write path"))
    out = paired_render(title, legend, groups, "per request", "translation")
    tails, parts = [], []
    for g in groups:
        model = g[0].label.split()[0]
        times = run.questions.get("shm_transfer/workload/request/%s" % model, {})
        tails.append("- %s: %s." % (model, "; ".join(
            "%s p50 %s, p99 %s, p99.9 %s" % (TITLE.get(s, s), fmt_time(b["p50"]), fmt_time(b.get("p99") or 0),
                                             fmt_time(b.get("p999") or 0))
            for s, b in times.items() if s in (BASE,) + FLAVOURS and number(b.get("p99")))))
        for s in (BASE,) + tuple(folder.flavours):
            got = [(p, run.questions.get("shm_transfer/workload/%s/%s" % (p, model), {}).get(s))
                   for p in WORKLOAD_PARTS]
            req = times.get(s)
            if req:
                parts.append("- " + parts_line(model, s, [(p, b["p50"] / req["p50"]) for p, b in got
                                                          if b and not not_upstream(b)]))
    out = out[:-1] + ["", "Tails of each system's requests (its own distribution, not paired):", ""] + tails
    return out + ["", "Parts:", ""] + parts + [""], groups
