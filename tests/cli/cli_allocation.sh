#!/usr/bin/env bash
# shm_allocation_bench as a user runs it: flags, errors, formats, clean-up,
# Ctrl-C, and Google Benchmark's compare.py on its JSON.
#   cli_allocation.sh BIN_DIR PYTHON
bindir=$1
python=${2:-/usr/bin/python3}
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_allocation_bench
prefix=shmb_cli_alloc_$$_
common=(--shm_prefix=/$prefix)
# --min_ops=10240: five rounds of the 2048-block working set per pool step, so
# that a p50 is not round 0's page faults (the default, 100000, is 49 rounds
# and most of a run's time)
quick=("${common[@]}" --num_iterations=20 --min_size_kb=4 --max_size_kb=16 --min_ops=10240)

# --version and --helpshort
out=$("$bin" --version 2>&1)
[ $? -eq 0 ] && [[ "$out" == *"shm_allocation_bench version 0.1.0"* ]] && ok || fail "--version: $out"
"$bin" --helpshort >"$work/help" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then fail "--helpshort exit $rc"; fi
tr -s ' \n' ' ' <"$work/help" | sed 's/ -\([a-z_]*\) (/\n\1 (/g' >"$work/help1"
for f in "num_iterations int64 1000" "min_size_kb int64 4" "max_size_kb int64 1024" "min_ops int64 100000" "working_set int64 2048" \
         "measure_mmap_only bool false" "cleanup bool true" 'allocator string "posix,offset,arena,bipc,jemalloc,offset_bare,bipc_object,jemalloc_object"' \
         "touch bool false" 'format string "table"' "repetitions int32 1" "seed uint64 42" \
         'shm_prefix string "/mooncake_bench_"' "cpu int32 -1" "threads int32 1" \
         "peer_process bool false"; do
  read -r name type value <<<"$f"
  grep -q "^$name (.*type: $type default: $value *\$" "$work/help1" && ok || fail "--helpshort: no $name of $type with default $value"
done
grep -q logtostderr "$work/help" && fail "--helpshort lists glog's flags" || ok

# bad values: exit 2, one line naming the flag
expect_usage_error "$bin" num_iterations --num_iterations=0
expect_usage_error "$bin" num_iterations --num_iterations=-5
expect_usage_error "$bin" num_iterations --num_iterations=99999999999999999999
expect_usage_error "$bin" num_iterations --num_iterations=abc
expect_usage_error "$bin" min_size_kb --min_size_kb=0
expect_usage_error "$bin" max_size_kb --max_size_kb=-1
expect_usage_error "$bin" max_size_kb --max_size_kb=9223372036854775807
expect_usage_error "$bin" min_ops --min_ops=0
expect_usage_error "$bin" min_ops --min_ops=8388609
expect_usage_error "$bin" min_ops --min_ops=many
expect_usage_error "$bin" min_size_kb --min_size_kb=64 --max_size_kb=8
expect_usage_error "$bin" allocator --allocator=tcmalloc
expect_usage_error "$bin" allocator --allocator=
expect_usage_error "$bin" allocator --allocator=posix,posix
expect_usage_error "$bin" format --format=xml
expect_usage_error "$bin" repetitions --repetitions=0
expect_usage_error "$bin" cpu --cpu=4096
expect_usage_error "$bin" shm_prefix --shm_prefix=no_slash
expect_usage_error "$bin" shm_prefix --shm_prefix=/a/b
expect_usage_error "$bin" cleanup --cleanup=maybe
expect_usage_error "$bin" bogus --bogus=1
expect_usage_error "$bin" max_size_kb --working_set=100000 --max_size_kb=1048576  # arena over 16 TiB
expect_usage_error "$bin" working_set --working_set=0
expect_usage_error "$bin" working_set --working_set=100000001
expect_usage_error "$bin" working_set --working_set=8 --peer_process  # over 4096 rounds of --min_ops
expect_usage_error "$bin" measure_mmap_only --system=mooncake --measure_mmap_only
expect_usage_error "$bin" threads --threads=0
expect_usage_error "$bin" threads --threads=-2
expect_usage_error "$bin" threads --threads=257
expect_usage_error "$bin" threads --threads=two
expect_usage_error "$bin" peer_process --peer_process=perhaps
expect_usage_error "$bin" threads --peer_process --threads=2
expect_usage_error "$bin" measure_mmap_only --peer_process --measure_mmap_only
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after usage errors"

# the three formats carry the same rows
"$bin" "${quick[@]}" --format=table >"$work/t.txt" 2>"$work/t.err" || fail "table run: $(cat "$work/t.err")"
"$bin" "${quick[@]}" --format=csv >"$work/t.csv" 2>/dev/null || fail "csv run"
"$bin" "${quick[@]}" --format=json >"$work/a.json" 2>/dev/null || fail "json run"
"$bin" "${quick[@]}" --format=json --seed=7 >"$work/b.json" 2>/dev/null || fail "json run 2"
rows=$(table_rows "$work/t.txt" | wc -l)
[ "$rows" -eq 102 ] && ok || fail "table has $rows rows, expected 102 (3 sizes x (6 posix + 7 pools x 4))"
[ "$(($(wc -l <"$work/t.csv") - 1))" -eq "$rows" ] && ok || fail "csv rows differ from the table"
grep -q '^#' "$work/t.csv" && fail "csv has # lines" || ok
names=$("$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["context"]["library_build_type"] == "release"
for b in d["benchmarks"]:
    assert b["time_unit"] == "ns" and b["run_type"] == "iteration", b
    assert b["real_time"] > 0, b
print("\n".join(b["name"] for b in d["benchmarks"]))' "$work/a.json")
[ $? -eq 0 ] && ok || fail "json does not parse"
[ "$(echo "$names" | wc -l)" -eq "$rows" ] && ok || fail "json rows differ from the table"
for n in shm_alloc/posix/shm_open/size_kb:4 shm_alloc/posix/total/size_kb:16 \
         shm_alloc/posix/cleanup/size_kb:8 shm_alloc/arena/register/size_kb:4 \
         shm_alloc/offset/register/size_kb:4 shm_alloc/offset/alloc/size_kb:16 shm_alloc/offset/free/size_kb:8 \
         shm_alloc/arena/alloc/size_kb:16 shm_alloc/arena/free/size_kb:16 \
         shm_alloc/arena/alloc_reuse/size_kb:4 shm_alloc/posix/close/size_kb:8 \
         shm_alloc/bipc/alloc/size_kb:16 shm_alloc/jemalloc/free/size_kb:4 \
         shm_alloc/jemalloc/alloc_reuse/size_kb:8; do
  echo "$names" | grep -qx "$n" && ok || fail "json lacks $n"
  grep -q "^$n," "$work/t.csv" && ok || fail "csv lacks $n"
done
# a block against offset's block (the arena, a reference point, beats it), a pool against createSharedMemory
table_rows "$work/t.txt" | awk '$2=="arena" && $3 ~ /^(alloc|free)$/ && $12+0 <= 1 {bad=1} END {exit bad}' \
  && ok || fail "arena rows lack a speedup above 1 against offset"
table_rows "$work/t.txt" | awk '$2=="offset" && $3 ~ /^(alloc|free|alloc_reuse)$/ && $12 != "-" {bad=1}
                                $2!="posix" && $3=="register" && $12 == "-" {bad=1} END {exit bad}' \
  && ok || fail "offset's block rows carry a speedup, or a register row lacks one"
table_rows "$work/t.txt" | grep -q jemalloc_tcache && fail "jemalloc_tcache runs by default" || ok
# jemalloc_tcache by name: its note gives the cache's limits against the working set
"$bin" "${quick[@]}" --allocator=jemalloc_tcache --working_set=8 >"$work/tc.txt" 2>/dev/null || fail "tcache run"
grep -q '^# jemalloc_tcache: the thread cache holds sizes <= [0-9]* KiB (arenas.tcache_max), blocks per size class (arenas.bin.N.nregs, opt.tcache_nslots_\*): 4 KB [0-9]*, 8 KB [0-9]*, 16 KB [0-9]*; a working set of 8 ' <(unwrap "$work/tc.txt") \
  && ok || fail "no tcache note: $(grep '^# jemalloc_tcache' <(unwrap "$work/tc.txt"))"
table_rows "$work/tc.txt" | awk '$3 == "alloc" && $6 != 10240 {bad = 1} END {exit bad}' \
  && ok || fail "--working_set=8: alloc rows not of 10240 operations"
[ "$(table_rows "$work/t.txt" | awk '$2!="posix" && $3 ~ /^(alloc|free|alloc_reuse)$/ && $6 != 10240' | wc -l)" -eq 0 ] \
  && ok || fail "--min_ops=10240: pool rows not of 5 rounds x 2048: $(table_rows "$work/t.txt" | awk '$3=="alloc"')"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after runs"

# repetitions add aggregates
"$bin" "${quick[@]}" --allocator=arena --repetitions=3 --format=json >"$work/r.json" 2>/dev/null
"$python" -c '
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"]
aggs = [x for x in b if x["run_type"] == "aggregate"]
assert len(aggs) == 4 * len(b) // 7, len(aggs)
assert {x["aggregate_name"] for x in aggs} == {"mean", "median", "stddev", "cv"}
' "$work/r.json" && ok || fail "repetitions: aggregates wrong"

# compare.py on real runs
compare=/usr/share/benchmark/compare.py
if [ -f "$compare" ] && "$python" -c 'import scipy' 2>/dev/null; then
  "$python" "$compare" benchmarks "$work/a.json" "$work/b.json" >"$work/cmp" 2>&1 \
    && grep -q "shm_alloc/arena/alloc/size_kb:16" "$work/cmp" && ok || fail "compare.py benchmarks: $(tail -3 "$work/cmp")"
  "$python" "$compare" filters "$work/a.json" posix/total arena/alloc >"$work/cmpf" 2>&1 \
    && grep -q "size_kb:16" "$work/cmpf" && ok || fail "compare.py filters: $(tail -3 "$work/cmpf")"
  "$python" "$compare" -a benchmarks "$work/r.json" "$work/r.json" >"$work/cmpr" 2>&1 \
    && grep -q "_mean" "$work/cmpr" && ok || fail "compare.py with repetitions: $(tail -3 "$work/cmpr")"
else
  fail "compare.py or scipy missing: run scripts/install_deps.sh"
fi

# --measure_mmap_only and --touch
"$bin" "${quick[@]}" --measure_mmap_only --touch >"$work/m.txt" 2>/dev/null || fail "mmap_only run"
table_rows "$work/m.txt" | awk '$2=="posix"{print $3}' | sort -u | tr '\n' ' ' | grep -qx "cleanup mmap touch " \
  && ok || fail "mmap_only rows: $(table_rows "$work/m.txt" | awk '{print $3}' | sort -u | tr '\n' ' ')"

# the notes say what each mode times and what the speedup compares
grep -q '^# posix (Mooncake.s registration cost, paid once per registered buffer, never per block: createSharedMemory): total = shm_open + ftruncate + mmap + close; cleanup = munmap + shm_unlink' <(unwrap "$work/t.txt") \
  && grep -q '^# speedup = Mooncake.s p50 / the row.s p50: alloc, free, alloc_reuse, touch, touch_reuse (per block) against the same step of Mooncake.s like (the object layers bipc_object, jemalloc_object against offset; the allocators bipc, jemalloc, jemalloc_tcache and the arena against offset_bare); register (per pool) against posix total' <(unwrap "$work/t.txt") \
  && grep -q '^# offset (system: mooncake): Mooncake Store.s OffsetBufferAllocator' <(unwrap "$work/t.txt") \
  && ok || fail "default notes: $(grep '^# \(posix\|speedup\)' <(unwrap "$work/t.txt"))"
grep -q '^# posix (--measure_mmap_only): one segment per size, shm_open and ftruncate untimed; mmap = mmap of it, cleanup = munmap of it' <(unwrap "$work/m.txt") \
  && grep -q '^# speedup = .*register against posix mmap alone (not createSharedMemory)' <(unwrap "$work/m.txt") \
  && ok || fail "mmap_only notes: $(grep '^# \(posix\|speedup\)' <(unwrap "$work/m.txt"))"
grep -q 'total = shm_open\|against posix total\|cleanup = munmap + shm_unlink' <(unwrap "$work/m.txt") \
  && fail "mmap_only notes still speak of total or shm_unlink: $(grep '^# ' <(unwrap "$work/m.txt"))" || ok
grep -q '/ pool mean' "$work/t.txt" "$work/m.txt" && fail "a note still says speedups use means" || ok

# --threads=2: every allocator runs (one run of all nine), rows carry
# /threads:2, nothing is left
all=posix,offset,arena,bipc,jemalloc,jemalloc_tcache,offset_bare,bipc_object,jemalloc_object
"$bin" "${quick[@]}" --allocator=$all --threads=2 --format=json >"$work/th.json" 2>"$work/th.err" \
  || fail "--threads=2 --allocator=$all: $(cat "$work/th.err")"
"$python" -c '
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
for a in sys.argv[2].split(","):
    b = [x for x in rows if x["name"].startswith("shm_alloc/" + a + "/")]
    assert len(b) >= 6, (a, len(b))
    for x in b:
        assert x["name"].endswith("/threads:2") and x["threads"] == 2, x["name"]
    alloc = [x for x in b if x["name"].split("/")[2] in ("alloc", "total")]
    assert alloc and all(x["items_per_second"] > 0 for x in alloc), alloc
assert all(x["name"].split("/")[1] in sys.argv[2].split(",") for x in rows), [x["name"] for x in rows]
' "$work/th.json" $all && ok || fail "--threads=2 --allocator=$all rows"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "--threads=2 --allocator=$all left segments"
"$bin" "${quick[@]}" --allocator=arena,bipc --threads=2 >"$work/th.txt" 2>/dev/null
grep -q '^# threads: 2 at once per allocator and size, pinned to CPUs' "$work/th.txt" && ok \
  || fail "--threads=2 header: $(grep '^# threads' "$work/th.txt")"
table_rows "$work/th.txt" | awk '$2=="arena" && $0 !~ /one arena per thread/ {bad=1} END {exit bad}' \
  && ok || fail "arena rows at --threads=2 lack their note"

# the oversubscription warning: only above the CPUs this process may use, --cpu or not
ncpu=$(nproc)
for extra in "" "--cpu=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//; s/[-,].*//')"; do
  "$bin" "${quick[@]}" --allocator=arena --threads="$ncpu" $extra >/dev/null 2>"$work/w.err"
  grep -q "warning: --threads=" "$work/w.err" && fail "warning at --threads=$ncpu $extra: $(cat "$work/w.err")" || ok
  "$bin" "${quick[@]}" --allocator=arena --threads=$((ncpu + 1)) $extra >/dev/null 2>"$work/w.err"
  grep -q "^shm_allocation_bench: warning: --threads=$((ncpu + 1)) exceeds the $ncpu CPUs this process may use" "$work/w.err" \
    && ok || fail "no warning at --threads=$((ncpu + 1)) $extra: $(cat "$work/w.err")"
done

# --cleanup=false leaves the segments and says how to remove them
"$bin" "${quick[@]}" --allocator=posix --cleanup=false >/dev/null 2>"$work/c.err"
n=$(leftovers "$prefix")
[ "$n" -eq 60 ] && ok || fail "--cleanup=false left $n segments, expected 60 ($(leftover_owners "$prefix"))"
grep -q "left 60 segments" "$work/c.err" && ok || fail "--cleanup=false message: $(cat "$work/c.err")"
cmd=$(sed -n 's/.*remove them with: //p' "$work/c.err")
(cd "$(dirname "$0")/../.." && eval "$cmd") >/dev/null
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "the suggested command did not remove them: $cmd"

# a failing system call: exit 1, names the call, the errno text and a hint
(ulimit -f 1; exec "$bin" "${quick[@]}") >/dev/null 2>"$work/f.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "^shm_allocation_bench: ftruncate(/$prefix.*) failed: File too large; .*ulimit -f" "$work/f.err" \
  && ok || fail "EFBIG: exit $rc: $(cat "$work/f.err")"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left after a failed call"

# too little room in /dev/shm for what --touch writes
"$bin" "${common[@]}" --touch --num_iterations=10000 --max_size_kb=1048576 >/dev/null 2>"$work/s.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "needs .* only .* is free" "$work/s.err" && ok || fail "no space: exit $rc: $(cat "$work/s.err")"

# /dev/shm filling up mid-run (a 16 MiB private tmpfs, another process taking every freed page): one
# line, exit 1, no SIGBUS, nothing left; a run that cannot fit is refused before it starts.
if private_tmpfs; then
  unshare -m bash -c '
    mount -t tmpfs -o size=16m tmpfs /dev/shm || exit 77
    "$1" --shm_prefix=/full_ --touch --cleanup=false --allocator=posix --max_size_kb=1024 --num_iterations=100 \
      >/dev/null 2>"$2/full1.err"
    echo "$? $(ls /dev/shm | wc -l)" >"$2/full1.rc"
    "$1" --shm_prefix=/full_ --touch --allocator=posix --min_size_kb=1024 --max_size_kb=1024 \
      --num_iterations=100000 >/dev/null 2>"$2/full2.err" &
    pid=$!
    sleep 0.3
    i=0
    # builtins only (a fork per page let the run recycle its freed MiB for
    # seconds); a file that found no page stays, empty
    while kill -0 $pid 2>/dev/null && [ $i -lt 1000000 ]; do
      printf "%4096s" "" 2>/dev/null >/dev/shm/filler$i
      i=$((i + 1))
    done
    wait $pid
    echo "$? $(ls /dev/shm | grep -c ^full_)" >"$2/full2.rc"' _ "$bin" "$work"
  read -r rc left <"$work/full1.rc"
  [ "$rc" -eq 1 ] && [ "$left" -eq 0 ] && grep -q "needs .* only .* is free; lower --max_size_kb" "$work/full1.err" \
    && ok || fail "too little room up front: exit $rc, $left left: $(cat "$work/full1.err")"
  read -r rc left <"$work/full2.rc"
  [ "$rc" -eq 1 ] && [ "$left" -eq 0 ] && [ "$(grep -vc ": warning: " "$work/full2.err")" -eq 1 ] \
    && grep -q "first write(/dev/shm) failed: No space left on device" "$work/full2.err" \
    && ok || fail "filled mid-run: exit $rc, $left left: $(cat "$work/full2.err")"
else
  skip_case "no private mount namespace with a tmpfs: the full-/dev/shm cases"
fi

# --peer_process: the peer attaches and detaches every posix segment (rows
# attach, detach per size, one sample per allocation), the other rows keep
# their names; a note says what the peer did; no peer and nothing left after
"$bin" "${quick[@]}" --allocator=posix --peer_process >"$work/p.txt" 2>"$work/p.err" || fail "peer run: $(cat "$work/p.err")"
"$bin" "${quick[@]}" --allocator=posix >"$work/ip.txt" 2>/dev/null || fail "in-process posix run"
[ "$(table_rows "$work/p.txt" | awk '$3 != "attach" && $3 != "detach" {print $1, $2, $3}')" \
  = "$(table_rows "$work/ip.txt" | awk '{print $1, $2, $3}')" ] && ok \
  || fail "peer run's other rows differ from in-process rows: $(table_rows "$work/p.txt" | awk '{print $3}' | tr '\n' ' ')"
[ "$(table_rows "$work/p.txt" | awk '($3 == "attach" || $3 == "detach") && $2 == "posix" && $6 == 20 && $8 > 0' | wc -l)" -eq 6 ] \
  && ok || fail "peer rows: not attach and detach of 20 allocations at each of 3 sizes: $(table_rows "$work/p.txt" | grep 'attach\|detach')"
grep -q "^# peer_process: attach, detach and translate were measured in a second process" <(unwrap "$work/p.txt") \
  && ! grep -q "^# peer_process" <(unwrap "$work/ip.txt") && ok || fail "no peer_process note (or one without the flag)"
[ "$(leftovers "$prefix")" -eq 0 ] && [ "$(peer_left "$prefix")" -eq 0 ] && ok \
  || fail "peer run left $(leftovers "$prefix") segments, $(peer_left "$prefix") processes"
# with --system, pools and posix pair row by row: a step a system lacks is a dash
"$bin" "${quick[@]}" --system=mooncake --peer_process --format=csv >"$work/ps.csv" 2>/dev/null || fail "peer --system run"
tr -d '\r' <"$work/ps.csv" | grep -q '^shm_alloc/attach/size_kb:16,' && tr -d '\r' <"$work/ps.csv" | grep -q '^shm_alloc/detach/size_kb:4,' \
  && ok || fail "peer --system rows: $(cut -d, -f1 "$work/ps.csv" | tr '\n' ' ')"
# pools: the peer attaches each pool on its first handle (a sample per pool), then translates every
# handle (batches, a speedup against posix attach); the arena has no peer rows
"$bin" "${quick[@]}" --max_size_kb=4 --peer_process --format=json >"$work/pp.json" 2>"$work/pp.err" \
  || fail "peer pools run: $(cat "$work/pp.err")"
"$python" -c '
import json, sys
b = {x["name"]: x for x in json.load(open(sys.argv[1]))["benchmarks"]}
assert "shm_alloc/bipc/attach/size_kb:4" in b and b["shm_alloc/bipc/attach/size_kb:4"]["iterations"] == 1, b.keys()
for a in ("bipc", "jemalloc"):
    at, tr = b["shm_alloc/%s/attach/size_kb:4" % a], b["shm_alloc/%s/translate/size_kb:4" % a]
    assert at["iterations"] >= 1 and at["real_time"] > 0, at
    assert tr["iterations"] >= 10240 and 0 < tr["real_time"] < b["shm_alloc/posix/attach/size_kb:4"]["real_time"], tr
assert not [n for n in b if n.split("/")[1] in ("arena", "offset") and n.split("/")[2] in ("attach", "translate")]
' "$work/pp.json" && ok || fail "peer pool rows"
"$bin" "${quick[@]}" --max_size_kb=4 --peer_process >"$work/pp.txt" 2>/dev/null
grep -q "^# peer_process pools (bipc, jemalloc): .*the peer attached a pool on the first handle naming it" <(unwrap "$work/pp.txt") \
  && ok || fail "no peer_process pools note"
"$bin" "${quick[@]}" --system=flowipc_jemalloc --peer_process --format=csv >"$work/pj.csv" 2>/dev/null || fail "peer jemalloc system run"
[ "$(tr -d '\r' <"$work/pj.csv" | cut -d, -f1 | sed 's/size_kb:16/N/' | grep '/N$' | tr '\n' ' ')" \
  = "$(tr -d '\r' <"$work/ps.csv" | cut -d, -f1 | sed 's/size_kb:16/N/' | grep '/N$' | tr '\n' ' ')" ] \
  && ok || fail "peer --system rows of jemalloc and mooncake do not pair: $(cut -d, -f1 "$work/pj.csv" | tr '\n' ' ')"
[ "$(leftovers "$prefix")" -eq 0 ] && [ "$(peer_left "$prefix")" -eq 0 ] && ok \
  || fail "peer pools runs left $(leftovers "$prefix") segments, $(peer_left "$prefix") processes"

# --allocator=space: offset, bipc and jemalloc over one pool, two rows each,
# utilization and fragmentation in the label ('-' for jemalloc), the same
# figures again under the same seed, nothing left
expect_usage_error "$bin" allocator --allocator=space,offset
expect_usage_error "$bin" pool_mb --allocator=space --pool_mb=0
"$bin" "${common[@]}" --allocator=space --pool_mb=64 --format=json >"$work/space.json" 2>"$work/space.err" \
  || fail "space run: $(cat "$work/space.err")"
"$bin" "${common[@]}" --allocator=space --pool_mb=64 --format=json >"$work/space2.json" 2>/dev/null || fail "space rerun"
"$python" - "$work/space.json" "$work/space2.json" <<'PY' && ok || fail "space rows: see above"
import json, re, sys
runs = [json.load(open(f))["benchmarks"] for f in sys.argv[1:]]
names = [b["name"] for b in runs[0]]
want = [f"shm_alloc/{a}/space_{s}/pool_mb:64" for a in ("offset", "bipc", "jemalloc") for s in ("alloc", "free")]
assert names == want, names
for b in runs[0]:
    assert b["iterations"] > 0 and b["real_time"] > 0, b
    if b["name"].endswith("space_alloc/pool_mb:64"):
        m = re.fullmatch(r"util (0\.\d{4}|1\.0000) frag (0\.\d{4} \(\d+\.\d of \d+\.\d MiB\)|-)", b["label"])
        assert m and (m.group(2) == "-") == ("/jemalloc/" in b["name"]), b["label"]
        assert 0.5 < float(m.group(1)) <= 1.0, b["label"]
    else:
        assert re.fullmatch(r"verified 21 live sets", b["label"]), b["label"]
labels = [[b["label"] for b in r] for r in runs]
assert labels[0] == labels[1], labels
PY
"$bin" "${common[@]}" --allocator=space --pool_mb=16 2>/dev/null | grep -q "^# space: churn 20 rounds, each frees 50%" \
  && ok || fail "space: no churn note in the table"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "space left $(leftovers "$prefix") segments"

# --cleanup=false: the kept segments still hold their tags
"$bin" "${quick[@]}" --allocator=posix --peer_process --cleanup=false >/dev/null 2>"$work/pk.err"
n=$(leftovers "$prefix") # counted once: a second count read 60 after a first that did not (once, under ctest -j2)
[ "$n" -eq 60 ] && ok || fail "peer --cleanup=false left $n, expected 60 ($(leftover_owners "$prefix"))"
(cd "$(dirname "$0")/../.." && eval "$(sed -n 's/.*remove them with: //p' "$work/pk.err")") >/dev/null

# the peer killed mid-run, then the owner: nothing left either way
long=("${common[@]}" --num_iterations=100000000 --max_size_kb=4 --allocator=posix --peer_process)
check_peer_deaths "$prefix" "$bin" "${long[@]}"

# Ctrl-C of the owner of a peer run: nothing left, no peer
expect_signal_cleanup INT 0.5 "$prefix" "$bin" "${long[@]}"
sleep 0.3
[ "$(peer_left "$prefix")" -eq 0 ] && ok || fail "Ctrl-C left $(peer_left "$prefix") peer processes"

# Ctrl-C (or a kill) in the middle of a run leaves nothing behind
long=("$bin" "${common[@]}" --num_iterations=1000000 --max_size_kb=4 --allocator=posix)
expect_signal_cleanup INT 0.5 "$prefix" "${long[@]}"
expect_signal_cleanup TERM 0.5 "$prefix" "${long[@]}"
expect_signal_cleanup HUP 0.5 "$prefix" "${long[@]}"
expect_signal_cleanup INT 0.5 "$prefix" "${long[@]}" --threads=2

finish
