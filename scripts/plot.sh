#!/usr/bin/env bash
# PNG plots of a results folder of run_all.sh, written into it (docs/methodology.md, "Plots",
# says what each PNG shows).
#
#   ./scripts/plot.sh results/NAME
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: plot.sh RESULTS_DIR (a folder written by run_all.sh)" >&2
  exit 2
fi
dir=$1
command -v gnuplot >/dev/null || { echo "plot.sh needs gnuplot (gnuplot-nox): run ./scripts/install_deps.sh" >&2; exit 1; }
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
# exit 2: results.py named a file it cannot read; 1: nothing to plot
made=$(/usr/bin/python3 "$here/results.py" --as=plot.sh plotdata "$dir" "$data") || {
  rc=$?
  [ "$rc" -eq 2 ] || echo "plot.sh: no benchmark JSON in $dir" >&2
  exit "$rc"
}
# gnuplot runs in the data folder and writes the PNG to stdout: no path of the
# user's enters its scripts (results.py quotes every other string inertly). Each
# PNG is put in place as results.py writes every file: whole, never through a link.
for name in $made; do
  (cd "$data" && gnuplot "$name.gp" >"$name.png") || { echo "plot.sh: gnuplot failed on $name.png" >&2; exit 1; }
  /usr/bin/python3 "$here/results.py" --as=plot.sh place "$data/$name.png" "$dir/$name.png"
  echo "$dir/$name.png"
done
