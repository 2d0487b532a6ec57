#!/usr/bin/env bash
# PNG plots of a results folder of run_all.sh, written into that folder:
#   transfer.png    copies: GB/s (size / p50) against transfer size, per method, the
#                   run's cache sizes as dotted lines, log y when the series span
#                   decades (--cold); with --system runs, a second panel: the whole
#                   request and its parts, time per request (p50)
#   lookup.png      time per lookup (p50) against segment count, per path (log-log;
#                   from lookup_sweep.json, else lookup.json); the one-off costs
#                   (attach, first_use, pool_once) in a panel of their own
#   allocation.png  time (p50) against size (log-log): posix per step, every pool's
#                   or system's per-block steps, and the one-off costs (register, the
#                   peer's attach and detach), one panel each
#   gain.png        of a run_all.sh --system folder only: mooncake p50 / Flow-IPC
#                   p50 per row (log scale), a bar per flavour (colour, in the
#                   legend), solid when the U-test finds the change significant,
#                   hollow when not, hatched when too few repetitions to test; with 9
#                   repetitions or more, a 95% interval of the ratio of the two medians
#                   (percentile bootstrap, each run's repetitions resampled on their own,
#                   2000 times, a fixed seed) as a capped line; a grey
#                   band where a change is under 5%; the rows that decide first (the
#                   whole request per size, the workload request), then each binary's
#                   other rows (translation alone, the sweep) and one-off costs on their
#                   own scale, at most 12 rows a panel; flags in report.md
#   paired.png      of a folder's paired runs (BENCH_paired.json): per question, each
#                   system's ratio to the baseline (log scale) with its 95% interval as
#                   an error bar, the A/A control in grey, a grey band where a change is
#                   under 5%; first the rows that decide (the whole request per size and
#                   per workload request), then a panel per run on its own scale, at
#                   most 12 questions a panel (their labels stay apart); flags in report.md
#   axes.png        of a folder with run_all.sh --system's axes (transfer_axis_*.json):
#                   a panel per axis (registered buffers, request size), each system's
#                   whole request as its ratio to Mooncake's per point with its 95%
#                   interval, a dashed line where it saves 5% of Mooncake's request
# With repetitions, points are the median of the repetitions' p50s and error bars
# span their p10-p90; each title names the CPU, the build, the systems and the
# binary's flags as the runs' JSON contexts say.
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
