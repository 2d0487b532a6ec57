#!/usr/bin/env python3
"""Which source file of the library calls which, from the built archive's
symbols (nm), checked against the layers src/ is built in: base (1) <
models (2) < alloc, lookup, transfer (3, never calling each other).

  layers.py [--max-layers N] LIBRARY.a SRC_DIR
      prints the circles (files that call each other in a loop), the calls
      that go up a layer or sideways between benchmarks, and the depth of the
      file graph with its longest chain; exits 1 if any circle, upward or
      sideways call is found, or the depth exceeds N.
"""
import collections
import os
import re
import subprocess
import sys

RANK = {'base': 1, 'models': 2, 'alloc': 3, 'lookup': 3, 'transfer': 3}


def sources(src_dir):
    """Object member name (x.c.o) -> the source's path under src_dir."""
    found = {}
    for folder in sorted(os.listdir(src_dir)):
        path = os.path.join(src_dir, folder)
        if os.path.isdir(path):
            for f in os.listdir(path):
                found[f + '.o'] = folder + '/' + f
    return found


def call_graph(library, src_dir):
    """file -> the files it calls (a global symbol only one file defines)."""
    out = subprocess.run(['nm', '-P', '-A', library], capture_output=True, text=True, check=True).stdout
    where = sources(src_dir)
    defs, uses = collections.defaultdict(set), collections.defaultdict(set)
    for line in out.splitlines():
        m = re.match(r'.*\[(.+)\]: (\S+) (\S)', line)
        if not m or m.group(1) not in where:
            continue
        member, sym, kind = where[m.group(1)], m.group(2), m.group(3)
        if kind == 'U':
            uses[member].add(sym)
        elif kind in 'TDBRVW':
            defs[sym].add(member)
    files = sorted(set(where[k] for k in where if where[k] in uses or any(where[k] in d for d in defs.values())))
    edges = {f: set() for f in files}
    for f, syms in uses.items():
        for s in syms:
            if len(defs.get(s, ())) == 1:
                (d,) = defs[s]
                if d != f:
                    edges[f].add(d)
    return edges


def circles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def longest(edges, loops):
    """The longest chain of calls, a circle counted as one file."""
    comp = {v: v for v in edges}
    for c in loops:
        for v in c:
            comp[v] = c[0]
    down = collections.defaultdict(set)
    for u in edges:
        down[comp[u]].update(comp[w] for w in edges[u] if comp[w] != comp[u])
    memo = {}

    def chain(v):
        if v not in memo:
            memo[v] = []
            memo[v] = [v] + max((chain(w) for w in sorted(down[v])), key=len, default=[])
        return memo[v]

    return max((chain(comp[v]) for v in sorted(edges)), key=len, default=[])


def main(argv):
    limit = None
    if len(argv) > 2 and argv[1] == '--max-layers' and argv[2].isdigit():
        limit = int(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    edges = call_graph(argv[1], argv[2])
    loops = circles(edges)
    folder = lambda f: f.split('/')[0]
    up = [(a, b) for a in edges for b in edges[a] if RANK.get(folder(b), 0) > RANK.get(folder(a), 0)]
    side = [(a, b) for a in edges for b in edges[a]
            if folder(a) != folder(b) and RANK.get(folder(a)) == RANK.get(folder(b)) == 3]
    print('files %d, calls between them %d' % (len(edges), sum(len(e) for e in edges.values())))
    print('circles %d' % len(loops))
    for c in loops:
        print('  circle: ' + ' '.join(c))
    print('upward calls %d' % len(up))
    for a, b in sorted(up):
        print('  up: %s -> %s' % (a, b))
    print('sideways calls %d' % len(side))
    for a, b in sorted(side):
        print('  sideways: %s -> %s' % (a, b))
    chain = longest(edges, loops)
    print('layers %d' % len(chain))
    print('  longest: ' + ' > '.join(chain))
    return 1 if loops or up or side or (limit is not None and len(chain) > limit) else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
