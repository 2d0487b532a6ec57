#!/usr/bin/env bash
# run_all.sh on tiny runs of the built binaries: flags reach their binaries, bad flags leave no folder,
# labels and --force, pinning, load averages, --system and --per-system runs and report, progress on
# a terminal only; stdout carries the folder alone.
#   cli_run_all.sh BIN_DIR SOURCE_DIR
real=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
source "$src/tests/cli/cli_lib.sh"
# The binaries behind wrappers that log each measuring run (not run_all.sh's flag checks,
# --helpxml, nor its --help, which asks whether the binary was built with upstream code):
# what ran, and in which order, whatever run_all.sh prints.
bindir=$work/bin
mkdir "$bindir"
for b in shm_allocation_bench shm_address_lookup_bench shm_transfer_bench; do
  printf '#!/usr/bin/env bash\ncase " $* " in *" --helpxml "*|" --help ") ;; *) echo "%s $*" >>"%s/ran" ;; esac\nexec "%s/%s" "$@"\n' \
    "$b" "$work" "$real" "$b" >"$bindir/$b"
  chmod +x "$bindir/$b"
done
# ran BINARY: it measured in the last run_all (which empties the log)
ran() { grep -q "^$1 " "$work/ran" 2>/dev/null; }
prefix=shmb_run_all_$$_
# The results folder is named -r, run from $work: a path that looks like an option.
results=$work/-r
run_all() {
  : >"$work/ran"
  (cd "$work" && "$src/scripts/run_all.sh" --bin-dir="$bindir" --results-dir=-r "$@" >"$work/out" 2>"$work/err")
}
lookup_tiny="--num_lookups=100 --min_time_ms=1"
transfer_tiny="--max_transfer_size_mb=0.00390625 --num_transfers=2 --time_per_size_ms=1"
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
[ "$(cat "$work/out")" = ./-r/per ] && ok || fail "per: stdout is not the folder alone: $(head -3 "$work/out")"
grep -Eq "^\[[0-9]+/[0-9]+\]" "$work/err" && fail "per: progress on a stderr that is no terminal" || ok
ls -A "$results" | grep -q partial && fail "per: a partial folder is left" || ok
[ "$(stat -c %a "$results/per")" = "$(printf '%o' $((0777 & ~$(umask))))" ] && ok || fail "per: folder mode $(stat -c %a "$results/per")"
# pinned by default to the last CPU this shell may use; each run's load average kept
last=$(taskset -cp $$ | sed 's/.*: *//' | tr ',-' '\n\n' | sort -n | tail -1)
for f in allocation lookup lookup_sweep transfer; do
  flags "$results/per/$f.json" | grep -q "cpu=$last " && ok || fail "per: $f not pinned to CPU $last: $(flags "$results/per/$f.json")"
done
/usr/bin/python3 - "$results/per/run.json" "$last" <<'EOF' && ok || fail "per: run.json: $(cat "$results/per/run.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cpu"] == int(sys.argv[2]) and [r["name"] for r in d["runs"]] == ["allocation", "lookup", "lookup_sweep", "transfer"]
assert all(len(r["load_before"]) == 3 and len(r["load_after"]) == 3 for r in d["runs"])
EOF
"$src/scripts/run_all.sh" --help | grep -q -- "--cpu=N .*pin" && ok || fail "--help does not say how to pin"

# Progress on a terminal only ('[k/N] bench system'); the load warning once per run_all.sh (planted
# here), on a terminal and on a pipe alike; nothing else on a pipe.
loud=$work/loud
mkdir "$loud"
for b in shm_allocation_bench shm_address_lookup_bench shm_transfer_bench; do
  printf '#!/usr/bin/env bash\ncase " $* " in *" --helpxml "*) ;; *) echo "%s: warning: the load average at start (9.00) exceeds the 2 CPUs; other work competes for them" >&2 ;; esac\nexec "%s/%s" "$@"\n' \
    "$b" "$real" "$b" >"$loud/$b"
  chmod +x "$loud/$b"
done
if command -v script >/dev/null; then
  printf '%q ' "$src/scripts/run_all.sh" --bin-dir="$loud" --results-dir="$work/tty" --label=t --flags=--shm_prefix=/$prefix "${tiny[@]}" >"$work/tty.cmd"
  # stderr the terminal script(1) makes, and its typescript what that terminal showed
  script -qec "bash $work/tty.cmd >/dev/null" "$work/tty.log" >/dev/null 2>&1 </dev/null
  tr -d '\r' <"$work/tty.log" >"$work/tty.txt"
  grep -q "^\[1/4\] allocation$" "$work/tty.txt" && grep -Eq "^\[4/4\] transfer, ~[0-9]+ (s|min) left$" "$work/tty.txt" \
    && [ "$(grep -c "^\[[0-9]/4\] " "$work/tty.txt")" -eq 4 ] && [ "$(awk 'length > 60' "$work/tty.txt" | grep -c "^\[")" -eq 0 ] \
    && ok || fail "progress on a terminal: $(cat "$work/tty.txt")"
  [ "$(grep -c "warning: the load average" "$work/tty.txt")" -eq 1 ] && ok || fail "terminal: the load warning not once: $(cat "$work/tty.txt")"
else
  skip_case "no script(1) to run run_all.sh on a terminal"
fi
(cd "$work" && "$src/scripts/run_all.sh" --bin-dir="$loud" --results-dir="$work/pipe" --label=p --flags=--shm_prefix=/$prefix "${tiny[@]}" 2>&1 >/dev/null | cat >"$work/pipe.err")
[ "$(grep -c "warning: the load average" "$work/pipe.err")" -eq 1 ] && [ "$(grep -vc "warning: the load average" "$work/pipe.err")" -eq 0 ] \
  && ok || fail "on a pipe: more than the load warning once: $(cat "$work/pipe.err")"

# An existing label: refused without --force, its files untouched; replaced with --force.
touch "$results/per/mine"
run_all --label=per --flags=--shm_prefix=/$prefix "${tiny[@]}"
[ $? -eq 2 ] && ok || fail "existing label: expected exit 2"
grep -q -- "--force" "$work/err" && ok || fail "existing label: message does not name --force: $(cat "$work/err")"
[ -e "$results/per/mine" ] && [ -s "$results/per/transfer.json" ] && ok || fail "existing label: folder changed"
ran shm_allocation_bench && fail "existing label: a binary ran" || ok
run_all --label=per --force --cpu=-1 "${tiny[@]}" -- --shm_prefix=/$prefix --seed=9 && ok || fail "--force: exit $?: $(tail -3 "$work/err")"
[ ! -e "$results/per/mine" ] && ok || fail "--force: the old folder's files are still there"
flags "$results/per/transfer.json" | grep -q "seed=9" && ok || fail "--force: '-- FLAGS' did not reach transfer"
flags "$results/per/transfer.json" | grep -q "cold=false" && ok || fail "--force: old transfer.json kept"
flags "$results/per/transfer.json" | grep -q "cpu=-1 " && ok || fail "--cpu=-1: pinned all the same"

# A bad value for the last binary: the first ones ran, but nothing is left.
run_all --label=badvalue --flags=--shm_prefix=/$prefix "${tiny[@]}" --transfer-flags=--num_transfers=0
rc=$?
[ "$rc" -eq 2 ] && ok || fail "bad value: exit $rc, expected 2"
grep -q -- "--num_transfers" "$work/err" && ok || fail "bad value: stderr does not name the flag"
ran shm_allocation_bench && ok || fail "bad value: the first binaries should have run"
no_trace badvalue && ok || fail "bad value left $(ls -A "$results")"

# An unknown flag, for any binary: refused before anything runs.
run_all --label=unknown --flags=--shm_prefix=/$prefix "${tiny[@]}" --lookup-flags=--methods=all
[ $? -eq 2 ] && ok || fail "unknown flag: expected exit 2"
grep -q -- "--methods" "$work/err" && ok || fail "unknown flag: stderr does not name it: $(cat "$work/err")"
ran shm_allocation_bench && fail "unknown flag: a binary ran" || ok
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
            "--sweep=1,x" "--sweep=0" "--sweep=1 --json_out=x" "--sweep=*" "--label=a"$'\n'"b" "--label=a/b" \
            "--cpu=x" "--cpu=-2" "--per-system" "--flags=--systems=mooncake,flowipc_classic"; do
  FLAGS_format=csv run_all --label=opts "${tiny[@]}" "$args"
  [ $? -eq 2 ] && ok || fail "run_all.sh ${args@Q}: expected exit 2"
  [ -s "$work/err" ] && ok || fail "run_all.sh ${args@Q}: no message"
  [ -s "$work/ran" ] && fail "run_all.sh ${args@Q}: a binary ran" || ok
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

# --system: each binary once, paired (--systems=mooncake,FLOWIPC...: mooncake the baseline),
# into BENCH_paired.json and .txt; then the report from their ratio rows.
# Binaries built with upstream code (docs/upstream.md) add mooncake_upstream to the allocation run.
three=mooncake,flowipc_classic,flowipc_jemalloc
alloc_three=$three
"$real/shm_allocation_bench" --help | grep -q '^upstream: built against Mooncake' && alloc_three=$three,mooncake_upstream
systems_of() { if [ "$1" = allocation ]; then echo "$alloc_three"; else echo "$three"; fi; }
paired_ok() {  # FILE SYSTEMS: a paired run of SYSTEMS, every system's rows and ratio rows
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
systems = sys.argv[2].split(",")
names = [b["name"] for b in d["benchmarks"]]
assert "systems=%s " % sys.argv[2] in d["context"]["flags"] + " ", d["context"]["flags"]
for s in systems + ["mooncake_control"]:
    assert any(n.endswith("/system:" + s) for n in names), s
for s in systems[1:] + ["mooncake_control"]:
    ratios = [b for b in d["benchmarks"] if b["name"].endswith("/system:%s/vs:mooncake" % s)]
    assert ratios and all("ratio" in b and "saved_ns" in b and "rounds" in b for b in ratios), s
EOF
}
run_all --label=sys --system --flags="--shm_prefix=/$prefix" "${tiny_sys[@]}" \
  && ok || fail "--system: exit $?: $(tail -3 "$work/err")"
[ "$(cat "$work/out")" = ./-r/sys ] && ok || fail "--system: stdout is not the folder alone: $(head -3 "$work/out")"
# the verdict sentences of report.md end the run on stderr, the same words (folded)
/usr/bin/python3 - "$results/sys/report.md" "$work/err" <<'EOF' && ok || fail "--system: the verdict is not on stderr: $(tail -3 "$work/err")"
import sys
verdict = open(sys.argv[1]).read().split("## Verdict\n", 1)[1].split("\n## ", 1)[0]
said = "".join(l for l in verdict.splitlines() if l)
assert said.startswith("SHM-classic against Mooncake: ") and said in open(sys.argv[2]).read().replace("\n", "")
EOF
for f in allocation lookup transfer workload zero_copy; do
  paired_ok "$results/sys/${f}_paired.json" "$(systems_of "$f")" && [ -s "$results/sys/${f}_paired.txt" ] \
    && ok || fail "--system: ${f}_paired.json is no paired run of the three systems"
done
[ "$(ls "$results/sys" | grep -c 'mooncake\|flowipc')" -eq 0 ] && [ ! -e "$results/sys/reps" ] && ok \
  || fail "--system: per-system files without --per-system: $(ls "$results/sys" | tr '\n' ' ')"
# thirteen runs (zero_copy the fifth), one per point of the axes, one per count of submitters the
# CPUs allow, each pinned, the lookup with --peer_process; and the allocators' space
subs=(); for n in 2 4 8; do [ "$n" -le "$(nproc)" ] && subs+=("$n"); done
runs=$((13 + ${#subs[@]}))
grep -q -- "^shm_allocation_bench --allocator=space --pool_mb=1024 --cpu=$last " "$work/ran" && ok \
  || fail "--system: no pinned space run: $(cat "$work/ran")"
[ "$(grep -vc -- --allocator=space "$work/ran")" -eq "$runs" ] \
  && [ "$(grep -cE -- "--systems=($three|$alloc_three) --cpu=$last " "$work/ran")" -eq "$runs" ] \
  && grep -q -- "^shm_allocation_bench --systems=$alloc_three --cpu=$last " "$work/ran" \
  && ok || fail "--system: $(wc -l <"$work/ran") runs, expected $runs paired and pinned: $(cat "$work/ran")"
# the axes: a paired run per point, its flags after the transfer's (--num_segments=2 there); the
# report's "Where the answer changes" has each point's rows and a break-even sentence per flavour
for n in 10 100 1000 10000; do
  paired_ok "$results/sys/transfer_axis_buffers_$n.json" "$three" \
    && flags "$results/sys/transfer_axis_buffers_$n.json" | grep -q " num_segments=$n .*transfer_size_kb=4 " \
    && [ "$(grep -cE "^\| $n \| (SHM-classic|SHM-jemalloc|mooncake_control \(A/A control\)) \| " "$results/sys/report.md")" -eq 3 ] \
    && ok || fail "--system: the axis point of $n buffers: $(flags "$results/sys/transfer_axis_buffers_$n.json")"
done
paired_ok "$results/sys/transfer_axis_size_1.json" "$three" && flags "$results/sys/transfer_axis_size_1.json" | grep -q " num_segments=2 .*transfer_size_kb=1 " \
  && [ "$(grep -c "^| 1 KB | " "$results/sys/report.md")" -eq 3 ] && [ -s "$results/sys/axes.png" ] \
  && [ "$(grep -cE "^- SHM-(classic|jemalloc \(its write path\)) (saves at least 5.0%|never saves at least 5.0%) of (a 4 KB request|Mooncake's request) " "$results/sys/report.md")" -eq $((${#subs[@]} ? 8 : 6)) ] \
  && ok || fail "--system: the size axis or its sentences: $(grep "^- SHM" "$results/sys/report.md")"
for n in 32 256 2048; do
  paired_ok "$results/sys/transfer_axis_submit_$n.json" "$three" \
    && flags "$results/sys/transfer_axis_submit_$n.json" | grep -q " descriptors_per_submit=$n .*num_segments=100 " \
    && [ "$(grep -cE "^\| $n \| (SHM-classic|SHM-jemalloc|mooncake_control \(A/A control\)) \| " "$results/sys/report.md")" -eq 3 ] \
    && ok || fail "--system: the axis point of $n descriptors per submit: $(flags "$results/sys/transfer_axis_submit_$n.json")"
done
grep -q "^### Descriptors per submit (the 4 KB request per descriptor, 100 registered buffers)" "$results/sys/report.md" \
  && [ "$(grep -c "^| 1 | " "$results/sys/report.md")" -eq $((${#subs[@]} ? 6 : 3)) ] && ok || fail "--system: no descriptors-per-submit table"
# threads submitting at once: mooncake, SHM-classic, SHM-jemalloc (a borrower process per submitter)
# and the control at N
for n in "${subs[@]}"; do
  /usr/bin/python3 - "$results/sys/transfer_axis_threads_$n.json" "$n" <<'EOF' \
    && grep -cE "^\| $n \| (SHM-classic|SHM-jemalloc|mooncake_control \(A/A control\)) \| " "$results/sys/report.md" | grep -qx 3 \
    && ok || fail "--system: the axis point of $n submitters: $(grep "^| $n |" "$results/sys/report.md")"
import json, sys
d, n = json.load(open(sys.argv[1])), sys.argv[2]
assert " submitters=%s " % n in " " + d["context"]["flags"] + " " and " num_segments=100 " in " " + d["context"]["flags"] + " "
names = [b["name"] for b in d["benchmarks"]]
for s in ("mooncake", "flowipc_classic", "flowipc_jemalloc", "mooncake_control", "flowipc_classic/vs:mooncake",
          "flowipc_jemalloc/vs:mooncake", "mooncake_control/vs:mooncake"):
    assert "shm_transfer/request/size_kb:4/threads:%s/system:%s" % (n, s) in names, s
EOF
done
[ ${#subs[@]} -eq 0 ] || grep -q "^### Threads submitting at once (the 4 KB request, 100 registered buffers)" "$results/sys/report.md" \
  && ok || fail "--system: no threads table"
grep "^shm_address_lookup_bench " "$work/ran" | grep -q -- --peer_process && ok || fail "--system: the lookup without --peer_process"
grep -q '"name": "shm_transfer/workload/request/model:llama3_8b/system:flowipc_classic/vs:mooncake"' "$results/sys/workload_paired.json" \
  && ok || fail "--system: no paired workload rows"
[ -s "$results/sys/paired.png" ] && grep -q "^## Per request" "$results/sys/report.md" && grep -q "mooncake_control: A/A control" "$results/sys/report.md" \
  && grep -q "^- Load average (1, 5, 15 min) before and after each run: allocation_paired " "$results/sys/report.md" \
  && ok || fail "--system: no paired report.md"
"$src/scripts/compare.sh" "$results/sys" >"$work/cmp" 2>&1 && grep -q "^== workload: paired, against mooncake" "$work/cmp" \
  && ok || fail "--system: compare.sh on the folder: $(head -3 "$work/cmp")"
# a paired run's rounds are its repetitions: --repetitions is refused, nothing run
run_all --label=reps --system --flags="--shm_prefix=/$prefix --repetitions=2" "${tiny_sys[@]}"
[ $? -eq 2 ] && grep -q "repetitions" "$work/err" && [ ! -s "$work/ran" ] && no_trace reps && ok \
  || fail "--system --repetitions=2: not refused before running: $(tail -2 "$work/err")"

# --per-system: the paired runs, then the three systems' files for every binary, two
# repetitions each run on its own (--repetitions=1), A B C A B C, merged into one JSON
# per system; the report still of the paired runs.
run_all --label=persys --system --per-system --flags="--shm_prefix=/$prefix --repetitions=2" "${tiny_sys[@]}" \
  && ok || fail "--per-system: exit $?: $(tail -3 "$work/err")"
for f in allocation lookup lookup_sweep transfer workload; do
  for s in mooncake flowipc_classic flowipc_jemalloc; do
    /usr/bin/python3 - "$results/persys/${f}_$s.json" "$s" <<'EOF' && ok || fail "--per-system: ${f}_$s.json is not two merged repetitions of $s"
import json, sys
d = json.load(open(sys.argv[1]))
it = [b for b in d["benchmarks"] if b["run_type"] == "iteration"]
agg = [b for b in d["benchmarks"] if b["run_type"] == "aggregate"]
names = set(b["name"] for b in it)
assert d["context"]["system"] == sys.argv[2] and "repetitions=2 " in d["context"]["flags"]
assert sorted(b["repetition_index"] for b in it) == sorted([0, 1] * len(names))
assert all(b["repetitions"] == 2 for b in it) and len(agg) == 4 * len(names)
EOF
    for k in 1 2; do
      grep -qx "# system: $s" "$results/persys/reps/${f}_$s.$k.txt" && grep -q "repetitions=1 " <(unwrap "$results/persys/reps/${f}_$s.$k.txt") \
        && ok || fail "--per-system: reps/${f}_$s.$k.txt is no one-repetition $s run"
    done
  done
  [ ! -e "$results/persys/$f.json" ] && ok || fail "--per-system: a plain $f.json"
done
for f in allocation lookup transfer workload; do
  paired_ok "$results/persys/${f}_paired.json" "$(systems_of "$f")" \
    && flags "$results/persys/${f}_paired.json" | grep -q "repetitions=1 " && ok || fail "--per-system: ${f}_paired.json"
done
# interleaved: per binary (the transfer sweep and the workload apart), the
# systems in turn, round after round
for mode in -v ""; do
  order=$(grep "^shm_transfer_bench " "$work/ran" | grep -v -- --systems= | grep $mode -- "--workload=" \
    | grep -o -- "--system=[a-z_]*" | cut -d= -f2 | tr '\n' ' ')
  [ "$order" = "mooncake flowipc_classic flowipc_jemalloc mooncake flowipc_classic flowipc_jemalloc " ] && ok \
    || fail "--per-system: not interleaved (${mode:-workload}): $order"
done
# thirteen paired runs and the submitters' (the axes among them), then five (allocation, lookup,
# lookup_sweep, transfer, workload) x 3 systems x 2
[ "$(grep -c -- "--repetitions=1 --json_out=" "$work/ran")" -eq $((runs + 30)) ] && [ "$(wc -l <"$work/ran")" -eq $((runs + 31)) ] && ok \
  || fail "--per-system: $(wc -l <"$work/ran") runs, expected $runs + 30 of one repetition and the space run"
# compare.sh on the per-system files alone pairs the workload's rows too
mkdir "$work/persys"
cp "$results/persys/"*_mooncake.json "$results/persys/"*_flowipc_*.json "$work/persys/"
"$src/scripts/compare.sh" "$work/persys" >"$work/cmp" 2>&1
grep -q "^== workload: mooncake against flowipc_classic" "$work/cmp" \
  && grep -q "^shm_transfer/workload/request/model:llama3_8b " "$work/cmp" && ok \
  || fail "--per-system: compare.sh leaves the workload out: $(grep '^==' "$work/cmp" | tr '\n' ' ')"
grep "^shm_address_lookup_bench " "$work/ran" | grep -v -- --sweep_segments=1 | grep -q -- --peer_process \
  && ! grep -- --sweep_segments=1 "$work/ran" | grep -q -- --peer_process \
  && ok || fail "--per-system: the lookup without --peer_process, or the sweep with it"
[ -s "$results/persys/gain.png" ] && grep -q "^## Per request" "$results/persys/report.md" && ok || fail "--per-system: no plots or report.md"
run_all --label=classic --system=flowipc_classic --flags=--shm_prefix=/$prefix "${tiny_sys[@]}" \
  && ok || fail "--system=flowipc_classic: exit $?: $(tail -3 "$work/err")"
paired_ok "$results/classic/transfer_paired.json" mooncake,flowipc_classic \
  && ok || fail "--system=flowipc_classic: transfer_paired.json is no paired run of mooncake and flowipc_classic"
[ "$(ls "$results/classic" | grep -c '\.txt$\|\.json$')" -eq $((2 * (runs + 1) + 1)) ] && ok \
  || fail "--system=flowipc_classic: $(ls "$results/classic" | grep -c '\.txt$\|\.json$') files, expected $((2 * (runs + 1) + 1)) ($((runs + 1)) runs x 2 and run.json)"
grep -q "SHM-classic" "$results/classic/report.md" && ! grep -q "SHM-jemalloc" "$results/classic/report.md" \
  && ok || fail "--system=flowipc_classic: the report is not of mooncake and SHM-classic"

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left"
finish
