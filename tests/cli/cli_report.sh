#!/usr/bin/env bash
# report.sh: every figure of report.md checked against its JSON by an independent reading; a planted
# 2x change significant, identical inputs no difference; bad folders exit 2; fixtures from
# tests/fixtures/runs/verdict, then one short real run_all.sh --system.
#   cli_report.sh BIN_DIR SOURCE_DIR
bindir=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
source "$src/tests/cli/cli_lib.sh"
py=/usr/bin/python3
prefix=shmb_report_$$_
fixture=$src/tests/fixtures/runs/verdict
if ! "$py" -c 'import scipy' 2>/dev/null; then
  skip_case "no scipy for $py (python3-scipy)"
  finish
fi

# plant DIR REPS CLASSIC_SPEC [workload]: the fixture's mooncake files in REPS repetitions (spread 1%),
# SHM-jemalloc identical, SHM-classic scaled per step ("request=0.5 alloc=2"); workload rows too.
plant() {
  mkdir -p "$1"
  "$py" - "$fixture" "$@" <<'EOF'
import copy, json, os, sys
fixture, out, reps, spec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
workload = len(sys.argv) > 5
scale = {k: float(v) for k, v in (w.split("=") for w in spec.split())}
TIMES = ("p50", "p99", "p999", "real_time", "cpu_time", "min", "max")
def workload_rows():
    rows = []
    for model, base in (("llama-3-8b", 2000.0), ("deepseek-v3", 9000.0)):
        for part, share in (("request_path", 0.5), ("translate", 0.1), ("copy", 0.35), ("request", 1.0)):
            t = base * share
            name = "shm_transfer/workload/%s/model:%s" % (part, model)
            rows.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
                         "repetition_index": 0, "threads": 1, "iterations": 300, "real_time": t,
                         "cpu_time": t, "time_unit": "ns", "p50": t, "p99": 3 * t, "p999": 5 * t})
    return rows
for bench in ("allocation", "lookup", "transfer"):
    d = json.load(open(os.path.join(fixture, bench + "_mooncake.json")))
    one = [b for b in d["benchmarks"] if b["run_type"] == "iteration"]
    if workload and bench == "transfer":
        one += workload_rows()
    for system in ("mooncake", "flowipc_classic", "flowipc_jemalloc"):
        rows = []
        for b in one:
            step = "workload" if "/workload/" in b["name"] else b["name"].split("/")[1]
            f = scale.get(step, 1.0) if system == "flowipc_classic" else 1.0
            for k in range(reps):
                r = copy.deepcopy(b)
                r["repetitions"], r["repetition_index"] = reps, k
                for t in TIMES:
                    if t in r:
                        r[t] *= f * (1 + 0.01 * (k - reps // 2))
                rows.append(r)
        ctx = dict(d["context"], system=system, flags=d["context"]["flags"].replace("system=mooncake", "system=" + system))
        json.dump({"context": ctx, "benchmarks": rows}, open(os.path.join(out, "%s_%s.json" % (bench, system)), "w"))
EOF
}

# check DIR: report.md's sections, and each of its figures against DIR's JSON
check() {
  "$py" - "$1" <<'EOF'
import json, math, os, re, statistics, sys
from scipy.stats import mannwhitneyu
folder = sys.argv[1]
text = open(os.path.join(folder, "report.md")).read()
SYS = {"Mooncake": "mooncake", "SHM-classic": "flowipc_classic", "SHM-jemalloc": "flowipc_jemalloc"}
bad = []
def expect(cond, what):
    if not cond:
        bad.append(what)

heads = [l for l in text.splitlines() if l.startswith("#")]
want = ["# shmbench verdict", "## At a glance", "## The run", "## Per block", "## Registration", "## First attach",
        "## Per request", "## Per KV-cache workload", "## Break-even", "## Plots"]
expect(len(heads) == len(want) and all(h.startswith(w) for h, w in zip(heads, want)), "sections: %s" % heads)

cache = {}
def rows(bench, system):
    if (bench, system) not in cache:
        out = {}
        path = os.path.join(folder, "%s_%s.json" % (bench, system))
        d = json.load(open(path)) if os.path.exists(path) else {"benchmarks": [], "context": {}}
        for b in d["benchmarks"]:
            if b.get("run_type") == "iteration" and "p50" in b:
                out.setdefault(b["name"], []).append(b)
        cache[(bench, system)] = (out, d["context"])
    return cache[(bench, system)][0]
def kb(n, unit):
    return int(n) * (1024 if unit == "MB" else 1)
def samples(label, system):
    """The per-repetition values a question's label stands for."""
    m = re.match(r"(alloc|free|alloc_reuse|alloc_bare|free_bare), (\d+) (KB|MB)$", label)
    if m:
        return [b["p50"] for b in rows("allocation", system)["shm_alloc/%s/size_kb:%d" % (m[1], kb(m[2], m[3]))]]
    m = re.match(r"register (\d+) buffers, (\d+) (KB|MB)$", label)
    if m:
        return [b["p50"] for b in rows("allocation", system)["shm_alloc/register/size_kb:%d/buffers:%s" % (kb(m[2], m[3]), m[1])]]
    m = re.match(r"request, (\d+) (KB|MB)$", label)
    if m:
        return [b["p50"] for b in rows("transfer", system)["shm_transfer/request/size_kb:%d" % kb(m[1], m[2])]]
    m = re.match(r"attach, (\d+) segments$", label)
    if m:
        return [b["iterations"] * b["p50"] for b in rows("lookup", system)["shm_lookup/attach/segments:%s" % m[1]]]
    m = re.match(r"(model:\S+) request (p50|p99|p999)$", label)
    if m:
        name = "shm_transfer/workload/request/%s" % m[1]  # in transfer_S.json or workload_S.json
        return [b[m[2]] for b in rows("transfer", system).get(name, []) + rows("workload", system).get(name, [])]
    raise KeyError(label)
def med(label, system):
    return statistics.median(samples(label, system))
def time_of(s):
    m = re.fullmatch(r"(-?[0-9.]+) (ns|µs|ms|s)", s.strip())
    return float(m[1]) * {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}[m[2]]
def near_time(s, want):  # 3 significant digits
    return abs(time_of(s) - want) <= 0.0051 * abs(want) + 1e-9
def near_pct(s, share):
    p = float(s.strip().rstrip("%"))
    return abs(p - 100 * share) <= (0.051 if abs(100 * share) < 9.9 else 0.51)

# the tables, one family each: the U-test, Holm's correction
tables = re.findall(r"\| question \| Mooncake \| Flow-IPC \|.*\n\|[-|]+\n((?:\|.*\n)+)", text)
expect(tables, "no table")
verdict = {}  # (label, flavour) -> (base, other, significant or None)
for t in tables:
    cells = [[c.strip() for c in l.strip().strip("|").split("|")] for l in t.splitlines()]
    ps = {}
    for label, _, fl, *_ in cells:
        a, b = samples(label, "mooncake"), samples(label, SYS[fl])
        if min(len(a), len(b)) >= 9:
            p = mannwhitneyu(a, b, alternative="two-sided").pvalue
            ps[(label, fl)] = 1.0 if math.isnan(p) else p
    order = sorted(ps, key=ps.get)
    sig = set()
    for k, key in enumerate(order):
        if ps[key] > 0.05 / (len(order) - k):
            break
        sig.add(key)
    for label, base, fl, other, gain, saved, signif, matters in cells:
        a, b = med(label, "mooncake"), med(label, SYS[fl])
        expect(near_time(base, a), "%s: Mooncake %s, JSON %r" % (label, base, a))
        expect(near_time(other, b), "%s %s: %s, JSON %r" % (label, fl, other, b))
        expect(abs(float(gain.rstrip("x")) - a / b) <= 0.0051 * max(1, a / b), "%s %s: gain %s, JSON %r" % (label, fl, gain, a / b))
        m = re.fullmatch(r"(.+) \((.+)\)", saved)
        expect(m and near_time(m[1], a - b) and near_pct(m[2], (a - b) / a), "%s %s: saved %s, JSON %r" % (label, fl, saved, a - b))
        n = min(len(samples(label, "mooncake")), len(samples(label, SYS[fl])))
        if n >= 9:
            p = ps[(label, fl)]
            m = re.fullmatch(r"(yes|no) \(p = (\S+)\)", signif)
            expect(m and m[1] == ("yes" if (label, fl) in sig else "no") and abs(float(m[2]) - p) <= max(0.0006, 0.06 * p),
                   "%s %s: significant '%s', p %r" % (label, fl, signif, p))
        elif n == 1:
            expect(signif == "one repetition: significance not assessed", "%s %s: '%s' with one repetition" % (label, fl, signif))
        else:
            expect(signif == "%d repetitions: significance not assessed (9 needed)" % n, "%s: '%s'" % (label, signif))
        expect(matters == ("yes" if abs(a - b) / a >= 0.05 else "no practical difference"), "%s %s: '%s'" % (label, fl, matters))
        verdict[(label, fl)] = (a, b, ((label, fl) in sig) if n >= 9 else None)

# what this means: one line per question, each flavour's clause; their verdicts counted at a glance
said = 0
counts = {}  # (question, flavour) -> {verdict: count}
for line, question in [(l, sec.split("\n")[0].split(":")[0]) for sec in text.split("\n## ")
                       for l in re.findall(r"^- (.+ \(Mooncake .+)$", sec, re.M)]:
    m = re.match(r"(.+) \(Mooncake (\S+ \S+) (?:per operation|per request|once)\): (.+?)\.( .*)?$", line)
    expect(m, "sentence: %s" % line)
    if not m:
        continue
    label = re.sub(r"^(\d+ [KM]B) request$", r"request, \1", m[1])
    for clause in m[3].split("; "):
        c = re.fullmatch(r"(\S+) \*\*(.+)\*\*: (saves|costs) (\S+ \S+)( more)? \(([-0-9.]+%)(, (not )?significant \(p = \S+\))?\)", clause)
        expect(c, "clause: %s" % clause)
        if not c:
            continue
        a, b, s = verdict[(label, c[1])]
        share = (a - b) / a
        expect(near_time(m[2], a), "%s: Mooncake %s" % (label, m[2]))
        expect(near_time(c[4], abs(a - b)) and near_pct(c[6], abs(share)) and (c[3] == "saves") == (a >= b),
               "%s %s: %s" % (label, c[1], clause))
        way = "faster" if a > b else "slower"
        words = ("no practical difference" if abs(share) < 0.05 else way if s else
                 way + " by the medians" + ("" if s is None else " (not significant)"))
        expect(c[2] == words, "%s %s: '%s', expected '%s'" % (label, c[1], c[2], words))
        tally = counts.setdefault((question, c[1]), {})
        tally[words] = tally.get(words, 0) + 1
        said += 1
expect(said == len(verdict), "%d clauses for %d table rows" % (said, len(verdict)))
glance = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
head, *body = re.findall(r"^\| (?!---)(.+) \|$", glance, re.M)
flavours = head.split(" | ")[1:]
for line in body:
    question, *cells = line.split(" | ")
    for fl, cell in zip(flavours, cells):
        got = dict((w, int(n)) for w, n in (part.rsplit(" ", 1) for part in cell.split("; ")) if n.isdigit())
        expect(got == counts.get((question, fl), {}), "at a glance: %s %s: %s, the lines say %s" % (question, fl, cell, counts.get((question, fl))))
expect(len(body) == 5, "at a glance: %d questions" % len(body))

# break-even: the extra one-off and each saving, from the same medians
section = text.split("## Break-even", 1)[1].split("\n## ", 1)[0]
lines = re.findall(r"^- (.+)$", section, re.M)
expect(len(lines) == len([k for k in verdict if re.match(r"register|attach", k[0])]), "break-even: %d lines" % len(lines))
for line in lines:
    m = re.match(r"(.+), (SHM-\S+): costs (?:(\S+ \S+) (more|less) than Mooncake's|the same as Mooncake's)[:;] (.+)\.$", line)
    expect(m, "break-even: %s" % line)
    if not m:
        continue
    a, b, _ = verdict[(m[1], m[2])]
    if m[4] != "more":
        expect(b <= a and (b == a if m[3] is None else near_time(m[3], a - b)) and m[5] == "nothing to pay back",
               "break-even: %s" % line)
        continue
    expect(near_time(m[3], b - a), "break-even extra: %s" % line)
    for part in m[5].replace("paid back: ", "").split("; "):
        p = re.fullmatch(r"(?:after ([0-9,]+)|never by) (blocks|requests) of (\d+) (KB|MB)(?: \(alloc \+ free\))? \((?:(\S+ \S+) (saved|more)|the same) each(, under the 5.0% threshold)?(, not significant)?\)", part)
        expect(p, "break-even part: %s" % part)
        if not p:
            continue
        size = "%s %s" % (p[3], p[4])
        if p[2] == "requests":
            saving = med("request, " + size, "mooncake") - med("request, " + size, SYS[m[2]])
        else:
            saving = sum(med("%s, %s" % (s, size), "mooncake") - med("%s, %s" % (s, size), SYS[m[2]]) for s in ("alloc", "free"))
        expect(saving == 0 if p[5] is None else near_time(p[5], abs(saving)) and (p[6] == "saved") == (saving > 0),
               "saving: %s" % part)
        if p[2] == "requests":
            _, _, s = verdict[("request, " + size, m[2])]
            ra, rb = med("request, " + size, "mooncake"), med("request, " + size, SYS[m[2]])
            expect(bool(p[7]) == (abs(ra - rb) / ra < 0.05) and bool(p[8]) == (s is False), "saving's notes: %s" % part)
        if p[1]:
            expect(abs(int(p[1].replace(",", "")) - math.ceil((b - a) / saving)) <= 1, "break-even N: %s" % part)

# registrations are deployment totals (N buffers against the pools for N blocks): no
# line converts one into Mooncake registrations
expect("in Mooncake's unit" not in section, "a deployment total converted into Mooncake registrations")

# the run: commit, host, repetitions, flags
ctxs = [c for (bench, s), (_, c) in cache.items() if c]
for c in ctxs:
    for key in ("git_commit", "host_name", "cpu_model", "kernel"):
        expect(str(c[key]) in text, "the run: no %s %s" % (key, c[key]))
for bench in ("allocation", "lookup", "transfer"):
    n = max(len(v) for v in rows(bench, "mooncake").values())
    expect(re.search(r"Repetitions per system: .*\b%s %d\b" % (bench, n), text), "the run: %s not %d repetitions" % (bench, n))
    flags = re.sub(r"\s*\bsystem=\S*", "", cache[(bench, "mooncake")][1]["flags"]).strip()
    expect("  - %s: `%s`" % (bench, flags) in text or "  - %s (" % bench in text, "the run: %s's flags" % bench)
expect("at 0.05 over each table" in text and "at least 9 repetitions" in text and "at least 5.0%" in text, "the constants")
for png in re.findall(r"!\[[^]]*\]\(([^)]+)\)", text):
    expect(os.path.isfile(os.path.join(folder, png)), "plot %s not in the folder" % png)
if bad:
    print("\n".join(bad[:12]))
    sys.exit(1)
EOF
}
# row_cells DIR FLAVOUR: the table rows of a flavour, as "gain|significant|over"
row_cells() {
  sed -n 's/ |$//p' "$1/report.md" | awk -F' [|] ' -v f="$2" '$3 == f {print $5 "|" $7 "|" $8}'
}

# --- a planted 2x change, and none: 9 repetitions, the workload rows added
plant "$work/planted" 9 "request=0.5 workload=0.5 alloc=2 free=2 alloc_reuse=2 alloc_bare=2 free_bare=2 register=3 attach=3" workload
out=$("$src/scripts/report.sh" "$work/planted" 2>"$work/err")
[ $? -eq 0 ] && [ "$out" = "$work/planted/report.md" ] && ok || fail "planted: exit or stdout '$out': $(cat "$work/err")"
check "$work/planted" >"$work/check" && ok || fail "planted: figures do not match the JSON: $(cat "$work/check")"
rows=$(row_cells "$work/planted" SHM-classic | wc -l)
# 5 steps (both layers) x 2 sizes, 3 registers (N) x 2 sizes, 1 attach, 3 requests, 2 workloads x 3 counters
[ "$rows" -eq 26 ] && ok || fail "planted: $rows SHM-classic rows, expected 26"
[ "$(row_cells "$work/planted" SHM-classic | grep -cE '^(2\.00x|0\.50x|0\.33x)\|yes \(p = [0-9.e-]+\)\|yes$')" -eq "$rows" ] && ok \
  || fail "planted 2x: not every row significant and large: $(row_cells "$work/planted" SHM-classic | grep -vE '\|yes \(p.*\|yes$' | head -3)"
[ "$(row_cells "$work/planted" SHM-jemalloc | grep -c '^1\.00x|no (p = 1\.000)|no practical difference$')" -eq "$rows" ] && ok \
  || fail "identical: not every row 'no practical difference': $(row_cells "$work/planted" SHM-jemalloc | head -3)"
grep -q "^- 64 KB request (Mooncake .* per request): SHM-classic \*\*faster\*\*: saves .* (50%, significant (p = [0-9.e-]*)); SHM-jemalloc \*\*no practical difference\*\*: saves 0 ns (0.0%, not significant (p = 1.000))\.$" \
  "$work/planted/report.md" && ok || fail "planted: the 64 KB request's line: $(grep "64 KB request" "$work/planted/report.md")"
grep -q "^- free, 4 KB (Mooncake .*): SHM-classic \*\*slower\*\*: costs .* more (100%, significant" "$work/planted/report.md" \
  && ok || fail "planted: a 2x slower free is not slower"
grep -q "^- model:llama-3-8b request p99 (Mooncake 6.00 µs per request): SHM-classic \*\*faster\*\*: saves 3.00 µs (50%" \
  "$work/planted/report.md" && ok || fail "planted: no workload p99 line"
grep -q "^- model:deepseek-v3, Mooncake: request_path 50%, translate 10%, copy 35% of the request p50\.$" "$work/planted/report.md" \
  && ok || fail "planted: the workload's parts"
grep -q "^- register 10 buffers, 4 KB, SHM-classic: costs .* more than Mooncake's; paid back: never by blocks of 4 KB (alloc + free) (.* more each); after [0-9,]* requests of 4 KB (.* saved each)\.$" \
  "$work/planted/report.md" && ok || fail "planted: register's break-even: $(grep "^- register 10 buffers, 4 KB, SHM-classic" "$work/planted/report.md")"
grep -q "^- attach, 100 segments, SHM-jemalloc: costs the same as Mooncake's: nothing to pay back\.$" "$work/planted/report.md" \
  && ok || fail "planted: an equal one-off"
grep -q "Not measured in this run: 16 MB (its sizes: 4 KB to 1 MB)" "$work/planted/report.md" && ok || fail "planted: 16 MB not said unmeasured"

# --- one repetition, and no workload: said so
plant "$work/one" 1 "request=0.5"
"$src/scripts/report.sh" "$work/one" >/dev/null 2>"$work/err" && ok || fail "one: exit $?: $(cat "$work/err")"
check "$work/one" >"$work/check" && ok || fail "one: figures do not match the JSON: $(cat "$work/check")"
grep -q "^The KV-cache workload was not run: no shm_transfer/workload/" "$work/one/report.md" && ok || fail "one: the missing workload is not said"
grep -q "^- 4 KB request (Mooncake .*): SHM-classic \*\*faster by the medians\*\*: saves .* (50%); .* One repetition: significance not assessed\.$" \
  "$work/one/report.md" && ok || fail "one: $(grep "4 KB request" "$work/one/report.md")"

# --- bad folders: one line naming what is wrong, exit 2, nothing on stdout
expect_bad() {
  local what=$1 rc
  shift
  "$src/scripts/report.sh" "$@" >"$work/bad.out" 2>"$work/bad.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/bad.err")" -eq 1 ] && [ ! -s "$work/bad.out" ] && ! grep -q Traceback "$work/bad.err" \
    && ok || fail "$what: exit $rc: $(head -3 "$work/bad.err")"
}
expect_bad "no argument"
expect_bad "a missing folder" "$work/nonexistent"
mkdir "$work/empty"
expect_bad "a folder of no run" "$work/empty"
mkdir "$work/cut"
cp "$work/one/"*.json "$work/cut/"
head -c 3000 "$work/one/transfer_mooncake.json" >"$work/cut/transfer_mooncake.json"
expect_bad "a truncated JSON" "$work/cut"
grep -q "transfer_mooncake.json" "$work/bad.err" && ok || fail "a truncated JSON: not named: $(cat "$work/bad.err")"
rm "$work/cut/"*flowipc*
cp "$work/one/transfer_mooncake.json" "$work/cut/"
expect_bad "mooncake alone" "$work/cut"

# --- merge (run_all.sh's, of interleaved repetitions): a row one repetition lacks keeps the
# others'; runs of another system or of several repetitions are refused
"$py" - "$fixture/allocation_mooncake.json" "$work/rep2.json" "$work/other.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["benchmarks"] = [b for b in d["benchmarks"] if b["name"] != "shm_alloc/free/size_kb:4"]
json.dump(d, open(sys.argv[2], "w"))
d["context"]["system"] = "flowipc_classic"
json.dump(d, open(sys.argv[3], "w"))
EOF
"$py" "$src/scripts/verdict.py" merge "$work/merged.json" "$fixture/allocation_mooncake.json" "$work/rep2.json" \
  && "$py" - "$work/merged.json" <<'EOF' && ok || fail "merge: a row one repetition lacks"
import json, sys
d = json.load(open(sys.argv[1]))
reps = {}
for b in d["benchmarks"]:
    if b["run_type"] == "iteration":
        reps.setdefault(b["name"], []).append(b["repetition_index"])
assert reps.pop("shm_alloc/free/size_kb:4") == [0] and all(r == [0, 1] for r in reps.values())
assert "repetitions=2 " in d["context"]["flags"] and len(d["context"]["repetition_dates"]) == 2
assert sum(b["run_type"] == "aggregate" for b in d["benchmarks"]) == 4 * len(reps)
EOF
for bad in "$work/other.json" "$work/merged.json"; do
  "$py" "$src/scripts/verdict.py" merge "$work/m2.json" "$fixture/allocation_mooncake.json" "$bad" 2>"$work/err"
  [ $? -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -qF "$bad" "$work/err" && [ ! -e "$work/m2.json" ] && ok \
    || fail "merge with $(basename "$bad"): $(cat "$work/err")"
done

# --- one short real run_all.sh --system: the folder on stdout, the paired report (the
# binaries' --systems runs) with a control line per question
d=$(cd "$work" && "$src/scripts/run_all.sh" --bin-dir="$bindir" --results-dir=res --label=real --system \
      --flags="--shm_prefix=/$prefix" --allocation-flags="--num_iterations=5 --max_size_kb=4 --min_ops=1000" \
      --lookup-flags="--num_lookups=100 --min_time_ms=1" \
      --transfer-flags="--max_transfer_size_mb=0.00390625 --num_transfers=5 --time_per_size_ms=1 --num_segments=2" 2>"$work/err")
[ $? -eq 0 ] && [ "$d" = res/real ] && ok || fail "run_all.sh --system: stdout '$d': $(tail -3 "$work/err")"
for h in "## At a glance" "## The run" "## Per block" "## Registration" "## First attach" "## Per request" \
         "## Per KV-cache workload"; do
  grep -q "^$h" "$work/res/real/report.md" 2>/dev/null && ok || fail "real run: no '$h' in report.md"
done
grep -q "^| attach, 100 segments | .* | SHM-classic |" "$work/res/real/report.md" 2>/dev/null && ok || fail "real run: no attach of SHM-classic"
controls=$(grep -c "^- .*: mooncake_control: A/A control, ratio " "$work/res/real/report.md" 2>/dev/null)
[ "${controls:-0}" -ge 5 ] && ok || fail "real run: ${controls:-no} A/A control lines, fewer than questions"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left"
finish
