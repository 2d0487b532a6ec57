#!/usr/bin/env bash
# compare.sh, results.py and plot.sh on saved runs (tests/fixtures/runs), changed copies of them, and
# one small live run of the built binaries.
#   scripts_results.sh BIN_DIR SOURCE_DIR
bindir=$1
src=$2
source "$src/tests/cli/cli_lib.sh"
py=/usr/bin/python3
prefix=shmb_scripts_$$_
cp -r "$src/tests/fixtures/runs/." "$work/"  # plot.sh writes into the folders
# scale SRC DST FACTOR: a copy of a results folder with every row's p50 times FACTOR
scale() {
  mkdir -p "$2"
  "$py" - "$@" <<'EOF'
import glob, json, os, sys
src, dst, factor = sys.argv[1], sys.argv[2], float(sys.argv[3])
for f in glob.glob(src + "/*.json"):
    d = json.load(open(f))
    for b in d["benchmarks"]:
        if "p50" in b:
            b["p50"] *= factor
    json.dump(d, open(os.path.join(dst, os.path.basename(f)), "w"))
EOF
}
# headlines FILE: the rows of compare.sh's headline table (name unit A B B/A change p
# significant verdict; a system's rows start with "SYSTEM: ", the sweep's with "[SYSTEM ]sweep: ")
headlines() { sed -n '/^== headlines/,/^$/p' "$1" | sed -n '3,$p' | grep -E '^([a-z_ ]+: )?shm_' | sed -E 's/^[a-z_ ]+: //'; }
# gainrows FILE: the rows of a gain table (row A B gain change p significant verdict)
gainrows() { grep -E '^shm_' "$1"; }

# The live run: each binary once, as small as it goes, through compare.sh and plot.sh.
mkdir -p "$work/live"
common=(--shm_prefix=/$prefix)
"$bindir/shm_allocation_bench" "${common[@]}" --num_iterations=20 --max_size_kb=8 --allocator=posix,arena \
  --json_out="$work/live/allocation.json" >/dev/null 2>&1 &&
"$bindir/shm_address_lookup_bench" "${common[@]}" --num_lookups=500 --min_time_ms=1 --sweep_segments=1,10 \
  --json_out="$work/live/lookup_sweep.json" >/dev/null 2>&1 &&
"$bindir/shm_transfer_bench" "${common[@]}" --max_transfer_size_mb=0.0078125 --num_transfers=10 --time_per_size_ms=2 \
  --methods=all --cold --json_out="$work/live/transfer.json" >/dev/null 2>&1 && ok || fail "the live runs"
"$src/scripts/compare.sh" --verbose "$work/live/transfer.json" "$work/live/transfer.json" >"$work/live.out" 2>&1 \
  && grep -q "^Comparing .*transfer.json to" "$work/live.out" && ok || fail "compare.sh live: $(tail -3 "$work/live.out")"
sed -n '/^== gain per row/,/^$/p' "$work/live.out" | awk 'NR > 2 && $1 ~ /^shm_/ {n++; if ($4 != "1.00") bad = 1} END {exit bad || !n}' \
  && ok || fail "compare.sh live: a gain other than 1.00 of a file against itself"

# A table's rows are named as its JSON file names them, whatever the binary and its flags:
# each binary once more, plain and --system, its table and its JSON side by side.
names_agree() {  # TABLE JSON: the measured rows of the table's gain = the JSON's names
  "$src/scripts/compare.sh" "$1" "$1" >"$work/tn" 2>&1 || return 1
  gainrows "$work/tn" | awk '$2 != "-" {print $1}' | sort >"$work/tn.table"
  "$py" -c 'import json, sys
print("\n".join(sorted(set(b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"] if b["run_type"] == "iteration"))))' "$2" >"$work/tn.json"
  [ -s "$work/tn.json" ] && diff "$work/tn.table" "$work/tn.json" >"$work/tn.diff"
}
for system in "" --system=mooncake --system=flowipc_jemalloc; do
  for run in "shm_allocation_bench --num_iterations=20 --max_size_kb=8" \
             "shm_address_lookup_bench --num_lookups=500 --min_time_ms=1" \
             "shm_transfer_bench --max_transfer_size_mb=0.0078125 --num_transfers=10 --time_per_size_ms=2 --threads=2"; do
    # shellcheck disable=SC2086 # a binary and its flags, split into words
    set -- $run
    b=$1
    shift
    # shellcheck disable=SC2086 # no --system: no word
    "$bindir/$b" "${common[@]}" $system "$@" --json_out="$work/tn_$b.json" >"$work/tn_$b.txt" 2>/dev/null \
      && names_agree "$work/tn_$b.txt" "$work/tn_$b.json" && ok \
      || fail "$b $system: the table's rows are not named as its JSON's: $(head -4 "$work/tn.diff" 2>/dev/null)"
  done
done

# two binaries' tables: one line naming both, exit 2, nothing on stdout
"$src/scripts/compare.sh" "$work/tn_shm_address_lookup_bench.txt" "$work/tn_shm_transfer_bench.txt" >"$work/bin.out" 2>"$work/bin.err"
rc=$?
[ "$rc" -eq 2 ] && [ ! -s "$work/bin.out" ] && [ "$(wc -l <"$work/bin.err")" -eq 1 ] \
  && grep -q "shm_address_lookup_bench's output and .* shm_transfer_bench's" "$work/bin.err" && ok \
  || fail "two binaries' tables: exit $rc: $(cat "$work/bin.err")"

scale "$work/a" "$work/b" 2
# The same runs twice: every headline compared, nothing significant (results.py's headline
# table, which compare.sh prints after compare.py: its other runs below go through compare.sh).
"$py" "$src/scripts/results.py" summary "$work/a" "$work/a" | sed '1i == headlines' >"$work/same" && ok \
  || fail "summary same: exit $?: $(tail -5 "$work/same")"
rows=$(headlines "$work/same" | wc -l)
[ "$rows" -ge 20 ] && ok || fail "same: only $rows headline rows"
[ "$(headlines "$work/same" | awk '$8 == "no" && / no practical difference$/' | wc -l)" -eq "$rows" ] && ok \
  || fail "same input twice: not every row 'no', 'no practical difference': $(headlines "$work/same" | awk '$8 != "no"' | head -3)"
[ "$(headlines "$work/same" | awk '$5 == "1.000"' | wc -l)" -eq "$rows" ] && ok || fail "same: a ratio is not 1.000"

# Every p50 doubled in every repetition: the ratios are 2, and every row is significant whose
# repetitions span less than 2x (the others overlap their doubled selves: the test may not tell).
"$src/scripts/compare.sh" --verbose "$work/a" "$work/b" >"$work/changed" 2>&1 && ok || fail "compare.sh changed: exit $?"
[ "$(head -1 "$work/changed")" = "== headlines" ] && ok || fail "compare.sh --verbose: the headline is not first"
for want in "== compare.py benchmarks $work/a/allocation.json" "shm_alloc/arena/alloc/size_kb:8" "shm_lookup/tree/segments:100" \
            "shm_transfer/nt/size_kb:8" "== headlines" "shm_alloc/posix/total/size_kb:4 " \
            "shm_lookup/arithmetic/segments:100 " "shm_transfer/memcpy/cold/size_kb:4 "; do
  grep -qF -- "$want" "$work/changed" && ok || fail "compare.sh output lacks '$want'"
done
[ "$(headlines "$work/changed" | wc -l)" -eq "$rows" ] && ok || fail "changed: headline rows differ from same"
headlines "$work/changed" | awk '$2 == "ns" && $5 != "2.000" || $2 == "GB/s" && $5 != "0.500" {bad = 1} END {exit bad}' \
  && ok || fail "changed: ratios are not 2 (ns) and 0.5 (GB/s): $(headlines "$work/changed" | head -3)"
"$py" - "$work/a" >"$work/wide" <<'EOF'
import glob, json, sys
spread = {}
for f in glob.glob(sys.argv[1] + "/*.json"):
    for b in json.load(open(f))["benchmarks"]:
        if b.get("run_type") == "iteration":
            lo, hi = spread.get(b["name"], (b["p50"], b["p50"]))
            spread[b["name"]] = (min(lo, b["p50"]), max(hi, b["p50"]))
print("\n".join(n for n, (lo, hi) in spread.items() if hi >= 2 * lo))
EOF
# (the list of wide rows is read in BEGIN: an empty list must not swallow the rows)
headlines "$work/changed" | awk -v w="$work/wide" 'BEGIN {while ((getline l < w) > 0) wide[l] = 1}
  !($1 in wide) && ($8 != "yes" || !/ B slower$/)' >"$work/notsig"
[ ! -s "$work/notsig" ] && ok || fail "a 2x change is not significant: $(head -3 "$work/notsig")"
yes=$(headlines "$work/changed" | awk '$8 == "yes"' | wc -l)
[ $((yes * 4)) -ge $((rows * 3)) ] && ok || fail "a 2x change: only $yes of $rows rows significant"

# One repetition: says it cannot tell, and how many are needed.
mkdir -p "$work/few"
cp "$work/one/lookup.json" "$work/few/"
"$src/scripts/compare.sh" "$work/few" "$work/a" >"$work/few.out" 2>&1 && ok || fail "compare.sh few: exit $?"
[ "$(headlines "$work/few.out" | grep -c " too few reps  ")" -eq "$(headlines "$work/few.out" | wc -l)" ] && ok \
  || fail "one repetition: not every row says too few"
grep -q "A has 1 repetitions, B has 9 repetitions.*--repetitions=9" "$work/few.out" && ok \
  || fail "one repetition: the note does not say how many are needed: $(tail -1 "$work/few.out")"
grep -q "^== transfer: skipped, not in both folders" "$work/few.out" && ok || fail "few: a file of one folder only is not said"

# The headline is the p50, and with repetitions the median of the p50s: never the mean.
mkdir -p "$work/m1" "$work/m2"
"$py" - "$work/m1/lookup.json" "$work/m2/lookup.json" <<'EOF'
import json, sys
def row(p50, mean, rep):
    return {"name": "shm_lookup/mooncake/segments:100", "run_name": "shm_lookup/mooncake/segments:100",
            "run_type": "iteration", "repetitions": 3, "repetition_index": rep, "threads": 1,
            "iterations": 10, "real_time": mean, "cpu_time": mean, "time_unit": "ns", "p50": p50}
agg = dict(row(400, 400, 0), name="shm_lookup/mooncake/segments:100_mean", run_type="aggregate",
           aggregate_name="mean")
# A: p50s 100, 100, 1000 (median 100, mean 400), means far off; B: p50 200 everywhere
json.dump({"context": {}, "benchmarks": [row(100, 900, 0), row(100, 900, 1), row(1000, 900, 2), agg]},
          open(sys.argv[1], "w"))
json.dump({"context": {}, "benchmarks": [row(200, 20, r) for r in range(3)]}, open(sys.argv[2], "w"))
EOF
"$py" "$src/scripts/results.py" summary "$work/m1" "$work/m2" | sed '1i == headlines' >"$work/median" && ok || fail "summary median: exit $?"
headlines "$work/median" | grep -qE "^shm_lookup/mooncake/segments:100 +ns +100 +200 +2\.000 " && ok \
  || fail "headline is not the median of the p50s: $(headlines "$work/median")"
"$py" "$src/scripts/results.py" gain "$work/m1/lookup.json" "$work/m2/lookup.json" >"$work/gain" \
  && grep -qE "^shm_lookup/mooncake/segments:100 +100 +200 +0\.50 " "$work/gain" && ok \
  || fail "gain is not of the medians of the p50s: $(cat "$work/gain")"

# gain of two tables with repetitions: one line per row, not one per repetition
"$src/scripts/compare.sh" "$work/a/lookup.txt" "$work/a/lookup.txt" >"$work/gain" 2>&1 && ok || fail "gain tables: exit $?"
n=$(grep -v '^#' "$work/a/lookup.txt" | awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "rep") r = i; next} $r == "0"' | wc -l)
[ "$n" -gt 0 ] && [ "$(gainrows "$work/gain" | wc -l)" -eq "$n" ] && ok || fail "gain tables: $(gainrows "$work/gain" | wc -l) rows for $n"
# named as the JSON file names them, the same names in the same order
"$py" -c 'import json, sys
seen = []
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b["run_type"] == "iteration" and b["name"] not in seen:
        seen.append(b["name"])
print("\n".join(seen))' "$work/a/lookup.json" >"$work/names"
gainrows "$work/gain" | awk '{print $1}' | diff - "$work/names" >/dev/null && ok \
  || fail "gain tables: rows not named as the JSON names them: $(gainrows "$work/gain" | head -2)"
# the table layout with a threads column always (and rep): the same names
"$py" - "$work/a/lookup.txt" >"$work/threads.txt" <<'EOF2'
import sys
at = None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("#") or not f:
        sys.stdout.write(line)
        continue
    at = f.index("rep") if at is None else at
    f.insert(at, "threads" if f[at] == "rep" else "1")
    print("  ".join(f))
EOF2
"$src/scripts/compare.sh" "$work/threads.txt" "$work/a/lookup.txt" >"$work/gain2" 2>&1 \
  && gainrows "$work/gain2" | awk '{print $1}' | diff - "$work/names" >/dev/null \
  && gainrows "$work/gain2" | awk '$4 != "1.00" {bad = 1} END {exit bad}' && ok \
  || fail "a table with a threads column: $(head -3 "$work/gain2")"
"$py" "$src/scripts/results.py" gain "$work/a/lookup.json" "$work/b/lookup.json" >"$work/gain" 2>&1 && ok || fail "gain JSON: exit $?"
awk '$1 ~ /^shm_/ && $4 != "0.50" {bad = 1} END {exit bad}' "$work/gain" \
  && ok || fail "gain JSON: not 0.50 everywhere"
# significant wherever the repetitions span less than 2x (as for the headlines above)
awk -v w="$work/wide" 'BEGIN {while ((getline l < w) > 0) wide[l] = 1}
    $1 ~ /^shm_/ && !($1 in wide) && ($7 != "yes" || !/ B slower$/) {bad = 1} END {exit bad}' "$work/gain" \
  && ok || fail "gain JSON: a 2x change not significant"

"$src/scripts/compare.sh" "$work/a" /nonexistent >/dev/null 2>&1
[ $? -eq 2 ] && ok || fail "compare.sh with a missing folder should exit 2"
"$src/scripts/compare.sh" "$work/a" >/dev/null 2>&1
[ $? -eq 1 ] && ok || fail "compare.sh on a folder without --system runs should exit 1"

# A --system folder: compare.sh gives the gain per binary; two of them compare file by file.
"$src/scripts/compare.sh" "$work/sys" >"$work/sys.out" 2>&1 && ok || fail "compare.sh SYSDIR: exit $?: $(tail -3 "$work/sys.out")"
for bench in allocation lookup lookup_sweep transfer; do
  grep -qx "== $bench: mooncake against flowipc_jemalloc" "$work/sys.out" && ok || fail "compare.sh SYSDIR: no $bench gain"
done
grep -qE "^shm_lookup/segments:100 +[0-9.]+ +[0-9.]+ +[0-9.]+ " "$work/sys.out" && ok || fail "compare.sh SYSDIR: no lookup gain"
mkdir -p "$work/sys2"
cp "$work/sys/allocation_mooncake.json" "$work/sys2/"
"$src/scripts/compare.sh" --verbose "$work/sys" "$work/sys2" >"$work/sys2.out" 2>&1 && ok || fail "compare.sh SYSDIR SYSDIR: exit $?"
grep -q "^== compare.py benchmarks $work/sys/allocation_mooncake.json" "$work/sys2.out" && ok || fail "two system folders: no compare.py per file"
grep -q "^mooncake: shm_alloc/alloc/size_kb:4 " "$work/sys2.out" && ok || fail "two system folders: no headline per system"

# Wrong calls: usage on stderr, exit 2, nothing on stdout; --help: usage on stdout, exit 0.
for args in "" "--frobnicate $work/a $work/b" "$work/a $work/a/lookup.json" "$work/a/lookup.json" \
            "$work/a $work/b $work/sys" "$work/nonexistent $work/a"; do
  # shellcheck disable=SC2086 # the cases are words
  "$src/scripts/compare.sh" $args >"$work/usage.out" 2>"$work/usage.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ ! -s "$work/usage.out" ] && grep -q "^usage: compare.sh" "$work/usage.err" \
    && ! grep -q "unbound variable" "$work/usage.err" && ok \
    || fail "compare.sh ${args:-(no arguments)}: exit $rc, $(head -2 "$work/usage.err")"
done
"$src/scripts/compare.sh" --help >"$work/usage.out" 2>&1 && grep -q "^usage: compare.sh" "$work/usage.out" && ok \
  || fail "compare.sh --help"

# The effect size: 9 repetitions each, B above A in every one (significant), 3% and 10% apart.
"$py" - "$work/small_a.json" "$work/small_b.json" <<'EOF2'
import json, sys
def rows(scale):
    return [{"name": "shm_lookup/%s/segments:100" % n, "run_name": "x", "run_type": "iteration",
             "repetitions": 9, "repetition_index": i, "threads": 1, "iterations": 10, "real_time": 1.0,
             "cpu_time": 1.0, "time_unit": "ns", "p50": (100 + i * 0.1) * f}
            for n, f in (("mooncake", scale[0]), ("tree", scale[1])) for i in range(9)]
json.dump({"context": {}, "benchmarks": rows((1, 1))}, open(sys.argv[1], "w"))
json.dump({"context": {}, "benchmarks": rows((1.03, 1.10))}, open(sys.argv[2], "w"))
EOF2
"$src/scripts/compare.sh" "$work/small_a.json" "$work/small_b.json" >"$work/small.out" 2>&1 && ok || fail "compare.sh small: exit $?"
grep -qE "^shm_lookup/mooncake/segments:100 .* \+3\.0% .* yes +no practical difference$" "$work/small.out" && ok \
  || fail "a significant 3% change is not 'no practical difference': $(grep mooncake "$work/small.out")"
grep -qE "^shm_lookup/tree/segments:100 .* \+10\.0% .* yes +B slower$" "$work/small.out" && ok \
  || fail "a significant 10% change is not 'B slower': $(grep tree/ "$work/small.out")"
grep -q "no practical difference: a change under 5%, significant or not" "$work/small.out" && ok \
  || fail "the legend does not state the 5% threshold"

# Pairing across runs: a run without --system against a --system run (first_use with attach),
# and an older --system folder (first_use, setup) whose one-off rows still pair.
"$src/scripts/compare.sh" "$work/a/lookup.json" "$work/sys/lookup_mooncake.json" >"$work/mixed.out" 2>&1 && ok \
  || fail "compare.sh plain against --system: exit $?: $(tail -2 "$work/mixed.out")"
grep -qE "^shm_lookup/attach/segments:100 +[0-9.]+ +[0-9.]+ +[0-9.]+ " "$work/mixed.out" \
  && grep -qE "^shm_lookup/segments:100 +[0-9.]+ +[0-9.]+ " "$work/mixed.out" \
  && grep -q "^paired across names: first_use with attach" "$work/mixed.out" \
  && grep -q "^A ran without --system: its mooncake rows" "$work/mixed.out" && ok \
  || fail "plain against --system: first_use and attach not paired: $(cat "$work/mixed.out")"
mkdir -p "$work/old"
cp "$work/sys/"*.json "$work/old/"
sed -i 's#/attach/#/first_use/#g' "$work/old/lookup_mooncake.json"
sed -i 's#/register/#/setup/#g' "$work/old/allocation_mooncake.json"
"$src/scripts/compare.sh" "$work/old" >"$work/old.out" 2>&1 && ok || fail "compare.sh OLDSYSDIR: exit $?"
for row in shm_lookup/attach/segments:100 shm_alloc/register/size_kb:4 shm_alloc/attach/size_kb:8; do
  [ "$(grep -cE "^$row +[0-9.]+ +[0-9.]+ +[0-9.]+ " "$work/old.out")" -eq 2 ] && ok \
    || fail "an older --system folder: $row not paired for both flavours: $(grep "^$row" "$work/old.out")"
done
# two folders, one plain, one --system: the headline only, the one-off costs paired
"$src/scripts/compare.sh" "$work/a" "$work/sys" >"$work/folders.out" 2>"$work/folders.err" && ok \
  || fail "compare.sh PLAIN SYSDIR: exit $?: $(cat "$work/folders.err")"
[ "$(head -1 "$work/folders.out")" = "== headlines" ] && ! grep -q "^Comparing" "$work/folders.out" \
  && [ "$(wc -l <"$work/folders.out")" -lt 80 ] && ok \
  || fail "compare.sh without --verbose: not the headline alone ($(wc -l <"$work/folders.out") lines)"
grep -qE "^mooncake: shm_lookup/attach/segments:100 +ns +[0-9.]+ +[0-9.]+ " "$work/folders.out" \
  && grep -qE "^mooncake: shm_alloc/register/size_kb:4 +ns +[0-9.]+ +[0-9.]+ " "$work/folders.out" && ok \
  || fail "plain against --system folders: one-off costs not paired: $(grep -e attach -e register "$work/folders.out")"

# Plots: the gnuplot scripts say what the issue asks, and the PNGs are real.
mkdir -p "$work/gp" "$work/gp1"
"$py" "$src/scripts/results.py" plotdata "$work/a" "$work/gp" >"$work/made" && ok || fail "plotdata a"
grep -qx "transfer lookup allocation" "$work/made" && ok || fail "plotdata a made: $(cat "$work/made")"
g=$work/gp/transfer.gp
grep -q "set logscale y" "$g" && ok || fail "transfer with cold rows: no log y"
grep -q "yerrorbars" "$g" && grep -q "p10-p90 of the 9 repetitions" "$g" && ok || fail "transfer: no error bars"
grep -q "flags: .*cold=true" "$g" && grep -q "$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["context"]["cpu_model"])' "$work/a/transfer.json")" "$g" \
  && ok || fail "transfer: title lacks the flags or the CPU"
grep -q "#000000" "$g" && grep -q "#009E73" "$g" && ok || fail "transfer: not the Okabe-Ito palette"
grep -q "one-off: register (a buffer or pool" "$work/gp/allocation.gp" && ok || fail "allocation: no one-off panel"
grep -q "set logscale y" "$work/gp/allocation.gp" && ok || fail "allocation: no log y"
"$py" "$src/scripts/results.py" plotdata "$work/one" "$work/gp1" >/dev/null && ok || fail "plotdata one"
g=$work/gp1/transfer.gp
grep -q '"4K" 4' "$g" && grep -q '"64K" 64' "$g" && ok || fail "transfer: no size ticks"
grep -q "L1d [0-9]*K" "$g" && ok || fail "transfer: no L1d line"
grep -q "yerrorbars" "$g" && fail "one repetition: error bars" || ok
grep -q "one repetition: no error bars" "$g" && ok || fail "one repetition: not said"

# One-off costs in their own panel, never on a per-operation axis; the --system line and
# the flags from the runs' contexts; every title line fits the canvas (none clipped).
mkdir -p "$work/gps"
"$py" "$src/scripts/results.py" plotdata "$work/sys" "$work/gps" >"$work/made" && grep -qx "transfer lookup allocation gain" "$work/made" \
  && ok || fail "plotdata sys made: $(cat "$work/made")"
for f in lookup0 allocation1 transfer0; do
  [ -s "$work/gps/$f.dat" ] && ! grep -qE '^# ".*(register|attach|detach|first_use|pool_once|setup)' "$work/gps/$f.dat" && ok \
    || fail "$f.dat (per operation) holds a one-off cost: $(grep '^#' "$work/gps/$f.dat" | tr '\n' ' ')"
done
grep -q '^# "mooncake attach"' "$work/gps/lookup1.dat" && grep -q '^# "flowipc_jemalloc pool_once"' "$work/gps/lookup1.dat" \
  && grep -q '^# "flowipc_classic register"' "$work/gps/allocation2.dat" && ok \
  || fail "the one-off panels lack their rows: $(grep -h '^#' "$work/gps/lookup1.dat" "$work/gps/allocation2.dat" | tr '\n' ' ')"
# gain.png: the receiver's attach totals in lookup's one-off panel (not a per-operation one)
awk "/^set title 'lookup, one-off costs/ {p = 1} p && /^set xtics/ {print; exit}" "$work/gps/gain.gp" \
  | grep -q "'attach total 100 segs'" && ok || fail "gain.gp: no attach total in lookup's one-off panel"
grep -q '^# "mooncake request"' "$work/gps/transfer1.dat" && ! grep -q request "$work/gps/transfer0.dat" && ok \
  || fail "transfer: a request's parts on the GB/s axis, or no per-request panel"
for g in lookup allocation transfer gain; do
  # (a quote doubled inside gnuplot's single quotes)
  grep -qF -- "--system runs: mooncake, flowipc_classic, flowipc_jemalloc (as each run''s context says)" "$work/gps/$g.gp" \
    && ! grep -q "system=mooncake,flowipc" "$work/gps/$g.gp" && ok || fail "$g.gp: the --system line is not the contexts'"
  "$py" - "$work/gps/$g.gp" <<'EOF2' && ok || fail "$g.gp: a title line wider than the canvas"
import re, sys
text = open(sys.argv[1]).read()
width = int(re.search(r"size (\d+),", text).group(1))
title = re.search(r"^set multiplot layout \d+,1 title (.*)$", text, re.M).group(1)
lines = re.findall(r"'((?:[^']|'')*)'", title)
sys.exit(not lines or max(len(l) for l in lines) > width / 7.5)
EOF2
done
grep -q "flowipc_classic'" "$work/gps/gain.gp" && grep -q "'hollow: not significant'" "$work/gps/gain.gp" \
  && grep -q "'hatched: untested, < 9 reps'" "$work/gps/gain.gp" && grep -q "'solid: significant (U-test)'" "$work/gps/gain.gp" \
  && grep -q "'grey band: under 5%, no practical difference'" "$work/gps/gain.gp" && ok || fail "gain.gp: the legend lacks an entry"
# gain bars filled by their verdict: a synthetic --system folder of 9 repetitions, lookup 10x
# faster (significant: solid) and a hand-off alike in both (not significant: hollow)
mkdir -p "$work/sig" "$work/gpsig"
"$py" - "$work/sig" <<'EOF2'
import json, sys
def rows(system, steady):
    return [{"name": n, "run_name": n, "run_type": "iteration", "repetitions": 9, "repetition_index": i,
             "threads": 1, "iterations": 10, "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ns", "p50": v + i}
            for n, v in (("shm_lookup/segments:100", steady), ("shm_lookup/handoff/segments:100", 200.0))
            for i in range(9)]
for system, steady in (("mooncake", 1000.0), ("flowipc_jemalloc", 100.0)):
    json.dump({"context": {"system": system, "flags": "system=%s" % system}, "benchmarks": rows(system, steady)},
              open("%s/lookup_%s.json" % (sys.argv[1], system), "w"))
EOF2
"$py" "$src/scripts/results.py" plotdata "$work/sig" "$work/gpsig" >/dev/null && ok || fail "plotdata sig"
"$py" - "$work/gpsig" <<'EOF2' && ok || fail "gain.png: a significant bar not solid or a non-significant one not hollow"
import re, sys
d = sys.argv[1]
blocks = open(d + "/gain0.dat").read().split("\n\n\n")
gp = open(d + "/gain.gp").read()
seen = {}
for i, b in enumerate(blocks):
    head = re.match(r'# (\S+) "(.*)"', b)
    if head and any(l and not l.startswith(("#", "nan")) for l in b.split("\n")):
        style = re.search(r"index %d using 1:2:3:4\S* with boxxyerror lw 1.5 lc rgb \S+ fs (\w+)" % i, gp).group(1)
        seen[head.group(2)] = style
sys.exit(seen != {"yes": "solid", "no": "empty"})
EOF2
# each bar's 95% interval (bootstrap of the medians' ratio, 9 repetitions): the 10x row's
# holds its gain and not 1, the alike hand-off's holds 1; drawn as capped lines, in the legend
"$py" - "$work/gpsig" <<'EOF2' && ok || fail "gain.png: an interval missing, not around its gain, or not drawn"
import re, sys
d = sys.argv[1]
bars = [l.split() for l in open(d + "/gain0.dat") if l[0].isdigit() or l[0] == "-"]
gp = open(d + "/gain.gp").read()
ok = len(bars) == 2 and "with vectors heads" in gp and "'error bar: 95% bootstrap interval (9+ reps)'" in gp
for x, v, left, right, lo, hi, at, text in bars:
    v, lo, hi, at = float(v), float(lo), float(hi), float(at)
    ok = ok and lo <= v <= hi and at > hi and (lo <= 1 <= hi if v < 2 else 9 < lo and hi < 10.5)
sys.exit(not ok)
EOF2

for d in live sys; do
  "$src/scripts/plot.sh" "$work/$d" >"$work/plot" 2>&1 && ok || fail "plot.sh $d: exit $?: $(cat "$work/plot")"
done
# sys: 2 repetitions, so its PNGs draw error bars
for png in live/transfer live/lookup live/allocation sys/transfer sys/lookup sys/allocation sys/gain; do
  f=$work/$png.png
  if [ -f "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$f")" -gt 10000 ]; then
    ok
  else
    fail "$png.png missing or not a real PNG"
  fi
done
[ ! -e "$work/live/gain.png" ] && ok || fail "gain.png in a folder without --system runs"
"$src/scripts/plot.sh" "$work/m1/nonexistent" >/dev/null 2>&1
[ $? -eq 2 ] && ok || fail "plot.sh on a missing folder should exit 2"
# across systems, attach pairs the receiver's totals (attaches x p50), as the report does:
# Mooncake attaches each of its buffers, Flow-IPC each pool
"$src/scripts/compare.sh" "$work/sys" >"$work/attach.out" 2>&1
want=$("$py" -c 'import json, statistics, sys
def total(f):
    rows = [b for b in json.load(open(f))["benchmarks"]
            if b["name"] == "shm_lookup/attach/segments:100" and b["run_type"] == "iteration"]
    return statistics.median(b["iterations"] * b["p50"] for b in rows)
print("%.2f" % (total(sys.argv[1]) / total(sys.argv[2])))' "$work/sys/lookup_mooncake.json" "$work/sys/lookup_flowipc_classic.json")
got=$(grep -m1 "^shm_lookup/attach/segments:100 " "$work/attach.out" | awk '{print $4}')
[ -n "$got" ] && [ "$got" = "$want" ] && grep -q "^attach rows of mooncake against flowipc_classic are the receiver's totals" \
  "$work/attach.out" && ok || fail "attach across systems: gain $got, expected the totals' $want"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left"
finish
