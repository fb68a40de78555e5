#!/usr/bin/env python3
"""Resident memory after load: Tessera beside ONNX Runtime (issue 22, "Memory").

For each model, each in a process of its own:
  Tessera from ONNX   `tessera run MODEL.onnx --report`: VmRSS and VmHWM (the
                      peak) once the model is loaded and its plan compiled,
                      before any run; the peak activation arena; the weights
                      line of the report (held, released, packed).
  Tessera from .tsr   the same for `tessera run MODEL.tsr` (made by `tessera
                      compile`): the artifact's weights are mapped, its
                      machine code linked, nothing optimized.
  ONNX Runtime        onnxruntime-node: VmRSS and VmHWM right after
                      InferenceSession.create (graph optimizations on).
W, the weights, is what `tessera info` counts (every constant of the loaded
model); A is Tessera's peak activations. The process baseline is the
runtime's, not the model's (the binary, libLLVM's pages, protobuf, the heap):
it is measured on a one-node model, from ONNX and from its .tsr, and
subtracted from RSS and peak alike: the criterion of issue 22 is
(RSS - baseline) / (W + A) and (peak - baseline) / (W + A) at most 1.3.

Usage:
  python3 bench/memory.py [--tessera build/tessera] [--threads 2]
                          [--node-modules /work/main/bench/node_modules] [MODEL.onnx ...]
Default models: bench/out/perf/{resnet50,bert_base,vit_b_16}/model.onnx of this
checkout, else of /work/main. bench/reliability.py's memory section calls
measure() and table() below.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
CRITERION = 1.3

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
    """RSS and peak after load and compile (before any run) of `tessera run MODEL --report`."""
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


def compile_tsr(tessera, model, path, threads):
    subprocess.run([tessera, "compile", model, "-o", path, "--threads", str(threads)], check=True,
                   capture_output=True)
    return path


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


def default_node_modules():
    return next((d for d in (os.path.join(HERE, "node_modules"), "/work/main/bench/node_modules")
                 if os.path.isdir(d)), "")


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


def model_name(model):
    return os.path.basename(os.path.dirname(os.path.abspath(model))) or model


def measure(tessera, models, threads=2, node_modules=None, progress=None):
    """Every number of the tables: {'base': {...}, 'models': [{...}, ...]}."""
    node_modules = default_node_modules() if node_modules is None else node_modules
    with tempfile.TemporaryDirectory() as tmp:
        tiny = tiny_model(tessera, tmp)
        base = {"name": os.path.basename(os.path.dirname(tiny)),
                "onnx": tessera_memory(tessera, tiny, threads),
                "tsr": tessera_memory(tessera, compile_tsr(tessera, tiny, os.path.join(tmp, "base.tsr"), threads),
                                      threads),
                "ort": ort_memory(node_modules, tiny, threads)}
        rows = []
        for model in models:
            name = model_name(model)
            if progress:
                progress(name)
            tsr = compile_tsr(tessera, model, os.path.join(tmp, name + ".tsr"), threads)
            rows.append({"name": name, "weights": weight_bytes(tessera, model),
                         "onnx": tessera_memory(tessera, model, threads),
                         "tsr": tessera_memory(tessera, tsr, threads),
                         "ort": ort_memory(node_modules, model, threads)})
            os.remove(tsr)
    return {"base": base, "models": rows}


def ratio(value, base, wa):
    return (value - base) / wa


def table(result, names=None):
    """Markdown lines: the baselines, then per model and load path RSS and peak with
    and without the baseline against W + A, and ONNX Runtime's."""
    names = names or {}
    b = result["base"]
    ort_b = b["ort"]
    out = [f"Process baseline (one-node model `{b['name']}`): Tessera from ONNX RSS {mib(b['onnx']['rss'])} MiB, "
           f"peak {mib(b['onnx']['hwm'])}; from .tsr RSS {mib(b['tsr']['rss'])}, peak {mib(b['tsr']['hwm'])}; "
           f"ONNX Runtime RSS {mib(ort_b and ort_b['rss'])}, peak {mib(ort_b and ort_b['hwm'])}.", "",
           "| model | W | A | load | RSS | peak | (RSS - base) / (W + A) | (peak - base) / (W + A) | "
           "RSS / (W + A) | ONNX Runtime RSS (peak) | ORT (RSS - base) / (W + A) |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["models"]:
        wa = r["weights"] + r["onnx"]["activations"]
        o = r["ort"]
        for path in ("onnx", "tsr"):
            t, base = r[path], b[path]
            rr, pr = ratio(t["rss"], base["rss"], wa), ratio(t["hwm"], base["hwm"], wa)
            mark = lambda x: f"**{x:.2f}**" if x <= CRITERION else f"{x:.2f} (above {CRITERION})"  # noqa: E731
            ort_cells = (f"{mib(o['rss'])} ({mib(o['hwm'])})", f"{ratio(o['rss'], ort_b['rss'], wa):.2f}") \
                if (o and ort_b and path == "onnx") else ("", "")
            out.append(f"| {names.get(r['name'], r['name']) if path == 'onnx' else ''} | "
                       f"{mib(r['weights']) if path == 'onnx' else ''} | "
                       f"{mib(r['onnx']['activations']) if path == 'onnx' else ''} | {'ONNX' if path == 'onnx' else '.tsr'} | "
                       f"{mib(t['rss'])} | {mib(t['hwm'])} | {mark(rr)} | {mark(pr)} | {t['rss'] / wa:.2f} | "
                       f"{ort_cells[0]} | {ort_cells[1]} |")
    out += ["", "MiB. W: the weights, every constant of the loaded model (`tessera info`); A: Tessera's peak "
            "activations. RSS and peak (VmRSS, VmHWM) after load and compile, before any run; base: the same "
            "load path's baseline above. ONNX Runtime's right after InferenceSession.create, its baseline its "
            "one-node session's. Weights as the compiled runtime keeps them:"]
    for r in result["models"]:
        out.append(f"- {r['name']} from ONNX: {r['onnx']['weights_line']}; from .tsr: {r['tsr']['weights_line']}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--tessera", default=os.path.join(HERE, "..", "build", "tessera"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--node-modules", default=None)
    args = ap.parse_args()
    models = args.models
    if not models:
        for name in ("resnet50", "bert_base", "vit_b_16"):
            for root in (os.path.join(HERE, "out", "perf"), "/work/main/bench/out/perf"):
                p = os.path.join(root, name, "model.onnx")
                if os.path.exists(p):
                    models.append(p)
                    break
    result = measure(args.tessera, models, args.threads, args.node_modules,
                     progress=lambda n: print(f"memory: {n} ...", file=sys.stderr, flush=True))
    print("\n".join(table(result)))


if __name__ == "__main__":
    main()
