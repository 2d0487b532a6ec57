#!/usr/bin/env bash
# Runs the three benchmarks and saves their tables (.txt) and JSON (.json) in
# results/LABEL/: allocation, lookup, lookup_sweep (every path at 1 to 10000
# segments) and transfer; with --system, paired runs of the real systems and
# report.md (below). Every run is pinned to one CPU (--cpu). Installs what is
# missing and builds Release into build/ first, unless --bin-dir names binaries
# already built. Prints the results folder on stdout (d=$(./scripts/run_all.sh
# ...) works); progress ("[k/N] bench system", the time left) goes to stderr when
# stderr is a terminal, and the binaries' load-average warning once, not per run.
#
#   ./scripts/run_all.sh [OPTIONS] [-- FLAGS...]
#
#   --label=NAME               the results folder's name (default: date and time)
#   --force                    replace an existing results/NAME (refused without it)
#   --quick                    CI-sized runs (--num_iterations=100,
#                              --num_lookups=1000, --num_transfers=100
#                              --time_per_size_ms=200) and a sweep of 1 to 1000 segments
#   --flags="FLAGS"            for every binary: the common flags (--cpu=N,
#                              --repetitions=N, --seed=N, --shm_prefix=/NAME_);
#                              "-- FLAGS..." at the end is the same
#   --allocation-flags="FLAGS" for shm_allocation_bench only
#   --lookup-flags="FLAGS"     for shm_address_lookup_bench only (both of its runs)
#   --transfer-flags="FLAGS"   for shm_transfer_bench only, e.g. "--methods=all --cold"
#   --sweep=LIST               the segment counts of lookup_sweep (default
#                              1,10,100,1000,10000; with --quick 1,10,100,1000)
#   --system[=FLOWIPC,...]     the real systems, into one folder: mooncake and the Flow-IPC
#                              flavours (default both: flowipc_classic,flowipc_jemalloc),
#                              measured paired: each binary runs ONCE with
#                              --systems=mooncake,FLOWIPC,... (every system in one process,
#                              slice by slice in turn, the order balanced round by round, with
#                              mooncake's A/A control mooncake_control) into
#                              BENCH_paired.json and .txt: allocation_paired, lookup_paired
#                              (with --peer_process: the receiver's attach is measured only
#                              so), transfer_paired (to 16 MB), workload_paired (a
#                              KV-cache workload: traces/sample.jsonl's first 50 requests,
#                              llama3_8b, 16-token blocks, 16 MB each) and zero_copy_paired
#                              (--zero_copy, 4 KB to 256 MB x4: Mooncake's whole request
#                              against each flavour's hand-off, no copy); then the axes of
#                              report.md's "Where the answer changes", a paired run per point
#                              (the transfer's flags, then the point's): the 4 KB request at
#                              10, 100, 1000, 10000 registered buffers (transfer_axis_buffers_N)
#                              and at 1 KB (transfer_axis_size_1; 8 KB to 16 MB are
#                              transfer_paired's), and at 32, 256, 2048 descriptors per
#                              submit (transfer_axis_submit_N; 1 is buffers_100), and with 2, 4, 8
#                              threads submitting at once, up to the CPUs allowed
#                              (transfer_axis_threads_N; 1 is buffers_100). A paired run's rounds
#                              are its repetitions: --repetitions applies to --per-system
#                              alone. Ends with the plots (plot.sh: paired.png, axes.png, and with
#                              --per-system the per-system ones) and report.md (report.sh:
#                              the verdict, one page, from the ratio rows), whose opening
#                              verdict sentences end the run on stderr; if they fail,
#                              the measurements are kept all the same. Binaries built
#                              against the user's Mooncake (their --help says "upstream:
#                              built against Mooncake ...", docs/upstream.md) also run
#                              mooncake_upstream in allocation_paired: report.md then has
#                              its "Model against upstream" table.
#   --per-system               with --system, also the per-system files of the original
#                              README's diff workflow: each binary with --system=SYSTEM into
#                              BENCH_SYSTEM.json and .txt (lookup_sweep too, to 1000
#                              segments unless --sweep says), 9 repetitions (the U-test's
#                              minimum; --flags=--repetitions=N to change) interleaved: each
#                              a run of its own with --repetitions=1, the systems in turn
#                              (A B C A B C ...), merged into BENCH_SYSTEM.json as
#                              --repetitions=N writes it (reps/BENCH_SYSTEM.K.json and .txt
#                              hold each run). report.md still reads the paired runs.
#   --cpu=N                    pin every run's measuring thread to CPU N (the binaries'
#                              --cpu). Default: the last CPU this shell may use (taskset -cp
#                              $$, else nproc - 1), so that the systems of a paired run share
#                              one CPU and other work lands elsewhere first; --cpu=-1: do not
#                              pin. Each run's load average before and after goes into
#                              run.json in the folder (report.md shows it).
#   --bin-dir=DIR              use the binaries in DIR: no install, no build
#   --results-dir=DIR          the folder that holds the labels (default: results)
#
# FLAGS are split at blanks; when a flag comes twice the later one wins: --cpu's,
# --system's and --quick's, then --flags, then the binary's own. Every flag is checked before
# anything runs (an unknown flag: nothing is measured); the runs write into a hidden
# folder that becomes results/NAME only when every run succeeded, so a failed run (a
# bad value, Ctrl-C) leaves no folder behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "run_all.sh: $*" >&2; exit 2; }

quick=0
force=0
label=$(date +%Y%m%d-%H%M%S)
common=()
alloc_user=()
lookup_user=()
transfer_user=()
system=
sweep=
per_system=0
cpu=
bindir=
results=$root/results
# every line of the value, not only its first (read stops at a newline without -d '')
words() { local -n into=$1; read -r -d '' -a into <<<"$2" || true; }
while [ $# -gt 0 ]; do
  case "$1" in
    --label|--flags|--allocation-flags|--lookup-flags|--transfer-flags|--sweep|--bin-dir|--results-dir|--cpu)
      [ $# -ge 2 ] || die "$1 needs a value"
      opt=$1
      shift
      set -- "$opt=$1" "${@:2}" ;;
  esac
  case "$1" in
    --quick) quick=1 ;;
    --force) force=1 ;;
    --label=*) label=${1#*=} ;;
    --flags=*) words common "${1#*=}" ;;
    --allocation-flags=*) words alloc_user "${1#*=}" ;;
    --lookup-flags=*) words lookup_user "${1#*=}" ;;
    --transfer-flags=*) words transfer_user "${1#*=}" ;;
    --sweep=*) sweep=${1#*=}; [ -n "$sweep" ] || die "--sweep needs a list, e.g. 1,10,100" ;;
    --system) system=flowipc_classic,flowipc_jemalloc ;;
    --system=*) system=${1#*=} ;;
    --per-system) per_system=1 ;;
    --cpu=*) cpu=${1#*=} ;;
    --bin-dir=*) bindir=${1#*=} ;;
    --results-dir=*) results=${1#*=} ;;
    --) shift; common+=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_all.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
case "$label" in
  ""|*/*|.|..|.*|*[[:cntrl:]]*)
    die "--label must be a plain folder name (no '/', no control character, not starting with '.'), not ${label@Q}" ;;
esac
if [ -n "$sweep" ] && ! [[ $sweep =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
  die "--sweep=${sweep@Q}: a list of positive integers, e.g. 1,10,100"
fi
flavours=()
IFS=, read -r -a flavours <<<"$system"
for s in "${flavours[@]}"; do
  case "$s" in
    flowipc_jemalloc|flowipc_classic) ;;
    *) die "--system=$system: the Flow-IPC systems to run beside mooncake, a list of flowipc_classic and flowipc_jemalloc (default both)" ;;
  esac
done
[ "$per_system" -eq 0 ] || [ -n "$system" ] || die "--per-system goes with --system: the per-system files beside the paired runs"
if [ -z "$cpu" ]; then
  # the highest CPU of this shell's affinity list ("0-3", "0,2"), else the last one online
  cpu=$(taskset -cp $$ 2>/dev/null | sed 's/.*: *//' | tr ',-' '\n\n' | sort -n | tail -1)
  [[ $cpu =~ ^[0-9]+$ ]] || cpu=$(($(nproc) - 1))
fi
[[ $cpu =~ ^(-1|[0-9]+)$ ]] || die "--cpu=${cpu@Q}: a CPU number, or -1 not to pin"
[ -n "$results" ] || die "--results-dir must not be empty"
case "$results" in -*) results=./$results ;; esac  # a path, never an option to mkdir or mv
for f in "${common[@]}" "${alloc_user[@]}" "${lookup_user[@]}" "${transfer_user[@]}"; do
  case "$f" in
    --json_out*|-json_out*|--format*|-format*) die "'$f': run_all.sh writes the table (.txt) and --json_out itself" ;;
    --system*|-system*) die "'$f': use run_all.sh --system[=flowipc_classic,flowipc_jemalloc], which runs mooncake beside them" ;;
    --help*|-help*|--version*|-version*) die "'$f' prints help or the version instead of measuring: nothing to save" ;;
  esac
done
out=$results/$label
if [ -e "$out" ] && [ "$force" -eq 0 ]; then
  die "$out exists: choose another --label, or add --force to replace it"
fi

if [ -z "$bindir" ]; then
  "$root/scripts/install_deps.sh" >&2
  echo "run_all.sh: building Release into $root/build/" >&2
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$root/build" -j "$(nproc)" --target shm_allocation_bench shm_address_lookup_bench shm_transfer_bench >&2
  bindir=$root/build/benchmark/shm
fi
for b in shm_allocation_bench shm_address_lookup_bench shm_transfer_bench; do
  [ -x "$bindir/$b" ] || die "no $bindir/$b: build it, or point --bin-dir at the folder that holds it"
done

# What the report's questions need in a few minutes, before the user's flags, which win.
reps=()
[ -z "$system" ] || reps=(--repetitions=9)
allocation_flags=(--cpu="$cpu")
lookup_flags=(--cpu="$cpu")
transfer_flags=(--cpu="$cpu")
if [ "$quick" -eq 1 ]; then
  allocation_flags+=(--num_iterations=100)
  lookup_flags+=(--num_lookups=1000)
  sweep=${sweep:-1,10,100,1000}
  transfer_flags+=(--num_transfers=100 --time_per_size_ms=200)
elif [ -z "$sweep" ]; then
  sweep=1,10,100,1000,10000
  [ -z "$system" ] || sweep=1,10,100,1000  # with --per-system it runs 3 x 9 times
fi
lookup_sweep_flags=(--sweep_segments="$sweep" "${lookup_flags[@]}" "${common[@]}" "${lookup_user[@]}")
systems=("")
if [ -n "$system" ]; then
  systems=(mooncake "${flavours[@]}")
  lookup_flags+=(--peer_process)
  # 16 MB unless the user gave a largest size
  [[ " ${common[*]} ${transfer_user[*]}" == *max_transfer_size_mb* ]] || transfer_flags+=(--max_transfer_size_mb=16)
fi
# With --system, the KV-cache workload too: the sample trace's first 50 requests of
# llama3_8b in vLLM's 16-token blocks, each cut to 16 MB (256 descriptors of 64 KB).
workload_flags=(--cpu="$cpu" --workload="$root/traces/sample.jsonl" --requests=50 --block_tokens=16
                --max_request_mb=16 "${common[@]}")
# With --system, the zero-copy question: 4 KB to 256 MB, x4, a quarter second a size
# (the transfer's flags after, which win).
zero_copy_flags=(--cpu="$cpu" --zero_copy --transfer_size_kb=4 --time_per_size_ms=250)
[[ " ${common[*]} ${transfer_user[*]}" == *max_transfer_size_* ]] || zero_copy_flags+=(--max_transfer_size_mb=256)
[ "$quick" -eq 0 ] || zero_copy_flags+=(--time_per_size_ms=100)  # 31 rounds a size still: an interval Holm can pass
zero_copy_flags+=("${common[@]}" "${transfer_user[@]}")
allocation_flags+=("${common[@]}" "${alloc_user[@]}")
lookup_flags+=("${common[@]}" "${lookup_user[@]}")
transfer_flags+=("${common[@]}" "${transfer_user[@]}")

# Every run: NAME BINARY FLAGS...: paired (BENCH_paired, with --system), then the
# per-system passes (BENCH_SYSTEM, with --per-system) or the plain runs (BENCH).
paired_runs=()
runs=()
declare -A bin_of=([allocation]=shm_allocation_bench [lookup]=shm_address_lookup_bench
                   [lookup_sweep]=shm_address_lookup_bench [transfer]=shm_transfer_bench
                   [workload]=shm_transfer_bench [zero_copy]=shm_transfer_bench)
# cmd BENCH: its binary, then its flags (BENCH_flags), into $cmd
cmd() { local -n f=${1}_flags; cmd=("$bindir/${bin_of[$1]}" "${f[@]}"); }
if [ -n "$system" ]; then
  list=$(IFS=,; echo "${systems[*]}")
  # --per-system's --repetitions is not theirs: a paired run takes one
  one=()
  [ "$per_system" -eq 0 ] || one=(--repetitions=1)
  for bench in allocation lookup transfer workload zero_copy; do
    cmd $bench
    blist=$list
    # a binary built against the user's Mooncake says so in its --help (docs/upstream.md):
    # its allocation run adds upstream's own OffsetAllocator beside the models
    if [ "$bench" = allocation ] && "${cmd[0]}" --help 2>/dev/null | grep -q '^upstream: built against Mooncake'; then
      blist+=,mooncake_upstream
    fi
    paired_runs+=("$(printf '%q ' "${bench}_paired" "${cmd[0]}" --systems="$blist" "${cmd[@]:1}" "${one[@]}")")
  done
  # the axes (issue 27), each point after the transfer's flags, which it overrides
  axis() { paired_runs+=("$(printf '%q ' "transfer_axis_$1" "$bindir/shm_transfer_bench" --systems="$list" \
                                        "${transfer_flags[@]}" "${@:2}" "${one[@]}")"); }
  at4k=(--transfer_size_kb=4 --max_transfer_size_mb=0.00390625)
  for n in 10 100 1000 10000; do axis "buffers_$n" --num_segments="$n" "${at4k[@]}"; done
  axis size_1 --transfer_size_kb=1 --max_transfer_size_mb=0.0009765625
  # descriptors per submit and threads submitting at once: N = 1 is buffers_100 (the same
  # flags); threads up to the CPUs this shell may use
  for n in 32 256 2048; do axis "submit_$n" --num_segments=100 "${at4k[@]}" --descriptors_per_submit="$n"; done
  for n in 2 4 8; do
    [ "$n" -le "$(nproc)" ] || break
    axis "threads_$n" --num_segments=100 "${at4k[@]}" --submitters="$n"
  done
fi
# With --system, what each allocator can hold of one 1 GiB pool (report.md's "Space", issue 27)
space_runs=()
[ -z "$system" ] || space_runs+=("$(printf '%q ' allocation_space "$bindir/shm_allocation_bench" --allocator=space \
                                          --pool_mb=1024 --cpu="$cpu" "${common[@]}")")
benches=(allocation lookup lookup_sweep transfer)
[ -z "$system" ] || benches+=(workload)
[ -z "$system" ] || [ "$per_system" -eq 1 ] || benches=()
for bench in "${benches[@]}"; do
  for s in "${systems[@]}"; do  # the systems of a binary one after the other
    cmd $bench
    runs+=("$(printf '%q ' "$bench${s:+_$s}" "${cmd[0]}" ${s:+"--system=$s"} "${reps[@]}" "${cmd[@]:1}")")
  done
done

# Every run's flags, before anything is measured: --helpxml checks them (exit 2 on a bad one) and
# prints the value each ends up with, from the command line, a --flagfile or --fromenv.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
declare -A current  # flag name -> its value, of the XML in $check/xml
read_current() {
  current=()
  local name value
  while IFS=$'\t' read -r name value || [ -n "$name" ]; do
    current[$name]=$value
  done < <(tr -d '\n' <"$check/xml" | sed 's:<flag>:\n:g' \
             | sed -n 's:.*<name>\([^<]*\)</name>.*<current>\(.*\)</current>.*:\1\t\2:p')
}
# refused SYSTEM [SYSTEMS]: why the flags read would not give results of SYSTEM (or of
# the paired run of SYSTEMS), if so
refused() {
  local f
  for f in help helpfull helpshort helppackage version helpon helpmatch; do
    case "${current[$f]-}" in
      ""|false) ;;
      *) echo "set --$f, which prints instead of measuring"; return ;;
    esac
  done
  if [ -n "${current[json_out]-}" ] || [ "${current[format]-}" != table ]; then
    echo "set --format or --json_out, which run_all.sh sets itself (the table in .txt, the JSON in .json)"
  elif [ "${current[system]-}" != "$1" ] || [ "${current[systems]-}" != "${2-}" ]; then
    echo "set --system=${current[system]-} or --systems=${current[systems]-}: use run_all.sh --system[=flowipc_classic,flowipc_jemalloc]"
  elif [ -n "${2-}" ] && [ "${current[repetitions]-}" != 1 ]; then
    echo "set --repetitions=${current[repetitions]-}: a paired run's rounds are its repetitions (it takes 1); --repetitions is for --per-system's passes"
  fi
}
declare -A nreps  # run name -> its repetitions (with --system, one run each)
for r in "${paired_runs[@]}" "${runs[@]}" "${space_runs[@]}"; do
  eval "set -- $r"
  name=$1
  shift
  bin=$(basename "$1")
  if ! "$@" --helpxml >"$check/xml" 2>"$check/err"; then
    cat "$check/err" >&2
    die "$bin refused its flags; nothing was run"
  fi
  [[ $(head -c 5 "$check/xml") == "<?xml" ]] || die "$bin's flags ask for its help, which would be saved as results; nothing was run"
  read_current
  want=
  wants=
  for f in "$@"; do
    case $f in --system=*) want=${f#--system=} ;; --systems=*) wants=${f#--systems=} ;; esac
  done
  why=$(refused "$want" "$wants")
  [ -z "$why" ] || die "$bin's flags $why (from a --flagfile or the environment?); nothing was run"
  [ -n "$wants" ] || [ "$name" = allocation_space ] || nreps[$name]=${current[repetitions]}
done
rm -rf "$check"

mkdir -p "$results"
tmp=$(mktemp -d "$results/.$label.partial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
total=${#runs[@]}
if [ -n "$system" ]; then
  total=$((${#paired_runs[@]} + ${#space_runs[@]}))
  for n in "${nreps[@]}"; do total=$((total + n)); done
fi
ran=0
first=$SECONDS  # when the first run started: the time left is estimated from the runs done
warned=0  # the binaries' load-average warning, said once for the whole run_all.sh
loads=()  # each run's JSON record for run.json: its load average before and after
# progress NAME WHICH: on a terminal, '[k/N] bench system rep i/n, ~T left' (the time
# the runs done took on average, times the runs left), short enough for one line
progress() {
  [ -t 2 ] || return 0
  local label=$1 s left=""
  for s in paired mooncake flowipc_classic flowipc_jemalloc; do
    [[ $label != *_$s ]] || { label="${label%_"$s"} $s"; break; }
  done
  if [ "$ran" -gt 1 ]; then
    s=$(((SECONDS - first) * (total - ran + 1) / (ran - 1)))
    if [ "$s" -lt 60 ]; then left=", ~$s s left"; else left=", ~$(((s + 30) / 60)) min left"; fi
  fi
  echo "[$ran/$total] $label$2$left" >&2
}
# relay FILE: a run's stderr, its load-average warning only the first time one comes
# (a busy machine stays busy: once per run would repeat it for every run)
relay() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    if [[ $line == *": warning: the load average at start"* ]]; then
      [ "$warned" -eq 0 ] || continue
      warned=1
    fi
    printf '%s\n' "$line" >&2
  done <"$1"
  rm -f "$1"
}
# measure NAME STEM WHICH COMMAND...: STEM.json and STEM.txt of one run (WHICH: its repetition,
# for the progress line), its stderr relayed once it ends; a failure ends it all.
measure() {
  local name=$1 stem=$2 which=$3 rc
  shift 3
  ran=$((ran + 1))
  progress "$name" "$which"
  local before start
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  if "$@" --json_out="$stem.json" >"$stem.txt" 2>"$stem.err"; then
    relay "$stem.err"
    # a run that printed something else (help, the version) has written no JSON
    [ -s "$stem.json" ] || die "$name wrote no results (a flag that prints instead of measuring?); nothing kept, $out not written"
    loads+=("$(printf '{"name": "%s", "start": "%s", "end": "%s", "load_before": [%s], "load_after": [%s]}' \
      "$(basename "$stem")" "$start" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "${before// /, }" \
      "$(cut -d' ' -f1-3 /proc/loadavg | sed 's/ /, /g')")")
  else
    rc=$?
    relay "$stem.err"
    echo "run_all.sh: $name failed (exit $rc); nothing kept, $out not written" >&2
    exit "$rc"
  fi
}
plain=("${runs[@]}")  # the runs of one repetition each, one after the other
[ -z "$system" ] || plain=()
for r in "${paired_runs[@]}" "${space_runs[@]}" "${plain[@]}"; do
  eval "set -- $r"
  measure "$1" "$tmp/$1" "" "${@:2}"
  # a binary that does not run --systems yet measures as without it: no ratio row
  [[ $1 != *_paired && $1 != transfer_axis_* ]] || grep -Eq '"name": *"[^"]*/system:[^"/]+/vs:' "$tmp/$1.json" \
    || die "$(basename "$2") wrote no paired rows (NAME/system:S/vs:mooncake): it does not run --systems; nothing kept, $out not written"
done
if [ -n "$system" ] && [ "$per_system" -eq 1 ]; then
  # Round K runs the K-th repetition of every binary, the systems in turn: A B C A B C ...
  mkdir "$tmp/reps"
  max=1
  for n in "${nreps[@]}"; do [ "$n" -le "$max" ] || max=$n; done
  for ((k = 1; k <= max; k++)); do
    for r in "${runs[@]}"; do
      eval "set -- $r"
      [ "$k" -gt "${nreps[$1]}" ] || measure "$1" "$tmp/reps/$1.$k" " rep $k/${nreps[$1]}" "${@:2}" --repetitions=1
    done
  done
  for name in "${!nreps[@]}"; do
    n=${nreps[$name]}
    if [ "$n" -eq 1 ]; then
      mv "$tmp/reps/$name.1.json" "$tmp/$name.json"
      mv "$tmp/reps/$name.1.txt" "$tmp/$name.txt"
    else
      files=()
      for ((k = 1; k <= n; k++)); do files+=("$tmp/reps/$name.$k.json"); done
      /usr/bin/python3 "$root/scripts/verdict.py" --as=run_all.sh merge "$tmp/$name.json" "${files[@]}" \
        || { echo "run_all.sh: merging $name's repetitions failed; nothing kept, $out not written" >&2; exit 1; }
    fi
  done
  rmdir "$tmp/reps" 2>/dev/null || true  # empty with one repetition
fi
printf '{"cpu": %s, "runs": [\n%s\n]}\n' "$cpu" "$(IFS=$'\n'; sed 's/$/,/;$s/,$//' <<<"${loads[*]}")" >"$tmp/run.json"
if [ -e "$out" ]; then
  [ "$force" -eq 1 ] || die "$out appeared meanwhile: nothing kept; choose another --label or add --force"
  rm -rf "$out"
fi
chmod "$(printf '%o' $((0777 & ~$(umask))))" "$tmp"
mv -T "$tmp" "$out"
trap - EXIT
if [ -n "$system" ]; then
  # the measurements are kept whatever happens here: they took minutes
  "$root/scripts/plot.sh" "$out" >/dev/null || echo "run_all.sh: no plots (see above); the report has none" >&2
  if ! "$root/scripts/report.sh" "$out" >/dev/null; then
    echo "run_all.sh: the report failed (see above); the results are in $out" >&2
    echo "$out"
    exit 1
  fi
fi
[ ! -t 2 ] || echo "run_all.sh: results in $out${system:+, the verdict in $out/report.md}" >&2
echo "$out"
# the answer where the run ends: report.md's verdict sentences, the same words
[ -z "$system" ] || awk '/^## Verdict$/ {on = 1; next} on && /^## / {exit} on && NF' "$out/report.md" | fold -s -w 100 >&2
