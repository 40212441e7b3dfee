#!/usr/bin/env python3
"""Import loops between sibling files inside each crate's src/.

Every `.rs` file under crates/*/src is a module. A file imports another when one of its
`crate::a::b`, `super::x`, `self::x` paths (in `use` items or inline paths, comments left out)
names that module or an item inside it; an item a module re-exports (`pub use child::Item`)
counts as the file that defines it. An import between two files is lifted to the level where
their paths part: a file under `collection/` importing `api.rs` makes `collection` import `api`.
A module and its own submodules are parent and children, not siblings. A loop is a strongly
connected component of two or more siblings.

Usage: python3 ci/import-loops.py [-v] [crates/NAME/src ...]   (-v lists the imports of each
loop). Exits 1 when there is a loop.
"""
import os, re, sys, collections

def modules(src):
    mods = {}  # tuple path -> file
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith('.rs'): continue
            p = os.path.join(root, f)
            rel = os.path.relpath(p, src)[:-3].split(os.sep)
            if rel == ['main'] and os.path.exists(os.path.join(src, 'lib.rs')):
                continue  # the binary is a crate of its own, using the library by name
            if rel in (['lib'], ['main']): key = ()
            elif rel[-1] == 'mod': key = tuple(rel[:-1])
            else: key = tuple(rel)
            mods[key] = p
    return mods

def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)

def expand_use(body):
    # expand `a::{b, c::{d, e}}` into paths
    body = body.strip()
    m = re.match(r'^(.*?)\{(.*)\}$', body, flags=re.S)
    if not m:
        return [body.split(' as ')[0].strip()]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ''
    for ch in inner:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur); cur = ''
        else: cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if not p: continue
        out += [prefix + q for q in expand_use(p)]
    return out

def paths(text):
    text = strip_comments(text)
    found = []
    for m in re.finditer(r'\buse\s+([^;]+);', text):
        found += [p.split(' as ')[0].strip() for p in expand_use(m.group(1))]
    for m in re.finditer(r'\b((?:crate|super|self)(?:::\w+)+)', text):
        found.append(m.group(1))
    return found

def resolve(path, here, mods, reexports, depth=0):
    segs = [s for s in path.replace(' ', '').split('::') if s]
    if not segs: return None
    if segs[0] == 'crate': base, rest = [], segs[1:]
    elif segs[0] in ('super', 'self'):
        base, rest = list(here), segs
        while rest and rest[0] in ('super', 'self'):
            if rest[0] == 'super': base = base[:-1]
            rest = rest[1:]
    elif tuple(here) + (segs[0],) in mods:
        base, rest = list(here), segs  # a child module named without `self::`
    else: return None
    best, cur, i = tuple(base), list(base), 0
    for s in rest:
        cur.append(s)
        if tuple(cur) in mods: best, i = tuple(cur), i + 1
        else: break
    # An item the module re-exports (`pub use child::Item`) lives where it is defined.
    if i < len(rest) and depth < 8:
        target = reexports.get(best, {}).get(rest[i])
        if target is not None:
            return target
    return best

def collect_reexports(mods):
    """name -> defining module, for every `pub use` / `pub(crate) use` of every module."""
    reexports = collections.defaultdict(dict)
    for _ in range(4):  # follow chains of re-exports
        for key, f in mods.items():
            text = strip_comments(open(f).read())
            for m in re.finditer(r'\bpub(?:\([^)]*\))?\s+use\s+([^;]+);', text):
                for p in expand_use(m.group(1)):
                    p = p.strip()
                    name = p.split(' as ')[-1].strip().split('::')[-1]
                    target_path = p.split(' as ')[0].strip()
                    t = resolve(target_path, key, mods, reexports, depth=1)
                    if t is not None and t != key:
                        reexports[key][name] = t
    return reexports

def sccs(graph):
    index, low, stack, on, out, i = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            out.append(comp)
    for v in list(graph):
        if v not in index: visit(v)
    return out

def check(crate_src):
    mods = modules(crate_src)
    # file-level edges: file -> module (file) it names
    edges = collections.defaultdict(set)
    reexports = collect_reexports(mods)
    for key, f in mods.items():
        for p in paths(open(f).read()):
            t = resolve(p, key, mods, reexports)
            if t is None or t == key: continue
            edges[key].add(t)
    # lift every edge to the level where the two files part: A in sibling X, B in sibling Y
    # (X != Y, same parent). An edge between a module and its own ancestor is not between siblings.
    graph = collections.defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
            if n == len(a) or n == len(b): continue  # one contains the other
            x, y = a[:n + 1], b[:n + 1]
            graph[x].add(y); graph[y]
    loops = [sorted(c) for c in sccs(graph) if len(c) > 1]
    return mods, loops, edges

def label(mods, key):
    f = mods[key].split('/src/', 1)[1]
    subtree = [k for k in mods if len(k) > len(key) and k[:len(key)] == key]
    return f + (f' (+{len(subtree)} below)' if subtree else '')

VERBOSE = False

def main():
    global VERBOSE
    if sys.argv[1:2] == ['-v']:
        VERBOSE = True
        del sys.argv[1]
    roots = sys.argv[1:] or sorted(
        os.path.join('crates', c, 'src') for c in os.listdir('crates')
        if os.path.isdir(os.path.join('crates', c, 'src')))
    total = 0
    for src in roots:
        mods, loops, edges = check(src)
        for comp in loops:
            total += 1
            names = ', '.join(label(mods, k) for k in comp)
            print(f'{src}: loop of {len(comp)} siblings: {names}')
            if VERBOSE:
                inside = set(comp)
                for a, targets in sorted(edges.items()):
                    for b in sorted(targets):
                        n = 0
                        while n < min(len(a), len(b)) and a[n] == b[n]: n += 1
                        if n < len(a) and n < len(b) and a[:n+1] in inside and b[:n+1] in inside:
                            print(f'    {mods[a].split("/src/",1)[1]} -> {mods[b].split("/src/",1)[1]}')
    print(f'{total} import loop(s) between sibling files')
    return 1 if total else 0

if __name__ == '__main__':
    sys.exit(main())
