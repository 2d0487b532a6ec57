#!/usr/bin/env bash
# report.sh and compare.sh on planted paired folders (tests/fixtures/make_paired.py): verdicts, noise,
# Holm's correction, credit, the zero-copy and axes sections, compare.sh's gate; bad files exit 2.
#   scripts_paired.sh SOURCE_DIR
src=$(cd "$1" && pwd)
source "$src/tests/cli/cli_lib.sh"
py=/usr/bin/python3
if ! "$py" -c 'import scipy' 2>/dev/null; then
  skip_case "no scipy for $py (python3-scipy)"
  finish
fi
plant() { "$py" "$src/tests/fixtures/make_paired.py" "$work/$1" "$1" || fail "make_paired.py $1"; }
report() { "$src/scripts/report.sh" "$work/$1" >/dev/null 2>"$work/err" || fail "report.sh $1: exit $?: $(cat "$work/err")"; }
# cell DIR LABEL SYSTEM N: the N-th cell of a report.md table row (1: the question)
cell() { awk -F' [|] ' -v l="| $2" -v s="$3" -v n="$4" '$1 == l && $3 == s {sub(/ [|]$/, "", $n); print $n}' "$work/$1/report.md"; }

# (a) Planted drift: SHM-classic is Mooncake's code; measured apart, the later run read 30%
# faster. Unpaired, the old report calls that faster; paired, within the noise.
plant drift
report drift
report drift/unpaired
[ "$(cell drift/unpaired "alloc, 4 KB" SHM-classic 5)" = 1.30x ] && [ "$(cell drift/unpaired "alloc, 4 KB" SHM-classic 8)" = yes ] \
  && grep -q "^- alloc, 4 KB (Mooncake 78.0 ns per operation): SHM-classic \*\*faster\*\*" "$work/drift/unpaired/report.md" \
  && ok || fail "drift: the unpaired report does not read the drift as faster: $(grep "alloc, 4 KB |" "$work/drift/unpaired/report.md")"
[ "$(cell drift "alloc, 4 KB" SHM-classic 5)" = "1.00 [0.98, 1.02]" ] && [ "$(cell drift "alloc, 4 KB" SHM-classic 8)" = "within the noise" ] \
  && ok || fail "drift: paired not within the noise: $(grep "alloc, 4 KB |" "$work/drift/report.md")"
grep -q "^- alloc, 4 KB: mooncake_control: A/A control, ratio 1.00 \[0.99, 1.01\], saved 0 ns \[-0.606 ns, 0.594 ns\]: the run's noise$" \
  "$work/drift/report.md" && ok || fail "drift: no control line"
grep -q "^| Per block | within the noise 1 |$" "$work/drift/report.md" && ok || fail "drift: at a glance"

# (b) A real 10% difference: faster, with its interval and saving
plant real
report real
# (b') Space beside a block's time: allocation_space.json (tests/fixtures/space, a --allocator=space run)
# is a table inside "Per block", one row per allocator of the folder's flavours; without it, one line there.
mkdir "$work/space" && cp "$work/real"/*.json "$src/tests/fixtures/space/allocation_space.json" "$work/space/"
report space
awk '/^## /{sec=$0} /^### Space: what each allocator can hold$/{print sec}' "$work/space/report.md" | grep -q "^## Per block" \
  && grep -qx "| offset | Mooncake Store: OffsetBufferAllocator (object layer, as the Store calls it) | 96.51% | 46.99% | 2.8 of 5.2 MiB | 150 ns | 125 ns | 1635 |" "$work/space/report.md" \
  && grep -q "^| bipc | SHM-classic: boost.interprocess rbtree_best_fit | 96.51% | 40.97% | 1.3 of 2.2 MiB | " "$work/space/report.md" \
  && ! grep -q "^| jemalloc |" "$work/space/report.md" \
  && awk '/^## /{sec=$0} /^Not run: no allocation_space.json/{print sec}' "$work/real/report.md" | grep -q "^## Per block" \
  && ok || fail "space: not a table inside Per block: $(grep -B3 -A6 "Space" "$work/space/report.md" | head -20)"
[ "$(cell real "alloc, 4 KB" SHM-classic 5)" = "1.10 [1.07, 1.13]" ] && [ "$(cell real "alloc, 4 KB" SHM-classic 8)" = faster ] \
  && [ "$(cell real "alloc, 4 KB" SHM-classic 6)" = "5.45 ns [3.93 ns, 6.90 ns]" ] \
  && ok || fail "real: $(grep "alloc, 4 KB |" "$work/real/report.md")"
grep -q "^- alloc, 4 KB (Mooncake 60.0 ns per operation): SHM-classic \*\*faster\*\*: saves 5.45 ns \[3.93 ns, 6.90 ns\] (ratio 1.10 \[1.07, 1.13\])\.$" \
  "$work/real/report.md" && ok || fail "real: what this means"

# (c) Holm per section: p = 0.03 passes alone (its interval excludes 1), not over the
# section's four rows (0.03 x 4 = 0.12)
plant holm
report holm
[ "$(cell holm "alloc, 4 KB" SHM-classic 7)" = "0.030 (0.120)" ] && [ "$(cell holm "alloc, 4 KB" SHM-classic 8)" = "within the noise" ] \
  && ok || fail "holm: $(grep "alloc, 4 KB |" "$work/holm/report.md")"
"$src/scripts/compare.sh" "$work/holm" >"$work/holm.cmp" 2>&1 \
  && grep -q "^shm_alloc/alloc/size_kb:4/system:flowipc_classic/vs:mooncake .* 0.030 .* faster$" "$work/holm.cmp" \
  && ok || fail "holm: compare.sh's per-row verdict (uncorrected) is not faster: $(grep alloc/size_kb:4 "$work/holm.cmp")"

# (d) The whole 4 KB request saves 463 ns, its translation 184 ns, the control's saved
# interval is 70 ns wide: unexplained by the design, which is credited with 184 ns
plant unexplained
report unexplained
[ "$(cell unexplained "4 KB request" SHM-classic 7)" = "184 ns [180 ns, 188 ns]" ] \
  && [ "$(cell unexplained "4 KB request" SHM-classic 9)" = "unexplained by the design" ] \
  && ok || fail "unexplained: $(grep "4 KB request |" "$work/unexplained/report.md")"
grep -q "SHM-classic \*\*unexplained by the design\*\*: saves 463 ns \[323 ns, 592 ns\] (ratio 1.15 \[1.10, 1.20\]); credited to the design: the translation's saving, 184 ns \[180 ns, 188 ns\], 5\.2% of the request\.$" \
  "$work/unexplained/report.md" && ok || fail "unexplained: the credit line"
# (d2) The request path walks one pool, not N buffers, and saves 260 ns [250, 270]: credited
# beside the translation (444 ns [430, 458] of 3.55 us: faster); at 64 KB it saves nothing
# measurable: the translation alone is credited
plant pathcredit
report pathcredit
[ "$(cell pathcredit "4 KB request" SHM-classic 7)" = "444 ns [430 ns, 458 ns]" ] \
  && [ "$(cell pathcredit "4 KB request" SHM-classic 9)" = faster ] \
  && [ "$(cell pathcredit "64 KB request" SHM-classic 7)" = "184 ns [180 ns, 188 ns]" ] \
  && ok || fail "pathcredit: $(grep "KB request |" "$work/pathcredit/report.md")"
grep -q "^| question | Mooncake | system | its time | ratio \[95%\] | saved \[95%\] | credited saving \[95%\] |" \
  "$work/pathcredit/report.md" && grep -q "the verdict rests on the translation's and the request path's saving, 444 ns \[430 ns, 458 ns\], 13% of the request" \
  "$work/pathcredit/report.md" && grep -q "^SHM-classic against Mooncake: Per request, what its design changes (its translation, and its request path walking its pools, not Mooncake's buffers) saves 444 ns" \
  "$work/pathcredit/report.md" && ok || fail "pathcredit: the credited steps not named: $(grep -n "444 ns" "$work/pathcredit/report.md" | head -3)"
# the demo's requests save what their translations save: the verdict is the translation's
# saving's (184 ns of 3.49 us: faster; of 64 KB's request: under 5%)
plant demo
report demo
# SHM-jemalloc's attach holds its pools' lend round trips: said in the legend and the verdict
# (SHM-classic's only), and nothing calls it an upper bound any more
grep -q "SHM-jemalloc's total is its session's lend of every pool to the receiver" "$work/demo/report.md" \
  && grep -q "first attach saves .*(its pools' lend round trips included)" "$work/demo/report.md" \
  && [ "$(grep -c "first attach saves .*(its pools' lend round trips included)" "$work/demo/report.md")" -eq 1 ] \
  && ! grep -q "upper bound" "$work/demo/report.md" \
  && ok || fail "demo: SHM-jemalloc's attach not said to hold its lend round trips (or SHM-classic's said so)"
[ "$(cell demo "4 KB request" SHM-classic 9)" = faster ] && [ "$(cell demo "64 KB request" SHM-classic 9)" = "no practical difference" ] \
  && ok || fail "demo: an explained request lost its verdict: $(grep "KB request |" "$work/demo/report.md" | head -3)"
[ "$(cell demo "model:llama3_8b request" SHM-classic 9)" = "no practical difference" ] \
  && ok || fail "demo: the workload: $(grep "model:llama3_8b request |" "$work/demo/report.md")"
grep -q "^- register 10 buffers, 4 KB, SHM-classic: costs 360 µs more than Mooncake's; paid back: never by blocks of 4 KB (alloc + free) (19.1 ns more each, alloc faster, free slower); after 1,957 requests of 4 KB (184 ns saved each, faster)\.$" \
  "$work/demo/report.md" && ok || fail "demo: break-even: $(grep "^- register 10 buffers, 4 KB, SHM-classic" "$work/demo/report.md")"
[ "$(grep -c "^- .*: mooncake_control: A/A control, ratio .*: the run's noise$" "$work/demo/report.md")" -eq 22 ] \
  && ok || fail "demo: not a control line per question (22)"
# The verdict first: a flavour's sentences, from the figures of the sections below them
[ "$(sed -n 3p "$work/demo/report.md")" = "## Verdict" ] && ok || fail "demo: report.md does not open with the verdict"
grep -qxF "SHM-classic against Mooncake: Per request, its translation (the one step the designs do not share) saves 184 ns [184 ns, 184 ns] at 4 KB (5.3% of Mooncake's 3.49 µs): faster; saves 184 ns [184 ns, 184 ns] at 64 KB to 16 MB (3.0% to 0.0% of Mooncake's 6.19 µs to 1.20 ms): no practical difference. On the KV-cache workload, its translation saves 46.8 µs [46.6 µs, 47.0 µs] per model:llama3_8b request (0.3% of Mooncake's 14.9 ms): no practical difference. Per block, an object and its handle (Pool_arena::construct with its boost::shared_ptr against Mooncake's OffsetBufferAllocator::allocate with its AllocatedBuffer; alloc + free, the sum of the two medians), it costs 19.1 ns more [14.6 ns, 22.7 ns] (alloc faster, free slower) at 4 KB and 64 KB (19% of Mooncake's 100 ns): slower. Its bare allocator beside it (boost.interprocess rbtree_best_fit allocate/deallocate against Mooncake's OffsetAllocator alone; alloc_bare + free_bare) costs 162 ns more [150 ns, 176 ns] (alloc_bare slower, free_bare slower) at 4 KB and 64 KB (345% of Mooncake's 47.0 ns): slower. Once, making N blocks usable (one pool of N blocks against Mooncake's N buffers) costs 360 µs more [340 µs, 380 µs] for 10 blocks: slower; saves 450 µs [430 µs, 470 µs] for 100 blocks and saves 8.55 ms [8.53 ms, 8.57 ms] for 1000: faster (blocks of 4 KB to 64 KB alike); the receiver's first attach saves 396 µs [395 µs, 396 µs] against Mooncake's 100 buffers: faster." \
  "$work/demo/report.md" && ok || fail "demo: SHM-classic's verdict sentences: $(grep "^SHM-classic against" "$work/demo/report.md")"
# every saving the sentences state is a figure of the sections below them
"$py" - "$work/demo/report.md" <<'EOF' && ok || fail "demo: the verdict sentences do not match the tables"
import re, sys
head, rest = open(sys.argv[1]).read().split("\n## How to read it", 1)
said = re.findall(r"(saves|costs) (\S+ \S+)( more)? (\[[^]]+\])", head)
assert len(said) == 18, said
for verb, t, more, ends in said:
    assert "%s %s%s %s" % (verb, t, more, ends) in rest or "saving, %s %s" % (t, ends) in rest, (verb, t, ends)
EOF
grep -q "^| Per block (alloc + free) | slower 2 | faster 2 |$" "$work/demo/report.md" \
  && grep -q "^- block (alloc + free, object layer), 4 KB (Mooncake 100 ns per block): SHM-classic \*\*slower\*\*: costs 19.1 ns more \[14.6 ns, 22.7 ns\] (alloc faster, free slower); SHM-jemalloc \*\*faster\*\*: saves 23.3 ns \[20.1 ns, 25.4 ns\] (alloc faster, free within the noise)\.$" \
    "$work/demo/report.md" \
  && grep -q "^- bare allocator (alloc_bare + free_bare), 4 KB (Mooncake 47.0 ns per block): SHM-classic \*\*slower\*\*: costs 162 ns more \[150 ns, 176 ns\] (alloc_bare slower, free_bare slower); " \
    "$work/demo/report.md" && ok || fail "demo: at a glance does not count a block as alloc + free: $(grep "^| Per block" "$work/demo/report.md")"

# (e) A control 12% off: the section says the run was too noisy and how to get a quieter one
plant noisy
report noisy
[ "$(cell noisy "attach, 100 segments" SHM-classic 8)" = "too noisy" ] \
  && grep -q "^\*\*Too noisy for a verdict\*\* on attach, 100 segments: .* pin one CPU .*--cpu=N.* stop other work .* more rounds" \
    "$work/noisy/report.md" && ok || fail "noisy: $(grep -i "noisy" "$work/noisy/report.md" | head -3)"
grep -q "^SHM-classic against Mooncake: Once, the receiver's first attach saves 396 µs \[395 µs, 396 µs\] against Mooncake's 100 buffers: undecided (too noisy" \
  "$work/noisy/report.md" && ok || fail "noisy: the verdict does not say undecided: $(grep "^SHM-classic against" "$work/noisy/report.md")"

# (f) Zero copy: the size from which each flavour's hand-off is cheaper than Mooncake's whole
# request, with the condition, in its section and in the verdict; SHM-jemalloc's translate
# row labelled not possible upstream is no credited step: its request verdict is its own.
plant zerocopy
report zerocopy
grep -q "^- SHM-classic's hand-off is cheaper than Mooncake's whole request from about 1 MB (not faster at 256 KB) (4 KB ratio 0.50 \[0.45, 0.55\]; 256 MB ratio 2.00 \[1.90, 2.10\]); the condition: the reader must be able to use the object in place (read it where it lies in the writer's memory): an application change, not a transport swap\.$" \
  "$work/zerocopy/report.md" && ok || fail "zerocopy: SHM-classic's break-even: $(grep "hand-off" "$work/zerocopy/report.md")"
grep -q "^- SHM-jemalloc's hand-off is never cheaper than Mooncake's whole request within 4 KB to 256 MB " \
  "$work/zerocopy/report.md" && ok || fail "zerocopy: SHM-jemalloc's never"
grep "^SHM-classic against Mooncake: " "$work/zerocopy/report.md" \
  | grep -q "Instead of copying, its hand-off is cheaper than Mooncake's whole request from about 1 MB (not faster at 256 KB); the condition: the reader must be able to use the object in place" \
  && ok || fail "zerocopy: no zero-copy sentence in the verdict: $(grep "^SHM-classic against" "$work/zerocopy/report.md")"
[ "$(cell zerocopy "zero copy, 1 MB" SHM-classic 8)" = faster ] && [ "$(cell zerocopy "zero copy, 256 KB" SHM-classic 8)" = slower ] \
  && ok || fail "zerocopy: its table: $(grep "zero copy, 1 MB |" "$work/zerocopy/report.md")"
[ "$(cell zerocopy "4 KB request" SHM-jemalloc 7)" = "-" ] && [ "$(cell zerocopy "4 KB request" SHM-jemalloc 9)" = slower ] \
  && [ "$(cell zerocopy "4 KB request" SHM-classic 7)" != "-" ] \
  && grep -q "its translate row (to_address) is not possible upstream and reaches no verdict" "$work/zerocopy/report.md" \
  && ok || fail "zerocopy: SHM-jemalloc's request credited with a step not possible upstream: $(grep "4 KB request |" "$work/zerocopy/report.md")"

# (g) Along the axes (tests/fixtures/axes/make_axes.py): each point's rows and intervals, the
# break-even sentence or "never", a noisy control's point undecided, axes.png once.
axes() { "$py" "$src/tests/fixtures/axes/make_axes.py" "$work/axes_$1" "$1" || fail "make_axes.py $1"; }
# section DIR: report.md's "Where the answer changes", alone
section() { awk '/^## Where the answer changes$/ {on = 1} on && /^## / && !/Where the answer/ {exit} on' "$work/$1/report.md"; }
axes even
"$src/scripts/plot.sh" "$work/axes_even" >/dev/null 2>&1 && [ -s "$work/axes_even/axes.png" ] && ok || fail "plot.sh: no axes.png"
report axes_even
section axes_even >"$work/axes.md"
for n in 10 100 1000 10000; do
  [ "$(grep -cE "^\| $n \| (SHM-classic|SHM-jemalloc|mooncake_control \(A/A control\)) \| .* \[.*\] \| .* \[.*\] \| " "$work/axes.md")" -eq 3 ] \
    && ok || fail "axes even: the rows of $n buffers: $(grep "^| $n |" "$work/axes.md")"
done
for kb in "1 KB" "8 KB" "64 KB" "1 MB" "16 MB"; do
  [ "$(grep -c "^| $kb | " "$work/axes.md")" -eq 3 ] && ok || fail "axes even: the rows of $kb: $(grep "^| $kb |" "$work/axes.md")"
done
grep -qx "| 1000 | SHM-classic | 3.60 µs | 1.00 µs | 3.60 \[3.27, 4.00\] | 2.60 µs \[2.50 µs, 2.70 µs\] | 69% | yes |" "$work/axes.md" \
  && grep -qx "| 100 | SHM-classic | 1.10 µs | 1.02 µs | 1.08 \[1.04, 1.12\] | 80.0 ns \[40.0 ns, 120 ns\] | 3.6% | no |" "$work/axes.md" \
  && grep -qx "| 100 | mooncake_control (A/A control) | 1.10 µs | 1.10 µs | 1.000 \[0.995, 1.005\] | 0 ns \[-5.00 ns, 5.00 ns\] | - | the noise |" "$work/axes.md" \
  && ok || fail "axes even: the 4 KB request's rows: $(grep "^| 1\?000\? |" "$work/axes.md")"
grep -qx "\- SHM-classic saves at least 5.0% of a 4 KB request from about 1000 registered buffers (not at 100, the count before it); at 1000 it saves 2.60 µs \[2.50 µs, 2.70 µs\] of Mooncake's 3.60 µs (lower end 69%)." "$work/axes.md" \
  && grep -qx "\- SHM-jemalloc (its write path) saves at least 5.0% of a 4 KB request from about 10000 registered buffers (not at 1000, the count before it); at 10000 it saves 7.00 µs \[6.80 µs, 7.20 µs\] of Mooncake's 25.0 µs (lower end 27%)." "$work/axes.md" \
  && grep -qx "\- SHM-classic saves at least 5.0% of Mooncake's request up to about 64 KB requests (not at 1 MB, the size after it); at 64 KB it saves 270 ns \[260 ns, 280 ns\] of Mooncake's 2.50 µs (lower end 10%)." "$work/axes.md" \
  && grep -qx "\- SHM-jemalloc (its write path) never saves at least 5.0% of Mooncake's request within the range (1 KB to 16 MB)." "$work/axes.md" \
  && ok || fail "axes even: the break-even sentences: $(grep "^- " "$work/axes.md")"
grep -q "The break-even rule: along the buffers and the descriptors per submit, the first point from which the lower end of the saving's 95% interval stays at 5.0% of Mooncake's request or more" "$work/axes.md" \
  && grep -q "its request is its write path" "$work/axes.md" && grep -qx "!\[axes\](axes.png)" "$work/axes.md" \
  && grep -q "each point is one destination (the middle buffer) at its place in that walk, not a mean" "$work/axes.md" \
  && [ "$(grep -c "(axes.png)" "$work/axes_even/report.md")" -eq 1 ] \
  && ! grep -q "Not swept" "$work/axes.md" \
  && ok || fail "axes even: the legend, the plot or a line on an axis not swept"
# the descriptors per submit: N = 1 the buffers axis's 100 point, the others their runs, per descriptor
grep -q "^### Descriptors per submit (the 4 KB request per descriptor, 100 registered buffers)" "$work/axes.md" \
  && grep -qx "| 1 | SHM-classic | 1.10 µs | 1.02 µs | 1.08 \[1.04, 1.12\] | 80.0 ns \[40.0 ns, 120 ns\] | 3.6% | no |" "$work/axes.md" \
  && [ "$(grep -cE "^\| (32|256|2048) \| (SHM-classic|SHM-jemalloc|mooncake_control \(A/A control\)) \| " "$work/axes.md")" -eq 9 ] \
  && grep -qx "| 256 | SHM-classic | 500 ns | 460 ns | 1.09 \[1.08, 1.10\] | 40.0 ns \[35.0 ns, 45.0 ns\] | 7.0% | yes |" "$work/axes.md" \
  && grep -qx "\- SHM-classic saves at least 5.0% of Mooncake's request per 4 KB descriptor from about 256 descriptors per submit (not at 32, the count before it); at 256 it saves 40.0 ns \[35.0 ns, 45.0 ns\] of Mooncake's 500 ns (lower end 7.0%)." "$work/axes.md" \
  && grep -qx "\- SHM-jemalloc (its write path) never saves at least 5.0% of Mooncake's request per 4 KB descriptor within the range (1 to 2048 descriptors per submit)." "$work/axes.md" \
  && grep -q "transfer_axis_submit_N.json: --descriptors_per_submit=N; 1: transfer_axis_buffers_100.json" "$work/axes.md" \
  && ok || fail "axes even: descriptors per submit: $(grep -A14 "^### Descriptors per submit" "$work/axes.md")"
# threads submitting at once: 1 the buffers axis's 100 point, 2 its run, SHM-jemalloc only at 1
grep -q "^### Threads submitting at once (the 4 KB request, 100 registered buffers)" "$work/axes.md" \
  && grep -qx "| 1 | SHM-jemalloc | 1.10 µs | .*" "$work/axes.md" && ! grep -q "^| 2 | SHM-jemalloc |" "$work/axes.md" \
  && grep -qx "| 2 | SHM-classic | 1.50 µs | 1.40 µs | 1.07 \[1.06, 1.09\] | 100 ns \[80.0 ns, 120 ns\] | 5.3% | yes |" "$work/axes.md" \
  && grep -qE "^\| 2 \| mooncake_control \(A/A control\) \| " "$work/axes.md" \
  && grep -qx "\- SHM-classic saves at least 5.0% of a 4 KB request from about 2 submitters (not at 1, the count before it); at 2 it saves 100 ns \[80.0 ns, 120 ns\] of Mooncake's 1.50 µs (lower end 5.3%)." "$work/axes.md" \
  && grep -qx "\- SHM-jemalloc (its write path) never saves at least 5.0% of a 4 KB request within the range (1 submitter alone); not measured at 2 submitters (the run's note says why)." "$work/axes.md" \
  && grep -q "transfer_axis_threads_N.json: --submitters=N; 1: transfer_axis_buffers_100.json" "$work/axes.md" \
  && grep -q "; along the submitters, the first rule, else the second\. " "$work/axes.md" \
  && grep -q "; not measured in this run: 4, 8 (more submitters than CPUs allowed are refused)\.$" "$work/axes.md" \
  && ok || fail "axes even: threads submitting at once: $(grep -A12 "^### Threads submitting" "$work/axes.md")"
axes never
report axes_never
section axes_never >"$work/axes.md"
grep -qx "\- SHM-classic never saves at least 5.0% of a 4 KB request at a decided point (10 to 10000 registered buffers); decided at 10, 100, 1000; undecided at 10000 (the A/A control off by 5.0% or more)." "$work/axes.md" \
  && grep -qx "| 10000 | SHM-classic | 25.0 µs | 25.0 µs | 1.001 \[1.000, 1.001\] | 20.0 ns \[5.00 ns, 35.0 ns\] | 0.0% | undecided |" "$work/axes.md" \
  && grep -qx "\- SHM-classic saves at least 5.0% of Mooncake's request at every point measured (8 KB to 16 MB)." "$work/axes.md" \
  && grep -q "; not measured in this run: 1 KB\.$" "$work/axes.md" && ! grep -q "^| 1 KB |" "$work/axes.md" \
  && ! grep -q "^### Descriptors per submit" "$work/axes.md" && ! grep -q "^### Threads submitting" "$work/axes.md" \
  && ok || fail "axes never: $(grep "^- \|not measured" "$work/axes.md")"
# submitters: saves at 1, not at 2: "up to about 1 submitter", the falling rule the rising one did not find
axes threads
report axes_threads
section axes_threads >"$work/axes.md"
grep -qx "\- SHM-classic saves at least 5.0% of a 4 KB request up to about 1 submitter (not at 2, the count after it); at 1 it saves 280 ns \[274 ns, 280 ns\] of Mooncake's 1.34 µs (lower end 20%)." "$work/axes.md" \
  && grep -qx "| 2 | SHM-classic | 12.6 µs | 12.4 µs | 1.02 \[1.00, 1.03\] | 208 ns \[25.0 ns, 410 ns\] | 0.2% | no |" "$work/axes.md" \
  && ok || fail "axes threads: $(grep -A9 "^### Threads" "$work/axes.md")"
report real
section real | grep -q "^Not run: no transfer_axis_\*.json" && ok || fail "axes: a folder without them: $(section real | head -4)"

# The run: the load average before and after each run, from run_all.sh's run.json
printf '{"cpu": 1, "runs": [\n{"name": "allocation_paired", "start": "s", "end": "e", "load_before": [0.5, 0.6, 0.7], "load_after": [1.5, 0.9, 0.8]}\n]}\n' \
  >"$work/real/run.json"
report real
grep -q "^- Load average (1, 5, 15 min) before and after each run: allocation_paired 0.5 0.6 0.7 -> 1.5 0.9 0.8$" \
  "$work/real/report.md" && ok || fail "the run: no load average: $(grep "Load average" "$work/real/report.md")"

# compare.sh: one paired folder, then two (before and after a change)
"$src/scripts/compare.sh" "$work/demo" >"$work/one.cmp" 2>&1 && ok || fail "compare.sh DIR: exit $?: $(tail -3 "$work/one.cmp")"
grep -q "^shm_transfer/request/size_kb:4/system:flowipc_classic/vs:mooncake  *1.06 \[1.04, 1.07\]  *184 \[150, 215\] .* faster$" \
  "$work/one.cmp" && grep -q "^== workload: paired, against mooncake" "$work/one.cmp" \
  && ok || fail "compare.sh DIR: $(grep "request/size_kb:4/system:flowipc_classic" "$work/one.cmp")"
plant after
"$src/scripts/compare.sh" "$work/demo" "$work/after" >"$work/two.cmp" 2>&1 && ok || fail "compare.sh A B: exit $?: $(tail -3 "$work/two.cmp")"
grep -q "^shm_alloc/alloc/size_kb:4/system:flowipc_classic/vs:mooncake  *1.10 \[1.07, 1.13\]  *1.40 \[1.35, 1.45\]  changed$" "$work/two.cmp" \
  && ok || fail "compare.sh A B: a moved interval is not changed"
grep -q "^shm_alloc/alloc/size_kb:64/system:flowipc_classic/vs:mooncake  *1.10 \[1.07, 1.13\]  *1.12 \[1.08, 1.15\]  within the noise$" "$work/two.cmp" \
  && ok || fail "compare.sh A B: overlapping intervals are not within the noise"
grep -q "^shm_alloc/alloc/size_kb:4/system:flowipc_classic  *54.5  *42.9  *-21.4%$" "$work/two.cmp" \
  && ok || fail "compare.sh A B: the system rows' times before and after"
[ "$(grep -c " changed$" "$work/two.cmp")" -eq 1 ] && ok || fail "compare.sh A B: $(grep -c " changed$" "$work/two.cmp") rows changed, expected 1"
"$src/scripts/compare.sh" "$work/demo/transfer_paired.json" "$work/after/transfer_paired.json" >"$work/files.cmp" 2>&1 \
  && grep -q "within the noise$" "$work/files.cmp" && ! grep -q " changed$" "$work/files.cmp" \
  && ok || fail "compare.sh on two paired files: $(tail -3 "$work/files.cmp")"

# The gate (compare.sh --fail-above=PCT A B): 0 when no row of B is slower beyond PCT, 1
# when one is (the rows first), 2 on bad input; after -> demo moves SHM-classic's 4 KB
# alloc from 1.40 back to 1.10 (a changed ratio, -21%) and its time from 42.9 to 54.5 ns
"$src/scripts/compare.sh" --fail-above=10 "$work/demo" "$work/after" >"$work/gate.out" 2>"$work/gate.err" \
  && head -1 "$work/gate.out" | grep -q "^== pass: no row of B slower than A by more than 10%" && [ ! -s "$work/gate.err" ] \
  && ok || fail "gate: a faster B tripped it: $(head -3 "$work/gate.out" "$work/gate.err")"
"$src/scripts/compare.sh" --fail-above=10 "$work/after" "$work/demo" >"$work/gate.out" 2>"$work/gate.err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(sed -n 1p "$work/gate.out")" = "== FAIL: 2 rows of B slower than A by more than 10% (--fail-above)" ] \
  && sed -n 2p "$work/gate.out" | grep -q "^shm_alloc/alloc/size_kb:4/system:flowipc_classic  *42.9  *54.5  p50 ns +27.3%$" \
  && sed -n 3p "$work/gate.out" | grep -q "^shm_alloc/alloc/size_kb:4/system:flowipc_classic/vs:mooncake  *1.40 \[1.35, 1.45\]  *1.10 \[1.07, 1.13\]  ratio -21.4%, changed$" \
  && grep -q "^== allocation: " "$work/gate.out" && ok || fail "gate: a slower B: exit $rc: $(head -4 "$work/gate.out")"
"$src/scripts/compare.sh" --fail-above=30 "$work/after" "$work/demo" >/dev/null 2>&1 && ok || fail "gate: 30% tripped on a 27% change"
# per-system files: 9 repetitions each, 30% apart: the U-test's significance and the change
u=$work/drift/unpaired
"$src/scripts/compare.sh" --fail-above=10 "$u/allocation_flowipc_classic.json" "$u/allocation_mooncake.json" >"$work/gate.out" 2>&1
[ $? -eq 1 ] && grep -q "^shm_alloc/alloc/size_kb:4  *60.0  *78.0  p50 ns +30.0%, significant (p = 4e-04)$" "$work/gate.out" \
  && ok || fail "gate: per-system files: $(head -3 "$work/gate.out")"
"$src/scripts/compare.sh" --fail-above=10 "$u/allocation_mooncake.json" "$u/allocation_flowipc_classic.json" >/dev/null 2>&1 \
  && ok || fail "gate: per-system files, a faster B tripped it"
for bad in --fail-above=x --fail-above=-5 --fail-above= "--fail-above=1e3"; do
  "$src/scripts/compare.sh" "$bad" "$work/demo" "$work/after" >"$work/bad.out" 2>"$work/bad.err"
  [ $? -eq 2 ] && [ "$(wc -l <"$work/bad.err")" -eq 1 ] && grep -q -- "--fail-above" "$work/bad.err" && [ ! -s "$work/bad.out" ] \
    && ok || fail "gate: $bad is not refused in one line: $(cat "$work/bad.err")"
done
"$src/scripts/compare.sh" --fail-above=10 "$work/demo" >/dev/null 2>"$work/bad.err"
[ $? -eq 2 ] && ok || fail "gate: one folder is not refused: $(cat "$work/bad.err")"
# Two runs with different flags: one warning line naming each flag, A's and B's value
mkdir "$work/flags"
cp "$work/after/"*.json "$work/flags/"
sed -i 's/"flags": "cpu=1 /"flags": "cpu=1 num_transfers=100 /' "$work/flags/transfer_paired.json"
sed -i 's/"flags": "cpu=1 /"flags": "cpu=2 /' "$work/flags/lookup_paired.json"
"$src/scripts/compare.sh" "$work/demo" "$work/flags" >/dev/null 2>"$work/flags.err" && [ "$(wc -l <"$work/flags.err")" -eq 1 ] \
  && grep -qx "compare.sh: warning: A and B ran with different flags: cpu (A 1, B 2), num_transfers (A unset, B 100)" "$work/flags.err" \
  && ok || fail "flags: $(cat "$work/flags.err")"
"$src/scripts/compare.sh" "$work/demo/transfer_paired.json" "$work/flags/transfer_paired.json" >/dev/null 2>"$work/flags.err" \
  && grep -q "different flags: num_transfers (A unset, B 100)$" "$work/flags.err" && ok || fail "flags of two files: $(cat "$work/flags.err")"

# plot.sh: paired.png, embedded in the report; a question name of quotes and a backquote
# reaches gnuplot as data
"$src/scripts/plot.sh" "$work/demo" >"$work/plot.out" 2>&1 && [ "$(cat "$work/plot.out")" = "$work/demo/paired.png" ] \
  && [ -s "$work/demo/paired.png" ] && ok || fail "plot.sh on a paired folder: $(cat "$work/plot.out")"
report demo
grep -q "^!\[paired\](paired.png)$" "$work/demo/report.md" && ok || fail "report.md does not embed paired.png"
mkdir "$work/quotes"
sed 's|shm_alloc/alloc/size_kb:4/|shm_alloc/a\\"l`touch x`'"'"'oc/size_kb:4/|g' "$work/real/allocation_paired.json" >"$work/quotes/allocation_paired.json"
(cd "$work/quotes" && "$src/scripts/plot.sh" . >/dev/null 2>"$work/plot.err") && [ -s "$work/quotes/paired.png" ] && [ ! -e "$work/quotes/x" ] \
  && ok || fail "plot.sh on odd names: $(cat "$work/plot.err")"

# Model against upstream (docs/upstream.md): the ratio rows of mooncake_upstream against
# mooncake are model / upstream as they are, in report.md and compare.sh, with a line per
# row off by more than 25% (40% slower, 30% faster) and none for 1.10 or 1.00
plant upstream
report upstream
grep -q "^| shm_alloc/free_bare/size_kb:4 | 22.0 ns | 15.7 ns | 1.40 \[1.35, 1.45\] | 1.00 \[0.99, 1.01\] |$" \
  "$work/upstream/report.md" && grep -q "^## Model against upstream: allocation_paired.json$" "$work/upstream/report.md" \
  && grep -q "commit 3b5a594133958449a1feaf1c9e0fc1b553e34a28" "$work/upstream/report.md" \
  && ok || fail "upstream: no model-against-upstream table: $(grep -A8 "Model against" "$work/upstream/report.md")"
grep -q "^- shm_alloc/free_bare/size_kb:4: the model is off by more than 25%: 40% slower than upstream" "$work/upstream/report.md" \
  && grep -q "^- shm_alloc/alloc_bare/size_kb:64: the model is off by more than 25%: 30% faster than upstream" "$work/upstream/report.md" \
  && [ "$(grep -c "the model is off by more than 25%" "$work/upstream/report.md")" -eq 2 ] \
  && ok || fail "upstream: the >25% lines: $(grep "the model is off" "$work/upstream/report.md")"
grep -q "^| mooncake_upstream |" "$work/upstream/report.md" && fail "upstream: mooncake_upstream judged as a Flow-IPC flavour" || ok
"$src/scripts/compare.sh" "$work/upstream" >"$work/upstream.cmp" 2>&1 \
  && grep -q "^== allocation: model against upstream$" "$work/upstream.cmp" \
  && grep -q "^| shm_alloc/alloc_bare/size_kb:64 | 25.0 ns | 35.7 ns | 0.70 \[0.66, 0.74\] |" "$work/upstream.cmp" \
  && [ "$(grep -c "the model is off by more than 25%" "$work/upstream.cmp")" -eq 2 ] \
  && ok || fail "upstream: compare.sh's table: $(cat "$work/upstream.cmp" | tail -12)"
"$src/scripts/compare.sh" "$work/real" 2>&1 | grep -q "model against upstream" && fail "real: a model-against-upstream table without mooncake_upstream" || ok
# a folder of the model against upstream alone: that table and the run, no Flow-IPC verdict
mkdir "$work/uponly"
"$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["benchmarks"] = [b for b in d["benchmarks"] if "flowipc_classic" not in b["name"]]
json.dump(d, open(sys.argv[2], "w"))' "$work/upstream/allocation_paired.json" "$work/uponly/allocation_paired.json"
report uponly
head -1 "$work/uponly/report.md" | grep -q "model against its upstream code" \
  && grep -q "^| shm_alloc/free_bare/size_kb:4 | 22.0 ns | 15.7 ns | 1.40 \[1.35, 1.45\] |" "$work/uponly/report.md" \
  && ! grep -q "^## At a glance" "$work/uponly/report.md" \
  && ok || fail "uponly: not a model-against-upstream report: $(head -3 "$work/uponly/report.md")"

# TENT's rows (translate, submit) beside the model alone: the same table, per transfer row,
# with the buffer count the rows do not name, and the >25% line for translate only
plant uptent
report uptent
grep -q "^## Model against upstream: transfer_paired.json$" "$work/uptent/report.md" \
  && grep -q "^| shm_transfer/translate/size_kb:4 | 25.4 ns | 20.0 ns | 1.27 \[1.26, 1.28\] |" "$work/uptent/report.md" \
  && grep -q "^| shm_transfer/submit/size_kb:4/per_submit:4 | 870 ns | 1074 ns | 0.810 \[0.800, 0.820\] |" "$work/uptent/report.md" \
  && grep -q "Registered buffers: 100 (--num_segments)" "$work/uptent/report.md" \
  && ok || fail "uptent: no TENT rows in the table: $(grep -A8 "Model against" "$work/uptent/report.md")"
grep -q "^- shm_transfer/translate/size_kb:4: the model is off by more than 25%: 27% slower than upstream" "$work/uptent/report.md" \
  && [ "$(grep -c "the model is off by more than 25%" "$work/uptent/report.md")" -eq 1 ] \
  && ok || fail "uptent: the >25% lines: $(grep "the model is off" "$work/uptent/report.md")"
"$src/scripts/compare.sh" "$work/uptent" >"$work/uptent.cmp" 2>&1 && grep -q "^== transfer: model against upstream$" "$work/uptent.cmp" \
  && grep -q "^| shm_transfer/submit/size_kb:4/per_submit:4 | 870 ns | 1074 ns | 0.810 \[0.800, 0.820\] |" "$work/uptent.cmp" \
  && ok || fail "uptent: compare.sh's table: $(tail -12 "$work/uptent.cmp")"

# Bad input: one line, exit 2, no traceback
expect_bad() {
  local what=$1 rc
  shift
  "$@" >"$work/bad.out" 2>"$work/bad.err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/bad.err")" -eq 1 ] && ! grep -q Traceback "$work/bad.err" \
    && ok || fail "$what: exit $rc: $(head -3 "$work/bad.err")"
}
expect_bad "compare.sh paired against per-system" "$src/scripts/compare.sh" "$work/demo" "$work/drift/unpaired"
mkdir "$work/bad"
for edit in 'r["ratio"] = "x"' 'r["rounds"] = -1' 'r["p_value"] = 2' 'r["verdict"] = "great"' 'del r["saved_ns"]' \
            'd["benchmarks"] = d["benchmarks"][:2]' 'r["ratio_lo"] = "low"'; do
  "$py" - "$work/real/allocation_paired.json" "$work/bad/allocation_paired.json" "$edit" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = [b for b in d["benchmarks"] if "/vs:" in b["name"]][0]
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
EOF
  expect_bad "report.sh, ratio row with $edit" "$src/scripts/report.sh" "$work/bad"
  expect_bad "compare.sh, ratio row with $edit" "$src/scripts/compare.sh" "$work/bad"
done
head -c 500 "$work/real/allocation_paired.json" >"$work/bad/allocation_paired.json"
expect_bad "report.sh, a truncated paired file" "$src/scripts/report.sh" "$work/bad"
grep -q "allocation_paired.json" "$work/bad.err" && ok || fail "a truncated paired file is not named"
echo '{"runs": 3}' >"$work/real/run.json"
expect_bad "report.sh, a bad run.json" "$src/scripts/report.sh" "$work/real"
# (A) compare.sh reads a run_all.sh --system folder whole: the axes' runs (transfer_axis_*.json)
# and the space run (allocation_space.json) beside the paired files. full: demo's paired files,
# make_axes.py's even axes, the space fixture; worse: the same with SHM-classic's threads:2
# request planted from 1.07 [1.06, 1.09] to 0.50 [0.48, 0.52] and bipc's utilization from
# 96.51% to 50.81%. Main read neither: it printed no axis row and its gate passed.
set_ratio() {  # set_ratio FILE ROW RATIO LO HI: a ratio row's ratio and interval planted
  "$py" - "$@" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    if b["name"] == sys.argv[2]:
        b["ratio"], b["ratio_lo"], b["ratio_hi"] = (float(v) for v in sys.argv[3:6])
json.dump(d, open(sys.argv[1], "w"))
EOF2
}
"$py" "$src/tests/fixtures/make_paired.py" "$work/full" demo && "$py" "$src/tests/fixtures/axes/make_axes.py" "$work/full.axes" even \
  && cp "$work/full.axes"/transfer_axis_*.json "$src/tests/fixtures/space/allocation_space.json" "$work/full/" || fail "full: not planted"
cp -r "$work/full" "$work/worse"
set_ratio "$work/worse/transfer_axis_threads_2.json" shm_transfer/request/size_kb:4/threads:2/system:flowipc_classic/vs:mooncake 0.50 0.48 0.52
sed -i 's/util 0.9651 frag 0.4097/util 0.5081 frag 0.4097/' "$work/worse/allocation_space.json"
"$src/scripts/compare.sh" "$work/full" >"$work/full.cmp" 2>&1 && ok || fail "compare.sh full: exit $?: $(tail -3 "$work/full.cmp")"
grep -q "^== axis threads: paired, against mooncake (transfer_axis_threads_N.json, a run per point: threads:2)$" "$work/full.cmp" \
  && grep -q "^threads:2  *shm_transfer/request/size_kb:4/threads:2/system:flowipc_classic/vs:mooncake  *1.07 \[1.06, 1.09\] " "$work/full.cmp" \
  && grep -q "^per_submit:256  *shm_transfer/request/size_kb:4/per_submit:256/system:flowipc_classic/vs:mooncake  *1.09 \[1.08, 1.10\] " "$work/full.cmp" \
  && [ "$(grep -c "^buffers:[0-9]*  *shm_transfer/request/size_kb:4/system:" "$work/full.cmp")" -eq 12 ] \
  && grep -q "^size_kb:1  *shm_transfer/request/size_kb:1/system:flowipc_classic/vs:mooncake " "$work/full.cmp" \
  && grep -q "^bipc  *96.51%  *40.97% " "$work/full.cmp" && grep -q "^jemalloc  *64.31%  *- " "$work/full.cmp" \
  && ok || fail "compare.sh DIR: the axes' and space rows: $(grep -c "" "$work/full.cmp") lines: $(grep "^== " "$work/full.cmp")"
"$src/scripts/compare.sh" "$work/demo" 2>&1 | grep -q "^== axis\|^== space" && fail "compare.sh on paired files alone: an axis or space section" || ok
"$src/scripts/compare.sh" "$work/full" "$work/worse" >"$work/worse.cmp" 2>"$work/worse.err" && [ ! -s "$work/worse.err" ] \
  && grep -q "^== axis threads:2: $work/full/transfer_axis_threads_2.json against $work/worse/transfer_axis_threads_2.json$" "$work/worse.cmp" \
  && grep -q "^shm_transfer/request/size_kb:4/threads:2/system:flowipc_classic/vs:mooncake  *1.07 \[1.06, 1.09\]  *0.50 \[0.48, 0.52\]  changed$" "$work/worse.cmp" \
  && [ "$(grep -c " changed$" "$work/worse.cmp")" -eq 1 ] && grep -q "^== axis buffers:10000: " "$work/worse.cmp" \
  && grep -q "^bipc  *96.51%  *50.81%  changed  *40.97%  *40.97%  unchanged " "$work/worse.cmp" \
  && grep -q "^offset  *96.51%  *96.51%  unchanged " "$work/worse.cmp" && grep -q "unpaired .*never judged nor gated" "$work/worse.cmp" \
  && ok || fail "compare.sh A B: the axes and space before and after: $(grep -A3 "threads:2:\|== space" "$work/worse.cmp")"
"$src/scripts/compare.sh" --fail-above=10 "$work/full" "$work/worse" >"$work/gate.out" 2>"$work/gate.err"
rc=$?
[ "$rc" -eq 1 ] && [ "$(sed -n 1p "$work/gate.out")" = "== FAIL: 2 rows of B slower than A by more than 10% (--fail-above)" ] \
  && sed -n 2p "$work/gate.out" | grep -q "^threads:2 shm_transfer/request/size_kb:4/threads:2/system:flowipc_classic/vs:mooncake  *1.07 \[1.06, 1.09\]  *0.50 \[0.48, 0.52\]  ratio -53.3%, changed$" \
  && sed -n 3p "$work/gate.out" | grep -q "^space/bipc utilization at first failure  *96.51%  *50.81%  utilization -47.4%, changed$" \
  && ok || fail "gate: the axes and space: exit $rc: $(head -4 "$work/gate.out") $(cat "$work/gate.err")"
# a ratio falls by PCT when A / B > 1 + PCT (1.07 / 0.50: 114%), a utilization when B < A (1 - PCT)
"$src/scripts/compare.sh" --fail-above=120 "$work/full" "$work/worse" >/dev/null 2>&1 && ok || fail "gate: 120% tripped on a ratio 114% lower"
"$src/scripts/compare.sh" --fail-above=10 "$work/worse" "$work/full" >"$work/gate.out" 2>&1 \
  && head -1 "$work/gate.out" | grep -q "^== pass" && ok || fail "gate: a better B tripped it: $(head -3 "$work/gate.out")"
rm "$work/worse/transfer_axis_size_1.json"
"$src/scripts/compare.sh" "$work/full" "$work/worse" >/dev/null 2>"$work/worse.err" \
  && grep -qx "== transfer_axis_size_1.json: skipped, not in both folders" "$work/worse.err" && ok || fail "an axis file in one folder: $(cat "$work/worse.err")"
sed -i 's/util 0.5081/util x/' "$work/worse/allocation_space.json"
expect_bad "compare.sh, a bad space label" "$src/scripts/compare.sh" "$work/full" "$work/worse"
# an allocator missing from B's space run: named on stderr, and the gate trips on it
"$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["benchmarks"] = [b for b in d["benchmarks"] if "/bipc/" not in b["name"]]; json.dump(d, open(sys.argv[2], "w"))' \
  "$work/full/allocation_space.json" "$work/worse/allocation_space.json"
"$src/scripts/compare.sh" --fail-above=10 "$work/full" "$work/worse" >"$work/gate.out" 2>"$work/gate.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "^space/bipc utilization at first failure  *96.51%  *-  *the allocator is missing from " "$work/gate.out" \
  && grep -q "space: bipc is in $work/full/allocation_space.json only, not compared" "$work/gate.err" \
  && ok || fail "gate: an allocator missing from B: exit $rc: $(head -4 "$work/gate.out") $(cat "$work/gate.err")"

# (B) report.md's The run covers every file it reads: Measured from the paired runs' date to the
# space run's (the fixture's 10:51), the axes' flags (those common to all once, then per point)
# and the space run's. Main gave the paired runs' range alone and none of those flags.
report full
grep -qx -- "- Measured: 2026-11-27T04:00:00+00:00 to 2026-11-27T10:51:23+00:00, each binary once, its systems in turn round by round (order balanced over the rounds); then the axes, a paired run per point and the space run" "$work/full/report.md" \
  && grep -qx "  - the axes (transfer_axis_\*.json, shm_transfer_bench), common to all: \`cpu=1 repetitions=1\`" "$work/full/report.md" \
  && grep -qx "    - buffers:10: \`systems=mooncake,flowipc_classic,flowipc_jemalloc num_segments=10\`" "$work/full/report.md" \
  && grep -qx "    - threads:2: \`systems=mooncake,flowipc_classic num_segments=100 submitters=2\`" "$work/full/report.md" \
  && grep -q "^  - space (allocation_space.json): \`allocator=space .*pool_mb=64 .*seed=42 " "$work/full/report.md" \
  && grep -q "^- Machine: DIFFERS: " "$work/full/report.md" \
  && ok || fail "the run: not every file: $(sed -n '/^## The run/,/^## Per/p' "$work/full/report.md" | grep -v "^  - [a-z_]*: \`")"

# (C) An undecided point is neither yes nor no (the break-even rule over the decided points).
# even's control at 10000 buffers planted at 0.93 [0.90, 0.96], and threads' at 2 submitters at
# 1.12 [1.08, 1.17]: main said SHM-classic "never" saves 5% along the buffers, its table "yes" at
# 1000 (the last point undecided), and "up to about 1 submitter (not at 2, ...)" drew "not at 2"
# from an undecided point.
axes even
mv "$work/axes_even" "$work/axes_undecided"
set_ratio "$work/axes_undecided/transfer_axis_buffers_10000.json" shm_transfer/request/size_kb:4/system:mooncake_control/vs:mooncake 0.93 0.90 0.96
report axes_undecided
section axes_undecided >"$work/axes.md"
grep -qx "| 1000 | SHM-classic | 3.60 µs | 1.00 µs | 3.60 \[3.27, 4.00\] | 2.60 µs \[2.50 µs, 2.70 µs\] | 69% | yes |" "$work/axes.md" \
  && grep -qE "^\| 10000 \| SHM-classic \| .* \| undecided \|$" "$work/axes.md" \
  && grep -qx "\- SHM-classic saves at least 5.0% of a 4 KB request from about 1000 registered buffers (not at 100, the count before it); at 1000 it saves 2.60 µs \[2.50 µs, 2.70 µs\] of Mooncake's 3.60 µs (lower end 69%); decided at 10, 100, 1000; undecided at 10000 (the A/A control off by 5.0% or more)." "$work/axes.md" \
  && grep -qx "\- SHM-jemalloc (its write path) never saves at least 5.0% of a 4 KB request at a decided point (10 to 10000 registered buffers); decided at 10, 100, 1000; undecided at 10000 (the A/A control off by 5.0% or more)." "$work/axes.md" \
  && grep -q "is undecided: neither yes nor no, the rule runs over the decided points" "$work/axes.md" \
  && ok || fail "axes undecided at 10000: $(grep "^- \|^| 10000 | SHM" "$work/axes.md")"
axes threads
set_ratio "$work/axes_threads/transfer_axis_threads_2.json" shm_transfer/request/size_kb:4/threads:2/system:mooncake_control/vs:mooncake \
  1.12 1.08 1.17
report axes_threads
section axes_threads >"$work/axes.md"
grep -qx "\- SHM-classic saves at least 5.0% of a 4 KB request at every decided point (1 to 2 submitters); decided at 1; undecided at 2 (the A/A control off by 5.0% or more)." "$work/axes.md" \
  && ok || fail "axes threads undecided at 2: $(grep -A9 "^### Threads" "$work/axes.md")"
# every "not at N" of a sentence names a point its table decided (yes or no), for its system
for d in axes_undecided axes_threads; do
  section "$d" | "$py" -c '
import re, sys
rows, bad = {}, []
for line in sys.stdin:
    if line.startswith("### "):
        rows = {}
    m = re.match(r"^\| ([^|]+) \| (SHM-\w+) \| .* \| (yes|no|undecided) \|$", line)
    if m:
        rows[(m.group(1), m.group(2))] = m.group(3)
    m = re.match(r"^- (SHM-\w+).* \(not at ([^,]+),", line)
    if m and rows.get((m.group(2), m.group(1))) not in ("yes", "no"):
        bad.append(line.strip())
sys.exit("\n".join(bad) or None)' && ok || fail "$d: a \"not at\" drawn from an undecided point"
done
finish
