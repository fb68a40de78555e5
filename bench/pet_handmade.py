#!/usr/bin/python3
"""PET's transformations written by hand at the ONNX level (issue 19): what
each buys in Tessera's compiled code before the search exists.

Rewrites (each output model goes to its own folder with the source export's
input_*.npy, torch_output.npy and meta.json, so bench/perf_harness.py-style
tools and `tessera run --inputs` take it as it is):

  d2h     every 3x3 conv with dilation 2, pads 2, stride 1, one group, on an
          even H and W becomes R/T -> the same conv with dilation 1, pads 1 ->
          inverse R/T, where R/T is space to batch, [N,C,H,W] ->
          Reshape [N,C,H/2,2,W/2,2] -> Transpose (3,5,0,1,2,4) -> Reshape
          [4N,C,H/2,W/2] (batch index (2a+b)N+n holds the phase x[n,:,a::2,b::2]).
          Exact: a dilation-2 tap of phase (a,b) reads only phase (a,b), and
          with H, W even the zero padding of the phases is the original's.
          --mode per-conv puts an R/T pair around every conv; --mode chain
          keeps the values between consecutive rewritten convs (through their
          Relus) in the batch form, so one R/T opens the run and one inverse
          closes it (the form PET's post-optimizations reach).
  merge1x1  1x1 convs (stride 1, no pads, one group) reading one value
          become one conv with the output channels concatenated and a Split
          (PET's "merge-parallel-conv"); --only NAME_PART limits it to the
          convs whose names contain NAME_PART (e.g. Mixed_5b).

Usage:
  /usr/bin/python3 bench/pet_handmade.py d2h SRC_DIR OUT_DIR [--mode per-conv|chain]
  /usr/bin/python3 bench/pet_handmade.py merge1x1 SRC_DIR OUT_DIR [--only NAME_PART]
  /usr/bin/python3 bench/pet_handmade.py merge-matmul SRC_DIR OUT_DIR
      MatMuls of one value by constant [K, N_i] weights -> one MatMul + Split
      (PET's "merge-batched-matmul" on Q/K/V projections written apart).
  /usr/bin/python3 bench/pet_handmade.py check DIR... [--tessera build/tessera]
      runs each model with `tessera run` on its input and prints the largest
      difference from the first DIR's output and from torch_output.npy.
  /usr/bin/python3 bench/pet_handmade.py measure DIR... [--threads 2] [--runs 20]
      times the models interleaved round by round (`tessera serve` each) and
      prints medians and speedups over the first DIR.
SRC_DIR is an export of bench/perf_models.py (e.g. bench/out/perf/csrnet).
Needs the onnx and numpy packages (Debian's python3-onnx).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def dims_of(model):
    """Value name -> static dims, from ONNX shape inference (inputs, outputs and intermediates)."""
    inferred = shape_inference.infer_shapes(model)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            out[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    return out


class Builder:
    """Appends nodes and int64 shape initializers with fresh names."""

    def __init__(self, model):
        self.model = model
        self.nodes = []
        self.count = 0

    def fresh(self, hint):
        self.count += 1
        return f"pet_{hint}_{self.count}"

    def shape(self, dims):
        name = self.fresh("shape")
        self.model.graph.initializer.append(numpy_helper.from_array(np.array(dims, dtype=np.int64), name))
        return name

    def node(self, op, inputs, hint, out=None, **attrs):
        out = out or self.fresh(hint)
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.fresh(op), **attrs))
        return out

    def space_to_batch(self, x, n, c, h, w, out=None):
        """[n,c,h,w] -> [4n,c,h/2,w/2], batch index (2a+b)n+i holding x[i,:,a::2,b::2]."""
        r = self.node("Reshape", [x, self.shape([n, c, h // 2, 2, w // 2, 2])], "s2b_r")
        t = self.node("Transpose", [r], "s2b_t", perm=[3, 5, 0, 1, 2, 4])
        return self.node("Reshape", [t, self.shape([4 * n, c, h // 2, w // 2])], "s2b", out=out)

    def batch_to_space(self, x, n, c, h, w, out=None):
        """The inverse of space_to_batch: [4n,c,h/2,w/2] -> [n,c,h,w]."""
        r = self.node("Reshape", [x, self.shape([2, 2, n, c, h // 2, w // 2])], "b2s_r")
        t = self.node("Transpose", [r], "b2s_t", perm=[2, 3, 4, 0, 5, 1])
        return self.node("Reshape", [t, self.shape([n, c, h, w])], "b2s", out=out)


def d2h_candidate(node, dims):
    """True for a 3x3 conv with dilation 2, pads 2, stride 1, one group, on an even H and W."""
    if node.op_type != "Conv":
        return False
    d = dims.get(node.input[0])
    return (attr(node, "dilations", [1, 1]) == [2, 2] and attr(node, "pads", [0] * 4) == [2, 2, 2, 2]
            and attr(node, "strides", [1, 1]) == [1, 1] and attr(node, "group", 1) == 1
            and attr(node, "kernel_shape", [3, 3]) == [3, 3] and d is not None and len(d) == 4
            and None not in d and d[2] % 2 == 0 and d[3] % 2 == 0)


def rewrite_d2h(model, mode):
    """Returns the number of convs rewritten; see the module docstring."""
    dims = dims_of(model)
    b = Builder(model)
    batch_form = {}  # value -> its space-to-batch form
    normal = set(i.name for i in model.graph.input) | set(i.name for i in model.graph.initializer)
    pending = {}  # value only in batch form so far -> its dims, made normal when something reads it

    def need_normal(v):
        if v in pending:
            n, c, h, w = pending.pop(v)
            b.batch_to_space(batch_form[v], n, c, h, w, out=v)
        normal.add(v)

    rewritten = 0
    for node in model.graph.node:
        if d2h_candidate(node, dims):
            x, y = node.input[0], node.output[0]
            n, c, h, w = dims[x]
            k = dims[y][1]
            xb = batch_form.get(x) or b.space_to_batch(x, n, c, h, w)
            batch_form[x] = xb
            conv = helper.make_node("Conv", [xb] + list(node.input[1:]), [b.fresh("conv")], name=node.name + "_d2h",
                                    dilations=[1, 1], pads=[1, 1, 1, 1], strides=[1, 1], group=1,
                                    kernel_shape=[3, 3])
            b.nodes.append(conv)
            batch_form[y] = conv.output[0]
            pending[y] = (n, k, h, w)
            rewritten += 1
            if mode == "per-conv":
                need_normal(y)
        elif mode == "chain" and node.op_type == "Relu" and node.input[0] in batch_form:
            x, y = node.input[0], node.output[0]
            batch_form[y] = b.node("Relu", [batch_form[x]], "relu")
            pending[y] = tuple(dims[y])  # computed in the batch form only, made normal when read
        else:
            for v in node.input:
                if v:
                    need_normal(v)
            b.nodes.append(node)
    for o in model.graph.output:
        need_normal(o.name)
    del model.graph.node[:]
    model.graph.node.extend(b.nodes)
    model.graph.ClearField("value_info")
    return rewritten


def rewrite_merge1x1(model, only):
    """Returns the number of groups merged; see the module docstring."""
    inits = {i.name: i for i in model.graph.initializer}
    readers = {}
    for node in model.graph.node:
        if (node.op_type == "Conv" and node.input[1] in inits and (len(node.input) < 3 or node.input[2] in inits)
                and attr(node, "strides", [1, 1]) == [1, 1] and attr(node, "pads", [0] * 4) == [0] * 4
                and attr(node, "group", 1) == 1 and list(inits[node.input[1]].dims[2:]) == [1, 1]
                and (not only or only in node.name)):
            readers.setdefault(node.input[0], []).append(node)
    groups = {x: convs for x, convs in readers.items() if len(convs) > 1}
    b = Builder(model)
    merged = 0
    for node in model.graph.node:
        convs = groups.get(node.input[0]) if node.op_type == "Conv" else None
        if not convs or node not in convs:
            b.nodes.append(node)
            continue
        if node is not convs[0]:
            continue  # emitted with the first of its group
        ws = [numpy_helper.to_array(inits[c.input[1]]) for c in convs]
        bs = [numpy_helper.to_array(inits[c.input[2]]) if len(c.input) > 2 else np.zeros(w.shape[0], np.float32)
              for c, w in zip(convs, ws)]
        wname, bname = b.fresh("merged_w"), b.fresh("merged_b")
        model.graph.initializer.append(numpy_helper.from_array(np.concatenate(ws), wname))
        model.graph.initializer.append(numpy_helper.from_array(np.concatenate(bs), bname))
        y = b.node("Conv", [node.input[0], wname, bname], "merged_conv", kernel_shape=[1, 1])
        sizes = b.shape([w.shape[0] for w in ws])
        b.nodes.append(helper.make_node("Split", [y, sizes], [c.output[0] for c in convs], name=b.fresh("Split"),
                                        axis=1))
        merged += 1
    del model.graph.node[:]
    model.graph.node.extend(b.nodes)
    return merged


def rewrite_merge_matmul(model):
    """MatMuls of one value by constant 2-D weights with the same K become one MatMul with the
    weights' columns concatenated and a Split on the last axis (Q/K/V projections written apart,
    as Hugging Face exports and Tessera's zoo write them); returns the number of groups merged."""
    inits = {i.name: i for i in model.graph.initializer}
    readers = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in inits and len(inits[node.input[1]].dims) == 2:
            readers.setdefault((node.input[0], inits[node.input[1]].dims[0]), []).append(node)
    groups = [convs for convs in readers.values() if len(convs) > 1]
    first = {id(ms[0]): ms for ms in groups}
    rest = {id(m) for ms in groups for m in ms[1:]}
    b = Builder(model)
    for node in model.graph.node:
        if id(node) in rest:
            continue
        ms = first.get(id(node))
        if not ms:
            b.nodes.append(node)
            continue
        ws = [numpy_helper.to_array(inits[m.input[1]]) for m in ms]
        wname = b.fresh("merged_w")
        model.graph.initializer.append(numpy_helper.from_array(np.concatenate(ws, axis=1), wname))
        y = b.node("MatMul", [node.input[0], wname], "merged_matmul")
        b.nodes.append(helper.make_node("Split", [y, b.shape([w.shape[1] for w in ws])], [m.output[0] for m in ms],
                                        name=b.fresh("Split"), axis=-1))
    # the merged MatMul and Split sit where the group's first MatMul was: before every reader of any
    # of the group's outputs, and after their common input
    del model.graph.node[:]
    model.graph.node.extend(b.nodes)
    return len(groups)


def copy_export(src, out, model, note):
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    for f in os.listdir(src):
        if f.endswith(".npy"):
            shutil.copy(os.path.join(src, f), os.path.join(out, f))
    meta_path = os.path.join(src, "meta.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
    meta["handmade"] = note
    meta["source"] = src
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def run_tessera(tessera, d, out_dir):
    inputs = sorted(f for f in os.listdir(d) if f.startswith("input_") and f.endswith(".npy"))
    r = subprocess.run([tessera, "run", os.path.join(d, "model.onnx"), "--inputs",
                        *[os.path.join(d, f) for f in inputs], "--outputs", out_dir, "--npy"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"tessera run {d} failed:\n{r.stderr[-800:]}")
    return np.load(os.path.join(out_dir, "output_0.npy"))


def check(dirs, tessera):
    ref = None
    for d in dirs:
        with tempfile.TemporaryDirectory() as tmp:
            y = run_tessera(tessera, d, tmp)
        torch_path = os.path.join(d, "torch_output.npy")
        want = np.load(torch_path) if os.path.exists(torch_path) else (y if ref is None else ref)
        scale = max(float(np.abs(want).max()), 1e-30)
        line = f"{d}: max |y - torch| {np.abs(y - want).max():.3g} (rel {np.abs(y - want).max() / scale:.3g})" \
            if os.path.exists(torch_path) else f"{d}:"
        if ref is None:
            ref = y
        else:
            line += f", max |y - first| {np.abs(y - ref).max():.3g} (rel {np.abs(y - ref).max() / scale:.3g})"
        print(line)


def measure(dirs, tessera, threads, runs, warmup):
    """Interleaved latency of the models in `dirs` (one `tessera serve` each, rounds rotated as
    bench/perf_harness.py does); prints each median and its ratio to the first's."""
    import statistics
    sys.path.insert(0, HERE)
    import perf_harness
    env = dict(os.environ)
    workers = {}
    try:
        for d in dirs:
            cmd = [tessera, "serve", os.path.join(d, "model.onnx"), "--threads", str(threads), "--inputs",
                   *[os.path.join(d, f) for f in sorted(os.listdir(d)) if f.startswith("input_") and f.endswith(".npy")]]
            w = perf_harness.Worker(cmd, env, os.path.join(tempfile.gettempdir(), f"pet_handmade_{os.getpid()}.log"))
            ready = w.reply(1800, before_ready=True)
            print(f"{d}: {ready}", file=sys.stderr)
            w.request(f"run {warmup}", 600)
            workers[d] = w
        samples = {d: [] for d in dirs}
        for r in range(runs):
            order = dirs[r % len(dirs):] + dirs[:r % len(dirs)]
            for d in order:
                perf_harness.settle([w.proc.pid for o, w in workers.items() if o != d], 0.25)
                samples[d].append(float(workers[d].request("run 1", 600).split()[1]))
        base = statistics.median(samples[dirs[0]])
        for d in dirs:
            m = statistics.median(samples[d])
            q = statistics.quantiles(samples[d], n=10)
            print(f"{d}: median {m:.2f} ms (p10 {q[0]:.2f}, p90 {q[-1]:.2f}), {base / m:.3f}x vs {dirs[0]}")
    finally:
        for w in workers.values():
            w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("d2h")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--mode", choices=["per-conv", "chain"], default="per-conv")
    p = sub.add_parser("merge1x1")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--only", default="")
    p = sub.add_parser("merge-matmul")
    p.add_argument("src")
    p.add_argument("out")
    p = sub.add_parser("check")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    p = sub.add_parser("measure")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    if args.cmd == "measure":
        return measure(args.dirs, args.tessera, args.threads, args.runs, args.warmup)
    if args.cmd == "check":
        return check(args.dirs, args.tessera)
    model = onnx.load(os.path.join(args.src, "model.onnx"))
    if args.cmd == "d2h":
        n = rewrite_d2h(model, args.mode)
        note = f"d2h {args.mode}: {n} convs"
    elif args.cmd == "merge-matmul":
        n = rewrite_merge_matmul(model)
        note = f"merge-matmul: {n} groups"
    else:
        n = rewrite_merge1x1(model, args.only)
        note = f"merge1x1{' ' + args.only if args.only else ''}: {n} groups"
    if n == 0:
        sys.exit(f"{args.cmd}: nothing to rewrite in {args.src}")
    onnx.checker.check_model(model)
    copy_export(args.src, args.out, model, note)
    print(f"{args.out}: {note}")


if __name__ == "__main__":
    main()
