#!/usr/bin/env bash
# shm_transfer_bench --backing: verified copies on each backing, in process
# and with a peer that receives descriptors, nothing left in /dev/shm or in
# the huge page pool, SIGTERM midway, a full backing, the peer killed midway.
#   cli_transfer_backing.sh BIN_DIR
bindir=$1
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_transfer_bench
prefix=shmb_cli_tbacking_$$_
quick=(--shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_kb=4096 --num_transfers=20
       --time_per_size_ms=10 --cold --verify_data)
long=(--shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_mb=16 --num_transfers=1000000
      --time_per_size_ms=100000)

# thp: shmem_enabled=advise while this runs, then as it was; hugetlb: a few
# huge pages reserved when fewer are free (root), then the old count.
thp_file=/sys/kernel/mm/transparent_hugepage/shmem_enabled
nr_file=/proc/sys/vm/nr_hugepages
old_thp=$(grep -o '\[[a-z_]*\]' "$thp_file" 2>/dev/null | tr -d '[]')
old_nr=$(cat "$nr_file" 2>/dev/null)
# A run still going (the test ended early) is ended, so that its cleanup
# runs; then a segment of ours still there is removed (the check before
# finish failed for it).
restore() {
  local job
  for job in $(jobs -p); do wait_run "$job" 0; done
  rm -f /dev/shm/"$prefix"*
  [ -n "$old_thp" ] && [ -w "$thp_file" ] && echo "$old_thp" >"$thp_file"
  [ -n "$raised" ] && echo "$old_nr" >"$nr_file"
  rm -rf "$work"
}
trap restore EXIT
[ -w "$thp_file" ] && echo advise >"$thp_file" 2>/dev/null
backings=(memfd thp)
need=24 # pages of 2 MiB: three buffers of 16 MiB (the longest run), and some
raised=
if reserve_hugepages "$need"; then
  backings+=(hugetlb)
else
  skip_case "hugetlb: $(hugepages_free) huge pages free, $need needed, and $nr_file cannot be raised here"
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

# nothing of ours left: no segment, no process, the huge pages given back
clean() {
  [ "$(leftovers "$prefix")" -eq 0 ] && [ "$(peer_left "$prefix")" -eq 0 ] && [ "$(hugepages_held)" -eq "$1" ]
}

for b in "${backings[@]}"; do
  held0=$(hugepages_held)
  for peer in false true; do
    "$bin" "${quick[@]}" --backing="$b" --peer_process="$peer" >"$work/$b.out" 2>"$work/$b.err"
    rc=$?
    rows=$(table_rows "$work/$b.out" | grep -c "^4096 .*memcpy")
    [ "$rc" -eq 0 ] && [ "$rows" -eq 2 ] && grep -q "^# backing: $b (" "$work/$b.out" && ok \
      || fail "$b peer=$peer: exit $rc, $rows rows at 4096 KB: $(cat "$work/$b.err")"
    clean "$held0" && ok || fail "$b peer=$peer: left $(leftovers "$prefix") segments, huge pages held $(hugepages_held), $held0 before"
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
    --transfer_size_kb=4 --max_transfer_size_kb=4096 --num_transfers=20 --time_per_size_ms=10 >"$work/sys.out" 2>"$work/sys.err"
  rc=$?
  [ "$rc" -eq 0 ] && [ "$(table_rows "$work/sys.out" | grep -c "^4096 *request ")" -eq 1 ] && clean "$held0" && ok \
    || fail "$b --system=mooncake: exit $rc: $(cat "$work/sys.err")"
  # SIGTERM midway (the peer's control segment says the run is under way)
  expect_signal_cleanup TERM 5 "$prefix" "$bin" "${long[@]}" --backing="$b" --peer_process
  clean "$held0" && ok || fail "$b SIGTERM: huge pages held $(hugepages_held), $held0 before"
  # the peer that received the descriptors killed midway: one line, exit 1, nothing left
  start_peer_run 0 "$prefix" "$bin" "${long[@]}" --backing="$b" --peer_process
  [ -n "$peer_pid" ] && kill -9 "$peer_pid"
  wait_run "$owner" 10
  rc=$?
  [ "$rc" -eq 1 ] && [ "$(error_lines "$work/dead.err")" -eq 1 ] \
    && grep -q "the peer process died: pid $peer_pid killed by signal 9 (Killed); nothing is left behind" "$work/dead.err" \
    && ok || fail "$b peer killed: exit $rc: $(cat "$work/dead.err")"
  clean "$held0" && ok || fail "$b peer killed: left $(leftovers "$prefix"), huge pages held $(hugepages_held), $held0 before"
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

# An exhausted huge page pool: refused before measuring, with the numbers.
free0=$(hugepages_free)
"$bin" --shm_prefix=/$prefix --backing=hugetlb --max_transfer_size_mb=$((free0 + 2)) >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(error_lines "$work/err")" -eq 1 ] && grep -q "free huge pages .*nr_hugepages" "$work/err" && \
  [ ! -s "$work/out" ] && ok || fail "exhausted huge pages: exit $rc: $(cat "$work/err")"

# The huge page pool exhausted midway: exactly the pages of src, dst and a
# cold buffer of 16 MiB are free at start; once src and dst are in, another
# process takes one, so the cold buffer of 16 MiB cannot be had. A
# MAP_SHARED hugetlb mapping reserves its pages at mmap: the run ends there
# with one line and exit 1, nothing left (never a SIGBUS in a copy).
if [[ " ${backings[*]} " == *" hugetlb "* ]] && [ -w "$nr_file" ]; then
  held0=$(hugepages_held)
  raised=1
  echo $(($(awk '/^HugePages_Total/ {print $2}' /proc/meminfo) - $(hugepages_free) + 24)) >"$nr_file"
  "$bin" --shm_prefix=/$prefix --backing=hugetlb --cold --transfer_size_kb=4 --max_transfer_size_mb=16 \
    --num_transfers=50 --time_per_size_ms=50 >"$work/out" 2>"$work/err" &
  owner=$!
  for _ in $(seq 500); do [ "$(hugepages_free)" -le 8 ] && break; sleep 0.01; done
  /usr/bin/python3 -c 'import os, mmap, sys, time
fd = os.memfd_create("hog", os.MFD_HUGETLB)
os.ftruncate(fd, 2 << 20)
m = mmap.mmap(fd, 2 << 20)
m[0] = 1
open(sys.argv[1], "w").close()
time.sleep(30)' "$work/hog" &
  hog=$!
  wait "$owner"
  rc=$?
  kill "$hog"
  wait "$hog" 2>/dev/null
  [ -e "$work/hog" ] && [ "$rc" -eq 1 ] && [ "$(error_lines "$work/err")" -eq 1 ] && [ ! -s "$work/out" ] \
    && grep -q "mmap(hugetlb) failed: Cannot allocate memory" "$work/err" && clean "$held0" && ok \
    || fail "huge pages exhausted midway: exit $rc, hog $([ -e "$work/hog" ] && echo in || echo out): $(cat "$work/err")"
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
