#!/usr/bin/python3
"""Regenerates bench/FUSION.md: Tessera's fusion (DNNFusion) on eight models
beside the node count of ONNX Runtime's optimized graph.

For each model of bench/fusion_models.py (exported to bench/out/fusion/ by
bench/fusion_ort.py, which also writes the ONNX Runtime counts):
  - `tessera compile MODEL --dump-fusion`: ops the fusion planner sees (after
    constant folding and the graph passes), kernels after fusion, fused
    blocks, intermediate-result bytes before and after;
  - `tessera bench MODEL --vs-no-fusion`: fusion on and off compiled side by
    side, timed round by round on the same inputs (medians), and the largest
    difference between their outputs;
  - ops in the ONNX file (without Constant nodes) and ONNX Runtime's optimized
    node count (level "all") from bench/out/fusion/ort_counts.json.
The fusion rate is ONNX ops / Tessera kernels.

Usage (from the repository root; ONNX Runtime's counts are made first when
missing, which needs `cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci` once):
    /usr/bin/python3 bench/fusion_report.py [--tessera build/tessera] [--threads 2] [--runs 20]
Needs Debian's python3-torch, python3-torchvision, python3-onnx and node; not
a CI dependency. The fusion profiling database is kept in
bench/out/fusion/cache so runs do not depend on the user's cache.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out", "fusion")
MODELS = ["bert_base", "gpt2", "vit_b_16", "efficientnet_b0", "mobilenet_v2", "resnet50", "yolo", "unet"]
TITLES = {
    "bert_base": "BERT-base (12 layers, seq 128)",
    "gpt2": "GPT-2-style decoder (6 layers, seq 64)",
    "vit_b_16": "ViT-B/16",
    "efficientnet_b0": "EfficientNet-B0",
    "mobilenet_v2": "MobileNetV2",
    "resnet50": "ResNet-50",
    "yolo": "YOLOv5s-style detector (320x320)",
    "unet": "U-Net (256x256)",
}


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def fusion_of(tessera, model, threads, env):
    out = run([tessera, "compile", model, "-o", os.path.join(OUT, "tmp.tsr"), "--dump-fusion",
               "--threads", str(threads)], env)
    m = re.search(r"fusion: (\d+) ops -> (\d+) kernels \(rate [\d.]+\), (\d+) fused blocks; "
                  r"intermediate results ([\d.]+) MiB -> ([\d.]+) MiB", out)
    if not m:
        sys.exit(f"no fusion summary for {model}:\n{out}")
    ref = re.search(r"\((\d+) compiled kernels, (\d+) reference steps\)", out)
    return {"ops": int(m.group(1)), "kernels": int(m.group(2)), "fused_blocks": int(m.group(3)),
            "mib_before": float(m.group(4)), "mib_after": float(m.group(5)),
            "reference_steps": int(ref.group(2)) if ref else None}


def latency_of(tessera, model, threads, runs, env):
    out = run([tessera, "bench", model, "--vs-no-fusion", "--threads", str(threads), "--runs", str(runs),
               "--warmup", "3"], env)
    on = re.search(r"fusion on\s+median ([\d.]+) (ms|us|s)", out)
    off = re.search(r"fusion off\s+median ([\d.]+) (ms|us|s)", out)
    diff = re.search(r"outputs max \|on - off\| (\S+) \(largest \|output\| (\S+)\)", out)
    if not (on and off and diff):
        sys.exit(f"no fusion comparison for {model}:\n{out}")
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return {"on_ms": float(on.group(1)) * scale[on.group(2)], "off_ms": float(off.group(1)) * scale[off.group(2)],
            "max_diff": float(diff.group(1)), "max_out": float(diff.group(2))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    models = args.models.split(",")
    counts_path = os.path.join(OUT, "ort_counts.json")
    if not os.path.exists(counts_path) or any(not os.path.exists(os.path.join(OUT, m, "model.onnx")) for m in models):
        subprocess.run([sys.executable, os.path.join(HERE, "fusion_ort.py"), "--models", ",".join(models)], check=True)
    ort = json.load(open(counts_path))
    env = dict(os.environ, TESSERA_CACHE_DIR=os.path.join(OUT, "cache"))
    rows = []
    for name in models:
        model = os.path.join(OUT, name, "model.onnx")
        print(f"{name}: fusion plan", flush=True)
        f = fusion_of(args.tessera, model, args.threads, env)
        print(f"{name}: fusion on/off latency", flush=True)
        lat = latency_of(args.tessera, model, args.threads, args.runs, env)
        o = ort[name]
        rows.append((name, f, lat, o))

    lines = [
        "# Fusion (DNNFusion) against ONNX Runtime's optimized graphs",
        "",
        f"Regenerated by `/usr/bin/python3 bench/fusion_report.py` on {datetime.date.today()}, "
        f"{args.threads} threads, {args.runs} timed runs each (medians, fusion on and off alternating run by run "
        "on the same seeded inputs).",
        "",
        "- *ONNX ops*: nodes of the exported file (opset 13, torch.onnx.export with constant folding), "
        "Constant nodes not counted. *Planner ops*: the nodes the fusion planner sees after Tessera's "
        "constant folding, BatchNorm folding and rewriting.",
        "- *Kernels*: steps of Tessera's compiled plan, one per fused block. *Rate*: ONNX ops / kernels "
        "(DNNFusion reports 976 → 216, 4.5, on its BERT-base).",
        "- *ORT nodes*: nodes of the graph ONNX Runtime (onnxruntime-node "
        f"{rows[0][3].get('ort_version', '?')}) saves at optimization level \"all\" "
        "(optimizedModelFilePath), com.microsoft fused ops included.",
        "- *Intermediates*: bytes of every value passed between kernels (not graph outputs), without fusion "
        "and with it.",
        "- *Max diff*: largest |fused − unfused| over the outputs (both compiled, same inputs), beside the "
        "largest output magnitude.",
        "",
        "| model | ONNX ops | planner ops | kernels | rate | ORT nodes | fewer than ORT | intermediates (MiB) "
        "| fused ms | unfused ms | speedup | max diff (max |out|) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, f, lat, o in rows:
        onnx_ops = o["onnx_nodes_non_constant"]
        lines.append(
            f"| {TITLES[name]} | {onnx_ops} | {f['ops']} | {f['kernels']} | {onnx_ops / f['kernels']:.2f} "
            f"| {o['ort_nodes']} | {'yes' if f['kernels'] < o['ort_nodes'] else '**no**'} "
            f"| {f['mib_before']:.1f} → {f['mib_after']:.1f} | {lat['on_ms']:.2f} | {lat['off_ms']:.2f} "
            f"| {lat['off_ms'] / lat['on_ms']:.2f}× | {lat['max_diff']:.2g} ({lat['max_out']:.3g}) |")
    lines += ["", "Blocks per model: `build/tessera compile bench/out/fusion/<model>/model.onnx -o /tmp/m.tsr "
              "--dump-fusion`; picture: `build/tessera viz bench/out/fusion/<model>/model.onnx --fusion -o plan.svg`.", ""]
    path = os.path.join(HERE, "FUSION.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    json.dump({n: {"fusion": f, "latency": lat} for n, f, lat, _ in rows}, open(os.path.join(OUT, "fusion_report.json"), "w"),
              indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
