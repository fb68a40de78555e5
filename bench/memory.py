#!/usr/bin/env python3
"""Resident memory after load: Tessera beside ONNX Runtime (issue 22, "Memory").

For each model, in a process of its own:
  Tessera   `tessera run MODEL --report`: VmRSS and VmHWM once the model is
            loaded and its plan compiled (before any run), the peak activation
            arena and the weights line of the report (held, released, packed).
  ONNX Runtime  onnxruntime-node: VmRSS and VmHWM right after
            InferenceSession.create (graph optimizations on, CPU provider).
The weights' size is what `tessera info` counts (every constant of the loaded
model, after the load pipeline; the ONNX initializers' bytes). Each runtime's
own baseline (Tessera: LLVM and its code; ORT: node and V8) is measured with
a one-node model and printed, and the ratio is also given without it.

Usage:
  python3 bench/memory.py [--tessera build/tessera] [--threads 2]
                          [--node-modules /work/main/bench/node_modules] [MODEL.onnx ...]
Default models: bench/out/perf/{resnet50,bert_base,vit_b_16}/model.onnx of this
checkout, else of /work/main.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

ORT_SCRIPT = r"""
const ort = require('onnxruntime-node');
const fs = require('fs');
function status(key) {
  const m = fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp('^' + key + ':\\s+(\\d+) kB', 'm'));
  return m ? Number(m[1]) * 1024 : -1;
}
(async () => {
  await ort.InferenceSession.create(process.argv[1], {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all',
    intraOpNumThreads: Number(process.argv[2]), interOpNumThreads: 1, executionMode: 'sequential',
    logSeverityLevel: 3,
  });
  console.log('rss ' + status('VmRSS') + ' hwm ' + status('VmHWM'));
})().catch(e => { console.log('error ' + String(e.message || e).split('\n')[0]); process.exit(1); });
"""


def parse_bytes(text):
    number, unit = text.split()
    return float(number) * UNITS[unit]


def mib(n):
    return "n/a" if n is None else f"{n / (1 << 20):.1f}"


def tessera_memory(tessera, model, threads):
    out = subprocess.run([tessera, "run", model, "--report", "--threads", str(threads)], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"after load and compile: RSS ([\d.]+ \w+), peak RSS ([\d.]+ \w+)", out)
    act = re.search(r"peak activations ([\d.]+ \w+)", out)
    weights = re.search(r"^weights: constants ([\d.]+ \w+)(.*)$", out, re.M)
    packed = re.search(r"^  packed ([\d.]+ \w+, held once.*)$", out, re.M)
    return {
        "rss": parse_bytes(m.group(1)), "hwm": parse_bytes(m.group(2)),
        "activations": parse_bytes(act.group(1)) if act else 0.0,
        "held": parse_bytes(weights.group(1)) if weights else 0.0,
        "weights_line": (weights.group(0)[len("weights: "):] if weights else "") +
                        ("; packed " + packed.group(1) if packed else ""),
    }


def weight_bytes(tessera, model):
    out = subprocess.run([tessera, "info", model], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"\((\d+) bytes of constants\)", out).group(1))


def ort_memory(node_modules, model, threads):
    if not node_modules or not os.path.isdir(os.path.join(node_modules, "onnxruntime-node")):
        return None
    env = dict(os.environ, NODE_PATH=node_modules)
    r = subprocess.run(["node", "-e", ORT_SCRIPT, model, str(threads)], capture_output=True, text=True, env=env)
    m = re.search(r"rss (\d+) hwm (\d+)", r.stdout)
    if not m:
        print(f"  ONNX Runtime failed on {model}: {r.stdout.strip() or r.stderr.strip()[:200]}", file=sys.stderr)
        return None
    return {"rss": float(m.group(1)), "hwm": float(m.group(2))}


def tiny_model(tessera, directory):
    """The baseline's model: the one-node Relu of the ONNX conformance data (../shared),
    else SqueezeNet 1.1 (5 MB of weights) exported from the zoo."""
    for root in (os.path.join(HERE, "..", "..", "shared"), "/work/shared"):
        p = os.path.join(root, "onnx-backend-tests", "node", "test_relu", "model.onnx")
        if os.path.exists(p):
            return p
    p = os.path.join(directory, "squeezenet.onnx")
    subprocess.run([tessera, "export-zoo", "squeezenet1_1", "-o", p], check=True, capture_output=True)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--tessera", default=os.path.join(HERE, "..", "build", "tessera"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--node-modules", default=next((d for d in (os.path.join(HERE, "node_modules"),
                                                               "/work/main/bench/node_modules") if os.path.isdir(d)), ""))
    args = ap.parse_args()
    models = args.models
    if not models:
        for name in ("resnet50", "bert_base", "vit_b_16"):
            for root in (os.path.join(HERE, "out", "perf"), "/work/main/bench/out/perf"):
                p = os.path.join(root, name, "model.onnx")
                if os.path.exists(p):
                    models.append(p)
                    break
    with tempfile.TemporaryDirectory() as tmp:
        tiny = tiny_model(args.tessera, tmp)
        base = tessera_memory(args.tessera, tiny, args.threads)
        ort_base = ort_memory(args.node_modules, tiny, args.threads)
    print(f"baseline (one-node model {os.path.basename(os.path.dirname(tiny))}): Tessera RSS {mib(base['rss'])} MiB"
          f" (peak {mib(base['hwm'])}), ONNX Runtime RSS {mib(ort_base and ort_base['rss'])} MiB"
          f" (peak {mib(ort_base and ort_base['hwm'])})\n")
    head = ("model", "weights W", "after passes", "activ. A", "RSS", "peak RSS", "RSS/(W+A)", "(RSS-base)/(W+A)",
            "ORT RSS", "ORT peak", "ORT RSS/(W+A)")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    notes = []
    for model in models:
        name = os.path.basename(os.path.dirname(os.path.abspath(model))) or model
        w = weight_bytes(args.tessera, model)
        t = tessera_memory(args.tessera, model, args.threads)
        o = ort_memory(args.node_modules, model, args.threads)
        wa = w + t["activations"]
        row = (name, mib(w), mib(t["held"]), mib(t["activations"]), mib(t["rss"]), mib(t["hwm"]), f"{t['rss'] / wa:.2f}x",
               f"{(t['rss'] - base['rss']) / wa:.2f}x", mib(o and o["rss"]), mib(o and o["hwm"]),
               f"{o['rss'] / wa:.2f}x" if o else "n/a")
        print("| " + " | ".join(row) + " |")
        notes.append(f"{name}: {t['weights_line']}")
    print("\nMiB. W: the weights, every constant of the loaded model (`tessera info`); after passes: the"
          " constants the compiled runtime keeps once its target passes ran (Winograd's 6x6 tiles of 3x3"
          " weights are 4x larger); A: Tessera's peak activations. RSS and peak RSS (VmRSS, VmHWM) after"
          " load and compile, before any run; ONNX Runtime's right after InferenceSession.create.")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
