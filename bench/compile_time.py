#!/usr/bin/env python3
"""Compile time of models, two builds side by side (bench/COMPILE.md).

For each model, runs `BIN compile MODEL -o OUT.tsr --threads T` for every
build in turn, round after round (the order rotated each round), and takes
each build's median over the rounds of: load (import and graph passes),
compile (fusion planning, tasks, kernels, packing) and their sum, as the CLI
prints them. Every build reads the same fusion profiling database (a copy of
the one given, or a fresh one measured in a warm-up round), so profile cells
are looked up, not measured, in the timed rounds.

usage: compile_time.py --build NAME=BIN [--build NAME=BIN ...] [--models zoo:resnet50,...]
                       [--threads 2] [--rounds 5] [--out bench/COMPILE.md]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

DEFAULT_MODELS = "zoo:resnet50,zoo:bert_base,zoo:vit_b_16"


def run_once(binary: str, model: str, threads: int, env: dict, out: str) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([binary, "compile", model, "-o", out, "--threads", str(threads)], env=env,
                       capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - t0) * 1000
    load = float(re.search(r"^load\s+([\d.]+) ms", p.stdout, re.M).group(1))
    comp = float(re.search(r"^compile\s+([\d.]+) ms", p.stdout, re.M).group(1))
    return {"load": load, "compile": comp, "total": load + comp, "process": wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="NAME=path/to/tessera")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="bench/COMPILE.md")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    models = args.models.split(",")
    work = Path(tempfile.mkdtemp(prefix="tessera-compile-time-"))
    env = dict(os.environ, TESSERA_CACHE_DIR=str(work / "cache"))
    results = {(m, name): [] for m in models for name, _ in builds}
    for m in models:  # warm-up: fills the profiling database once, for every build
        for name, binary in builds:
            run_once(binary, m, args.threads, env, str(work / "warm.tsr"))
    for r in range(args.rounds):
        for m in models:
            order = builds[r % len(builds):] + builds[:r % len(builds)]
            for name, binary in order:
                results[(m, name)].append(run_once(binary, m, args.threads, env, str(work / "x.tsr")))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    shutil.rmtree(work, ignore_errors=True)

    base = builds[0][0]
    lines = ["# Compile time", "",
             f"`/usr/bin/python3 bench/compile_time.py {' '.join('--build ' + n + '=' + b for n, b in builds)} "
             f"--models {args.models} --threads {args.threads} --rounds {args.rounds}`", "",
             f"`tessera compile MODEL -o X.tsr --threads {args.threads}`, builds interleaved round by round, "
             f"medians of {args.rounds} rounds (ms); load = import and graph passes, compile = fusion planning, "
             "tasks, kernels and weight packing, as the CLI prints them; the fusion profiling database warm for all.",
             "", "| model | build | load | compile | load + compile | process | vs " + base + " |",
             "|---|---|---|---|---|---|---|"]
    for m in models:
        ref = statistics.median(x["total"] for x in results[(m, base)])
        for name, _ in builds:
            xs = results[(m, name)]
            med = {k: statistics.median(x[k] for x in xs) for k in ("load", "compile", "total", "process")}
            lines.append(f"| {m} | {name} | {med['load']:.0f} | {med['compile']:.0f} | {med['total']:.0f} | "
                         f"{med['process']:.0f} | {ref / med['total']:.2f}x faster |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
