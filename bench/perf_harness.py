#!/usr/bin/python3
"""Regenerates bench/RESULTS.md and bench/results.png: Tessera's latency beside
ONNX Runtime, PyTorch (eager and TorchScript) and OpenCV DNN on nine models.

Models (bench/perf_models.py, batch 1, seeded random weights): resnet18,
resnet50, mobilenet_v2, resnext50_32x4d, inception_v3, efficientnet_b0, vgg16,
vit_b_16 and a BERT-base encoder (12 layers, hidden 768, sequence 128). Each is
exported once to bench/out/perf/<model>/ (model.onnx, input_0.npy,
torch_output.npy; existing exports are reused unless --reexport).

Runtimes, each a long-lived worker process of its own (so thread settings do
not interact) speaking the line protocol of `tessera serve` (ready line,
`run N`, `save DIR`, `quit`; see tools/serve.h):
  tessera      build/tessera serve MODEL.onnx --threads N --inputs input_0.npy
  ort          bench/ort_worker.js: onnxruntime-node CPU, level "all", sequential
  torch        bench/perf_worker.py: eager, torch.inference_mode()
  torchscript  bench/perf_worker.py: traced, torch.jit.freeze + optimize_for_inference
  opencv       bench/perf_worker.py: cv2.dnn.readNetFromONNX
(and tessera-py, bench/perf_worker.py: tessera.InferenceSession from the build's
Python module; bench/api_bench.py times it beside tessera serve and ort)
For every thread count and model: the workers are started one after another
(each loads alone, so its load time is its own), warmed up, then timed round
by round — every round each runtime runs once, in an order shuffled (seeded)
each round, so drift (heat, the machine's other load) hits all alike and no runtime
always follows the same one, with a
pause before each run, then a wait (at most --settle-ms) until the other
runtimes' threads have stopped running, and OpenMP's threads passive
(OMP_WAIT_POLICY=PASSIVE unless set), so no runtime's idle threads spin on
the next one's cores. Then each
saves its outputs, compared with torch_output.npy (max abs difference, and
that over max |torch output|). Workers quit before the next model.

A worker that cannot load a model (it replies "error ..." before "ready", e.g.
OpenCV 4.6 on an op it lacks) is "unavailable" for it; one that crashes,
times out or replies "error" later is "failed"; the reason goes into
RESULTS.md either way and the harness goes on with the rest.

Usage (from the repository root; once: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci):
    /usr/bin/python3 bench/perf_harness.py [--models a,b] [--threads 1,2] [--runs 20] [--warmup 3]
                                           [--tessera build/tessera] [--out bench]
                                           [--runtimes tessera,ort] [--batch 8]
    /usr/bin/python3 bench/perf_harness.py --export-only        # just write the exports
    /usr/bin/python3 bench/perf_harness.py --quick --models resnet18 --threads 1   # smoke test
--models also takes perf_models.PET_MODELS (csrnet, csrnet_backend, r3d_18: bench/PET.md's);
--batch B exports and runs every model at batch B (folders <model>_b<B>).
Writes bench/RESULTS.md, bench/results.png (--out) and every sample to
bench/out/perf/results.json; bench/perf_report.py redraws the first two from it.
Needs Debian's python3-torch, python3-torchvision, python3-opencv,
python3-matplotlib and node; not a CI dependency.
"""
import argparse
import datetime
import json
import os
import platform
import queue
import random
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import perf_models  # noqa: E402
import perf_report  # noqa: E402

WORK = os.path.join(HERE, "out", "perf")
RUNTIMES = perf_report.RUNTIMES  # tessera first, then the peers
MIN_RUNS = 20


def rel(path):
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_ns(pid):
    """CPU time in ns that the threads of process `pid` have run (/proc/PID/task/*/schedstat); 0 once gone."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread ended meanwhile
    return total


SETTLE_WINDOW_S = 0.003  # the others count as idle when they ran under 5% of such a window


def settle(pids, cap_s):
    """Waits until the processes `pids` stop running (their threads together used under 5% of a core over
    SETTLE_WINDOW_S), at most cap_s; returns (seconds waited, whether they settled). A runtime's pool may
    keep spinning after its run (ONNX Runtime's for tens of ms), taking cores from whichever runs next."""
    t0 = time.time()
    last, t_last = sum(cpu_ns(p) for p in pids), time.time()
    while True:
        time.sleep(SETTLE_WINDOW_S)
        now, t_now = sum(cpu_ns(p) for p in pids), time.time()
        if now - last < 0.05 * (t_now - t_last) * 1e9:
            return t_now - t0, True
        if t_now - t0 >= cap_s:
            return t_now - t0, False
        last, t_last = now, t_now


class WorkerError(Exception):
    """A worker's failure; kind is "unavailable" (could not load) or "failed"."""

    def __init__(self, kind, reason):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


class Worker:
    """One runtime's process: requests on stdin, one reply line each on stdout,
    stderr kept in a log file whose last line explains a crash."""

    def __init__(self, cmd, env, log_path):
        self.log_path = log_path
        self.stderr = open(log_path, "w")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                         text=True, bufsize=1, env=env, start_new_session=True)
        except OSError:
            self.stderr.close()
            raise
        self.lines = queue.Queue()
        self.chatter = []
        # a reader thread, so that every wait can time out
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # EOF

    def _crash_reason(self):
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.stderr.flush()
        with open(self.log_path, errors="replace", newline="") as f:
            # progress lines end in \r (tessera's "compiling i/n ..."); node ends an
            # uncaught error's report with its version line
            tail = [l.strip() for l in f.read().replace("\r", "\n").splitlines()
                    if l.strip() and not l.startswith("Node.js v")]
        if code is None:
            what = "closed its output"
        else:
            what = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return f"{what}: {tail[-1]}" if tail else what

    def reply(self, timeout, before_ready=False):
        """The next protocol line ("ready", "times", "saved", "elapsed"); raises WorkerError."""
        deadline = time.time() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.time()))
            except queue.Empty:
                self.kill()
                raise WorkerError("failed", f"no reply within {timeout:.0f} s (killed)")
            if line is None:
                raise WorkerError("failed", self._crash_reason())
            word = line.split(" ", 1)[0]
            if word == "error":
                reason = line[len("error"):].strip()
                raise WorkerError("unavailable" if before_ready else "failed", reason)
            if word in ("ready", "times", "saved", "elapsed"):
                return line
            self.chatter.append(line)  # a library's output on stdout: kept for the log, not a reply

    def request(self, line, timeout):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerError("failed", self._crash_reason())
        return self.reply(timeout)

    def kill(self):
        # the worker's whole process group (its own session), children included
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def close(self):
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
        except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
        self.stderr.close()
        if self.chatter:  # appended only now: the child shares the log file while it runs
            with open(self.log_path, "a") as f:
                f.write("".join(f"[harness] stdout line that was not a reply: {l}\n" for l in self.chatter))


def worker_command(runtime, model_dir, threads, tessera, baseline=None):
    if runtime in ("tessera", perf_report.BASELINE):
        return [tessera if runtime == "tessera" else baseline, "serve", os.path.join(model_dir, "model.onnx"), "--threads", str(threads),
                "--inputs", *perf_models.input_files(model_dir)]
    if runtime == "ort":
        return ["node", os.path.join(HERE, "ort_worker.js"), "--model-dir", model_dir, "--threads", str(threads)]
    if runtime == "tessera-py":  # the Python module of the build beside the CLI (bench/api_bench.py)
        return [sys.executable, os.path.join(HERE, "perf_worker.py"), "--runtime", runtime, "--model-dir", model_dir,
                "--threads", str(threads), "--tessera-python", os.path.join(os.path.dirname(tessera), "python")]
    return [sys.executable, os.path.join(HERE, "perf_worker.py"), "--runtime", runtime, "--model-dir", model_dir,
            "--threads", str(threads)]


def number(text):
    try:
        return float(text)
    except ValueError:
        return text


def compare(out_dir, want):
    """Max abs difference of out_dir/output_0.npy from torch's output, and relative to max |torch|."""
    import numpy as np
    got = np.load(os.path.join(out_dir, "output_0.npy"))
    if got.shape != want.shape:
        return {"diff_error": f"output shape {list(got.shape)}, torch's {list(want.shape)}"}
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if not np.isfinite(diff).all():
        return {"diff_error": f"{int((~np.isfinite(diff)).sum())} non-finite differences"}
    max_diff = float(diff.max())
    return {"max_abs_diff": max_diff, "rel_diff": max_diff / max(float(np.abs(want).max()), 1e-30)}


def bench_model(model, threads, args, env):
    """Runs every runtime on one model at one thread count; returns {runtime: cell}."""
    d = perf_models.export_dir(args.work, model, args.batch)
    runtimes = RUNTIMES[:1] + [perf_report.BASELINE] + RUNTIMES[1:] if args.baseline else RUNTIMES
    runtimes = [rt for rt in runtimes if rt in args.runtimes or rt == perf_report.BASELINE]
    commands = {rt: worker_command(rt, d, threads, args.tessera, args.baseline) for rt in runtimes}
    return time_workers(d, threads, commands, args, env, f"[{model} t={threads}]")


def time_workers(d, threads, commands, args, env, tag):
    """Loads one worker per entry of commands ({name: argv}, all serving the export in d) one after another,
    warms them up, times args.runs interleaved rounds, saves and compares their outputs with torch's;
    returns {name: cell}. args needs warmup, runs, gap_ms, settle_ms, load_timeout and run_timeout."""
    import numpy as np
    logs = os.path.join(d, "logs")
    os.makedirs(logs, exist_ok=True)
    want = np.load(os.path.join(d, "torch_output.npy"))
    cells, workers = {}, {}

    def fail(rt, e):
        cells[rt].update(status=e.kind, reason=e.reason)
        log(f"{tag} {rt}: {e.kind}: {e.reason}")
        workers.pop(rt).close()

    try:
        for rt, cmd in commands.items():  # one at a time, so each load time is the runtime's own
            cells[rt] = {"status": "ok", "samples": [], "settle_ms": [], "unsettled": 0}
            log(f"{tag} {rt}: loading")
            cells[rt]["command"] = " ".join(shlex.quote(c) for c in cmd)
            try:
                workers[rt] = Worker(cmd, env, os.path.join(logs, f"{rt}-t{threads}.log"))
            except OSError as e:
                cells[rt].update(status="failed", reason=f"cannot start {cmd[0]}: {e}")
                log(f"{tag} {rt}: failed: {cells[rt]['reason']}")
                continue
            t0 = time.time()
            try:
                line = workers[rt].reply(args.load_timeout, before_ready=True)
            except WorkerError as e:
                fail(rt, e)
                continue
            words = line.split()[1:]
            ready = {k: number(v) for k, v in zip(words[::2], words[1::2])}
            ready["wall_ms"] = round((time.time() - t0) * 1e3, 1)
            cells[rt]["ready"] = ready
            log(f"{tag} {rt}: ready, load {ready.get('compile_ms', 0):.0f} ms, "
                f"first run {ready.get('first_run_ms', 0):.1f} ms")

        if args.warmup:
            for rt in list(workers):
                log(f"{tag} {rt}: warm-up ({args.warmup} runs)")
                try:
                    workers[rt].request(f"run {args.warmup}", args.run_timeout * args.warmup)
                except WorkerError as e:
                    fail(rt, e)

        log(f"{tag} timing {args.runs} rounds of {', '.join(workers) or 'nothing'}")
        for r in range(args.runs):
            # A seeded shuffle each round, not a rotation: rotating keeps every
            # runtime behind the same predecessor in every round, and one
            # whose pool spins on after its runs (ONNX Runtime's) would slow
            # whichever runtime always follows it.
            order = list(workers)
            random.Random(r).shuffle(order)
            for rt in order:
                if args.gap_ms:
                    time.sleep(args.gap_ms / 1e3)
                if args.settle_ms:
                    others = [w.proc.pid for o, w in workers.items() if o != rt]
                    waited, quiet = settle(others, args.settle_ms / 1e3)
                    cells[rt]["settle_ms"].append(round(waited * 1e3, 1))
                    cells[rt]["unsettled"] += not quiet
                try:
                    line = workers[rt].request("run 1", args.run_timeout)
                    cells[rt]["samples"].append(float(line.split()[1]))
                except WorkerError as e:
                    fail(rt, e)
            if r == 0 or (r + 1) % 10 == 0 or r + 1 == args.runs:
                meds = ", ".join(f"{rt} {statistics.median(cells[rt]['samples']):.2f}" for rt in workers)
                log(f"{tag} round {r + 1}/{args.runs}: medians so far (ms) {meds}")

        for rt in list(workers):
            log(f"{tag} {rt}: saving outputs")
            out_dir = os.path.join(d, "outputs", f"t{threads}", rt)
            try:
                workers[rt].request(f"save {out_dir}", args.run_timeout)
                cells[rt].update(compare(out_dir, want))
            except WorkerError as e:
                fail(rt, e)
            except (OSError, ValueError) as e:
                cells[rt]["diff_error"] = f"cannot read the saved output: {e}"
    finally:
        for w in workers.values():
            w.close()
    for cell in cells.values():
        if cell["samples"]:
            cell["median_ms"] = statistics.median(cell["samples"])
    return cells


def versions(tessera):
    import torch
    import torchvision
    v = {"torch": torch.__version__, "torchvision": torchvision.__version__}
    try:
        import cv2
        v["opencv"] = cv2.__version__
    except ImportError as e:
        v["opencv"] = f"not importable ({e})"
    try:
        r = subprocess.run(["node", os.path.join(HERE, "ort_worker.js"), "--version"], capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"cannot run node ({e}); ONNX Runtime runs in node (Debian's nodejs)")
    if r.returncode != 0:
        sys.exit(f"bench/ort_worker.js cannot load onnxruntime-node:\n{r.stderr.strip()[-600:]}\n"
                 "Set it up once with: cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci")
    v["onnxruntime"] = r.stdout.strip()
    r = subprocess.run(["node", "--version"], capture_output=True, text=True)
    v["node"] = r.stdout.strip()
    r = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(tessera))) if os.path.exists(tessera) else "missing"
    v["tessera"] = f"{rel(tessera)} " \
                   f"(source {r.stdout.strip() or '?'}, binary built {stamp})"
    return v


def machine():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": isa, "memory_gib": round(mem, 1),
            "kernel": platform.release(), "python": platform.python_version()}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(perf_models.MODELS), help="comma-separated (default: all nine)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--runs", type=int, default=None, help=f"timed rounds (default and minimum {MIN_RUNS}; "
                    "fewer only with --quick)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs per runtime before the rounds")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--baseline", default=None, help="an earlier tessera binary, run as one more runtime in the "
                    "same rounds (the report adds its column and Tessera / baseline)")
    ap.add_argument("--out", default=HERE, help="directory for RESULTS.md and results.png")
    ap.add_argument("--work", default=WORK, help="exports, outputs, logs and results.json")
    ap.add_argument("--quick", action="store_true", help="smoke test: allows fewer runs (default 3); "
                    "RESULTS.md is marked as not a valid result")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES), help="comma-separated subset of "
                    f"{','.join(RUNTIMES)} (default: all; the others' cells stay empty)")
    ap.add_argument("--batch", type=int, default=1, help="batch of the exports (folder <model>_b<B> when > 1)")
    ap.add_argument("--reexport", action="store_true", help="export again even where an export exists")
    ap.add_argument("--export-only", action="store_true", help="write the exports and stop")
    ap.add_argument("--gap-ms", type=float, default=5, help="pause before each timed run")
    ap.add_argument("--settle-ms", type=float, default=250, help="then wait, at most this long, until the other "
                    "runtimes' threads have stopped running (0: do not wait)")
    ap.add_argument("--load-timeout", type=float, default=1800, help="seconds a worker may take to be ready")
    ap.add_argument("--run-timeout", type=float, default=600, help="seconds a single run may take")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    for m in args.models:
        perf_models.check_name(m)
    try:
        args.threads = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        ap.error(f"--threads expects comma-separated integers, got {args.threads!r}")
    if not args.threads or min(args.threads) < 1:
        ap.error("--threads needs at least one count >= 1")
    if args.runs is None:
        args.runs = 3 if args.quick else MIN_RUNS
    if args.runs < 1 or (args.runs < MIN_RUNS and not args.quick):
        ap.error(f"--runs must be at least {MIN_RUNS} (fewer only with --quick, for smoke tests)")
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    args.runtimes = [r for r in args.runtimes.split(",") if r]
    for r in args.runtimes:
        if r not in RUNTIMES:
            ap.error(f"unknown runtime {r!r}; runtimes: {', '.join(RUNTIMES)}")
    if args.batch < 1:
        ap.error("--batch must be >= 1")
    args.tessera = os.path.abspath(args.tessera)
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
        if not os.path.exists(args.baseline):
            ap.error(f"--baseline {args.baseline} does not exist")
    return args


def main():
    args = parse_args()
    import torch
    torch.set_num_threads(os.cpu_count() or 1)  # for exporting only; the workers set their own
    for m in args.models:
        d = perf_models.export_dir(args.work, m, args.batch)
        if perf_models.is_exported(d) and not args.reexport:
            log(f"[{m}] reusing the export in {rel(d)}")
            continue
        log(f"[{m}] exporting to {rel(d)}")
        meta = perf_models.export(m, d, args.batch)
        log(f"[{m}] exported: {meta['onnx_bytes'] / 2**20:.1f} MiB, {meta['export_seconds']} s")
    if args.export_only:
        return 0
    if not os.path.exists(args.tessera):
        log(f"warning: {args.tessera} does not exist; the Tessera cells will say so")

    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)  # let OpenBLAS pick its kernels for this CPU
    env["TESSERA_CACHE_DIR"] = os.path.join(args.work, "cache")  # runs independent of the user's cache
    # OpenMP (torch eager, TorchScript) keeps its threads spinning for
    # milliseconds after each parallel region by default; run by run
    # interleaved, they take cores from whichever runtime runs next (torch
    # eager on MobileNetV2 at 2 threads: median 35 ms spinning, 16 ms
    # passive). Passive, every runtime finds the cores free.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    command = " ".join(shlex.quote(a) for a in [sys.executable, os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])
    results = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "command": command, "quick": args.quick,
        "runs": args.runs, "warmup": args.warmup, "gap_ms": args.gap_ms, "settle_ms": args.settle_ms,
        "threads": args.threads,
        "omp_wait_policy": env["OMP_WAIT_POLICY"],
        "models": args.models, "titles": {m: perf_models.title(m) for m in args.models}, "batch": args.batch,
        "machine": machine(), "versions": versions(args.tessera), "cells": {}}
    if args.baseline:
        r = subprocess.run(["git", "-C", os.path.dirname(os.path.dirname(args.baseline)), "describe", "--always",
                            "--dirty"], capture_output=True, text=True)
        results["baseline"] = f"{rel(args.baseline)} (source {r.stdout.strip() or '?'})"
    json_path = os.path.join(args.work, "results.json")
    t_start = time.time()
    for threads in args.threads:
        per_model = results["cells"].setdefault(str(threads), {})
        for m in args.models:
            per_model[m] = bench_model(m, threads, args, env)
            with open(json_path, "w") as f:  # after every model, so an interrupted run keeps its data
                json.dump(results, f, indent=1)
    results["total_seconds"] = round(time.time() - t_start)
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
    md, png = perf_report.write(results, args.out)
    log(f"wrote {md}, {png} and {json_path} ({results['total_seconds']} s)")
    print(perf_report.markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
