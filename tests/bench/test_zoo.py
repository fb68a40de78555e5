"""bench/zoo.py end to end on one small model, --quick, into a temporary
directory: the export, both timings of Tessera and ONNX Runtime, torch eager,
the accuracy column, the report, resuming, and a failure becoming a row.
No timing is asserted. Skipped where the benchmark's own dependencies (torch,
torchvision, node with onnxruntime-node: scripts/install-bench-deps.sh) are
missing, as they are not the build's.

ctest runs it as bench_zoo (TESSERA_CLI set); by hand:
    TESSERA_CLI=build/tessera /usr/bin/python3 -m pytest tests/bench
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ZOO = ROOT / "bench" / "zoo.py"
MODEL = "squeezenet1_1"  # ~0.35 GFLOPs: the fastest classification model with a real conv stack


def _deps_missing():
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        return f"no torch/torchvision ({e})"
    try:
        r = subprocess.run(["node", str(ROOT / "bench" / "ort_worker.js"), "--version"], capture_output=True, text=True)
    except OSError as e:
        return f"no node ({e})"
    if r.returncode != 0:
        return "onnxruntime-node is not installed (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci)"
    return None


pytestmark = pytest.mark.skipif(_deps_missing() is not None, reason=str(_deps_missing()))


@pytest.fixture(scope="module")
def cli():
    path = os.environ.get("TESSERA_CLI", str(ROOT / "build" / "tessera"))
    assert os.access(path, os.X_OK), f"the tessera CLI is not at {path} (set TESSERA_CLI)"
    return os.path.abspath(path)


def zoo(tmp, *args):
    cmd = [sys.executable, str(ZOO), "--quick", "--models", MODEL, "--batches", "1", "--threads", "1",
           "--work", str(tmp), "--out", str(tmp), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stderr, json.loads((tmp / "results.json").read_text())


def test_quick_run_resume_and_failure(tmp_path, cli):
    log, results = zoo(tmp_path, "--tessera", cli)
    assert "1 cells to run" in log and "estimated" in log and "ETA" in log
    cell = results["cells"][f"{MODEL}|b1|t1"]
    assert cell["status"] == "ok", cell
    inter = cell["interleaved"]
    for rt in ("tessera", "ort", "torch"):
        assert inter[rt]["status"] == "ok", inter[rt]
        assert len(inter[rt]["samples"]) == 3
    # accuracy against torch, every output, for each runtime: the numbers are the
    # comparison of saved outputs with torch's at export, so ORT (an independent
    # peer) passing too shows the check is not vacuous
    for rt in ("tessera", "ort"):
        acc = inter[rt]["accuracy"]
        assert acc["outputs"] == 1 and acc["pass"] and 0 <= acc["rel"] <= 1e-4, acc
    assert inter["torch"]["accuracy"]["rel"] <= 1e-6  # torch eager rebuilt: the same computation (threads may differ)
    for rt in ("tessera", "ort"):
        assert cell["separate"][rt]["status"] == "ok" and cell["separate"][rt]["median_ms"] > 0
    assert cell["ratio"] > 0 and cell["separate_ratio"] > 0
    md = (tmp_path / "ZOO.md").read_text()
    assert f"| {MODEL} (quick) | classification | 1 | 1 |" in md
    assert "Not a clean measurement" in md  # quick cells are marked
    assert "## Geometric mean" in md

    # resumable: the same command has nothing left to do
    log, again = zoo(tmp_path, "--tessera", cli)
    assert "0 cells to run" in log
    assert again["cells"][f"{MODEL}|b1|t1"]["date"] == cell["date"]

    # a runtime that cannot start is a row with its reason, not a crash or a missing row
    log, failed = zoo(tmp_path, "--tessera", str(tmp_path / "no-such-tessera"), "--force", "--no-profile")
    cell = failed["cells"][f"{MODEL}|b1|t1"]
    assert cell["status"] == "failed" and "no-such-tessera" in cell["error"]
    assert cell["interleaved"]["ort"]["status"] == "ok"
    md = (tmp_path / "ZOO.md").read_text()
    assert "## Did not export, load or run" in md and "no-such-tessera" in md.split("## Did not export")[1]
