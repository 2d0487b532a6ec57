#!/usr/bin/env bash
# Every table line within 120 characters ('#' lines wrapped at 100; a longer note shows "v" and
# follows the table as "# note NAME: NOTE"), paired runs' rows no longer than their header;
# -h is --help, which names no source path.
bindir=$1
srcdir=$(cd "$2" && pwd)
source "$(dirname "$0")/cli_lib.sh"
prefix=shmb_cli_width_$$_
max=120
runs=0

# Lines of table $1 over $max that its kind ($2: all or paired) must keep within, and as many
# "# note" lines as "v" notes.
too_wide() {
  awk -v max="$max" -v kind="$2" '
    /^# note / { notes++ }
    /^#/ { if (length($0) > max) print; next }
    !head { head = length($0); if (kind == "all" && length($0) > max) print; next }
    $NF == "v" { moved++ }
    kind == "all" && length($0) > max { print; next }
    kind == "paired" && length($0) > head { print }
    END { if (notes != moved) print notes + 0 " note lines for " moved + 0 " rows whose note is v" }' "$1"
}

run_widths() {
  local bin=$1 kind=$2
  shift 2
  runs=$((runs + 1))
  local out=$work/$runs.$bin.$kind.txt
  if ! "$bindir/$bin" --shm_prefix=/$prefix "$@" >"$out" 2>"$work/err"; then
    fail "$bin $*: exit $? ($(head -1 "$work/err"))"
    return
  fi
  local wide
  wide=$(too_wide "$out" "$kind")
  [ -z "$wide" ] && ok || fail "$bin $*: lines over $max characters:
$wide"
  grep -q '^#   ' "$out" && ok || fail "$bin $*: no wrapped '#' line (the flags line is long)"
}

alloc=(shm_allocation_bench --max_size_kb=8)
lookup=(shm_address_lookup_bench --num_lookups=1000 --min_time_ms=1 --segment_size_mb=1)
transfer=(shm_transfer_bench --max_transfer_size_mb=0.0078125)
for cmd in alloc lookup transfer; do
  declare -n args=$cmd
  run_widths "${args[@]:0:1}" all "${args[@]:1}"
  run_widths "${args[@]:0:1}" all "${args[@]:1}" --system=mooncake
  run_widths "${args[@]:0:1}" paired "${args[@]:1}" --systems=mooncake,flowipc_classic,flowipc_jemalloc
done
workload=(--workload=synthetic --requests=10 --model=deepseek_v3 --block_tokens=16 --max_request_mb=4)
run_widths shm_transfer_bench all "${workload[@]}"
run_widths shm_transfer_bench all "${workload[@]}" --system=flowipc_jemalloc
# A note after the table: the look-up kernels' "verified N/N" does not fit beside them.
grep -q '^# note shm_lookup/linear/segments:100: verified [0-9]*/[0-9]*$' "$work"/4.shm_address_lookup_bench.all.txt \
  && ok || fail "shm_address_lookup_bench: no note after the table"

for bin in shm_allocation_bench shm_address_lookup_bench shm_transfer_bench; do
  "$bindir/$bin" -h >"$work/h" 2>"$work/herr" && grep -q "^$bin: .*Usage: $bin " <(tr '\n' ' ' <"$work/h") \
    && [ ! -s "$work/herr" ] && ok || fail "$bin -h: $(head -2 "$work/h" "$work/herr")"
  "$bindir/$bin" --help >"$work/help" && cmp -s "$work/h" "$work/help" && ok || fail "$bin: -h is not --help"
  ! grep -F "$srcdir/" "$work/help" && grep -q "^  Flags from $bin.cc:$" "$work/help" && ok \
    || fail "$bin --help names the source tree or no flags file"
done

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left under /$prefix"
echo "cli_width: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
