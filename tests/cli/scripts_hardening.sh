#!/usr/bin/env bash
# The scripts on hostile input (gnuplot or shell injection, bad results files) and what
# clean_shm.sh must leave alone; saved results only.
#   scripts_hardening.sh BIN_DIR SOURCE_DIR
src=$(cd "$2" && pwd)
source "$src/tests/cli/cli_lib.sh"
fixtures=$src/tests/fixtures/runs

# --- plot.sh: no string of a results folder reaches gnuplot as a command ----
# (gnuplot substitutes backquotes inside double quotes)
export PWNED=$work/pwned
mkdir "$work/ctx"
/usr/bin/python3 - "$work/ctx" "$PWNED" <<'EOF'
import json, sys
folder, pwned = sys.argv[1], sys.argv[2]
ctx = {"cpu_model": "cpu `touch %s.cpu` 'q'\n@x" % pwned, "host_name": 'h"`touch %s.host`"' % pwned,
       "flags": "shm_prefix=/`touch %s.flags`_ seed=1" % pwned, "num_cpus": 2,
       "caches": [{"type": "Data", "level": 1, "size": 8192}]}
def rows(bench, name, arg, values):
    return [{"name": "%s/%s/%s:%d" % (bench, name, arg, x), "run_name": "%s/%s/%s:%d" % (bench, name, arg, x),
             "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
             "iterations": 10, "real_time": v, "cpu_time": v, "time_unit": "ns", "p50": v}
            for x, v in values]
json.dump({"context": ctx, "benchmarks": rows("shm_transfer", "memcpy`touch %s.row`" % pwned, "size_kb",
                                              [(4, 100.0), (16, 300.0)])}, open(folder + "/transfer.json", "w"))
for system, f in (("mooncake", 1.0), ("flowipc_jemalloc", 0.5)):
    json.dump({"context": ctx, "benchmarks": rows("shm_lookup", "p`touch %s.gain`'\"" % pwned, "segments",
                                                  [(1, 10 * f), (10, 20 * f)])},
              open("%s/lookup_%s.json" % (folder, system), "w"))
EOF
evil="$work/run\`touch \$PWNED.dir\`'q @x"
mkdir "$evil"
cp "$work/ctx/transfer.json" "$evil/"
for d in "$work/ctx" "$evil"; do
  (cd "$work" && "$src/scripts/plot.sh" "$d" >"$work/plot.out" 2>&1) && ok \
    || fail "plot.sh on a hostile folder: exit $?: $(cat "$work/plot.out")"
done
for what in dir cpu host flags row gain; do
  [ ! -e "$PWNED.$what" ] && ok || fail "plot.sh ran a command from the folder's $what"
done
for png in ctx/transfer ctx/lookup ctx/gain "${evil#$work/}/transfer"; do
  [ "$(head -c 4 "$work/$png.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e47 ] && ok \
    || fail "plot.sh on a hostile folder: no $png.png"
done

# compare.sh: a file named like an option is a file to head and compare.py, not an option
cp "$work/ctx/transfer.json" "$work/-h"
cp "$work/ctx/transfer.json" "$work/-b"
(cd "$work" && "$src/scripts/compare.sh" --verbose -h -b >"$work/dash.out" 2>&1) && grep -q "^Comparing ./-h to ./-b" "$work/dash.out" \
  && grep -q "^== gain per row" "$work/dash.out" && ok || fail "compare.sh -h -b (two files): $(head -3 "$work/dash.out")"

# --- compare.sh and plot.sh on files that are not whole results ------------
# expect_bad WHAT FILE COMMAND...: exit 2, one stderr line naming FILE (no traceback),
# nothing on stdout
expect_bad() {
  local what=$1 file=$2 rc
  shift 2
  "$@" >"$work/bad.out" 2>"$work/bad.err"
  rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/bad.err")" -eq 1 ] && grep -qF -- "$file" "$work/bad.err" \
      && ! grep -q Traceback "$work/bad.err" && [ ! -s "$work/bad.out" ]; then
    ok
  else
    fail "$what: exit $rc, $(wc -l <"$work/bad.err") stderr lines, stdout $(wc -c <"$work/bad.out") bytes: $(head -3 "$work/bad.err")"
  fi
}
cp -r "$fixtures/a" "$work/at"
cp -r "$fixtures/sys" "$work/st"
a=$fixtures/a
head -c 5000 "$a/transfer.json" >"$work/at/transfer.json"  # cut mid-row
head -c 5000 "$fixtures/sys/lookup_mooncake.json" >"$work/st/lookup_mooncake.json"
head -c 3000 "$a/lookup.txt" >"$work/cut.txt"  # cut mid-line
grep -v '^[0-9]' "$a/lookup.txt" >"$work/head.txt"  # the header and no row
echo '{"context": {}}' >"$work/nobench.json"
: >"$work/empty.txt"
expect_bad "compare.sh: a truncated JSON file" "$work/at/transfer.json" "$src/scripts/compare.sh" "$work/at/transfer.json" "$a/transfer.json"
expect_bad "compare.sh: a truncated table" "$work/cut.txt" "$src/scripts/compare.sh" "$a/lookup.txt" "$work/cut.txt"
expect_bad "compare.sh: a table with no row" "$work/head.txt" "$src/scripts/compare.sh" "$a/lookup.txt" "$work/head.txt"
expect_bad "compare.sh: an empty file" "$work/empty.txt" "$src/scripts/compare.sh" "$work/empty.txt" "$a/lookup.txt"
expect_bad "compare.sh: a JSON file without benchmarks" "$work/nobench.json" "$src/scripts/compare.sh" "$work/nobench.json" "$a/lookup.json"
expect_bad "compare.sh: a table against a JSON file" "$a/lookup.json" "$src/scripts/compare.sh" "$a/lookup.txt" "$a/lookup.json"
expect_bad "compare.sh: two binaries' files" "$a/transfer.json" "$src/scripts/compare.sh" "$a/lookup.json" "$a/transfer.json"
expect_bad "compare.sh: folders, one file truncated" "$work/at/transfer.json" "$src/scripts/compare.sh" "$a" "$work/at"
expect_bad "compare.sh: a --system folder, one file truncated" "$work/st/lookup_mooncake.json" "$src/scripts/compare.sh" "$work/st"
expect_bad "plot.sh: a folder with a truncated file" "$work/at/transfer.json" "$src/scripts/plot.sh" "$work/at"
# a file whose context names another system than its name (a file renamed by hand)
mkdir "$work/renamed"
cp "$fixtures/sys/lookup_flowipc_jemalloc.json" "$work/renamed/lookup_mooncake.json"
cp "$fixtures/sys/lookup_flowipc_classic.json" "$work/renamed/"
expect_bad "plot.sh: a file whose context says another system" "$work/renamed/lookup_mooncake.json" "$src/scripts/plot.sh" "$work/renamed"
# a row name with an escape sequence (printed to the terminal), a p50 of 0 (a division)
/usr/bin/python3 - "$a/transfer.json" "$work/esc.json" "$work/zero.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["benchmarks"][0]["name"] += "\x1b]0;owned\x07"
json.dump(d, open(sys.argv[2], "w"))
d = json.load(open(sys.argv[1]))
d["benchmarks"][0]["p50"] = 0
json.dump(d, open(sys.argv[3], "w"))
EOF
expect_bad "compare.sh: a row name with a control character" "$work/esc.json" "$src/scripts/compare.sh" "$work/esc.json" "$a/transfer.json"
mkdir "$work/zero"
cp "$work/zero.json" "$work/zero/transfer.json"
expect_bad "plot.sh: a p50 of 0" "$work/zero/transfer.json" "$src/scripts/plot.sh" "$work/zero"
mkdir "$work/swapped"
cp "$a/transfer.json" "$work/swapped/lookup.json"
expect_bad "compare.sh: folders whose lookup.json share no row" "$work/swapped/lookup.json" "$src/scripts/compare.sh" "$a" "$work/swapped"

# --- issue 25: every file the scripts write, and their stdout ----------------
# a string where a number goes: one line naming the file and the field, exit 2
cp -r "$fixtures/sys" "$work/many"
/usr/bin/python3 - "$work/many/lookup_mooncake.json" <<'EOF_MANY'
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    b["iterations"] = "many"
json.dump(d, open(sys.argv[1], "w"))
EOF_MANY
for s in report compare plot; do
  expect_bad "$s.sh: iterations a string" "$work/many/lookup_mooncake.json" "$src/scripts/$s.sh" "$work/many"
  grep -q "iterations 'many', not a count" "$work/bad.err" && ok || fail "$s.sh: the field not named: $(cat "$work/bad.err")"
done
# a link at an output, or at the old fixed temporary name: never written through; a link
# or directory at the output refused in one line, exit 2, left as it was
rep=$work/rep
cp -r "$fixtures/sys" "$rep"
echo keep >"$work/victim"
ln -s "$work/victim" "$rep/report.md.partial"
"$src/scripts/report.sh" "$rep" >/dev/null 2>"$work/rep.err" && [ -f "$rep/report.md" ] && [ ! -L "$rep/report.md" ] \
  && [ "$(cat "$work/victim")" = keep ] && ok || fail "report.sh beside a planted report.md.partial link: $(cat "$work/rep.err")"
rm "$rep/report.md.partial"
cp "$rep/report.md" "$work/report.whole"
expect_output_refused() {
  local what=$1 path=$2 rc
  shift 2
  "$@" >/dev/null 2>"$work/ref.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/ref.err")" -eq 1 ] && grep -qF "$path" "$work/ref.err" && ok \
    || fail "$what: exit $rc: $(cat "$work/ref.err")"
}
mv "$rep/report.md" "$rep/report.real"
ln -s "$work/victim" "$rep/report.md"
expect_output_refused "report.sh: report.md a link" "$rep/report.md" "$src/scripts/report.sh" "$rep"
[ -L "$rep/report.md" ] && [ "$(cat "$work/victim")" = keep ] && ok || fail "report.sh: the link at report.md or its target changed"
rm "$rep/report.md"
mkdir "$rep/report.md"
expect_output_refused "report.sh: report.md a directory" "$rep/report.md" "$src/scripts/report.sh" "$rep"
rmdir "$rep/report.md"
ln -s "$work/victim" "$work/merged.json"
expect_output_refused "verdict.py merge: OUT a link" "$work/merged.json" /usr/bin/python3 "$src/scripts/verdict.py" merge \
  "$work/merged.json" "$work/ctx/lookup_mooncake.json"
[ "$(cat "$work/victim")" = keep ] && ok || fail "verdict.py merge wrote through a link"
cp -r "$work/ctx" "$work/plotted"
rm -f "$work/plotted/transfer.png"
ln -s "$work/victim" "$work/plotted/transfer.png"
expect_output_refused "plot.sh: transfer.png a link" "$work/plotted/transfer.png" "$src/scripts/plot.sh" "$work/plotted"
[ "$(cat "$work/victim")" = keep ] && [ -L "$work/plotted/transfer.png" ] && ok || fail "plot.sh wrote through or replaced a link"
[ -z "$(ls -A "$rep" "$work/plotted" | grep '\.tmp\.')" ] && ok || fail "a temporary file left: $(ls -A "$rep" "$work/plotted")"
# two report.sh at once on one folder: both exit 0, the report whole (private temporaries,
# the last rename wins)
for round in 1 2; do
  pids=()
  for k in 1 2; do
    "$src/scripts/report.sh" "$rep" >/dev/null 2>"$work/conc.$k.err" &
    pids+=($!)
  done
  for k in 1 2; do
    wait "${pids[$((k - 1))]}" || fail "report.sh at once (round $round): exit $?: $(cat "$work/conc.$k.err")"
  done
  cmp -s "$rep/report.md" "$work/report.whole" && ok || fail "report.sh at once (round $round): report.md is not a whole report"
done
[ -z "$(ls -A "$rep" | grep -v '\.json$\|^report\.md$\|^report\.real$')" ] && ok || fail "report.sh at once left: $(ls -A "$rep")"
# stdout that cannot be written (/dev/full): one line, non-zero, no traceback
if [ -c /dev/full ]; then
  while IFS='|' read -r what cmd; do
    # shellcheck disable=SC2086
    eval "$cmd" >/dev/full 2>"$work/full.err"
    rc=$?
    [ "$rc" -ne 0 ] && [ "$(wc -l <"$work/full.err")" -eq 1 ] && ! grep -q Traceback "$work/full.err" && ok \
      || fail "$what >/dev/full: exit $rc, $(wc -l <"$work/full.err") lines: $(head -3 "$work/full.err")"
  done <<EOF_FULL
compare.sh DIR|"$src/scripts/compare.sh" "$fixtures/sys"
compare.sh A B|"$src/scripts/compare.sh" "$fixtures/a" "$fixtures/a"
compare.sh FILE FILE|"$src/scripts/compare.sh" "$fixtures/a/lookup.json" "$fixtures/a/lookup.json"
report.sh|"$src/scripts/report.sh" "$rep"
plot.sh|"$src/scripts/plot.sh" "$work/ctx"
EOF_FULL
  if [ -f /usr/share/benchmark/compare.py ]; then
    "$src/scripts/compare.sh" --verbose "$fixtures/a/lookup.json" "$fixtures/a/lookup.json" >/dev/full 2>"$work/full.err"
    rc=$?
    [ "$rc" -ne 0 ] && [ "$(wc -l <"$work/full.err")" -eq 1 ] && ! grep -q Traceback "$work/full.err" && ok \
      || fail "compare.sh --verbose >/dev/full: exit $rc: $(head -3 "$work/full.err")"
  fi
fi
# a full file system: the message names report.md, nothing is left, the old report stays
if [ "$(id -u)" -eq 0 ] && private_tmpfs; then
  mkdir "$work/fullfs"
  unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=256k tmpfs "$1" &&
    cp "$2"/lookup_*.json "$1"/ && "$3/scripts/report.sh" "$1" >/dev/null && cp "$1/report.md" "$4" &&
    { head -c 1m /dev/zero >"$1/filler" 2>/dev/null; true; } &&
    "$3/scripts/report.sh" "$1" >/dev/null 2>"$5"
    rc=$?; cmp -s "$1/report.md" "$4" && [ -z "$(ls -A "$1" | grep -v "\.json$\|^report\.md$\|^filler$")" ] || rc=99
    exit "$rc"' _ "$work/fullfs" "$fixtures/sys" "$src" "$work/fullfs.old" "$work/fullfs.err" 2>&1
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(wc -l <"$work/fullfs.err")" -eq 1 ] \
    && grep -qF "report.sh: cannot write $work/fullfs/report.md: No space left on device" "$work/fullfs.err" && ok \
    || fail "report.sh on a full file system: exit $rc: $(cat "$work/fullfs.err")"
else
  skip_case "not root or no private mount namespace: report.sh on a full file system"
fi

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
