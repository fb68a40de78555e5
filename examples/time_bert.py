#!/usr/bin/python3
"""Time a BERT encoder (any ONNX model with token inputs) compiled by Tessera:
load time, first run, then the median, p10 and p90 of repeated runs.

A model to try it with, either exported from Hugging Face transformers:

    from transformers import AutoModel
    import torch
    model = AutoModel.from_pretrained("bert-base-uncased").eval()
    ids = torch.ones(1, 128, dtype=torch.int64)
    torch.onnx.export(model, (ids, ids), "bert.onnx", input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}})

or Tessera's embedded BERT-base encoder (12 layers, sequence 128, seeded weights):

    build/tessera export-zoo bert_base -o bert.onnx

Run (from the repository root, after the build):

    PYTHONPATH=build/python /usr/bin/python3 examples/time_bert.py bert.onnx --runs 20
    ... --threads 1 --batch 1 --seq-len 128

Inputs are made up by name: an int64 input named like an attention mask gets
ones, one named like token types zeros, any other int64 input token ids drawn
from [0, --vocab); float inputs get uniform noise. A dynamic dimension takes
--batch if it is the first, else --seq-len (a static one stays as the model
has it).
"""
import argparse
import statistics
import sys
import time

import numpy as np

import tessera


def make_inputs(session, batch, seq_len, vocab, seed=0):
    """{name: array} for every model input (see the module docstring)."""
    rng = np.random.default_rng(seed)
    feed = {}
    for inp in session.get_inputs():
        if inp.shape is None:
            raise SystemExit(f"input '{inp.name}' has an unknown rank; cannot make it up")
        shape = [d if isinstance(d, int) else batch if i == 0 else seq_len for i, d in enumerate(inp.shape)]
        name = inp.name.lower()
        if inp.type == "tensor(int64)":
            if "mask" in name:
                feed[inp.name] = np.ones(shape, np.int64)
            elif "type" in name or "segment" in name:
                feed[inp.name] = np.zeros(shape, np.int64)
            else:
                feed[inp.name] = rng.integers(0, vocab, shape, dtype=np.int64)
        elif inp.type == "tensor(float)":
            feed[inp.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        else:
            raise SystemExit(f"input '{inp.name}' is {inp.type}; this example makes int64 and float inputs only")
    return feed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="an ONNX model (or a .tsr, or zoo:bert_base)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs (default 20)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs before them (default 2)")
    ap.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    ap.add_argument("--batch", type=int, default=1, help="a dynamic batch dimension's size")
    ap.add_argument("--seq-len", type=int, default=128, help="a dynamic sequence dimension's size")
    ap.add_argument("--vocab", type=int, default=1000, help="token ids are drawn from [0, VOCAB)")
    args = ap.parse_args()
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be at least 1 and --warmup at least 0")

    t0 = time.perf_counter()
    try:
        session = tessera.InferenceSession(args.model, threads=args.threads)
    except tessera.Error as e:  # not found, not a model, an op Tessera cannot run ...
        sys.exit(f"cannot load {args.model}: {e}")
    load_s = time.perf_counter() - t0
    feed = make_inputs(session, args.batch, args.seq_len, args.vocab)
    shapes = ", ".join(f"{k} {v.dtype}[{'x'.join(map(str, v.shape))}]" for k, v in feed.items())
    print(f"model {args.model}: inputs {shapes}")

    t0 = time.perf_counter()
    outputs = session.run(None, feed)  # the first run of a shape compiles its kernels
    first_ms = (time.perf_counter() - t0) * 1e3
    print(f"load {load_s:.2f} s, first run {first_ms:.1f} ms, outputs "
          + ", ".join(f"{o.name} {list(y.shape)}" for o, y in zip(session.get_outputs(), outputs)))

    for _ in range(args.warmup):
        session.run(None, feed)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    median = statistics.median(times)
    p10 = times[int(0.1 * (len(times) - 1))]
    p90 = times[int(round(0.9 * (len(times) - 1)))]
    threads = args.threads if args.threads else "all cores"
    print(f"{args.runs} runs, threads {threads}: median {median:.4g} ms, p10 {p10:.4g} ms, p90 {p90:.4g} ms, "
          f"{1e3 / median:.4g} runs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
