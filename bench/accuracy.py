"""Output error of Tessera and ONNX Runtime on the models of bench/RESULTS.md.

For every model (exported by bench/perf_models.py, the same files and inputs as
RESULTS.md), the outputs of
  - Tessera (compiled, default passes), and with --no-winograd,
  - ONNX Runtime (bench/ort_worker.js, graph optimizations "all"),
  - torch in float32 (the exported reference output)
are compared with torch's model evaluated in float64 on the same weights and
inputs (the closest thing to the exact result), and with torch float32 (the
comparison the issues ask for). Errors are max |output - reference| over
max |reference|. Prints a Markdown table; --json writes the numbers.

    /usr/bin/python3 bench/accuracy.py [--models resnet18 vgg16 ...] [--threads 2] [--json FILE]

Needs scripts/install-bench-deps.sh (torch, torchvision, onnxruntime-node).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import perf_models  # noqa: E402


def relative_error(out, ref):
    out = np.asarray(out, dtype=np.float64).reshape(ref.shape)
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def tessera_output(exe, d, threads, extra, out_dir):
    inputs = sorted(glob.glob(os.path.join(d, "input_*.npy")))
    r = subprocess.run([exe, "run", os.path.join(d, "model.onnx"), "--inputs", *inputs, "--outputs", out_dir, "--npy",
                        "--threads", str(threads), *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tessera run failed: {r.stderr.strip()[-300:]}")
    return np.load(os.path.join(out_dir, "output_0.npy"))


def ort_output(d, threads, out_dir):
    r = subprocess.run(["node", os.path.join(HERE, "ort_worker.js"), "--model-dir", d, "--threads", str(threads)],
                       input=f"save {out_dir}\nquit\n", capture_output=True, text=True)
    path = os.path.join(out_dir, "output_0.npy")
    if not os.path.exists(path):
        raise RuntimeError(f"onnxruntime failed: {(r.stdout + r.stderr).strip()[-300:]}")
    return np.load(path)


def float64_output(name):
    import torch

    model, inputs, _ = perf_models.build(name)
    with torch.no_grad():
        y = model.double()(*[x.double() for x in inputs])
    return (y[0] if isinstance(y, (tuple, list)) else y).numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(perf_models.MODELS), choices=list(perf_models.MODELS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    p.add_argument("--json", help="also write the numbers here")
    a = p.parse_args()
    rows = []
    print("| model | Tessera | Tessera --no-winograd | ONNX Runtime | torch float32 | Tessera / ORT |")
    print("|---|---:|---:|---:|---:|---:|")
    print("| (error against torch in float64) | | | | | |")
    for name in a.models:
        d = os.path.join(ROOT, "bench", "out", "perf", name)
        if not perf_models.is_exported(d):
            perf_models.export(name, d)
        exact = float64_output(name)
        torch32 = np.load(os.path.join(d, "torch_output.npy"))
        with tempfile.TemporaryDirectory() as tmp:
            outs = {
                "tessera": tessera_output(a.tessera, d, a.threads, [], os.path.join(tmp, "t")),
                "no_winograd": tessera_output(a.tessera, d, a.threads, ["--no-winograd"], os.path.join(tmp, "n")),
                "ort": ort_output(d, a.threads, os.path.join(tmp, "o")),
            }
        row = {"model": name, "vs_float64": {k: relative_error(v, exact) for k, v in outs.items()},
               "vs_torch32": {k: relative_error(v, torch32.astype(np.float64)) for k, v in outs.items()}}
        row["vs_float64"]["torch32"] = relative_error(torch32, exact)
        rows.append(row)
        e = row["vs_float64"]
        print(f"| {perf_models.MODELS[name][0]} | {e['tessera']:.2e} | {e['no_winograd']:.2e} | {e['ort']:.2e} | "
              f"{e['torch32']:.2e} | {e['tessera'] / e['ort']:.2f} |", flush=True)
    print("| (error against torch in float32) | | | | | |")
    for row in rows:
        e = row["vs_torch32"]
        print(f"| {perf_models.MODELS[row['model']][0]} | {e['tessera']:.2e} | {e['no_winograd']:.2e} | "
              f"{e['ort']:.2e} | - | {e['tessera'] / e['ort']:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
