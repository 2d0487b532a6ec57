#!/usr/bin/env bash
# shm_transfer_bench --backing: verified copies on each backing, here and in a peer, nothing left,
# SIGTERM midway, a full backing, the peer killed midway.
#   cli_transfer_backing.sh BIN_DIR
bindir=$1
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_transfer_bench
prefix=shmb_cli_tbacking_$$_
quick=(--shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_mb=4 --num_transfers=20
       --time_per_size_ms=10 --cold --verify_data)
long=(--shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_mb=16 --num_transfers=1000000
      --time_per_size_ms=100000)

# thp and hugetlb under the machine's lock (cli_lib.sh), only what was changed given back; without
# the lock, memfd alone.
thp_file=/sys/kernel/mm/transparent_hugepage/shmem_enabled
old_thp=$(grep -o '\[[a-z_]*\]' "$thp_file" 2>/dev/null | tr -d '[]')
locked=
# A run still going (the test ended early) is ended, so that its cleanup
# runs; then a segment of ours still there is removed (the check before
# finish failed for it).
restore() {
  local job
  for job in $(jobs -p); do wait_run "$job" 0; done
  rm -f /dev/shm/"$prefix"*
  [ -n "$locked" ] && [ -n "$old_thp" ] && [ -w "$thp_file" ] && echo "$old_thp" >"$thp_file"
  give_back_hugepages
  rm -rf "$work"
}
trap restore EXIT
backings=(memfd)
need=24 # pages of 2 MiB: three buffers of 16 MiB (the longest run), and some
if hugepages_lock 200; then
  locked=1
  [ -w "$thp_file" ] && echo advise >"$thp_file" 2>/dev/null
  backings+=(thp)
  if reserve_hugepages "$need"; then
    backings+=(hugetlb)
  else
    skip_case "hugetlb: $(hugepages_avail) huge pages available, $need needed, and $nr_file cannot be raised here"
  fi
else
  skip_case "thp and hugetlb: the machine's huge page lock ($hugepages_lock_file) not had in 200 s (another suite holds it, or it cannot be opened)"
fi

"$bin" --helpshort 2>&1 | tr -s ' \n' ' ' >"$work/help"
grep -q 'backing (.* type: string default: "tmpfs"' "$work/help" && grep -q "hugepage_kb (.* type: int64 default: 2048" "$work/help" \
  && ok || fail "--helpshort: no backing or hugepage_kb with their defaults"
expect_usage_error "$bin" backing --backing=ramfs
expect_usage_error "$bin" hugepage_kb --backing=hugetlb --hugepage_kb=4
# Flow-IPC's pools are named (shm_open): refused on another backing; the
# allocation binary's systems and allocators likewise (ready aside)
alloc=$bindir/shm_allocation_bench
for s in mooncake flowipc_classic flowipc_jemalloc; do
  expect_usage_error "$alloc" backing --system=$s --backing=memfd
done
for s in flowipc_classic flowipc_jemalloc; do
  expect_usage_error "$bin" backing --system=$s --backing=hugetlb
done

# nothing of ours left: no segment, no process of the run; with its
# processes gone, their huge pages are back (memfds: see cli_lib.sh)
clean() {
  [ "$(leftovers "$prefix")" -eq 0 ] && [ "$(peer_left "$prefix")" -eq 0 ]
}

for b in "${backings[@]}"; do
  for peer in false true; do
    "$bin" "${quick[@]}" --backing="$b" --peer_process="$peer" >"$work/$b.out" 2>"$work/$b.err"
    rc=$?
    rows=$(table_rows "$work/$b.out" | grep -c "^4096 .*memcpy")
    [ "$rc" -eq 0 ] && [ "$rows" -eq 2 ] && grep -q "^# backing: $b (" "$work/$b.out" && ok \
      || fail "$b peer=$peer: exit $rc, $rows rows at 4096 KB: $(cat "$work/$b.err")"
    clean && ok || fail "$b peer=$peer: left $(leftovers "$prefix") segments, $(peer_left "$prefix") processes"
  done
  # what the kernel granted is read back: thp and hugetlb all huge here, memfd none
  share=$(grep -o "([0-9.]*%) mapped by huge pages" <(unwrap "$work/$b.out") | tr -d '(%)' | cut -d' ' -f1)
  case $b in
    memfd) want=0.0 ;;
    *) want=100.0 ;;
  esac
  [ "$share" = "$want" ] && ok || fail "$b: huge share $share%, expected $want%"
  grep -q "descriptors received over a Unix socket (SCM_RIGHTS" <(unwrap "$work/$b.out") && ok || fail "$b: the peer note"
  # Mooncake's request into dst on this backing (upstream has memfd, THP and hugetlb segments), verified
  "$bin" --shm_prefix=/$prefix --backing="$b" --system=mooncake --num_segments=10 --peer_process \
    --transfer_size_kb=4 --max_transfer_size_mb=4 --num_transfers=20 --time_per_size_ms=10 >"$work/sys.out" 2>"$work/sys.err"
  rc=$?
  [ "$rc" -eq 0 ] && [ "$(table_rows "$work/sys.out" | grep -c "^4096 *request ")" -eq 1 ] && clean && ok \
    || fail "$b --system=mooncake: exit $rc: $(cat "$work/sys.err")"
  # SIGTERM midway (the peer's control segment says the run is under way)
  expect_signal_cleanup TERM 5 "$prefix" "$bin" "${long[@]}" --backing="$b" --peer_process
  clean && ok || fail "$b SIGTERM: $(peer_left "$prefix") processes left"
  # the peer that received the descriptors killed midway: one line, exit 1, nothing left
  start_peer_run 0 "$prefix" "$bin" "${long[@]}" --backing="$b" --peer_process
  # its huge pages, read from its own processes' smaps while they run: src
  # and dst of 16 MiB in the owner on hugetlb at least, none on shmem
  kb=$(hugetlb_kb "$owner" $peer_pid)
  case $b in
    hugetlb) [ "$kb" -ge 32768 ] ;;
    *) [ "$kb" -eq 0 ] ;;
  esac && ok || fail "$b: the run's own hugetlb mappings $kb KiB"
  [ -n "$peer_pid" ] && kill -9 "$peer_pid"
  wait_run "$owner" 10
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(error_lines "$work/dead.err")" -eq 1 ] \
    && grep -q "the peer process died: pid $peer_pid killed by signal 9 (Killed); nothing is left behind" "$work/dead.err" \
    && ok || fail "$b peer killed: exit $rc: $(cat "$work/dead.err")"
  clean && ok || fail "$b peer killed: left $(leftovers "$prefix") segments, $(peer_left "$prefix") processes"
done

# Flow-IPC's jemalloc pools against Mooncake's one segment, to 16 MiB live
expect_usage_error "$alloc" grow_block_kb --allocator=ready --grow_block_kb=-1
expect_usage_error "$alloc" grow_block_kb --allocator=ready --pool_mb=1048576 --grow_block_kb=1
"$alloc" --shm_prefix=/$prefix --allocator=ready --backing=tmpfs --prefault=none --pool_mb=16 --pool_iterations=1 \
  --grow_block_kb=64 >"$work/grow.out" 2>"$work/grow.err"
rc=$?
[ "$rc" -eq 0 ] && table_rows "$work/grow.out" | grep -q "^16 *mooncake *grow *1 .* 1 pools 1 maps [0-9]* faults\$" \
  && table_rows "$work/grow.out" | grep -q "^16 *flowipc_jemalloc *grow *1 .* [0-9]* pools [0-9]* maps [0-9]* faults\$" \
  && grep -q "^# grow: " "$work/grow.out" && [ "$(leftovers "$prefix")" -eq 0 ] && ok \
  || fail "grow rows: exit $rc: $(cat "$work/grow.err") $(table_rows "$work/grow.out")"

# An exhausted huge page pool: refused before measuring, with the numbers
# (three buffers of free + 2 MiB: more than are free, whoever else maps)
free0=$(hugepages_avail)
"$bin" --shm_prefix=/$prefix --backing=hugetlb --max_transfer_size_mb=$((free0 + 2)) >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(error_lines "$work/err")" -eq 1 ] && grep -q "free huge pages .*nr_hugepages" "$work/err" && \
  [ ! -s "$work/out" ] && ok || fail "exhausted huge pages: exit $rc: $(cat "$work/err")"

# The huge page pool exhausted midway (this test holding every page that comes free once src and
# dst are in): a cold buffer's mmap fails, one line, exit 1, nothing left, never a SIGBUS.
if [[ " ${backings[*]} " == *" hugetlb "* ]] && reserve_hugepages 24; then
  "$bin" --shm_prefix=/$prefix --backing=hugetlb --cold --transfer_size_kb=4 --max_transfer_size_mb=16 \
    --num_transfers=50 --time_per_size_ms=50 >"$work/out" 2>"$work/err" &
  owner=$!
  for _ in $(seq 500); do [ "$(hugetlb_kb "$owner")" -ge 32768 ] && break; sleep 0.01; done
  hold_hugepages all "$work/hog" greedy
  hog=$holder
  wait "$owner"
  rc=$?
  kill "$hog"
  wait "$hog" 2>/dev/null
  if [ -e "$work/hog" ] && [ "$rc" -eq 0 ]; then
    # its larger buffers had pages it did not hold when the hog took the
    # rest: another program gave some back meanwhile
    skip_case "huge pages exhausted midway: pages came free meanwhile; this case needs the machine's pool to itself"
  else
    [ -e "$work/hog" ] && [ "$rc" -eq 1 ] && [ "$(error_lines "$work/err")" -eq 1 ] && [ ! -s "$work/out" ] \
      && grep -q "mmap(hugetlb) failed: Cannot allocate memory" "$work/err" && clean && ok \
      || fail "huge pages exhausted midway: exit $rc, hog $([ -e "$work/hog" ] && echo in || echo out): $(cat "$work/err")"
  fi
elif [[ " ${backings[*]} " == *" hugetlb "* ]]; then
  fail "huge pages exhausted midway: 24 pages could not be had"
fi

# A full /dev/shm (a private 4 MiB tmpfs): tmpfs refuses up front; memfd has
# no name there and does not need its space.
if [ "$(id -u)" -eq 0 ] && private_tmpfs; then
  for b in tmpfs memfd; do
    unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs -o size=4m tmpfs /dev/shm && "$0" "${@:1}"' \
      "$bin" --shm_prefix=/$prefix --backing=$b --max_transfer_size_mb=8 --num_transfers=5 --time_per_size_ms=5 \
      --cold --peer_process >/dev/null 2>"$work/full.err"
    rc=$?
    case $b in
      tmpfs) [ "$rc" -eq 1 ] && [ "$(error_lines "$work/full.err")" -eq 1 ] && grep -q "/dev/shm" "$work/full.err" ;;
      memfd) [ "$rc" -eq 0 ] ;;
    esac && ok || fail "$b in a 4 MiB /dev/shm: exit $rc: $(cat "$work/full.err")"
  done
else
  skip_case "full /dev/shm: needs root and unshare -m"
fi

# nothing of ours left by any case, whether or not its own check ran
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "left in /dev/shm: $(ls /dev/shm | grep "^$prefix" | tr '\n' ' ')"
finish
