#!/usr/bin/env bash
# Compares runs. Every figure it prints is a median (a row's p50; with
# --repetitions, the median of the repetitions' p50s), every row is named as its
# JSON file names it (a table's rows too), and every change carries a verdict:
# the two-sided Mann-Whitney U-test on the repetitions' p50s when both runs have
# 9 or more repetitions (compare.py's threshold), and an effect size: a change
# under 5% is no practical difference, significant or not.
#
#   ./scripts/compare.sh [--verbose] results/BEFORE results/AFTER
#       two folders of run_all.sh (plain or --system): the headline figures side
#       by side; --verbose adds Google Benchmark's compare.py on each JSON both hold
#   ./scripts/compare.sh results/SYSTEMS
#       one folder of run_all.sh --system: per ratio row of its paired runs
#       (BENCH_paired.json) the ratio, its 95% interval, the saved time and the
#       verdict; then per axis the ratio rows of its runs (transfer_axis_*.json),
#       each after its point (buffers:10), and the space table
#       (allocation_space.json); a folder of per-system files only (older, or
#       --per-system alone): the gain per row of each Flow-IPC flavour over Mooncake
#   ./scripts/compare.sh results/BEFORE results/AFTER   (two paired folders)
#       or two paired JSON files of one binary: each system row's time before
#       and after, each ratio row's interval before and after: "changed" only
#       when the intervals do not overlap and the ratio moved by more than
#       either run's A/A control interval, else "within the noise"; the axes'
#       runs alike, a section per point; the space run per allocator: utilization
#       and fragmentation (deterministic for a seed) "changed" beyond 0.5 points,
#       the ns before and after unpaired, never judged
#   ./scripts/compare.sh [--verbose] baseline_allocation.txt flow_ipc_allocation.txt
#       two output files of one binary, both tables or both JSON (e.g. a
#       --system=mooncake run and a --system=flowipc_jemalloc run): the gain per
#       row (A p50 / B p50); --verbose adds compare.py first when both are JSON
#
#   ./scripts/compare.sh --fail-above=PCT A B
#       the gate for CI: exit 1 when any row of B is slower than A by more than
#       PCT percent, 0 otherwise, 2 on bad input; the rows that tripped it are
#       listed first, then the comparison as without it. Paired runs (two paired
#       folders or files): a system row whose p50 grew by more than PCT (separate
#       runs: drift included, so PCT above the machine's drift), or a ratio row
#       that changed (as above) and fell by more than PCT (the flavour slower
#       against the baseline); the A/A control's rows aside; the axes' rows
#       alike; an allocator's space utilization that changed and fell by more
#       than PCT percent (relative). Other runs: a row
#       whose p50 grew by more than PCT and, when both runs have 9 or more
#       repetitions, that the U-test (Holm over the table) finds significant;
#       with fewer, the change alone (untested).
#
# Two runs with different flags (the JSON context's "flags", a table's "# flags:"
# line; --system, --json_out, --format and --shm_prefix aside) get one warning
# line on stderr naming each differing flag. A run without --system against a
# --system run: the former's rows of that system are paired with the latter's
# (first_use with attach, setup with register: the one-off steps' older names).
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

# compare.py FILE_A FILE_B: Google Benchmark's table of every row (pairs rows by name);
# captured first, so that a stdout that cannot be written (a full disk) is one line of
# printf's, not compare.py's traceback
comparepy() {
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
      for bench in allocation lookup transfer workload; do
        [ ! -f "$1/${bench}_paired.json" ] || [ ! -f "$2/${bench}_paired.json" ] \
          || comparepy "$1/${bench}_paired.json" "$2/${bench}_paired.json"
      done
      for a in "$1"/transfer_axis_*.json; do  # the axes' runs both folders hold
        [ ! -f "$a" ] || [ ! -f "$2/${a##*/}" ] || comparepy "$a" "$2/${a##*/}"
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
for bench in allocation lookup lookup_sweep transfer; do
  for system in "" _mooncake _flowipc_classic _flowipc_jemalloc; do
    a=$1/$bench$system.json
    b=$2/$bench$system.json
    if [ -f "$a" ] && [ -f "$b" ]; then
      comparepy "$a" "$b"
    fi
  done
done
exit "$gated"
