#!/usr/bin/env bash
# Paired runs (--systems) of the allocation and lookup binaries: each system's and ratio rows in table
# and JSON, refusals, nothing left (also after Ctrl-C). Names, fields and counts only.
#   cli_paired.sh BIN_DIR PYTHON
bindir=$1
python=${2:-/usr/bin/python3}
source "$(dirname "$0")/cli_lib.sh"
prefix=shmb_cli_paired_$$_
common=(--shm_prefix=/$prefix)
three=--systems=mooncake,flowipc_classic,flowipc_jemalloc

# ---- shm_allocation_bench ----
alloc=$bindir/shm_allocation_bench
# 20 rounds of each (--num_iterations; --min_ops / --working_set), 24 in whole blocks
aquick=("${common[@]}" --num_iterations=20 --min_size_kb=4 --max_size_kb=8 --min_ops=1280 --working_set=64)

# the table: per size and question (register per N, alloc, free, alloc_reuse,
# alloc_bare, free_bare) a row per system then a ratio row per system against
# mooncake, control included
"$alloc" "${aquick[@]}" "$three" >"$work/a.txt" 2>"$work/a.err" && ok || fail "alloc table: $(cat "$work/a.err")"
[ "$(table_rows "$work/a.txt" | wc -l)" -eq $((2 * 8 * 7)) ] && ok || fail "alloc table: $(table_rows "$work/a.txt" | wc -l) rows"
for s in mooncake flowipc_classic flowipc_jemalloc mooncake_control flowipc_classic/vs:mooncake \
         flowipc_jemalloc/vs:mooncake mooncake_control/vs:mooncake; do
  [ "$(table_rows "$work/a.txt" | awk -v s="$s" '$(NF-1) == s || $(NF-3) == s || $0 ~ " " s " "' | wc -l)" -eq 16 ] \
    && ok || fail "alloc table: not 16 rows of $s"
done
# 20 asked: register 9 at least, alloc 20 / (1280 / 64) rounds; in whole blocks of 2 x 4 systems
for line in "# paired run (--systems): mooncake, flowipc_classic, flowipc_jemalloc, mooncake_control" \
            "# baseline: mooncake; control: mooncake_control" \
            "# rounds of register: 16, 16, 16 for buffers:10, 100, 1000; " \
            "# rounds of alloc, free, alloc_reuse and of alloc_bare, free_bare: 24; each system one round of 64 blocks" \
            "# alloc, free: bipc_object, " "# alloc_bare, free_bare: offset_bare, "; do
  unwrap "$work/a.txt" | grep -qF -- "$line" && ok || fail "alloc header lacks: $line"
done
grep -q '^# system:' "$work/a.txt" && fail "alloc paired table has a system line" || ok

# JSON: names, system, and a ratio row's fields
"$alloc" "${aquick[@]}" "$three" --format=json >"$work/a.json" 2>"$work/a.err" && ok || fail "alloc json: $(cat "$work/a.err")"
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
names = [r["name"] for r in b]
systems = ["mooncake", "flowipc_classic", "flowipc_jemalloc", "mooncake_control"]
for kb in (4, 8):
    keys = ["register/size_kb:%d/buffers:%d" % (kb, n) for n in (10, 100, 1000)]
    keys += ["%s/size_kb:%d" % (step, kb) for step in ("alloc", "free", "alloc_reuse", "alloc_bare", "free_bare")]
    for key in keys:
        for s in systems:
            n = "shm_alloc/%s/system:%s" % (key, s)
            assert n in names, n
            if s != "mooncake":
                assert n + "/vs:mooncake" in names, n
for r in b:
    assert r["system"] in systems, r
    if "/vs:" in r["name"]:
        assert r["vs"] == "mooncake", r
        for f in ("ratio", "ratio_lo", "ratio_hi", "saved_ns", "p_value", "rounds", "verdict"):
            assert f in r, (r["name"], f)
        assert r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"], r
        assert r["rounds"] == (16 if "/register/" in r["name"] else 24), r  # in whole blocks of 2 x 4 systems
    else:
        assert "ratio" not in r, r
' "$work/a.json" && ok || fail "alloc json"

# a --system run and the paired run pair row by row: the same names, the
# paired one with /system:NAME
"$alloc" "${aquick[@]}" --system=flowipc_classic --format=json >"$work/s.json" 2>"$work/a.err" \
  && ok || fail "alloc --system json: $(cat "$work/a.err")"
"$python" -c '
import json, sys
one = [r["name"] for r in json.load(open(sys.argv[1]))["benchmarks"]]
paired = [r["name"] for r in json.load(open(sys.argv[2]))["benchmarks"]]
want = [n[: -len("/system:flowipc_classic")] for n in paired if n.endswith("/system:flowipc_classic")]
assert one == want, (one, want)
' "$work/s.json" "$work/a.json" && ok || fail "alloc: --system and --systems rows do not pair"

# two systems: the control's ratio row is there too
"$alloc" "${aquick[@]}" --max_size_kb=4 --systems=flowipc_classic,mooncake >"$work/a2.txt" 2>"$work/a.err" \
  && ok || fail "alloc two systems: $(cat "$work/a.err")"
grep -q 'flowipc_classic_control/vs:flowipc_classic' "$work/a2.txt" && ok || fail "alloc: no control ratio row"
[ "$(table_rows "$work/a2.txt" | wc -l)" -eq $((8 * 5)) ] && ok || fail "alloc two systems: rows"

# what cannot be paired: one line naming the flag, exit 2
expect_usage_error "$alloc" systems "${common[@]}" --systems=mooncake
expect_usage_error "$alloc" systems "${common[@]}" --systems=mooncake,mooncake
expect_usage_error "$alloc" systems "${common[@]}" --systems=mooncake,nope
expect_usage_error "$alloc" systems "${common[@]}" "$three" --system=mooncake
expect_usage_error "$alloc" repetitions "${common[@]}" "$three" --repetitions=2
expect_usage_error "$alloc" systems "${common[@]}" "$three" --allocator=ready
expect_usage_error "$alloc" allocator "${common[@]}" "$three" --allocator=posix
expect_usage_error "$alloc" threads "${common[@]}" "$three" --threads=2
expect_usage_error "$alloc" peer_process "${common[@]}" "$three" --peer_process
expect_usage_error "$alloc" touch "${common[@]}" "$three" --touch
expect_usage_error "$alloc" measure_mmap_only "${common[@]}" "$three" --measure_mmap_only
expect_usage_error "$alloc" cleanup "${common[@]}" "$three" --cleanup=false
expect_usage_error "$alloc" backing "${common[@]}" "$three" --backing=memfd
# mooncake_upstream (docs/upstream.md): without upstream code one line, exit 2, saying
# how to build it; with it, its rows are the bare allocator's alone
lookup=$bindir/shm_address_lookup_bench
if "$alloc" --help | grep -q '^upstream: built against Mooncake'; then
  "$alloc" "${aquick[@]}" --max_size_kb=4 --systems=mooncake,mooncake_upstream >"$work/up.txt" 2>"$work/a.err" \
    && ok || fail "alloc with mooncake_upstream: $(cat "$work/a.err")"
  [ "$(table_rows "$work/up.txt" | grep -c ' mooncake_upstream')" -eq 4 ] && ok || fail "alloc: not 4 mooncake_upstream rows"
  expect_usage_error "$lookup" system "${common[@]}" --system=mooncake_upstream
  expect_usage_error "$bindir/shm_transfer_bench" system "${common[@]}" --system=mooncake_upstream
else
  for up in --systems=mooncake,mooncake_upstream --system=mooncake_upstream; do
    f=${up#--}
    expect_usage_error "$alloc" "${f%%=*}" "${common[@]}" "$up"
    grep -qF "not built: configure with -DSHMB_MOONCAKE_SOURCE=PATH, see docs/upstream.md" "$work/err" \
      && ok || fail "alloc $up: $(cat "$work/err")"
    expect_usage_error "$bindir/shm_transfer_bench" "${f%%=*}" "${common[@]}" "$up"
    grep -qF "not built: configure with -DSHMB_MOONCAKE_SOURCE=PATH" "$work/err" && ok || fail "transfer $up: $(cat "$work/err")"
  done
  expect_usage_error "$lookup" system "${common[@]}" --system=mooncake_upstream
fi
expect_usage_error "$alloc" systems "${common[@]}" --systems=mooncake_upstream,mooncake
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "alloc: segments left"

# Ctrl-C midway: nothing left
expect_signal_cleanup INT 5 "$prefix" "$alloc" "${common[@]}" "$three" --num_iterations=100000 --max_size_kb=4

# ---- shm_address_lookup_bench ----
lookup=$bindir/shm_address_lookup_bench
lquick=("${common[@]}" --num_segments=20 --segment_size_mb=1 --num_lookups=4096 --min_time_ms=1)

# translation in one process: a row per system, a ratio row per system
"$lookup" "${lquick[@]}" "$three" >"$work/l.txt" 2>"$work/l.err" && ok || fail "lookup table: $(cat "$work/l.err")"
[ "$(table_rows "$work/l.txt" | wc -l)" -eq 7 ] && ok || fail "lookup table: $(table_rows "$work/l.txt" | wc -l) rows"
grep -q 'mooncake_control/vs:mooncake' "$work/l.txt" && ok || fail "lookup: no control ratio row"
for line in "# paired run (--systems): mooncake, flowipc_classic, flowipc_jemalloc, mooncake_control" \
            "# paired without --peer_process: translation only" "# paired: the hand-off rows"; do
  grep -qF -- "$line" "$work/l.txt" && ok || fail "lookup header lacks: $line"
done
table_rows "$work/l.txt" | grep -Eq ' (handoff|pool_once|attach) ' && fail "lookup: hand-off or attach rows in a translation run" || ok

# the first attach across two processes, JSON: the receivers' totals and their ratios
"$lookup" "${lquick[@]}" "$three" --peer_process --format=json >"$work/l.json" 2>"$work/l.err" \
  && ok || fail "lookup attach json: $(cat "$work/l.err")"
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
names = [r["name"] for r in b]
want = ["shm_lookup/attach/segments:20/system:" + s
        for s in ("mooncake", "flowipc_classic", "flowipc_jemalloc", "mooncake_control")]
want += [n + "/vs:mooncake" for n in want[1:]]
assert names == want, names
for r in b[:4]:
    assert r["label"].startswith("receiver\x27s total: "), r
    assert r["iterations"] == 24, r
for r in b[4:]:
    for f in ("ratio", "ratio_lo", "ratio_hi", "saved_ns", "p_value", "verdict"):
        assert f in r, (r["name"], f)
    assert r["rounds"] == 24 and r["vs"] == "mooncake", r
' "$work/l.json" && ok || fail "lookup attach json"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "lookup: segments left"
[ "$(peer_left "$prefix")" -eq 0 ] && ok || fail "lookup: a peer left"

expect_usage_error "$lookup" strategies "${common[@]}" "$three" --strategies=mooncake,linear
expect_usage_error "$lookup" sweep_segments "${common[@]}" "$three" --sweep_segments=1,10
expect_usage_error "$lookup" threads "${common[@]}" "$three" --threads=2
expect_usage_error "$lookup" systems "${common[@]}" "$three" --system=mooncake
expect_usage_error "$lookup" repetitions "${common[@]}" "$three" --repetitions=3
expect_usage_error "$lookup" systems "${common[@]}" --systems=flowipc_classic

# Ctrl-C midway through the paired first attach: nothing left, no peer
expect_signal_cleanup INT 5 "$prefix" "$lookup" "${common[@]}" "$three" --peer_process --num_segments=3000 \
  --segment_size_mb=1
[ "$(peer_left "$prefix")" -eq 0 ] && ok || fail "lookup: a peer left after SIGINT"

finish
