#!/usr/bin/env bash
# shm_transfer_bench --workload: the sample trace and a synthetic stream through each system, the
# engines' layouts, the sample made again, bad traces and flags, memfd and hugetlb, clean-up.
#   cli_workload.sh BIN_DIR SOURCE_DIR
bindir=$1
srcdir=$2
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_transfer_bench
prefix=shmb_cli_workload_$$_
sample=$srcdir/traces/sample.jsonl
small=(--shm_prefix=/$prefix --model=deepseek_v3 --block_tokens=16 --max_request_mb=4)
parts="request_path translate copy request"

"$bin" --helpshort >"$work/help" 2>&1 || fail "--helpshort exit $?"
tr -s ' \n' ' ' <"$work/help" | sed 's/ -\([a-z_]*\) (/\n\1 (/g' >"$work/help1"
for f in 'workload string ""' 'model string "llama3_8b"' "block_tokens int64 512" 'granularity string "layer"' \
         'layout string "layer"' "tp int64 1" "requests int64 100" "max_request_mb int64 256" 'write_trace string ""' \
         'reuse string "off"' 'arrivals string "closed"' "speed double 1"; do
  set -- $f
  grep -q "^$1 (.*type: $2 default: $3 *\$" "$work/help1" && ok || fail "--helpshort: no $1 of $2 with default $3"
done

# rows_of FILE.json: "name iterations p50 p99 p999" per row.
rows_of() {
  /usr/bin/python3 - "$1" <<'EOF'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    print(b["name"], b["iterations"], b["p50"] > 0, b["p99"] >= b["p50"], b["p999"] >= b["p99"])
EOF
}

# The sample trace, each system: four rows by the names the report reads, a
# sample per request of the trace, percentiles in order, the notes.
for system in mooncake flowipc_classic flowipc_jemalloc; do
  out=$work/sample_$system
  "$bin" "${small[@]}" --workload="$sample" --requests=0 --system=$system --format=json >"$out.json" 2>"$out.err" \
    || fail "sample trace, $system: exit $?: $(cat "$out.err")"
  want=""
  for p in $parts; do want="$want shm_transfer/workload/$p/model:deepseek_v3 300 True True True"; done
  [ "$(rows_of "$out.json" | tr '\n' ' ')" = "${want# } " ] && ok || fail "sample, $system: $(rows_of "$out.json")"
  grep -q '"per request: descriptors mean [0-9.]*, bytes mean [0-9.]* MiB, largest 3.22 MiB"' "$out.json" \
    && grep -q '"workload: trace .*sample.jsonl: 300 requests' "$out.json" && ok || fail "sample, $system: notes"
done

# A synthetic stream, each system, as a table: the four parts, shares of the
# request's p50 in the notes, 30 requests; SHM-jemalloc's request its write
# path (each descriptor handed over), its translate not possible upstream.
for system in mooncake flowipc_classic flowipc_jemalloc; do
  "$bin" "${small[@]}" --workload=synthetic --requests=30 --granularity=block --system=$system \
    >"$work/syn.txt" 2>"$work/syn.err" || fail "synthetic, $system: exit $?: $(cat "$work/syn.err")"
  shares=3 whole='parts add up to [0-9.]*%$'
  [ $system != flowipc_jemalloc ] || shares=2 whole='write path: each descriptor handed over$'
  [ "$(table_rows "$work/syn.txt" | awk '{print $1, $2, $6}' | tr '\n' ' ')" = \
    "deepseek_v3 request_path 30 deepseek_v3 translate 30 deepseek_v3 copy 30 deepseek_v3 request 30 " ] \
    && [ "$(table_rows "$work/syn.txt" | grep -c '% of request p50$')" -eq $shares ] \
    && table_rows "$work/syn.txt" | grep -q "$whole" \
    && grep -q "^# system: $system$" "$work/syn.txt" && ok || fail "synthetic, $system: $(cat "$work/syn.txt")"
done

# Without --system: each system in turn, named in the step column and the names.
"$bin" "${small[@]}" --workload=synthetic --requests=5 --format=json >"$work/all.json" 2>/dev/null \
  || fail "synthetic, all systems: exit $?"
[ "$(rows_of "$work/all.json" | awk '{print $1}' | grep -c '^shm_transfer/workload/[a-z_]*/\(mooncake\|flowipc_classic\|flowipc_jemalloc\)/model:deepseek_v3$')" -eq 12 ] \
  && ok || fail "all systems: $(rows_of "$work/all.json")"

# The engines' layouts (Llama-3-8B, 2 TP ranks, 16 KiB descriptors) through each system and paired,
# verified, the header's fan-out and how descriptors were submitted.
engine=(--shm_prefix=/$prefix --model=llama3_8b --tp=2 --max_request_mb=4 --workload=synthetic --format=json)
for layout in vllm sglang; do
  lines=("fan-out: layout=$layout block_tokens=16 tp=2: a descriptor per (layer, K|V, [a-z_ ]*), one TP rank's KV heads (4 of 8)"
         "per request: descriptors mean 256.0 (min 256, max 256), .*; descriptor sizes (all requests): mean 16384.0 B; <=16 KiB: 1280 (100.0%)")
  for system in mooncake flowipc_classic flowipc_jemalloc; do
    out=$work/$layout.$system
    extra=(); [ $layout = vllm ] || extra=(--block_tokens=16)
    "$bin" "${engine[@]}" "${extra[@]}" --requests=5 --layout=$layout --system=$system >"$out.json" 2>"$out.err" \
      || fail "$layout, $system: exit $?: $(cat "$out.err")"
    want=""
    for p in $parts; do want="$want shm_transfer/workload/$p/model:llama3_8b 5 True True True"; done
    [ "$(rows_of "$out.json" | tr '\n' ' ')" = "${want# } " ] && grep -q "\"${lines[0]}" "$out.json" \
      && grep -q "\"${lines[1]}\"" "$out.json" && ok || fail "$layout, $system: $(rows_of "$out.json"; cat "$out.json")"
  done
  "$bin" "${engine[@]}" "${extra[@]}" --requests=5 --layout=$layout --systems=mooncake,flowipc_classic \
    >"$work/$layout.paired.json" 2>/dev/null || fail "$layout, paired: exit $?"
  [ "$(rows_of "$work/$layout.paired.json" | awk '{print $1}' | sed 's|^shm_transfer/workload/[a-z_]*/||' | sort | uniq -c \
       | awk '{print $1, $2}' | tr '\n' ' ')" = "4 model:llama3_8b/system:flowipc_classic 4 model:llama3_8b/system:flowipc_classic/vs:mooncake 4 model:llama3_8b/system:mooncake 4 model:llama3_8b/system:mooncake_control 4 model:llama3_8b/system:mooncake_control/vs:mooncake " ] \
    && grep -q "\"${lines[0]}" "$work/$layout.paired.json" && ok || fail "$layout, paired: $(rows_of "$work/$layout.paired.json")"
  submits="; this replay submits each descriptor as its own batch of one (the engine model takes one per call)"
  [ $layout = vllm ] || submits="; submits: one per request (sglang): request_path and request give all of a request's descriptors to one submit (shmb_mooncake_engine_submit_n)"
  grep -q "\"${lines[0]}.*$submits" "$work/$layout.paired.json" && ! grep -q "descriptors per submit: a request of more" \
    "$work/$layout.paired.json" && ok || fail "$layout, paired: the header's submits: $(cat "$work/$layout.paired.json")"
done
# sglang open-loop: one submit per request there too, the rows line says so.
"$bin" "${engine[@]}" --block_tokens=16 --requests=5 --layout=sglang --system=flowipc_classic --arrivals=trace \
  --speed=100 --format=table >"$work/sglang.open.txt" 2>"$work/sglang.open.err" \
  && unwrap "$work/sglang.open.txt" | grep -q "^# fan-out: layout=sglang .*; submits: one per request (sglang): " \
  && unwrap "$work/sglang.open.txt" | grep -q "^# rows: .*request: its service, one submit of the request's descriptors through the request path calling translation and copy per descriptor" \
  && [ "$(table_rows "$work/sglang.open.txt" | awk '{print $2, $6}' | tr '\n' ' ')" = "request 5 latency 5 " ] \
  && ok || fail "sglang, --arrivals=trace: $(cat "$work/sglang.open.txt" "$work/sglang.open.err")"

# Prefix reuse (traces/sample_reuse.jsonl): only missed blocks replayed (3650 of 7036 hits, 51.9%);
# without --reuse every block moves.
/usr/bin/python3 "$srcdir/traces/make_sample_reuse.py" "$sample" "$work/reuse.jsonl" 2>/dev/null \
  && cmp -s "$work/reuse.jsonl" "$srcdir/traces/sample_reuse.jsonl" && ok \
  || fail "traces/sample_reuse.jsonl is not what traces/make_sample_reuse.py writes"
"$bin" "${small[@]}" --workload="$srcdir/traces/sample_reuse.jsonl" --requests=0 --system=mooncake --reuse=on \
  >"$work/reuse.txt" 2>"$work/reuse.err" || fail "--reuse=on: exit $?: $(cat "$work/reuse.err")"
grep -q '^# reuse: on: 3650 of 7036 blocks (hash ids) hit, seen on an earlier line (51.9%)' "$work/reuse.txt" \
  && table_rows "$work/reuse.txt" | grep -q ' request .*parts add up to [0-9.]*%; hits 51.9% of blocks$' \
  && [ "$(table_rows "$work/reuse.txt" | awk '{print $6}' | sort -u)" = 300 ] \
  && ok || fail "--reuse=on: $(cat "$work/reuse.txt")"
"$bin" "${small[@]}" --workload="$srcdir/traces/sample_reuse.jsonl" --requests=5 --system=mooncake >"$work/noreuse.txt" \
  2>/dev/null && ! grep -q '^# reuse' "$work/noreuse.txt" && ! grep -q 'hits' "$work/noreuse.txt" && ok \
  || fail "--reuse off: $(cat "$work/noreuse.txt")"

# Open-loop arrivals: the header says so, two rows (request, latency) of a
# sample per request, each system; --speed only with --arrivals=trace.
for system in mooncake flowipc_classic flowipc_jemalloc; do
  "$bin" "${small[@]}" --workload="$sample" --requests=10 --system=$system --arrivals=trace --speed=20 \
    >"$work/open.txt" 2>"$work/open.err" || fail "--arrivals=trace, $system: exit $?: $(cat "$work/open.err")"
  unwrap "$work/open.txt" \
    | grep -q "^# workload: trace .*: 10 requests, arrivals over [0-9]* ms, arrivals=trace: issued open-loop at timestamp / 20 " \
    && [ "$(table_rows "$work/open.txt" | awk '{print $2, $6}' | tr '\n' ' ')" = "request 10 latency 10 " ] \
    && table_rows "$work/open.txt" | grep -q ' latency .*from intended start, speed 20; issue late p99 [0-9]* us$' \
    && ok || fail "--arrivals=trace, $system: $(cat "$work/open.txt")"
done
"$bin" "${small[@]}" --workload="$sample" --requests=3 --system=mooncake >"$work/closed.txt" 2>/dev/null \
  && unwrap "$work/closed.txt" | grep -q "replayed back to back (arrivals order them; nothing waits)$" && ok \
  || fail "closed loop header: $(cat "$work/closed.txt")"

# The same seed, the same synthetic stream; the shipped sample is what its
# command writes.
"$bin" --workload=synthetic --requests=300 --seed=42 --write_trace="$work/s1.jsonl" 2>/dev/null \
  && cmp -s "$work/s1.jsonl" "$sample" && ok || fail "traces/sample.jsonl is not what --write_trace writes"
"$bin" --workload=synthetic --requests=300 --seed=43 --write_trace="$work/s2.jsonl" 2>/dev/null \
  && ! cmp -s "$work/s1.jsonl" "$work/s2.jsonl" && ok || fail "--seed does not change the stream"

# A malformed line: exit 2, one line naming the file and the line.
head -2 "$sample" >"$work/bad.jsonl"
echo '{"timestamp": 99999999, "input_length": "12", "output_length": 3, "hash_ids": []}' >>"$work/bad.jsonl"
tail -1 "$sample" >>"$work/bad.jsonl"
"$bin" "${small[@]}" --workload="$work/bad.jsonl" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ ! -s "$work/out" ] \
  && grep -q "^shm_transfer_bench: $work/bad.jsonl:3: input_length: expected a non-negative integer$" "$work/err" \
  && ok || fail "malformed line: exit $rc: $(cat "$work/err")"
: >"$work/empty.jsonl"
"$bin" "${small[@]}" --workload="$work/empty.jsonl" >/dev/null 2>"$work/err"
[ $? -eq 2 ] && grep -q "empty.jsonl: no request in the trace" "$work/err" && ok || fail "empty trace: $(cat "$work/err")"

# Bad flags: one line naming the flag, exit 2.
expect_usage_error "$bin" workload --workload="$work/none.jsonl"
expect_usage_error "$bin" workload --workload="$work"
expect_usage_error "$bin" model --workload=synthetic --model=gpt4
expect_usage_error "$bin" granularity --workload=synthetic --granularity=page
expect_usage_error "$bin" granularity --workload=synthetic --granularity=block --layout=vllm
expect_usage_error "$bin" layout --workload=synthetic --layout=trtllm
expect_usage_error "$bin" tp --workload=synthetic --tp=2
expect_usage_error "$bin" tp --workload=synthetic --layout=vllm --tp=3
expect_usage_error "$bin" tp --workload=synthetic --layout=sglang --tp=0
expect_usage_error "$bin" block_tokens --workload=synthetic --block_tokens=0
expect_usage_error "$bin" requests --workload=synthetic --requests=0
expect_usage_error "$bin" reuse --workload=synthetic --reuse=yes
expect_usage_error "$bin" arrivals --workload=synthetic --arrivals=poisson
expect_usage_error "$bin" arrivals --workload=synthetic --arrivals=trace --systems=mooncake,flowipc_classic
expect_usage_error "$bin" speed --workload=synthetic --arrivals=trace --speed=0
expect_usage_error "$bin" speed --workload=synthetic --speed=2
expect_usage_error "$bin" reuse --workload=synthetic --reuse=on --write_trace="$work/w.jsonl"
expect_usage_error "$bin" max_request_mb --workload=synthetic --model=llama31_70b --max_request_mb=100
expect_usage_error "$bin" cold --workload=synthetic --cold
expect_usage_error "$bin" peer_process --workload=synthetic --peer_process
expect_usage_error "$bin" methods --workload=synthetic --methods=memcpy,loop
# a backing or huge page size that does not exist; Flow-IPC's pools on a
# backing without names (they are shm_open'd and lent by name), also when
# no --system makes the replay run them
expect_usage_error "$bin" backing --workload=synthetic --backing=ramfs
expect_usage_error "$bin" hugepage_kb --workload=synthetic --backing=hugetlb --hugepage_kb=4
expect_usage_error "$bin" backing --workload=synthetic --system=flowipc_classic --backing=memfd
expect_usage_error "$bin" backing --workload=synthetic --system=flowipc_jemalloc --backing=hugetlb
expect_usage_error "$bin" backing --workload=synthetic --backing=memfd
# the replay's flags without --workload: refused, not a size sweep that
# ignores them (nor a --write_trace that writes nothing)
sweep=(--shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_mb=0.00390625 --num_transfers=10)
expect_usage_error "$bin" model "${sweep[@]}" --model=deepseek_v3
expect_usage_error "$bin" block_tokens "${sweep[@]}" --block_tokens=16
expect_usage_error "$bin" granularity "${sweep[@]}" --granularity=block
expect_usage_error "$bin" layout "${sweep[@]}" --layout=vllm
expect_usage_error "$bin" tp "${sweep[@]}" --tp=2
expect_usage_error "$bin" requests "${sweep[@]}" --requests=5
expect_usage_error "$bin" max_request_mb "${sweep[@]}" --max_request_mb=4
expect_usage_error "$bin" write_trace "${sweep[@]}" --write_trace="$work/never.jsonl"
[ ! -e "$work/never.jsonl" ] && ok || fail "--write_trace without --workload wrote a file"

# --backing: 50 requests through Mooncake on memfd (no name) and, where huge pages can be had, on
# hugetlb; every descriptor verified, the header naming the backing, nothing left.
restore() {
  give_back_hugepages
  rm -rf "$work"
}
trap restore EXIT
# what each backing grants src and dst of 3.22 MiB: 4 KiB pages, or 2 MiB ones
declare -A resident=([memfd]=6.4 [hugetlb]=8.0)
backings=(memfd)
need=8 # pages of 2 MiB: src and dst of 3.22 MiB, rounded up to 4 MiB each, and some
if ! hugepages_lock 120; then
  skip_case "replay on hugetlb: the machine's huge page lock ($hugepages_lock_file) not had in 120 s (another suite holds it, or it cannot be opened)"
elif reserve_hugepages "$need"; then
  backings+=(hugetlb)
else
  skip_case "replay on hugetlb: $(hugepages_avail) huge pages available, $need needed, and $nr_file cannot be raised here"
fi
for b in "${backings[@]}"; do
  "$bin" "${small[@]}" --workload="$sample" --requests=50 --system=mooncake --backing=$b >"$work/$b.txt"     2>"$work/$b.err"
  rc=$?
  [ "$rc" -eq 0 ] && [ "$(table_rows "$work/$b.txt" | awk '{print $1, $2, $6}' | tr '\n' ' ')" = \
    "deepseek_v3 request_path 50 deepseek_v3 translate 50 deepseek_v3 copy 50 deepseek_v3 request 50 " ] \
    && grep -q "^# backing: $b (.*; granted (smaps, after the set-up): src+dst ${resident[$b]} MiB resident" <(unwrap "$work/$b.txt") \
    && ok || fail "replay on $b: exit $rc: $(cat "$work/$b.err" "$work/$b.txt")"
  [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "replay on $b: left $(leftovers "$prefix") segments"
done
grep -q "^# backing: hugetlb .* 8.0 MiB (100.0%) mapped by huge pages" <(unwrap "$work/hugetlb.txt" 2>/dev/null) \
  || [[ " ${backings[*]} " != *" hugetlb "* ]] && ok || fail "hugetlb: not all huge: $(grep '^# backing' "$work/hugetlb.txt")"
"$bin" "${small[@]}" --workload=synthetic --requests=3 --system=mooncake >"$work/tmpfs.txt" 2>/dev/null \
  && grep -q "^# backing: tmpfs (shm_open in /dev/shm" "$work/tmpfs.txt" && ok || fail "tmpfs: no backing line"

# SIGINT midway through a replay: 130, nothing left in /dev/shm
expect_signal_cleanup INT 5 "$prefix" "$bin" --shm_prefix=/$prefix --workload="$sample" --requests=0 \
  --system=mooncake

# /dev/shm too small for src and dst of the largest request: exit 2, what
# it needs against what is free (in a 64 KiB tmpfs of a private namespace).
if private_tmpfs; then
  unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /dev/shm && exec "$@"' _ "$bin" "${small[@]}" \
    --workload=synthetic --requests=3 >/dev/null 2>"$work/space.err"
  rc=$?
  [ "$rc" -eq 2 ] && grep -q -- "--max_request_mb=4: the replay needs 6.44 MiB of /dev/shm .* but only 0.06 MiB is free" \
    "$work/space.err" && ok || fail "no space: exit $rc: $(cat "$work/space.err")"
else
  skip_case "no private mount namespace for a small /dev/shm"
fi

[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "$(leftovers "$prefix") segments left"
finish
