#!/usr/bin/python3
"""Regenerates bench/API.md: Tessera driven through its Python module beside
ONNX Runtime, in one interleaved run of worker processes (bench/perf_harness.py's).

1. Per-call overhead: a model of one Add of 16 floats (y = a + b, f32[16]),
   where a call's time is nearly all the API's. Three workers, one thread each:
     tessera-py   tessera.InferenceSession(...).run(None, feed) from Python (bench/perf_worker.py)
     ort          onnxruntime-node's session.run(feeds), awaited (bench/ort_worker.js)
     tessera      `tessera serve`: CompiledModel::run from C++, no API layer (the floor)
   Every round each worker, in a rotated order after the others have gone
   quiet, times --calls single calls ("run N": one clock reading around each
   call) and then --calls back-to-back calls ("callers 1 N": one clock reading
   around the loop). Reported: the median of all single-call times, and the
   median over rounds of the loops' mean time per call.
2. Module vs serve: a few of bench/RESULTS.md's models (the exports of
   bench/perf_models.py) timed by perf_harness.time_workers with tessera
   (serve), tessera-py and ort in the same rounds: their medians should agree
   within noise, the module adding only its per-call overhead.

Usage (from the repository root, after the build; once: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci):
    /usr/bin/python3 bench/api_bench.py [--rounds 30] [--calls 2000] [--models resnet18,mobilenet_v2,bert_base]
                                        [--threads 1] [--runs 60] [--tessera build/tessera]
    /usr/bin/python3 bench/api_bench.py --skip-models        # part 1 only
    /usr/bin/python3 bench/api_bench.py --redraw             # API.md again from results.json
Missing model exports are written first (needs Debian's python3-torch and
python3-torchvision, as perf_harness.py). Writes bench/API.md (--out) and
every sample to bench/out/api/results.json. Not a CI dependency.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import onnx_proto  # noqa: E402  (the tests' protobuf writer: the tiny model needs no onnx package)
import perf_harness  # noqa: E402
import perf_models  # noqa: E402
from perf_harness import Worker, WorkerError, log, rel, settle  # noqa: E402

WORK = os.path.join(HERE, "out", "api")
OVERHEAD_RUNTIMES = ["tessera-py", "ort", "tessera"]
MODEL_RUNTIMES = ["tessera", "tessera-py", "ort"]
LABELS = {"tessera-py": "Tessera, Python module", "ort": "ONNX Runtime, Node binding",
          "tessera": "Tessera, `tessera serve` (C++)"}


def write_add_model(d):
    """d/model.onnx (y = a + b over f32[16]) and its inputs, in the layout of a perf_models export."""
    import numpy as np
    os.makedirs(d, exist_ok=True)
    f16 = [onnx_proto.value_info(n, np.float32, [16]) for n in ("a", "b")]
    model = onnx_proto.model([onnx_proto.node("Add", ["a", "b"], ["y"])], f16,
                             [onnx_proto.value_info("y", np.float32, [16])], name="add16")
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model)
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, 16).astype(np.float32) for _ in range(2))
    np.save(os.path.join(d, "input_0.npy"), a)
    np.save(os.path.join(d, "input_1.npy"), b)
    return a + b


def overhead(args, env):
    """Part 1: {runtime: cell} with the samples of every round."""
    import numpy as np
    d = os.path.join(args.work, "add16")
    want = write_add_model(d)
    logs = os.path.join(d, "logs")
    os.makedirs(logs, exist_ok=True)
    cells, workers = {}, {}
    tag = "[add16]"

    def fail(rt, e):
        cells[rt].update(status="failed", reason=str(e))
        log(f"{tag} {rt}: failed: {e}")
        w = workers.pop(rt, None)
        if w:
            w.close()
    try:
        for rt in OVERHEAD_RUNTIMES:
            cmd = perf_harness.worker_command(rt, d, 1, args.tessera)
            cells[rt] = {"status": "ok", "command": " ".join(cmd), "single_us": [], "loop_us": []}
            try:
                workers[rt] = Worker(cmd, env, os.path.join(logs, f"{rt}.log"))
                workers[rt].reply(args.load_timeout, before_ready=True)
                workers[rt].request(f"callers 1 {args.calls}", args.run_timeout)  # warm-up
            except (OSError, WorkerError) as e:
                fail(rt, e)
        for r in range(args.rounds):
            order = list(workers)
            order = order[r % len(order):] + order[:r % len(order)]
            for rt in order:
                try:
                    settle([w.proc.pid for o, w in workers.items() if o != rt], 0.25)
                    line = workers[rt].request(f"run {args.calls}", args.run_timeout)
                    cells[rt]["single_us"] += [float(t) * 1e3 for t in line.split()[1:]]
                    settle([w.proc.pid for o, w in workers.items() if o != rt], 0.25)
                    line = workers[rt].request(f"callers 1 {args.calls}", args.run_timeout)
                    cells[rt]["loop_us"].append(float(line.split()[1]) * 1e3 / args.calls)
                except WorkerError as e:
                    fail(rt, e)
            if workers and (r == 0 or (r + 1) % 10 == 0):
                log(f"{tag} round {r + 1}/{args.rounds}: per-call medians so far (us) " + ", ".join(
                    f"{rt} {statistics.median(cells[rt]['single_us']):.2f}/"
                    f"{statistics.median(cells[rt]['loop_us']):.2f}" for rt in workers))
        for rt in list(workers):  # each computed a + b
            out = os.path.join(d, "outputs", rt)
            try:
                workers[rt].request(f"save {out}", args.run_timeout)
                cells[rt]["output_equal"] = bool(np.array_equal(np.load(os.path.join(out, "output_0.npy")), want))
            except WorkerError as e:
                fail(rt, e)
    finally:
        for w in workers.values():
            w.close()
    for c in cells.values():
        if c["single_us"]:
            c["single_median_us"] = statistics.median(c["single_us"])
            c["single_p90_us"] = sorted(c["single_us"])[int(0.9 * (len(c["single_us"]) - 1))]
            c["loop_median_us"] = statistics.median(c["loop_us"])
    return cells


def versions(tessera):
    v = {}
    r = subprocess.run(["node", os.path.join(HERE, "ort_worker.js"), "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench/ort_worker.js cannot load onnxruntime-node:\n{r.stderr.strip()[-600:]}\n"
                 "Set it up once with: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci")
    v["onnxruntime"] = r.stdout.strip()
    v["node"] = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    v["tessera"] = f"{rel(tessera)} (source {r.stdout.strip() or '?'})"
    r = subprocess.run([sys.executable, "-c", "import numpy; print(numpy.__version__)"], capture_output=True,
                       text=True)
    v["numpy"] = r.stdout.strip()
    return v


def fmt(v):
    return "—" if v is None else f"{v:.2f}" if v < 100 else f"{v:.0f}"


def markdown(res):
    mach, ver = res["machine"], res["versions"]
    o = res["overhead"]
    lines = ["# Tessera's Python module beside ONNX Runtime", "",
             f"Regenerated by `{res['command']}` on {res['date']} ({res['total_seconds']} s). "
             f"{mach['cpu']}, {mach['cores']} cores ({mach['isa']}); ONNX Runtime {ver['onnxruntime']} in node "
             f"{ver['node']}; Python {mach['python']}, numpy {ver['numpy']}; Tessera {ver['tessera']}. "
             f"Load average (1 min) {res['load_before'][0]:.2f} before, {res['load_after'][0]:.2f} after.", "",
             ("Other jobs ran beside the benchmark (a load average above 1.5 before or after, on 2 cores): "
              "the numbers are indicative, the ratios between runtimes measured in the same rounds more so "
              "than the absolute times." if max(res['load_before'][0], res['load_after'][0]) > 1.5 else
              "Nothing else ran beside the benchmark (load average at most 1.5, on 2 cores)."), "",
             "## Per-call overhead: one Add of 16 floats", "",
             f"y = a + b over f32[16], one thread, each runtime in its own worker process; {res['rounds']} rounds, "
             f"the order rotated from round to round, each runtime timing {res['calls']} single calls "
             f"(a clock reading around each) and then {res['calls']} back-to-back calls (one reading around the "
             "loop) after the others have gone quiet. A call is the API's whole round trip: Python "
             "`session.run(None, {'a': a, 'b': b})` returning a list of new numpy arrays; node "
             "`await session.run(feeds)` returning new tensors; `tessera serve`'s `CompiledModel::run` in C++, "
             "no API layer (its back-to-back loop runs on a thread started for the request, so that column "
             "also holds the thread's start and its first run's setup, spread over the calls).", "",
             "| runtime | median of single calls, µs | p90, µs | back-to-back mean per call (median over rounds), µs "
             "| output = a + b |", "|---|---|---|---|---|"]
    for rt in OVERHEAD_RUNTIMES:
        c = o.get(rt, {})
        if c.get("status") != "ok":
            lines.append(f"| {LABELS[rt]} | failed: {c.get('reason', 'not run')} | | | |")
            continue
        lines.append(f"| {LABELS[rt]} | {fmt(c['single_median_us'])} | {fmt(c['single_p90_us'])} | "
                     f"{fmt(c['loop_median_us'])} | {'yes' if c.get('output_equal') else 'NO'} |")
    py, ort, cpp = o.get("tessera-py", {}), o.get("ort", {}), o.get("tessera", {})
    if "single_median_us" in py and "single_median_us" in ort:
        lines += ["", f"Tessera's Python call / ONNX Runtime's Node call: "
                  f"**{py['single_median_us'] / ort['single_median_us']:.2f}×** (single calls), "
                  f"**{py['loop_median_us'] / ort['loop_median_us']:.2f}×** (back to back)."]
        if "single_median_us" in cpp:
            lines[-1] += (f" Of the Python call, {cpp['single_median_us']:.2f} µs is the C++ run; the module "
                          f"(argument conversion, the GIL released and taken again, new numpy outputs) adds "
                          f"{py['single_median_us'] - cpp['single_median_us']:.2f} µs.")
    if res.get("models"):
        lines += ["", "## Module vs `tessera serve` on benchmark models", "",
                  f"bench/perf_harness.py's `time_workers` on its exports (batch 1, seeded weights), "
                  f"{res['model_threads']} thread(s): {res['runs']} rounds after {res['warmup']} warm-up runs, "
                  "the three workers interleaved in an order shuffled each round, each output compared with torch's. "
                  "Medians, and module / serve of the medians and of the fastest runs (on a loaded machine a "
                  "run that shares its core with another job's is slower by whole time slices; the fastest "
                  "runs are the ones that did not).", "",
                  "| model | " + " | ".join(f"{LABELS[rt]} ms" for rt in MODEL_RUNTIMES) +
                  " | module / serve, medians | module / serve, fastest | max abs diff vs torch (module) |",
                  "|---|---|---|---|---|---|---|"]
        for m, cells in res["models"].items():
            row = [perf_models.title(m)]
            for rt in MODEL_RUNTIMES:
                c = cells.get(rt, {})
                row.append(fmt(c["median_ms"]) if c.get("status") == "ok" and "median_ms" in c
                           else f"{c.get('status', 'failed')}: {c.get('reason', '')}")
            t, p = cells.get("tessera", {}), cells.get("tessera-py", {})
            both = "median_ms" in t and "median_ms" in p
            row.append(f"{p['median_ms'] / t['median_ms']:.3f}" if both else "—")
            row.append(f"{min(p['samples']) / min(t['samples']):.3f}" if both else "—")
            row.append(f"{p['max_abs_diff']:.2g}" if "max_abs_diff" in p else p.get("diff_error", "—"))
            lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"Every sample is in {res.get('work', 'bench/out/api')}/results.json.", ""]
    return "\n".join(lines)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30, help="rounds of the per-call overhead (default 30)")
    ap.add_argument("--calls", type=int, default=2000, help="calls per runtime per round, of each kind")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert_base",
                    help="bench/perf_models.py models for the module-vs-serve medians")
    ap.add_argument("--skip-models", action="store_true", help="per-call overhead only")
    ap.add_argument("--redraw", action="store_true", help="write API.md from --work's results.json, run nothing")
    ap.add_argument("--threads", type=int, default=1, help="threads of the model runs")
    ap.add_argument("--runs", type=int, default=60, help="timed rounds per model (default 60)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"),
                    help="the CLI; its build's python/ directory holds the module")
    ap.add_argument("--out", default=HERE, help="directory for API.md")
    ap.add_argument("--work", default=WORK, help="the tiny model, outputs, logs and results.json")
    ap.add_argument("--exports", default=perf_harness.WORK, help="perf_harness.py's exports (reused)")
    ap.add_argument("--load-timeout", type=float, default=1800)
    ap.add_argument("--run-timeout", type=float, default=600)
    args = ap.parse_args()
    if args.rounds < 3 or args.calls < 100 or args.runs < 3 or args.threads < 1:
        ap.error("needs --rounds >= 3, --calls >= 100, --runs >= 3, --threads >= 1")
    args.models = [] if args.skip_models else [m for m in args.models.split(",") if m]
    for m in args.models:
        perf_models.check_name(m)
    args.tessera = os.path.abspath(args.tessera)
    if not os.path.exists(args.tessera):
        ap.error(f"{args.tessera} does not exist (build first, or pass --tessera)")
    # time_workers' settings, as perf_harness.py's defaults
    args.gap_ms, args.settle_ms = 5, 250
    return args


def write_report(res, out_dir):
    md = markdown(res)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "API.md")
    with open(path, "w") as f:
        f.write(md)
    log(f"wrote {rel(path)}")
    return md


def main():
    args = parse_args()
    if args.redraw:
        with open(os.path.join(args.work, "results.json")) as f:
            write_report(json.load(f), args.out)
        return 0
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env["TESSERA_CACHE_DIR"] = os.path.join(args.work, "cache")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.makedirs(args.work, exist_ok=True)
    res = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
           "command": " ".join([sys.executable, os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
           "rounds": args.rounds, "calls": args.calls, "model_threads": args.threads, "runs": args.runs,
           "warmup": args.warmup, "machine": perf_harness.machine(), "versions": versions(args.tessera),
           "work": rel(os.path.abspath(args.work)), "load_before": os.getloadavg()}
    t0 = time.time()
    res["overhead"] = overhead(args, env)
    res["models"] = {}
    for m in args.models:
        d = perf_models.export_dir(args.exports, m)
        if not perf_models.is_exported(d):
            log(f"[{m}] exporting to {rel(d)}")
            perf_models.export(m, d)
        commands = {rt: perf_harness.worker_command(rt, d, args.threads, args.tessera) for rt in MODEL_RUNTIMES}
        res["models"][m] = perf_harness.time_workers(d, args.threads, commands, args, env,
                                                     f"[{m} t={args.threads}]")
        for cell in res["models"][m].values():
            cell.pop("settle_ms", None)
    res["load_after"] = os.getloadavg()
    res["total_seconds"] = round(time.time() - t0)
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(write_report(res, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
