"""The scripts in examples/, run as a user runs them (a fresh interpreter, their
command line), on models the CLI provides: `tessera export-zoo` writes the
embedded ResNet-18 as ONNX, and the BERT encoder is zoo:bert_base. The
classification is checked against the CLI's reference interpreter on the
same image, preprocessed here independently of the example."""

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def run_example(script, *args, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)], env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"{script} failed:\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def resnet18_onnx(cli, tmp_path_factory):
    path = tmp_path_factory.mktemp("examples") / "resnet18.onnx"
    subprocess.run([cli, "export-zoo", "resnet18", "-o", str(path)], check=True, capture_output=True)
    return path


def write_ppm(path, rgb):
    """A binary PPM (P6) of an [H, W, 3] uint8 array."""
    h, w, _ = rgb.shape
    path.write_bytes(f"P6\n{w} {h}\n255\n".encode() + rgb.tobytes())


def test_classify_image_top5_matches_the_reference_interpreter(cli, resnet18_onnx, tmp_path):
    # A 256 x 256 image: the example's resize to 256 leaves it as it is, so
    # its preprocessing is the centre crop and ImageNet's normalization.
    yy, xx = np.mgrid[0:256, 0:256]
    rng = np.random.default_rng(3)
    rgb = np.stack([xx, yy, (xx + yy) // 2], -1) + rng.integers(0, 40, (256, 256, 3))
    rgb = np.clip(rgb, 0, 255).astype(np.uint8)
    image = tmp_path / "image.ppm"
    write_ppm(image, rgb)

    out = run_example("classify_image.py", resnet18_onnx, image, "--threads", "1")
    got = [(int(c), float(p)) for c, p in re.findall(r"^\s*\d+\s+class\s+(\d+)\s+p=([0-9.]+)", out, re.M)]
    assert len(got) == 5, out
    assert "of 1000 classes" in out

    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    x = ((rgb[16:240, 16:240].astype(np.float32) / 255 - mean) / std).transpose(2, 0, 1)[None]
    np.save(tmp_path / "x.npy", np.ascontiguousarray(x, np.float32))
    subprocess.run([cli, "run", str(resnet18_onnx), "--backend", "reference", "--inputs", str(tmp_path / "x.npy"),
                    "--outputs", str(tmp_path / "ref"), "--npy"], check=True, capture_output=True)
    logits = np.load(tmp_path / "ref" / "output_0.npy").reshape(-1).astype(np.float64)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    ranked = np.sort(logits)[::-1]
    tie = 1e-4 * np.abs(logits).max()  # compiled kernels sum in another order than the interpreter
    for rank, (c, p) in enumerate(got):
        # the class printed at this rank is the reference's class of that rank
        # (or one tied with it), with the reference's probability (4 decimals)
        assert abs(logits[c] - ranked[rank]) <= tie, (rank, c, logits[c], ranked[rank])
        assert abs(p - probs[c]) <= 5.1e-5, (rank, c, p, probs[c])
    assert len({c for c, _ in got}) == 5


def test_classify_image_labels_and_a_bad_image(resnet18_onnx, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"name_{i}\n" for i in range(1000)))
    image = tmp_path / "image.ppm"
    write_ppm(image, np.full((300, 400, 3), 128, np.uint8))  # not square: resized, then cropped
    out = run_example("classify_image.py", resnet18_onnx, image, "--labels", labels, "--top", "3", "--threads", "1")
    got = re.findall(r"^\s*\d+\s+class\s+(\d+)\s+p=[0-9.]+\s+(\S+)$", out, re.M)
    assert len(got) == 3 and all(name == f"name_{c}" for c, name in got), out

    bad = tmp_path / "bad.ppm"
    bad.write_bytes(b"not an image")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    r = subprocess.run([sys.executable, str(EXAMPLES / "classify_image.py"), str(resnet18_onnx), str(bad)],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "bad.ppm" in r.stderr


NUMBER = r"([0-9.]+(?:e[-+]\d+)?)"
TIMING = re.compile(rf"^(\d+) runs, threads (\d+|all cores): median {NUMBER} ms, p10 {NUMBER} ms, p90 {NUMBER} ms, "
                    rf"{NUMBER} runs/s$", re.M)


def check_timing(out, runs):
    m = TIMING.search(out)
    assert m, out
    n, _, median, p10, p90, rate = m.groups()
    median, p10, p90, rate = map(float, (median, p10, p90, rate))
    assert int(n) == runs
    assert 0 < p10 <= median <= p90
    assert rate == pytest.approx(1e3 / median, rel=0.01)
    return median


def test_time_bert_on_the_zoo_encoder():
    out = run_example("time_bert.py", "zoo:bert_base", "--runs", "3", "--warmup", "0", "--threads", "2")
    assert "inputs input_ids int64[1x128], attention_mask int64[1x128]" in out, out
    assert "outputs last_hidden_state [1, 128, 768]" in out, out
    check_timing(out, 3)


def test_time_bert_fills_dynamic_dimensions(add_model_path):
    # the Add model's first dimension is 'batch' (dynamic): --batch sizes it
    out = run_example("time_bert.py", add_model_path, "--runs", "5", "--batch", "3")
    assert "inputs a float32[3x16], b float32[3x16]" in out, out
    assert "outputs y [3, 16]" in out, out
    check_timing(out, 5)
