"""report.md of paired runs."""
import os
from collections import OrderedDict

from .axes_report import axes_section
from .space_report import FILE as SPACE_FILE, space_section
from .files import benchmark_json, number, read
from .fmt import fmt_pct, md_row
from .paired import MIN_ROUNDS, axis_files, model_upstream_lines
from .paired_folder import PairedFolder, step_what
from .paired_sections import paired_attach, paired_block, paired_registration, paired_request, paired_workload
from .paired_sentences import block_lines, blocks_of, verdict_sentences
from .runs import flag_dict
from .stats import ALPHA, PRACTICAL_CHANGE
from .verdict_base import (BREAK_EVEN_HEAD, FLAVOURS, TITLE, counted, glance_head, machine_lines, one_off_line,
                           one_or_each, plots_section, write_report)
from .zero_copy import paired_zero_copy


def credited_saving(v):
    """The saving a break-even counts on (the translation's where the request's is noise), its note."""
    if v.credit and not v.credit[1]:
        return v.credit[0].saved, ", %s: the request's own is unexplained" % step_what(v.credit[0])
    return v.pair.saved, ", %s" % v.word


def paired_break_evens(register, attach, block, request):
    """How many blocks or requests pay back a flavour's extra one-off, by median savings."""
    out = [BREAK_EVEN_HEAD, "",
           "When a flavour's one-off cost exceeds Mooncake's (its saved time is negative), the number of "
           "operations whose saving pays the difference back (the difference / the saving per operation, "
           "rounded up; medians over rounds); never when that operation saves nothing.", ""]
    flavoured = lambda groups: [v for g in groups for v in g if v.flavour in FLAVOURS]  # noqa: E731
    steps = OrderedDict()  # (flavour, step, label's size) -> Verdict
    for v in flavoured(block):
        step, size = v.label.split(", ", 1)
        steps[(v.flavour, step, size)] = v
    requests = OrderedDict((v.flavour, []) for v in flavoured(request))
    for v in flavoured(request):
        saving, note = credited_saving(v)
        requests[v.flavour].append(("requests of %s" % v.label[:-len(" request")], saving, note))
    lines = []
    for v in flavoured(register):
        size = v.label.split(", ", 1)[1]
        againsts = []
        cycle = [steps.get((v.flavour, s, size)) for s in ("alloc", "free")]
        if None not in cycle:
            againsts.append(("blocks of %s (alloc + free)" % size, sum(c.pair.saved for c in cycle),
                             ", alloc %s, free %s" % (cycle[0].word, cycle[1].word)))
        againsts += [r for r in requests.get(v.flavour, []) if r[0] == "requests of " + size]
        lines.append(one_off_line(v, againsts))
    lines += [one_off_line(v, requests.get(v.flavour, [])) for v in flavoured(attach)]
    return out + (lines or ["No one-off cost measured paired."]) + [""]


def extra_runs(folder):
    """[(point, file name, context)] of the axes' runs and the space run ('space')."""
    out = [(point, os.path.basename(path), benchmark_json(path, read(path))[1])
           for _, point, path in axis_files(folder.path)]
    space = os.path.join(folder.path, SPACE_FILE)
    if os.path.isfile(space):
        out.append(("space", SPACE_FILE, benchmark_json(space, read(space))[1]))
    return out


def flag_lines(extra):
    """The axes' flags (common, then per point) and the space run's, as sub-items."""
    quote = lambda text: "`%s`" % text.replace("`", "'")  # noqa: E731
    axes = [(point, flag_dict(ctx.get("flags", ""))) for point, _, ctx in extra if point != "space"]
    out = []
    if axes:
        common = OrderedDict((k, v) for k, v in axes[0][1].items() if all(f.get(k) == v for _, f in axes))
        out.append("  - the axes (transfer_axis_*.json, shm_transfer_bench), common to all: %s"
                   % quote(" ".join("%s=%s" % kv for kv in common.items())))
        for point, f in axes:
            out.append("    - %s: %s" % (point, quote(" ".join("%s=%s" % kv for kv in f.items() if kv[0] not in common)
                                                     or "-")))
    out += ["  - space (%s): %s" % (name, quote(str(ctx.get("flags", "")))) for point, name, ctx in extra
            if point == "space"]
    return out


def extra_files(folder):
    """', the axes' transfer_axis_*.json, the space run's allocation_space.json' as held, or ''."""
    said = (["the axes' transfer_axis_*.json"] if axis_files(folder.path) else []) + \
        (["the space run's " + SPACE_FILE] if os.path.isfile(os.path.join(folder.path, SPACE_FILE)) else [])
    return "".join(", " + x for x in said)


def then_runs(extra):
    """'; then the axes, a paired run per point, and the space run' (what extra holds), or ''."""
    said = (["the axes, a paired run per point"] if any(p != "space" for p, _, _ in extra) else []) + \
        (["the space run"] if any(p == "space" for p, _, _ in extra) else [])
    return "; then " + " and ".join(said) if said else ""


def paired_run_section(folder):
    extra = extra_runs(folder)
    ctxs = [(bench, "paired", run.ctx) for bench, run in folder.runs.items()] + \
        [(name[:-len(".json")].rpartition("_")[0], name[:-len(".json")].rpartition("_")[2], ctx)
         for _, name, ctx in extra]
    out = ["## The run", ""]
    out += machine_lines(ctxs)
    pinned = one_or_each(ctxs, "pinned_cpu")
    out.append("- Pinned: %s" % ("no (--cpu=-1): the systems of a run shared whatever CPU the kernel gave"
                                 if pinned == "-1" else "the measuring thread on CPU %s" % pinned))
    dates = sorted(str(c["date"]) for _, _, c in ctxs if c.get("date"))
    out.append("- Measured: %s to %s, each binary once, its systems in turn round by round (order balanced "
               "over the rounds)%s" % (dates[0] if dates else "?", dates[-1] if dates else "?",
                                       then_runs(extra)))
    # the paired runs', the axes' and the space run's (with --per-system, run.json has every per-system run too)
    loads = [r for r in folder.loads if r[0].endswith("_paired") or r[0].startswith("transfer_axis_")
             or r[0] == "allocation_space"] or folder.loads
    if loads:
        out.append("- Load average (1, 5, 15 min) before and after each run: %s" % "; ".join(
            "%s %s -> %s" % (name, " ".join("%g" % x for x in before), " ".join("%g" % x for x in after))
            for name, before, after in loads))
    else:
        loads = ["%s %g" % (b, c["load_avg"][0]) for b, _, c in ctxs
                 if isinstance(c.get("load_avg"), list) and c["load_avg"] and number(c["load_avg"][0])]
        out.append("- Load average (1 min) at the start of each run: %s (no run.json: not recorded after)"
                   % ("; ".join(loads) or "not recorded"))
    rounds = ["%s %s" % (b, "/".join(str(n) for n in sorted(set(p.rounds for by in r.pairs.values()
                                                                  for p in by.values()))))
              for b, r in folder.runs.items()]
    out.append("- Rounds per question: %s" % "; ".join(rounds))
    out.append("- Flags (each binary):")
    for bench, run in folder.runs.items():
        out.append("  - %s: `%s`" % (bench, str(run.ctx.get("flags", "")).replace("`", "'")))
    return out + flag_lines(extra) + [""]


def paired_intro(folder):
    return ["# shmbench verdict: Mooncake against Flow-IPC (%s), paired runs"
            % ", ".join(TITLE[f] for f in folder.flavours), "",
            "Generated by scripts/report.sh from the paired runs (BENCH_paired.json%s) of `%s`: every figure "
            "below comes from them. Each binary ran once with --systems: Mooncake, each flavour and "
            "Mooncake again as its A/A control (%s, identical code) in one process, over the same buffers "
            "and requests, slice by slice in turn, the order balanced round by round (a Williams square). ratio = the median over "
            "rounds of Mooncake / flavour (above 1: the flavour is faster); [95%%]: its distribution-free "
            "interval (the sign test's); saved = the median over rounds of Mooncake - flavour, with its "
            "interval (negative: the flavour costs more). Mooncake's and the flavour's times are their "
            "rows' p50s. The control's interval is the run's noise. Verdicts: **faster** or **slower**: the "
            "interval excludes 1 and is not inside the control's, the change is %s or more, and the row is "
            "significant at %.2f after Holm's correction over its section (p: the sign test's, then Holm's "
            "in brackets); **no practical difference**: a change under %s; **within the noise**: the "
            "interval holds 1 or lies inside the control's, or the row is not significant after the "
            "correction; **too noisy**: the control itself is off by more than %s; **not assessed**: "
            "fewer than %d rounds; **unexplained by the design**: see per request."
            % (extra_files(folder), os.path.basename(os.path.abspath(folder.path)), folder.control, fmt_pct(PRACTICAL_CHANGE),
               ALPHA, fmt_pct(PRACTICAL_CHANGE), fmt_pct(PRACTICAL_CHANGE), MIN_ROUNDS), ""]


def paired_glance(folder, sections, blocks):
    """Each flavour's verdicts per section; per block alloc + free together, one per size."""
    out = glance_head(folder, "Each flavour's verdicts per question, counted over the tables below; per block, "
                      "one verdict per size for alloc + free together at the object layer (alloc_reuse and the "
                      "bare allocator's rows are in its table).")
    for i, (lines, groups) in enumerate(sections):
        whole = i == 0 and blocks  # a folder without both alloc and free counts its rows
        cells = []
        for f in folder.flavours:
            words = [b.word for b in blocks if b.flavour == f and not b.bare] if whole else \
                [v.word for g in groups for v in g if v.flavour == f]
            cells.append(counted(words) or "not run")
        title = lines[0][3:].split(":")[0]
        out.append(md_row([title + " (alloc + free)" if whole else title] + cells))
    return out + [""]


def paired_report(path):
    folder = PairedFolder(path)
    if not folder.flavours:  # the model against upstream's own code alone: no Flow-IPC verdict to give
        title = "Mooncake's model against its upstream code" if any(
            r.baseline == "mooncake" for r in folder.runs.values()) else "The models against upstream code"
        return write_report(path, ["# shmbench: %s, paired runs" % title, ""] +
                            model_against_upstream(folder) + paired_run_section(folder))
    sections = [paired_block(folder), paired_registration(folder), paired_attach(folder), paired_request(folder),
                paired_workload(folder)]
    blocks = blocks_of(sections[0][1])
    if blocks:  # the per-block section says what a block costs, alloc + free
        sections[0] = (sections[0][0][:-1] + block_lines(blocks) + [""], sections[0][1])
    sections[0] = (sections[0][0] + space_section(folder), sections[0][1])  # a block's space beside its time
    intro = paired_intro(folder)
    zero = paired_zero_copy(folder)
    glance = sections + ([zero] if zero[1] else [])
    text = intro[:2] + verdict_sentences(folder, sections, blocks, zero[1]) + ["## How to read it", ""] + \
        intro[2:] + paired_glance(folder, glance, blocks) + paired_run_section(folder)
    for lines, _ in sections:
        text += lines
    text += axes_section(folder) + zero[0]
    text += paired_break_evens(*(sections[i][1] for i in (1, 2, 0, 3)))
    return write_report(path, text + model_against_upstream(folder) + plots_section(folder, skip=("axes.png",)))


def model_against_upstream(folder):
    """'Model against upstream': per file that ran upstream code, model / upstream per row."""
    out = []
    for bench, run in folder.runs.items():
        lines = model_upstream_lines(run)
        if lines:
            out += ["## Model against upstream: %s_paired.json" % bench, ""] + lines
    return out
