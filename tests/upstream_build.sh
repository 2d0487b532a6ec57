#!/usr/bin/env bash
# Mooncake's own code, built and tested from the source the environment names
# (docs/upstream.md): with SHMB_MOONCAKE_SOURCE set (a checkout, or a git
# directory with SHMB_MOONCAKE_COMMIT), configures a build of this tree with
# -DSHMB_MOONCAKE_SOURCE in a temporary folder, builds the upstream unit test
# and runs it. Without the variable: skipped (77), and the reason said.
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
result "PASS: upstream Mooncake built from $SHMB_MOONCAKE_SOURCE and its unit test passed" pass
