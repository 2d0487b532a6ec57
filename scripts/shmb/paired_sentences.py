"""report.md's verdict in sentences, per flavour, from the sections' verdicts."""
from collections import OrderedDict

from .fmt import change_text, fmt_pct, fmt_time
from .paired_folder import Summed, pair_change
from .runs import unique
from .stats import PRACTICAL_CHANGE
from .verdict_base import ALLOCATOR, BARE_STEPS, BASE, DEPLOYMENT, FLAVOURS, OBJECT_LAYER, TITLE
from .zero_copy import ZERO_COPY_CONDITION, zero_copy_break_even


class Block:
    """A flavour's alloc + free at one size: summed medians and ends (both 95%, so the sum 90%+)."""

    def __init__(self, size, alloc, free, bare=False):
        self.size, self.flavour, self.steps, self.bare = size, alloc.flavour, (alloc, free), bare
        self.base = alloc.base + free.base if alloc.base and free.base else None
        self.saved = alloc.pair.saved + free.pair.saved
        ends = [e for v in self.steps for e in (v.pair.saved_lo, v.pair.saved_hi)]
        self.lo, self.hi = (None, None) if None in ends else (ends[0] + ends[2], ends[1] + ends[3])
        self.word = self.judge()

    def judge(self):
        """Unjudgeable steps, unjudgeable; within the noise both, or a sum holding 0, within the noise;
        else by the summed share."""
        words = [v.word for v in self.steps]
        for w in ("too noisy", "not assessed"):
            if w in words:
                return w
        if all(w == "within the noise" for w in words) or self.lo is None or self.lo <= 0 <= self.hi:
            return "within the noise"
        if not self.base or abs(self.saved / self.base) < PRACTICAL_CHANGE:
            return "no practical difference"
        return "faster" if self.saved > 0 else "slower"

    def change(self):
        return change_text(self.saved, self.lo, self.hi)

    def steps_text(self):
        """'alloc faster, free slower' (the bare layer: 'alloc_bare ..., free_bare ...')"""
        return ", ".join("%s %s" % (v.label.split(", ", 1)[0], v.word) for v in self.steps)

    def line(self):
        """'SHM-classic **slower**: costs 19.1 ns more [14.6 ns, 22.7 ns] (alloc faster, free slower)'"""
        return "%s **%s**: %s (%s)" % (TITLE[self.flavour], self.word, self.change(), self.steps_text())


def blocks_of(groups):
    """[Block] per flavour and size: the object layer, then the bare allocator (bare=True)."""
    out = []
    for steps, bare in ((("alloc", "free"), False), (BARE_STEPS, True)):
        by = OrderedDict()
        for g in groups:
            for v in g:
                step, size = v.label.split(", ", 1)
                if v.flavour in FLAVOURS and step in steps:
                    by.setdefault((size, v.flavour), {})[step] = v
        out += [Block(size, s[steps[0]], s[steps[1]], bare) for (size, _), s in by.items() if len(s) == 2]
    return out


def block_lines(blocks):
    """Per size, each flavour's alloc + free at the object layer, then its bare allocator's."""
    out = []
    for size in unique(b.size for b in blocks):
        for bare, what in ((False, "block (alloc + free, object layer)"),
                           (True, "bare allocator (alloc_bare + free_bare)")):
            at = [b for b in blocks if b.size == size and b.bare == bare]
            if not at:
                continue
            base = "Mooncake %s per block" % fmt_time(at[0].base) if at[0].base else "Mooncake's rows not in the run"
            out.append("- %s, %s (%s): %s." % (what, size, base, "; ".join(b.line() for b in at)))
    return out


def said(word):
    """A verdict as a sentence says it: what cannot be judged is undecided."""
    return {"too noisy": "undecided (too noisy: the A/A control is off by %s or more)" % fmt_pct(PRACTICAL_CHANGE),
            "not assessed": "undecided (too few rounds)",
            "unexplained by the design": "unexplained by the design (the whole request saved another amount "
                                         "than the steps its design changes, beyond the noise: not credited)"}.get(word, word)


def span(texts):
    """'x' of equal texts, else 'first to last'."""
    return texts[0] if len(set(texts)) == 1 else "%s to %s" % (texts[0], texts[-1])


def ranged(items):
    """Items (change, where, share, Mooncake's time, verdict) said as ranges, consecutive ones sharing
    a verdict together, so that a sentence stays short at any number of sizes."""
    runs = []
    for it in items:
        if runs and runs[-1][-1][4] == it[4]:
            runs[-1].append(it)
        else:
            runs.append([it])
    out = []
    for run in runs:
        cols = list(zip(*run))
        if len(set(cols[0])) > 1:  # each its own figure: said one by one
            out.append("%s: %s" % (", ".join(ranged_one([it]) for it in run), said(run[0][4])))
            continue
        out.append("%s: %s" % (ranged_one(run), said(run[0][4])))
    return "; ".join(out)


def ranged_one(run):
    """'saves 184 ns [...] at 64 KB to 16 MB (3.0% to 0.0% of Mooncake's ...)' of one change."""
    cols = list(zip(*run))
    wheres = [w for _, w in cols[1]]
    where = "%s %s" % (cols[1][0][0], wheres[0] if len(run) == 1 else
                       ("%s and %s" if len(run) == 2 else "%s to %s") % (wheres[0], wheres[-1]))
    share = " (%s of Mooncake's %s)" % (span(cols[2]), span(cols[3])) if None not in cols[2] else ""
    return "%s %s%s" % (cols[0][0], where, share)


def request_items(verdicts, where):
    """ranged's items of request verdicts: the credited saving and its share."""
    return [ranged_item(pair_change(p), where(v), p.saved, v.base, v.word)
            for v in verdicts for p in [v.credit[0] if v.credit else v.pair]]


def ranged_item(change, where, saved, base, word):
    """An item of ranged: the change, where, the saving's share of Mooncake's time and that time."""
    return change, where, fmt_pct(abs(saved) / base) if base else None, fmt_time(base) if base else None, word


def registration_text(reg):
    """Per N, the range over sizes of what registering N blocks saves or costs, Ns sharing a verdict
    together; an N whose sizes disagree said size by size."""
    by, sizes = OrderedDict(), []
    for v in reg:
        count, size = v.label[len("register "):].split(", ", 1)
        by.setdefault(int(count.split()[0]), []).append((size, v))
        sizes += [size] if size not in sizes else []
    of = "" if len(sizes) > 1 else " of %s" % sizes[0]
    runs, ranges = [], False  # runs: [(word, [text, ...])]
    for n, at in sorted(by.items()):
        vs = [v for _, v in at]
        saved = sorted((v.pair.saved for v in vs), key=abs)
        texts = [pair_change(v.pair) for v in vs]
        if len(set(v.word for v in vs)) > 1 or (saved[0] < 0) != (saved[-1] < 0):
            runs += [(v.word, ["%s for %d blocks of %s" % (t, n, size)]) for (size, v), t in zip(at, texts)]
            continue
        if len(set(texts)) == 1:
            change = texts[0]
        elif saved[0] >= 0:
            change, ranges = "saves %s to %s" % (fmt_time(saved[0]), fmt_time(saved[-1])), True
        else:
            change, ranges = "costs %s to %s more" % (fmt_time(-saved[0]), fmt_time(-saved[-1])), True
        item = "%s for %d%s" % (change, n, " blocks" + of if not runs or runs[-1][0] != vs[0].word else "")
        if runs and runs[-1][0] == vs[0].word:
            runs[-1][1].append(item)
        else:
            runs.append((vs[0].word, [item]))
    said_runs = "; ".join("%s: %s" % (" and ".join(items) if len(items) < 3 else
                                      ", ".join(items[:-1]) + " and " + items[-1], said(w)) for w, items in runs)
    if len(sizes) > 1:
        said_runs += " (blocks of %s%s)" % (span([sizes[0], sizes[-1]]), "; where a range is given, each size's "
                                            "interval is in the table" if ranges else " alike")
    return said_runs


def credited_words(verdicts, alone=""):
    """Who saves: 'it', 'its translation', or the steps its design changes (Summed)."""
    steps = [v.credit[0] for v in verdicts if v.credit]
    if not steps:
        return "it"
    if any(isinstance(st, Summed) for st in steps):
        return "what its design changes (its translation, and its request path walking its pools, not " \
               "Mooncake's buffers)"
    return ("its translation " + alone).strip()


def flavour_sentences(f, sections, blocks):
    """A flavour's sentences: per request, on the workload, per block, once."""
    block, register, attach, request, workload = (s[1] for s in sections)
    mine = lambda groups: [v for g in groups for v in g if v.flavour == f]  # noqa: E731
    out = []
    req = mine(request)
    if req:
        out.append("Per request, %s %s." % (
            credited_words(req, "(the one step the designs do not share)"),
            ranged(request_items(req, lambda v: ("at", v.label[:-len(" request")])))))
    work = mine(workload)
    if work:
        out.append("On the KV-cache workload, %s %s." % (credited_words(work),
                                                         ranged(request_items(work, lambda v: ("per", v.label)))))
    block_items = lambda bl: [  # noqa: E731
        ranged_item("%s (%s)" % (b.change(), b.steps_text()), ("at", b.size), b.saved, b.base, b.word) for b in bl]
    obj = [b for b in blocks if b.flavour == f and not b.bare]
    bare = [b for b in blocks if b.flavour == f and b.bare]
    if obj:
        out.append("Per block, an object and its handle (%s against Mooncake's %s; alloc + free, the sum of the two "
                   "medians), it %s." % (OBJECT_LAYER[f].split(" (")[0], OBJECT_LAYER[BASE].split(" (")[0],
                                         ranged(block_items(obj))))
    if bare:
        out.append("Its bare allocator beside it (%s against Mooncake's %s; alloc_bare + free_bare) %s." % (
            ALLOCATOR[f].split(" (")[0], ALLOCATOR[BASE].split(" (")[0], ranged(block_items(bare))))
    once = []
    reg = mine(register)
    if reg:
        once.append("making N blocks usable (%s against Mooncake's N buffers) %s" % (DEPLOYMENT[f],
                                                                                     registration_text(reg)))
    once += ["the receiver's first attach %s against Mooncake's %s: %s%s" % (
        pair_change(v.pair), v.label.split(", ", 1)[1].replace("segments", "buffers"), said(v.word),
        " (its pools' lend round trips included)" if v.flavour == "flowipc_jemalloc" else "")
        for v in mine(attach)]
    if once:
        out.append("Once, %s." % "; ".join(once))
    return out or ["Nothing this report answers was measured for it in full (the tables below hold what was)."]


def verdict_sentences(folder, sections, blocks, zero_copy=()):
    """The answer first: per flavour, per request, workload, block and once, then where its hand-off
    beats Mooncake's request."""
    out = ["## Verdict", ""]
    for f in folder.flavours:
        zero = zero_copy_break_even(f, zero_copy)
        tail = [] if zero is None else ["Instead of copying, its hand-off %s; the condition: %s."
                                        % (zero, ZERO_COPY_CONDITION)]
        out += ["%s against Mooncake: %s" % (TITLE[f], " ".join(flavour_sentences(f, sections, blocks) + tail)),
                ""]
    rounds = sorted(set(p.rounds for r in folder.runs.values() for by in r.pairs.values() for p in by.values()))
    return out + ["Measured paired on this machine (%s rounds per question; [a, b]: 95%% intervals; a change under "
                  "%s is no practical difference); the sections below hold every figure." % (
                      span([str(rounds[0]), str(rounds[-1])]), fmt_pct(PRACTICAL_CHANGE)), ""]
