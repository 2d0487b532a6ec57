#!/usr/bin/env bash
# cmake --install, then a small C project finds shmbench (find_package), links it and runs.
#   install_consumer.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
result() { echo "$1"; [ "$2" = pass ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"; [ "$2" = pass ]; exit $?; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 \
  || result "FAIL: cmake --install: $(tail -5 "$work/install.log")" fail
for f in bin/shm_allocation_bench bin/shm_address_lookup_bench bin/shm_transfer_bench \
         include/shmbench/shmbench.h; do
  [ -e "$work/prefix/$f" ] || result "FAIL: $f not installed" fail
done
ls "$work"/prefix/lib*/libshmbench.a >/dev/null 2>&1 || result "FAIL: libshmbench.a not installed" fail
"$work/prefix/bin/shm_allocation_bench" --version 2>&1 | grep -q "version" \
  || result "FAIL: installed binary does not run" fail
cmake -S "$src/tests/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/c.log" 2>&1 \
  && cmake --build "$work/consumer" >>"$work/c.log" 2>&1 \
  || result "FAIL: consumer build: $(tail -5 "$work/c.log")" fail
out=$("$work/consumer/consumer")
[ "$out" = "ok 0.1.0" ] || result "FAIL: consumer printed '$out'" fail
result "PASS: installed tree works for find_package(shmbench)" pass
