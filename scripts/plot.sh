#!/usr/bin/env bash
# PNG plots of a results folder of run_all.sh, written into that folder:
#   transfer.png    GB/s against transfer size, per method (log x)
#   lookup.png      ns per lookup against segment count, per strategy (log-log;
#                   from lookup_sweep.json)
#   allocation.png  ns per operation against size, posix steps and every pool (log-log)
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
made=$(/usr/bin/python3 "$here/results.py" plotdata "$dir" "$data") \
  || { echo "plot.sh: no benchmark JSON in $dir" >&2; exit 1; }
meta=$(cat "$data/meta")

# plot NAME TITLE XLABEL YLABEL LOGSCALE
plot() {
  local name=$1 title=$2 xlabel=$3 ylabel=$4 logscale=$5
  local n
  n=$(wc -l <"$data/$name.labels")
  gnuplot <<GNUPLOT
set terminal pngcairo noenhanced size 1000,640 font "sans,11"
set output "$dir/$name.png"
set title "$title\n$meta"
set xlabel "$xlabel"
set ylabel "$ylabel"
set logscale $logscale
set grid
set key outside right top
plot for [i=0:$((n - 1))] "$data/$name.dat" index i using 1:2 with linespoints pointtype 7 pointsize 0.8 title columnheader(1)
GNUPLOT
  echo "$dir/$name.png"
}

for name in $made; do
  case $name in
    transfer) plot transfer "shm_transfer_bench: copy bandwidth through SHM" "transfer size (KB, 1 KB = 1024 bytes)" "GB/s (10^9 bytes per second)" x ;;
    lookup) plot lookup "shm_address_lookup_bench: address translation" "registered segments" "ns per lookup" xy ;;
    allocation) plot allocation "shm_allocation_bench: allocation cost" "allocation size (KB)" "ns per operation (mean)" xy ;;
  esac
done
