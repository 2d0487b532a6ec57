#!/usr/bin/env bash
# Compares runs. Every figure it prints is a median (a row's p50; with
# --repetitions, the median of the repetitions' p50s), and every ratio is
# marked significant or not by the two-sided Mann-Whitney U-test on the
# repetitions' p50s, when both runs have 9 or more repetitions (compare.py's
# threshold); with fewer it says there are too few repetitions to tell.
#
#   ./scripts/compare.sh results/BEFORE results/AFTER
#       two folders of run_all.sh (plain or --system): Google Benchmark's
#       compare.py on each JSON both hold, then the headline figures side by side
#   ./scripts/compare.sh results/SYSTEMS
#       one folder of run_all.sh --system: the gain per row of Flow-IPC over
#       Mooncake, for each binary
#   ./scripts/compare.sh baseline_allocation.txt flow_ipc_allocation.txt
#       two output files of one binary (tables or JSON, e.g. a --system=mooncake
#       run and a --system=flowipc_jemalloc run): the gain per row (A p50 / B p50),
#       after compare.py when both are JSON
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
  echo "usage: compare.sh A B (two folders written by run_all.sh, or two output files of one binary)," >&2
  echo "       compare.sh DIR (a folder written by run_all.sh --system)" >&2
  exit 2
}
if [ $# -eq 1 ]; then
  [ -d "$1" ] || usage
elif [ $# -ne 2 ] || ! { [ -d "$1" ] && [ -d "$2" ]; } && ! { [ -f "$1" ] && [ -f "$2" ]; }; then
  usage
fi
# A path that begins with '-' would be an option to head and compare.py.
paths=()
for p in "$@"; do
  case $p in -*) paths+=("./$p") ;; *) paths+=("$p") ;; esac
done
set -- "${paths[@]}"
# Debian's interpreter, the one python3-scipy serves (another python3 may come first on PATH).
python=/usr/bin/python3
compare=/usr/share/benchmark/compare.py
# find_spec finds scipy without importing it (an import costs a third of a second)
if [ ! -f "$compare" ] || ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("scipy") is None)' 2>/dev/null; then
  echo "compare.sh needs Google Benchmark's compare.py ($compare, Debian package libbenchmark-tools)" >&2
  echo "and scipy for $python (python3-scipy): run ./scripts/install_deps.sh" >&2
  exit 1
fi

# A results file that cannot be read as one (truncated, foreign, a table against a
# JSON file, no row in common with its pair) stops it before anything is printed:
# one line naming the file, exit 2 (systems checks its folder itself).
results() { "$python" "$here/results.py" --as=compare.sh "$@"; }
if [ $# -eq 1 ]; then
  results systems "$1"
  exit $?
fi
results check "$1" "$2" || exit $?

if [ -f "$1" ]; then
  if [ "$(head -c 1 "$1")" = "{" ] && [ "$(head -c 1 "$2")" = "{" ]; then
    echo "== compare.py benchmarks $1 $2"
    "$python" "$compare" --no-color benchmarks "$1" "$2"
    echo
  fi
  echo "== gain per row"
  results gain "$1" "$2"
  exit $?
fi

compared=0
for bench in allocation lookup lookup_sweep transfer; do
  for system in "" _mooncake _flowipc_classic _flowipc_jemalloc; do
    a=$1/$bench$system.json
    b=$2/$bench$system.json
    if [ -f "$a" ] && [ -f "$b" ]; then
      echo "== $bench$system: compare.py benchmarks $a $b"
      "$python" "$compare" --no-color benchmarks "$a" "$b"
      echo
      compared=$((compared + 1))
    elif [ -f "$a" ] || [ -f "$b" ]; then
      echo "== $bench$system: skipped, not in both folders" >&2
    fi
  done
done
[ "$compared" -gt 0 ] || { echo "compare.sh: no benchmark JSON in both $1 and $2" >&2; exit 1; }
echo "== headlines"
results summary "$1" "$2"
