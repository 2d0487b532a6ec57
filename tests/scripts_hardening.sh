#!/usr/bin/env bash
# The scripts on hostile input: names that would run commands in gnuplot or a
# shell, truncated or mismatched results files, and what clean_shm.sh must
# leave alone. No benchmark runs here (saved results under tests/fixtures).
#   scripts_hardening.sh BIN_DIR SOURCE_DIR
src=$2
source "$src/tests/cli_lib.sh"
fixtures=$(cd "$(dirname "$0")" && pwd)/fixtures/results

# --- clean_shm.sh: dot names; only regular files of ours -------------------
shm=$work/shm
mkdir "$shm"
# a pid above pid_max: no process has it
dead=$(($(cat /proc/sys/kernel/pid_max) + 1))
hex=0123456789abcdef
seg() { echo "$1${dead}_${hex}_$2"; }
: >"$shm/$(seg .x_ 0)"
: >"$shm/$(seg mooncake_bench_ 1)"
mkdir "$shm/$(seg mooncake_bench_ 2)"
echo keep >"$work/target"
ln -s "$work/target" "$shm/$(seg mooncake_bench_ 3)"
mkfifo "$shm/$(seg mooncake_bench_ 4)"
: >"$shm/mooncake_bench_0${dead}_${hex}_5"  # a leading zero: no pid getpid() printed
SHMB_SHM_DIR=$shm "$src/scripts/clean_shm.sh" --prefix=/.x_ >"$work/clean.out" 2>&1 \
  && [ ! -e "$shm/$(seg .x_ 0)" ] && grep -qF "removed $shm/$(seg .x_ 0)" "$work/clean.out" && ok \
  || fail "clean_shm.sh --prefix=/.x_: a dot name not removed: $(cat "$work/clean.out")"
SHMB_SHM_DIR=$shm "$src/scripts/clean_shm.sh" >"$work/clean.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || fail "clean_shm.sh with a directory, symlink and FIFO of its scheme: exit $rc: $(cat "$work/clean.out")"
[ ! -e "$shm/$(seg mooncake_bench_ 1)" ] && ok || fail "clean_shm.sh: a dead run's regular file kept"
for n in 2 3 4; do
  f=$shm/$(seg mooncake_bench_ $n)
  { [ -e "$f" ] || [ -L "$f" ]; } && grep -qF "skipped $f: not a regular file" "$work/clean.out" && ok \
    || fail "clean_shm.sh: $(basename "$f") (not a regular file) removed or not said: $(cat "$work/clean.out")"
done
[ "$(cat "$work/target")" = keep ] && ok || fail "clean_shm.sh: the symlink's target changed"
[ -e "$shm/mooncake_bench_0${dead}_${hex}_5" ] && ok || fail "clean_shm.sh: a name with a leading-zero pid removed"
grep -q "skipped 3 not regular files of ours" "$work/clean.out" && ok || fail "clean_shm.sh: no count of the skipped: $(tail -1 "$work/clean.out")"
if [ "$(id -u)" -eq 0 ]; then
  f=$shm/$(seg mooncake_bench_ 6)
  : >"$f"
  chown 65534 "$f"
  SHMB_SHM_DIR=$shm "$src/scripts/clean_shm.sh" >"$work/clean.out" 2>&1 && [ -e "$f" ] \
    && grep -qF "skipped $f: owned by uid 65534, not by us" "$work/clean.out" && ok \
    || fail "clean_shm.sh: another user's file removed or not said: $(cat "$work/clean.out")"
fi

finish
