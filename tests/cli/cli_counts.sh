#!/usr/bin/env bash
# The seed's CI-sized counts (--num_iterations=100, --num_lookups=1000, --num_transfers=100) time about
# that many operations per row, or a '# count:' note says why more. No timing is asserted.
#   cli_counts.sh BIN_DIR PYTHON
bindir=$1
source "$(dirname "$0")/cli_lib.sh"
prefix=shmb_cli_counts_$$_
common=(--shm_prefix=/$prefix)

# iterations of every row (the column named iterations) above $2 in table $1
over() {
  grep -v '^#' "$1" | awk -v n="$2" '!h {for (i = 1; i <= NF; i++) if ($i == "iterations") c = i; h = 1; next}
                                     $c > n {print}'
}

# --num_iterations=100: posix 100 per row; the pools one batch of the
# 2048-block working set, and the note saying so.
alloc=$bindir/shm_allocation_bench
"$alloc" "${common[@]}" --num_iterations=100 --max_size_kb=16 >"$work/a.txt" 2>"$work/a.err" \
  || fail "alloc: exit $?: $(cat "$work/a.err")"
[ -z "$(over "$work/a.txt" 2048)" ] && ok || fail "alloc: rows above one batch: $(over "$work/a.txt" 2048)"
[ -z "$(grep -v '^#' "$work/a.txt" | awk '$2 == "posix" && $6 != 100')" ] && ok || fail "alloc: posix rows not of 100"
unwrap "$work/a.txt" | grep -qF "# count: 100 operations per pool step asked; a batch is the working set of 2048 blocks" \
  && ok || fail "alloc: no count note"
# the default (no count given) keeps its minimum: no note
"$alloc" "${common[@]}" --max_size_kb=4 --allocator=arena >"$work/d.txt" 2>/dev/null || fail "alloc default: exit $?"
grep -q "^# count:" "$work/d.txt" && fail "alloc default has a count note" || ok
[ -n "$(over "$work/d.txt" 99999)" ] && ok || fail "alloc default: pools no longer time 100000 operations"
# paired: 6 rounds at least, said
"$alloc" "${common[@]}" --num_iterations=3 --max_size_kb=4 --systems=mooncake,flowipc_classic >"$work/p.txt" \
  2>/dev/null || fail "alloc paired: exit $?"
unwrap "$work/p.txt" | grep -q "^# count: .*the count asks for 1 rounds of alloc, free, alloc_reuse: 6 at least" \
  && ok || fail "alloc paired: no count note"
unwrap "$work/p.txt" | grep -qF "# rounds of register: 12, 12, 12 for buffers:10, 100, 1000;" && ok \
  || fail "alloc paired: not 12 rounds of register (9 at least, in whole blocks of 2 x 3)"

# --num_lookups=1000: one batch of 4096 per row (the hand-off its own batch of 1024)
lookup=$bindir/shm_address_lookup_bench
"$lookup" "${common[@]}" --num_lookups=1000 --num_segments=20 --segment_size_mb=1 >"$work/l.txt" 2>"$work/l.err" \
  || fail "lookup: exit $?: $(cat "$work/l.err")"
[ -z "$(over "$work/l.txt" 4096)" ] && ok || fail "lookup: rows above one batch: $(over "$work/l.txt" 4096)"
unwrap "$work/l.txt" | grep -qF "# count: num_lookups=1000: 1 batch of 4096 lookups per row" && ok || fail "lookup: no count note"
# --min_time_ms given too: num_lookups per batch again, no count note
"$lookup" "${common[@]}" --num_lookups=1000 --min_time_ms=1 --num_segments=20 --segment_size_mb=1 \
  --strategies=arithmetic >"$work/m.txt" 2>/dev/null || fail "lookup min_time_ms: exit $?"
grep -q "^# count:" "$work/m.txt" && fail "lookup --min_time_ms: a count note" || ok
# 20000: 4 batches of 4096 per row, never more than asked
"$lookup" "${common[@]}" --num_lookups=20000 --num_segments=20 --segment_size_mb=1 --strategies=linear,arithmetic \
  --handoff=false >"$work/k.txt" 2>/dev/null || fail "lookup 20000: exit $?"
[ -z "$(grep -v '^#' "$work/k.txt" | awk 'NR > 1 && $3 == "-" && $6 != 16384')" ] && ok \
  || fail "lookup 20000: rows not of 16384: $(table_rows "$work/k.txt")"

# --num_transfers=100: copies exactly 100; with --system the parts that move
# no bytes one batch at least, said in the note
transfer=$bindir/shm_transfer_bench
"$transfer" "${common[@]}" --num_transfers=100 --max_transfer_size_mb=0.0625 >"$work/t.txt" 2>"$work/t.err" \
  || fail "transfer: exit $?: $(cat "$work/t.err")"
[ -z "$(over "$work/t.txt" 100)" ] && ok || fail "transfer: rows above 100: $(over "$work/t.txt" 100)"
"$transfer" "${common[@]}" --num_transfers=100 --max_transfer_size_mb=0.015625 --system=mooncake --num_segments=10 \
  >"$work/s.txt" 2>"$work/s.err" || fail "transfer --system: exit $?: $(cat "$work/s.err")"
unwrap "$work/s.txt" | grep -qF "# count: num_transfers=100: request_path and translate time it in batches >= 100x the timer overhead" \
  && ok || fail "transfer --system: no count note"
# a row above 100 is one batch, which the count note explains: never the default's 31 batches
[ -z "$(over "$work/s.txt" 3100)" ] && ok || fail "transfer --system: rows of 31 batches: $(over "$work/s.txt" 3100)"

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left under /$prefix"
echo -n "cli_counts: "
finish
