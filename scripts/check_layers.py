#!/usr/bin/env python3
"""Link-level check of the layers (ctest: layering).

The staging include folders make an upward #include fail to compile; this
check catches what includes cannot see: a function declared in a low layer
but defined in a higher one, or called through a declaration written by hand.
For every layer's archive it lists the symbols the archive leaves undefined
(nm -u) and fails when one of them is defined by a layer outside the archive's
own dependencies (transitively), naming the object, the symbol and both layers.
A MODULE layer (a shared object loaded with dlopen, e.g. libtessera_attention.so)
is read the same way from its symbol table; it links no layer, so any symbol it
takes from one is reported.

Usage: check_layers.py BUILD/layers/layers-resolved.txt [--expect N]
(each line: NAME ARCHIVE DEP_TARGET..., written by CMakeLists.txt's table).
Exits 0 when there are N upward references (default 0): the test suite also
runs it on two small archives made to have one, so the check is seen to fail.
"""
import subprocess
import sys


def nm(args, archive):
    out = subprocess.run(["nm", "-C", "--no-sort", *args, archive], check=True, capture_output=True,
                         text=True).stdout
    obj = None
    for line in out.splitlines():
        if not line.strip():
            continue
        if line.endswith(":"):
            obj = line[:-1]
            continue
        parts = line.split(None, 2)
        yield obj, parts[-1], parts[-2] if len(parts) >= 2 else "U"


def main():
    args = sys.argv[1:]
    expect = 0
    if len(args) == 3 and args[1] == "--expect":
        expect = int(args[2])
        args = args[:1]
    if len(args) != 1:
        sys.exit(__doc__)
    layers = {}
    for line in open(args[0]):
        fields = line.split()
        if fields:
            name, archive, deps = fields[0], fields[1], [d.removeprefix("tessera_") for d in fields[2:]]
            layers[name] = (archive, deps)

    def below(name, seen=None):
        seen = set() if seen is None else seen
        for d in layers[name][1]:
            if d not in seen:
                seen.add(d)
                below(d, seen)
        return seen

    defined_in = {}  # symbol -> layer
    for name, (archive, _) in layers.items():
        for _, sym, kind in nm(["-g", "--defined-only"], archive):
            # Weak and inline definitions (templates, inline functions) may be
            # emitted by every user: only strong text/data symbols place a symbol.
            if kind in "TDBR":
                defined_in.setdefault(sym, name)
    problems = []
    for name, (archive, _) in layers.items():
        allowed = below(name) | {name}
        for obj, sym, _ in nm(["-u"], archive):
            owner = defined_in.get(sym)
            if owner and owner not in allowed:
                problems.append(f"{name}: {obj} calls {sym}, defined in layer {owner}, which {name} does not link")
    problems = sorted(set(problems))
    for p in problems:
        print(p)
    print(f"{len(layers)} layers, {len(defined_in)} symbols: {len(problems)} upward references"
          + (f" (expected {expect})" if expect else ""))
    sys.exit(0 if len(problems) == expect else 1)


if __name__ == "__main__":
    main()
