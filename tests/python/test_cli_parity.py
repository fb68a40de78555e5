"""The module's outputs against the CLI's (`tessera run ... --outputs DIR --npy`)
on the same inputs: zoo models and ONNX backend test cases, whose expected
outputs are checked too (the conformance suite's tolerances)."""

import subprocess

import numpy as np
import pytest

import onnx_proto
import tessera


def cli_outputs(cli, model, inputs, out_dir, extra=()):
    """Runs the CLI on .npy inputs (in model-input order) and reads its .npy outputs."""
    out_dir.mkdir()
    paths = []
    for i, x in enumerate(inputs):
        p = out_dir.parent / f"{out_dir.name}_input_{i}.npy"
        np.save(p, x)
        paths.append(str(p))
    subprocess.run([cli, "run", str(model), "--inputs", *paths, "--outputs", str(out_dir), "--npy", *extra],
                   check=True, capture_output=True, text=True)
    files = sorted(out_dir.glob("*.npy"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    return [np.load(p) for p in files]


@pytest.mark.parametrize("name", ["squeezenet1_1", "gpt2_tiny"])
def test_zoo_outputs_equal_the_cli(cli, name, tmp_path):
    s = tessera.InferenceSession(f"zoo:{name}", threads=1)
    rng = np.random.default_rng(7)
    inputs = []
    for i in s.get_inputs():
        assert all(isinstance(d, int) for d in i.shape), i
        if i.type == "tensor(float)":
            inputs.append(rng.uniform(-1, 1, i.shape).astype(np.float32))
        else:
            assert i.type == "tensor(int64)"
            inputs.append(rng.integers(0, 10, i.shape).astype(np.int64))
    ours = s.run(None, {i.name: x for i, x in zip(s.get_inputs(), inputs)})
    theirs = cli_outputs(cli, f"zoo:{name}", inputs, tmp_path / "out", ["--threads", "1"])
    assert len(ours) == len(theirs) == len(s.get_outputs())
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


BACKEND_CASES = ["node/test_add_bcast", "node/test_conv_with_strides_padding", "node/test_matmul_4d",
                 "node/test_softmax_axis_1", "node/test_gather_0", "node/test_argmax_default_axis_example",
                 "pytorch-converted/test_Conv2d_groups", "simple/test_single_relu_model"]


@pytest.mark.parametrize("case", BACKEND_CASES)
def test_backend_case_outputs_equal_the_cli_and_expected(cli, onnx_tests, case, tmp_path):
    d = onnx_tests / case
    data = d / "test_data_set_0"
    inputs = [onnx_proto.read_tensor(p)[1] for p in sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem[6:]))]
    expected = [onnx_proto.read_tensor(p)[1] for p in sorted(data.glob("output_*.pb"), key=lambda p: int(p.stem[7:]))]
    s = tessera.InferenceSession((d / "model.onnx").read_bytes())
    ours = s.run(None, {i.name: x for i, x in zip(s.get_inputs(), inputs)})
    theirs = cli_outputs(cli, d / "model.onnx", inputs, tmp_path / "out")
    assert len(ours) == len(theirs) == len(expected)
    for a, b, e in zip(ours, theirs, expected):
        np.testing.assert_array_equal(a, b)
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-3, atol=1e-7)
