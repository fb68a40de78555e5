#!/usr/bin/python3
"""One Python runtime of bench/perf_harness.py kept loaded in its own process.

Speaks the line protocol of `tessera serve` (tools/serve.h), so the harness
drives every runtime alike:
  first line        ready compile_ms C first_run_ms F threads T
                    (C: loading/compiling the model; F: its first run)
                    or "error MESSAGE" if the model cannot be loaded (then exit 1)
  run N        ->   times t1 ... tN          (milliseconds, one inference each)
  callers K N  ->   elapsed MS               (K Python threads sharing the runtime, N inferences
                                              each: wall time; K = 1 times N back-to-back calls)
  save DIR     ->   saved K                  (DIR/output_0.npy ... output_{K-1}.npy)
  quit / EOF   ->   exit 0
A failing request replies "error MESSAGE" and the loop goes on.

Runtimes:
  torch        eager PyTorch under torch.inference_mode()
  torchscript  torch.jit.trace, torch.jit.freeze, torch.jit.optimize_for_inference
               (oneDNN), run under torch.inference_mode()
  opencv       cv2.dnn.readNetFromONNX on model.onnx, default backend, CPU target
  tessera-py   Tessera through its Python module: tessera.InferenceSession(model.onnx,
               threads=N).run(None, feed), the module imported from --tessera-python
               (default build/python); the same compiled code `tessera serve` runs, so the
               two differ by the module's per-call overhead only

The torch runtimes rebuild the model with bench/perf_models.py (deterministic,
so the weights are the exported ones); the input is <model-dir>/input_*.npy.
Thread counts: torch.set_num_threads(N) / cv2.setNumThreads(N) / threads=N.

Usage: /usr/bin/python3 bench/perf_worker.py --runtime torch|torchscript|opencv|tessera-py
                                             --model-dir bench/out/perf/<model> --threads N
                                             [--tessera-python build/python]
"""
import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import perf_models  # noqa: E402

ROOT = os.path.dirname(HERE)
RUNTIMES = ("torch", "torchscript", "opencv", "tessera-py")


def first_line(e):
    """The reason of an exception on one line. An OpenCV error's first line is
    only its source location ("OpenCV(4.6.0) file:line: error: (-2:Unspecified
    error) in function 'handleNode'"); the reason is in its nested message, so
    for those the locations are cut and the first two remaining lines kept."""
    text = str(e).strip() or type(e).__name__
    if not text.startswith("OpenCV("):
        return " ".join(text.splitlines()[0].split())
    text = re.sub(r"OpenCV\([^)]*\) \S+:\d+: error: \(-?\d+:[^)]*\)( in function '[^']*')?:?", "", text)
    lines = [l.lstrip("> ").strip() for l in text.splitlines()]
    return " ".join(" ".join([l for l in lines if l][:2]).split()).removesuffix(", where") or "OpenCV error"


def load_torch(model_dir, name, threads, script, builder="perf_models"):
    """Returns a function running one inference and giving its outputs as numpy arrays.
    builder: the module whose build(name) made the export (meta.json's "builder": bench/zoo_models.py
    for bench/zoo.py's exports, else bench/perf_models.py)."""
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    if builder == "zoo_models":
        import zoo_models
        model, _, _ = zoo_models.build(name)
    else:
        model, _, _ = perf_models.build(name)
    inputs = [torch.from_numpy(np.load(f)) for f in perf_models.input_files(model_dir)]
    if script:
        # traced under no_grad: freezing needs no autograd state, and BERT's layers
        # then trace their fused inference path, as eager inference_mode runs them
        with torch.no_grad():
            traced = torch.jit.trace(model, tuple(inputs))
            model = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))

    def run():
        with torch.inference_mode():
            y = model(*inputs)
        return [y.numpy()] if isinstance(y, torch.Tensor) else [t.numpy() for t in y]
    return run


def load_opencv(model_dir, threads):
    import cv2
    import numpy as np
    cv2.setNumThreads(threads)
    net = cv2.dnn.readNetFromONNX(os.path.join(model_dir, "model.onnx"))
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    with open(os.path.join(model_dir, "meta.json")) as f:
        names = json.load(f)["input_names"]
    inputs = [np.load(f) for f in perf_models.input_files(model_dir)]

    def run():
        # setInput is part of each inference (other runtimes bind their feeds per run too)
        for name, x in zip(names, inputs):
            net.setInput(x, name)
        return [net.forward()]
    return run


def load_tessera(model_dir, threads, module_dir):
    """tessera.InferenceSession on model.onnx; the feed is input_*.npy in model-input order."""
    import numpy as np
    sys.path.insert(0, os.path.abspath(module_dir))
    import tessera
    session = tessera.InferenceSession(os.path.join(model_dir, "model.onnx"), threads=threads)
    names = [i.name for i in session.get_inputs()]
    files = perf_models.input_files(model_dir)
    if len(files) != len(names):
        raise ValueError(f"the model has {len(names)} inputs, {model_dir} has {len(files)} input_*.npy files")
    feed = {n: np.load(f) for n, f in zip(names, files)}

    def run():
        return session.run(None, feed)
    return run


def callers(run, k, n):
    """Wall time in ms of k threads each calling run() n times (k = 1: on this thread)."""
    import threading
    errors = []

    def loop():
        try:
            for _ in range(n):
                run()
        except Exception as e:  # reported after the join, as the request's error
            errors.append(e)
    threads = [threading.Thread(target=loop) for _ in range(k - 1)]
    a = time.perf_counter()
    for t in threads:
        t.start()
    loop()
    for t in threads:
        t.join()
    elapsed = (time.perf_counter() - a) * 1e3
    if errors:
        raise errors[0]
    return elapsed


def serve(run, out):
    def reply(line):
        out.write(line + "\n")
        out.flush()

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            if words[0] == "run":
                n = int(words[1]) if len(words) == 2 else 0
                if not 1 <= n <= 100000:
                    raise ValueError(f"'run' expects a count from 1 to 100000, got '{line.strip()}'")
                times = []
                for _ in range(n):
                    a = time.perf_counter()
                    run()
                    times.append((time.perf_counter() - a) * 1e3)
                reply("times " + " ".join(f"{t:.6g}" for t in times))
            elif words[0] == "callers":
                k, n = (int(w) for w in words[1:]) if len(words) == 3 else (0, 0)
                if not (1 <= k <= 64 and 1 <= n <= 1000000):
                    raise ValueError(f"'callers' expects K (1 to 64) and N (1 to 1000000), got '{line.strip()}'")
                reply(f"elapsed {callers(run, k, n):.6g}")
            elif words[0] == "save":
                import numpy as np
                d = line.strip()[len("save"):].strip()
                if not d:
                    raise ValueError("'save' expects a directory")
                os.makedirs(d, exist_ok=True)
                outs = run()
                for i, y in enumerate(outs):
                    np.save(os.path.join(d, f"output_{i}.npy"), np.ascontiguousarray(y, dtype=np.float32))
                reply(f"saved {len(outs)}")
            else:
                raise ValueError(f"unknown request '{words[0]}' (requests: run N, callers K N, save DIR, quit)")
        except Exception as e:  # the loop goes on, as tessera serve's does
            reply("error " + first_line(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", required=True, choices=RUNTIMES)
    ap.add_argument("--model-dir", required=True, help="an export of bench/perf_models.py")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--tessera-python", default=os.path.join(ROOT, "build", "python"),
                    help="the directory holding the built module's package (tessera-py)")
    args = ap.parse_args()

    # The protocol gets its own copy of stdout; fd 1 goes to stderr so that
    # anything a library prints cannot be mistaken for a reply.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    name, builder = None, None
    if args.runtime != "tessera-py":  # which torch model to rebuild, by which module
        with open(os.path.join(args.model_dir, "meta.json")) as f:
            meta = json.load(f)
        name, builder = meta["name"], meta.get("builder", "perf_models")
    # a model that loads but cannot run counts as not loadable: "error" before "ready"
    try:
        t0 = time.perf_counter()
        if args.runtime == "opencv":
            run = load_opencv(args.model_dir, args.threads)
        elif args.runtime == "tessera-py":
            run = load_tessera(args.model_dir, args.threads, args.tessera_python)
        else:
            run = load_torch(args.model_dir, name, args.threads, script=args.runtime == "torchscript", builder=builder)
        t1 = time.perf_counter()
        run()
        t2 = time.perf_counter()
    except Exception as e:
        out.write("error " + first_line(e) + "\n")
        out.flush()
        return 1
    out.write(f"ready compile_ms {(t1 - t0) * 1e3:.1f} first_run_ms {(t2 - t1) * 1e3:.1f} threads {args.threads}\n")
    out.flush()
    serve(run, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
