#!/usr/bin/env bash
# The original README's workflow: --system=mooncake and a Flow-IPC run into two files, with the same
# header layout and row keys in order, so that diff -u and compare.sh pair every row.
#   cli_system.sh BIN_DIR SOURCE_DIR
bindir=$1
srcdir=$2
source "$(dirname "$0")/cli_lib.sh"
prefix=shmb_cli_system_$$_
common=(--shm_prefix=/$prefix --seed=3)

declare -A args=(
  [shm_allocation_bench]="--num_iterations=20 --min_size_kb=4 --max_size_kb=8 --touch"
  [shm_address_lookup_bench]="--sweep_segments=1,10,100 --num_lookups=1000 --min_time_ms=2"
  [shm_transfer_bench]="--max_transfer_size_mb=1 --num_transfers=50 --time_per_size_ms=20"
)
# Key columns of each table: the columns before `iterations`.
keys() {
  table_rows "$1" | awk -v n="$2" '{k = $1; for (i = 2; i <= n; i++) k = k " " $i; print k}'
}
# The # lines with their figures taken out: what the layout of the header is
# (the notes after the table are the rows', which differ between systems).
layout() {
  unwrap "$1" | grep '^#' | grep -v '^# note ' | sed 's/:.*//'
  grep -v '^#' "$1" | head -1
}

for bench in "${!args[@]}"; do
  bin=$bindir/$bench
  read -r -a a <<<"${args[$bench]}"
  for system in mooncake flowipc_classic flowipc_jemalloc; do
    "$bin" "${common[@]}" "${a[@]}" --system=$system >"$work/$system.txt" 2>"$work/err" \
      && ok || fail "$bench --system=$system: $(cat "$work/err")"
    grep -qx "# system: $system" "$work/$system.txt" && ok || fail "$bench --system=$system: no system line"
    table_rows "$work/$system.txt" | grep -q -e mooncake -e flowipc -e posix -e bipc -e jemalloc \
      && fail "$bench --system=$system: a row names a system" || ok
  done
  base=$work/mooncake.txt
  ncols=$(grep -v '^#' "$base" | head -1 | awk '{for (i = 1; i <= NF; i++) if ($i == "iterations") print i - 1}')
  [ -n "$ncols" ] && ok || fail "$bench: no iterations column"
  rows=$(table_rows "$base" | wc -l)
  [ "$rows" -gt 0 ] && ok || fail "$bench: no rows"
  for system in flowipc_classic flowipc_jemalloc; do
    other=$work/$system.txt
    # the same header layout: only the figures (and the system) differ
    diff <(layout "$base") <(layout "$other") >/dev/null && ok || fail "$bench: header layout differs for $system"
    # the same keys in the same order
    diff <(keys "$base" "$ncols") <(keys "$other" "$ncols") >"$work/keys.diff" \
      && ok || fail "$bench: row keys differ for $system: $(head -5 "$work/keys.diff")"
    # diff -u shows each data row as a -/+ pair: as many - as + lines, one per row at most
    diff -u "$base" "$other" >"$work/u.diff"
    minus=$(grep -c '^-[^-#]' "$work/u.diff")
    plus=$(grep -c '^+[^+#]' "$work/u.diff")
    [ "$minus" -eq "$plus" ] && [ "$minus" -le "$rows" ] && [ "$minus" -gt 0 ] \
      && ok || fail "$bench: diff -u has $minus - and $plus + rows of $rows"
    # compare.sh prints the gain of every row
    "$srcdir/scripts/compare.sh" "$base" "$other" >"$work/gain" 2>"$work/gain.err" \
      && ok || fail "$bench: compare.sh failed: $(cat "$work/gain.err")"
    [ "$(grep -c '^shm_' "$work/gain")" -eq "$rows" ] \
      && ok || fail "$bench: compare.sh printed $(grep -c '^shm_' "$work/gain") rows for $rows"
  done
  [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "$bench: segments left"
done

# allocation: each system answers the same questions under the same steps: no dash in any of them
for system in mooncake flowipc_classic flowipc_jemalloc; do
  "$bindir/shm_allocation_bench" "${common[@]}" ${args[shm_allocation_bench]} --system=$system \
    >"$work/a_$system.txt" 2>"$work/err" || fail "allocation --system=$system: $(cat "$work/err")"
  [ "$(table_rows "$work/a_$system.txt" | awk '$1 ~ /^4(\/|$)/ {printf "%s ", $3}')" \
    = "register register register alloc free alloc_reuse alloc_bare free_bare touch touch_reuse " ] && ok \
    || fail "allocation --system=$system steps: $(table_rows "$work/a_$system.txt" | awk '{print $3}' | tr '\n' ' ')"
  table_rows "$work/a_$system.txt" | awk '$6 == "-" {bad = 1} END {exit bad}' && ok \
    || fail "allocation --system=$system: a step unmeasured: $(table_rows "$work/a_$system.txt" | awk '$6 == "-"')"
done
grep -q '^# alloc, free: offset, Mooncake Store.s OffsetBufferAllocator' "$work/a_mooncake.txt" \
  && grep -q '^# alloc, free: bipc_object, ' "$work/a_flowipc_classic.txt" \
  && grep -q '^# alloc, free: jemalloc_object, ' "$work/a_flowipc_jemalloc.txt" \
  && grep -q '^# alloc_bare, free_bare: offset_bare, ' "$work/a_mooncake.txt" \
  && grep -q '^# alloc_bare, free_bare: bipc, ' "$work/a_flowipc_classic.txt" \
  && grep -q '^# alloc_bare, free_bare: jemalloc, ' "$work/a_flowipc_jemalloc.txt" \
  && ok || fail "allocation --system: no note of each system's object layer and bare allocator"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "allocation --system runs left segments"

# The header names the commit the binary was built from (a git checkout), and
# the build; the JSON context carries the same.
if head=$(git -C "$srcdir" rev-parse HEAD 2>/dev/null); then
  "$bindir/shm_address_lookup_bench" "${common[@]}" --strategies=arithmetic --num_lookups=1000 \
    --min_time_ms=1 --json_out="$work/ctx.json" >"$work/ctx.txt" 2>"$work/err" && ok || fail "context run: $(cat "$work/err")"
  commit=$(sed -n 's/^# commit: //p' "$work/ctx.txt")
  case "$commit" in
    "$head"|"$head-dirty") ok ;;
    *) fail "# commit: '$commit', expected $head (rebuild after committing?)" ;;
  esac
  grep -Eq '^# build: [A-Za-z]+; C: .+, C\+\+: .+; flags: ' <(unwrap "$work/ctx.txt") && ok || fail "no # build: line"
  grep -q "\"git_commit\": \"$commit\"" "$work/ctx.json" && ok || fail "JSON context has no git_commit $commit"
fi

# Mooncake pairs with the Flow-IPC runs: the same row keys, only the system line differs
for bench in shm_address_lookup_bench shm_transfer_bench; do
  read -r -a a <<<"${args[$bench]}"
  "$bindir/$bench" "${common[@]}" "${a[@]}" --system=mooncake >"$work/tent.txt" 2>"$work/err" \
    && ok || fail "$bench --system=mooncake: $(cat "$work/err")"
  "$bindir/$bench" "${common[@]}" "${a[@]}" --system=flowipc_jemalloc >"$work/fj.txt" 2>/dev/null \
    || fail "$bench --system=flowipc_jemalloc"
  ncols=$(grep -v '^#' "$work/tent.txt" | head -1 | awk '{for (i = 1; i <= NF; i++) if ($i == "iterations") print i - 1}')
  diff <(keys "$work/tent.txt" "$ncols") <(keys "$work/fj.txt" "$ncols") >/dev/null && ok \
    || fail "$bench: row keys of mooncake and flowipc_jemalloc differ"
  grep -qx "# system: mooncake" "$work/tent.txt" && ok || fail "$bench: mooncake's system line"
  grep -qx "# system: flowipc_jemalloc" "$work/fj.txt" && ok || fail "$bench: flowipc_jemalloc's system line"
  [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "$bench --system: segments left"
done

# --system selects the path: an explicit choice beside it is an error
expect_usage_error "$bindir/shm_allocation_bench" allocator --system=mooncake --allocator=arena
expect_usage_error "$bindir/shm_address_lookup_bench" strategies --system=mooncake --strategies=linear
expect_usage_error "$bindir/shm_transfer_bench" cold --system=mooncake --cold
expect_usage_error "$bindir/shm_transfer_bench" system --system=posix

finish
