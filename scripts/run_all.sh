#!/usr/bin/env bash
# Installs what is missing, builds Release into build/, runs the three
# benchmarks and saves their tables (.txt) and JSON (.json) in results/NAME/.
#
#   ./scripts/run_all.sh [--quick] [--label NAME] [-- FLAGS...]
#
#   --quick       the original README's CI-sized runs (--num_iterations=100,
#                 --num_lookups=1000, --num_transfers=100) and a short sweep
#   --label NAME  the results folder's name (default: date and time)
#   -- FLAGS...   passed to every binary: use the common flags (--cpu=N,
#                 --repetitions=N, --seed=N, --shm_prefix=/NAME_)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

quick=0
label=$(date +%Y%m%d-%H%M%S)
flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --label) [ $# -ge 2 ] || usage; label=$2; shift ;;
    --label=*) label=${1#--label=} ;;
    --) shift; flags=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "run_all.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
case "$label" in
  ""|*/*|.|..) echo "run_all.sh: --label must be a plain folder name, not '$label'" >&2; exit 2 ;;
esac

./scripts/install_deps.sh
echo "run_all.sh: building Release into build/" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build -j "$(nproc)" --target shm_allocation_bench shm_address_lookup_bench shm_transfer_bench >&2

bin=build/benchmark/shm
out=results/$label
mkdir -p "$out"

if [ "$quick" -eq 1 ]; then
  alloc_flags=(--num_iterations=100)
  lookup_flags=(--num_lookups=1000)
  sweep=1,10,100,1000
  transfer_flags=(--num_transfers=100 --time_per_size_ms=200)
else
  alloc_flags=()
  lookup_flags=()
  sweep=1,10,100,1000,10000
  transfer_flags=()
fi

run() {
  local name=$1
  shift
  echo "run_all.sh: $name: $*" >&2
  "$@" "${flags[@]}" --json_out="$out/$name.json" >"$out/$name.txt"
}

run allocation "$bin/shm_allocation_bench" "${alloc_flags[@]}"
run lookup "$bin/shm_address_lookup_bench" "${lookup_flags[@]}"
run lookup_sweep "$bin/shm_address_lookup_bench" "${lookup_flags[@]}" --sweep_segments=$sweep
run transfer "$bin/shm_transfer_bench" "${transfer_flags[@]}"

echo "run_all.sh: results in $out" >&2
