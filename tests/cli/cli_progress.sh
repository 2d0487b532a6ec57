#!/usr/bin/env bash
# The progress line: on a terminal's stderr (script(1)), rewritten with '\r' and cleared at the end;
# nothing of it on a pipe or a file. No timing is asserted.
#   cli_progress.sh BIN_DIR PYTHON
bindir=$1
source "$(dirname "$0")/cli_lib.sh"
prefix=shmb_cli_progress_$$_
command -v script >/dev/null || { echo "skipped: no script(1)"; exit 77; }

cases=("shm_allocation_bench --num_iterations=20 --max_size_kb=8 --min_ops=2048"
       "shm_address_lookup_bench --num_lookups=4096 --num_segments=10 --segment_size_mb=1"
       "shm_transfer_bench --num_transfers=5 --max_transfer_size_mb=0.0625")
for c in "${cases[@]}"; do
  bin=${c%% *}
  # a terminal: stdout to a file, stderr the pty, whose bytes script copies out
  script -qc "$bindir/$c --shm_prefix=/$prefix >$work/tty.out" /dev/null </dev/null >"$work/tty.err" 2>&1 \
    || fail "$bin under script: exit $?: $(cat "$work/tty.err")"
  grep -q "^# " "$work/tty.out" && ok || fail "$bin under script: no table on stdout"
  grep -aq $'\r'"$bin: .*%" "$work/tty.err" && ok || fail "$bin: no progress line on a terminal: $(cat -A "$work/tty.err")"
  # the last thing on the terminal is the cleared line: spaces, then back to column 0
  tail -c 2 "$work/tty.err" | grep -q $' \r' && ok || fail "$bin: progress line not cleared at the end"
  grep -aq "%" "$work/tty.out" && fail "$bin: progress on stdout" || ok
  # a pipe, then a file: nothing of it
  "$bindir/"$c --shm_prefix=/$prefix 2>&1 >/dev/null | cat >"$work/pipe.err"
  grep -aq $'\r' "$work/pipe.err" && fail "$bin: a '\\r' on a pipe" || ok
  grep -aq "$bin: .*%" "$work/pipe.err" && fail "$bin: progress on a pipe" || ok
  "$bindir/"$c --shm_prefix=/$prefix >/dev/null 2>"$work/file.err"
  grep -aq $'\r' "$work/file.err" && fail "$bin: a '\\r' in a file" || ok
done

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left under /$prefix"
echo -n "cli_progress: "
finish
