#!/usr/bin/python3
"""The verdict of a run_all.sh --system folder: Mooncake against each Flow-IPC flavour.

  verdict.py report DIR        writes DIR/report.md (every question the suite answers, with
                               its ratio or gain, time saved, significance and effect size)
                               and prints its path: of the paired runs (BENCH_paired.json)
                               when the folder has them, else of its per-system files
  verdict.py merge OUT REP...  merges one-repetition JSON files of one binary and system
                               (run_all.sh --system runs each repetition on its own, the
                               systems in turn) into OUT, as --repetitions=N would write it
A first argument --as=NAME starts error lines with NAME. A file that cannot be read as
results stops it: one line naming the file and what is wrong, exit 2. Files are written as
results.py's write_output writes them (a failed write: one line naming the file, exit 1).

Per-system files: every figure is results.py's, a row's p50, with repetitions the median of
the repetitions' p50s (p99 and p999 likewise); significance is its U-test with Holm's
correction over each table. Paired runs: the ratio rows' figures (docs/methodology.md,
"Paired runs"), Holm's correction over each section."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in a source tree
from shmb.files import BadInput, main_of
from shmb.merge import merge
from shmb.paired import paired_files
from shmb.paired_report import paired_report
from shmb.system_report import system_report


def run(argv):
    if len(argv) == 3 and argv[1] == "report":
        if not os.path.isdir(argv[2]):
            raise BadInput("%s: not a folder" % argv[2])
        # run_all.sh --system writes paired runs; older folders per-system files
        return (paired_report if paired_files(argv[2]) else system_report)(argv[2])
    if len(argv) >= 4 and argv[1] == "merge":
        return merge(argv[2], argv[3:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main_of(run, "verdict.py", sys.argv))
