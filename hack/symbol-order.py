#!/usr/bin/env python3
"""Writes link/symbol-order.txt: the functions the controller ran, an idle one's first.

usage: hack/symbol-order.py LINK_MAP OUT [--idle CALLGRIND_FILE]... CALLGRIND_FILE...
       hack/symbol-order.py --check LINK_MAP LIST EXECUTABLE

The callgrind files come from `valgrind --tool=callgrind --dump-instr=yes --dump-line=no
--compress-pos=no --compress-strings=no` over the release executable, which has no symbol
table; lld's link map of that same executable (-Wl,-Map) says which input section, and so
which function, holds each executed address. Functions are ordered by the instructions they
ran; those only called into (a cost of their own of zero) come last, in address order.

An `--idle` run (hack/idle-callgrind.sh: a controller with nothing to do, counted from when it
is ready) goes first: the code an idle process keeps running sits together, so the pages it
maps back after giving its start-up pages away are few.

`--check` says how many of LIST's functions a build's link map still has: the names carry
their crates' hashes, and lld skips a name it does not find without a word, so after a
dependency or toolchain update the list goes stale and the build only loses density. Below
STALE of them it says to write the list again; it exits 0 either way. The map must be
EXECUTABLE's: cargo's build of the bin for a benchmark links after the release build and writes
the same map with its own symbols (build.rs); the map names the bin's object under `deps/`,
which cargo hard-links to the executable it puts in place.
"""

import bisect
import os
import re
import sys

EXE = "image-reflector"
# An input section line of lld's map: VMA LMA size align, then file:(section).
SECTION = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S.*?:\((\.text[^)]*)\)\s*$")
SYMBOL = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+\s+(\S+)\s*$")
STALE = 0.9
# An input object of the bin itself: `.../deps/image_reflector-<hash>.<name>.<cgu>.rcgu.o`.
BIN_OBJECT = re.compile(r"(\S*/deps/image_reflector-[0-9a-f]+)\.[^\s/]*\.o:\(")
PREFIXES = (".text.unlikely.", ".text.hot.", ".text.startup.", ".text.exit.", ".text.split.", ".text.")


def sections(map_path):
    """(start, end, symbol) of every code input section, by start."""
    found = []
    pending = None  # a section named plain `.text`: its first symbol names it
    with open(map_path, errors="replace") as lines:
        for line in lines:
            m = SECTION.match(line)
            if m:
                start, size, name = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
                pending = None
                if size == 0:
                    continue
                symbol = next((name[len(p):] for p in PREFIXES if name.startswith(p)), "")
                if symbol:
                    found.append((start, start + size, symbol))
                else:
                    pending = (start, start + size)
                continue
            if pending:
                s = SYMBOL.match(line)
                # Assembly's sections hold C-named symbols; a demangled Rust path is not a name.
                if s and "::" not in s.group(1) and " " not in s.group(1):
                    found.append((pending[0], pending[1], s.group(1)))
                pending = None
    found.sort()
    return found


def executed(paths):
    """Instructions run at each address of the executable, over every callgrind file."""
    cost = {}
    for path in paths:
        ob = cob = None
        call_target = None
        after_call = False  # the line after calls= is the call's inclusive cost, not the caller's own
        with open(path, errors="replace") as lines:
            for line in lines:
                if line.startswith("ob="):
                    ob = line[3:].strip()
                elif line.startswith("cob="):
                    cob = line[4:].strip()
                elif line.startswith("calls="):
                    # calls=<count> <target address>: the callee ran, in cob (or ob).
                    target = line.split()[1]
                    after_call = True
                    if (cob or ob or "").endswith(EXE) and target.startswith("0x"):
                        call_target = int(target, 16)
                elif line.startswith("0x"):
                    parts = line.split()
                    if after_call:
                        if call_target is not None:
                            cost.setdefault(call_target, 0)
                        if ob and ob.endswith(EXE):
                            cost.setdefault(int(parts[0], 16), 0)
                        after_call, call_target, cob = False, None, None
                        continue
                    if ob and ob.endswith(EXE) and len(parts) >= 2:
                        address = int(parts[0], 16)
                        cost[address] = cost.get(address, 0) + int(parts[1])
                elif line.startswith("fn="):
                    cob = None
    return cost


def by_symbol(code, starts, runs):
    """{symbol: (instructions, start, size)} of what the runs executed; and how many addresses
    fell outside every code section."""
    per_symbol = {}
    unplaced = 0
    for address, n in executed(runs).items():
        i = bisect.bisect_right(starts, address) - 1
        if i < 0 or address >= code[i][1]:
            unplaced += 1
            continue
        start, end, symbol = code[i]
        cost, _, size = per_symbol.get(symbol, (0, start, end - start))
        per_symbol[symbol] = (cost + n, start, size)
    return per_symbol, unplaced


def linked_into(map_path):
    """The file the map's link wrote, as its input objects name it (`deps/<bin>-<hash>.<cgu>.o`
    for `deps/<bin>-<hash>`); None when none does."""
    with open(map_path, errors="replace") as lines:
        for line in lines:
            m = BIN_OBJECT.search(line)
            if m:
                return m.group(1)
    return None


def check(map_path, list_path, executable):
    """Prints how many of the list's functions the map's code holds."""
    linked = linked_into(map_path)
    same = linked is not None and os.path.exists(linked) and os.path.samefile(linked, executable)
    if linked is not None and not same:
        print(f"{list_path}: not checked: {map_path} is the map of {linked}, not of {executable}"
              " (a benchmark's build of the bin linked after it)")
        return
    present = {symbol for _, _, symbol in sections(map_path)}
    with open(list_path) as f:
        wanted = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    found = sum(1 for name in wanted if name in present)
    line = f"{list_path}: {found:,} of its {len(wanted):,} functions are in this build"
    if wanted and found < STALE * len(wanted):
        line += (f" ({100 * found // len(wanted)}%): the list is stale (a dependency or the"
                 " toolchain changed their names) and the executable's hot code is spread out"
                 " again; `make symbol-order` writes it anew (about 20 minutes)")
    print(line)


def main():
    usage = ("usage: hack/symbol-order.py LINK_MAP OUT [--idle CALLGRIND_FILE]... CALLGRIND_FILE...\n"
             "       hack/symbol-order.py --check LINK_MAP LIST EXECUTABLE")
    args = sys.argv[1:]
    if args[:1] == ["--check"]:
        if len(args) != 4:
            sys.exit(usage)
        check(args[1], args[2], args[3])
        return
    idle = []
    while len(args) > 3 and args[2] == "--idle":
        idle.append(args.pop(3))
        args.pop(2)
    if len(args) < 3 or "--idle" in args:
        sys.exit(usage)
    map_path, out, *runs = args
    code = sections(map_path)
    starts = [s for s, _, _ in code]
    per_symbol, unplaced = by_symbol(code, starts, runs)
    if not per_symbol:
        sys.exit("no executed address fell in the link map's code: wrong map or callgrind files")
    idle_symbol, _ = by_symbol(code, starts, idle)
    hottest = lambda kv: (-kv[1][0], kv[1][1])  # noqa: E731
    first = sorted(idle_symbol.items(), key=hottest)
    rest = sorted(((k, v) for k, v in per_symbol.items() if k not in idle_symbol), key=hottest)
    ordered = first + rest
    total = sum(size for _, (_, _, size) in ordered)
    with open(out, "w") as f:
        f.write("# The functions image-reflector runs, an idle controller's first, then hottest first:\n")
        f.write("# lld places them first in the executable's code (build.rs). Written by\n")
        f.write("# `make symbol-order`; do not edit.\n")
        for symbol, _ in ordered:
            f.write(symbol + "\n")
    print(f"{out}: {len(ordered)} functions ({len(first)} of them idle's, first), "
          f"{total / 2**20:.2f} MiB of code "
          f"({unplaced} executed addresses outside the map's code sections)")


if __name__ == "__main__":
    main()
