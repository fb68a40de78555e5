#!/usr/bin/python3
"""The torchvision zoo benchmark (issue 23): Tessera beside ONNX Runtime (and
torch eager) on every model of bench/zoo_models.py, at batch 1 and 8, 1 and 2
threads; writes bench/out/zoo/results.json, then bench/ZOO.md and bench/zoo.png
(bench/zoo_report.py).

Every cell (model, batch, threads) is measured two ways:
- interleaved: bench/perf_harness.py's time_workers, unchanged -- one worker
  process per runtime (`tessera serve`, bench/ort_worker.js, bench/perf_worker.py
  --runtime torch), loaded one after another, warmed up, then --runs rounds
  in a seeded shuffled order with a pause and a settle wait before each run;
- separately, each runtime in a process of its own as a user's script would
  time it (load, warm up, time back to back, nothing else running from this
  harness): `tessera bench model.onnx --threads T --runs R --warmup W`, and
  bench/ort_bench.js for ONNX Runtime. torch has no separate-process timing.
Every runtime's outputs (all of them, e.g. every feature map of a detection
backbone) from the interleaved workers are compared with torch's at export:
the cell's accuracy is the largest max|diff| / max|torch output| over the
outputs, passing at <= 1e-4. A model that fails to export, load or run is a
row with the error, never left out.
For every cell whose Tessera / ONNX Runtime ratio (interleaved or separate)
is above 1, the profiles: `tessera bench --profile 15` (the slowest steps and
the time per op type) and ONNX Runtime's own profiler (bench/ort_bench.js
--profile: the session's trace, summed per node), each in a run of its own.

Resumable: results.json keeps every cell; a rerun skips the cells it has
(--force redoes them; cells of a --quick run are redone by a run without
--quick). Exports are made once per (model, batch), each in a process of its
own (bench/zoo_models.py export), cached under bench/out/zoo/<model>_b<B>/;
a failed export is recorded there and not tried again without --reexport.

Usage (from the repository root; once: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci):
    /usr/bin/python3 bench/zoo.py                      # everything: all models, batch 1 and 8, 1 and 2 threads
    /usr/bin/python3 bench/zoo.py --models resnet18,family:video --batches 1 --threads 2
    /usr/bin/python3 bench/zoo.py --quick --models squeezenet1_1 --work /tmp/z --out /tmp/z
    /usr/bin/python3 bench/zoo_report.py               # redraw ZOO.md and zoo.png from results.json
Options: --models (names or family:F, comma-separated; default all), --batches, --threads,
--runs (default 10, at least 10 unless --quick), --warmup, --quick (3 runs, 1 warm-up; marked),
--force, --reexport, --runtimes (default tessera,ort,torch), --no-profile, --profile-above R (default 1),
--tessera, --work, --out.
Progress lines on stderr: cell i/N, elapsed and the remaining time estimated from the models'
GFLOPs, scaled by how the finished cells compared with their estimate.
Needs Debian's python3-torch, python3-torchvision, python3-numpy (python3-matplotlib for the
chart) and node; not a CI dependency. tests/bench/test_zoo.py runs it --quick end to end.
"""
import argparse
import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import perf_harness  # noqa: E402
import zoo_models  # noqa: E402
import zoo_report  # noqa: E402

WORK = os.path.join(HERE, "out", "zoo")
RUNTIMES = ("tessera", "ort", "torch")
TOLERANCE = 1e-4
MIN_RUNS = 10
log = perf_harness.log


def cell_key(model, batch, threads):
    return f"{model}|b{batch}|t{threads}"


def parse_models(text):
    names = []
    for item in (t for t in text.split(",") if t):
        if item.startswith("family:"):
            fam = item[len("family:"):]
            if fam not in zoo_models.FAMILIES:
                raise SystemExit(f"unknown family {fam!r}; families: {', '.join(zoo_models.FAMILIES)}")
            names += [n for n, spec in zoo_models.ZOO.items() if spec[0] == fam]
        else:
            zoo_models.check_name(item)
            names.append(item)
    return list(dict.fromkeys(names))


def ints(text, what):
    try:
        v = [int(t) for t in text.split(",") if t]
    except ValueError:
        raise SystemExit(f"--{what} expects comma-separated integers, got {text!r}")
    if not v or min(v) < 1:
        raise SystemExit(f"--{what} needs at least one value >= 1")
    return v


# ---------------------------------------------------------------- estimate

def estimate_s(model, batch, threads, args, exported):
    """A rough cell time: loads and fixed costs, plus every timed and warm-up run of every runtime,
    from the model's GFLOPs at ~55 GFLOP/s per thread (torch eager ~2.5x slower)."""
    lat = zoo_models.gflops(model, batch) / (55.0 * threads)
    per_runtime = {"tessera": 1.0, "ort": 1.0, "torch": 2.5}
    runs = args.runs + args.warmup + 2  # + the first run and the save
    t = 12 + runs * sum(per_runtime[r] for r in args.runtimes) * lat
    t += runs * 2 * lat + 6  # the separate processes
    if not exported:
        t += 8 + 3 * lat
    return t


def hms(s):
    s = int(max(s, 0))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


# ---------------------------------------------------------------- export

def ensure_export(model, batch, args):
    """The export folder, exporting in a child process if needed; (dir, error dict or None)."""
    d = zoo_models.export_dir(args.work, model, batch)
    if not args.reexport:
        if zoo_models.is_exported(d):
            return d, None
        err = zoo_models.export_error(d)
        if err:
            return d, err
    log(f"[{model} b{batch}] exporting to {perf_harness.rel(d)}")
    cmd = [sys.executable, os.path.join(HERE, "zoo_models.py"), "export", model, "--batch", str(batch), "--dir", d]
    os.makedirs(d, exist_ok=True)
    limit = int(args.export_memory_gib * 2**30)

    def cap_memory():  # a runaway exporter fails with MemoryError instead of waking the OOM killer on others
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    t0 = time.time()
    with open(os.path.join(d, "export.log"), "w") as logf:
        p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, preexec_fn=cap_memory if limit else None)
        while True:  # wait4, for the child's own peak RSS
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - t0 > args.export_timeout:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.2)
    p.returncode = os.waitstatus_to_exitcode(status)
    peak = f"peak RSS {usage.ru_maxrss / 2**20:.1f} GiB"
    with open(os.path.join(d, "export.log")) as f:
        output = f.read()
    if time.time() - t0 > args.export_timeout and p.returncode < 0:
        err = {"stage": "onnx export", "error": f"no result within {args.export_timeout:.0f} s (killed; {peak})"}
    elif p.returncode < 0:
        sig = signal.Signals(-p.returncode).name
        err = {"stage": "export process", "error": f"killed by {sig} after {time.time() - t0:.0f} s, {peak}" +
               (" (the kernel's OOM killer, most likely)" if sig == "SIGKILL" else "")}
    elif p.returncode != 0 or not zoo_models.is_exported(d):
        err = zoo_models.export_error(d) or {"stage": "export process",
                                             "error": tail_line(output) or f"exit code {p.returncode}"}
    else:
        err = None
    if err:
        with open(os.path.join(d, "export_error.json"), "w") as f:
            json.dump(err, f, indent=1)
        log(f"[{model} b{batch}] export failed ({err['stage']}): {err['error'][:300]}")
        return d, err
    log(f"[{model} b{batch}] exported in {time.time() - t0:.0f} s")
    return d, None


def tail_line(text):
    lines = [l.strip() for l in text.replace("\r", "\n").splitlines() if l.strip()]
    return lines[-1][:1500] if lines else ""


# ---------------------------------------------------------------- accuracy

def accuracy(d, out_dir):
    """Every output of out_dir against torch_output_i.npy: {rel, max_abs_diff, outputs, pass} or {error}."""
    import numpy as np
    with open(os.path.join(d, "meta.json")) as f:
        n = len(json.load(f)["output_shapes"])
    worst_rel, worst_abs = 0.0, 0.0
    for i in range(n):
        got_path = os.path.join(out_dir, f"output_{i}.npy")
        if not os.path.exists(got_path):
            return {"error": f"no output_{i}.npy saved ({n} outputs expected)", "pass": False}
        got, want = np.load(got_path), np.load(os.path.join(d, f"torch_output_{i}.npy"))
        if got.shape != want.shape:
            return {"error": f"output {i} shape {list(got.shape)}, torch's {list(want.shape)}", "pass": False}
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        if not np.isfinite(diff).all():
            return {"error": f"output {i}: {int((~np.isfinite(diff)).sum())} non-finite differences", "pass": False}
        a = float(diff.max()) if diff.size else 0.0
        rel = a / max(float(np.abs(want).max()) if want.size else 0.0, 1e-30)
        if rel >= worst_rel:
            worst_rel, worst_abs = rel, a
    return {"rel": worst_rel, "max_abs_diff": worst_abs, "outputs": n, "pass": worst_rel <= TOLERANCE}


# ---------------------------------------------------------------- separate processes

LATENCY_RE = re.compile(r"^latency\s+median ([\d.]+) (us|ms|s)\s+p10 ([\d.]+) (us|ms|s)\b", re.M)
UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def run_tessera_bench(d, threads, args, env, profile=0):
    cmd = [args.tessera, "bench", os.path.join(d, "model.onnx"), "--threads", str(threads), "--runs", str(args.runs),
           "--warmup", str(args.warmup)] + (["--profile", str(profile)] if profile else [])
    out = {"command": " ".join(shlex.quote(c) for c in cmd)}
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.load_timeout)
    except subprocess.TimeoutExpired:
        return dict(out, status="failed", reason=f"no result within {args.load_timeout:.0f} s (killed)")
    except OSError as e:
        return dict(out, status="failed", reason=f"cannot start {cmd[0]}: {e}")
    out["wall_s"] = round(time.time() - t0, 1)
    m = LATENCY_RE.search(r.stdout)
    if r.returncode != 0 or not m:
        return dict(out, status="failed", reason=tail_line(r.stderr) or tail_line(r.stdout) or f"exit {r.returncode}")
    out.update(status="ok", median_ms=float(m.group(1)) * UNIT[m.group(2)], p10_ms=float(m.group(3)) * UNIT[m.group(4)])
    c = re.search(r"^compile\s+([\d.]+) ms", r.stdout, re.M)
    if c:
        out["compile_ms"] = float(c.group(1))
    if profile:
        out["profile"] = parse_tessera_profile(r.stdout)
    return out


def parse_tessera_profile(text):
    """`tessera bench --profile` output -> {sum_ms, ops: [[op, steps, ms, pct, gflops]], steps: [[i, node, op, ms, gflops]]}."""
    prof = {"ops": [], "steps": []}
    lines = text.splitlines()
    part = None
    for line in lines:
        if line.startswith("profile"):
            m = re.search(r"sum ([\d.]+) ms", line)
            prof["sum_ms"] = float(m.group(1)) if m else None
            part = "ops"
            continue
        if part is None:
            continue
        if line.strip().startswith("slowest"):
            part = "steps"
            continue
        if part == "ops":
            m = re.match(r"^\s+(.+?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)$", line)
            if m:
                prof["ops"].append([m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4)), m.group(5)])
        else:
            m = re.match(r"^\s+(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+(\S+)$", line)
            if m:
                prof["steps"].append([int(m.group(1)), m.group(2), m.group(3), float(m.group(4)), m.group(5)])
    return prof


def run_ort_bench(d, threads, args, env, profile=False):
    cmd = ["node", os.path.join(HERE, "ort_bench.js"), "--model-dir", d, "--threads", str(threads), "--runs",
           str(args.runs), "--warmup", str(args.warmup)]
    if profile:
        pdir = os.path.join(d, "ort_profile")
        os.makedirs(pdir, exist_ok=True)
        cmd += ["--profile", os.path.join(pdir, f"t{threads}")]
    out = {"command": " ".join(shlex.quote(c) for c in cmd)}
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.load_timeout)
    except subprocess.TimeoutExpired:
        return dict(out, status="failed", reason=f"no result within {args.load_timeout:.0f} s (killed)")
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        return dict(out, status="failed", reason=tail_line(r.stderr) or f"exit {r.returncode}")
    res = json.loads(lines[-1])
    out.update(status="ok", median_ms=res["median_ms"], p10_ms=p10(res["samples"]), load_ms=res["load_ms"],
               first_run_ms=res["first_run_ms"], samples=res["samples"])
    if profile and res.get("profile_file"):
        out["profile"] = parse_ort_profile(res["profile_file"])
    return out


def parse_ort_profile(path, top=15):
    """ONNX Runtime's trace (events of cat "Node", name "<node>_kernel_time", dur in us) -> per node its median
    time over the runs it was profiled in (the first run, slow with allocations, weighs no more than any other),
    and per op type the sum of those, the slowest first."""
    import statistics
    with open(path) as f:
        events = json.load(f)
    durs = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        node = e["name"][:-len("_kernel_time")]
        durs.setdefault(node, [e.get("args", {}).get("op_name", "?"), []])[1].append(e.get("dur", 0) / 1e3)
    per_node = {node: (op, statistics.median(ds)) for node, (op, ds) in durs.items()}
    per_op = {}
    for op, ms in per_node.values():
        o = per_op.setdefault(op, [0, 0.0])
        o[0] += 1
        o[1] += ms
    total = sum(ms for _, ms in per_node.values())
    ops = sorted(([op, n, ms, 100 * ms / total if total else 0] for op, (n, ms) in per_op.items()),
                 key=lambda r: -r[2])
    nodes = sorted(([node, op, ms] for node, (op, ms) in per_node.items()), key=lambda r: -r[2])[:top]
    return {"sum_ms": total, "ops": ops, "steps": nodes, "file": perf_harness.rel(path)}


# ---------------------------------------------------------------- one cell

def run_cell(model, batch, threads, args, env):
    cell = {"model": model, "family": zoo_models.family(model), "batch": batch, "threads": threads,
            "quick": args.quick, "runs": args.runs, "warmup": args.warmup,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    d, err = ensure_export(model, batch, args)
    cell["dir"] = perf_harness.rel(d)
    if err:
        cell.update(status="export failed", error=f"{err['stage']}: {err['error']}")
        return cell
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    cell["input_shapes"], cell["output_shapes"] = meta["input_shapes"], meta["output_shapes"]
    tag = f"[{model} b{batch} t{threads}]"
    commands = {rt: perf_harness.worker_command(rt, d, threads, args.tessera) for rt in args.runtimes}
    inter = perf_harness.time_workers(d, threads, commands, args, env, tag)
    for rt, c in inter.items():
        c.pop("settle_ms", None)
        if c.get("status") == "ok":
            c["accuracy"] = accuracy(d, os.path.join(d, "outputs", f"t{threads}", rt))
    cell["interleaved"] = inter
    log(f"{tag} separate processes: tessera bench, ort_bench.js")
    cell["separate"] = {"tessera": run_tessera_bench(d, threads, args, env)}
    if "ort" in args.runtimes:
        cell["separate"]["ort"] = run_ort_bench(d, threads, args, env)
    for c in inter.values():
        if c.get("samples"):
            c["p10_ms"] = p10(c["samples"])
    cell["ratio"] = ratio(inter.get("tessera"), inter.get("ort"))
    # the 10th percentiles' ratio: less sensitive to other work on the machine than the medians'
    cell["p10_ratio"] = ratio(inter.get("tessera"), inter.get("ort"), "p10_ms")
    cell["separate_p10_ratio"] = ratio(cell["separate"].get("tessera"), cell["separate"].get("ort"), "p10_ms")
    cell["separate_ratio"] = ratio(cell["separate"].get("tessera"), cell["separate"].get("ort"))
    t = inter.get("tessera", {})
    cell["status"] = "ok" if t.get("status") == "ok" else "failed"
    if cell["status"] != "ok":
        cell["error"] = f"tessera {t.get('status', 'not run')}: {t.get('reason', '')}"
    if not args.no_profile and max(cell["ratio"] or 0, cell["separate_ratio"] or 0) > args.profile_above:
        log(f"{tag} ratio above {args.profile_above:g}: profiling Tessera and ONNX Runtime")
        tp = run_tessera_bench(d, threads, args, env, profile=15)
        cell["profile"] = {"tessera": tp.get("profile") or {"error": tp.get("reason")}}
        if "ort" in args.runtimes:
            op = run_ort_bench(d, threads, args, env, profile=True)
            cell["profile"]["ort"] = op.get("profile") or {"error": op.get("reason", "no profile file")}
    return cell


def ratio(a, b, key="median_ms"):
    if a and b and a.get("status") == "ok" and b.get("status") == "ok" and a.get(key) and b.get(key):
        return a[key] / b[key]
    return None


def p10(samples):
    """The 10th percentile as tessera bench computes it (linear between the sorted samples around rank 0.1 (n-1))."""
    s = sorted(samples)
    if not s:
        return None
    h = 0.1 * (len(s) - 1)
    lo = int(h)
    return s[-1] if lo + 1 >= len(s) else s[lo] + (h - lo) * (s[lo + 1] - s[lo])


# ---------------------------------------------------------------- main

def load_results(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"cells": {}}


def save_results(results, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, path)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(zoo_models.ZOO), help="names or family:F, comma-separated")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=None, help=f"timed runs per runtime (default and minimum {MIN_RUNS})")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="3 runs, 1 warm-up unless given: smoke tests, marked")
    ap.add_argument("--force", action="store_true", help="redo the cells results.json has (the exports are kept: --reexport)")
    ap.add_argument("--reexport", action="store_true", help="export again, also where an export failed")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES), help="tessera plus any of ort,torch")
    ap.add_argument("--no-profile", action="store_true", help="no profiles for the cells above 1")
    ap.add_argument("--profile-above", type=float, default=1.0, help="profile the cells whose ratio is above this")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--work", default=WORK, help="exports, logs and results.json")
    ap.add_argument("--out", default=HERE, help="directory for ZOO.md and zoo.png")
    ap.add_argument("--no-report", action="store_true", help="do not redraw ZOO.md and zoo.png at the end")
    ap.add_argument("--gap-ms", type=float, default=5)
    ap.add_argument("--settle-ms", type=float, default=250)
    ap.add_argument("--load-timeout", type=float, default=1800)
    ap.add_argument("--run-timeout", type=float, default=600)
    ap.add_argument("--export-timeout", type=float, default=1800)
    ap.add_argument("--export-memory-gib", type=float, default=round(0.7 * os.sysconf("SC_PAGE_SIZE") *
                    os.sysconf("SC_PHYS_PAGES") / 2**30, 1), help="address-space limit of an export process "
                    "(default 70%% of RAM; 0: none): torch 1.13 exporting MViT-V2-S grew past 23 GiB")
    args = ap.parse_args(argv)
    args.models = parse_models(args.models)
    args.batches, args.threads = ints(args.batches, "batches"), ints(args.threads, "threads")
    if args.runs is None:
        args.runs = 3 if args.quick else MIN_RUNS
    if args.runs < 1 or (args.runs < MIN_RUNS and not args.quick):
        ap.error(f"--runs must be at least {MIN_RUNS} (fewer only with --quick)")
    if args.quick and "--warmup" not in " ".join(argv or sys.argv):
        args.warmup = 1
    args.runtimes = [r for r in args.runtimes.split(",") if r]
    if "tessera" not in args.runtimes or any(r not in RUNTIMES for r in args.runtimes):
        ap.error(f"--runtimes: tessera plus any of {', '.join(RUNTIMES[1:])}")
    args.tessera = os.path.abspath(args.tessera)
    args.work = os.path.abspath(args.work)
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    json_path = os.path.join(args.work, "results.json")
    results = load_results(json_path)
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env["TESSERA_CACHE_DIR"] = os.path.join(args.work, "cache")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    results.update(machine=perf_harness.machine(), versions=perf_harness.versions(args.tessera),
                   tolerance=TOLERANCE, omp_wait_policy=env["OMP_WAIT_POLICY"],
                   last_command=" ".join(shlex.quote(a) for a in [sys.executable, perf_harness.rel(
                       os.path.abspath(sys.argv[0]))] + (argv if argv is not None else sys.argv[1:])))
    results.setdefault("commands", []).append(results["last_command"])  # every run that added cells
    cells = results.setdefault("cells", {})

    todo = []
    for batch in args.batches:
        for model in args.models:
            for threads in args.threads:
                old = cells.get(cell_key(model, batch, threads))
                if old and not args.force and not (old.get("quick") and not args.quick):
                    continue
                todo.append((model, batch, threads))
    est = {c: estimate_s(*c, args, zoo_models.is_exported(zoo_models.export_dir(args.work, c[0], c[1])))
           for c in todo}
    total_est = sum(est.values())
    log(f"{len(todo)} cells to run ({len(args.models)} models x batches {args.batches} x threads {args.threads}, "
        f"{len(args.models) * len(args.batches) * len(args.threads) - len(todo)} done already); "
        f"estimated {hms(total_est)} (from the models' GFLOPs; refined as cells finish)")
    t_start, done_est = time.time(), 0.0
    for i, (model, batch, threads) in enumerate(todo):
        t0 = time.time()
        cell = run_cell(model, batch, threads, args, env)
        cell["seconds"] = round(time.time() - t0, 1)
        cells[cell_key(model, batch, threads)] = cell
        save_results(results, json_path)
        done_est += est[(model, batch, threads)]
        elapsed = time.time() - t_start
        scale = elapsed / done_est if done_est else 1.0
        remaining = (total_est - done_est) * scale
        r, sr = cell.get("ratio"), cell.get("separate_ratio")
        acc = cell.get("interleaved", {}).get("tessera", {}).get("accuracy", {})
        what = (f"ratio {r:.2f}" if r else "ratio -") + (f", separate {sr:.2f}" if sr else "") + \
            (f", rel diff {acc['rel']:.1e}" if "rel" in acc else "") if cell["status"] == "ok" else \
            f"{cell['status']}: {cell.get('error', '')[:200]}"
        log(f"cell {i + 1}/{len(todo)} {model} b{batch} t{threads}: {what} ({cell['seconds']:.0f} s); "
            f"elapsed {hms(elapsed)}, ETA {hms(remaining)}")
    if not args.no_report:
        md, png = zoo_report.write(results, args.out, results_path=json_path)
        log(f"wrote {md}" + (f", {png}" if png else "") + f" from {perf_harness.rel(json_path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
