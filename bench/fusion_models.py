#!/usr/bin/python3
"""Exports the eight models of bench/FUSION.md to ONNX and checks them.

Models: bert_base, gpt2, vit_b_16, efficientnet_b0, mobilenet_v2, resnet50,
yolo, unet (gpt2, yolo and unet are defined in bench/fusion_torch_models.py).
Weights are random (torchvision's / torch's initialisation under seed 0;
nothing can be downloaded here), except that every LayerNorm/BatchNorm gets
random affine terms and statistics, every all-zero parameter small random
values, and BERT's deep-copied layers their own N(0, 0.02) weights:
torch.onnx.export merges initialisers of equal value behind Identity nodes,
which would distort node counts. Batch 1, opset 13, constant folding on. For
each model the script writes bench/out/fusion/<name>/{model.onnx, input_0.npy
[, input_1.npy ...], torch_output.npy}.

Needs Debian's python3-torch, python3-torchvision and python3-onnx, so run it
with /usr/bin/python3 (the pyenv python3 on PATH has no torch). It is not a
CI dependency.

Subcommands:
  export [--models a,b]                 write the ONNX files, inputs and torch outputs
  check  [--tessera PATH] [--models a,b] [--backend reference|compiled|both] [--threads N]
                                        run `tessera run` on each export and compare with torch
                                        (writes bench/out/fusion/tessera_check.json)
  nodes  FILE.onnx ...                  print node counts and op histograms as JSON

bench/fusion_ort.py drives `export`, bench/ort_nodes.js and `nodes` for the
ONNX Runtime column.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench", "out", "fusion")
MODELS = ["bert_base", "gpt2", "vit_b_16", "efficientnet_b0", "mobilenet_v2", "resnet50", "yolo", "unet"]
OPSET = 13
YOLO_SIZE = 320


def build(name):
    """Returns (model in eval mode, list of example inputs, input names)."""
    import numpy as np
    import torch
    import torchvision
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fusion_torch_models as ftm

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gen = torch.Generator().manual_seed(1)

    def image(size):
        return torch.from_numpy(rng.uniform(-1, 1, (1, 3, size, size)).astype(np.float32))

    if name == "bert_base":
        layer = torch.nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.1,
                                                 activation="gelu", layer_norm_eps=1e-12, batch_first=True)
        # enable_nested_tensor=False and (see export()) tracing with grad enabled keep torch 1.13
        # off its fused _transformer_encoder_layer_fwd fast path, which ONNX export cannot handle
        model = torch.nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
        ftm.reinit_linears(model, gen)
        ftm.randomize_norms(model, gen)
        x = torch.from_numpy(rng.standard_normal((1, 128, 768)).astype(np.float32))
        return model.eval(), [x], ["hidden_states"]
    if name == "gpt2":
        model = ftm.GPT2()
        ftm.randomize_norms(model, gen)
        ids = torch.from_numpy(rng.integers(0, ftm.GPT2Config.vocab, (1, ftm.GPT2Config.seq), dtype=np.int64))
        return model.eval(), [ids], ["input_ids"]
    if name in ("vit_b_16", "efficientnet_b0", "mobilenet_v2", "resnet50"):
        model = getattr(torchvision.models, name)(weights=None)
        ftm.randomize_norms(model, gen)
        return model.eval(), [image(224)], ["input"]
    if name == "yolo":
        model = ftm.YOLO(image_size=YOLO_SIZE)
        ftm.randomize_norms(model, gen)
        return model.eval(), [image(YOLO_SIZE)], ["images"]
    if name == "unet":
        model = ftm.UNet()
        ftm.randomize_norms(model, gen)
        return model.eval(), [image(256)], ["input"]
    raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")


def save_export(model, inputs, input_names, d):
    """Writes d/model.onnx (opset 13, constant folding), d/input_i.npy and
    d/torch_output.npy (the model's output on those inputs); returns (path, output)."""
    import numpy as np
    import torch

    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    # Grad stays enabled on purpose: torch 1.13's TransformerEncoderLayer and MultiheadAttention
    # take their fused (non-exportable) fast paths only when no parameter needs grad.
    with torch.enable_grad():
        y = model(*inputs).detach().numpy()
        torch.onnx.export(model, tuple(inputs), path, opset_version=OPSET, do_constant_folding=True,
                          input_names=input_names, output_names=["output"])
    for i, x in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), x.numpy())
    np.save(os.path.join(d, "torch_output.npy"), y)
    return path, y


def export(name, out_root=OUT):
    model, inputs, input_names = build(name)
    return save_export(model, inputs, input_names, os.path.join(out_root, name))[0]


def node_stats(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    hist = collections.Counter((n.domain or "ai.onnx") + "::" + n.op_type if n.domain not in ("", "ai.onnx")
                               else n.op_type for n in m.graph.node)
    return {"path": path, "nodes": len(m.graph.node), "initializers": len(m.graph.initializer),
            "ops": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))}


def inputs_of(d):
    files, i = [], 0
    while os.path.exists(os.path.join(d, f"input_{i}.npy")):
        files.append(os.path.join(d, f"input_{i}.npy"))
        i += 1
    return files


def check(name, tessera, backend, threads, out_root=OUT):
    import numpy as np
    d = os.path.join(out_root, name)
    out_dir = os.path.join(d, f"tessera_{backend}")
    os.makedirs(out_dir, exist_ok=True)
    cmd = [tessera, "run", os.path.join(d, "model.onnx"), "--inputs", *inputs_of(d),
           "--outputs", out_dir, "--npy", "--backend", backend, "--threads", str(threads)]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:  # e.g. the binary is being relinked
        return {"model": name, "backend": backend, "seconds": 0, "command": " ".join(cmd),
                "status": "FAILED", "error": f"cannot start {tessera}: {e}"}
    secs = time.time() - t0
    row = {"model": name, "backend": backend, "seconds": round(secs, 2), "command": " ".join(cmd)}
    if r.returncode != 0:
        row.update(status="FAILED", returncode=r.returncode, error=(r.stderr.strip() or r.stdout.strip())[-4000:])
        return row
    want = np.load(os.path.join(d, "torch_output.npy"))
    got = np.load(os.path.join(out_dir, "output_0.npy"))
    if got.shape != want.shape:
        row.update(status="SHAPE MISMATCH", shape=list(got.shape), torch_shape=list(want.shape))
        return row
    diff = float(np.abs(got.astype(np.float64) - want).max())
    row.update(status="ok", max_abs_diff=diff, max_abs_torch=float(np.abs(want).max()),
               rel_to_max=diff / max(float(np.abs(want).max()), 1e-30), stdout=r.stdout.strip()[-2000:])
    return row


def record_checks(rows, out_root=OUT):
    """Merges check() rows into <out_root>/tessera_check.json (keyed by model and backend)."""
    path = os.path.join(out_root, "tessera_check.json")
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = {(r["model"], r["backend"]): r for r in json.load(f)}
    old.update({(r["model"], r["backend"]): r for r in rows})
    with open(path, "w") as f:
        json.dump(list(old.values()), f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--models", default=",".join(MODELS))
    e.add_argument("--torch-threads", type=int, default=1)
    c = sub.add_parser("check")
    c.add_argument("--models", default=",".join(MODELS))
    c.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    c.add_argument("--backend", default="both", choices=["reference", "compiled", "both"])
    c.add_argument("--threads", type=int, default=1, help="passed to tessera run --threads")
    n = sub.add_parser("nodes")
    n.add_argument("files", nargs="+")
    args = ap.parse_args()

    if args.cmd == "export":
        import torch
        torch.set_num_threads(args.torch_threads)
        for name in args.models.split(","):
            t0 = time.time()
            path = export(name)
            st = node_stats(path)
            print(f"[{name}] {path}: {st['nodes']} nodes, {time.time() - t0:.1f}s", flush=True)
            if st["ops"].get("Identity"):
                print(f"[{name}] warning: {st['ops']['Identity']} Identity nodes (deduplicated initialisers?)")
        return 0
    if args.cmd == "check":
        backends = ["reference", "compiled"] if args.backend == "both" else [args.backend]
        rows = []
        for name in args.models.split(","):
            for b in backends:
                row = check(name, args.tessera, b, args.threads)
                rows.append(row)
                extra = (f"max|diff| {row['max_abs_diff']:.3e} (rel to max {row['rel_to_max']:.2e})"
                         if row["status"] == "ok" else row.get("error", ""))
                print(f"[{name}/{b}] {row['status']} {row['seconds']}s {extra}", flush=True)
        record_checks(rows)
        return 0 if all(r["status"] == "ok" for r in rows) else 1
    if args.cmd == "nodes":
        print(json.dumps([node_stats(p) for p in args.files], indent=1))
        return 0


if __name__ == "__main__":
    sys.exit(main())
