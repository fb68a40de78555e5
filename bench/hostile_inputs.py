"""Hostile inputs for bench/reliability.py: malformed models, crafted external
data, .npy and .tsr files, bad command lines and numeric edge cases, each run
through the `tessera` CLI with a time limit and classified by what a user gets:

  clear error     exit status 1 (2: usage) and an "error:" line (and, where the case
                  says so, the message names the node, input or file)
  correct result  exit 0 and the outputs checked (NaN where torch gives NaN,
                  a recurrent model against torch)
  CRASH           killed by a signal or an abort / unexpected exit status
  HANG            still running at the time limit
  WRONG           exit 0 where an error was due, or outputs that fail the check,
                  or an error without the expected naming

Cases are made here with the onnx package (and torch for the LSTM), plus the
fuzz target's regression corpus (tests/fuzz/regressions).
"""
import os
import struct
import subprocess
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(ROOT, "tests", "fuzz", "regressions")
TIME_LIMIT = 60.0


# --- building models -------------------------------------------------------------

def save_model(graph, path, opset=13):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def conv_model(path, x_shape=(1, 3, 8, 8)):
    """x -> Conv(4 filters, 3x3, pads 1) -> Relu -> y (float32)."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, x_shape[1], 3, 3)).astype(np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return save_model(g, path)


def one_node_model(path, op, inputs, outputs=("y",), x_shape=(2, 3), opset=13, inits=(), **attrs):
    g = helper.make_graph([helper.make_node(op, list(inputs), list(outputs), name="bad_node", **attrs)], "m",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], list(inits))
    return save_model(g, path, opset)


def external_model(d, name, offset, length, data_bytes=64):
    """y = x + w, w [4] float32 stored in weights.bin at `offset` (strings as given)."""
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(np.arange(data_bytes // 4, dtype=np.float32).tobytes())
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "weights.bin"), ("offset", offset), ("length", length)):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add_w")], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return save_model(g, os.path.join(d, name))


def write_npy_header(path, descr, shape_text, payload=b""):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload)
    return path


# --- crafted artifacts (the container of src/support/artifact.h) ------------------------

MASK = (1 << 64) - 1
K_MUL = (0x9E3779B97F4A7C15, 0xD6E8FEB86659FD93, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def _avalanche(x):
    x ^= x >> 31
    x = (x * 0x7FB5D329728EA185) & MASK
    x ^= x >> 27
    x = (x * 0x81DADEF4BC2DD44D) & MASK
    return x ^ (x >> 33)


def artifact_checksum(data):
    lanes = [K_MUL[1], K_MUL[2], K_MUL[3], K_MUL[0]]
    padded = data + b"\0" * (-len(data) % 32)
    for i in range(0, len(padded), 32):
        for k in range(4):
            x = ((lanes[k] ^ int.from_bytes(padded[i + 8 * k:i + 8 * k + 8], "little")) * K_MUL[k]) & MASK
            lanes[k] = x ^ (x >> 29)
    h = _avalanche(len(data) ^ K_MUL[0])
    for k in range(4):
        h = ((h ^ _avalanche(lanes[k])) * K_MUL[(k + 1) % 4]) & MASK
    return _avalanche(h)


def read_artifact(path):
    b = open(path, "rb").read()
    assert b[:4] == b"TSRA"
    fmt, vlen = struct.unpack_from("<II", b, 4)
    version = b[12:12 + vlen]
    at = 12 + vlen + 8
    (count,) = struct.unpack_from("<I", b, at)
    at += 4
    sections = {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", b, at)
        name = b[at + 4:at + 4 + n].decode()
        at += 4 + n
        size, _ = struct.unpack_from("<QQ", b, at)
        at += 16
        if fmt >= 2:  # section data 64-byte aligned in the file
            at += -at % 64
        sections[name] = b[at:at + size]
        at += size
    return fmt, version, sections


def write_artifact(path, fmt, version, sections):
    meta = b"TSRA" + struct.pack("<II", fmt, len(version)) + version
    size_at = len(meta)
    meta += b"\0" * 8 + struct.pack("<I", len(sections))
    body, file_size = [], len(meta) + 8
    for name in sorted(sections):
        data = sections[name]
        meta += struct.pack("<I", len(name)) + name.encode() + struct.pack("<QQ", len(data), artifact_checksum(data))
        file_size += 20 + len(name)
        if fmt >= 2:  # zero padding: the data starts at a multiple of 64 in the file
            meta += b"\0" * (-(file_size - 8) % 64)
            file_size += -(file_size - 8) % 64
        body.append((len(meta), data))
        file_size += len(data)
    meta = meta[:size_at] + struct.pack("<Q", file_size) + meta[size_at + 8:]
    out, prev = b"", 0
    for end, data in body:
        out += meta[prev:end] + data
        prev = end
    out += meta[prev:] + struct.pack("<Q", artifact_checksum(meta))
    with open(path, "wb") as f:
        f.write(out)
    return path


def edited_artifact(src, dst, edit):
    fmt, version, sections = read_artifact(src)
    edit(sections)
    return write_artifact(dst, fmt, version, sections)


def set_option(sections, key, value):
    lines = [l for l in sections["options"].decode().splitlines() if not l.startswith(key + "=")]
    sections["options"] = ("\n".join(lines + [f"{key}={value}"]) + "\n").encode()


def split_by_a_billion(sections):
    """The first saved schedule split once more, by 10^9, first."""
    name = next(n for n in sorted(sections) if n.endswith(".schedule"))
    split = next(l.split() for l in sections[name].decode().splitlines() if l.startswith("split "))
    sections[name] = f"split {split[1]} {split[2]} 1000000000\n".encode() + sections[name]


# --- the cases -------------------------------------------------------------------

class Case:
    def __init__(self, kind, what, args, expect="error", names=None, check=None, stdin=None):
        self.kind, self.what, self.args, self.expect = kind, what, args, expect
        self.names = names      # a substring the error message must hold
        self.check = check      # for expect == "result": fn(out_dir) -> (ok, detail)
        self.stdin = stdin


def nan_check(out_dir):
    y = np.load(os.path.join(out_dir, "output_0.npy"))
    return bool(np.isnan(y).any()), f"NaN in {int(np.isnan(y).sum())} of {y.size} outputs"


def build_cases(exe, d):
    """Every case, its files made in directory d."""
    p = lambda name: os.path.join(d, name)  # noqa: E731
    good = conv_model(p("conv.onnx"))
    np.save(p("x.npy"), np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32))
    cases = []
    run = lambda model, *extra: ["run", model, *extra]  # noqa: E731

    # Malformed models.
    with open(p("random.onnx"), "wb") as f:
        f.write(np.random.default_rng(2).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    blob = open(good, "rb").read()
    with open(p("truncated.onnx"), "wb") as f:
        f.write(blob[:len(blob) // 2])
    open(p("empty.onnx"), "wb").close()
    os.makedirs(p("a_directory.onnx"), exist_ok=True)
    cases += [Case("model file", "random bytes", run(p("random.onnx"))),
              Case("model file", "truncated in the middle", run(p("truncated.onnx"))),
              Case("model file", "empty file", run(p("empty.onnx"))),
              Case("model file", "a directory", run(p("a_directory.onnx")), names="a_directory"),
              Case("model file", "missing file", run(p("no_such_model.onnx")), names="no_such_model")]
    cases += [
        Case("graph", "unknown op", run(one_node_model(p("unknown_op.onnx"), "FrobnicateTensor", ["x"])),
             names="bad_node"),
        Case("graph", "Add with one input", run(one_node_model(p("add_one.onnx"), "Add", ["x"])), names="bad_node"),
        Case("graph", "Relu with two inputs", run(one_node_model(p("relu_two.onnx"), "Relu", ["x", "x"])),
             names="bad_node"),
        Case("graph", "input never produced", run(one_node_model(p("dangling.onnx"), "Add", ["x", "nowhere"])),
             names="nowhere"),
        Case("graph", "attribute of the wrong type",
             run(one_node_model(p("attr_type.onnx"), "Softmax", ["x"], axis=1.5)), names="bad_node"),
        Case("graph", "Conv weights of the wrong rank",
             run(one_node_model(p("conv_rank.onnx"), "Conv", ["x", "w"], x_shape=(1, 3, 8, 8),
                                inits=[numpy_helper.from_array(np.zeros((4, 3), np.float32), "w")])),
             names="bad_node"),
    ]
    g = helper.make_graph([helper.make_node("Relu", ["y"], ["y2"], name="a"), helper.make_node("Relu", ["y2"], ["y"], name="b")],
                          "cycle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    cases.append(Case("graph", "a cycle", run(save_model(g, p("cycle.onnx")))))
    for f, what in (("add_omitted_second_input.onnx", "Add with '' as its second input"),
                    ("add_three_inputs.onnx", "Add with three inputs"),
                    ("clip_inputs_at_opset_6.onnx", "Clip with 3 inputs at opset 6"),
                    ("shape_without_outputs.onnx", "a node without outputs"),
                    ("expand_to_2_pow_39.onnx", "Expand to 2^39 elements")):
        cases.append(Case("graph (fuzz corpus)", what, run(os.path.join(CORPUS, f))))

    # External data.
    for name, off, length, what in (("ext_overflow.onnx", "9223372036854775803", "16", "offset 2^63-5"),
                                    ("ext_nan.onnx", "abc", "16", "offset 'abc'"),
                                    ("ext_negative.onnx", "0", "-16", "length -16"),
                                    ("ext_past_end.onnx", "60", "16", "past the end of the file"),
                                    ("ext_short.onnx", "0", "8", "length shorter than the tensor")):
        sub = p(name[:-5])
        os.makedirs(sub, exist_ok=True)
        cases.append(Case("external data", what, run(external_model(sub, name, off, length)), names="'w'"))
    sub = p("ext_missing")
    os.makedirs(sub, exist_ok=True)
    m = external_model(sub, "ext_missing.onnx", "0", "16")
    os.remove(os.path.join(sub, "weights.bin"))
    cases.append(Case("external data", "data file missing", run(m), names="weights.bin"))

    # Input files and shapes.
    cases += [
        Case("inputs", ".npy with a negative dim",
             run(good, "--inputs", write_npy_header(p("neg.npy"), "<f4", "(1, 3, -8, 8)")), names="neg.npy"),
        Case("inputs", ".npy shape not a number",
             run(good, "--inputs", write_npy_header(p("nan_dim.npy"), "<f4", "(1, 3, x, 8)")), names="nan_dim.npy"),
        Case("inputs", ".npy with 2^62 elements",
             run(good, "--inputs", write_npy_header(p("huge.npy"), "<f4", "(4611686018427387904,)")), names="huge.npy"),
        Case("inputs", ".npy truncated data",
             run(good, "--inputs", write_npy_header(p("short.npy"), "<f4", "(1, 3, 8, 8)", b"\0" * 16)),
             names="short.npy"),
    ]
    np.save(p("int_input.npy"), np.zeros((1, 3, 8, 8), np.int64))
    np.save(p("wrong_shape.npy"), np.zeros((1, 5, 8, 8), np.float32))
    cases += [Case("inputs", "int64 where float32 is due", run(good, "--inputs", p("int_input.npy")), names="'x'"),
              Case("inputs", "wrong channel count", run(good, "--inputs", p("wrong_shape.npy")), names="'x'"),
              Case("inputs", "--shape x=100000x3x224x224 (56 GiB)",
                   run(conv_model(p("dyn.onnx"), x_shape=("N", 3, 224, 224)), "--shape", "x=100000x3x224x224"),
                   names="'x'"),
              Case("inputs", "--shape of the wrong rank", run(good, "--shape", "x=1x3x8x8x2"), names="x")]

    # Command line.
    open(p("a_file"), "w").close()
    cases += [Case("command line", "--outputs is a file", run(good, "--outputs", p("a_file")), names="a_file"),
              Case("command line", "--threads 100000", run(good, "--threads", "100000"), names="threads"),
              Case("command line", "--isa nonsense", run(good, "--isa", "sse9"), names="sse9")]

    # Numerics: NaN propagates where torch propagates it.
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    relu = save_model(g, p("relu.onnx"))
    np.save(p("nan4.npy"), np.array([np.nan, 1, -1, np.nan], np.float32))
    np.save(p("nan_image.npy"), np.full((1, 3, 8, 8), np.nan, np.float32))
    for backend in ("compiled", "reference"):
        cases.append(Case("numerics", f"Relu(NaN), {backend}", run(relu, "--inputs", p("nan4.npy"), "--backend", backend),
                          expect="result", check=nan_check))
        cases.append(Case("numerics", f"all-NaN image through Conv+Relu, {backend}",
                          run(good, "--inputs", p("nan_image.npy"), "--backend", backend), expect="result",
                          check=nan_check))

    # Artifacts.
    tsr = p("conv.tsr")
    subprocess.run([exe, "compile", good, "-o", tsr], check=True, capture_output=True)
    raw = open(tsr, "rb").read()
    with open(p("truncated.tsr"), "wb") as f:
        f.write(raw[:len(raw) // 2])
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0x40
    with open(p("flipped.tsr"), "wb") as f:
        f.write(bytes(flipped))
    cases += [
        Case("artifact", "truncated", run(p("truncated.tsr")), names="truncated.tsr"),
        Case("artifact", "one byte flipped", run(p("flipped.tsr")), names="flipped.tsr"),
        Case("artifact", "threads=100000 (checksums recomputed)",
             run(edited_artifact(tsr, p("threads.tsr"), lambda s: set_option(s, "threads", "100000"))),
             names="threads"),
        Case("artifact", "a split by a billion (checksums recomputed)",
             run(edited_artifact(tsr, p("split.tsr"), split_by_a_billion)), names="split.tsr"),
        Case("artifact", "another format's kind (checksums recomputed)",
             run(edited_artifact(tsr, p("kind.tsr"),
                                 lambda s: s.__setitem__("kind", b"tessera compiled model 1"))), names="format"),
        Case("artifact", "model section replaced by random bytes (checksums recomputed)",
             run(edited_artifact(tsr, p("model.tsr"),
                                 lambda s: s.__setitem__("model.onnx", bytes(range(256)) * 8))), names="model.tsr"),
    ]
    return cases


def lstm_case(exe, d):
    """A two-layer LSTM language model (torch export) against torch."""
    import warnings

    import torch

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(100, 32)
            self.lstm = torch.nn.LSTM(32, 48, num_layers=2, batch_first=True)
            self.out = torch.nn.Linear(48, 100)

        def forward(self, tokens):
            return self.out(self.lstm(self.emb(tokens))[0])

    m = LM().eval()
    tokens = torch.randint(0, 100, (2, 12))
    path = os.path.join(d, "lstm_lm.onnx")
    torch.onnx.export(m, (tokens,), path, input_names=["tokens"], opset_version=13, verbose=False)
    np.save(os.path.join(d, "tokens.npy"), tokens.numpy())
    with torch.no_grad():
        want = m(tokens).numpy()

    def check(out_dir):
        y = np.load(os.path.join(out_dir, "output_0.npy"))
        err = float(np.abs(y - want).max() / np.abs(want).max())
        return err < 1e-4, f"max error {err:.1e} of torch's largest output"

    return Case("recurrent model", "two-layer LSTM language model (torch export)",
                ["run", path, "--inputs", os.path.join(d, "tokens.npy")], expect="result", check=check)


def run_case(exe, c, d, index):
    out_dir = os.path.join(d, f"out_{index}")
    args = list(c.args)
    if c.expect == "result":
        args += ["--outputs", out_dir, "--npy"]
    t0 = time.time()
    try:
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=TIME_LIMIT, errors="replace")
    except subprocess.TimeoutExpired:
        return "HANG", f"still running after {TIME_LIMIT:.0f} s"
    elapsed = time.time() - t0
    err_lines = [l for l in r.stderr.splitlines() if l.startswith("error")]
    last_lines = r.stderr.strip().splitlines()
    message = err_lines[0] if err_lines else (last_lines[-1] if last_lines else "")
    if r.returncode < 0 or r.returncode > 2 or "terminate called" in r.stderr or "Sanitizer" in r.stderr:
        return "CRASH", f"exit status {r.returncode}: {message[:150]}"
    if c.expect == "error":
        if r.returncode == 0:
            return "WRONG", "ran without an error"
        if not err_lines:
            return "WRONG", f"exit 1 without an error line: {r.stderr.strip()[:150]}"
        if c.names and c.names not in message:
            return "WRONG", f"the error does not name {c.names}: {message[:150]}"
        return "clear error", f"{message[:160]} ({elapsed:.1f} s)"
    if r.returncode != 0:
        return "WRONG", f"failed: {message[:150]}"
    ok, detail = c.check(out_dir)
    return ("correct result" if ok else "WRONG"), detail


def report(exe, d):
    """Markdown rows (kind, input, outcome, detail) and the count of bad outcomes."""
    cases = build_cases(exe, d)
    try:
        cases.append(lstm_case(exe, d))
    except ImportError:
        pass
    rows, bad = [], 0
    for i, c in enumerate(cases):
        outcome, detail = run_case(exe, c, d, i)
        bad += outcome in ("CRASH", "HANG", "WRONG")
        rows.append((c.kind, c.what, outcome, detail.replace("|", "\\|").replace(d + "/", "")))
    return rows, bad
