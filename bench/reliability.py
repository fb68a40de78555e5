"""bench/RELIABILITY.md in one command (issue 22): what a deployment gets from
Tessera beside ONNX Runtime.

  1. Hostile inputs by kind and their outcomes (bench/hostile_inputs.py): none
     may crash, hang or give a silently wrong result.
  2. Throughput of one ResNet-50 model served by 1, 2 and 4 caller threads at
     once (`tessera serve`'s `callers K N`), beside one ONNX Runtime session
     under the same load (bench/ort_worker.js, concurrent session.run calls);
     rounds interleaved, medians.
  3. Resident memory after load (and its peak) for ResNet-50, BERT-base and
     ViT-B/16, from ONNX and from .tsr, against the weights plus Tessera's
     peak activations with each load path's process baseline apart, beside
     ONNX Runtime's (bench/memory.py).
  4. Load time: from a `.tsr` artifact and from ONNX, beside ONNX Runtime's
     session creation.
  5. Output error against torch (float64) beside ONNX Runtime's for every model
     of bench/RESULTS.md (bench/accuracy.py).

    /usr/bin/python3 bench/reliability.py [--sections hostile throughput memory load accuracy]
                                          [--tessera build/tessera] [--out bench/RELIABILITY.md]

Sections 2-4 time things: run them on a quiet machine. Needs
scripts/install-bench-deps.sh (torch, torchvision, onnx, onnxruntime-node).
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import accuracy  # noqa: E402
import hostile_inputs  # noqa: E402
import perf_models  # noqa: E402

SECTIONS = ("hostile", "throughput", "memory", "load", "accuracy")
MEMORY_MODELS = ("resnet50", "bert_base", "vit_b_16")


def model_dir(name):
    d = os.path.join(ROOT, "bench", "out", "perf", name)
    if not perf_models.is_exported(d):
        perf_models.export(name, d)
    return d


# --- long-running workers speaking the `tessera serve` protocol --------------------------

class Worker:
    """A runtime process kept loaded; first line 'ready ...', then one reply per request."""

    def __init__(self, argv, cwd=None):
        self.t0 = time.time()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=cwd)
        self.ready = self.p.stdout.readline().strip()
        self.ready_seconds = time.time() - self.t0
        if not self.ready.startswith("ready"):
            err = self.p.stderr.read()
            raise RuntimeError(f"{argv[0]} did not start: {self.ready} {err.strip()[-300:]}")
        w = self.ready.split()
        self.fields = {w[i]: w[i + 1] for i in range(1, len(w) - 1, 2)}

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        reply = self.p.stdout.readline().strip()
        if not reply or reply.startswith("error"):
            raise RuntimeError(f"'{line}' failed: {reply}")
        return reply

    def status(self):
        """VmRSS and VmHWM in bytes."""
        r = {}
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS", "VmHWM")):
                    r[line.split(":")[0]] = int(line.split()[1]) * 1024
        return r

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        self.p.wait(timeout=60)


def tessera_worker(exe, d, threads, model=None, extra=()):
    """`tessera serve` on `model` (default d/model.onnx) with d's inputs."""
    inputs = sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("input_") and f.endswith(".npy"))
    return Worker([exe, "serve", model or os.path.join(d, "model.onnx"), "--threads", str(threads), *extra,
                   "--inputs", *inputs])


def ort_worker(d, threads):
    return Worker(["node", os.path.join(HERE, "ort_worker.js"), "--model-dir", d, "--threads", str(threads)])


# --- sections --------------------------------------------------------------------

def section_hostile(exe):
    with tempfile.TemporaryDirectory() as d:
        rows, bad = hostile_inputs.report(exe, d)
    out = ["## Hostile inputs", "",
           f"{len(rows)} inputs a user or an attacker might hand the `tessera` CLI, made by bench/hostile_inputs.py "
           f"(and the fuzz target's regression corpus), each run with a {hostile_inputs.TIME_LIMIT:.0f} s limit. "
           f"Outcomes that would be defects (crash, hang, wrong result, an error not naming what is wrong): **{bad}**.",
           "", "| kind | input | outcome | what the user sees |", "|---|---|---|---|"]
    out += [f"| {k} | {w} | {o} | `{m}` |" if o == "clear error" else f"| {k} | {w} | {o} | {m} |"
            for k, w, o, m in rows]
    return out, bad


def section_throughput(exe, rounds=5, runs_per_caller=8, threads=2):
    d = model_dir("resnet50")
    workers = {"Tessera": tessera_worker(exe, d, threads), "ONNX Runtime": ort_worker(d, threads)}
    rates = {(n, k): [] for n in workers for k in (1, 2, 4)}
    try:
        for w in workers.values():
            w.ask("run 3")  # warm
        for r in range(rounds):
            for k in (1, 2, 4):
                names = list(workers) if r % 2 == 0 else list(reversed(workers))
                for n in names:
                    ms = float(workers[n].ask(f"callers {k} {runs_per_caller}").split()[1])
                    rates[(n, k)].append(k * runs_per_caller / (ms / 1000))
    finally:
        for w in workers.values():
            w.close()
    med = {key: statistics.median(v) for key, v in rates.items()}
    out = ["## Throughput: one ResNet-50 served by several caller threads", "",
           f"One model (batch 1, bench/out/perf/resnet50), {threads} threads in each runtime's pool, K caller threads "
           f"each running it {runs_per_caller} times at once; inferences per second, median of {rounds} rounds, the "
           "runtimes interleaved round by round. ONNX Runtime: one session, K concurrent `session.run` loops "
           "(onnxruntime-node runs them on its worker threads).", "",
           "| callers | Tessera inferences/s | ONNX Runtime inferences/s | Tessera / ONNX Runtime (above 1: Tessera serves more) |", "|---:|---:|---:|---:|"]
    for k in (1, 2, 4):
        t, o = med[("Tessera", k)], med[("ONNX Runtime", k)]
        out.append(f"| {k} | {t:.1f} | {o:.1f} | **{t / o:.2f}** |")
    return out, 0


def section_memory(exe, threads=2):
    """bench/memory.py's tables: RSS and peak after load from ONNX and from .tsr, each load path's process
    baseline apart, against the weights plus activations; ONNX Runtime beside."""
    import memory

    models = [os.path.join(model_dir(name), "model.onnx") for name in MEMORY_MODELS]
    result = memory.measure(exe, models, threads)
    names = {name: perf_models.MODELS[name][0] for name in MEMORY_MODELS}
    out = ["## Memory after load", "",
           "Resident memory of a process holding the model loaded and its plan compiled, before any run (VmRSS, "
           "and the peak during load, VmHWM), from the ONNX file and from a `.tsr` made by `tessera compile`, "
           f"against the weights W plus Tessera's peak activations A (criterion: at most {memory.CRITERION}x once "
           "the process baseline, the runtime's own memory measured on a one-node model, is taken off).", ""]
    out += memory.table(result, names)
    return out, 0


def section_load(exe, threads=2, rounds=5):
    out = ["## Load time", "",
           "Wall time from starting the process to the model ready to run (loaded, kernels ready, one run done "
           "excluded): `tessera serve` on a `.tsr` made by `tessera compile` and on the ONNX file; ONNX Runtime's "
           f"`InferenceSession.create` (measured inside its process). Medians of {rounds} loads.", "",
           "| model | Tessera from .tsr | Tessera from ONNX | ONNX Runtime session creation | .tsr / ONNX Runtime |",
           "|---|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in MEMORY_MODELS:
            d = model_dir(name)
            tsr = os.path.join(tmp, name + ".tsr")
            subprocess.run([exe, "compile", os.path.join(d, "model.onnx"), "-o", tsr, "--threads", str(threads)],
                           check=True, capture_output=True)
            times = {"tsr": [], "onnx": [], "ort": []}
            for _ in range(rounds):
                for key in times:
                    if key == "ort":
                        w = ort_worker(d, threads)
                        times[key].append(float(w.fields["compile_ms"]) / 1000)
                    else:
                        w = tessera_worker(exe, d, threads, tsr if key == "tsr" else None)
                        times[key].append(float(w.fields.get("load_ms", "nan")) / 1000)
                    w.close()
            m = {k: statistics.median(v) for k, v in times.items()}
            out.append(f"| {perf_models.MODELS[name][0]} | {m['tsr']:.2f} s | {m['onnx']:.2f} s | {m['ort']:.2f} s | "
                       f"**{m['tsr'] / m['ort']:.2f}** |")
    return out, 0


def section_accuracy(exe, threads=2):
    out = ["## Output error against torch", "",
           "Every model of bench/RESULTS.md (same files and inputs), each runtime's output against torch's model "
           "evaluated in float64 on the same weights and inputs: max |difference| over max |reference|.", "",
           "| model | Tessera | ONNX Runtime | torch float32 | Tessera / ONNX Runtime |", "|---|---:|---:|---:|---:|"]
    for name in perf_models.MODELS:
        d = model_dir(name)
        exact = accuracy.float64_output(name)
        import numpy as np

        torch32 = np.load(os.path.join(d, "torch_output.npy"))
        with tempfile.TemporaryDirectory() as tmp:
            t = accuracy.relative_error(accuracy.tessera_output(exe, d, threads, [], os.path.join(tmp, "t")), exact)
            o = accuracy.relative_error(accuracy.ort_output(d, threads, os.path.join(tmp, "o")), exact)
        out.append(f"| {perf_models.MODELS[name][0]} | {t:.2e} | {o:.2e} | "
                   f"{accuracy.relative_error(torch32, exact):.2e} | **{t / o:.2f}** |")
    return out, 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    p.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    p.add_argument("--out", default=os.path.join(HERE, "RELIABILITY.md"))
    a = p.parse_args()
    exe = os.path.abspath(a.tessera)
    source = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    t0 = time.time()
    body, bad = [], 0
    for s in a.sections:
        print(f"reliability: {s} ...", file=sys.stderr, flush=True)
        lines, b = globals()["section_" + s](exe)
        body += lines + [""]
        bad += b
    head = ["# Reliability: hostile inputs, concurrent callers, memory, load time, accuracy", "",
            f"Regenerated by `/usr/bin/python3 bench/reliability.py` on "
            f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} (took {time.time() - t0:.0f} s): Tessera "
            f"{exe} (source {source}), {platform.machine()}, {os.cpu_count()} cores; sections: {', '.join(a.sections)}.",
            ""]
    with open(a.out, "w") as f:
        f.write("\n".join(head + body))
    print(f"wrote {a.out}; {bad} defect outcomes", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
