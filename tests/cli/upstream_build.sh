#!/usr/bin/env bash
# Mooncake's own code, built and tested from the source the environment names
# (docs/upstream.md): with SHMB_MOONCAKE_SOURCE set (a checkout, or a git
# directory with SHMB_MOONCAKE_COMMIT), configures a build of this tree with
# -DSHMB_MOONCAKE_SOURCE in a temporary folder, builds the upstream unit test
# and runs it, then short paired allocation and transfer runs with mooncake_upstream.
# Without the variable: skipped (77), and the reason said.
#   upstream_build.sh SOURCE_DIR
set -u
src=${1:?usage: upstream_build.sh SOURCE_DIR}
if [ -z "${SHMB_MOONCAKE_SOURCE:-}" ]; then
  echo "SKIP: SHMB_MOONCAKE_SOURCE is not set (a Mooncake checkout, or a git directory and SHMB_MOONCAKE_COMMIT)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
result() { echo "$1"; [ "$2" = pass ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"; [ "$2" = pass ]; exit $?; }

args=(-DCMAKE_BUILD_TYPE=Release -DBUILD_UNIT_TESTS=ON -DSHMB_WERROR=ON "-DSHMB_MOONCAKE_SOURCE=$SHMB_MOONCAKE_SOURCE")
[ -n "${SHMB_MOONCAKE_COMMIT:-}" ] && args+=("-DSHMB_MOONCAKE_COMMIT=$SHMB_MOONCAKE_COMMIT")
cmake -S "$src" -B "$work/build" "${args[@]}" >"$work/configure.log" 2>&1 \
  || result "FAIL: configure with ${args[*]}: $(tail -5 "$work/configure.log")" fail
grep -q "shmbench: upstream Mooncake" "$work/configure.log" \
  || result "FAIL: the configure did not name the upstream commit" fail
cmake --build "$work/build" -j 2 --target test_upstream >"$work/build.log" 2>&1 \
  || result "FAIL: build: $(grep -m5 -E 'error|Error' "$work/build.log")" fail
(cd "$work/build" && ctest -R '^unit_upstream$' --output-on-failure >"$work/ctest.log" 2>&1) \
  || result "FAIL: unit_upstream: $(tail -20 "$work/ctest.log")" fail
grep -q "1 tests passed\|100% tests passed" "$work/ctest.log" \
  || result "FAIL: unit_upstream did not run: $(tail -5 "$work/ctest.log")" fail
# The upstream rows in a paired allocation run (docs/upstream.md): the binary says it
# was built with upstream code, and runs mooncake_upstream's alloc_bare / free_bare
# beside the model's; every block is checked before timing (a wrong one fails the run:
# exit 1), so exit 0 with the rows is a verified run.
cmake --build "$work/build" -j 2 --target shm_allocation_bench >>"$work/build.log" 2>&1 \
  || result "FAIL: build shm_allocation_bench: $(grep -m5 -E 'error|Error' "$work/build.log")" fail
bench=$work/build/benchmark/shm/shm_allocation_bench
"$bench" --help | grep -q '^upstream: built against Mooncake [0-9a-f]' \
  || result "FAIL: shm_allocation_bench --help does not say it was built against Mooncake" fail
prefix=/shmb_upb_$$_
"$bench" --systems=mooncake,mooncake_upstream --max_size_kb=4 --num_iterations=2048 --min_ops=4096 \
  --shm_prefix="$prefix" --format=json >"$work/alloc.json" 2>"$work/alloc.err"
rc=$?
rm -f /dev/shm/"${prefix#/}"*
[ "$rc" -eq 0 ] || result "FAIL: the paired run with mooncake_upstream: exit $rc: $(tail -3 "$work/alloc.err")" fail
for row in alloc_bare/size_kb:4/system:mooncake_upstream alloc_bare/size_kb:4/system:mooncake_upstream/vs:mooncake \
           free_bare/size_kb:4/system:mooncake_upstream free_bare/size_kb:4/system:mooncake_upstream/vs:mooncake \
           alloc_bare/size_kb:4/system:mooncake free_bare/size_kb:4/system:mooncake_control/vs:mooncake; do
  grep -q "\"name\": *\"shm_alloc/$row\"" "$work/alloc.json" || result "FAIL: no row shm_alloc/$row" fail
done
! grep -q '"name": *"shm_alloc/\(alloc\|free\|alloc_reuse\|register\)/[^"]*system:mooncake_upstream' "$work/alloc.json" \
  || result "FAIL: a row of mooncake_upstream where upstream code does not run" fail
grep -q 'mooncake_upstream: .*compiled from commit [0-9a-f]' "$work/alloc.json" \
  || result "FAIL: the run's notes do not name the upstream commit" fail
# TENT's rows in a paired transfer run: relocation (translate) and the submit path
# (submit, 1 and 4 descriptors per submit) beside the model's, each landing checked
# before and after timing (a wrong one fails the run: exit 1); none where upstream
# code does not run; without --systems, and in the workload replay, refused (exit 2).
cmake --build "$work/build" -j 2 --target shm_transfer_bench >>"$work/build.log" 2>&1 \
  || result "FAIL: build shm_transfer_bench: $(grep -m5 -E 'error|Error' "$work/build.log")" fail
transfer=$work/build/benchmark/shm/shm_transfer_bench
for per in 1 4; do
  "$transfer" --systems=mooncake,flowipc_classic,mooncake_upstream --max_transfer_size_mb=0.0078125 --num_segments=10 \
    --descriptors_per_submit=$per --time_per_size_ms=20 --shm_prefix="$prefix" --format=json >"$work/t$per.json" 2>"$work/t.err"
  rc=$?
  rm -f /dev/shm/"${prefix#/}"*
  [ "$rc" -eq 0 ] || result "FAIL: the paired transfer run with mooncake_upstream ($per per submit): exit $rc: $(tail -3 "$work/t.err")" fail
  arg=; [ "$per" -gt 1 ] && arg=/per_submit:$per
  for kb in 4 8; do
    for row in translate/size_kb:$kb/system:mooncake_upstream translate/size_kb:$kb/system:mooncake_upstream/vs:mooncake \
               submit/size_kb:$kb$arg/system:mooncake submit/size_kb:$kb$arg/system:mooncake_upstream \
               submit/size_kb:$kb$arg/system:mooncake_upstream/vs:mooncake submit/size_kb:$kb$arg/system:mooncake_control/vs:mooncake \
               request/size_kb:$kb$arg/system:flowipc_classic/vs:mooncake; do
      grep -q "\"name\": *\"shm_transfer/$row\"" "$work/t$per.json" || result "FAIL: no row shm_transfer/$row ($per per submit)" fail
    done
  done
  ! grep -q '"name": *"shm_transfer/\(request\|request_path\)/[^"]*system:mooncake_upstream' "$work/t$per.json" \
    || result "FAIL: a transfer row of mooncake_upstream where upstream code does not run" fail
  ! grep -q '"name": *"shm_transfer/submit/[^"]*system:flowipc_classic' "$work/t$per.json" \
    || result "FAIL: a submit row of flowipc_classic (submit pairs the model with upstream)" fail
  grep -q 'mooncake_upstream: .*TENT.*compiled from commit [0-9a-f]' "$work/t$per.json" \
    || result "FAIL: the transfer run's notes do not name the upstream commit" fail
done
for bad in "--systems=mooncake,mooncake_upstream --zero_copy" "--system=mooncake_upstream" \
           "--systems=flowipc_classic,mooncake,mooncake_upstream" \
           "--systems=mooncake,mooncake_upstream --workload=synthetic"; do
  # shellcheck disable=SC2086
  "$transfer" $bad --shm_prefix="$prefix" >/dev/null 2>"$work/bad.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/bad.err")" -eq 1 ] || result "FAIL: $bad: exit $rc: $(cat "$work/bad.err")" fail
done
# TENT writes every page of the buffers it registers, under names of its own:
# more than memory holds is refused before any is made (exit 2, one line), and a
# run stopped by a signal leaves none of them (they are in the segment registry).
"$transfer" --systems=mooncake,mooncake_upstream --num_segments=100000 --shm_prefix="$prefix" >/dev/null 2>"$work/bad.err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(grep -vc 'warning: the load average' "$work/bad.err")" -eq 1 ] && grep -q "num_segments needs .* of memory with mooncake_upstream" "$work/bad.err" \
  || result "FAIL: 100000 TENT buffers of 64 MiB not refused: exit $rc: $(cat "$work/bad.err")" fail
"$transfer" --systems=mooncake,mooncake_upstream --num_segments=400 --max_transfer_size_mb=1 --shm_prefix="$prefix" \
  >/dev/null 2>"$work/term.err" &
pid=$!
for _ in $(seq 100); do
  [ "$(ls /dev/shm | grep -c "^mooncake_${pid}_")" -gt 0 ] && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
left=$(ls /dev/shm | grep -c -e "^mooncake_${pid}_" -e "^${prefix#/}")
rm -f /dev/shm/mooncake_"${pid}"_*
[ "$rc" -eq 143 ] && [ "$left" -eq 0 ] || result "FAIL: SIGTERM during TENT's set-up: exit $rc, $left names left" fail
[ -z "$(ls /dev/shm | grep -e "^${prefix#/}")" ] || result "FAIL: SHM left: $(ls /dev/shm | head)" fail
result "PASS: upstream Mooncake built from $SHMB_MOONCAKE_SOURCE, its unit test passed, its alloc_bare / free_bare rows and TENT's translate / submit rows ran paired and verified" pass
