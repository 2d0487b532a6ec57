#!/usr/bin/env bash
# compare.sh and plot.sh on real (small) runs of the three binaries.
#   scripts_results.sh BIN_DIR SOURCE_DIR
bindir=$1
src=$2
source "$src/tests/cli_lib.sh"
prefix=shmb_scripts_$$_
make_results() {
  local d=$1
  mkdir -p "$d"
  "$bindir/shm_allocation_bench" --shm_prefix=/$prefix --num_iterations=20 --max_size_kb=16 \
    --json_out="$d/allocation.json" >"$d/allocation.txt" 2>/dev/null &&
  "$bindir/shm_address_lookup_bench" --num_lookups=500 --min_time_ms=1 \
    --json_out="$d/lookup.json" >"$d/lookup.txt" 2>/dev/null &&
  "$bindir/shm_address_lookup_bench" --num_lookups=500 --min_time_ms=1 --sweep_segments=1,10,100 \
    --json_out="$d/lookup_sweep.json" >"$d/lookup_sweep.txt" 2>/dev/null &&
  "$bindir/shm_transfer_bench" --shm_prefix=/$prefix --max_transfer_size_mb=1 --num_transfers=10 \
    --time_per_size_ms=5 --methods=all --json_out="$d/transfer.json" >"$d/transfer.txt" 2>/dev/null
}
make_results "$work/a" && make_results "$work/b" && ok || fail "benchmark runs"

"$src/scripts/compare.sh" "$work/a" "$work/b" >"$work/cmp" 2>&1 && ok || fail "compare.sh exit $?: $(tail -5 "$work/cmp")"
for want in "== allocation: compare.py" "shm_alloc/arena/alloc/size_kb:16" "shm_lookup/tree/segments:100" \
            "shm_transfer/nt/size_kb:1024" "== headlines" "allocation posix total 4 KB" "lookup arithmetic 100 segments" \
            "transfer memcpy 4 KB"; do
  grep -qF "$want" "$work/cmp" && ok || fail "compare.sh output lacks '$want'"
done
"$src/scripts/compare.sh" "$work/a" /nonexistent >/dev/null 2>&1
[ $? -eq 2 ] && ok || fail "compare.sh with a missing folder should exit 2"

"$src/scripts/plot.sh" "$work/a" >"$work/plot" 2>&1 && ok || fail "plot.sh exit $?: $(cat "$work/plot")"
for png in transfer lookup allocation; do
  f=$work/a/$png.png
  if [ -f "$f" ] && [ "$(head -c 8 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$f")" -gt 10000 ]; then
    ok
  else
    fail "$png.png missing or not a real PNG"
  fi
done
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left"
finish
