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
for f in "transfer_size_kb int64 4" "max_transfer_size_mb int64 64" "num_transfers int64 1000" \
         "use_memcpy bool true" "verify_data bool false" 'methods string ""' "threads int32 1" \
         "cold bool false" "time_per_size_ms int64 1000"; do
  read -r name type value <<<"$f"
  grep -q "^$name (.*type: $type default: $value *\$" "$work/help1" && ok || fail "--helpshort: no $name of $type with default $value"
done

expect_usage_error "$bin" transfer_size_kb --transfer_size_kb=0
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=0
expect_usage_error "$bin" max_transfer_size_mb --max_transfer_size_mb=-64
expect_usage_error "$bin" transfer_size_kb --transfer_size_kb=2048 --max_transfer_size_mb=1
expect_usage_error "$bin" num_transfers --num_transfers=0
expect_usage_error "$bin" threads --threads=0
expect_usage_error "$bin" threads --threads=100000
expect_usage_error "$bin" methods --methods=avx
expect_usage_error "$bin" methods --methods=memcpy,memcpy
expect_usage_error "$bin" time_per_size_ms --time_per_size_ms=0
expect_usage_error "$bin" use_memcpy --use_memcpy=perhaps

# a size that does not fit in /dev/shm: exit 1, the flag, the space needed and free
"$bin" --shm_prefix=/$prefix --max_transfer_size_mb=1048576 >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] \
  && grep -q -- "--max_transfer_size_mb needs 2 TiB in /dev/shm but only .* is free" "$work/err" \
  && ok || fail "no space: exit $rc: $(cat "$work/err")"

"$bin" "${quick[@]}" >"$work/t.txt" 2>"$work/t.err" || fail "table run: $(cat "$work/t.err")"
rows=$(table_rows "$work/t.txt" | wc -l)
[ "$rows" -eq 9 ] && ok || fail "table has $rows rows, expected 9 (4 KB .. 1 MB)"
grep -v '^#' "$work/t.txt" | head -1 | awk '{print $1, $2, $3, $4, $5, $6, $7, $8}' \
  | grep -qx "size_kb method iterations mean_ns p50_ns p99_ns max_ns GB_s" && ok || fail "table header"
"$bin" "${quick[@]}" --format=json --verify_data >"$work/t.json" 2>/dev/null || fail "json run"
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
assert [x["name"] for x in b][0] == "shm_transfer/memcpy/size_kb:4", b[0]["name"]
assert b[-1]["name"] == "shm_transfer/memcpy/size_kb:1024"
for x in b:
    kb = int(x["name"].split(":")[-1])
    assert abs(x["bytes_per_second"] - kb * 1024 * 1e9 / x["real_time"]) < 1e-6 * x["bytes_per_second"], x
' "$work/t.json" && ok || fail "json rows"

"$bin" "${quick[@]}" --use_memcpy=false >"$work/l.txt" 2>/dev/null || fail "loop run"
[ "$(table_rows "$work/l.txt" | awk '{print $2}' | sort -u)" = loop ] && ok || fail "--use_memcpy=false is not the loop"
"$bin" "${quick[@]}" --methods=all --verify_data >"$work/a.txt" 2>/dev/null || fail "all run"
n=$(table_rows "$work/a.txt" | awk '{print $2}' | sort -u | wc -l)
[ "$n" -ge 2 ] && ok || fail "--methods=all ran $n methods"
"$bin" "${quick[@]}" --threads=2 --format=csv >"$work/th.csv" 2>/dev/null || fail "threads run"
grep -q "^shm_transfer/memcpy/size_kb:1024/threads:2," "$work/th.csv" && ok || fail "threads rows"
"$bin" "${quick[@]}" --cold >"$work/c.txt" 2>/dev/null || fail "cold run"
[ "$(table_rows "$work/c.txt" | awk '$3=="cold"' | wc -l)" -eq 9 ] && ok || fail "cold rows"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after runs"

# Ctrl-C in the middle of a run leaves nothing behind
expect_signal_cleanup INT 1 "$prefix" "$bin" --shm_prefix=/$prefix --max_transfer_size_mb=64 --cold

finish
