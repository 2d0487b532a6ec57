#!/usr/bin/env bash
# The output's layout (header keys, columns, row keys and value shapes, notes, JSON names) of each
# binary's default, --system and --peer_process runs, held against a committed reference.
#   cli_layout.sh BIN_DIR SOURCE_DIR [--update]  (--update rewrites the reference)
bindir=$1
srcdir=$2
update=${3:-}
source "$(dirname "$0")/cli_lib.sh"
refdir=$srcdir/tests/layout
prefix=shmb_cli_layout_$$_

# The layout of a table on stdin: facts of the machine and the build reduced
# to their key; in rows, columns from `iterations` on have numbers as N (a
# figure shortened to a power of ten, 1.23e6, too).
table_layout() {
  awk '
    /^# (date|host|cpu|caches|kernel|clocksource|cpu governor|transparent hugepages|\/dev\/shm|glibc|timer overhead|build|commit|pinned|load):/ {
      sub(/:.*/, ": *"); print; next }
    /^#/ { gsub(/[0-9]+(\.[0-9]+)?/, "N"); print; next }
    !cols { cols = 1; for (i = 1; i <= NF; i++) if ($i == "iterations") first = i; print; next }
    { line = $1
      for (i = 2; i <= NF; i++) {
        f = $i
        if (i >= first) gsub(/[0-9]+(\.[0-9]+)?(e[0-9]+)?/, "N", f)
        line = line " " f }
      print line }'
}

# The row names of a JSON file, in order.
json_names() {
  grep -o '"name": *"[^"]*"' "$1" | sed 's/"name": *//'
}

run_case() {
  local name=$1 bin=$2
  shift 2
  local out=$work/$name
  if ! "$bindir/$bin" --shm_prefix=/$prefix "$@" --json_out="$out.json" >"$out.txt" 2>"$out.err"; then
    fail "$name: exit $? ($(head -1 "$out.err"))"
    return
  fi
  { unwrap "$out.txt" | table_layout; echo "== json"; json_names "$out.json"; } >"$out.layout"
  if [ "$update" = --update ]; then
    cp "$out.layout" "$refdir/$name.layout"
    ok
  elif diff -u "$refdir/$name.layout" "$out.layout" >"$out.diff"; then
    ok
  else
    fail "$name: layout differs from tests/layout/$name.layout:"
    head -40 "$out.diff" >&2
  fi
}

alloc=(--num_iterations=20 --min_ops=10240)  # 5 pool rounds, not 49: the same rows
lookup=(--num_lookups=1000 --min_time_ms=1 --segment_size_mb=1)  # 1 MB: the peer maps 100 x 1 MB, not 6.4 GB
transfer=(--num_transfers=5 --time_per_size_ms=10)
run_case alloc_default shm_allocation_bench "${alloc[@]}"
run_case alloc_system shm_allocation_bench "${alloc[@]}" --system=mooncake
run_case alloc_peer shm_allocation_bench "${alloc[@]}" --peer_process
run_case lookup_default shm_address_lookup_bench "${lookup[@]}"
run_case lookup_system shm_address_lookup_bench "${lookup[@]}" --system=flowipc_jemalloc
run_case lookup_peer shm_address_lookup_bench "${lookup[@]}" --peer_process
run_case transfer_default shm_transfer_bench "${transfer[@]}"
run_case transfer_system shm_transfer_bench "${transfer[@]}" --system=mooncake
run_case transfer_peer shm_transfer_bench "${transfer[@]}" --peer_process

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left under /$prefix"
echo "cli_layout: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
