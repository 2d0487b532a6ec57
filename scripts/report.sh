#!/usr/bin/env bash
# Writes DIR/report.md, the verdict of a folder of run_all.sh --system, and prints its path
# (verdict.py report; docs/methodology.md says what it holds).
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
