#!/usr/bin/env bash
# --allocator=ready: each backing's and prefault's rows, flags, limits and a signal midway. A third
# argument (root and the machine's huge page lock, else 77): hugetlb adds the pages it needs, runs
# its rows and test_backing (2nd argument) and exhausts the pool; thp sets shmem_enabled=advise.
bindir=$1
test_backing=$2
mode=${3:-}
source "$(dirname "$0")/cli_lib.sh"
alloc=$bindir/shm_allocation_bench
prefix=shmb_cli_backing_$$_
shmem=/sys/kernel/mm/transparent_hugepage/shmem_enabled

# The rows of a run as "variant step note" (table: pool_mb, allocator, step, ...).
ready() {
  "$alloc" --allocator=ready --shm_prefix="/$prefix" --pool_iterations=1 "$@" >"$work/out" 2>"$work/err"
}

# row VARIANT STEP: the note of that row of the last run.
row() {
  table_rows "$work/out" | awk -v v="$1" -v s="$2" '$2 == v && $3 == s { sub(/.*(GB\/s|mapped only:) /, ""); print }'
}

# expect_note VARIANT STEP PATTERN: that row's note matches.
expect_note() {
  local got
  got=$(row "$1" "$2")
  [[ "$got" =~ $3 ]] && ok || fail "$1 $2: note '$got', expected /$3/"
}

general() {
  expect_usage_error "$alloc" backing --allocator=ready --backing=ramfs
  expect_usage_error "$alloc" prefault --allocator=ready --prefault=populate,populate
  expect_usage_error "$alloc" pool_mb --allocator=ready --pool_mb=0
  expect_usage_error "$alloc" hugepage_kb --allocator=ready --hugepage_kb=4096
  expect_usage_error "$alloc" prefault_threads --allocator=ready --prefault_threads=0
  expect_usage_error "$alloc" allocator --allocator=ready,posix
  expect_usage_error "$alloc" system --allocator=ready --system=mooncake
  expect_usage_error "$alloc" touch --allocator=ready --touch
  expect_usage_error "$alloc" threads --allocator=ready --threads=2
  expect_usage_error "$alloc" cleanup --allocator=ready --cleanup=false
  # ready's flags without it: refused, not a run of the allocators that ignores them
  local f quick=(--shm_prefix="/$prefix" --max_size_kb=4 --min_ops=1000 --num_iterations=10)
  for f in prefault=touch pool_mb=16 prefault_threads=2 hugepage_kb=1048576 pool_iterations=1 grow_block_kb=64; do
    expect_usage_error "$alloc" "${f%%=*}" "${quick[@]}" --"$f"
  done

  # tmpfs and memfd, every method: resident as each method leaves it, verified, nothing left
  if ready --backing=tmpfs,memfd --pool_mb=16 --format=table --json_out="$work/ready.json"; then
    ok
  else
    fail "tmpfs,memfd: exit $?: $(cat "$work/err")"
  fi
  [ "$(table_rows "$work/out" | wc -l)" -eq 10 ] && ok || fail "tmpfs,memfd: $(table_rows "$work/out" | wc -l) rows, expected 10"
  for b in tmpfs memfd; do
    expect_note "ready/$b" none "faults rss 0% huge 0%$"
    expect_note "ready/$b" touch "^[0-9]{4} faults rss 100% huge 0%$"
    expect_note "ready/$b" populate "rss 100% huge 0%$"
    expect_note "ready/$b" populate_write "rss 100% huge 0%$"
    expect_note "ready/$b" fallocate "rss 0% huge 0%$"
  done
  grep -q '"name": "shm_alloc/ready/memfd/populate_write/pool_mb:16"' "$work/ready.json" && ok \
    || fail "JSON names: $(grep -o '"name": "[^"]*"' "$work/ready.json" | head -3)"
  grep -q "^# memory: .* available, .*16 MiB needed" "$work/out" && grep -q "^# vm.max_map_count: [0-9]*, mappings" "$work/out" \
    && ok || fail "limit lines: $(grep '^# ' "$work/out" | tail -4)"
  [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "tmpfs,memfd left $(leftovers "$prefix") segments"

  # threads: named where the method splits, not for one mmap call
  ready --backing=memfd --prefault=touch,populate --pool_mb=8 --prefault_threads=2 --format=csv &&
    grep -q "^shm_alloc/ready/memfd/touch/pool_mb:8/threads:2," "$work/out" &&
    grep -q "^shm_alloc/ready/memfd/populate/pool_mb:8," "$work/out" && ok \
    || fail "threads: $(cat "$work/out" "$work/err" | tail -3)"

  # more prefault threads than CPUs: the warning names the flag that asked for them
  local cpus
  cpus=$(nproc)
  ready --backing=memfd --prefault=touch --pool_mb=1 --prefault_threads=$((cpus + 1))
  rc=$?
  [ "$rc" -eq 0 ] && grep -q -- "warning: --prefault_threads=$((cpus + 1)) exceeds the $cpus CPUs" "$work/err" \
    && ok || fail "prefault_threads over the CPUs: exit $rc, $(cat "$work/err")"

  # a full backing is refused before anything is measured: the need and the room
  if [ "$(id -u)" -eq 0 ] && private_tmpfs; then
    unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=4m tmpfs /dev/shm &&
      "$0" --allocator=ready --shm_prefix="$1" --backing=tmpfs --pool_mb=8' "$alloc" "/$prefix" \
      >"$work/out" 2>"$work/err"
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "needs 8 MiB in /dev/shm for a tmpfs pool but only 4 MiB is free" "$work/err" \
      && [ ! -s "$work/out" ] && ok || fail "full /dev/shm: exit $rc, $(cat "$work/err")"
  else
    skip_case "a full /dev/shm: no private mount namespace (root needed)"
  fi

  # SIGTERM midway through large pools: 143, nothing left
  expect_signal_cleanup TERM 5 "$prefix" "$alloc" --allocator=ready --shm_prefix="/$prefix" --backing=tmpfs \
    --prefault=touch --pool_mb=1024 --pool_iterations=100
  # and Ctrl-C (SIGINT): 130, nothing left
  expect_signal_cleanup INT 5 "$prefix" "$alloc" --allocator=ready --shm_prefix="/$prefix" --backing=tmpfs \
    --prefault=touch,populate --pool_mb=1024 --pool_iterations=100
  finish
}

# The machine's setting of FILE given back on exit, whatever happens.
keep() {
  local file=$1 value
  value=$(cat "$file")
  [[ "$value" =~ \[([a-z_]+)\] ]] && value=${BASH_REMATCH[1]}
  trap "echo '$value' > '$file'; rm -rf '$work'" EXIT
}

# hugetlb: under the machine's lock, only the pages added given back; only this test's own pages counted.
give_back() {
  give_back_hugepages
  rm -rf "$work"
}

# no_run_left: no process of this test's runs (nor of test_backing) is left;
# with them gone, every huge page they had is back (memfds: cli_lib.sh).
no_run_left() {
  [ "$(peer_left "$prefix")" -eq 0 ] && ! pgrep -f "^$test_backing" >/dev/null
}

# signal_midway SIG RC: a run of 32 MiB of huge pages, its own hugetlb
# mappings seen in its smaps, then SIG: exit RC and nothing of it left.
signal_midway() {
  reserve_hugepages 16 # again: others may have taken some since
  env --default-signal="$1" "$alloc" --allocator=ready --shm_prefix="/$prefix" --backing=hugetlb --prefault=touch \
    --pool_mb=32 --pool_iterations=1000 >/dev/null 2>&1 &
  local pid=$! kb=0
  for _ in $(seq 250); do
    kb=$(hugetlb_kb "$pid")
    [ "$kb" -ge 32768 ] && break
    sleep 0.02
  done
  kill -"$1" "$pid"
  wait "$pid"
  rc=$?
  [ "$kb" -ge 32768 ] && [ "$rc" -eq "$2" ] && no_run_left && [ "$(leftovers "$prefix")" -eq 0 ] && ok \
    || fail "hugetlb SIG$1: exit $rc, $kb KiB of hugetlb mapped before, $(peer_left "$prefix") processes left"
}

hugetlb() {
  [ "$(id -u)" -eq 0 ] || { echo "skipped: hugetlb: not root, cannot reserve huge pages" >&2; exit 77; }
  [ -w "$nr_file" ] && [ "$(grep Hugepagesize /proc/meminfo)" = "Hugepagesize:       2048 kB" ] ||
    { echo "skipped: hugetlb: the default huge page is not 2 MiB here" >&2; exit 77; }
  hugepages_lock 200 ||
    { echo "skipped: hugetlb: the machine's huge page lock ($hugepages_lock_file) not had in 200 s (another suite holds it, or it cannot be opened)" >&2; exit 77; }
  trap give_back EXIT
  # more than are free: the line that says how many to reserve, exit 2,
  # nothing measured; its figures agree with each other (others may map or
  # give back pages meanwhile): N needed, F free of T, so echo T + N - F
  local want
  want=$(($(cat "$hpool/nr_hugepages") + $(cat "$hpool/free_hugepages") + 8))
  ready --backing=hugetlb --pool_mb=$((want * 2))
  rc=$?
  local got
  got=$(sed -n "s/.*needs \([0-9]*\) free huge pages of 2048 kB (.*) but \([0-9]*\) are free of \([0-9]*\) reserved; reserve them as root: echo \([0-9]*\) > \/proc\/sys\/vm\/nr_hugepages.*/\1 \2 \3 \4/p" "$work/err")
  read -r n f t r <<<"$got"
  [ "$rc" -eq 2 ] && [ ! -s "$work/out" ] && [ "${n:-0}" -eq "$want" ] && [ "$f" -lt "$n" ] && [ "$r" -eq $((t + n - f)) ] \
    && ok || fail "too few huge pages: exit $rc, $(cat "$work/err")"
  # available: every method, all of it huge where it is resident, nothing left
  reserve_hugepages 16 || { echo "skipped: hugetlb: only $(hugepages_avail) pages available, 16 needed" >&2; exit 77; }
  ready --backing=hugetlb --pool_mb=16 --prefault_threads=2 && ok || fail "hugetlb: exit $?: $(cat "$work/err")"
  expect_note ready/hugetlb none "rss 0% huge 0%$"
  expect_note ready/hugetlb touch "^[0-9]{1,2} faults rss 100% huge 100%$" # 8, and the threads' own
  expect_note ready/hugetlb populate "rss 100% huge 100%$"
  expect_note ready/hugetlb populate_write "rss 100% huge 100%$"
  expect_note ready/hugetlb fallocate "rss 0% huge 0%$"
  grep -q "^# huge pages of 2048 kB: [0-9]* free of [0-9]* reserved (.*), 8 needed" "$work/out" && ok \
    || fail "huge page line: $(grep '^# huge' "$work/out")"
  no_run_left && [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "hugetlb: $(peer_left "$prefix") processes left"
  # SIGTERM midway: 143, nothing left
  signal_midway TERM 143
  # and Ctrl-C (SIGINT, which a shell's background job would otherwise ignore): 130, nothing left
  signal_midway INT 130
  # reserved-but-untouched pages are not free: with every available page held, refused up front
  # (exit 2, fewer than 8 free), not an mmap failing midway
  if hold_hugepages all "$work/held"; then
    ready --backing=hugetlb --pool_mb=16
    rc=$?
    kill "$holder"
    wait "$holder" 2>/dev/null
    [ "$rc" -eq 2 ] && [ ! -s "$work/out" ] && grep -q "needs 8 free huge pages of 2048 kB (16 MiB) but [0-7] are free" "$work/err" \
      && ok || fail "pages reserved by another mapping: exit $rc, $(cat "$work/err")"
  else
    fail "pages reserved by another mapping: no process to hold them"
  fi
  # the unit tests' hugetlb cases, for real (they count their own pages, and
  # take the lock this test holds through SHMB_HUGEPAGES_LOCKED)
  "$test_backing" >"$work/unit" 2>&1 && ! grep -q SKIPPED "$work/unit" && ok \
    || fail "test_backing on reserved pages: $(grep -E 'FAIL|SKIPPED' "$work/unit" | head -5)"
  no_run_left && ok || fail "test_backing: processes left"
  finish
}

thp() {
  [ "$(id -u)" -eq 0 ] || { echo "skipped: thp: not root, cannot set $shmem" >&2; exit 77; }
  [ -w "$shmem" ] || { echo "skipped: thp: no $shmem" >&2; exit 77; }
  hugepages_lock 200 ||
    { echo "skipped: thp: the machine's huge page lock ($hugepages_lock_file) not had in 200 s (another suite holds it, or it cannot be opened)" >&2; exit 77; }
  keep "$shmem"
  echo advise >"$shmem"
  ready --backing=thp --pool_mb=16 && ok || fail "thp: exit $?: $(cat "$work/err")"
  grep -q "shmem_enabled=advise" "$work/out" && ok || fail "thp: header does not say advise"
  expect_note ready/thp touch "^8 faults rss 100% huge 100%$"
  expect_note ready/thp populate_write "rss 100% huge 100%$"
  # MAP_POPULATE faults before MADV_HUGEPAGE can be given: small pages
  expect_note ready/thp populate "rss 100% huge 0%$"
  echo never >"$shmem"
  ready --backing=thp --prefault=touch --pool_mb=16 && ok || fail "thp never: exit $?"
  expect_note ready/thp touch "^[0-9]{4} faults rss 100% huge 0%$"
  finish
}

case "$mode" in
hugetlb) hugetlb ;;
thp) thp ;;
general) general ;;
esac
