#!/usr/bin/env bash
# shm_transfer_bench --systems: a paired sweep (table and JSON) by row name and field, a paired replay,
# SHM-jemalloc's write path, zero-copy, descriptors per submit, submitters, refusals; nothing left.
#   cli_paired_transfer.sh BIN_DIR PYTHON
bindir=$1
python=${2:-/usr/bin/python3}
source "$(dirname "$0")/cli_lib.sh"
bin=$bindir/shm_transfer_bench
prefix=shmb_cli_paired_$$_
quick=(--shm_prefix=/$prefix --systems=mooncake,flowipc_classic --transfer_size_kb=4 --max_transfer_size_mb=0.0078125
       --num_transfers=20 --time_per_size_ms=20 --num_segments=10)

"$bin" "${quick[@]}" --json_out="$work/p.json" >"$work/p.txt" 2>"$work/p.err" \
  || fail "paired sweep: exit $?: $(cat "$work/p.err")"

# The table: per size, request_path, translate and request each as three
# system rows then two ratio rows, the memcpy row once between them.
want=""
for kb in 4 8; do
  for part in request_path translate memcpy request; do
    if [ $part = memcpy ]; then want="$want$kb memcpy -|"; continue; fi
    for s in mooncake flowipc_classic mooncake_control flowipc_classic/vs:mooncake mooncake_control/vs:mooncake; do
      want="$want$kb $part $s|"
    done
  done
done
got=$(table_rows "$work/p.txt" | awk '{print $1, $2, $13}' | tr '\n' '|')
[ "$got" = "$want" ] && ok || fail "paired table rows: $got"
[ "$(table_rows "$work/p.txt" | grep -c '95% \[[0-9.]*, [0-9.]*\] ')" -eq 12 ] && ok \
  || fail "ratio rows' notes: $(table_rows "$work/p.txt" | grep /vs:)"
for line in "paired run (--systems): mooncake, flowipc_classic, mooncake_control measured in one run" \
            "baseline: mooncake; control: mooncake_control, a second, independent set-up" \
            "order: each round runs every system once, in a row of a Williams square" \
            "rounds: per size and part, one batch of each system per round, in the order above" \
            "rows /system:NAME: that system's samples" \
            "verdict: faster or slower" "copy rows: the same code for every system, measured once"; do
  grep -qF "# $line" "$work/p.txt" && ok || fail "header has no line '# $line'"
done
grep -q '^size_kb *part *step ' "$work/p.txt" && ok || fail "paired table: the variant column is not 'part'"

# The JSON: the same rows by name; system rows carry their system, ratio
# rows the pair's fields, rounds and verdict; the copy row no system.
"$python" - "$work/p.json" <<'EOF' && ok || fail "paired JSON (the assertion above)"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
names = [r["name"] for r in rows]
want = []
for kb in (4, 8):
    for part in ("request_path", "translate", "memcpy", "request"):
        if part == "memcpy":
            want.append("shm_transfer/memcpy/size_kb:%d" % kb)
            continue
        base = "shm_transfer/%s/size_kb:%d/system:" % (part, kb)
        want += [base + s for s in ("mooncake", "flowipc_classic", "mooncake_control")]
        want += [base + s + "/vs:mooncake" for s in ("flowipc_classic", "mooncake_control")]
assert names == want, names
for r in rows:
    if "/vs:" in r["name"]:
        for k in ("ratio", "ratio_lo", "ratio_hi", "saved_ns", "saved_lo", "saved_hi", "p_value", "rounds", "verdict"):
            assert k in r, (r["name"], k)
        # --num_transfers=20 given: its batches, 6 rounds at least (SHMB_PAIRED_MIN_ROUNDS), not the default's 31
        assert r["vs"] == "mooncake" and r["rounds"] >= 6 and r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"], r
    elif "/system:" in r["name"]:
        assert r["system"] == r["name"].rsplit(":", 1)[1] and "ratio" not in r and r["iterations"] >= 6, r
    else:
        assert "system" not in r and 1 <= r["iterations"] <= 20, r  # fewer if --time_per_size_ms ran out
EOF
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "paired sweep left segments under /$prefix"

# The replay, paired request by request: four parts, each with its three
# system rows and two ratio rows, a sample per request.
small=(--shm_prefix=/$prefix --model=deepseek_v3 --block_tokens=16 --max_request_mb=4 --num_segments=10)
"$bin" "${small[@]}" --systems=mooncake,flowipc_classic --workload=synthetic --requests=6 --format=json \
  >"$work/w.json" 2>"$work/w.err" || fail "paired replay: exit $?: $(cat "$work/w.err")"
"$python" - "$work/w.json" <<'EOF' && ok || fail "paired replay JSON (the assertion above)"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["benchmarks"]
want = []
for part in ("request_path", "translate", "copy", "request"):
    base = "shm_transfer/workload/%s/model:deepseek_v3/system:" % part
    want += [base + s for s in ("mooncake", "flowipc_classic", "mooncake_control")]
    want += [base + s + "/vs:mooncake" for s in ("flowipc_classic", "mooncake_control")]
assert [r["name"] for r in rows] == want, [r["name"] for r in rows]
assert all(r["iterations"] == 6 for r in rows)
assert all("verdict" in r for r in rows if "/vs:" in r["name"])
assert any(n.startswith("rounds: the requests: every system replays each request in turn")
           for n in d["context"]["notes"]), d["context"]["notes"]
EOF
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "paired replay left segments under /$prefix"

# SHM-jemalloc: its request is its write path, translate marked not possible upstream, copy_out after
# the request; its --system run has mooncake's rows (and an unmeasured copy_out).
jq=(--shm_prefix=/$prefix --transfer_size_kb=4 --max_transfer_size_mb=0.00390625 --num_transfers=20 --time_per_size_ms=20
    --num_segments=10)
"$bin" "${jq[@]}" --systems=mooncake,flowipc_jemalloc --format=json >"$work/j.json" 2>"$work/j.err" \
  || fail "paired sweep with flowipc_jemalloc: exit $?: $(cat "$work/j.err")"
for s in mooncake flowipc_jemalloc; do
  "$bin" "${jq[@]}" --system=$s --format=json >"$work/s_$s.json" 2>"$work/s.err" \
    || fail "--system=$s: exit $?: $(cat "$work/s.err")"
done
"$python" - "$work/j.json" "$work/s_mooncake.json" "$work/s_flowipc_jemalloc.json" <<'EOF' && ok \
  || fail "flowipc_jemalloc's write path rows (the assertion above)"
import json, sys
load = lambda p: {r["name"]: r for r in json.load(open(p))["benchmarks"]}
paired, moon, jem = (load(p) for p in sys.argv[1:])
t = paired["shm_transfer/translate/size_kb:4/system:flowipc_jemalloc"]
assert t["label"].startswith("not possible upstream (borrowers map pools read-only)"), t
r = paired["shm_transfer/request/size_kb:4/system:flowipc_jemalloc"]
assert r["label"].startswith("write path:"), r
assert paired["shm_transfer/copy_out/size_kb:4"]["iterations"] > 0
names = list(paired)
assert names.index("shm_transfer/copy_out/size_kb:4") == len(names) - 1, names
# JSON leaves unmeasured rows out (the table has them: cli_system.sh pairs those)
assert list(moon) == [n for n in jem if "copy_out" not in n], (list(moon), list(jem))
assert jem["shm_transfer/copy_out/size_kb:4"]["iterations"] > 0
assert jem["shm_transfer/translate/size_kb:4"]["label"].startswith("not possible upstream")
EOF
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "the write path left segments under /$prefix"

# --zero_copy: per size (x4), Mooncake's whole request against each
# flavour's hand-off, paired; refused without --systems.
"$bin" --shm_prefix=/$prefix --systems=mooncake,flowipc_classic,flowipc_jemalloc --zero_copy --transfer_size_kb=4 \
  --max_transfer_size_mb=0.0625 --num_transfers=20 --time_per_size_ms=20 >"$work/z.txt" 2>"$work/z.err" \
  || fail "--zero_copy: exit $?: $(cat "$work/z.err")"
want=""
for kb in 4 16 64; do
  for s in mooncake flowipc_classic flowipc_jemalloc mooncake_control flowipc_classic/vs:mooncake \
           flowipc_jemalloc/vs:mooncake mooncake_control/vs:mooncake; do
    want="$want$kb zero_copy $s|"
  done
done
got=$(table_rows "$work/z.txt" | awk '{print $1, $2, $13}' | tr '\n' '|')
[ "$got" = "$want" ] && ok || fail "--zero_copy rows: $got"
grep -qF "# zero_copy: mooncake's whole request (request path, relocate, copy)" "$work/z.txt" && ok \
  || fail "--zero_copy: no header line on what its rows stand for"
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "--zero_copy left segments under /$prefix"
expect_usage_error "$bin" zero_copy --shm_prefix=/$prefix --system=mooncake --zero_copy
expect_usage_error "$bin" zero_copy --shm_prefix=/$prefix --systems=mooncake,flowipc_classic --workload=synthetic \
  --zero_copy

# --descriptors_per_submit=32: request_path and request rows per descriptor (.../per_submit:32/...),
# paired and verified; refused without a system, with a peer, zero_copy or a replay.
"$bin" "${jq[@]}" --systems=mooncake,flowipc_classic,flowipc_jemalloc --descriptors_per_submit=32 --verify_data \
  --format=json >"$work/d.json" 2>"$work/d.err" || fail "--descriptors_per_submit: exit $?: $(cat "$work/d.err")"
"$bin" "${jq[@]}" --system=flowipc_classic --descriptors_per_submit=32 --format=json >"$work/ds.json" \
  2>"$work/d.err" || fail "--system --descriptors_per_submit: exit $?: $(cat "$work/d.err")"
"$python" - "$work/d.json" "$work/ds.json" <<'EOF' && ok || fail "--descriptors_per_submit rows (the assertion above)"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
names = [r["name"] for r in rows]
systems = ("mooncake", "flowipc_classic", "flowipc_jemalloc", "mooncake_control")
for part, arg in (("request_path", "4/per_submit:32"), ("translate", "4"), ("request", "4/per_submit:32")):
    base = "shm_transfer/%s/size_kb:%s/system:" % (part, arg)
    for s in systems:
        assert base + s in names, (base + s, names)
        if part != "translate":
            assert next(r for r in rows if r["name"] == base + s)["iterations"] % 32 == 0
    for s in systems[1:]:
        assert base + s + "/vs:mooncake" in names, (base + s, names)
assert "shm_transfer/memcpy/size_kb:4" in names, names
one = [r["name"] for r in json.load(open(sys.argv[2]))["benchmarks"]]
assert one[:4] == ["shm_transfer/request_path/size_kb:4/per_submit:32", "shm_transfer/translate/size_kb:4",
                   "shm_transfer/memcpy/size_kb:4", "shm_transfer/request/size_kb:4/per_submit:32"], one
EOF
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "--descriptors_per_submit left segments under /$prefix"
expect_usage_error "$bin" descriptors_per_submit --shm_prefix=/$prefix --descriptors_per_submit=32
expect_usage_error "$bin" descriptors_per_submit "${jq[@]}" --system=mooncake --peer_process --descriptors_per_submit=2
expect_usage_error "$bin" descriptors_per_submit "${quick[@]}" --zero_copy --descriptors_per_submit=2
expect_usage_error "$bin" descriptors_per_submit "${quick[@]}" --descriptors_per_submit=0
expect_usage_error "$bin" descriptors_per_submit "${small[@]}" --systems=mooncake,flowipc_classic --workload=synthetic \
  --descriptors_per_submit=2

# --submitters=2: rows .../threads:2/... (each system's, each ratio, the control's), verified; the copy
# row once; SHM-jemalloc's a borrower per submitter (its note says so); refusals one line each.
cpus=$(nproc)
if [ "$cpus" -ge 2 ]; then
  "$bin" "${jq[@]}" --systems=mooncake,flowipc_classic,flowipc_jemalloc --submitters=2 --verify_data \
    --json_out="$work/s.json" >"$work/s.txt" 2>"$work/s.err" || fail "--submitters=2: exit $?: $(cat "$work/s.err")"
  "$python" - "$work/s.json" "$cpus" <<'EOF' && ok || fail "--submitters=2 rows (the assertion above)"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
names = [r["name"] for r in rows]
systems = ("mooncake", "flowipc_classic", "flowipc_jemalloc")
want = []
for part in ("request_path", "translate", "request"):
    base = "shm_transfer/%s/size_kb:4/threads:2/system:" % part
    want += [base + s for s in systems + ("mooncake_control",)]
    want += [base + s + "/vs:mooncake" for s in systems[1:] + ("mooncake_control",)]
    if part == "translate":
        want.append("shm_transfer/memcpy/size_kb:4")
want.append("shm_transfer/copy_out/size_kb:4")
assert names == want, names
for r in rows:
    assert r["threads"] == (1 if "memcpy" in r["name"] or "copy_out" in r["name"] else 2), r
    if "/vs:" in r["name"]:
        assert "ratio" in r and "ratio_lo" in r and r["rounds"] >= 6, r
EOF
  jemalloc="^# flowipc_jemalloc: each submitter hands over through a link of its own"
  measured="mooncake, flowipc_classic, flowipc_jemalloc, mooncake_control"
  grep -qF "# threads:2: each round, each system's batch run by 2 threads at once" "$work/s.txt" \
    && grep -qE "$jemalloc" "$work/s.txt" \
    && grep -qF "# paired run (--systems): $measured measured" "$work/s.txt" \
    && ok || fail "--submitters=2: the header's lines: $(grep -A1 "threads:2\|jemalloc: not" "$work/s.txt")"
  [ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "--submitters=2 left segments under /$prefix"
fi
expect_usage_error "$bin" submitters "${jq[@]}" --systems=mooncake,flowipc_classic --submitters=0
expect_usage_error "$bin" submitters "${jq[@]}" --systems=mooncake,flowipc_classic --submitters=$((cpus + 1))
grep -q "at most the $cpus CPUs this process may use" "$work/err" && ok || fail "--submitters above the CPUs: $(cat "$work/err")"
expect_usage_error "$bin" submitters "${jq[@]}" --system=mooncake --submitters=2
grep -q "not read by the size sweep" "$work/err" && ok || fail "--system --submitters: $(cat "$work/err")"
expect_usage_error "$bin" submitters "${jq[@]}" --systems=mooncake,flowipc_classic --submitters=2 --threads=2
expect_usage_error "$bin" submitters "${jq[@]}" --systems=mooncake,flowipc_classic --submitters=2 --zero_copy
expect_usage_error "$bin" submitters "${jq[@]}" --systems=flowipc_jemalloc,mooncake --submitters=2
expect_usage_error "$bin" submitters "${small[@]}" --systems=mooncake,flowipc_classic --workload=synthetic --submitters=2

# Refusals: one line naming the flag, exit 2, nothing measured.
expect_usage_error "$bin" cold "${quick[@]}" --cold
expect_usage_error "$bin" peer_process "${quick[@]}" --peer_process
expect_usage_error "$bin" backing "${quick[@]}" --backing=memfd
grep -q "Flow-IPC's pools (--systems=mooncake,flowipc_classic) .*: tmpfs only" "$work/err" && ok \
  || fail "--backing=memfd: $(cat "$work/err")"
expect_usage_error "$bin" backing "${small[@]}" --systems=flowipc_jemalloc,mooncake --workload=synthetic --backing=memfd
expect_usage_error "$bin" write_trace --systems=mooncake,flowipc_classic --workload=synthetic \
  --write_trace="$work/t.jsonl"
[ ! -e "$work/t.jsonl" ] && ok || fail "--write_trace with --systems wrote the trace"
expect_usage_error "$bin" systems "${quick[@]}" --system=mooncake
expect_usage_error "$bin" repetitions "${quick[@]}" --repetitions=2
expect_usage_error "$bin" systems --systems=mooncake
expect_usage_error "$bin" systems --systems=mooncake,mooncake
[ "$(leftovers "$prefix")" -eq 0 ] && ok || fail "segments left under /$prefix"

echo "cli_paired_transfer: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
