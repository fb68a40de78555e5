"""bench/costmodel_bench.py end to end on a tiny collection made here (two
ONNX node models, AVX2 at one and two threads, 8 schedules a task) into a
temporary directory: the report has the dataset table with the records per
target counted here from the records file, xgb's row for each target (by
5-fold cross-validation, with pair counts, interval and per-task average), a
transfer table for each held-out target with the 0, 5 and 10% rows and both
baselines, and a pruning row for every method and share asked on both splits
(means over two seeds) with the 45%-within-0.005 verdict. No accuracy is
asserted (a tiny dataset); the numbers' sources are the CLI's own tests.

ctest runs it as bench_costmodel (TESSERA_CLI, TESSERA_ONNX_TESTS set); by hand:
    TESSERA_CLI=build/tessera TESSERA_ONNX_TESTS=../shared/onnx-backend-tests \\
      /usr/bin/python3 -m pytest tests/bench/test_costmodel_bench.py
"""
import json
import os
import pathlib
import subprocess
import sys
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "costmodel_bench.py"
MODELS = ["test_conv_with_strides_padding", "test_matmul_2d"]
TARGETS = ["avx2-t1", "avx2-t2"]


def test_report_has_every_table(tmp_path):
    cli = os.environ["TESSERA_CLI"]
    onnx = pathlib.Path(os.environ["TESSERA_ONNX_TESTS"]) / "node"
    ds = tmp_path / "ds"
    networks = ",".join(str(onnx / m / "model.onnx") for m in MODELS)
    # One record a schedule (no load guard) and few repeats: quick.
    subprocess.run([cli, "dataset", "collect", "--networks", networks, "--out", str(ds), "--per-task", "8",
                    "--targets", ",".join(TARGETS), "--repeats", "3", "--remeasures", "0", "-q"], check=True)
    records = ds / "records.rank0.jsonl"
    out = tmp_path / "COSTMODEL.md"
    r = subprocess.run([sys.executable, str(BENCH), "--records", str(records), "--dataset", str(ds), "--cli", cli,
                        "--out", str(out), "--work", str(tmp_path / "work"), "--rounds", "5", "--epochs", "2",
                        "--methods", "random,cluster,twins", "--keep", "1,0.5"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    text = out.read_text()

    names = {t["target"]: t["name"] for t in json.loads((ds / "tasks.json").read_text())["targets"]}
    counts = Counter(names[json.loads(line)["target"]] for line in records.read_text().splitlines() if line.strip())
    assert f"{len(MODELS)} networks" in text
    xgb = text.split("## XGBoost")[1].split("## Transfer")[0]
    assert "5-fold cross-validation" in xgb and "| pairs | pairwise | ci95_lo | ci95_hi | per-task |" in xgb, xgb
    for t in TARGETS:
        assert f"| {t} | {counts[t]} |" in text, text
        assert f"\n| {t} | " in text.split("## XGBoost")[1].split("## Transfer")[0], text
        section = text.split(f"Held out: {t}.")[1].split("\n\n")[1]
        for row in ["other targets only (0%)", "fine-tuned on 5%", "fine-tuned on 10%",
                    f"attention, all of {t}'s training records", f"xgb, all of {t}'s training records"]:
            assert row in section, section
    pruning = text.split("## Pruning")[1]
    assert "means over 2 seed(s) (1, 2)" in pruning, pruning
    for split in ["within-task", "by-task"]:
        section = pruning.split(f"### Split {split} (")[1].split("###")[0]
        for method, keep in [("all", "1.000"), ("random", "0.500"), ("cluster", "0.500"), ("twins", "0.500")]:
            assert f"| {method} | {keep} |" in section, section
        assert "Best at 45% removed or more: " in section and ("**PASS**" in section or "**FAIL**" in section), section
