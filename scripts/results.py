#!/usr/bin/python3
"""Reads shmbench's results (Google Benchmark's JSON schema, and the binaries' tables).

  results.py summary A_DIR B_DIR     headline figures of two results folders side by side
  results.py gain A B                per row of two runs of one binary (two --system runs:
                                     the integration gain), two tables or two JSON files
  results.py systems DIR             the gain per row of each Flow-IPC flavour over Mooncake
                                     in a folder written by run_all.sh --system
  results.py plotdata DIR OUT_DIR    gnuplot data and scripts for plot.sh
  results.py check A [B]             reads the files the commands above would read, of
                                     two files, two folders or one --system folder
  results.py place SRC DEST          puts the file SRC at DEST as every output is written
  results.py paired DIR              the ratio rows of a paired folder (BENCH_paired.json)
  results.py paired A B              two paired folders or files (before, after): each system
                                     row's time, each ratio row's interval, changed or not
  results.py pairedcheck A [B]       reads the paired files those two would read
  results.py gate PCT A B            the rows of B slower than A by more than PCT percent (two
                                     files or folders, paired or not), first; exit 1 if any
  results.py flags A B               one warning line on stderr when A and B ran with
                                     different flags
A first argument --as=NAME starts error lines with NAME. A file that cannot be read as
results (truncated, not one of shmbench's, a table against a JSON file, two binaries'
files, two files with no row in common) stops it: one line naming the file and what is
wrong, exit 2. Every file is written by write_output (a temporary file renamed over a
regular file, a device or FIFO written through, a link or other kind of file refused:
exit 2); a write that fails, to a file or to stdout, is one line naming it, exit 1.

Every row is named as the JSON file names it (a table's rows too). Two runs pair row by
row: a run without --system against a --system run through that system's rows (as_system),
and a one-off step under its older name with today's (first_use with attach, setup with
register). Every figure is a median: a row's p50, and with --repetitions the median of the
repetitions' p50s (never the mean). A change is marked significant or not by the two-sided
Mann-Whitney U-test on the repetitions' p50s, when both runs have at least MIN_REPETITIONS
repetitions (compare.py's threshold; below that it says there are too few repetitions to
tell), and a change under PRACTICAL_CHANGE is no practical difference, significant or not."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in a source tree
from shmb.files import main_of, place
from shmb.gate import flags_differ, gate
from shmb.pairing import check
from shmb.plots import plotdata
from shmb.tables import gain, paired_before_after, paired_check, paired_compare, paired_summary, summary, systems


def run(argv):
    if len(argv) == 4 and argv[1] == "summary":
        return summary(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "gain":
        return gain(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "systems":
        return systems(argv[2])
    if len(argv) == 4 and argv[1] == "plotdata":
        return plotdata(argv[2], argv[3])
    if len(argv) in (3, 4) and argv[1] == "check":
        return check(argv[2:])
    if len(argv) == 4 and argv[1] == "place":
        return place(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "paired":
        return paired_summary(argv[2])
    if len(argv) == 4 and argv[1] == "paired":
        if os.path.isdir(argv[2]):
            return paired_compare(argv[2], argv[3])
        return paired_before_after(argv[2], argv[3])
    if len(argv) in (3, 4) and argv[1] == "pairedcheck":
        return paired_check(argv[2:])
    if len(argv) == 5 and argv[1] == "gate":
        return gate(argv[2], argv[3], argv[4])
    if len(argv) == 4 and argv[1] == "flags":
        return flags_differ(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main_of(run, "results.py", sys.argv))
