#!/usr/bin/env bash
# One short run of each binary (and its peer) under memcheck: no invalid access, no uninitialised
# use, no definite leak. Skipped (77) without valgrind.
#   cli_valgrind.sh BIN_DIR
bindir=$1
source "$(dirname "$0")/cli_lib.sh"
if ! command -v valgrind >/dev/null; then
  skip_case "valgrind is not installed (scripts/install_deps.sh installs it)"
  finish
fi
prefix=shmb_cli_vg_$$_
vg=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite)
# binary | flags (a few seconds each under valgrind: one round of pool
# operations, 1 MB segments; every path still runs, owner and peer)
while IFS='|' read -r bin args; do
  # shellcheck disable=SC2086
  "${vg[@]}" "$bindir/$bin" --shm_prefix=/$prefix $args >"$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" -eq 0 ] && [ -n "$(table_rows "$work/out")" ] && ok \
    || fail "$bin $args under valgrind: exit $rc: $(grep -v ': warning: ' "$work/err" | head -40)"
done <<'EOF_CASES'
shm_allocation_bench|--num_iterations=5 --min_size_kb=4 --max_size_kb=8 --min_ops=2048 --allocator=posix,jemalloc --peer_process
shm_address_lookup_bench|--num_segments=10 --segment_size_mb=1 --min_time_ms=1 --num_lookups=4096 --peer_process
shm_transfer_bench|--transfer_size_kb=4 --max_transfer_size_mb=0.0625 --num_transfers=5 --time_per_size_ms=5 --peer_process
EOF_CASES
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left: $(ls /dev/shm | grep "^$prefix")"
finish
