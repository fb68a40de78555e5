#!/usr/bin/python3
"""Exports torchvision models with torch.onnx.export and checks that Tessera's
outputs match torch's.

Weights are torchvision's random initialisation under a fixed seed (no
download is possible here); inputs are seeded random images. For each model
the script writes bench/out/torchvision/<name>/{model.onnx,input_0.npy,
torch_output.npy}, runs `tessera run` on them and reports the largest
difference relative to the largest output magnitude, and the largest
element-wise relative difference over elements of non-negligible size.

Needs Debian's python3-torch and python3-torchvision (not a CI dependency).
Usage: bench/torchvision_check.py [--tessera build/tessera] [--models a,b] [--backend reference]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision

MODELS = {
    "resnet50": (torchvision.models.resnet50, 224),
    "mobilenet_v2": (torchvision.models.mobilenet_v2, 224),
    "inception_v3": (torchvision.models.inception_v3, 299),
    "efficientnet_b0": (torchvision.models.efficientnet_b0, 224),
}
TOLERANCE = 1e-4


def export(name, out_dir):
    ctor, size = MODELS[name]
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=True)
    model = ctor(**kwargs).eval()
    x = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (1, 3, size, size)).astype(np.float32))
    with torch.no_grad():
        y = model(x).numpy()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    torch.onnx.export(model, x, path, opset_version=13, input_names=["input"], output_names=["logits"])
    np.save(os.path.join(out_dir, "input_0.npy"), x.numpy())
    np.save(os.path.join(out_dir, "torch_output.npy"), y)
    return path, y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--tessera", default=os.path.join(root, "build", "tessera"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--backend", default=None, help="passed to tessera run --backend")
    ap.add_argument("--out", default=os.path.join(root, "bench", "out", "torchvision"))
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    rows, ok = [], True
    for name in args.models.split(","):
        d = os.path.join(args.out, name)
        print(f"[{name}] exporting from torchvision ...", flush=True)
        path, want = export(name, d)
        cmd = [args.tessera, "run", path, "--inputs", os.path.join(d, "input_0.npy"), "--outputs", d, "--npy"]
        if args.backend:
            cmd += ["--backend", args.backend]
        print(f"[{name}] running tessera ...", flush=True)
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.time() - t0
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            rows.append((name, "FAILED", "-", "-", f"{secs:.1f}"))
            ok = False
            continue
        got = np.load(os.path.join(d, "output_0.npy"))
        scale = float(np.abs(want).max())
        max_diff = float(np.abs(got - want).max())
        rel_to_max = max_diff / scale
        big = np.abs(want) > 1e-2 * scale
        elem_rel = float((np.abs(got - want)[big] / np.abs(want)[big]).max())
        passed = got.shape == want.shape and rel_to_max <= TOLERANCE
        ok &= passed
        rows.append((name, "ok" if passed else "MISMATCH", f"{rel_to_max:.2e}", f"{elem_rel:.2e}", f"{secs:.1f}"))
    print("\n| model | result | max diff / max abs | max elementwise rel (|ref| > 1% of max) | tessera run (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
