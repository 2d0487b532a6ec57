#!/usr/bin/env bash
# Installs what is missing, builds with the tests and runs them with ctest.
# The exit status is ctest's.
#   ./scripts/test.sh [--tsan] [extra cmake -D options...]
#   --tsan  then also builds with ThreadSanitizer into build-tsan/ (or
#           $SHMB_BUILD_DIR-tsan) and runs the tests labelled tsan there: the
#           threaded paths (CI sets it)
set -euo pipefail
cd "$(dirname "$0")/.."
tsan=0
if [ "${1:-}" = "--tsan" ]; then
  tsan=1
  shift
fi
./scripts/install_deps.sh
build=${SHMB_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_UNIT_TESTS=ON "$@" >&2
cmake --build "$build" -j "$(nproc)" >&2
(cd "$build" && ctest --output-on-failure -j "$(nproc)")
if [ "$tsan" -eq 1 ]; then
  cmake -S . -B "$build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_UNIT_TESTS=ON -DSHMB_TSAN=ON "$@" >&2
  cmake --build "$build-tsan" -j "$(nproc)" >&2
  cd "$build-tsan"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    ctest --output-on-failure -j "$(nproc)" -L tsan
fi
