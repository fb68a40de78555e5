#!/usr/bin/python3
"""Regenerates bench/PET.md: what PET (issue 19; src/pet, the `pet` pass) buys
end to end, with PET off and on in the same interleaved run, ONNX Runtime beside.

Models (bench/perf_models.py, seeded random weights): CSRNet (VGG-16 front end,
dilated back end, 512x512), Inception v3, ResNet-18, ResNeXt-50, BERT-base and
ResNet3D-18 (issue 19's six), and FCN-ResNet50 and DeepLabV3-ResNet50 at
320x320 (dilated ResNet-50 backbones: the class of model PET's D2H family
targets besides CSRNet), each at batch 1 and batch 8 (--batches), exported
once to bench/out/perf/<model>[_b8]/.

For every model and batch:
 1. Search. `tessera compile MODEL --pet --pet-mutants MODE --dump-pet -o M.tsr`
    once per mode — all (both kinds of mutants), equivalent (fully equivalent
    mutants only) and partial (partially equivalent ones only: the ablation, at
    the --ablation-batches only, batch 1 by default; other batches search all) —
    each with a PET database of its own, emptied first (bench/out/pet/cache-MODE/,
    TESSERA_CACHE_DIR), so every search starts cold. The dump gives the search's
    counts, phase times, every candidate's measured cost and the mutations
    applied (family, equivalent or partial, boxes corrected). Then the same
    compile again: the database replays the choices, and the dump's time is
    what PET costs a second compile.
 2. Timing. Workers (`tessera serve`, bench/perf_harness.py's protocol):
    PET off (`tessera compile --no-pet -o off.tsr`: an artifact too, so both
    sides load the same way), the three .tsr artifacts of step 1 (the PET
    graph as searched) and ONNX Runtime, interleaved round by round
    (perf_harness.time_workers: rotation, pause, settle). Each saves its output,
    compared with torch's (max abs difference / max |torch output|), and the PET
    outputs with PET off's.
 3. Verifier. `tessera pet-mutation-test --count 10000 --seed 1`: corrupted
    mutants, the verifier's verdicts against a brute-force comparison.

Writes bench/PET.md (--out) and every number to bench/out/pet/results.json;
bench/pet_report.py redraws PET.md from it. Run alone on a quiet machine.

Usage (from the repository root; ONNX Runtime once: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci):
    /usr/bin/python3 bench/pet_bench.py [--models a,b] [--batches 1,8] [--threads 2] [--runs 20]
                                        [--budget 60] [--tessera build/tessera] [--out bench]
    /usr/bin/python3 bench/pet_bench.py --quick --models csrnet_backend --batches 1   # smoke test
Needs what bench/perf_harness.py needs (python3-torch, python3-torchvision, node).
"""
import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import perf_harness  # noqa: E402
import perf_models  # noqa: E402
import pet_report  # noqa: E402

# the six of issue 19, then two of the class PET's D2H family targets besides CSRNet (dilated backbones)
MODELS = ["csrnet", "inception_v3", "resnet18", "resnext50_32x4d", "bert_base", "r3d_18", "fcn_resnet50",
          "deeplabv3_resnet50"]
MODES = ["all", "equivalent", "partial"]  # --pet-mutants values; "all" is PET as shipped
WORK = os.path.join(HERE, "out", "pet")
log = perf_harness.log


def search(model_dir, mode, args, tag):
    """Step 1 for one mode: a cold search, then a second compile replaying it. Returns the cell."""
    cache = os.path.join(args.work, f"cache-{mode}")
    os.makedirs(cache, exist_ok=True)
    db = os.path.join(cache, "pet.tsv")
    if os.path.exists(db):
        os.remove(db)  # cold: this model's subprograms searched afresh (the fusion profile stays)
    name = os.path.basename(model_dir)
    tsr = os.path.join(args.work, "tsr", f"{name}-{mode}.tsr")
    os.makedirs(os.path.dirname(tsr), exist_ok=True)
    env = dict(os.environ, TESSERA_CACHE_DIR=cache)
    cell = {"tsr": tsr}
    for attempt in ("first", "second"):
        cmd = [args.tessera, "compile", os.path.join(model_dir, "model.onnx"), "--pet", "--pet-mutants", mode,
               "--pet-budget", str(args.budget), "--dump-pet", "--threads", str(args.threads[-1]),
               "-o", tsr if attempt == "first" else tsr + ".again"]
        log(f"{tag} {mode}: {attempt} compile with PET")
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.load_timeout)
        wall = round(time.time() - t0, 2)
        if r.returncode != 0:
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            cell.update(status="failed", reason=f"{attempt} compile: exit {r.returncode}: {tail}",
                        command=" ".join(map(shlex.quote, cmd)))
            log(f"{tag} {mode}: failed: {cell['reason']}")
            return cell
        rep = pet_report.parse_dump(r.stderr)
        if rep is None:
            cell.update(status="failed", reason=f"{attempt} compile printed no PET report")
            return cell
        if attempt == "first":
            cell.update(status="ok", command=" ".join(map(shlex.quote, cmd)), wall_s=wall, report=rep)
            log(f"{tag} {mode}: {rep['subprograms']} subprograms, {rep['applied']} applied, "
                f"search {rep['seconds']:.1f} s (compile {wall:.1f} s)")
        else:
            # PET's whole time in the second compile (the check read back included), else the search's
            cell.update(second_wall_s=wall, second_pet_s=rep.get("pass_s", rep["seconds"]),
                        second_measured=rep["measured"])
            log(f"{tag} {mode}: second compile: PET {rep['seconds']:.2f} s, {rep['measured']} measured")
            os.remove(tsr + ".again")
    return cell


def compile_off(model_dir, args, tag):
    """PET off as a compiled artifact, like PET on's, so the two differ only in PET. Returns (path, failure)."""
    cache = os.path.join(args.work, "cache-off")
    os.makedirs(cache, exist_ok=True)
    tsr = os.path.join(args.work, "tsr", f"{os.path.basename(model_dir)}-off.tsr")
    os.makedirs(os.path.dirname(tsr), exist_ok=True)
    cmd = [args.tessera, "compile", os.path.join(model_dir, "model.onnx"), "--no-pet",
           "--threads", str(args.threads[-1]), "-o", tsr]
    log(f"{tag} off: compile without PET")
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TESSERA_CACHE_DIR=cache),
                       timeout=args.load_timeout)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{' '.join(map(shlex.quote, cmd))}: exit {r.returncode}: {tail}"
    return tsr, None


def tessera_serve(args, threads, model, inputs, cache):
    # each worker with its own cache directory: the env prefix keeps time_workers' one environment
    return ["env", f"TESSERA_CACHE_DIR={cache}", args.tessera, "serve", model, "--threads", str(threads),
            "--inputs", *inputs]


def bench(model, batch, args, env):
    d = perf_models.export_dir(perf_harness.WORK, model, batch)
    tag = f"[{model} b={batch}]"
    entry = {"search": {}, "timing": {}}
    modes = MODES if batch in args.ablation_batches else MODES[:1]
    for mode in modes:
        entry["search"][mode] = search(d, mode, args, tag)
    inputs = perf_models.input_files(d)
    off_tsr, failure = compile_off(d, args, tag)
    if failure:  # PET off is then served from the ONNX file, and the results say so
        log(f"{tag} off: compile failed, serving the ONNX model instead: {failure}")
        entry["off_compile_failure"] = failure
    for threads in args.threads:
        commands = {"off": tessera_serve(args, threads, off_tsr or os.path.join(d, "model.onnx"), inputs,
                                         os.path.join(args.work, "cache-off"))}
        for mode in modes:
            s = entry["search"][mode]
            if s.get("status") == "ok":
                commands[mode] = tessera_serve(args, threads, s["tsr"], inputs,
                                               os.path.join(args.work, f"cache-{mode}"))
        commands["ort"] = perf_harness.worker_command("ort", d, threads, args.tessera)
        cells = perf_harness.time_workers(d, threads, commands, args, env, f"{tag} t={threads}")
        pet_report.compare_outputs(d, threads, cells)
        entry["timing"][str(threads)] = cells
    return entry


def mutation_test(args):
    cmd = [args.tessera, "pet-mutation-test", "--count", str(args.mutation_count), "--seed", "1"]
    log(f"verifier: {' '.join(cmd[1:])}")
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return {"command": " ".join(map(shlex.quote, cmd)), "exit": r.returncode, "text": r.stdout.strip(),
            "stderr": r.stderr.strip()[-2000:], "wall_s": round(time.time() - t0, 2)}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: the six of issue 19 and two segmentation models)")
    ap.add_argument("--batches", default="1,8", help="comma-separated batch sizes")
    ap.add_argument("--ablation-batches", default="1", help="comma-separated batch sizes that also get the "
                    "ablation (searches restricted to one kind of mutant, timed beside); the others time PET as shipped only")
    ap.add_argument("--threads", default="2", help="comma-separated thread counts for the timing")
    ap.add_argument("--runs", type=int, default=None, help=f"timed rounds (default and minimum "
                    f"{perf_harness.MIN_RUNS}; fewer only with --quick)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60, help="--pet-budget of every search (seconds)")
    ap.add_argument("--mutation-count", type=int, default=10000, help="corrupted mutants for the verifier's test")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--out", default=HERE, help="directory for PET.md")
    ap.add_argument("--work", default=WORK, help="PET databases, artifacts and results.json")
    ap.add_argument("--quick", action="store_true", help="smoke test: fewer runs allowed (default 3); "
                    "PET.md is marked as not a valid result")
    ap.add_argument("--gap-ms", type=float, default=5)
    ap.add_argument("--settle-ms", type=float, default=250)
    ap.add_argument("--load-timeout", type=float, default=1800)
    ap.add_argument("--run-timeout", type=float, default=600)
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    for m in args.models:
        perf_models.check_name(m)
    try:
        args.batches = [int(b) for b in args.batches.split(",") if b]
        args.threads = [int(t) for t in args.threads.split(",") if t]
        args.ablation_batches = [int(b) for b in args.ablation_batches.split(",") if b]
    except ValueError:
        ap.error("--batches and --threads expect comma-separated integers")
    if not args.batches or min(args.batches) < 1 or not args.threads or min(args.threads) < 1:
        ap.error("--batches and --threads need at least one value >= 1")
    if args.runs is None:
        args.runs = 3 if args.quick else perf_harness.MIN_RUNS
    if args.runs < 1 or (args.runs < perf_harness.MIN_RUNS and not args.quick):
        ap.error(f"--runs must be at least {perf_harness.MIN_RUNS} (fewer only with --quick)")
    if args.budget <= 0 or args.mutation_count < 1:
        ap.error("--budget and --mutation-count must be positive")
    args.tessera = os.path.abspath(args.tessera)
    if not os.path.exists(args.tessera):
        ap.error(f"{args.tessera} does not exist (build first: ./test.sh or cmake --build build)")
    return args


def main():
    args = parse_args()
    import torch
    torch.set_num_threads(os.cpu_count() or 1)  # for exporting only
    for b in args.batches:
        for m in args.models:
            d = perf_models.export_dir(perf_harness.WORK, m, b)
            if not perf_models.is_exported(d):
                log(f"[{m} b={b}] exporting to {perf_harness.rel(d)}")
                perf_models.export(m, d, b)
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    command = " ".join(shlex.quote(a) for a in [sys.executable, os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": command,
               "quick": args.quick, "runs": args.runs, "budget": args.budget, "threads": args.threads,
               "batches": args.batches, "ablation_batches": args.ablation_batches, "models": args.models,
               "titles": {m: perf_models.title(m) for m in args.models},
               "machine": perf_harness.machine(), "versions": perf_harness.versions(args.tessera), "entries": {}}
    json_path = os.path.join(args.work, "results.json")
    t_start = time.time()
    results["verifier"] = mutation_test(args)
    for b in args.batches:
        for m in args.models:
            results["entries"][f"{m}@{b}"] = bench(m, b, args, env)
            with open(json_path, "w") as f:  # after every model, so an interrupted run keeps its data
                json.dump(results, f, indent=1)
    results["total_seconds"] = round(time.time() - t_start)
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
    md = pet_report.write(results, args.out)
    log(f"wrote {md} and {json_path} ({results['total_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
