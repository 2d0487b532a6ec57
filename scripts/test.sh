#!/usr/bin/env bash
# Installs what is missing, builds with the tests and runs them with ctest.
# The exit status is ctest's.
#   ./scripts/test.sh [extra cmake -D options...]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
build=${SHMB_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_UNIT_TESTS=ON "$@" >&2
cmake --build "$build" -j "$(nproc)" >&2
cd "$build"
ctest --output-on-failure -j "$(nproc)"
