"""Every call of the module on small models, with numpy as the reference."""

import numpy as np
import pytest

import onnx_proto
import tessera


def feed(batch=3, seed=0):
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal((batch, 16), dtype=np.float32),
            "b": rng.standard_normal((batch, 16), dtype=np.float32)}


def test_version_and_exports():
    assert tessera.__version__.count(".") == 2
    assert issubclass(tessera.Error, RuntimeError)
    assert tessera.InferenceSession.__doc__ and tessera.compile.__doc__ and tessera.InferenceSession.run.__doc__


def test_signature_names_dynamic_dims(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    ins, outs = s.get_inputs(), s.get_outputs()
    assert [(i.name, i.shape, i.type) for i in ins] == [("a", ["batch", 16], "tensor(float)"),
                                                        ("b", ["batch", 16], "tensor(float)")]
    assert [(o.name, o.type) for o in outs] == [("y", "tensor(float)")]
    assert outs[0].shape in (["batch", 16], [None, 16])  # inferred output dims may lose the name
    assert "NodeArg(name='a'" in repr(ins[0])


def test_run_matches_numpy_for_any_batch(add_model_path):
    s = tessera.InferenceSession(add_model_path, threads=1)  # a PathLike works too
    for batch in (1, 3, 7):
        f = feed(batch, seed=batch)
        (y,) = s.run(None, f)
        assert y.dtype == np.float32 and y.shape == (batch, 16)
        np.testing.assert_array_equal(y, f["a"] + f["b"])


def test_output_names_select_and_order(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    f = feed()
    assert len(s.run(["y"], f)) == 1
    y1, y2 = s.run(["y", "y"], f)
    np.testing.assert_array_equal(y2, f["a"] + f["b"])
    assert not np.shares_memory(y1, y2)
    with pytest.raises(tessera.Error, match="has no output 'z'"):
        s.run(["z"], f)


def test_outputs_are_owned_by_numpy(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    f = feed()
    (y1,) = s.run(None, f)
    keep = y1.copy()
    y1 += 1  # writable, and its own memory: the next run must not see this or change it
    (y2,) = s.run(None, f)
    np.testing.assert_array_equal(y2, keep)
    np.testing.assert_array_equal(y1, keep + 1)
    assert y1.flags.owndata or y1.base is not None
    del s  # outputs outlive the session
    np.testing.assert_array_equal(y2, keep)


def test_passthrough_output_does_not_alias_the_input():
    m = onnx_proto.model([onnx_proto.node("Identity", ["x"], ["y"])], [onnx_proto.value_info("x", np.float32, [4])],
                         [onnx_proto.value_info("y", np.float32, [4])])
    s = tessera.InferenceSession(m)
    x = np.arange(4, dtype=np.float32)
    (y,) = s.run(None, {"x": x})
    np.testing.assert_array_equal(y, x)
    assert not np.shares_memory(x, y)


def test_bytes_and_options(add_model):
    for kwargs in ({}, {"threads": 2, "isa": "avx2", "fusion": False}, {"isa": "generic"},
                   {"shapes": {"a": [2, 16], "b": [2, 16]}}):
        s = tessera.InferenceSession(add_model, **kwargs)
        f = feed(2)
        np.testing.assert_array_equal(s.run(None, f)[0], f["a"] + f["b"])
    s = tessera.InferenceSession(bytearray(add_model), shapes={"a": [2, 16], "b": [2, 16]})
    assert s.get_inputs()[0].shape == [2, 16]
    with pytest.raises(tessera.Error, match="unknown isa 'sse'"):
        tessera.InferenceSession(add_model, isa="sse")


def test_compile_and_load_artifact(add_model, add_model_path, tmp_path):
    out = tmp_path / "add.tsr"
    tessera.compile(str(add_model_path), str(out), shapes={"a": [3, 16], "b": [3, 16]})
    s = tessera.InferenceSession(str(out))
    assert s.get_inputs()[0].shape == [3, 16]
    f = feed(3)
    np.testing.assert_array_equal(s.run(None, f)[0], f["a"] + f["b"])
    # From bytes, and an artifact from a session's save().
    tessera.compile(add_model, tmp_path / "dyn.tsr")
    s2 = tessera.InferenceSession((tmp_path / "dyn.tsr").read_bytes())
    # The artifact keeps the names of the dynamic dims, as the ONNX file has them.
    assert [i.shape for i in s2.get_inputs()] == [["batch", 16], ["batch", 16]]
    np.testing.assert_array_equal(s2.run(None, f)[0], f["a"] + f["b"])
    s2.save(str(tmp_path / "saved.tsr"))
    s3 = tessera.InferenceSession(str(tmp_path / "saved.tsr"))
    assert [i.shape for i in s3.get_inputs()] == [["batch", 16], ["batch", 16]]
    np.testing.assert_array_equal(s3.run(None, f)[0], f["a"] + f["b"])
    with pytest.raises(tessera.Error, match="cannot change a compiled artifact's shapes"):
        tessera.InferenceSession(str(out), shapes={"a": [1, 16]})


def test_profile_and_report():
    s = tessera.InferenceSession("zoo:squeezenet1_1", threads=1)
    steps = s.profile(3)
    assert steps and all(set(p) == {"node", "op", "compiled", "seconds", "flops"} for p in steps)
    assert all(p["seconds"] > 0 for p in steps) and any(p["op"].startswith("Conv") for p in steps)
    assert sum(p["flops"] for p in steps) > 1e8  # SqueezeNet 1.1: about 0.35 GMAC per image
    x = np.zeros((1, 3, 224, 224), np.float32)
    assert len(s.profile(1, {s.get_inputs()[0].name: x})) == len(steps)
    r = s.report()
    assert isinstance(r, str) and "compiled" in r


# --- bad inputs: each raises tessera.Error with a message naming the problem ---

def test_wrong_input_name(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    f = feed()
    f["c"] = f.pop("b")
    with pytest.raises(tessera.Error, match=r"has no input 'c' \(its inputs: 'a', 'b'\)"):
        s.run(None, f)


def test_missing_input(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    with pytest.raises(tessera.Error, match="input 'b' of model .* is missing"):
        s.run(None, {"a": feed()["a"]})


def test_wrong_shape(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    f = feed()
    f["b"] = np.zeros((3, 15), np.float32)
    with pytest.raises(tessera.Error, match="'b'") as e:
        s.run(None, f)
    assert "15" in str(e.value)


def test_wrong_dtype(add_model_path):
    s = tessera.InferenceSession(str(add_model_path))
    f = feed()
    f["a"] = f["a"].astype(np.float64)
    with pytest.raises(tessera.Error, match=r"input 'a' expects tensor\(float\) \(numpy float32\), got an array of float64"):
        s.run(None, f)
    with pytest.raises(tessera.Error, match="must be a numpy.ndarray, got list"):
        s.run(None, {"a": [[0.0] * 16], "b": f["b"]})


def test_non_contiguous_input_is_copied(add_model_path):
    # Like ONNX Runtime, a non-contiguous (or misaligned) array is copied, not refused.
    s = tessera.InferenceSession(str(add_model_path))
    big = np.random.default_rng(1).standard_normal((3, 32), dtype=np.float32)
    a = big[:, ::2]
    assert not a.flags.c_contiguous
    f = feed()
    (y,) = s.run(None, {"a": a, "b": f["b"]})
    np.testing.assert_array_equal(y, np.ascontiguousarray(a) + f["b"])
    t = np.asfortranarray(f["a"])
    np.testing.assert_array_equal(s.run(None, {"a": t, "b": f["b"]})[0], f["a"] + f["b"])


def test_corrupt_model_bytes(add_model, tmp_path):
    with pytest.raises(tessera.Error) as e:
        tessera.InferenceSession(add_model[: len(add_model) // 2])
    assert str(e.value)
    with pytest.raises(tessera.Error, match="empty"):
        tessera.InferenceSession(b"")
    (tmp_path / "junk.onnx").write_bytes(b"\xff" * 64)
    with pytest.raises(tessera.Error, match="junk.onnx"):
        tessera.InferenceSession(str(tmp_path / "junk.onnx"))
    with pytest.raises(tessera.Error, match="nope.onnx"):
        tessera.InferenceSession(str(tmp_path / "nope.onnx"))


def test_node_error_names_the_node():
    # A Reshape whose target shape comes from an input: a bad value fails at run time, in that node.
    m = onnx_proto.model([onnx_proto.node("Reshape", ["x", "shape"], ["y"], name="the_reshape")],
                         [onnx_proto.value_info("x", np.float32, [2, 3]), onnx_proto.value_info("shape", np.int64, [2])],
                         [onnx_proto.value_info("y", np.float32, ["r0", "r1"])])
    s = tessera.InferenceSession(m)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(s.run(None, {"x": x, "shape": np.array([3, 2])})[0], x.reshape(3, 2))
    with pytest.raises(tessera.Error, match="the_reshape"):
        s.run(None, {"x": x, "shape": np.array([4, 2])})
