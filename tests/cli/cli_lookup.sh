#!/usr/bin/env bash
# shm_address_lookup_bench as a user runs it: flags, errors, formats, sweep.
#   cli_lookup.sh BIN_DIR PYTHON
bindir=$1
python=${2:-/usr/bin/python3}
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_address_lookup_bench
prefix=shmb_cli_lookup_$$_
quick=(--num_segments=20 --num_lookups=500 --min_time_ms=1 --shm_prefix=/$prefix)

"$bin" --helpshort >"$work/help" 2>&1 || fail "--helpshort exit $?"
tr -s ' \n' ' ' <"$work/help" | sed 's/ -\([a-z_]*\) (/\n\1 (/g' >"$work/help1"
for f in "num_segments int64 100" "num_lookups int64 10000" "segment_size_mb int64 64" \
         'strategies string "mooncake,flowipc_classic,flowipc_jemalloc,linear,lower_bound,tree,arithmetic"' 'sweep_segments string ""' \
         "lookup_len_kb int64 4" 'pattern string "random"' 'format string "table"' \
         'lookup_mode string "throughput"' 'placement string "descending"' "peer_process bool false" \
         "handoff bool true"; do
  read -r name type value <<<"$f"
  grep -q "^$name (.*type: $type default: $value *\$" "$work/help1" && ok || fail "--helpshort: no $name of $type with default $value"
done

expect_usage_error "$bin" num_segments --num_segments=0
expect_usage_error "$bin" num_segments --num_segments=-3
expect_usage_error "$bin" num_lookups --num_lookups=0
expect_usage_error "$bin" segment_size_mb --segment_size_mb=0
expect_usage_error "$bin" segment_size_mb --segment_size_mb=99999999999999999999
expect_usage_error "$bin" lookup_len_kb --lookup_len_kb=0
expect_usage_error "$bin" lookup_len_kb --segment_size_mb=1 --lookup_len_kb=1025
expect_usage_error "$bin" num_segments --num_segments=2000000 --segment_size_mb=64
expect_usage_error "$bin" sweep_segments --sweep_segments=1,,10
expect_usage_error "$bin" sweep_segments --sweep_segments=1,10,
expect_usage_error "$bin" sweep_segments --sweep_segments=ten
expect_usage_error "$bin" sweep_segments --sweep_segments=0,10
expect_usage_error "$bin" sweep_segments --sweep_segments=-1
expect_usage_error "$bin" sweep_segments --sweep_segments=10,2000000
expect_usage_error "$bin" sweep_segments --sweep_segments=10,10
expect_usage_error "$bin" sweep_segments "--sweep_segments=1, 10"
expect_usage_error "$bin" sweep_segments --sweep_segments=+10
expect_usage_error "$bin" strategies --strategies=hash
expect_usage_error "$bin" strategies --strategies=linear,
expect_usage_error "$bin" pattern --pattern=zigzag
expect_usage_error "$bin" lookup_mode --lookup_mode=fast
expect_usage_error "$bin" lookup_mode --lookup_mode=
expect_usage_error "$bin" lookup_mode --lookup_mode=Latency
expect_usage_error "$bin" placement --placement=sideways
expect_usage_error "$bin" placement --placement=

# --system=mooncake: the system line names it; verified, in one process and in two
for mode in "" --peer_process; do
  "$bin" "${quick[@]}" $mode --system=mooncake >"$work/tent.txt" 2>/dev/null || fail "mooncake $mode run"
  grep -qx "# system: mooncake" "$work/tent.txt" && ok || fail "mooncake $mode: $(grep '^# system' "$work/tent.txt")"
  table_rows "$work/tent.txt" | grep -q "verified 131072/131072" && ok || fail "mooncake $mode: no verified row"
done
expect_usage_error "$bin" lookup_len_kb --segment_size_mb=128 --lookup_len_kb=65537

"$bin" "${quick[@]}" >"$work/t.txt" 2>"$work/t.err" || fail "table run: $(cat "$work/t.err")"
"$bin" "${quick[@]}" --format=csv >"$work/t.csv" 2>/dev/null || fail "csv run"
"$bin" "${quick[@]}" --format=json --pattern=sequential >"$work/t.json" 2>/dev/null || fail "json run"
rows=$(table_rows "$work/t.txt" | wc -l)
[ "$rows" -eq 11 ] && ok || fail "table has $rows rows, expected 11 (3 systems, mooncake's first_use, 4 kernels, 3 hand-off)"
[ "$(($(wc -l <"$work/t.csv") - 1))" -eq 11 ] && ok || fail "csv rows"
grep -v '^#' "$work/t.txt" | head -1 | awk '{print $1, $2, $3, $4, $5, $6, $(NF-2), $(NF-1), $NF}' \
  | grep -qx "segments strategy step threads rep iterations speedup system note" \
  && ok || fail "table header: $(grep -v '^#' "$work/t.txt" | head -1)"
[ "$(table_rows "$work/t.txt" | grep -c 'verified 131072/131072$')" -eq 7 ] && ok || fail "rows not verified"
table_rows "$work/t.txt" | awk '$2=="mooncake" && $3=="first_use" && $6==20 {found=1} END {exit !found}' \
  && ok || fail "no first_use row with one sample per segment"
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
names = [x["name"] for x in b]
paths = ("mooncake", "mooncake/first_use", "flowipc_classic", "flowipc_jemalloc", "linear", "lower_bound", "tree", "arithmetic")
handoff = ("flowipc_classic/handoff", "flowipc_jemalloc/handoff", "flowipc_jemalloc/pool_once")
assert names == ["shm_lookup/%s/segments:20" % s for s in paths + handoff], names
assert all(x["label"] == "verified 131072/131072" and x["items_per_second"] > 0 for x in b[:8] if "first_use" not in x["name"])
by = {x["name"]: x for x in b}
for f in ("flowipc_classic", "flowipc_jemalloc"):
    h = by["shm_lookup/%s/handoff/segments:20" % f]
    assert h["label"] == "verified %d/%d, no crossing" % (h["iterations"], h["iterations"]) and h["iterations"] >= 500, h
    assert h["speedup"] > 0, h
assert by["shm_lookup/flowipc_jemalloc/pool_once/segments:20"]["iterations"] >= 1
' "$work/t.json" && ok || fail "json rows"
grep -q "^# flags: .*placement=descending " <(unwrap "$work/t.txt") && ok || fail "flags line without the placement"
grep -q "^# placement: descending " "$work/t.txt" && ok || fail "no placement note"
grep -q "^# step -: throughput" "$work/t.txt" && ok || fail "no note saying the rows are throughput"
grep -q "^# step latency" "$work/t.txt" && fail "a latency note without latency rows" || ok
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after runs"

# both_rows JSON SUFFIX THREADS: every path's throughput row, then its latency
# row (names ending SUFFIX), mooncake's first_use (one thread) after its own;
# every other row verified and run on THREADS threads.
both_rows() {
  "$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
suffix, threads = sys.argv[2], int(sys.argv[3])
names = [x["name"] for x in b]
want = []
for s in ("mooncake", "flowipc_classic", "flowipc_jemalloc", "linear", "lower_bound", "tree", "arithmetic"):
    want += ["shm_lookup/%s/segments:20%s" % (s, suffix), "shm_lookup/%s/latency/segments:20%s" % (s, suffix)]
    if s == "mooncake":
        want.append("shm_lookup/mooncake/first_use/segments:20")
want += ["shm_lookup/flowipc_classic/handoff/segments:20", "shm_lookup/flowipc_jemalloc/handoff/segments:20",
         "shm_lookup/flowipc_jemalloc/pool_once/segments:20"]
assert names == want, names
assert all(x["threads"] == threads and x["label"] == "verified 131072/131072" for x in b[:-3] if "first_use" not in x["name"])
' "$@"
}

# Both kinds: every path's throughput row, then its latency row; names say which.
"$bin" "${quick[@]}" --lookup_mode=both --placement=random --format=json >"$work/b.json" 2>"$work/b.err" \
  || fail "both run: $(cat "$work/b.err")"
both_rows "$work/b.json" "" 1 && ok || fail "rows of --lookup_mode=both"
"$bin" "${quick[@]}" --lookup_mode=latency --strategies=arithmetic,linear >"$work/l.txt" 2>/dev/null \
  || fail "latency run"
table_rows "$work/l.txt" | awk '{print $2, $3}' | tr '\n' ' ' | grep -qx "linear latency arithmetic latency " \
  && ok || fail "latency rows: $(table_rows "$work/l.txt" | awk '{print $2, $3}' | tr '\n' ' ')"
grep -q "^# step latency: " "$work/l.txt" && ok || fail "no note saying the rows are latency"
grep -q "^# step -: throughput" "$work/l.txt" && fail "a throughput note without throughput rows" || ok

# Threads: every path at once on two threads, rows named /threads:2 (first_use
# is set-up, one thread), every batch verified; bad counts refused.
expect_usage_error "$bin" threads --threads=0
expect_usage_error "$bin" threads --threads=257
"$bin" "${quick[@]}" --threads=2 --lookup_mode=both --format=json >"$work/th.json" 2>"$work/th.err" \
  || fail "--threads=2 run: $(cat "$work/th.err")"
both_rows "$work/th.json" /threads:2 2 && ok || fail "rows of --threads=2"
"$bin" "${quick[@]}" --threads=2 --system=flowipc_jemalloc >"$work/ths.txt" 2>/dev/null || fail "--threads=2 --system run"
grep -q "^# threads: 2 at once" "$work/ths.txt" && ok || fail "no threads note"
table_rows "$work/ths.txt" | awk '$3 == "-" && $4 == 2 {found=1} END {exit !found}' \
  && ok || fail "--system row without threads 2: $(table_rows "$work/ths.txt")"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after the threaded runs"

# Two processes: the same rows under the same names, plus attach rows for
# the Flow-IPC paths, every translation verified in the peer; the peer gone
# afterwards, nothing left in /dev/shm.
peer=(--num_segments=20 --segment_size_mb=1 --num_lookups=500 --min_time_ms=1 --shm_prefix=/$prefix --peer_process=true)
expect_usage_error "$bin" threads "${peer[@]}" --threads=2
"$bin" "${peer[@]}" --lookup_mode=both --placement=random --format=json >"$work/p.json" 2>"$work/p.err" \
  || fail "--peer_process run: $(cat "$work/p.err")"
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
names = [x["name"] for x in b]
want = []
for s in ("mooncake", "flowipc_classic", "flowipc_jemalloc", "linear", "lower_bound", "tree", "arithmetic"):
    want += ["shm_lookup/%s/segments:20" % s, "shm_lookup/%s/latency/segments:20" % s]
    want += {"mooncake": ["shm_lookup/mooncake/first_use/segments:20"],
             "flowipc_classic": ["shm_lookup/flowipc_classic/attach/segments:20"],
             "flowipc_jemalloc": ["shm_lookup/flowipc_jemalloc/attach/segments:20"]}.get(s, [])
want += ["shm_lookup/flowipc_classic/handoff/segments:20", "shm_lookup/flowipc_jemalloc/handoff/segments:20",
         "shm_lookup/flowipc_jemalloc/pool_once/segments:20"]
assert names == want, names
timed = [x for x in b[:-3] if "first_use" not in x["name"] and "attach" not in x["name"]]
assert all(x["label"] == "verified 131072/131072" and x["threads"] == 1 for x in timed)
by = {x["name"]: x for x in b}
assert by["shm_lookup/mooncake/first_use/segments:20"]["iterations"] == 20
assert by["shm_lookup/flowipc_classic/attach/segments:20"]["iterations"] == 1
assert by["shm_lookup/flowipc_jemalloc/attach/segments:20"]["iterations"] >= 1
crossed = {"flowipc_classic": "blob + ack crossed", "flowipc_jemalloc": "2 msgs crossed"}
for f, how in crossed.items():
    h = by["shm_lookup/%s/handoff/segments:20" % f]
    assert h["label"] == "verified %d/%d, %s" % (h["iterations"], h["iterations"], how), h
    assert "speedup" not in h, h
assert by["shm_lookup/flowipc_jemalloc/pool_once/segments:20"]["label"] == "lend round trip per pool, crossed"
' "$work/p.json" && ok || fail "rows of --peer_process"
"$bin" "${peer[@]}" --system=flowipc_jemalloc >"$work/ps.txt" 2>/dev/null || fail "--peer_process --system run"
grep -q "^# two processes (--peer_process): " "$work/ps.txt" && ok || fail "no note saying the peer measured"
grep -q "^# handoff: .*both messages crossing" <(unwrap "$work/ps.txt") && ok || fail "no note saying the hand-off crossed"
table_rows "$work/ps.txt" | awk '{print $3, ($6 == "-")}' | tr '\n' ' ' | grep -qx -- "- 0 attach 0 handoff 0 pool_once 0 " \
  && ok || fail "--peer_process --system rows: $(table_rows "$work/ps.txt")"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after the --peer_process runs"
pgrep -f -- "--shm_prefix=/$prefix" >/dev/null && fail "a process of ours is still there" || ok

# One system's runs pair row by row: the same keys for mooncake (its
# hand-off rows unmeasured: it relocates per request) and flowipc_jemalloc.
for s in mooncake flowipc_jemalloc; do
  "$bin" "${quick[@]}" --system=$s --format=json >"$work/sys_$s.json" 2>/dev/null || fail "--system=$s run"
  "$bin" "${quick[@]}" --system=$s >"$work/sys_$s.txt" 2>/dev/null || fail "--system=$s table run"
done
"$python" -c '
import json, sys
m, j = ([x["name"] for x in json.load(open(f))["benchmarks"]] for f in sys.argv[1:3])
assert j[-2:] == ["shm_lookup/handoff/segments:20", "shm_lookup/pool_once/segments:20"], j
assert not any("handoff" in n or "pool_once" in n for n in m), m  # unmeasured: no JSON row
' "$work/sys_mooncake.json" "$work/sys_flowipc_jemalloc.json" && ok || fail "--system json rows"
keys() { table_rows "$1" | awk '{print $1, $3}'; }
[ "$(keys "$work/sys_mooncake.txt")" = "$(keys "$work/sys_flowipc_jemalloc.txt")" ] \
  && ok || fail "--system runs do not pair: $(keys "$work/sys_mooncake.txt" | tr '\n' ' ') / $(keys "$work/sys_flowipc_jemalloc.txt" | tr '\n' ' ')"
keys "$work/sys_mooncake.txt" | tr '\n' ' ' | grep -qx "20 - 20 attach 20 handoff 20 pool_once " \
  && ok || fail "--system rows: $(keys "$work/sys_mooncake.txt" | tr '\n' ' ')"
table_rows "$work/sys_mooncake.txt" | awk '$3 == "handoff" && $6 == "-" {found=1} END {exit !found}' \
  && ok || fail "no unmeasured handoff row for mooncake: $(table_rows "$work/sys_mooncake.txt")"
"$bin" "${quick[@]}" --handoff=false >"$work/nh.txt" 2>/dev/null || fail "--handoff=false run"
[ "$(table_rows "$work/nh.txt" | wc -l)" -eq 8 ] && ok || fail "--handoff=false rows: $(table_rows "$work/nh.txt")"
grep -q "^# handoff: " "$work/nh.txt" && fail "a hand-off note without hand-off rows" || ok
grep -q "^# handoff: .*no message crossing" <(unwrap "$work/t.txt") && ok || fail "no hand-off note in the default run"

# The peer SIGKILLed, then the owner: nothing left either way.
check_peer_deaths "$prefix" "$bin" "${peer[@]}" --strategies=flowipc_classic --min_time_ms=30000

# The latency chain cannot overlap translations: for arithmetic, whose
# translation is a few instructions, it costs at least what throughput does
# (medians of one run; 10% of slack for noise).
"$bin" --strategies=arithmetic --lookup_mode=both --num_segments=100 --num_lookups=100000 \
  --min_time_ms=100 --format=csv >"$work/a.csv" 2>/dev/null || fail "arithmetic run"
"$python" -c '
import csv, sys
rows = {r["step"]: float(r["p50_ns"]) for r in csv.DictReader(open(sys.argv[1]))}
assert rows["latency"] >= 0.9 * rows[""], rows
' "$work/a.csv" && ok || fail "arithmetic latency below throughput: $(cat "$work/a.csv")"

"$bin" --sweep_segments=1,10,100 --strategies=arithmetic,linear --num_lookups=200 --min_time_ms=1 \
  >"$work/s.txt" 2>/dev/null || fail "sweep run"
table_rows "$work/s.txt" | awk '{print $1, $2}' | tr '\n' ' ' \
  | grep -qx "1 linear 1 arithmetic 10 linear 10 arithmetic 100 linear 100 arithmetic " \
  && ok || fail "sweep rows: $(table_rows "$work/s.txt" | awk '{print $1, $2}' | tr '\n' ' ')"

finish
