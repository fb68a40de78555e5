#!/usr/bin/env python3
"""Hashes of a binary's outputs, bit for bit, for the golden-output test.

Runs `BIN run MODEL --isa ISA --threads 2 --outputs DIR --npy` (seeded random
inputs, seed 0) for every model and ISA given, and prints one line per output:
`MODEL ISA INDEX DTYPE DIMS FNV1A64` where the hash covers the output's raw
bytes. tests/golden/zoo_outputs.txt was made this way from a build of the
commit it names; the GoldenOutputs test computes the same hashes in process
and compares. Regenerate it only when outputs are meant to change.

usage: outputs_hash.py BIN MODEL[,MODEL...] ISA[,ISA...]
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def fnv1a64(data: bytes) -> int:
    h = 1469598103934665603
    for b in data:
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def main() -> None:
    binary, models, isas = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    for model in models:
        for isa in isas:
            with tempfile.TemporaryDirectory() as d:
                subprocess.run([binary, "run", model, "--isa", isa, "--threads", "2", "--outputs", d, "--npy"],
                               check=True, stdout=subprocess.DEVNULL)
                i = 0
                while (Path(d) / f"output_{i}.npy").exists():
                    a = np.load(Path(d) / f"output_{i}.npy")
                    dims = "x".join(str(x) for x in a.shape) or "scalar"
                    h = fnv1a64(np.ascontiguousarray(a).tobytes())
                    print(f"{model} {isa} {i} {a.dtype} {dims} {h:016x}", flush=True)
                    i += 1


if __name__ == "__main__":
    main()
