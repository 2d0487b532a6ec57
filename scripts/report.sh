#!/usr/bin/env bash
# Writes the verdict report of a folder of run_all.sh --system, DIR/report.md, and
# prints its path: per question (per block, per registration, first attach, per
# request at 4 KB, 64 KB, 1 MB and 16 MB, per KV-cache workload) Mooncake's figure,
# each Flow-IPC flavour's, the gain, the time saved, whether the change is
# significant (two-sided Mann-Whitney U-test over the repetitions, 9 or more of
# each) and whether it is large enough to matter (5% of Mooncake's figure); the
# one-off costs' break-even; the machine, commit, flags and repetitions; the
# folder's plots (./scripts/plot.sh makes them; run_all.sh --system does both).
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
