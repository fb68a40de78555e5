#!/usr/bin/python3
"""ONNX Runtime column of bench/FUSION.md: writes bench/out/fusion/ort_counts.json.

For each of the eight models (bench/fusion_models.py) it
  1. exports model.onnx, the seeded inputs and torch_output.npy
     (fusion_models.py export; skip with --skip-export),
  2. optionally runs Tessera on the export with both backends and compares with
     torch (fusion_models.py check; only with --tessera PATH; writes
     bench/out/fusion/tessera_check.json),
  3. runs bench/ort_nodes.js: an onnxruntime-node session at graph optimization
     level "all" (intraOpNumThreads 2) saves <dir>/ort_optimized.onnx, runs
     once on the saved inputs and reports the max abs diff vs torch,
  4. counts the nodes of model.onnx and of ort_optimized.onnx (onnx.load,
     len(graph.node); com.microsoft ops included).

ort_counts.json maps each model name to {onnx_nodes, onnx_nodes_non_constant,
ort_nodes, ort_level, ort_max_abs_diff_vs_torch, ort_version, ...} plus op
histograms of both graphs. If ORT cannot save the "all" level, the next lower
level that it can save is recorded in ort_level (and the failure in
ort_failed_levels).

Setup, once (onnxruntime-node is pinned in bench/package.json; only the npm
registry is needed; the CPU binaries ship inside the npm package, the skip
just avoids the CUDA download of its install script):
    cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci
Regenerate (from the repository root; about a minute on 2 cores):
    /usr/bin/python3 bench/fusion_ort.py [--tessera build/tessera] [--models a,b]

Needs Debian's python3-torch, python3-torchvision and python3-onnx (hence
/usr/bin/python3) and node; not a CI dependency.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fusion_models as fm  # noqa: E402


def run_ort(model_path, level, threads):
    cmd = ["node", os.path.join(HERE, "ort_nodes.js"), "--level", level, "--threads", str(threads), model_path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": f"ort_nodes.js exited {r.returncode}: {(r.stderr or r.stdout).strip()[-2000:]}"}
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(fm.MODELS))
    ap.add_argument("--skip-export", action="store_true", help="reuse bench/out/fusion/<name>/model.onnx")
    ap.add_argument("--level", default="all", choices=["all", "extended", "basic"])
    ap.add_argument("--ort-threads", type=int, default=2)
    ap.add_argument("--tessera", default=None, help="also check this tessera binary against torch")
    ap.add_argument("--tessera-threads", type=int, default=1)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        sys.exit("onnxruntime-node is missing: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci")

    out_path = os.path.join(fm.OUT, "ort_counts.json")
    counts = {}
    if os.path.exists(out_path):
        with open(out_path) as f:
            counts = json.load(f)
    ok = True
    for name in args.models.split(","):
        entry = {}
        model_path = os.path.join(fm.OUT, name, "model.onnx")
        if not args.skip_export:
            import torch
            torch.set_num_threads(1)
            t0 = time.time()
            fm.export(name)
            entry["export_seconds"] = round(time.time() - t0, 1)
        if args.tessera:
            for backend in ("reference", "compiled"):
                row = fm.check(name, args.tessera, backend, args.tessera_threads)
                print(f"[{name}] tessera {backend}: {row['status']} {row.get('max_abs_diff', row.get('error', ''))}",
                      flush=True)
                ok &= row["status"] == "ok"
                fm.record_checks([row])
        t0 = time.time()
        ort = run_ort(model_path, args.level, args.ort_threads)
        entry["ort_seconds"] = round(time.time() - t0, 1)
        src = fm.node_stats(model_path)
        entry.update(onnx_nodes=src["nodes"],
                     onnx_nodes_non_constant=src["nodes"] - src["ops"].get("Constant", 0))
        if "error" in ort and "level" not in ort:
            entry.update(ort_nodes=None, ort_level=None, ort_error=ort["error"],
                         ort_failed_levels=ort.get("failed_levels"))
            ok = False
        else:
            opt = fm.node_stats(ort["optimized"])
            entry.update(ort_nodes=opt["nodes"], ort_level=ort["level"],
                         ort_max_abs_diff_vs_torch=ort.get("max_abs_diff"),
                         ort_max_abs_torch=ort.get("max_abs_torch"),
                         ort_version=ort["ort_version"], ort_session_ms=ort["session_ms"], ort_run_ms=ort["run_ms"])
            if ort.get("failed_levels"):
                entry["ort_failed_levels"] = ort["failed_levels"]
            if ort.get("error"):
                entry["ort_error"] = ort["error"]
                ok = False
            entry["ort_ops"] = opt["ops"]
        entry["onnx_ops"] = src["ops"]
        counts[name] = entry
        print(f"[{name}] onnx {entry['onnx_nodes']} nodes -> ORT {entry['ort_level']} {entry['ort_nodes']} nodes, "
              f"max|ORT - torch| {entry.get('ort_max_abs_diff_vs_torch')}", flush=True)
        with open(out_path, "w") as f:
            json.dump({k: counts[k] for k in sorted(counts, key=lambda k: fm.MODELS.index(k)
                                                    if k in fm.MODELS else len(fm.MODELS))}, f, indent=1)
    print(f"wrote {out_path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
