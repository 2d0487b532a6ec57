#!/usr/bin/env bash
# The binaries against a hostile user (issue 9): gflags, control characters, signals, lost output,
# limits, clean_shm.sh; cases needing root or a mount namespace are skipped where they cannot run.
#   cli_hardening.sh BIN_DIR [PYTHON]
bindir=$1
python=${2:-/usr/bin/python3}
source "$(dirname "$0")/cli_lib.sh"
clean=$(cd "$(dirname "$0")/../.." && pwd)/scripts/clean_shm.sh
alloc=$bindir/shm_allocation_bench
lookup=$bindir/shm_address_lookup_bench
transfer=$bindir/shm_transfer_bench
prefix=shmb_cli_hard_$$_
quick=(--shm_prefix=/$prefix --num_iterations=5 --min_size_kb=4 --max_size_kb=8 --allocator=posix)

# --- 5 and 7: every way in to gflags behaves like the command line -------
# flagfile line | flag the one error line must name
while IFS='|' read -r line flag; do
  printf '%b\n' "$line" >"$work/flags"
  expect_usage_error "$alloc" "$flag" --flagfile="$work/flags"
done <<'EOF'
--num_iterations=abc|num_iterations
--bogus=1|bogus
# a comment\n--max_size_kb=8\n--cpu=x|cpu
--cpu|cpu
--nocleanup=false|nocleanup
--shm_prefix=/a\x01b|shm_prefix
--flagfile=/nonexistent/flags|flagfile
EOF
expect_usage_error "$alloc" flagfile --flagfile="$work/missing"
# environment: VAR=value | flags | flag named
while IFS='|' read -r var args flag; do
  # shellcheck disable=SC2086
  env "$(printf '%b' "$var")" bash -c 'source "$0"; expect_usage_error "$@"; finish >/dev/null' \
    "$(dirname "$0")/cli_lib.sh" "$alloc" "$flag" $args >"$work/env.out" 2>&1 \
    && ok || fail "env $var $args: $(cat "$work/env.out")"
done <<'EOF'
FLAGS_num_iterations=x|--fromenv=num_iterations|num_iterations
FLAGS_unused=1|--fromenv=num_iterations|fromenv
FLAGS_unused=1|--fromenv=bogus|fromenv
FLAGS_cpu=zz|--tryfromenv=cpu|cpu
FLAGS_shm_prefix=/a\nb|--tryfromenv=shm_prefix|shm_prefix
FLAGS_cleanup=maybe|--tryfromenv=cleanup|cleanup
EOF
FLAGS_num_iterations=5 "$alloc" --tryfromenv=num_iterations --max_size_kb=8 --allocator=posix \
  --shm_prefix=/$prefix >/dev/null 2>&1 && ok || fail "--tryfromenv with a good value"
# control characters in any string flag, in every binary
for bin in "$alloc" "$lookup" "$transfer"; do
  expect_usage_error "$bin" shm_prefix --shm_prefix=$'/x\ny'
  expect_usage_error "$bin" format --format=$'table\n'
  expect_usage_error "$bin" json_out --json_out=$'a\nb.json'
  expect_usage_error "$bin" system --system=$'\t'
  expect_usage_error "$bin" nocleanup --nocleanup=true
done
expect_usage_error "$alloc" allocator --allocator=$'posix\r'
# every help flag exits 0 with text on stdout
for bin in "$alloc" "$lookup" "$transfer"; do
  name=$(basename "$bin")
  for h in --help --helpshort --helpfull --helpxml --helpon="$name" --helpmatch=bench_common \
           --helppackage --version; do
    "$bin" "$h" >"$work/h.out" 2>"$work/h.err"
    rc=$?
    [ "$rc" -eq 0 ] && [ -s "$work/h.out" ] && ok || fail "$name $h: exit $rc, $(wc -c <"$work/h.out") bytes"
  done
  "$bin" --helpxml | "$python" -c 'import sys, xml.dom.minidom as m; m.parseString(sys.stdin.read())' \
    && ok || fail "$name --helpxml is not XML"
  # --help: the binary's own flags and a last line naming --helpfull, which adds glog's and gflags'
  "$bin" --help >"$work/h.out"
  grep -q -- '-shm_prefix (' "$work/h.out" && ! grep -q logtostderr "$work/h.out" \
    && tail -1 "$work/h.out" | grep -q -- '^--helpfull ' && ok || fail "$name --help: not the own flags and a --helpfull line"
  "$bin" --helpfull | grep -q -- '-logtostderr (' && ok || fail "$name --helpfull lists no glog flag"
done

# --- 4: output -----------------------------------------------------------
json=$work/out.json
no_temp() { [ -z "$(ls -A "$work" | grep '^\.out\.json\.tmp\.')" ] && ok || fail "$1: temporary file left"; }
# a run that fails leaves an existing --json_out as it was
while IFS='|' read -r what args; do
  echo keep >"$json"
  # shellcheck disable=SC2086
  "$alloc" "${quick[@]}" --json_out="$json" $args >/dev/null 2>&1
  [ "$(cat "$json")" = keep ] && ok || fail "$what: --json_out was overwritten"
  no_temp "$what"
done <<'EOF'
bad flag in the main|--num_iterations=0
bad common flag|--format=xml
EOF
echo keep >"$json"
(ulimit -f 64; "$alloc" --shm_prefix=/$prefix --num_iterations=2 --min_size_kb=4096 --max_size_kb=4096 \
  --allocator=posix --json_out="$json" >/dev/null 2>"$work/xfsz.err")
rc=$?
[ "$rc" -eq 1 ] && grep -q "ulimit -f" "$work/xfsz.err" && ok || fail "SIGXFSZ: exit $rc, $(cat "$work/xfsz.err")"
[ "$(cat "$json")" = keep ] && ok || fail "failed call: --json_out was overwritten"
no_temp "failed call"
# stdout closed: exit 1, EBADF, nothing in the JSON file
echo keep >"$json"
"$alloc" "${quick[@]}" --json_out="$json" >&- 2>"$work/closed.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "Bad file descriptor" "$work/closed.err" && ok || fail ">&-: exit $rc, $(cat "$work/closed.err")"
[ "$(cat "$json")" = keep ] && ok || fail ">&-: the JSON file was written"
no_temp ">&-"
# output errors carry the real errno
if [ -c /dev/full ]; then
  for fmt in table csv json; do
    "$alloc" "${quick[@]}" --format=$fmt >/dev/full 2>"$work/full.err"
    rc=$?
    [ "$rc" -eq 1 ] && grep -q "No space left on device" "$work/full.err" && ok || fail "stdout full ($fmt): exit $rc, $(cat "$work/full.err")"
  done
  "$alloc" "${quick[@]}" --json_out=/dev/full >/dev/null 2>"$work/full.err"
  rc=$?
  [ "$rc" -eq 1 ] && grep -q "No space left on device" "$work/full.err" && ok || fail "--json_out=/dev/full: exit $rc"
  [ -c /dev/full ] && ok || fail "--json_out=/dev/full replaced the device"
fi
# success: the file is replaced, its mode kept
echo keep >"$json"
chmod 600 "$json"
"$alloc" "${quick[@]}" --json_out="$json" >/dev/null 2>&1 || fail "run with --json_out"
"$python" -c 'import json, sys; json.load(open(sys.argv[1]))' "$json" && ok || fail "--json_out is not JSON"
[ "$(stat -c %a "$json")" = 600 ] && ok || fail "--json_out: mode lost"
no_temp "success"
# issue 25: a link to a file is refused, never replaced nor written through
echo keep >"$work/target.json"
ln -sf "$work/target.json" "$work/link.json"
expect_usage_error "$alloc" json_out "${quick[@]}" --json_out="$work/link.json"
[ -L "$work/link.json" ] && [ "$(cat "$work/target.json")" = keep ] && ok || fail "--json_out=LINK: link or target changed"
# a link to a pipe (/dev/stdout into a pipe) is written through
"$alloc" "${quick[@]}" --format=csv --json_out=/dev/stdout 2>/dev/null | cat >"$work/both.out"
grep -q '"benchmarks"' "$work/both.out" && grep -q '^name,variant,' "$work/both.out" && ok || fail "--json_out=/dev/stdout"

# --- 3: every signal whose default action ends the process cleans up -----
signals=(USR1 USR2 ALRM PIPE VTALRM PROF XCPU TERM HUP RTMIN)
pids=()
echo keep >"$json"
for s in "${signals[@]}"; do
  "$alloc" --shm_prefix=/${prefix}sig_${s}_ --num_iterations=1000000 --max_size_kb=4 --allocator=posix \
    --json_out="$json" >/dev/null 2>&1 &
  pids+=($!)
done
sleep 0.5
exec 3>&2 2>/dev/null # bash reports each death; the checks below say what matters
for i in "${!signals[@]}"; do
  kill -"${signals[$i]}" "${pids[$i]}"
done
rcs=()
for i in "${!signals[@]}"; do
  wait "${pids[$i]}"
  rcs+=($?)
done
exec 2>&3 3>&-
for i in "${!signals[@]}"; do
  s=${signals[$i]}
  rc=${rcs[$i]}
  want=$((128 + $(kill -l "$s")))
  [ "$rc" -eq "$want" ] && ok || fail "SIG$s: exit $rc, expected $want"
  [ "$(leftovers "${prefix}sig_${s}_")" -eq 0 ] && ok || fail "SIG$s left $(leftovers "${prefix}sig_${s}_") segments"
done
[ "$(cat "$json")" = keep ] && ok || fail "signals: --json_out was overwritten"
no_temp "signals"

# --- 6: advice under limits ----------------------------------------------
ncpu=$(nproc)
if [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null; then
  last=$((ncpu - 1))
  expect_usage_error "$(command -v taskset)" cpu -c "$last" "$alloc" "${quick[@]}" --cpu=0
  taskset -c "$last" "$alloc" "${quick[@]}" --cpu="$last" >/dev/null 2>&1 && ok || fail "--cpu within the allowed set"
  taskset -c "$last" "$transfer" --shm_prefix=/$prefix --threads=2 --max_transfer_size_mb=1 \
    --num_transfers=5 --time_per_size_ms=5 >/dev/null 2>"$work/pin.err" \
    && ok || fail "threads under a cpuset: $(cat "$work/pin.err")"
fi
# in a mount namespace: a tmpfs without inodes, then one without space
if [ "$(id -u)" -eq 0 ] && private_tmpfs; then
  odd="/${prefix}it's *"
  unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=1m,nr_inodes=2 tmpfs /dev/shm &&
    : >/dev/shm/filler && "$0" --shm_prefix="$1" --num_iterations=5 --max_size_kb=8 --allocator=posix' \
    "$alloc" "$odd" >/dev/null 2>"$work/inodes.err"
  rc=$?
  if [ "$rc" -eq 1 ] && [ "$(error_lines "$work/inodes.err")" -eq 1 ] && grep -q "df -i /dev/shm" "$work/inodes.err" &&
     grep -qF "clean_shm.sh --prefix '/${prefix}it'\\''s *'" "$work/inodes.err" && ! grep -q "rm \|mooncake_bench_" "$work/inodes.err"; then
    ok
  else
    fail "no inodes: exit $rc, $(cat "$work/inodes.err")"
  fi
  unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=64k tmpfs /dev/shm &&
    "$0" --shm_prefix="$1" --num_iterations=5 --min_size_kb=1024 --max_size_kb=1024 --allocator=posix --touch' \
    "$alloc" "/$prefix" >/dev/null 2>"$work/space.err"
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(error_lines "$work/space.err")" -eq 1 ] && ok || fail "no space: exit $rc, $(cat "$work/space.err")"
  # issue 19: /dev/shm filled mid-run under boost.interprocess (nothing reserved there): the no-space
  # line, exit 1, nothing left; from the next pool's posix_fallocate when the filler wins the race
  unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=300m tmpfs /dev/shm || exit 77
    "$0" --shm_prefix="$1" --num_iterations=2000 --min_size_kb=64 --max_size_kb=64 --allocator=bipc \
      --repetitions=300 >/dev/null 2>"$2" &
    pid=$!
    sleep 0.3
    n=0
    # large pieces first (one fallocate per 64k took 15 s to fill 300m), then
    # every 64k page that frees up
    for size in 32m 2m 64k; do
      while kill -0 "$pid" 2>/dev/null && fallocate -l "$size" "/dev/shm/filler$n" 2>/dev/null; do n=$((n + 1)); done
    done
    while kill -0 "$pid" 2>/dev/null; do fallocate -l 64k "/dev/shm/filler$n" 2>/dev/null && n=$((n + 1)); done
    wait "$pid"
    rc=$?
    [ -z "$(ls /dev/shm | grep -v "^filler")" ] || rc=99
    exit "$rc"' "$alloc" "/${prefix}fill_" "$work/fill.err"
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(error_lines "$work/fill.err")" -eq 1 ] &&
    grep -qE "(SIGBUS\)|posix_fallocate\(/${prefix}fill_[^)]*\) failed): No space left on device; /dev/shm is full" "$work/fill.err" \
    && ok || fail "/dev/shm filled mid-run (bipc): exit $rc, $(cat "$work/fill.err")"
else
  skip_case "not root or no private mount namespace with a tmpfs: the inode and space cases"
fi

# --- issue 19: inherited process state --------------------------------------
# PID 1 of a PID namespace discards a re-raised default action: SIGTERM still ends the run, 143
if [ "$(id -u)" -eq 0 ] && unshare --pid --fork true 2>/dev/null; then
  # binary | flags of a long --peer_process run
  while IFS='|' read -r bin args; do
    name=$(basename "$bin")
    # shellcheck disable=SC2086
    unshare --pid --fork "$bin" --shm_prefix=/${prefix}pid1_ --peer_process $args >/dev/null 2>&1 &
    run=$!
    # init found and its segments made (the run is under way), 5 s at most
    init=
    for _ in $(seq 100); do
      init=$(pgrep -f -- "--shm_prefix=/${prefix}pid1_" | while read -r p; do
        [ "$(awk '/^NSpid/ {print $NF}' "/proc/$p/status" 2>/dev/null)" = 1 ] && echo "$p"; done | head -1)
      [ -n "$init" ] && [ "$(leftovers "${prefix}pid1_")" -gt 0 ] && break
      sleep 0.05
    done
    sleep 0.1
    [ -n "$init" ] && kill -TERM "$init"
    for _ in $(seq 50); do [ "$(peer_left "${prefix}pid1_")" -eq 0 ] && break; sleep 0.1; done
    left=$(peer_left "${prefix}pid1_")
    [ "$left" -eq 0 ] || kill -KILL "${init:-$run}" # init's end ends its namespace
    wait "$run"
    rc=$?
    [ -n "$init" ] && [ "$left" -eq 0 ] && [ "$rc" -eq 143 ] && [ "$(leftovers "${prefix}pid1_")" -eq 0 ] && ok \
      || fail "$name as PID 1: SIGTERM: init ${init:-not found}, exit $rc, $left processes and $(leftovers "${prefix}pid1_") segments left"
  done <<EOF_PID1
$lookup|--num_segments=1000 --min_time_ms=100000
$alloc|--num_iterations=1000000 --max_size_kb=4 --allocator=posix
EOF_PID1
else
  skip_case "not root or no PID namespace: the PID 1 case"
fi
# a signal ignored at exec (nohup, trap '' INT) stays ignored: the run goes on and ends well
(trap '' INT; exec "$alloc" --shm_prefix=/${prefix}ign_ --num_iterations=100000 --max_size_kb=4 \
  --allocator=posix >"$work/ign.out" 2>/dev/null) &
ign=$!
sleep 0.5
kill -INT "$ign" 2>/dev/null
wait "$ign"
rc=$?
[ "$rc" -eq 0 ] && [ -n "$(table_rows "$work/ign.out")" ] && [ "$(leftovers "${prefix}ign_")" -eq 0 ] && ok \
  || fail "SIGINT ignored at exec: exit $rc, $(leftovers "${prefix}ign_") segments left"
# SIGCHLD ignored by the parent (some supervisors): --peer_process still works
"$python" -c 'import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])' \
  "$alloc" --shm_prefix=/${prefix}chld_ --peer_process --num_iterations=5 --max_size_kb=8 --allocator=posix \
  >"$work/chld.out" 2>"$work/chld.err"
rc=$?
[ "$rc" -eq 0 ] && [ -n "$(table_rows "$work/chld.out")" ] && ok \
  || fail "SIGCHLD ignored: exit $rc, $(grep -v ': warning: ' "$work/chld.err")"

# --- 9: scripts/clean_shm.sh ---------------------------------------------
shm=$work/shm
mkdir "$shm"
sleep 0 &
dead=$!
wait "$dead"
live=$$
hex=0123456789abcdef
# file | removed (1) or kept (0)
cases=(
  "mooncake_bench_${dead}_${hex}_0|1" "mooncake_bench_${dead}_89abcdef_7|1"
  "mooncake_bench_${live}_${hex}_1|0" "mooncake_bench_notes.txt|0" "other_${dead}_${hex}_0|0"
  "mooncake_bench_${dead}_${hex}_x|0" "mooncake_bench_${dead}_XYZ_1|0" "a*_${dead}_${hex}_0|1"
  "abc_${dead}_${hex}_0|0" "mooncake_bench_${dead}_${hex}_2 -rf|0"
)
for c in "${cases[@]}"; do : >"$shm/${c%|*}"; done
SHMB_SHM_DIR=$shm "$clean" --dry-run >"$work/dry.out" || fail "clean_shm.sh --dry-run failed"
[ "$(ls "$shm" | wc -l)" -eq "${#cases[@]}" ] && ok || fail "--dry-run removed something"
grep -q "would remove $shm/mooncake_bench_${dead}_${hex}_0" "$work/dry.out" && ok || fail "--dry-run does not say what: $(cat "$work/dry.out")"
SHMB_SHM_DIR=$shm "$clean" >"$work/clean.out" || fail "clean_shm.sh failed"
SHMB_SHM_DIR=$shm "$clean" --prefix '/a*_' >>"$work/clean.out" || fail "clean_shm.sh --prefix failed"
for c in "${cases[@]}"; do
  f=${c%|*}
  if [ "${c##*|}" -eq 1 ]; then
    [ ! -e "$shm/$f" ] && grep -qF "removed $shm/$f" "$work/clean.out" && ok || fail "clean_shm.sh kept $f"
  else
    [ -e "$shm/$f" ] && ok || fail "clean_shm.sh removed $f"
  fi
done
for bad in --prefix=no_slash --prefix=/a/b --bogus; do
  "$clean" $bad >/dev/null 2>&1
  [ $? -eq 2 ] && ok || fail "clean_shm.sh $bad: not exit 2"
done
# for real: a run that keeps its segments, then dies; its segments go
"$alloc" --shm_prefix=/${prefix}kept_ --num_iterations=3 --max_size_kb=4 --allocator=posix \
  --cleanup=false >/dev/null 2>&1
[ "$(leftovers "${prefix}kept_")" -eq 3 ] && ok || fail "--cleanup=false kept $(leftovers "${prefix}kept_")"
"$clean" --prefix "/${prefix}kept_" >/dev/null && [ "$(leftovers "${prefix}kept_")" -eq 0 ] && ok \
  || fail "clean_shm.sh left $(leftovers "${prefix}kept_") of a dead run"

# --- issue 25: --write_trace never replaces a device, FIFO or link; bounded trace lines ---
wl=(--workload=synthetic --requests=3 --shm_prefix=/$prefix)
out25=$work/w25
mkdir "$out25"
no_temp25() { [ -z "$(ls -A "$out25" | grep '\.tmp')" ] && ok || fail "$1: temporary file left: $(ls -A "$out25")"; }
# a device node stays one, exit 0; a full one: exit 1, one line naming the flag, the
# file and the errno text. As root, nodes of our own (a build that replaced the node
# would replace the machine's /dev/null); else /dev's, which we cannot replace.
null=/dev/null
full=/dev/full
if [ "$(id -u)" -eq 0 ] && mknod -m 666 "$out25/null" c 1 3 2>/dev/null && mknod -m 666 "$out25/full" c 1 7; then
  null=$out25/null
  full=$out25/full
fi
"$transfer" "${wl[@]}" --write_trace="$null" >/dev/null 2>"$work/w.err"
rc=$?
[ "$rc" -eq 0 ] && [ -c "$null" ] && ok || fail "--write_trace=$null: exit $rc, now $(stat -c %F "$null"): $(cat "$work/w.err")"
if [ -c "$full" ]; then
  "$transfer" "${wl[@]}" --write_trace="$full" >/dev/null 2>"$work/w.err"
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(error_lines "$work/w.err")" -eq 1 ] \
    && grep -q "writing --write_trace=$full failed: No space left on device" "$work/w.err" && [ -c "$full" ] && ok \
    || fail "--write_trace=$full: exit $rc, now $(stat -c %F "$full"): $(cat "$work/w.err")"
fi
# a FIFO: its reader gets the trace, the FIFO stays
mkfifo "$out25/fifo"
timeout 10 cat "$out25/fifo" >"$work/fifo.out" &
reader=$!
"$transfer" "${wl[@]}" --write_trace="$out25/fifo" >/dev/null 2>"$work/w.err"
rc=$?
wait "$reader"
[ "$rc" -eq 0 ] && [ -p "$out25/fifo" ] && [ "$(wc -l <"$work/fifo.out")" -eq 3 ] && ok \
  || fail "--write_trace=FIFO: exit $rc, $(wc -l <"$work/fifo.out") lines read: $(cat "$work/w.err")"
# a link to a file, a dangling link, a directory, a socket: refused in one line, left as they are
echo keep >"$out25/target"
ln -s "$out25/target" "$out25/link"
ln -s "$out25/nowhere" "$out25/dangling"
mkdir "$out25/dir"
"$python" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$out25/sock"
for f in link dangling dir sock; do
  expect_usage_error "$transfer" write_trace "${wl[@]}" --write_trace="$out25/$f"
done
[ -L "$out25/link" ] && [ -L "$out25/dangling" ] && [ ! -e "$out25/nowhere" ] && [ -d "$out25/dir" ] && [ -S "$out25/sock" ] \
  && [ "$(cat "$out25/target")" = keep ] && ok || fail "--write_trace: a refused name or a link's target changed: $(ls -l "$out25")"
# a link planted at the old fixed temporary name is not written through
ln -s "$out25/target" "$out25/trace.jsonl.tmp"
"$transfer" "${wl[@]}" --write_trace="$out25/trace.jsonl" >/dev/null 2>"$work/w.err" \
  && [ -f "$out25/trace.jsonl" ] && [ ! -L "$out25/trace.jsonl" ] && [ "$(wc -l <"$out25/trace.jsonl")" -eq 3 ] \
  && [ "$(cat "$out25/target")" = keep ] && ok || fail "--write_trace beside a planted FILE.tmp link: $(cat "$work/w.err")"
rm -f "$out25/trace.jsonl.tmp" "$out25/sock"
no_temp25 "--write_trace"
# --json_out would stay empty: refused with --write_trace
expect_usage_error "$transfer" json_out "${wl[@]}" --write_trace="$out25/t2.jsonl" --json_out="$out25/j.json"
[ ! -e "$out25/t2.jsonl" ] && [ ! -e "$out25/j.json" ] && ok || fail "--write_trace with --json_out wrote a file"
no_temp25 "--write_trace with --json_out"
# a full file system at run time: what failed, not "invalid --write_trace"; the old file intact
if [ "$(id -u)" -eq 0 ] && private_tmpfs; then
  unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=64k tmpfs "$1" && echo keep >"$1/t.jsonl" &&
    "$0" --workload=synthetic --requests=2000 --shm_prefix="$2" --write_trace="$1/t.jsonl" >/dev/null 2>"$3"
    rc=$?; [ "$(cat "$1/t.jsonl")" = keep ] && [ "$(ls -A "$1")" = t.jsonl ] || rc=99; exit "$rc"' \
    "$transfer" "$out25" "/$prefix" "$work/w.err"
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(error_lines "$work/w.err")" -eq 1 ] \
    && grep -q "writing --write_trace=$out25/t.jsonl failed: No space left on device" "$work/w.err" && ok \
    || fail "--write_trace on a full file system: exit $rc: $(cat "$work/w.err")"
else
  skip_case "not root or no private mount namespace: --write_trace on a full file system"
fi
# a trace of one endless line: exit 2 once the limit is passed, in bounded memory (in a
# 512 MiB address space, so that a build reading the whole line cannot take the
# machine's memory: it failed there, said as an empty trace)
timeout 20 prlimit --as=536870912 "$transfer" --workload=/dev/zero --shm_prefix=/$prefix >/dev/null 2>"$work/w.err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$work/w.err")" -eq 1 ] && grep -q "^shm_transfer_bench: /dev/zero:1: line longer than 65536 bytes$" "$work/w.err" \
  && ok || fail "--workload=/dev/zero: exit $rc: $(cat "$work/w.err")"
# the same for a flagfile
timeout 20 prlimit --as=536870912 "$alloc" --flagfile=/dev/zero >/dev/null 2>"$work/w.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "invalid --flagfile=/dev/zero: a line longer than 65536 bytes" "$work/w.err" && ok \
  || fail "--flagfile=/dev/zero: exit $rc: $(cat "$work/w.err")"

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left: $(ls /dev/shm | grep "^$prefix")"
finish
