#!/usr/bin/env bash
# Flow-IPC's own code, built and tested from the source the environment names
# (docs/upstream.md): with SHMB_FLOWIPC_SOURCE set (a folder of flow, ipc_core,
# ipc_shm, ipc_shm_arena_lend: checkouts or git directories), configures a
# build of this tree with -DSHMB_FLOWIPC_SOURCE in a temporary folder, checks
# that its shared library exports the C API alone, runs the unit test, then a
# short paired allocation run with flowipc_classic_upstream, a paired transfer
# run with flowipc_jemalloc_upstream and the refusals
# (exit 2, one line) where it does not run.
# Without the variable: skipped (77), and the reason said.
#   flowipc_upstream_build.sh SOURCE_DIR
set -u
src=${1:?usage: flowipc_upstream_build.sh SOURCE_DIR}
if [ -z "${SHMB_FLOWIPC_SOURCE:-}" ]; then
  echo "SKIP: SHMB_FLOWIPC_SOURCE is not set (a folder holding Flow-IPC's flow, ipc_core, ipc_shm, ipc_shm_arena_lend)"
  exit 77
fi
work=$(mktemp -d)
prefix=/shmb_fub_$$_
trap 'rm -rf "$work"; rm -f /dev/shm/"${prefix#/}"*' EXIT
result() { echo "$1"; [ "$2" = pass ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"; [ "$2" = pass ]; exit $?; }

args=(-DCMAKE_BUILD_TYPE=Release -DBUILD_UNIT_TESTS=ON -DSHMB_WERROR=ON "-DSHMB_FLOWIPC_SOURCE=$SHMB_FLOWIPC_SOURCE")
cmake -S "$src" -B "$work/build" "${args[@]}" >"$work/configure.log" 2>&1 \
  || result "FAIL: configure with ${args[*]}: $(tail -5 "$work/configure.log")" fail
for repo in flow ipc_core ipc_shm ipc_shm_arena_lend; do
  grep -q "shmbench: upstream Flow-IPC $repo [0-9a-f]" "$work/configure.log" \
    || result "FAIL: the configure did not name $repo's commit" fail
done
cmake --build "$work/build" -j 2 --target test_upstream_flowipc shm_allocation_bench shm_transfer_bench >"$work/build.log" 2>&1 \
  || result "FAIL: build: $(grep -m5 -E 'error|Error' "$work/build.log")" fail
# The ODR wall: the library's Boost 1.81 never meets the suite's 1.74.
so=$work/build/libshmb_flowipc_upstream.so
other=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v "^shmb_upstream_\\(flowipc\\|classic\\|jemalloc\\)_")
[ -z "$other" ] || result "FAIL: $so exports more than the C API: $(echo "$other" | head -5)" fail
(cd "$work/build" && ctest -R '^unit_upstream_flowipc$' --output-on-failure >"$work/ctest.log" 2>&1) \
  || result "FAIL: unit_upstream_flowipc: $(tail -20 "$work/ctest.log")" fail
grep -q "100% tests passed" "$work/ctest.log" || result "FAIL: unit_upstream_flowipc did not run" fail
# The paired rows: every block checked before timing (a wrong one fails the run:
# exit 1), so exit 0 with the rows is a verified run.
bench=$work/build/benchmark/shm/shm_allocation_bench
"$bench" --systems=flowipc_classic,flowipc_classic_upstream --max_size_kb=4 --num_iterations=2048 --min_ops=4096 \
  --shm_prefix="$prefix" --format=json >"$work/alloc.json" 2>"$work/alloc.err"
rc=$?
[ "$rc" -eq 0 ] || result "FAIL: the paired run with flowipc_classic_upstream: exit $rc: $(tail -3 "$work/alloc.err")" fail
up=flowipc_classic_upstream
for row in alloc_bare/size_kb:4/system:$up alloc_bare/size_kb:4/system:$up/vs:flowipc_classic \
           free_bare/size_kb:4/system:$up free_bare/size_kb:4/system:$up/vs:flowipc_classic \
           alloc_bare/size_kb:4/system:flowipc_classic free_bare/size_kb:4/system:flowipc_classic_control/vs:flowipc_classic; do
  grep -q "\"name\": *\"shm_alloc/$row\"" "$work/alloc.json" || result "FAIL: no row shm_alloc/$row" fail
done
! grep -q "\"name\": *\"shm_alloc/\(alloc\|free\|alloc_reuse\|register\)/[^\"]*system:$up" "$work/alloc.json" \
  || result "FAIL: a row of $up where upstream code does not run" fail
grep -q "$up: .*compiled from flow [0-9a-f]*, ipc_core [0-9a-f]*, ipc_shm [0-9a-f]*" "$work/alloc.json" \
  || result "FAIL: the run's notes do not name the Flow-IPC commits" fail
# SHM-jemalloc's to_address beside the model's translate, its landing checked before
# and after timing (a wrong one fails the run: exit 1); no other row of it.
transfer=$work/build/benchmark/shm/shm_transfer_bench
jup=flowipc_jemalloc_upstream
"$transfer" --systems=flowipc_jemalloc,$jup --max_transfer_size_mb=0.0078125 --num_segments=10 --time_per_size_ms=20 \
  --shm_prefix="$prefix" --format=json >"$work/t.json" 2>"$work/t.err"
rc=$?
[ "$rc" -eq 0 ] || result "FAIL: the paired transfer run with $jup: exit $rc: $(tail -3 "$work/t.err")" fail
for kb in 4 8; do
  for row in translate/size_kb:$kb/system:$jup translate/size_kb:$kb/system:$jup/vs:flowipc_jemalloc \
             translate/size_kb:$kb/system:flowipc_jemalloc_control/vs:flowipc_jemalloc; do
    grep -q "\"name\": *\"shm_transfer/$row\"" "$work/t.json" || result "FAIL: no row shm_transfer/$row" fail
  done
done
! grep -q "\"name\": *\"shm_transfer/\(request\|request_path\|submit\)/[^\"]*system:$jup" "$work/t.json" \
  || result "FAIL: a transfer row of $jup where upstream code does not run" fail
grep -q "$jup: .*compiled from flow [0-9a-f]*" "$work/t.json" \
  || result "FAIL: the transfer run's notes do not name the Flow-IPC commits" fail
refused=0
for bad in "$bench --system=$up" "$bench --systems=$up,flowipc_classic" "$bench --systems=mooncake,$up" \
           "$bench --systems=mooncake,flowipc_classic,$up" "$transfer --systems=flowipc_classic,$up" \
           "$transfer --system=$jup" "$transfer --systems=mooncake,$jup" \
           "$transfer --systems=flowipc_jemalloc,$jup --zero_copy" "$bench --systems=flowipc_jemalloc,$jup" \
           "$transfer --systems=flowipc_jemalloc,$jup --workload=synthetic" \
           "$transfer --systems=mooncake,flowipc_jemalloc,$jup --submitters=2"; do
  # shellcheck disable=SC2086
  $bad --shm_prefix="$prefix" >/dev/null 2>"$work/bad.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(grep -vc 'warning: the load average' "$work/bad.err")" -eq 1 ] || result "FAIL: $bad: exit $rc: $(cat "$work/bad.err")" fail
  refused=$((refused + 1))
done
[ -z "$(ls /dev/shm | grep -e "^${prefix#/}")" ] || result "FAIL: SHM left: $(ls /dev/shm | grep -e "^${prefix#/}" | head)" fail
result "PASS: upstream Flow-IPC built from $SHMB_FLOWIPC_SOURCE (C API alone exported), its unit test passed, its Pool_arena alloc_bare / free_bare rows and its repository's translate ran paired and verified, $refused refusals" pass
