"""bench/TUNING.md and bench/tuning.png: what the auto-tuner buys, against tuning time.

For every model, ISA and search (measurement-only, `--cost-model none`; the
static model, `--cost-model static`), one `tessera tune` run with a fixed
budget writes its records; the records carry their timestamps, so the model
"as tuned after t minutes" is the model compiled with the records written in
the first t minutes; the last checkpoint also has the verdicts of the
tuner's model guard, which times the whole model after the budget and drops
choices that do not make it faster (src/tune/model_guard.h). Each checkpoint's model and the untuned one are then
timed side by side: `tessera serve` processes, all loaded at once, asked for
one run each round in rotating order (bench/perf_harness.py's Worker and
settle), medians over the rounds. Outputs are compared with torch's (an
independent peer) and with the untuned model's.

Models: ResNet-50, MobileNetV2 and BERT-base as bench/RESULTS.md exports them
(bench/perf_models.py), and three the default rules were not written for:
torchvision's ResNet3D-18 (3-D convolutions, 8 frames of 64x64), ResNet-18
on 197x197 images (odd image sizes all the way down) and RegNetY-400MF (odd
channel counts, 48 to 440, grouped convolutions of 8 channels a group,
squeeze-and-excitation).

    /usr/bin/python3 bench/tuning_bench.py [--budget-minutes 2] [--isas avx512 avx2]
        [--models ...] [--rounds 15] [--skip-tune] [--tessera build/tessera]

The static model's coefficients are fitted first, per ISA, on records of
other models (measurement-only runs of --train-models, `tessera tune-fit`),
and judged on the candidates the measurement-only runs of the models above
measured (models it was not fitted on): bench/out/tuning/static_model.md.
Needs scripts/install-bench-deps.sh (torch, torchvision, matplotlib).
"""
import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import fusion_models  # noqa: E402
import fusion_torch_models as ftm  # noqa: E402
import perf_models  # noqa: E402
from perf_harness import Worker, log, settle  # noqa: E402

OUT = os.path.join(ROOT, "bench", "out", "tuning")
MODELS = {  # name -> title
    "resnet50": "ResNet-50",
    "mobilenet_v2": "MobileNetV2",
    "bert_base": "BERT-base (seq 128)",
    "r3d_18": "ResNet3D-18 (8x64x64)",
    "resnet18_197": "ResNet-18 at 197x197",
    "regnet_y_400mf": "RegNetY-400MF",
}
MODES = {"none": "measurement only", "static": "static model"}


def export_extra(name, d):
    """The models RESULTS.md does not have, exported like its models."""
    import numpy as np
    import torch
    import torchvision

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(1)
    if name == "r3d_18":
        model = torchvision.models.video.r3d_18(weights=None)
        shape = (1, 3, 8, 64, 64)
    elif name == "regnet_y_400mf":
        model = torchvision.models.regnet_y_400mf(weights=None)
        shape = (1, 3, 224, 224)
    else:
        model = torchvision.models.resnet18(weights=None)
        shape = (1, 3, 197, 197)
    ftm.randomize_norms(model, gen)
    x = torch.from_numpy(rng.uniform(-1, 1, shape).astype(np.float32))
    fusion_models.save_export(model.eval(), [x], ["input"], d)


def model_dir(name):
    if name in perf_models.MODELS:
        d = os.path.join(ROOT, "bench", "out", "perf", name)
        if not perf_models.is_exported(d):
            log(f"exporting {name}")
            perf_models.export(name, d)
        return d
    d = os.path.join(OUT, "models", name)
    if not os.path.exists(os.path.join(d, "torch_output.npy")):
        log(f"exporting {name}")
        export_extra(name, d)
    return d


def model_path(name):
    return name if name.startswith("zoo:") else os.path.join(model_dir(name), "model.onnx")


def tune(args, name, isa, mode, prefix="", minutes=None, extra=(), out=OUT):
    """One tuning run (`--cost-model mode`, then the `extra` arguments) with its
    files in `out`; returns its records path and start time (Unix seconds)."""
    os.makedirs(out, exist_ok=True)
    records = os.path.join(out, f"{prefix}{name.replace('zoo:', '')}-{isa}-{mode}.jsonl")
    meta_path = records + ".json"
    if args.skip_tune and os.path.exists(meta_path):
        with open(meta_path) as f:
            return records, json.load(f)["start"]
    if os.path.exists(records):
        os.remove(records)
    cmd = [args.tessera, "tune", model_path(name), "--records", records,
           "--budget-minutes", str(minutes or args.budget_minutes), "--cost-model", mode, "--isa", isa,
           "--threads", str(args.threads), "--final-runs", "0"]
    if mode == "static":
        cmd += ["--coefficients", coefficients_path()]
    cmd += list(extra)
    log(f"tuning {name} {isa} {mode}: {' '.join(cmd)}")
    start = time.time()
    with open(records + ".log", "w") as logf:
        subprocess.run(cmd, check=True, stdout=logf, stderr=subprocess.STDOUT)
    with open(meta_path, "w") as f:
        json.dump({"start": start, "seconds": time.time() - start, "command": cmd}, f)
    return records, start


def coefficients_path():
    return os.path.join(OUT, "static_model.json")


def dataset_features(args, isa):
    """The static features of the cost-model dataset's records of
    --train-dataset-networks on this ISA and --threads (`tune-fit
    --dump-features`, once: kept in OUT); their --features flags."""
    flags = []
    if not args.train_dataset:
        return flags
    for net in args.train_dataset_networks:
        path = os.path.join(OUT, f"dataset-features.{net}.{isa}.t{args.threads}.jsonl")
        if not os.path.exists(path):
            found = sorted(glob.glob(os.path.join(args.train_dataset, f"{net}_b1_*", "model.onnx")))
            if not found:
                sys.exit(f"tuning_bench: no {net} in the dataset {args.train_dataset} (restore it: README, "
                         "'Cost-model dataset'; or --train-dataset none)")
            cmd = [args.tessera, "tune-fit", found[0], "--records", os.path.join(args.train_dataset, "all.jsonl"),
                   "--isa", isa, "--threads", str(args.threads), "--coefficients", os.path.join(OUT, "dump.json"),
                   "--dump-features", path + ".part"]
            log(" ".join(cmd))
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            os.replace(path + ".part", path)
        flags += ["--features", path]
    return flags


def tessera_fit(args, isa, models, records, judge, extra=()):
    """tessera tune-fit on `records` (one file per model, concatenated) and
    the `extra` arguments; returns its report."""
    merged = os.path.join(OUT, f"{'judge' if judge else 'train'}-{isa}-records.jsonl")
    with open(merged, "w") as out:
        for r in records:
            with open(r) as f:
                out.write(f.read())
    cmd = [args.tessera, "tune-fit", *[model_path(m) for m in models], "--records", merged, "--isa", isa,
           "--threads", str(args.threads), "--coefficients", coefficients_path(), *extra] + (["--judge"] if judge else [])
    log(" ".join(cmd))
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def fit_static_model(args, isa):
    """Measurement-only runs of the training models, then the fit; returns tune-fit's report."""
    records = [tune(args, m, isa, "none", prefix="train-", minutes=args.train_minutes)[0] for m in args.train_models]
    return tessera_fit(args, isa, args.train_models, records, judge=False, extra=dataset_features(args, isa))


def records_until(records, start, minutes, path, everything=False):
    """Writes the records of the first `minutes` of a run to `path` (all of
    them with `everything`: the model guard's verdicts come after the budget)."""
    with open(records) as f, open(path, "w") as out:
        for line in f:
            if line.strip() and (everything or json.loads(line)["timestamp"] <= start + minutes * 60):
                out.write(line)
    return path


def rel_diff(a, b):
    import numpy as np
    a, b = a.astype(np.float64), b.astype(np.float64)
    if a.shape != b.shape:
        return math.inf
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-30))


def evaluate(args, name, isa, runs, out=OUT):
    """Times the untuned model and every checkpoint of every run, interleaved
    (the workers' files in `out`/eval); returns their cells."""
    import numpy as np
    d = model_dir(name)
    want = np.load(os.path.join(d, "torch_output.npy"))
    work = os.path.join(out, "eval", f"{name}-{isa}")
    os.makedirs(work, exist_ok=True)
    checkpoints = [args.budget_minutes * (k + 1) / args.checkpoints for k in range(args.checkpoints)]
    variants = {"default": None}
    for mode, (records, start) in runs.items():
        for c in checkpoints:
            variants[f"{mode}@{c:g}"] = records_until(records, start, c, os.path.join(work, f"{mode}-{c:g}.jsonl"),
                                                      everything=(c == checkpoints[-1]))
    base = [args.tessera, "serve", os.path.join(d, "model.onnx"), "--threads", str(args.threads), "--isa", isa,
            "--inputs", *perf_models.input_files(d)]
    cells, workers = {}, {}
    try:
        for v, rec in variants.items():
            cmd = base + (["--records", rec] if rec else [])
            workers[v] = Worker(cmd, None, os.path.join(work, f"{v}.log"))
            workers[v].reply(1800, before_ready=True)
            workers[v].request("run 2", 600)  # warm-up
            cells[v] = {"samples": []}
        for r in range(args.rounds):
            order = list(workers)
            order = order[r % len(order):] + order[:r % len(order)]
            for v in order:
                settle([w.proc.pid for o, w in workers.items() if o != v], 0.5)
                cells[v]["samples"].append(float(workers[v].request("run 1", 600).split()[1]))
        for v, w in workers.items():
            out_dir = os.path.join(work, "outputs", v)
            w.request(f"save {out_dir}", 600)
            cells[v]["output"] = np.load(os.path.join(out_dir, "output_0.npy"))
    finally:
        for w in workers.values():
            w.close()
    result = {}
    for v, c in cells.items():
        result[v] = {"median_ms": statistics.median(c["samples"]), "samples": c["samples"],
                     "rel_diff_torch": rel_diff(c["output"], want),
                     "rel_diff_default": rel_diff(c["output"], cells["default"]["output"])}
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--isas", nargs="+", default=["avx512", "avx2"])
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    p.add_argument("--budget-minutes", type=float, default=2)
    p.add_argument("--checkpoints", type=int, default=4, help="points of the curve (equal shares of the budget)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--train-models", nargs="+", default=["zoo:squeezenet1_1", "zoo:resnet18", "zoo:gpt2_tiny"],
                   help="models whose measured candidates fit the static model")
    p.add_argument("--train-minutes", type=float, default=3)
    p.add_argument("--train-dataset", default=os.path.join(ROOT, "bench", "out", "dataset"),
                   help="the static model is also fitted on this cost-model dataset's records of "
                        "--train-dataset-networks (default bench/out/dataset; none: not)")
    p.add_argument("--train-dataset-networks", nargs="+", default=["squeezenet1_1", "resnet18"],
                   help="the dataset's networks fitted on (none of the judged models)")
    p.add_argument("--skip-tune", action="store_true", help="reuse the records of earlier runs")
    args = p.parse_args()
    if args.train_dataset == "none":
        args.train_dataset = None
    os.makedirs(OUT, exist_ok=True)
    results_path = os.path.join(OUT, "results.json")
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    results = {"commit": commit, "budget_minutes": args.budget_minutes, "threads": args.threads, "rounds": args.rounds,
               "checkpoints": args.checkpoints, "coefficients": coefficients_path(), "cells": {}}
    report = ["## The static model", "",
              f"Fitted per ISA on the measured candidates of {', '.join(args.train_models)} "
              f"({args.train_minutes:g}-minute measurement-only runs)"
              + (f" and the cost-model dataset's random schedules of {', '.join(args.train_dataset_networks)} "
                 f"({args.threads}-thread records)" if args.train_dataset else "") + " (half of each task's "
              "candidates fitted on, "
              "judged on the other half), then judged on every candidate the measurement-only runs above "
              "measured (models it was not fitted on). Pairwise comparison accuracy and peak scores as TenSet "
              "defines them.", ""]
    for isa in args.isas:
        fit = fit_static_model(args, isa)
        none_records = []
        for name in args.models:
            runs = {mode: tune(args, name, isa, mode) for mode in args.modes}
            if "none" in runs:
                none_records.append(runs["none"][0])
            log(f"timing {name} {isa}")
            results["cells"][f"{name}/{isa}"] = evaluate(args, name, isa, runs)
            with open(results_path, "w") as f:
                json.dump(results, f, indent=1)
        judged = tessera_fit(args, isa, args.models, none_records, judge=True) if none_records else ""
        report += [f"### {isa}", "", "Fit (`tessera tune-fit`):", "", "```", fit.strip(), "```", "",
                   "Judged on the models above:", "", "```", judged.strip(), "```", ""]
        with open(os.path.join(OUT, "static_model.md"), "w") as f:
            f.write("\n".join(report))
    import tuning_report
    tuning_report.write(results, os.path.join(ROOT, "bench"))


if __name__ == "__main__":
    main()
