#!/usr/bin/python3
"""Regenerates bench/KERNELS.md: Tessera's convolution and matrix-product
kernels beside oneDNN's on the shapes of the benchmark models, in GFLOP/s and
as a fraction of the machine's FMA peak.

Shapes: every distinct Conv of the nine models of bench/perf_harness.py (their
exports in bench/out/perf/<model>/model.onnx, made by
`perf_harness.py --export-only` when missing; shapes from onnx.shape_inference,
attributes group/strides/pads/dilations/kernel_shape), every distinct
MatMul/Gemm of those models (ViT's and BERT's projections and attention
products, the classifier heads), and square GEMMs 1024, 1536, 2048, 3072, 4096.
Shapes are deduplicated across models; the table says which models use each
and how often.

For every ISA (--isa) and thread count (--threads):
  peak     bench/kernels/fma_peak.cpp: the FMA peak for this ISA and thread
           count (zmm for avx512, ymm for avx2), median of 7 repeats, measured
           before and after the shapes; the higher of the two is used;
  Tessera  one ONNX model per shape in bench/out/kernels/models/ (one node,
           weights and bias as initializers, as in the real models), timed by
           `tessera bench MODEL --threads T --isa ISA --runs R --profile 1000
           --no-fusion`: the per-step medians of the steps whose op contains
           Conv, MatMul or Gemm are the kernel time (a 3x3 convolution Tessera
           runs as Winograd F(4x4, 3x3) is three steps, WinogradInput,
           WinogradGemm and WinogradOutput: all kernel time); layout-reorder steps (op
           containing "Reorder") and any other step are reported in a column
           of their own. --no-fusion keeps the reorders that Tessera puts
           around a blocked-layout convolution out of the convolution's step (in
           a model, consecutive convolutions share the layout and do without
           them); with --fusion they may be fused in, and are then kernel time
           (flagged);
           the binary is copied to bench/out/kernels/ first, so a rebuild
           during the run cannot mix two builds;
  oneDNN   bench/kernels/dnnl_bench.cpp (Debian's libdnnl-dev, one process per
           ISA and thread count, fed shape by shape): f32 matmul / direct
           forward convolution with bias, format `any` for source, weights and
           destination, reorders outside the timing, median of R runs after
           warm-up. MatMuls with constant weights are given to oneDNN as one
           2-D GEMM (leading dimensions folded into M); products of two
           activations (attention) as batched matmuls with plain layouts.
Each shape's Tessera and oneDNN runs follow each other, so drift of the
machine's load hits both alike. The machine may be shared: during every
measurement the harness measures the cores other processes use (/proc/stat
less its own and its children's CPU time); after a busy measurement (more than
--busy-cores) it waits for a quiet machine (--quiet-wait, --quiet-budget) and
measures again, keeping the quieter result; what stays busy is marked. GFLOP/s = 2 * MACs / median time (bias not
counted); % peak is of the measured peak for the same ISA and threads.

Runs: --runs R (default 20) per shape and runtime; shapes whose estimated time
would make one measurement take more than --max-seconds get fewer runs (at
least 5) — the JSON records the runs of each cell and KERNELS.md lists them.
The square GEMMs are measured --square-rounds times (default 3), Tessera and
oneDNN alternating, and each keeps its median round: a slow moment of this
shared machine during one measurement does not decide them. A short FMA probe
runs before and after each round; a round either probe finds under 90% of
the peak (a vCPU taken away: 2-thread kernels then run at half speed) is
measured again and recorded in degraded_rounds.

Usage (from the repository root):
    nice -n 10 /usr/bin/python3 bench/kernel_bench.py [--threads 1 2] [--isa avx512 avx2] [--runs 20]
        [--tessera /work/main/build/tessera] [--perf-dir bench/out/perf] [--quick] [--only REGEX]
    nice -n 10 /usr/bin/python3 bench/kernel_bench.py --rerun-busy   # again what other load disturbed
    /usr/bin/python3 bench/kernel_bench.py --report-only      # KERNELS.md again from results.json
Writes bench/KERNELS.md (--out) and bench/out/kernels/results.json (--work).
Needs g++, Debian's libdnnl-dev and python3-onnx (scripts/install-bench-deps.sh;
exporting missing models also needs python3-torch and python3-torchvision).
Not a CI dependency.
"""
import argparse
import collections
import datetime
import hashlib
import json
import math
import os
import platform
import queue
import re
import resource
import shlex
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import kernel_report  # noqa: E402
KERNELS_SRC = os.path.join(HERE, "kernels")
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "resnext50_32x4d", "inception_v3", "efficientnet_b0", "vgg16",
          "vit_b_16", "bert_base"]
SQUARES = [1024, 1536, 2048, 3072, 4096]
OPSET = 13
MIN_CAPPED_RUNS = 5
KERNEL_OPS = ("Conv", "MatMul", "Gemm", "Winograd")  # a Winograd convolution: its three steps
DEFAULT_TESSERA = "/work/main/build/tessera" if os.path.exists("/work/main/build/tessera") else os.path.join(
    ROOT, "build", "tessera")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rel(path):
    return os.path.relpath(path, ROOT) if os.path.abspath(path).startswith(ROOT + os.sep) else path


# ---------------------------------------------------------------------------
# shapes


def conv_shape(n, c, h, w, k, kh, kw, strides, pads, dilations, group):
    """A convolution shape dict; pads are ONNX's [top, left, bottom, right]."""
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    oh = (h + pt + pb - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + pl + pr - (dw * (kw - 1) + 1)) // sw + 1
    s = {"kind": "conv", "n": n, "c": c, "h": h, "w": w, "k": k, "kh": kh, "kw": kw, "strides": [sh, sw],
         "pads": [pt, pl, pb, pr], "dilations": [dh, dw], "group": group, "oh": oh, "ow": ow}
    s["macs"] = n * k * oh * ow * (c // group) * kh * kw
    pad = f"p{pt}" if len(set(pads)) == 1 else "p" + ",".join(map(str, pads))
    extra = (f" g{group}" if group > 1 else "") + (f" d{dh}" if dh == dw and dh > 1 else
                                                      f" d{dh},{dw}" if (dh, dw) != (1, 1) else "")
    stride = f"s{sh}" if sh == sw else f"s{sh},{sw}"
    s["label"] = f"{c}x{h}x{w} -> {k}, {kh}x{kw} {stride} {pad}{extra}" + (f" (N={n})" if n != 1 else "")
    s["id"] = (f"conv_n{n}_c{c}_h{h}_w{w}_k{k}_{kh}x{kw}_s{sh}x{sw}_p{pt}-{pl}-{pb}-{pr}_d{dh}x{dw}_g{group}")
    if group > 1 and group == c and group == k:
        s["class"] = "depthwise conv"
    elif group > 1:
        s["class"] = "grouped conv"
    elif c <= 4:
        s["class"] = "stem conv (C <= 4)"
    elif kh == 1 and kw == 1:
        s["class"] = "1x1 conv"
    else:
        s["class"] = "KxK conv"
    return s


def matmul_shape(op, a, b, const_b, trans_b=False, bias=False):
    """A MatMul/Gemm shape dict; a and b as the ONNX node sees them."""
    a, b = list(a), list(b)
    if op == "Gemm":
        m, k = a
        n = b[0] if trans_b else b[1]
        batch = 1
    elif const_b and len(b) == 2:
        # constant weights: every leading dimension of A is a row of one GEMM
        m, k, n, batch = math.prod(a[:-1]), a[-1], b[-1], 1
    else:
        batch = math.prod(a[:-2]) if len(a) > 2 else 1
        if len(b) > 2 and math.prod(b[:-2]) != batch:
            raise ValueError(f"MatMul {a} x {b}: broadcast batches are not handled")
        m, k, n = a[-2], a[-1], b[-1]
    s = {"kind": "matmul", "op": op, "a": a, "b": b, "const_b": const_b, "trans_b": trans_b, "bias": bias,
         "batch": batch, "m": m, "k": k, "n": n, "macs": batch * m * k * n}
    dims = lambda d: "x".join(map(str, d))  # noqa: E731
    s["label"] = (f"{op} [{dims(a)}] x [{dims(b)}]" + ("^T" if trans_b else "") + (" + bias" if bias else "")
                  + ("" if const_b else " (B activation)"))
    s["id"] = (f"{op.lower()}_a{dims(a)}_b{dims(b)}" + ("_tb" if trans_b else "") + ("_bias" if bias else "")
               + ("" if const_b else "_act"))
    if not const_b:
        s["class"] = "batched matmul (B activation)"
    elif m == 1:
        s["class"] = "GEMV (M = 1)"
    else:
        s["class"] = "GEMM (constant B)"
    return s


def model_shapes(path):
    """(conv and matmul shape dicts, in graph order) of one ONNX model."""
    import onnx
    from onnx import helper, shape_inference
    model = shape_inference.infer_shapes(onnx.load(path))
    g = model.graph
    dims = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        t = v.type.tensor_type
        if t.HasField("shape"):
            dims[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    consts = set()
    for init in g.initializer:
        dims[init.name] = list(init.dims)
        consts.add(init.name)
    for node in g.node:  # Constant nodes count as weights too
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    dims[node.output[0]] = list(a.t.dims)
                    consts.add(node.output[0])
    out = []
    for node in g.node:
        if node.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        shapes = [dims.get(name) for name in node.input[:2]]
        if any(s is None or None in s for s in shapes):
            raise SystemExit(f"{path}: {node.op_type} {node.name!r} has inputs of unknown shape {shapes}")
        a, b = shapes
        if node.op_type == "Conv":
            if len(a) != 4:
                log(f"  skipping {node.name}: only 2-D convolutions are benchmarked (input {a})")
                continue
            n, c, h, w = a
            k, _, kh, kw = b
            strides = list(attrs.get("strides", [1, 1]))
            dil = list(attrs.get("dilations", [1, 1]))
            auto = attrs.get("auto_pad", b"NOTSET")
            auto = auto.decode() if isinstance(auto, bytes) else auto
            if auto in ("SAME_UPPER", "SAME_LOWER"):
                pads = []
                for size, kk, st, d in ((h, kh, strides[0], dil[0]), (w, kw, strides[1], dil[1])):
                    total = max(0, (math.ceil(size / st) - 1) * st + d * (kk - 1) + 1 - size)
                    small = total // 2
                    pads.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
                pads = [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]
            elif auto == "VALID":
                pads = [0, 0, 0, 0]
            else:
                pads = list(attrs.get("pads", [0, 0, 0, 0]))
            out.append(conv_shape(n, c, h, w, k, kh, kw, strides, pads, dil, attrs.get("group", 1)))
        else:
            if node.op_type == "Gemm" and attrs.get("transA", 0):
                raise SystemExit(f"{path}: Gemm {node.name!r} with transA is not handled")
            if node.op_type == "Gemm" and (attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
                log(f"  note: Gemm {node.name!r} has alpha/beta {attrs.get('alpha')}/{attrs.get('beta')}; "
                    "benchmarked with 1/1")
            const_b = node.input[1] in consts
            bias = node.op_type == "Gemm" and len(node.input) > 2 and node.input[2] != ""
            out.append(matmul_shape(node.op_type, a, b, const_b, bool(attrs.get("transB", 0)), bias))
    return out


def collect_shapes(perf_dir, models):
    """Distinct shapes over the models (plus the square GEMMs), each with the
    models that use it and how often."""
    shapes = {}
    for sq in SQUARES:
        s = matmul_shape("MatMul", [sq, sq], [sq, sq], True)
        s["models"] = {}
        shapes[s["id"]] = s
    for m in models:
        path = os.path.join(perf_dir, m, "model.onnx")
        for s in model_shapes(path):
            kept = shapes.setdefault(s["id"], dict(s, models={}))
            kept["models"][m] = kept["models"].get(m, 0) + 1
    return list(shapes.values())


def ensure_exports(perf_dir, models):
    missing = [m for m in models if not os.path.exists(os.path.join(perf_dir, m, "model.onnx"))]
    if not missing:
        return
    log(f"exporting {', '.join(missing)} with bench/perf_harness.py --export-only (needs python3-torch)")
    cmd = [sys.executable, os.path.join(HERE, "perf_harness.py"), "--export-only", "--models", ",".join(missing),
           "--work", perf_dir]
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"export failed: {' '.join(cmd)}")


# ---------------------------------------------------------------------------
# one-node models for Tessera


def write_model(s, path):
    """One-node ONNX model of shape s: weights and bias as initializers (seeded)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)  # fixed seed: the same bytes every time

    def init(name, shape, fan_in):
        bound = 1.0 / math.sqrt(max(fan_in, 1))
        return numpy_helper.from_array(rng.uniform(-bound, bound, size=shape).astype(np.float32), name)

    f32 = TensorProto.FLOAT
    if s["kind"] == "conv":
        cg = s["c"] // s["group"]
        fan = cg * s["kh"] * s["kw"]
        inits = [init("W", [s["k"], cg, s["kh"], s["kw"]], fan), init("B", [s["k"]], fan)]
        node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv", kernel_shape=[s["kh"], s["kw"]],
                                strides=s["strides"], pads=s["pads"], dilations=s["dilations"], group=s["group"])
        inputs = [helper.make_tensor_value_info("x", f32, [s["n"], s["c"], s["h"], s["w"]])]
        outputs = [helper.make_tensor_value_info("y", f32, [s["n"], s["k"], s["oh"], s["ow"]])]
    else:
        a, b = s["a"], s["b"]
        inputs = [helper.make_tensor_value_info("a", f32, a)]
        inits = []
        if s["const_b"]:
            inits.append(init("b", b, s["k"]))
        else:
            inputs.append(helper.make_tensor_value_info("b", f32, b))
        if s["op"] == "Gemm":
            names = ["a", "b"]
            if s["bias"]:
                inits.append(init("c", [s["n"]], s["k"]))
                names.append("c")
            node = helper.make_node("Gemm", names, ["y"], name="gemm", transB=1 if s["trans_b"] else 0)
            out_dims = [s["m"], s["n"]]
        else:
            node = helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")
            lead = a[:-1] if len(b) == 2 else (a[:-2] if len(a) >= len(b) else b[:-2]) + [a[-2]]
            out_dims = list(lead) + [s["n"]]
        outputs = [helper.make_tensor_value_info("y", f32, out_dims)]
    graph = helper.make_graph([node], s["id"], inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="kernel_bench")
    onnx.checker.check_model(model)
    tmp = path + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# the two native programs


def build_native(work, cxx):
    """g++-builds fma_peak and dnnl_bench into work/ when missing or older than their source."""
    bins = {}
    for name, extra in (("fma_peak", ["-pthread"]), ("dnnl_bench", ["-ldnnl", "-fopenmp", "-pthread"])):
        src = os.path.join(KERNELS_SRC, name + ".cpp")
        exe = os.path.join(work, name)
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
            cmd = [cxx, "-O2", "-std=c++17", "-Wall", "-Wextra", src, "-o", exe] + extra
            log("building " + " ".join(shlex.quote(rel(c)) for c in cmd))
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                hint = " (is libdnnl-dev installed? scripts/install-bench-deps.sh)" if name == "dnnl_bench" else ""
                sys.exit(f"building {name} failed{hint}:\n{r.stderr[-3000:]}")
        bins[name] = exe
    return bins


def measure_peak(gate, exe, isa, threads):
    """fma_peak under the load meter; measured once more when other processes were busy."""
    gate.load.start()
    peak, err = fma_peak(exe, isa, threads)
    if peak is None:
        return None, err
    peak["others_cores"] = round(gate.load.stop(), 3)
    if peak["others_cores"] > gate.threshold:
        gate.wait("the FMA peak again")
        gate.load.start()
        again, _ = fma_peak(exe, isa, threads)
        if again is not None:
            again["others_cores"] = round(gate.load.stop(), 3)
            if again["gflops"] > peak["gflops"]:
                peak = again
    return peak, None


# A square GEMM round counts only when a short FMA probe before and after it
# reads at least this fraction of the configuration's peak; the probe waits
# up to PROBE_WAIT_S for the machine to recover.
PROBE_FRACTION = 0.9
PROBE_WAIT_S = 30
# A probe reading more than this times the peak has the peak measured again.
PEAK_RECHECK = 1.03


def fma_peak(exe, isa, threads, extra=()):
    r = subprocess.run([exe, "--isa", isa, "--threads", str(threads), *extra], capture_output=True, text=True)
    fields = dict(kv.split("=", 1) for kv in r.stdout.split()[1:] if "=" in kv)
    if r.returncode != 0 or "gflops" not in fields:
        return None, r.stdout.strip() or r.stderr.strip()
    return {k: float(v) if re.fullmatch(r"[-+0-9.eE]+", v) else v for k, v in fields.items()}, None


# ---------------------------------------------------------------------------
# other processes' load: the machine is shared, and a thread of a 2-thread
# kernel that shares its core with another process stalls the whole kernel

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_busy_seconds():
    """CPU time the whole machine has spent busy (all cores, /proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


def proc_cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


class OtherLoad:
    """Cores used by processes other than this harness, its children and the
    oneDNN worker, over a measurement (from start() to stop()). /proc/stat
    counts clock ticks, so a measurement shorter than MIN_WINDOW is judged over
    the last MIN_WINDOW seconds, the moments before it included."""

    MIN_WINDOW = 0.5

    def __init__(self):
        self.worker_pid = None
        self.points = collections.deque(maxlen=64)  # (time, machine busy s, mine s)

    def set_worker(self, pid):
        # a new worker's CPU time counts from its start, a closed (waited) one's is in RUSAGE_CHILDREN:
        # the sum stays continuous
        self.worker_pid = pid

    def _point(self):
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        mine = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
        if self.worker_pid:
            mine += proc_cpu_seconds(self.worker_pid)
        p = (time.time(), cpu_busy_seconds(), mine)
        self.points.append(p)
        return p

    def start(self):
        self._point()

    def stop(self):
        now = self._point()
        ref = self.points[0]
        for p in reversed(list(self.points)[:-1]):
            if now[0] - p[0] >= self.MIN_WINDOW:
                ref = p
                break
        wall = now[0] - ref[0]
        others = (now[1] - ref[1]) - (now[2] - ref[2])
        return max(0.0, others / wall) if wall > 0 else 0.0

    def sample(self, seconds=0.5):
        self.start()
        time.sleep(seconds)
        return self.stop()


class QuietGate:
    """Waits, before a measurement, until other processes use less than
    `threshold` cores (at most `per_wait` seconds each time and `budget`
    seconds over the whole run)."""

    def __init__(self, threshold, per_wait, budget):
        self.threshold, self.per_wait, self.budget = threshold, per_wait, budget
        self.waited = 0.0
        self.load = OtherLoad()

    def wait(self, what):
        if self.waited >= self.budget:
            return None  # the run's waiting is used up: measure as it comes
        t0 = time.time()
        others = self.load.sample()
        told = False
        while others > self.threshold and time.time() - t0 < self.per_wait and self.waited + (
                time.time() - t0) < self.budget:
            if not told:
                log(f"  other processes use {others:.2f} cores: waiting for a quieter machine before {what}")
                told = True
            others = self.load.sample(0.5)
        self.waited += time.time() - t0
        return others


def measured(gate, fn):
    """fn() timed under the load meter: its result with others_cores added."""
    gate.load.start()
    res = fn()
    res["others_cores"] = round(gate.load.stop(), 3)
    return res


class DnnlWorker:
    """dnnl_bench kept running for one ISA and thread count; one request line, one result line."""

    def __init__(self, exe, isa, threads, env):
        env = dict(env, OMP_NUM_THREADS=str(threads))
        self.proc = subprocess.Popen([exe, "--isa", isa, "--threads", str(threads)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self._next(60)
        if not self.ready or not self.ready.startswith("ready"):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            raise RuntimeError(f"dnnl_bench did not start: {self.ready!r} {err.strip()[-500:]}")
        self.info = dict(kv.split("=", 1) for kv in self.ready.split()[1:])

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _next(self, timeout):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def request(self, line, timeout):
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return {"status": "error", "msg": "dnnl_bench exited"}
        reply = self._next(timeout)
        if reply is None:
            self.close()
            return {"status": "error", "msg": f"no reply within {timeout:.0f} s or dnnl_bench exited"}
        fields = dict(kv.split("=", 1) for kv in reply.split()[2:] if "=" in kv)
        return {k: float(v) if k.endswith("ms") else int(v) if k == "runs" else v for k, v in fields.items()}

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def dnnl_request(s, runs, warmup):
    if s["kind"] == "conv":
        p = s
        fields = ["conv", s["id"], p["n"], p["c"], p["h"], p["w"], p["k"], p["kh"], p["kw"], *p["strides"],
                  *p["pads"], *p["dilations"], p["group"], 1]
    else:
        fields = ["matmul", s["id"], s["batch"], s["m"], s["k"], s["n"], int(s["const_b"]), int(s["bias"])]
    return " ".join(map(str, fields + [runs, warmup]))


# ---------------------------------------------------------------------------
# Tessera


STEP_RE = re.compile(r"^\s*(\d+)\s+(\S+)\s+(.+?)\s+([0-9.]+)\s+(\S+)\s*$")


def parse_tessera(out):
    """Steps (node, op, ms, reference?) and the totals of `tessera bench --profile`."""
    res = {"steps": []}
    m = re.search(r"^compile\s+([0-9.]+) ms \((\d+) compiled kernels, (\d+) reference steps\)", out, re.M)
    if m:
        res["compile_ms"] = float(m.group(1))
        res["compiled_kernels"], res["reference_steps"] = int(m.group(2)), int(m.group(3))
    m = re.search(r"^latency\s+median ([0-9.]+) ms", out, re.M)
    if m:
        res["latency_ms"] = float(m.group(1))
    in_steps = False
    for line in out.splitlines():
        if re.match(r"^\s*slowest \d+ steps:", line):
            in_steps = True
            continue
        if not in_steps or re.match(r"^\s*step\s+node\s+op", line):
            continue
        sm = STEP_RE.match(line)
        if not sm:
            in_steps = False
            continue
        op = sm.group(3).strip()
        res["steps"].append({"step": int(sm.group(1)), "node": sm.group(2), "op": op.rstrip("*"),
                             "reference": op.endswith("*"), "ms": float(sm.group(4))})
    return res


def classify_steps(steps):
    """(kernel ms, reorder ms, other ms, reorder fused?): the Conv/MatMul/Gemm
    steps, layout-reorder steps and the rest. A reorder fused into the kernel's
    step (op "ReorderToBlocked+ConvBlocked+...") cannot be told apart: it counts
    as kernel time and the flag says so."""
    kernel = reorder = other = 0.0
    fused = False
    for st in steps:
        if any(k in st["op"] for k in KERNEL_OPS):
            kernel += st["ms"]
            fused = fused or "reorder" in st["op"].lower()
        elif "reorder" in st["op"].lower():
            reorder += st["ms"]
        else:
            other += st["ms"]
    return kernel, reorder, other, fused


def run_tessera(tessera, model, isa, threads, runs, warmup, env, timeout, fusion=False):
    cmd = [tessera, "bench", model, "--threads", str(threads), "--isa", isa, "--runs", str(runs),
           "--warmup", str(warmup), "--profile", "1000"] + ([] if fusion else ["--no-fusion"])
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "msg": f"timed out after {timeout:.0f} s"}
    wall = time.time() - t0
    if r.returncode != 0:
        tail = [l for l in (r.stderr + r.stdout).replace("\r", "\n").splitlines() if l.strip()]
        return {"status": "error", "msg": (tail[-1] if tail else f"exit code {r.returncode}")[:300]}
    res = parse_tessera(r.stdout)
    if not res["steps"]:
        return {"status": "error", "msg": "no per-step profile in the output of tessera bench"}
    kernel, reorder, other, fused = classify_steps(res["steps"])
    ops = "; ".join(st["op"] + ("*" if st["reference"] else "") for st in sorted(res["steps"], key=lambda x: x["step"]))
    res.update(runs=runs, wall_s=round(wall, 2), ops=ops, reorder_ms=reorder, other_ms=other, reorder_fused=fused)
    if not any(any(k in st["op"] for k in KERNEL_OPS) for st in res["steps"]):
        res.update(status="error", msg=f"no Conv/MatMul/Gemm step in the profile: {ops}")
    elif kernel <= 0:
        # the profile prints ms with three decimals: below 1 us it reads 0.000
        res.update(status="unresolved", msg="below the profile's 0.001 ms resolution")
    else:
        res.update(status="ok", ms=kernel)
    return res


# ---------------------------------------------------------------------------
# the run


def estimate_seconds(s, peak_gflops):
    """A rough time of one run (half the peak, or streaming the weights at 10 GB/s)."""
    flops = 2 * s["macs"]
    weight_bytes = 4 * (s["k"] * s["n"] if s["kind"] == "matmul" and s["const_b"] else 0)
    return max(flops / (0.5 * peak_gflops * 1e9), weight_bytes / 10e9, 1e-6)


def runs_for(s, args, peak_gflops):
    """Runs and warm-ups for one shape: --runs, fewer when a measurement would
    exceed --max-seconds (Tessera times 2 * runs + warm-up runs)."""
    est = estimate_seconds(s, peak_gflops)
    runs = args.runs
    if est * (2 * runs + 3) > args.max_seconds:
        runs = max(MIN_CAPPED_RUNS, min(runs, int(args.max_seconds / est / 2)))
        return runs, 1, 1, runs < args.runs
    return runs, 3, 5, False


def versions(tessera, snapshot, dnnl_info, cxx):
    import onnx
    v = {"onnx": onnx.__version__, "python": platform.python_version()}
    r = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    v["g++"] = r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else "?"
    v["onednn"] = dnnl_info.get("dnnl", "?") if dnnl_info else "?"
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libdnnl-dev"], capture_output=True, text=True)
    v["libdnnl-dev"] = r.stdout.strip() or "?"
    src = os.path.dirname(os.path.dirname(os.path.abspath(tessera)))
    r = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty"], capture_output=True, text=True)
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(snapshot)))
    with open(snapshot, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    v["tessera"] = (f"{tessera} (source {src} at {r.stdout.strip() or '?'}, binary built {stamp}, "
                    f"sha256 {digest}...)")
    return v


def machine():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        text = f.read()
    for line in text.splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    isa = "AVX-512" if " avx512f" in text else "AVX2" if " avx2" in text else "no AVX2"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": isa, "memory_gib": round(mem, 1),
            "kernel": platform.release()}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts (default: 1 2)")
    ap.add_argument("--isa", nargs="+", default=["avx512", "avx2"], choices=["avx512", "avx2"],
                    help="ISAs (default: avx512 avx2)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per shape and runtime (default 20; 3 with "
                    "--quick)")
    ap.add_argument("--max-seconds", type=float, default=6.0, help="cap on one measurement's estimated time: "
                    f"slower shapes get fewer runs (at least {MIN_CAPPED_RUNS})")
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS, help="models whose shapes to take")
    ap.add_argument("--square-rounds", type=int, default=3, help="square GEMMs: measure Tessera and oneDNN "
                    "this many times, alternating, and keep each one's median round (default 3)")
    ap.add_argument("--only", default=None, help="only shapes whose id or label matches this regex")
    ap.add_argument("--quick", action="store_true", help="smoke test: a few shapes of each class, 3 runs; "
                    "KERNELS.md is marked as not a valid result")
    ap.add_argument("--tessera", default=DEFAULT_TESSERA, help="the tessera binary to measure (default: "
                    "/work/main/build/tessera, the main checkout's build, where it exists, else build/tessera)")
    ap.add_argument("--perf-dir", default=os.path.join(HERE, "out", "perf"),
                    help="where the models' exports are (bench/perf_harness.py's --work)")
    ap.add_argument("--work", default=os.path.join(HERE, "out", "kernels"), help="binaries, models, results.json")
    ap.add_argument("--out", default=HERE, help="directory for KERNELS.md")
    ap.add_argument("--fusion", action="store_true", help="let Tessera fuse the layout reorders into the "
                    "convolution's step (default --no-fusion: each reorder is a step of its own, timed apart)")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--timeout", type=float, default=600, help="seconds one Tessera or oneDNN measurement may take")
    ap.add_argument("--busy-cores", type=float, default=0.25, help="other processes using more cores than this "
                    "make a measurement busy: it is taken again after waiting for a quieter machine")
    ap.add_argument("--quiet-wait", type=float, default=30, help="seconds to wait for a quiet machine each time")
    ap.add_argument("--quiet-budget", type=float, default=300, help="seconds of waiting over the whole run")
    ap.add_argument("--rerun-busy", action="store_true", help="measure again the cells of results.json that "
                    "other processes disturbed (same binary copy, same runs); keep the quieter")
    ap.add_argument("--report-only", action="store_true", help="write KERNELS.md from the existing results.json")
    args = ap.parse_args(argv)
    if args.runs is None:
        args.runs = 3 if args.quick else 20
    if args.runs < 1 or min(args.threads) < 1:
        ap.error("--runs and --threads must be >= 1")
    args.tessera = os.path.abspath(args.tessera)
    return args


def pick_quick(shapes):
    """A few shapes of every class: the smallest and the largest by MACs."""
    by_class = {}
    for s in shapes:
        by_class.setdefault(s["class"], []).append(s)
    keep = set()
    for group in by_class.values():
        group.sort(key=lambda s: s["macs"])
        keep.add(group[0]["id"])
        keep.add(group[len(group) // 2]["id"])
    keep.add("matmul_a1024x1024_b1024x1024")
    keep.discard("matmul_a4096x4096_b4096x4096")
    return [s for s in shapes if s["id"] in keep]


def main(argv=None):
    args = parse_args(argv)
    json_path = os.path.join(args.work, "results.json")
    if args.report_only:
        with open(json_path) as f:
            results = json.load(f)
        log(f"wrote {kernel_report.write(results, args.out)}")
        return 0
    if args.rerun_busy:
        return rerun_busy(args, json_path)
    os.makedirs(os.path.join(args.work, "models"), exist_ok=True)
    if not os.path.exists(args.tessera):
        sys.exit(f"{args.tessera} does not exist (build Tessera or pass --tessera)")
    bins = build_native(args.work, args.cxx)
    # a copy of the binary, so a rebuild of it during the run cannot mix two builds in one table
    tessera = os.path.join(args.work, "tessera")
    shutil.copy2(args.tessera, tessera)
    r = subprocess.run([tessera, "zoo"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{args.tessera} does not run: {r.stderr.strip()[-500:]}")

    ensure_exports(args.perf_dir, args.models)
    log(f"collecting shapes from {len(args.models)} models in {rel(args.perf_dir)}")
    shapes = collect_shapes(args.perf_dir, args.models)
    n_all = len(shapes)
    if args.quick:
        shapes = pick_quick(shapes)
    if args.only:
        rx = re.compile(args.only)
        shapes = [s for s in shapes if rx.search(s["id"]) or rx.search(s["label"])]
    if not shapes:
        sys.exit("no shapes selected")
    log(f"{n_all} distinct shapes, {len(shapes)} selected")
    for i, s in enumerate(shapes):
        path = os.path.join(args.work, "models", s["id"] + ".onnx")
        s["model"] = path
        if not os.path.exists(path):
            write_model(s, path)
    log(f"one-node models in {rel(os.path.join(args.work, 'models'))}")

    env = tessera_env(args)
    command = " ".join(shlex.quote(a) for a in [sys.executable, rel(os.path.abspath(sys.argv[0]))]
                       + (sys.argv[1:] if argv is None else argv))
    results = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": command,
               "quick": args.quick, "runs": args.runs, "max_seconds": args.max_seconds, "isas": args.isa,
               "square_rounds": args.square_rounds, "probe_fraction": PROBE_FRACTION,
               "busy_cores": args.busy_cores, "quiet_wait": args.quiet_wait, "quiet_budget": args.quiet_budget,
               "tessera_fusion": args.fusion,
               "threads": args.threads, "models": args.models, "machine": machine(), "shapes_total": n_all,
               "shapes": {s["id"]: {k: v for k, v in s.items() if k != "model"} for s in shapes}, "configs": {}}
    t_start = time.time()
    gate = QuietGate(args.busy_cores, args.quiet_wait, args.quiet_budget)
    dnnl_info = None
    for isa in args.isa:
        for threads in args.threads:
            cfg = results["configs"][f"{isa}/{threads}"] = {"isa": isa, "threads": threads, "cells": {}}
            run = ConfigRun(cfg, args, bins, tessera, env, gate)
            if not run.start():
                continue
            dnnl_info = run.dnnl_info or dnnl_info
            for i, s in enumerate(shapes):
                runs, t_warm, d_warm, capped = runs_for(s, args, cfg["peak"]["gflops"])
                rounds = 1 if s["models"] else max(args.square_rounds, 1)
                cell = dict(run.measure_rounds(s, runs, t_warm, d_warm, rounds), runs=runs, capped=capped)
                cfg["cells"][s["id"]] = cell
                log(f"[{run.key}] {i + 1}/{len(shapes)} {s['label']}: "
                    f"{kernel_report.progress(s, cell, cfg['peak'])}")
            run.finish()
            with open(json_path, "w") as f:  # after every configuration: an interrupted run keeps its data
                json.dump(results, f, indent=1)
    results["versions"] = versions(args.tessera, tessera, dnnl_info, args.cxx)
    results["total_seconds"] = round(time.time() - t_start)
    results["quiet_wait_seconds"] = round(gate.waited)
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
    md = kernel_report.write(results, args.out)
    log(f"wrote {rel(md)} and {rel(json_path)} ({results['total_seconds']} s)")
    return 0


def tessera_env(args):
    env = dict(os.environ)
    env["TESSERA_CACHE_DIR"] = os.path.join(args.work, "cache")  # fusion profiles apart from the user's
    return env


class ConfigRun:
    """One ISA and thread count: its FMA peak, its oneDNN worker, its shapes."""

    def __init__(self, cfg, args, bins, tessera, env, gate):
        self.cfg, self.args, self.bins, self.tessera, self.env, self.gate = cfg, args, bins, tessera, env, gate
        self.isa, self.threads = cfg["isa"], cfg["threads"]
        self.key = f"{self.isa}/{self.threads}"
        self.worker = None
        self.dnnl_info = None
        self.others = 1.0  # unknown: the first measurement waits for a quiet machine

    def start(self):
        """Measures the peak (kept if higher than one already there) and starts the oneDNN worker."""
        self.gate.wait("the FMA peak")
        peak, err = measure_peak(self.gate, self.bins["fma_peak"], self.isa, self.threads)
        if peak is None:
            log(f"[{self.key}] no FMA peak ({err}); skipping this ISA")
            self.cfg["skipped"] = err
            return False
        self.keep_peak(peak, "peak_before" if "peak" not in self.cfg else "peak_rerun")
        try:
            self.worker = DnnlWorker(self.bins["dnnl_bench"], self.isa, self.threads, self.env)
            self.dnnl_info = self.worker.info
            self.cfg["onednn_isa"] = self.worker.info.get("isa")
        except RuntimeError as e:
            self.cfg["onednn_error"] = str(e)
            log(f"[{self.key}] {e}")
        return True

    def keep_peak(self, peak, name):
        self.cfg[name] = peak
        if "peak" not in self.cfg or peak["gflops"] > self.cfg["peak"]["gflops"]:
            self.cfg["peak"] = peak
        log(f"[{self.key}] FMA peak {peak['gflops']:.1f} GFLOP/s (max {peak['max_gflops']:.1f}, other processes "
            f"{peak['others_cores']:.2f} cores); using {self.cfg['peak']['gflops']:.1f}")

    def finish(self):
        """Closes the worker and measures the peak again: the higher median is the peak (other load on the
        machine only lowers a measurement)."""
        if self.worker is not None:
            self.worker.close()
            self.gate.load.set_worker(None)
            self.worker = None
        self.gate.wait("the FMA peak")
        after, _ = measure_peak(self.gate, self.bins["fma_peak"], self.isa, self.threads)
        if after is not None:
            self.keep_peak(after, "peak_after" if "peak_after" not in self.cfg else "peak_rerun_after")

    def _tessera_once(self, s, runs, warmup):
        return measured(self.gate, lambda: run_tessera(self.tessera, s["model"], self.isa, self.threads, runs,
                                                       warmup, self.env, self.args.timeout, self.args.fusion))

    def _onednn_once(self, s, runs, warmup):
        if self.worker is None:
            return {"status": "error", "msg": self.cfg.get("onednn_error", "no worker")}
        if self.gate.load.worker_pid != self.worker.proc.pid:
            self.gate.load.set_worker(self.worker.proc.pid)
        res = measured(self.gate, lambda: self.worker.request(dnnl_request(s, runs, warmup), self.args.timeout))
        if self.worker.proc.poll() is not None:  # crashed or killed: a fresh one for the next shape
            try:
                self.worker = DnnlWorker(self.bins["dnnl_bench"], self.isa, self.threads, self.env)
            except RuntimeError as e:
                self.worker = None
                log(f"[{self.key}] {e}")
        return res

    def probe(self):
        """A short FMA peak (3 x 50 ms) at this configuration's ISA and threads, as a fraction of its peak. A
        probe that reads PEAK_RECHECK above the peak shows the peak itself was measured in a slow moment (one
        read 419 GFLOP/s, max 462, and put 2048 at 101%): the full peak is measured again, the higher kept."""
        p, _ = fma_peak(self.bins["fma_peak"], self.isa, self.threads, ["--seconds", "0.05", "--repeats", "3"])
        if not p:
            return 1.0
        if p["gflops"] > PEAK_RECHECK * self.cfg["peak"]["gflops"]:
            log(f"  [{self.key}] FMA probe read {p['gflops']:.1f} GFLOP/s, above the peak: measuring the peak again")
            again, _ = measure_peak(self.gate, self.bins["fma_peak"], self.isa, self.threads)
            if again:
                self.keep_peak(again, "peak_recheck")
        return p["gflops"] / self.cfg["peak"]["gflops"]

    def steady_probe(self, what):
        """probe(), again every 2 s for up to PROBE_WAIT_S while it reads under PROBE_FRACTION: in this VM a
        vCPU is sometimes taken for seconds, and a 2-thread kernel then runs at half speed."""
        t0, ratio = time.time(), self.probe()
        while ratio < PROBE_FRACTION and time.time() - t0 < PROBE_WAIT_S:
            log(f"  [{self.key}] FMA probe at {ratio:.0%} of the peak: waiting before {what}")
            time.sleep(2)
            ratio = self.probe()
        return ratio

    def measure_rounds(self, s, runs, t_warm, d_warm, rounds):
        """measure() `rounds` times, Tessera and oneDNN alternating; each runtime's result is its round with
        the median time (its other rounds' times in "rounds_ms"), so a slow moment of the machine during one
        round does not decide the shape (the square GEMMs, which the acceptance of the kernels rests on).
        With several rounds, a short FMA probe runs before and after each; a round either probe finds under
        PROBE_FRACTION of the peak (the machine itself slowed) is measured again, up to `rounds` extra
        times, and listed in "degraded_rounds"."""
        if rounds == 1:
            return self.measure(s, runs, t_warm, d_warm)
        cells, degraded = [], []
        for _ in range(2 * rounds):
            if len(cells) == rounds:
                break
            before = self.steady_probe(s["label"])
            cell = self.measure(s, runs, t_warm, d_warm)
            after = self.probe()
            if min(before, after) < PROBE_FRACTION:
                degraded.append({rt: c.get("ms") for rt, c in cell.items()} | {"probe": round(min(before, after), 2)})
                log(f"  [{self.key}] {s['label']}: the FMA probe read {min(before, after):.0%} of the peak "
                    "around this round; measuring it again")
                continue
            cells.append(cell)
        cells = cells or [cell]  # every round degraded: the last one stands (its probe is in degraded_rounds)
        out = {}
        for rt in cells[0]:
            ok = sorted((c[rt] for c in cells if c[rt].get("status") == "ok"), key=lambda r: r["ms"])
            if not ok:
                out[rt] = cells[-1][rt]
                continue
            out[rt] = dict(ok[(len(ok) - 1) // 2], rounds_ms=[c[rt].get("ms") for c in cells])
        out["degraded_rounds"] = degraded
        return out

    def measure(self, s, runs, t_warm, d_warm):
        """{"tessera": ..., "onednn": ...} for shape s, one after the other; a measurement during which other
        processes were busy is taken once more after waiting for a quiet machine, the quieter one kept."""
        cell = {}
        for rt, once, warm in (("tessera", self._tessera_once, t_warm), ("onednn", self._onednn_once, d_warm)):
            if self.others > self.args.busy_cores:
                self.gate.wait(f"{rt} on {s['label']}")
            res = once(s, runs, warm)
            if res.get("others_cores", 0) > self.args.busy_cores:
                self.gate.wait(f"measuring {rt} on {s['label']} again")
                again = once(s, runs, warm)
                again["busy_retry"] = True
                if again.get("others_cores", 0) < res.get("others_cores", 0):
                    res = again
            self.others = res.get("others_cores", 0)
            cell[rt] = res
        return cell


def cell_load(cell):
    return max(cell.get(rt, {}).get("others_cores", 0) for rt in ("tessera", "onednn"))


def rerun_busy(args, json_path):
    """Measures again the cells of results.json that were busy, with the same Tessera binary (the copy the
    run made), and keeps each new cell that is quieter than the old one."""
    with open(json_path) as f:
        results = json.load(f)
    tessera = os.path.join(args.work, "tessera")
    digest = re.search(r"sha256 ([0-9a-f]+)", results.get("versions", {}).get("tessera", ""))
    with open(tessera, "rb") as f:
        if not digest or not hashlib.sha256(f.read()).hexdigest().startswith(digest.group(1)):
            sys.exit(f"{rel(tessera)} is not the binary results.json was measured with: run the benchmark again")
    bins = build_native(args.work, args.cxx)
    env = tessera_env(args)
    args.fusion = results.get("tessera_fusion", True)  # as the run was measured
    gate = QuietGate(args.busy_cores, args.quiet_wait, args.quiet_budget)
    t_start = time.time()
    replaced = tried = 0
    for cfg in results["configs"].values():
        todo = [i for i, c in cfg.get("cells", {}).items() if cell_load(c) > results["busy_cores"]]
        if not todo:
            continue
        run = ConfigRun(cfg, args, bins, tessera, env, gate)
        if not run.start():
            continue
        for n, i in enumerate(todo):
            s = dict(results["shapes"][i], model=os.path.join(args.work, "models", i + ".onnx"))
            old = cfg["cells"][i]
            capped = old.get("capped", False)
            new = run.measure(s, old["runs"], 1 if capped else 3, 1 if capped else 5)
            tried += 1
            if cell_load(new) < cell_load(old):
                cfg["cells"][i] = dict(new, runs=old["runs"], capped=capped, rerun=True)
                replaced += 1
            log(f"[{run.key}] rerun {n + 1}/{len(todo)} {s['label']}: "
                f"{kernel_report.progress(s, cfg['cells'][i], cfg['peak'])}")
        run.finish()
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
    results.setdefault("reruns", []).append({
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "measured": tried, "replaced": replaced,
        "seconds": round(time.time() - t_start), "quiet_wait_seconds": round(gate.waited)})
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
    log(f"{tried} busy cells measured again, {replaced} replaced; wrote {rel(kernel_report.write(results, args.out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
