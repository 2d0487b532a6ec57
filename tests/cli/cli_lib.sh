# Helpers of the command-line tests: sourced, not run.
#   check NAME COMMAND...   runs a check and counts it
#   expect_usage_error FLAG ARGS...: exit 2 and one stderr line naming --FLAG
set -u
passed=0
failed=0
skipped=0
work=$(mktemp -d)
# At exit the test's own segments ($prefix) go too: a run that should have been refused leaves none.
trap 'rm -rf "$work"; [ -z "${prefix:-}" ] || rm -f /dev/shm/"$prefix"*' EXIT

fail() {
  echo "FAIL: $*" >&2
  failed=$((failed + 1))
}

ok() {
  passed=$((passed + 1))
}

# skip_case WHY: a case that cannot run here is said and counted, not passed.
skip_case() {
  echo "skipped: $*" >&2
  skipped=$((skipped + 1))
}

# A private mount namespace with a tmpfs over /dev/shm can be made here.
private_tmpfs() {
  unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /dev/shm' 2>/dev/null
}

# Segments of ours left in /dev/shm under prefix $1 (without the leading '/').
leftovers() {
  ls /dev/shm 2>/dev/null | grep -c "^$1" || true
}

# leftover_owners PREFIX: the segments under PREFIX by the pid that made them ("<pid>: <count>"), and
# the count a moment later: what a failing count says, to tell another process's names from ours.
leftover_owners() {
  echo "by pid: $(ls /dev/shm 2>/dev/null | grep "^$1" | sed "s/^$1\([0-9]*\)_.*/\1/" | sort | uniq -c |
    awk '{printf "%s%s: %s", (NR > 1 ? ", " : ""), $2, $1}'); a moment later $(sleep 0.2; leftovers "$1")"
}

# A table (file $1, or stdin) with its wrapped '#' lines ("#   ...") joined to the one before.
unwrap() {
  awk 'NR > 1 && /^#   / { prev = prev " " substr($0, 5); next }
       NR > 1 { print prev } { prev = $0 } END { if (NR) print prev }' "${1:-/dev/stdin}"
}

# Lines of a stderr file other than warnings (the load-average warning comes and goes).
error_lines() {
  grep -vc ": warning: " "$1" || true
}

# Processes of a run with --shm_prefix=/PREFIX still there (a peer's command line is the owner's).
peer_left() {
  pgrep -f -- "--shm_prefix=/$1" | grep -vx "$$" | wc -l
}

# A process is alive (not a zombie waiting for its reaper).
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# start_peer_run SEGMENTS PREFIX BIN ARGS...: BIN ARGS... (a --peer_process run) in the background:
# $owner, and $peer_pid (empty if never) once more than SEGMENTS segments are under PREFIX and the
# owner has forked a child of its own program (not sysinfo's popen shell, which comes and goes).
start_peer_run() {
  local segments=$1 prefix=$2 bin=$3 child
  shift 3
  "$bin" "$@" >/dev/null 2>"$work/dead.err" &
  owner=$!
  peer_pid=
  for _ in $(seq 250); do
    if [ "$(leftovers "$prefix")" -gt "$segments" ]; then
      child=$(pgrep -P "$owner" | head -1)
      if [ -n "$child" ] && [ "$(readlink "/proc/$child/exe")" = "$(readlink "/proc/$owner/exe")" ]; then
        peer_pid=$child
        break
      fi
    fi
    sleep 0.02
  done
  sleep 0.3 # measuring by then
}

# wait_run PID SECONDS: the exit status of PID once it ends; still running after SECONDS, it is
# ended with SIGTERM (its cleanup unlinks its segments) and 124: never left to ctest's SIGKILL.
wait_run() {
  local pid=$1 deadline=$(($(date +%s) + $2))
  while alive "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.02; done
  if alive "$pid"; then
    kill -TERM "$pid"
    for _ in $(seq 250); do alive "$pid" || break; sleep 0.02; done
    alive "$pid" && kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    return 124
  fi
  wait "$pid"
}

# check_peer_deaths PREFIX BIN ARGS...: the peer SIGKILLed, the owner exits 1 within 1.5 s naming it,
# nothing left; the owner SIGKILLed, the peer ends within 1.5 s and unlinks the owner's segments.
check_peer_deaths() {
  local prefix=$1 bin=$2 name rc t0 ms
  name=$(basename "$bin")
  start_peer_run 1 "$@"
  if [ -z "$peer_pid" ]; then
    fail "$name: no peer process under the owner"
    wait_run "$owner" 0
    return
  fi
  t0=$(date +%s%N)
  kill -9 "$peer_pid"
  wait_run "$owner" 10
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  [ "$rc" -eq 1 ] && [ "$ms" -lt 1500 ] && [ "$(error_lines "$work/dead.err")" -eq 1 ] \
    && grep -q "^$name: the peer process died: pid $peer_pid killed by signal 9 (Killed); nothing is left behind\$" "$work/dead.err" \
    && [ "$(leftovers "$prefix")" -eq 0 ] && ok \
    || fail "$name: peer killed: exit $rc after $ms ms, $(leftovers "$prefix") left: $(cat "$work/dead.err")"

  start_peer_run 1 "$@"
  [ -n "$peer_pid" ] && [ "$(leftovers "$prefix")" -gt 0 ] && ok || fail "$name: owner killed: no peer or no segment"
  kill -9 "$owner"
  t0=$(date +%s%N)
  while [ -n "$peer_pid" ] && alive "$peer_pid" && [ $((($(date +%s%N) - t0) / 1000000)) -lt 5000 ]; do sleep 0.01; done
  ms=$((($(date +%s%N) - t0) / 1000000))
  wait "$owner" 2>/dev/null
  sleep 0.1
  [ "$ms" -lt 1500 ] && [ "$(leftovers "$prefix")" -eq 0 ] && ok \
    || fail "$name: owner killed: peer ${peer_pid:-none} ended after $ms ms, $(leftovers "$prefix") left"
}

# expect_usage_error BIN FLAG ARGS...
expect_usage_error() {
  local bin=$1 flag=$2
  shift 2
  "$bin" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$work/err")
  if [ "$rc" -ne 2 ]; then
    fail "$(basename "$bin") $*: exit $rc, expected 2"
  elif [ "$lines" -ne 1 ]; then
    fail "$(basename "$bin") $*: $lines stderr lines, expected 1: $(cat "$work/err")"
  elif ! grep -q -- "--$flag" "$work/err"; then
    fail "$(basename "$bin") $*: stderr does not name --$flag: $(cat "$work/err")"
  elif [ -s "$work/out" ]; then
    fail "$(basename "$bin") $*: wrote to stdout"
  else
    ok
  fi
}

# Data rows of a table (after the header); a note cell "v" gets its "# note NAME: NOTE" line back.
table_rows() {
  unwrap "$1" | awk '
    /^# note [^ ]*( rep [0-9]+)?: / { notes[++n] = substr($0, index($0, ": ") + 2); next }
    /^#/ { next }
    !head { head = 1; next }
    { rows[++m] = $0 }
    END { k = 0
          for (i = 1; i <= m; i++) {
            if (rows[i] ~ / v$/ && k < n) rows[i] = substr(rows[i], 1, length(rows[i]) - 1) notes[++k]
            print rows[i] } }'
}

# expect_signal_cleanup SIGNAL DELAY PREFIX COMMAND...: COMMAND (SIGNAL's default action restored) gets
# SIGNAL once a PREFIX segment exists (DELAY s at most); it must die of it within 5 s, leaving none.
expect_signal_cleanup() {
  local sig=$1 delay=$2 pfx=$3 deadline
  shift 3
  set -m
  deadline=$(($(date +%s%N) + $(awk -v d="$delay" 'BEGIN {printf "%d", d * 1e9}')))
  env --default-signal="$sig" "$@" >/dev/null 2>&1 &
  local pid=$!
  until [ "$(leftovers "$pfx")" -gt 0 ] || [ "$(date +%s%N)" -ge "$deadline" ]; do
    sleep 0.02
  done
  kill -"$sig" "$pid"
  for _ in $(seq 250); do alive "$pid" || break; sleep 0.02; done
  alive "$pid" && kill -KILL "$pid"
  wait "$pid"
  local rc=$?
  set +m
  local want=$((128 + $(kill -l "$sig")))
  [ "$rc" -eq "$want" ] && ok || fail "SIG$sig: exit $rc, expected $want"
  [ "$(leftovers "$pfx")" -eq 0 ] && ok || fail "SIG$sig left $(leftovers "$pfx") segments"
}

# The huge page pool is shared with every other program: a test counts only its own names
# (leftovers), its processes' huge pages (hugetlb_kb) and the pages it added (added). 2 MiB pages.
hpool=/sys/kernel/mm/hugepages/hugepages-2048kB
nr_file=$hpool/nr_hugepages
added=0

# Free pages a new mapping can have: free less those reserved by untouched mappings.
hugepages_avail() {
  local f r
  f=$(cat "$hpool/free_hugepages" 2>/dev/null) || f=0
  r=$(cat "$hpool/resv_hugepages" 2>/dev/null) || r=0
  echo $((f - r))
}

# hugetlb_kb PID...: KiB of hugetlb mappings of these processes (0 for one that is gone).
hugetlb_kb() {
  local pid sum=0 kb
  for pid in "$@"; do
    kb=$(awk '/^Size:/ {size = $2} /^VmFlags:/ && / ht/ {sum += size} END {print sum + 0}' \
      "/proc/$pid/smaps" 2>/dev/null) || kb=0
    sum=$((sum + ${kb:-0}))
  done
  echo "$sum"
}

# hugepages_lock SECONDS: this test alone among shmbench suites may change the huge page pool until
# it exits (flock on $SHMB_HUGEPAGES_LOCK, held by a process that no run inherits); false when
# another holds it that long. Children see SHMB_HUGEPAGES_LOCKED (tests/helpers.c).
hugepages_lock_file=${SHMB_HUGEPAGES_LOCK:-/run/lock/shmbench-hugepages.lock}
hugepages_lock() {
  [ -n "${SHMB_HUGEPAGES_LOCKED:-}" ] && return 0
  local shell=$$ got=$work/.hugepages_lock
  [ -e "$hugepages_lock_file" ] || : >>"$hugepages_lock_file" 2>/dev/null
  [ -r "$hugepages_lock_file" ] || return 1
  rm -f "$got"
  ( (exec 9<"$hugepages_lock_file"
     if flock -w "$1" 9; then
       echo locked >"$got"
       while kill -0 "$shell" 2>/dev/null; do sleep 0.2 9<&-; done
     else
       echo busy >"$got"
     fi) </dev/null >/dev/null 2>&1 & )
  until [ -s "$got" ]; do sleep 0.1; done
  [ "$(cat "$got")" = locked ] || return 1
  export SHMB_HUGEPAGES_LOCKED=$$
}

# reserve_hugepages N: true when N pages are available; below N + 8 (root) the pool grows by what is
# missing, counted in $added. Call under hugepages_lock.
reserve_hugepages() {
  local have cur want=$(($1 + 8))
  have=$(hugepages_avail)
  if [ "$have" -lt "$want" ] && [ -w "$nr_file" ]; then
    cur=$(cat "$nr_file")
    echo $((cur + want - have)) >"$nr_file" 2>/dev/null
    added=$((added + $(cat "$nr_file") - cur))
  fi
  [ "$(hugepages_avail)" -ge "$1" ]
}

# give_back_hugepages: the pool's current size less what this test added (never below what is in use).
give_back_hugepages() {
  [ "$added" -gt 0 ] || return 0
  local cur
  cur=$(cat "$nr_file")
  echo $((cur > added ? cur - added : 0)) >"$nr_file" 2>/dev/null
  added=0
}

# hold_hugepages N|all FILE [greedy]: process $holder reserves N pages (or all available) until
# killed; greedy, it takes every page that comes free too. False when it could not ("held" in FILE).
hold_hugepages() {
  python3 -c 'import mmap, os, sys, time
pool = "/sys/kernel/mm/hugepages/hugepages-2048kB/"
def avail():
    return int(open(pool + "free_hugepages").read()) - int(open(pool + "resv_hugepages").read())
held = []
def take(n):
    if n <= 0:
        return True
    fd = os.memfd_create("shmb_test_hold", os.MFD_HUGETLB)
    os.ftruncate(fd, n << 21)
    try:
        held.append(mmap.mmap(fd, n << 21, mmap.MAP_SHARED))
        return True
    except OSError:  # taken by another meanwhile
        os.close(fd)
        return False
for _ in range(20):
    if take(avail() if sys.argv[1] == "all" else int(sys.argv[1])):
        break
else:
    sys.exit(1)
open(sys.argv[2], "w").write("held\n")
greedy = len(sys.argv) > 3
end = time.time() + 300
while time.time() < end:
    if greedy:
        take(avail())
    time.sleep(0.002 if greedy else 0.5)' "$1" "$2" ${3:+greedy} 2>/dev/null &
  holder=$!
  for _ in $(seq 200); do
    [ -s "$2" ] && return 0
    alive "$holder" || return 1
    sleep 0.05
  done
  return 1
}

# The summary line; exit 1 on a failure, 77 (ctest's skip) when every case was skipped, else 0.
finish() {
  echo "$passed passed, $failed failed$([ "$skipped" -eq 0 ] || echo ", $skipped skipped")"
  [ "$failed" -eq 0 ] || return 1
  if [ "$passed" -eq 0 ] && [ "$skipped" -gt 0 ]; then exit 77; fi
}
