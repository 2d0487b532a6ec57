#!/usr/bin/env bash
# The output fits a terminal, and help is plain: each binary's default table,
# with --system=mooncake and with --systems, has its '#' lines wrapped within
# 120 characters (continuations start "#   "); in the default and --system
# runs the column header and every row without a note fit 120 characters too
# (a note is free text, last). -h is --help; --help names no path of the
# source tree.
#   cli_width.sh BIN_DIR SOURCE_DIR
bindir=$1
srcdir=$(cd "$2" && pwd)
source "$(dirname "$0")/cli_lib.sh"
prefix=shmb_cli_width_$$_
max=120

# Lines of table $1 over $max characters that its kind ($2: all or hash) must
# keep within: hash, the '#' lines; all, also the header and rows whose note
# is '-' (the note column starts where the header's "note" does).
too_wide() {
  awk -v max="$max" -v kind="$2" '
    /^#/ { if (length($0) > max) print; next }
    kind != "all" { next }
    !head { head = 1; note = index($0, " note") + 1; if (length($0) > max) print; next }
    length($0) > max && substr($0, note) == "-" { print }' "$1"
}

run_widths() {
  local bin=$1 kind=$2
  shift 2
  local out=$work/$bin.$kind.txt
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
transfer=(shm_transfer_bench --max_transfer_size_kb=8)
for cmd in alloc lookup transfer; do
  declare -n args=$cmd
  run_widths "${args[@]:0:1}" all "${args[@]:1}"
  run_widths "${args[@]:0:1}" all "${args[@]:1}" --system=mooncake
  run_widths "${args[@]:0:1}" hash "${args[@]:1}" --systems=mooncake,flowipc_classic,flowipc_jemalloc
done

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
