#!/usr/bin/env bash
# run_all.sh's options on tiny runs of the built binaries (--bin-dir: no build):
# per-binary flags reach only their binary, common flags reach all, a bad flag
# leaves no folder (and an unknown one runs nothing), an existing label is
# refused without --force and replaced with it, --system writes both systems,
# flags that print instead of measuring (help, version; from a --flagfile too)
# are refused. Every run is as small as the binaries allow: one size, one
# posix allocator, a few lookups and transfers.
#   cli_run_all.sh BIN_DIR SOURCE_DIR
bindir=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
source "$src/tests/cli_lib.sh"
prefix=shmb_run_all_$$_
# The results folder is named -r, run from $work: a path that looks like an option.
results=$work/-r
run_all() {
  (cd "$work" && "$src/scripts/run_all.sh" --bin-dir="$bindir" --results-dir=-r "$@" >"$work/out" 2>"$work/err")
}
lookup_tiny="--num_lookups=100 --min_time_ms=1"
transfer_tiny="--max_transfer_size_kb=4 --num_transfers=2 --time_per_size_ms=1"
tiny=(--allocation-flags="--num_iterations=1 --max_size_kb=4 --allocator=posix" --lookup-flags="$lookup_tiny"
      --sweep=1 --transfer-flags="$transfer_tiny")
# --system picks the allocator: no --allocator
tiny_sys=(--allocation-flags="--num_iterations=1 --max_size_kb=4" --lookup-flags="$lookup_tiny"
          --sweep=1 --transfer-flags="$transfer_tiny --num_segments=2")
# flags NAME.json: the flags line of a run's JSON context
flags() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["context"]["flags"])' "$1"; }
# nothing of LABEL in the results folder: neither the folder nor a hidden partial one
no_trace() { ! ls -A "$results" 2>/dev/null | grep -q -- "$1"; }

# Per-binary flags: --methods and --cold exist only in the transfer binary, --touch only in the
# allocation one: the run succeeds only if each reaches its binary alone.
run_all --label=per --flags="--shm_prefix=/$prefix --seed=7" \
  --allocation-flags="--num_iterations=1 --max_size_kb=4 --allocator=posix --touch" \
  --lookup-flags="$lookup_tiny --pattern=sequential" --sweep=1,10 \
  --transfer-flags="$transfer_tiny --methods=all --cold" \
  && ok || fail "per-binary flags: exit $?: $(tail -3 "$work/err")"
for f in allocation lookup lookup_sweep transfer; do
  [ -s "$results/per/$f.txt" ] && [ -s "$results/per/$f.json" ] && ok || fail "per: no $f.txt/.json"
  flags "$results/per/$f.json" | grep -q "seed=7" && ok || fail "per: --flags did not reach $f"
done
flags "$results/per/allocation.json" | grep -q "touch=true" && ok || fail "per: allocation lacks --touch"
flags "$results/per/transfer.json" | grep -q "cold=true" && ok || fail "per: transfer lacks --cold"
flags "$results/per/transfer.json" | grep -q "methods=all" && ok || fail "per: transfer lacks --methods=all"
for f in lookup lookup_sweep; do
  flags "$results/per/$f.json" | grep -q "pattern=sequential" && ok || fail "per: $f lacks --pattern"
done
flags "$results/per/lookup_sweep.json" | grep -q "sweep_segments=1,10 " && ok || fail "per: --sweep did not reach the sweep"
flags "$results/per/lookup.json" | grep -q "sweep_segments= " && ok || fail "per: --sweep reached lookup"
grep -q "run_all.sh: results in ./-r/per" "$work/err" && ok || fail "per: no closing line"
ls -A "$results" | grep -q partial && fail "per: a partial folder is left" || ok
[ "$(stat -c %a "$results/per")" = "$(printf '%o' $((0777 & ~$(umask))))" ] && ok || fail "per: folder mode $(stat -c %a "$results/per")"

# An existing label: refused without --force, its files untouched; replaced with --force.
touch "$results/per/mine"
run_all --label=per --flags=--shm_prefix=/$prefix "${tiny[@]}"
[ $? -eq 2 ] && ok || fail "existing label: expected exit 2"
grep -q -- "--force" "$work/err" && ok || fail "existing label: message does not name --force: $(cat "$work/err")"
[ -e "$results/per/mine" ] && [ -s "$results/per/transfer.json" ] && ok || fail "existing label: folder changed"
grep -q "run_all.sh: allocation:" "$work/err" && fail "existing label: a binary ran" || ok
run_all --label=per --force "${tiny[@]}" -- --shm_prefix=/$prefix --seed=9 && ok || fail "--force: exit $?: $(tail -3 "$work/err")"
[ ! -e "$results/per/mine" ] && ok || fail "--force: the old folder's files are still there"
flags "$results/per/transfer.json" | grep -q "seed=9" && ok || fail "--force: '-- FLAGS' did not reach transfer"
flags "$results/per/transfer.json" | grep -q "cold=false" && ok || fail "--force: old transfer.json kept"

# A bad value for the last binary: the first ones ran, but nothing is left.
run_all --label=badvalue --flags=--shm_prefix=/$prefix "${tiny[@]}" --transfer-flags=--num_transfers=0
rc=$?
[ "$rc" -eq 2 ] && ok || fail "bad value: exit $rc, expected 2"
grep -q -- "--num_transfers" "$work/err" && ok || fail "bad value: stderr does not name the flag"
grep -q "run_all.sh: allocation:" "$work/err" && ok || fail "bad value: the first binaries should have run"
no_trace badvalue && ok || fail "bad value left $(ls -A "$results")"

# An unknown flag, for any binary: refused before anything runs.
run_all --label=unknown --flags=--shm_prefix=/$prefix "${tiny[@]}" --lookup-flags=--methods=all
[ $? -eq 2 ] && ok || fail "unknown flag: expected exit 2"
grep -q -- "--methods" "$work/err" && ok || fail "unknown flag: stderr does not name it: $(cat "$work/err")"
grep -q "run_all.sh: allocation:" "$work/err" && fail "unknown flag: a binary ran" || ok
no_trace unknown && ok || fail "unknown flag left $(ls -A "$results")"

# Options run_all.sh owns, bad option values, and flags that print instead of measuring
# (help or the version would be saved as results), also from a --flagfile or the
# environment: exit 2, nothing run, nothing written.
printf -- '--format=csv\n' >"$work/format.flags"
printf -- '# ours\n--json_out=%s/x.json\n' "$work" >"$work/json.flags"
printf -- '--flagfile=%s/version.flags\n' "$work" >"$work/nested.flags"
printf -- '--version\n' >"$work/version.flags"
before=$(ls -A "$results" | wc -l)
for args in "--flags=--json_out=x.json" "--transfer-flags=--system=mooncake" "--system=posix" \
            "--system=mooncake" "--label=../x" "--label=.x" "--bogus" "--lookup-flags" \
            "--flags=--helpshort" "--transfer-flags=--version" "--allocation-flags=-help" \
            "--lookup-flags=--helpon=x" "--flags=--flagfile=format.flags" "--transfer-flags=--flagfile=json.flags" \
            "--flags=--flagfile=nested.flags" "--flags=--tryfromenv=format" "--flags=--seed=1"$'\n'"--json_out=x" \
            "--sweep=1,x" "--sweep=0" "--sweep=1 --json_out=x" "--sweep=*" "--label=a"$'\n'"b" "--label=a/b"; do
  FLAGS_format=csv run_all --label=opts "${tiny[@]}" "$args"
  [ $? -eq 2 ] && ok || fail "run_all.sh ${args@Q}: expected exit 2"
  [ -s "$work/err" ] && ok || fail "run_all.sh ${args@Q}: no message"
  grep -q "run_all.sh: allocation:" "$work/err" && fail "run_all.sh ${args@Q}: a binary ran" || ok
  [ "$(ls -A "$results" | wc -l)" -eq "$before" ] && ok || fail "run_all.sh ${args@Q} left $(ls -A "$results")"
  rm -rf "$results/opts" "$results/a"$'\n'"b"  # each case on its own
done
# --helpxml prints the XML that checks the flags: in a flagfile it is seen when the run
# writes no JSON
printf -- '--helpxml\n' >"$work/xml.flags"
run_all --label=xml --flags=--shm_prefix=/$prefix "${tiny[@]}" --lookup-flags=--flagfile=xml.flags
[ $? -eq 2 ] && grep -q "lookup wrote no results" "$work/err" && ok || fail "--helpxml in a flagfile: not refused: $(tail -1 "$work/err")"
no_trace xml && ok || fail "--helpxml in a flagfile left $(ls -A "$results")"
"$src/scripts/run_all.sh" --help >"$work/out" 2>&1 && grep -q -- "--transfer-flags" "$work/out" \
  && ok || fail "--help: exit $? or no usage"

# --system: both systems' files for every binary, the Flow-IPC one by default flowipc_jemalloc.
run_all --label=sys --system --flags=--shm_prefix=/$prefix "${tiny_sys[@]}" && ok || fail "--system: exit $?: $(tail -3 "$work/err")"
for f in allocation lookup lookup_sweep transfer; do
  for s in mooncake flowipc_jemalloc; do
    [ -s "$results/sys/${f}_$s.txt" ] && [ -s "$results/sys/${f}_$s.json" ] && ok || fail "--system: no ${f}_$s"
    grep -qx "# system: $s" "$results/sys/${f}_$s.txt" && ok || fail "--system: ${f}_$s.txt is no $s run"
  done
  [ ! -e "$results/sys/$f.json" ] && ok || fail "--system: a plain $f.json"
done
run_all --label=classic --system=flowipc_classic --flags=--shm_prefix=/$prefix "${tiny_sys[@]}" \
  && ok || fail "--system=flowipc_classic: exit $?: $(tail -3 "$work/err")"
grep -qx "# system: flowipc_classic" "$results/classic/transfer_flowipc_classic.txt" \
  && ok || fail "--system=flowipc_classic: no transfer_flowipc_classic.txt"
[ "$(ls "$results/classic" | wc -l)" -eq 16 ] && ok || fail "--system=flowipc_classic: $(ls "$results/classic" | wc -l) files, expected 16"

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left"
finish
