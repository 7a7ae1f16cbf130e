#!/usr/bin/env python3
"""Checks the crate table of docs/architecture.md against the crates' manifests.

Each row's "may import" column must list exactly the workspace crates in the `[dependencies]` of
that crate's Cargo.toml, and each of them must be in a row above it: the table is the layering,
and no crate imports one below it.
"""
import re
import sys

DOC = "docs/architecture.md"


def main():
    with open(DOC, encoding="utf-8") as f:
        rows = [line for line in f if re.match(r"^\| `[^`]+` \| `[^`]+` \|", line)]
    seen, failed = set(), False
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        crate, path, listed = cells[0].strip("`"), cells[1].strip("`"), set(re.findall(r"`([^`]+)`", cells[2]))
        with open(f"{path}/Cargo.toml", encoding="utf-8") as f:
            manifest = f.read()
        section = re.search(r"^\[dependencies\]\n(.*?)(?=^\[|\Z)", manifest, re.S | re.M)
        actual = set(re.findall(r"^(zonecast[a-z-]*)\b", section.group(1) if section else "", re.M))
        if listed != actual:
            failed = True
            print(f"{DOC}: {crate} may import {sorted(listed)}, but {path}/Cargo.toml has {sorted(actual)}",
                  file=sys.stderr)
        below = actual - seen
        if below:
            failed = True
            print(f"{DOC}: {crate} imports {sorted(below)}, listed below it", file=sys.stderr)
        seen.add(crate)
    if not rows:
        print(f"{DOC}: no crate table found", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
