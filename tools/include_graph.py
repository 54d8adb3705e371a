#!/usr/bin/env python3
"""Draw and check the structure of vramtrace's C sources: includes and calls.

A *unit* is a source file with its header (x.c + x.h, and x_internal.h, the
private header of x's family). Unit A depends on unit
B when a file of A includes B's header, and (with --build DIR) when A's object
file uses a symbol that B's object defines: a call or a data reference, read
with `nm` from the objects of the build's libraries. The script reports:
  - import circles between units (strongly connected components of size > 1);
  - includes that point from a folder to a folder later in the pipeline
    (the folder order is LAYERS below: a folder may include only from itself
    and from folders listed before it).
With --dot FILE it writes the unit graph as Graphviz, one cluster per folder.
Exit status 1 when a circle or an upward include is found.
"""
import argparse
import os
import re
import sys
from collections import defaultdict

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SRC_DIRS = ["include", "logwriter", "interpose", "analyzer"]


def layers_from(path):
    """Folder order, earliest first: one folder (or folder prefix) per line;
    "apart A B" lines name folders that must not include each other."""
    order, apart = [], []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line.startswith("apart "):
                apart.append(tuple(line.split()[1:3]))
            elif line:
                order.append(line)
    return order, apart


def under(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def collect(root):
    files = []
    for top in SRC_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".c", ".h", ".def")):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(files)


def unit_of(path):
    """x.c, x.h and the private header x_internal.h are one unit."""
    base, ext = os.path.splitext(path)
    if ext == ".h" and base.endswith("_internal"):
        base = base[: -len("_internal")]
    return base if ext in (".c", ".h") else path


def resolve(root, src, inc, by_name):
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc))
    if os.path.exists(os.path.join(root, here)):
        return here
    cands = by_name.get(inc) or by_name.get(os.path.basename(inc)) or []
    for c in cands:
        if c.endswith(inc):
            return c
    return None  # system or generated header


def build_graph(root, files):
    by_name = defaultdict(list)
    for f in files:
        by_name[os.path.basename(f)].append(f)
        parts = f.split(os.sep)
        for i in range(1, len(parts)):
            by_name[os.path.join(*parts[i:])].append(f)
    edges = defaultdict(set)
    file_edges = []
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE_RE.findall(text):
            target = resolve(root, f, inc, by_name)
            if target is None:
                continue
            a, b = unit_of(f), unit_of(target)
            file_edges.append((f, target))
            if a != b:
                edges[a].add(b)
    return edges, file_edges


def object_source(build, obj):
    """build/<sub>/CMakeFiles/<target>.dir/<rel>.c.o -> <sub>/<rel>.c"""
    rel = os.path.relpath(obj, build)
    m = re.match(r"(.*?)/?CMakeFiles/[^/]+\.dir/(.*)\.o$", rel)
    if not m:
        return None
    src = os.path.normpath(os.path.join(m.group(1), m.group(2).replace("__", "..")))
    return src


PROTO_RE = re.compile(r"^(?!static|typedef|#|\s)[^;()]*?\b(vt_\w+)\s*\([^;]*?\)\s*;", re.M | re.S)


def foreign_declarations(root, files, defs):
    """(header, function, defining file) for each function a header declares
    that another unit defines: one header per source file."""
    out = []
    for f in files:
        if not f.endswith(".h") or f.startswith("include/"):
            continue
        with open(os.path.join(root, f), errors="replace") as fh:
            text = re.sub(r"/\*.*?\*/", " ", fh.read(), flags=re.S)
        for name in PROTO_RE.findall(text):
            d = defs.get(name)
            if d and unit_of(d) != unit_of(f):
                out.append((f, name, d))
    return out


def add_symbol_edges(root, build, edges, files, defs_out=None):
    """Adds an edge for each undefined symbol of an object defined by another."""
    import subprocess
    known = set(files)
    defs, uses = {}, defaultdict(set)
    for dirpath, _, names in os.walk(build):
        if "CMakeFiles" not in dirpath or "/tests/" in dirpath + "/" or "/bench/" in dirpath + "/":
            continue
        for n in names:
            if not n.endswith(".c.o"):
                continue
            obj = os.path.join(dirpath, n)
            src = object_source(build, obj)
            if src not in known:
                continue
            out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "U":
                    uses[src].add(parts[1])
                elif len(parts) == 3 and parts[1] in "TDBRGSVW" and not parts[2].startswith("."):
                    defs.setdefault(parts[2], src)
    if defs_out is not None:
        defs_out.update(defs)
    calls = []
    for src, syms in uses.items():
        for s in sorted(syms):
            d = defs.get(s)
            # the shim is preloaded, never linked: its wrappers of dlopen
            # and dlsym are not what the analyzer's calls of them reach
            if d and d.startswith("interpose/") and not src.startswith("interpose/"):
                continue
            if d and unit_of(d) != unit_of(src):
                calls.append((src, d, s))
                edges[unit_of(src)].add(unit_of(d))
    return calls


def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def layer_rank(path, layers):
    best, rank = -1, None
    for i, prefix in enumerate(layers):
        p = prefix.rstrip("/")
        if path == p or path.startswith(p + "/"):
            if len(p) > best:
                best, rank = len(p), i
    return rank


def write_dot(path, edges, nodes):
    folders = defaultdict(list)
    for n in nodes:
        folders[os.path.dirname(n)].append(n)
    with open(path, "w") as f:
        f.write("digraph vramtrace {\n  rankdir=LR; node [shape=box,fontsize=9];\n")
        for i, (folder, ns) in enumerate(sorted(folders.items())):
            f.write(f'  subgraph cluster_{i} {{ label="{folder}";\n')
            for n in sorted(ns):
                f.write(f'    "{n}" [label="{os.path.basename(n)}"];\n')
            f.write("  }\n")
        for a in sorted(edges):
            for b in sorted(edges[a]):
                f.write(f'  "{a}" -> "{b}";\n')
        f.write("}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--layers", default=None, help="folder order file (default tools/layers.txt)")
    ap.add_argument("--build", help="also read calls from this build's objects (nm)")
    ap.add_argument("--headers", action="store_true",
                    help="with --build: also list functions a header declares for another file")
    ap.add_argument("--dot", help="write the unit graph as Graphviz to this file")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    layers, apart = layers_from(args.layers or os.path.join(root, "tools", "layers.txt"))
    files = collect(root)
    edges, file_edges = build_graph(root, files)
    include_edges = {k: set(v) for k, v in edges.items()}
    nodes = {unit_of(f) for f in files}
    bad = 0
    calls_only = []
    if args.build:
        defs = {}
        calls_only = add_symbol_edges(root, os.path.abspath(args.build), edges, files, defs)
        if args.headers:
            for h, name, d in foreign_declarations(root, files, defs):
                print(f"header: {h} declares {name}, defined in {d}")
                bad += 1
    for comp in sccs(nodes, edges):
        bad += 1
        print("circle: " + " <-> ".join(comp))
        for src, dst, sym in calls_only:
            if unit_of(src) in comp and unit_of(dst) in comp and unit_of(dst) not in include_edges.get(unit_of(src), ()):
                print(f"  {src} calls {sym} in {dst}")
    checked = [(src, dst, "includes") for src, dst in file_edges]
    checked += [(src, dst, f"calls {sym} in") for src, dst, sym in calls_only]
    for src, dst, how in checked:
        rs, rd = layer_rank(src, layers), layer_rank(dst, layers)
        if rs is None or rd is None:
            print(f"unplaced: {src if rs is None else dst} is in no folder of the layer list")
            bad += 1
        elif rd > rs:
            print(f"upward: {src} {how} {dst} ({layers[rd]} comes after {layers[rs]})")
            bad += 1
        for a, b in apart:
            if (under(src, a) and under(dst, b)) or (under(src, b) and under(dst, a)):
                print(f"apart: {src} {how} {dst} ({a} and {b} are kept apart)")
                bad += 1
    if args.dot:
        write_dot(args.dot, edges, nodes)
    n_edges = sum(len(v) for v in edges.values())
    print(f"{len(nodes)} units, {n_edges} dependencies, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
