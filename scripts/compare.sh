#!/usr/bin/env bash
# Compares two runs (folders or files of run_all.sh and the binaries) or one paired folder:
# medians, a verdict per row, --fail-above=PCT the CI gate (docs/methodology.md, "Paired
# runs" and "A CI job", says what each figure means).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# usage [0]: on stderr, exit 2 (a wrong call); with 0, on stdout, exit 0 (--help)
usage() {
  local rc=${1:-2}
  [ "$rc" -eq 0 ] || exec >&2
  cat <<'USAGE'
usage: compare.sh [--verbose] [--fail-above=PCT] A B
                                    two folders written by run_all.sh, or two output files
                                    of one binary (both tables or both JSON)
       compare.sh [--verbose] DIR   a folder written by run_all.sh --system
  Paired runs (BENCH_paired.json, the axes' transfer_axis_*.json, or two paired JSON files)
  are compared by their ratio rows' intervals and their A/A controls; a folder's
  allocation_space.json by its utilization and fragmentation.
  --verbose          also Google Benchmark's compare.py on each pair of JSON files (every row)
  --fail-above=PCT   exit 1 when a row of B is slower than A by more than PCT percent
                     (significantly where the runs can tell), listed first; else 0
USAGE
  exit "$rc"
}
# An argument that names a file or folder is a path, even when it begins with '-'.
verbose=0
fail_above=
paths=()
for p in "$@"; do
  if [ -e "$p" ]; then
    case $p in -*) paths+=("./$p") ;; *) paths+=("$p") ;; esac  # never an option to compare.py
  elif [ "$p" = --verbose ] || [ "$p" = -v ]; then
    verbose=1
  elif [ "$p" = --help ] || [ "$p" = -h ]; then
    usage 0
  elif [[ $p == --fail-above=* ]]; then
    fail_above=${p#*=}
    [[ $fail_above =~ ^[0-9]+(\.[0-9]+)?$ ]] \
      || { echo "compare.sh: --fail-above=${fail_above@Q}: a percentage, a number 0 or more (e.g. 10)" >&2; exit 2; }
  else
    case $p in -*) echo "compare.sh: unknown option '$p'" >&2 ;; *) echo "compare.sh: no file or folder '$p'" >&2 ;; esac
    usage
  fi
done
case ${#paths[@]} in
  1) [ -d "${paths[0]}" ] || { echo "compare.sh: one argument must be a folder written by run_all.sh --system" >&2; usage; } ;;
  2) if ! { [ -d "${paths[0]}" ] && [ -d "${paths[1]}" ]; } && ! { [ -f "${paths[0]}" ] && [ -f "${paths[1]}" ]; }; then
       echo "compare.sh: give two folders or two files, not one of each" >&2
       usage
     fi ;;
  *) usage ;;
esac
if [ -n "$fail_above" ] && [ ${#paths[@]} -ne 2 ]; then
  echo "compare.sh: --fail-above compares two runs: give A (the baseline) and B" >&2
  exit 2
fi
set -- "${paths[@]}"
# Debian's interpreter, the one python3-scipy serves (another python3 may come first on PATH).
python=/usr/bin/python3
compare=/usr/share/benchmark/compare.py
# find_spec finds scipy without importing it (an import costs a third of a second)
if { [ "$verbose" -eq 1 ] && [ ! -f "$compare" ]; } || ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("scipy") is None)' 2>/dev/null; then
  echo "compare.sh needs scipy for $python (python3-scipy), and with --verbose Google Benchmark's" >&2
  echo "compare.py ($compare, Debian package libbenchmark-tools): run ./scripts/install_deps.sh" >&2
  exit 1
fi

# compare.py FILE_A FILE_B, when both exist: Google Benchmark's table of every row, captured
# first so that a stdout that cannot be written is one line of printf's, not a traceback
comparepy() {
  [ -f "$1" ] && [ -f "$2" ] || return 0
  local table
  table=$("$python" "$compare" --no-color benchmarks "$1" "$2")
  printf '== compare.py benchmarks %s %s\n%s\n\n' "$1" "$2" "$table"
}
# A results file that cannot be read as one (truncated, foreign, a table against a
# JSON file, two binaries' files, no row in common with its pair) stops it before
# anything is printed: one line naming the file, exit 2 (systems checks its folder itself).
results() { "$python" "$here/results.py" --as=compare.sh "$@"; }
# A paired run (--systems; run_all.sh --system writes BENCH_paired.json) is read by its
# ratio rows: each carries its own interval, and the run its A/A control.
paired() {
  if [ -d "$1" ]; then
    compgen -G "$1/*_paired.json" >/dev/null
  else
    [ "$(head -c 1 "$1")" = "{" ] && grep -Eq '"name": *"[^"]*/system:[^"/]+/vs:' "$1"
  fi
}
# gate A B: with --fail-above, the rows of B slower than A beyond it, first; $gated
# is what compare.sh exits with once the comparison is printed (1: some row tripped it)
gated=0
gate() {
  [ -n "$fail_above" ] || return 0
  results gate "$fail_above" "$1" "$2" && return 0
  gated=$?
  [ "$gated" -eq 1 ] || return "$gated"  # 2 or a failed write: stop here
}
if [ $# -eq 1 ] && paired "$1"; then
  results pairedcheck "$1" && results paired "$1"
  exit $?
fi
if [ $# -eq 1 ]; then
  results systems "$1"
  exit $?
fi
if paired "$1" || paired "$2"; then
  if ! { paired "$1" && paired "$2"; }; then
    echo "compare.sh: one of $1 and $2 is a paired run (--systems) and the other not: give two of a kind" >&2
    exit 2
  fi
  results pairedcheck "$1" "$2" && results flags "$1" "$2" && gate "$1" "$2" && results paired "$1" "$2" || exit $?
  if [ "$verbose" -eq 1 ]; then
    if [ -f "$1" ]; then
      comparepy "$1" "$2"
    else
      for a in "$1"/{allocation,lookup,transfer,workload}_paired.json "$1"/transfer_axis_*.json; do
        comparepy "$a" "$2/${a##*/}"
      done
    fi
  fi
  exit "$gated"
fi
results check "$1" "$2" && results flags "$1" "$2" && gate "$1" "$2" || exit $?

if [ -f "$1" ]; then
  echo "== gain per row"
  results gain "$1" "$2"
  if [ "$verbose" -eq 1 ] && [ "$(head -c 1 "$1")" = "{" ] && [ "$(head -c 1 "$2")" = "{" ]; then
    echo
    comparepy "$1" "$2"
  fi
  exit "$gated"
fi

echo "== headlines"
results summary "$1" "$2" || exit $?
if [ "$verbose" -eq 0 ]; then
  echo "(every row, by Google Benchmark's compare.py: compare.sh --verbose)"
  exit "$gated"
fi
echo
for a in "$1"/{allocation,lookup,lookup_sweep,transfer}{,_mooncake,_flowipc_classic,_flowipc_jemalloc}.json; do
  comparepy "$a" "$2/${a##*/}"
done
exit "$gated"
