#!/usr/bin/env python3
"""Fails when files of one crate import each other in a circle.

A file's imports are the `crate::`, `super::` and `self::` paths in its code outside comments and
its `mod tests` block; each path counts as an arrow to the module file it names. A `mod` line is
not an arrow: a module declares its children, and they may use it. Usage: circles.py [SRC_DIR ...]
(default: every crate's src/ under common/, services/ and tests/).
"""
import collections
import glob
import os
import re
import sys

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super|self)::((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{([^;]*)\}", re.S)
COMMENT = re.compile(r"//[^\n]*")
TESTS = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod tests\s*\{")


def modules(src):
    """Module path (a tuple of names) -> file, for every .rs file under src."""
    found = {}
    for path in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True):
        parts = os.path.relpath(path, src)[:-3].split(os.sep)
        if parts[-1] in ("lib", "main", "mod"):
            parts = parts[:-1]
        found[tuple(parts)] = path
    return found


def arrows(src):
    mods = modules(src)
    out = collections.defaultdict(set)
    for module, path in mods.items():
        with open(path, encoding="utf-8") as f:
            code = TESTS.split(COMMENT.sub("", f.read()))[0]
        # super:: and self:: are relative to the module, which for foo.rs is foo itself.
        here = list(module)

        def add(root, names):
            full = names if root == "crate" else (here + names if root == "self" else here[:-1] + names)
            for cut in range(len(full), -1, -1):
                target = tuple(full[:cut])
                if target in mods:
                    if target != module:
                        out[module].add(target)
                    return

        for m in PATH.finditer(code):
            add(m.group(1), [n for n in m.group(2).split("::") if n])
        for m in GROUP.finditer(code):
            prefix = [n for n in m.group(2).split("::") if n]
            for item in m.group(3).split(","):
                names = re.findall(r"\w+", item.split(" as ")[0])[:2]
                if names:
                    add(m.group(1), prefix + names)
    return mods, out


def circles(nodes, edges):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(n):
        index[n] = low[n] = counter[0]
        counter[0] += 1
        stack.append(n)
        on.add(n)
        for w in edges.get(n, ()):
            if w not in index:
                visit(w)
                low[n] = min(low[n], low[w])
            elif w in on:
                low[n] = min(low[n], index[w])
        if low[n] == index[n]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == n:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(10000)
    for n in nodes:
        if n not in index:
            visit(n)
    return found


def main():
    roots = sys.argv[1:] or sorted(glob.glob("common/*/src") + glob.glob("services/*/src") + ["tests/src"])
    failed = False
    for src in roots:
        mods, edges = arrows(src)
        for component in circles(list(mods), edges):
            failed = True
            members = set(component)
            name = lambda m: "::".join(m) or "<crate root>"
            print(f"{src}: these files import each other in a circle:", file=sys.stderr)
            for a in sorted(component):
                for b in sorted(edges[a] & members):
                    print(f"  {name(a)} -> {name(b)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
