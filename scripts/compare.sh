#!/usr/bin/env bash
# Compares two runs.
# Two results folders of run_all.sh: Google Benchmark's compare.py on each
# benchmark's JSON (time change per row; with repetitions in both, the
# Mann-Whitney U-test), then the headline figures side by side.
# Two output files of one binary (table or JSON, e.g. a --system=mooncake run
# and a --system=flowipc_jemalloc run): the gain per row (A p50 / B p50),
# after compare.py when both are JSON.
#
#   ./scripts/compare.sh results/BEFORE results/AFTER
#   ./scripts/compare.sh baseline_allocation.txt flow_ipc_allocation.txt
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 2 ] || ! { [ -d "$1" ] && [ -d "$2" ]; } && ! { [ -f "$1" ] && [ -f "$2" ]; }; then
  echo "usage: compare.sh A B: two folders written by run_all.sh, or two output files of one binary" >&2
  exit 2
fi
# Debian's interpreter, the one python3-scipy serves (another python3 may come first on PATH).
python=/usr/bin/python3
compare=/usr/share/benchmark/compare.py
if [ ! -f "$compare" ] || ! "$python" -c 'import scipy' 2>/dev/null; then
  echo "compare.sh needs Google Benchmark's compare.py ($compare, Debian package libbenchmark-tools)" >&2
  echo "and scipy for $python (python3-scipy): run ./scripts/install_deps.sh" >&2
  exit 1
fi

if [ -f "$1" ]; then
  if [ "$(head -c 1 "$1")" = "{" ] && [ "$(head -c 1 "$2")" = "{" ]; then
    echo "== compare.py benchmarks $1 $2"
    "$python" "$compare" --no-color benchmarks "$1" "$2"
    echo
  fi
  echo "== gain per row"
  exec "$python" "$here/results.py" gain "$1" "$2"
fi

compared=0
for bench in allocation lookup lookup_sweep transfer; do
  a=$1/$bench.json
  b=$2/$bench.json
  if [ -f "$a" ] && [ -f "$b" ]; then
    echo "== $bench: compare.py benchmarks $a $b"
    "$python" "$compare" --no-color benchmarks "$a" "$b"
    echo
    compared=$((compared + 1))
  else
    echo "== $bench: skipped, not in both folders" >&2
  fi
done
[ "$compared" -gt 0 ] || { echo "compare.sh: no benchmark JSON in both $1 and $2" >&2; exit 1; }
echo "== headlines"
"$python" "$here/results.py" summary "$1" "$2"
