#!/usr/bin/env bash
# Writes the verdict report of a folder of run_all.sh --system, DIR/report.md, and
# prints its path: per question (per block, per registration, first attach, per
# request at 4 KB, 64 KB, 1 MB and 16 MB, per KV-cache workload, along the axes of
# run_all.sh --system with their break-even) Mooncake's time,
# each Flow-IPC flavour's, and from the paired runs (BENCH_paired.json) the ratio
# and the time saved with their 95% intervals, the A/A control's line, and the
# verdict (faster, slower, no practical difference, within the noise, too noisy;
# Holm's correction per section; a request saving its translation does not explain
# is noise); the machine, commit, pinned CPU, flags, rounds and the load average
# before and after each run. A folder of per-system files only (older ones) gets
# the per-system report: medians, the U-test over repetitions, break-evens.
#
#   ./scripts/report.sh results/NAME
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: report.sh DIR (a folder written by run_all.sh --system)" >&2
  exit 2
fi
dir=$1
case $dir in -*) dir=./$dir ;; esac  # a folder, never an option
# Debian's interpreter, the one python3-scipy serves (another python3 may come first on PATH).
python=/usr/bin/python3
if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("scipy") is None)' 2>/dev/null; then
  echo "report.sh needs scipy for $python (python3-scipy): run ./scripts/install_deps.sh" >&2
  exit 1
fi
exec "$python" "$here/verdict.py" --as=report.sh report "$dir"
