#!/usr/bin/env bash
# shm_transfer_bench as a user runs it: flags, errors, methods, threads,
# cold rows, verification, clean-up.
#   cli_transfer.sh BIN_DIR PYTHON
bindir=$1
python=${2:-/usr/bin/python3}
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_transfer_bench
prefix=shmb_cli_transfer_$$_
quick=(--shm_prefix=/$prefix --max_transfer_size_mb=1 --num_transfers=20 --time_per_size_ms=20)

"$bin" --helpshort >"$work/help" 2>&1 || fail "--helpshort exit $?"
tr -s ' \n' ' ' <"$work/help" | sed 's/ -\([a-z_]*\) (/\n\1 (/g' >"$work/help1"
for f in "transfer_size_kb int64 4" "max_transfer_size_mb double 64" "num_transfers int64 1000" \
         "use_memcpy bool true" "verify_data bool false" 'methods string ""' "threads int32 1" \
         "cold bool false" "time_per_size_ms int64 1000" "peer_process bool false"; do
  read -r name type value <<<"$f"
  grep -q "^$name (.*type: $type default: $value *\$" "$work/help1" && ok || fail "--helpshort: no $name of $type with default $value"
done

expect_usage_error "$bin" transfer_size_kb --transfer_size_kb=0
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=0
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=-64
expect_usage_error "$bin" transfer_size_kb --transfer_size_kb=2048 --max_transfer_size_mb=1
expect_usage_error "$bin" transfer_size_kb --transfer_size_kb=8 --max_transfer_size_mb=0.00390625
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=-0.00390625
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=0.1  # 102.4 KB: not a whole KB
grep -q -- '--max_transfer_size_mb=0.1:' "$work/err" && ok \
  || fail "the refusal does not echo 0.1 as given: $(cat "$work/err")"
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=nan
# one flag for the kernels: --use_memcpy (the seed's) or --methods, not both
expect_usage_error "$bin" use_memcpy --use_memcpy=false --methods=nt
# --max_transfer_size_mb=0 says how to run sizes below 1 MB
"$bin" --max_transfer_size_mb=0 >/dev/null 2>"$work/err"
grep -q -- "--max_transfer_size_mb=0: .*a fraction gives a last size below 1 MB: 0.0625 is 64 KB" "$work/err" && ok \
  || fail "--max_transfer_size_mb=0 does not say how to run sizes below 1 MB: $(cat "$work/err")"
expect_usage_error "$bin" num_transfers --num_transfers=0
expect_usage_error "$bin" threads --threads=0
expect_usage_error "$bin" threads --threads=100000
expect_usage_error "$bin" methods --methods=avx
expect_usage_error "$bin" methods --methods=memcpy,memcpy
expect_usage_error "$bin" methods --methods=memcpy,all
# the error lists every allowed value, all included
"$bin" --methods=avx >/dev/null 2>"$work/err"
grep -q -- "--methods=avx: all, or a comma-separated list of distinct items of memcpy,loop,nt,movsb\$" "$work/err" \
  && ok || fail "--methods error does not list all the values: $(cat "$work/err")"
expect_usage_error "$bin" time_per_size_ms --time_per_size_ms=0
expect_usage_error "$bin" use_memcpy --use_memcpy=perhaps
expect_usage_error "$bin" peer_process --peer_process=perhaps

# a size that does not fit in /dev/shm: exit 1, the flag, the space needed and free
"$bin" --shm_prefix=/$prefix --max_transfer_size_mb=1048576 >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(grep -vc ": warning: " "$work/err")" -eq 1 ] \
  && grep -q -- "--max_transfer_size_mb needs 2 TiB in /dev/shm but only .* is free" "$work/err" \
  && ok || fail "no space: exit $rc: $(cat "$work/err")"

"$bin" "${quick[@]}" >"$work/t.txt" 2>"$work/t.err" || fail "table run: $(cat "$work/t.err")"
rows=$(table_rows "$work/t.txt" | wc -l)
[ "$rows" -eq 9 ] && ok || fail "table has $rows rows, expected 9 (4 KB .. 1 MB)"
# exactly --num_transfers transfers per row, also where a batch holds many
# (1000 became 1024 once), when the time budget does not end first; cold
# rows (one segment per transfer, no batches) with the small counts
for n in 1 7 1000; do
  cold=(--cold)
  [ $n -eq 1000 ] && cold=()
  "$bin" --shm_prefix=/$prefix --max_transfer_size_mb=0.0625 --num_transfers=$n --time_per_size_ms=100000 "${cold[@]}" \
    --methods=memcpy,loop >"$work/n.txt" 2>/dev/null || fail "--num_transfers=$n run"
  bad=$(grep -v '^#' "$work/n.txt" | awk -v n=$n '!h {for (i = 1; i <= NF; i++) if ($i == "iterations") c = i; h = 1; next}
                                              $c != n' | wc -l)
  [ "$bad" -eq 0 ] && [ "$(table_rows "$work/n.txt" | wc -l)" -eq $((${#cold[@]} ? 20 : 10)) ] && ok \
    || fail "--num_transfers=$n: $bad of $(table_rows "$work/n.txt" | wc -l) rows did another count"
done
# one size below 1 MB, alone
"$bin" --shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_mb=0.00390625 --num_transfers=20 >"$work/one.txt" 2>/dev/null \
  || fail "one small size run"
[ "$(table_rows "$work/one.txt" | awk '{print $1}' | tr '\n' ' ')" = "4 " ] && ok \
  || fail "--transfer_size_kb=4 --max_transfer_size_mb=0.00390625 ran: $(table_rows "$work/one.txt")"
"$bin" --shm_prefix=/$prefix --transfer_size_kb=16 --max_transfer_size_mb=0.046875 --num_transfers=20 >"$work/kb.txt" 2>/dev/null \
  || fail "kb sweep run"
[ "$(table_rows "$work/kb.txt" | awk '{print $1}' | tr '\n' ' ')" = "16 32 48 " ] && ok \
  || fail "--max_transfer_size_mb=0.046875 ran: $(table_rows "$work/kb.txt")"
grep -v '^#' "$work/t.txt" | head -1 | awk '{print $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}' \
  | grep -qx "size_kb method step threads rep iterations mean_ns p50_ns p99_ns max_ns GB_s" && ok || fail "table header"
# GB/s from the median: bytes_per_second = size / p50 on every row (p50 is
# printed to 0.001 ns), and at least one row where the mean would differ
"$bin" "${quick[@]}" --num_transfers=2000 --format=json --verify_data >"$work/t.json" 2>/dev/null || fail "json run"
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
assert [x["name"] for x in b][0] == "shm_transfer/memcpy/size_kb:4", b[0]["name"]
assert b[-1]["name"] == "shm_transfer/memcpy/size_kb:1024"
apart = 0
for x in b:
    bytes = int(x["name"].split(":")[-1]) * 1024
    assert abs(x["bytes_per_second"] - bytes * 1e9 / x["p50"]) < 1e-4 * x["bytes_per_second"], x
    assert abs(x["items_per_second"] - 1e9 / x["p50"]) < 1e-4 * x["items_per_second"], x
    apart += abs(x["real_time"] - x["p50"]) > 1e-3 * x["p50"]
assert apart > 0, "mean = p50 on every row: the check tells nothing"
' "$work/t.json" && ok || fail "json rows: bytes_per_second is not size / p50"

# the table: GB_s = size_kb * 1024 / p50_ns, to the digits printed
gbs_check() {
  awk '!/^#/ && !h {for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next}
       !/^#/ {want = $c["size_kb"] * 1024 / $c["p50_ns"]; got = $c["GB_s"]
              if (got - want > 0.01 + 0.005 * want || want - got > 0.01 + 0.005 * want) {print "row " NR ": GB_s " got ", size/p50 " want; bad = 1}}
       END {exit bad}' "$1"
}

"$bin" "${quick[@]}" --use_memcpy=false >"$work/l.txt" 2>/dev/null || fail "loop run"
[ "$(table_rows "$work/l.txt" | awk '{print $2}' | sort -u)" = loop ] && ok || fail "--use_memcpy=false is not the loop"
"$bin" "${quick[@]}" --methods=all --verify_data >"$work/a.txt" 2>/dev/null || fail "all run"
n=$(table_rows "$work/a.txt" | awk '{print $2}' | sort -u | wc -l)
[ "$n" -ge 2 ] && ok || fail "--methods=all ran $n methods"
"$bin" "${quick[@]}" --threads=2 --format=csv >"$work/th.csv" 2>/dev/null || fail "threads run"
grep -q "^shm_transfer/memcpy/size_kb:1024/threads:2," "$work/th.csv" && ok || fail "threads rows"

# more threads than CPUs: one warning line; as many as the CPUs: none
cpus=$(nproc)
"$bin" --shm_prefix=/$prefix --max_transfer_size_mb=0.0078125 --num_transfers=20 --threads=$((cpus + 1)) >/dev/null 2>"$work/over.err" || fail "oversubscribed run"
[ "$(grep -c -- "warning: --threads=$((cpus + 1)) exceeds the $cpus CPUs" "$work/over.err")" -eq 1 ] && ok \
  || fail "--threads=$((cpus + 1)) on $cpus CPUs: no warning: $(cat "$work/over.err")"
"$bin" --shm_prefix=/$prefix --max_transfer_size_mb=0.0078125 --num_transfers=20 --threads=$cpus >/dev/null 2>"$work/fit.err" || fail "threads=nproc run"
grep -q -- "warning: --threads" "$work/fit.err" && fail "--threads=$cpus on $cpus CPUs warned: $(cat "$work/fit.err")" || ok

# cold rows: one per size, their speedup against the warm memcpy of the same
# size (below 1: the first write allocates the pages), not against themselves
"$bin" "${quick[@]}" --cold >"$work/c.txt" 2>/dev/null || fail "cold run"
[ "$(table_rows "$work/c.txt" | awk '$3=="cold"' | wc -l)" -eq 9 ] && ok || fail "cold rows"
gbs_check "$work/t.txt" && gbs_check "$work/c.txt" && ok || fail "GB_s is not size / p50"
table_rows "$work/c.txt" | awk '$3 == "-" {warm[$1] = $11} $3 == "cold" {
    want = $11 / warm[$1]; if ($12 >= 1 || $12 - want > 0.01 + 0.02 * want || want - $12 > 0.01 + 0.02 * want) {
      print "size " $1 ": cold speedup " $12 ", cold GB_s / warm GB_s " want; bad = 1 }}
  END {exit bad}' && ok || fail "cold speedup is not against the warm memcpy"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after runs"

# /dev/shm filling up during a cold run (a 16 MiB private tmpfs): one line naming the first write,
# exit 1, no SIGBUS, nothing left.
if private_tmpfs; then
  unshare -m bash -c '
    mount -t tmpfs -o size=16m tmpfs /dev/shm || exit 77
    "$1" --shm_prefix=/full_ --cold --transfer_size_kb=1024 --max_transfer_size_mb=1 --num_transfers=1000000000 \
      --time_per_size_ms=500 >/dev/null 2>"$2/full.err" &
    pid=$!
    # once src and dst hold their pages (the warm row runs for 0.5 s, the
    # cold one up to as long), take every free page, then every page that
    # frees up
    until [ "$(du -sk /dev/shm | cut -f1)" -ge 2048 ] || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done
    i=0
    while kill -0 $pid 2>/dev/null && [ $i -lt 100000 ]; do
      free=$(df -B4096 --output=avail /dev/shm | tail -1)
      [ "$free" -gt 0 ] && { fallocate -l $((free * 4096)) /dev/shm/filler$i 2>/dev/null || rm -f /dev/shm/filler$i; }
      i=$((i + 1))
    done
    wait $pid
    echo "$? $(ls /dev/shm | grep -c ^full_)" >"$2/full.rc"' _ "$bin" "$work"
  read -r rc left <"$work/full.rc"
  [ "$rc" -eq 1 ] && [ "$left" -eq 0 ] && [ "$(grep -vc ": warning: " "$work/full.err")" -eq 1 ] \
    && grep -q "^shm_transfer_bench: first write(/dev/shm) failed: No space left on device" "$work/full.err" \
    && ok || fail "cold, /dev/shm filled mid-run: exit $rc, $left left: $(cat "$work/full.err")"
else
  skip_case "no private mount namespace with a tmpfs: the cold copy into a full /dev/shm"
fi

# Ctrl-C in the middle of a run leaves nothing behind
expect_signal_cleanup INT 0.3 "$prefix" "$bin" --shm_prefix=/$prefix --max_transfer_size_mb=64 --cold

# --peer_process: the same rows, measured in the peer, a note saying so,
# every size verified; no peer and nothing in /dev/shm left afterwards
"$bin" "${quick[@]}" --peer_process --methods=memcpy,loop >"$work/p.txt" 2>"$work/p.err" \
  || fail "peer run: $(cat "$work/p.err")"
"$bin" "${quick[@]}" --methods=memcpy,loop >"$work/ip.txt" 2>/dev/null || fail "in-process run"
[ "$(table_rows "$work/p.txt" | awk '{print $1, $2}')" = "$(table_rows "$work/ip.txt" | awk '{print $1, $2}')" ] \
  && [ "$(table_rows "$work/p.txt" | wc -l)" -eq 18 ] && ok \
  || fail "peer rows differ from in-process rows: $(table_rows "$work/p.txt" | awk '{print $1, $2}' | tr '\n' ' ')"
grep -q "^# peer_process: every row was measured in a second process: it attached src and dst by name" "$work/p.txt" \
  && ! grep -q "^# peer_process" "$work/ip.txt" && ok || fail "no peer_process note (or one without the flag)"
table_rows "$work/p.txt" | awk '$6 != 20 {bad = 1} END {exit bad}' && gbs_check "$work/p.txt" && ok \
  || fail "peer rows: not 20 transfers each, or GB_s is not size / p50"
[ "$(leftovers "$prefix")" -eq 0 ] && [ "$(peer_left "$prefix")" -eq 0 ] && ok \
  || fail "peer run left $(leftovers "$prefix") segments, $(peer_left "$prefix") processes"
# the same names in JSON, so compare.sh pairs an in-process and a peer run
"$bin" "${quick[@]}" --peer_process --format=json >"$work/p.json" 2>/dev/null || fail "peer json run"
"$python" -c '
import json, sys
names = [x["name"] for x in json.load(open(sys.argv[1]))["benchmarks"]]
want = ["shm_transfer/memcpy/size_kb:%d" % (4 << i) for i in range(9)]
assert names == want, names
' "$work/p.json" && ok || fail "peer json names"
# the peer's team and the request's parts in the peer: each part's share of the request, the request's copy
"$bin" "${quick[@]}" --peer_process --threads=2 --system=mooncake --format=csv >"$work/pt.csv" 2>/dev/null \
  || fail "peer --threads=2 --system run"
for part in request_path translate memcpy; do
  tr -d '\r' <"$work/pt.csv" | grep -q "^shm_transfer/$part/size_kb:1024/threads:2,.*,[0-9.e+-]*% of request p50\$" \
    && ok || fail "peer --threads=2 --system: no $part row with its share: $(grep "/$part/size_kb:1024" "$work/pt.csv")"
done
tr -d '\r' <"$work/pt.csv" | grep -q '^shm_transfer/request/size_kb:1024/threads:2,.*,copy memcpy; parts add up to [0-9.e+]*%$' \
  && ok || fail "peer --threads=2 --system request row: $(tail -1 "$work/pt.csv")"

# with a system, per size: the request path, the translation, the copy, the whole request (JSON names as
# DESIGN.md has them)
"$bin" "${quick[@]}" --transfer_size_kb=512 --system=mooncake --json_out="$work/tent.json" \
  >"$work/tent.txt" 2>/dev/null || fail "--system=mooncake run"
"$python" -c '
import json, sys
names = [x["name"] for x in json.load(open(sys.argv[1]))["benchmarks"]]
want = ["shm_transfer/%s/size_kb:%d" % (p, s) for s in (512, 1024) for p in ("request_path", "translate", "memcpy", "request")]
assert names == want, names
' "$work/tent.json" && ok || fail "--system=mooncake: json names"
grep -qx "# system: mooncake" "$work/tent.txt" && ok || fail "mooncake: $(grep '^# system' "$work/tent.txt")"

# cold rows in the peer: it writes each fresh segment first; slower than warm
"$bin" "${quick[@]}" --peer_process --cold >"$work/pc.txt" 2>/dev/null || fail "peer --cold run"
[ "$(table_rows "$work/pc.txt" | awk '$3 == "cold" && $12 < 1' | wc -l)" -eq 9 ] \
  && grep -q "^# peer_process: .*; cold: this process created each fresh segment, the peer attached it" <(unwrap "$work/pc.txt") \
  && [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "peer --cold: $(table_rows "$work/pc.txt" | awk '$3 == "cold"')"

# the peer killed mid-run, then the owner: nothing left either way
long=(--shm_prefix=/$prefix --max_transfer_size_mb=4 --num_transfers=1000000000 --time_per_size_ms=3000 --peer_process)
check_peer_deaths "$prefix" "$bin" "${long[@]}"
# the same for SHM-jemalloc's borrower process, a peer that serves the hand-off's messages
check_peer_deaths "$prefix" "$bin" --shm_prefix=/$prefix --systems=mooncake,flowipc_jemalloc --max_transfer_size_mb=4 \
  --time_per_size_ms=30000

# Ctrl-C of the owner of a peer run (measuring by 0.4 s): nothing left, no
# peer within 0.3 s
expect_signal_cleanup INT 0.4 "$prefix" "$bin" "${long[@]}"
for _ in 1 2 3 4 5 6; do [ "$(peer_left "$prefix")" -eq 0 ] && break; sleep 0.05; done
[ "$(peer_left "$prefix")" -eq 0 ] && ok || fail "Ctrl-C left $(peer_left "$prefix") peer processes"

finish
