#!/usr/bin/env python3
"""Writes traces/sample_reuse.jsonl: traces/sample.jsonl's requests (the same
timestamps and lengths) with hash ids shared as a multi-turn conversation
trace shares them, so that --reuse=on has prefix hits to find.

Each request, with probability SHARE, continues one of the RECENT requests
before it: its first k blocks (k a uniform fraction in [LOW, 1] of its own)
are that request's first k ids (one at least k blocks long, picked at random,
else the longest, and then at most its blocks), the rest fresh ids. Seeded: the same command writes the same file (tests/cli/cli_workload.sh
checks it).

    python3 traces/make_sample_reuse.py traces/sample.jsonl traces/sample_reuse.jsonl
"""
import json
import random
import sys

SEED, SHARE, RECENT, LOW = 27, 0.8, 20, 0.5


def main(src, dst):
    rng = random.Random(SEED)
    lines = [json.loads(l) for l in open(src)]
    out, next_id, hits, blocks = [], 0, 0, 0
    for i, r in enumerate(lines):
        n = len(r["hash_ids"])
        ids = []
        if i and rng.random() < SHARE:
            k = int(n * (LOW + (1 - LOW) * rng.random()))
            recent = [o["hash_ids"] for o in out[max(0, i - RECENT):i]]
            long_enough = [p for p in recent if len(p) >= k]
            prev = rng.choice(long_enough) if long_enough else max(recent, key=len)
            ids = prev[:k]
        hits, blocks, fresh = hits + len(ids), blocks + n, n - len(ids)
        ids += list(range(next_id, next_id + fresh))
        next_id += fresh
        out.append(dict(r, hash_ids=ids))
    with open(dst, "w") as f:
        for r in out:
            f.write(json.dumps({k: r[k] for k in ("timestamp", "input_length", "output_length", "hash_ids")}) + "\n")
    print(f"{dst}: {len(out)} requests, {hits} of {blocks} blocks shared ({100.0 * hits / blocks:.1f}%)",
          file=sys.stderr)


if __name__ == "__main__":
    main(*sys.argv[1:3])
