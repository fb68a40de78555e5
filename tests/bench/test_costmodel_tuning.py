"""bench/costmodel_tuning.py's pure parts, on hand-made timing cells (no
tuning, no timing, no torch): a held-out target's ISA and threads, the
transferred model's fine-tuning share (at most 10%), the 40% criterion (the
first checkpoint at or below the measurement-only search's final latency,
as a share of the budget; the expected answers worked out by hand in each
case), and the report section and chart drawn from such cells.

ctest runs it as bench_costmodel_tuning; by hand:
    /usr/bin/python3 -m pytest tests/bench/test_costmodel_tuning.py
"""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import costmodel_tuning as ct  # noqa: E402


def cell(default, curves):
    """A timing cell as tuning_bench.evaluate returns it: {mode: {minutes: ms}}."""
    c = {"default": {"median_ms": default, "rel_diff_torch": 1e-6}}
    for mode, points in curves.items():
        for t, ms in points.items():
            c[f"{mode}@{t:g}"] = {"median_ms": ms, "rel_diff_torch": 2e-6}
    return c


NONE = {2: 95.0, 4: 90.0, 6: 88.0, 8: 87.0, 10: 85.0}  # budget 10 minutes; final 85 ms
XGB = {2: 96.0, 4: 93.0, 6: 89.0, 8: 86.0, 10: 86.0}


def test_held_out_target_gives_isa_and_threads():
    assert ct.target_isa_threads("avx2-t1") == ("avx2", 1)
    assert ct.target_isa_threads("avx512-t2") == ("avx512", 2)
    for bad in ["avx2", "sse-t1", "avx2-t0", "avx2-t1x"]:
        with pytest.raises(ValueError, match=bad):
            ct.target_isa_threads(bad)


def test_transfer_share_is_the_largest_and_at_most_ten_percent():
    assert ct.transfer_share("0,0.05,0.10") == pytest.approx(0.10)
    assert ct.transfer_share("0.05,0") == pytest.approx(0.05)
    with pytest.raises(ValueError, match="0.2"):
        ct.transfer_share("0,0.2")


def test_curve_starts_untuned_and_is_in_time_order():
    c = cell(100.0, {"none": {10: 85.0, 2: 95.0, 6: 88.0}})
    assert ct.latency_curve(c, "none") == [(0.0, 100.0), (2.0, 95.0), (6.0, 88.0), (10.0, 85.0)]


def test_latency_is_paired_by_round():
    # A slow spell (everything twice as slow) from the middle of round 3 on:
    # the variant is 0.9 of the untuned time in every round but that one, so
    # its latency is 0.9 of the untuned median (10 ms), not its own median (18).
    c = {"default": {"median_ms": 10.0, "samples": [10, 10, 10, 20, 20], "rel_diff_torch": 1e-6},
         "none@1": {"median_ms": 18.0, "samples": [9, 9, 18, 18, 18], "rel_diff_torch": 1e-6}}
    assert ct.latency(c, "none@1") == pytest.approx(9.0)
    assert ct.latency_curve(c, "none") == [(0.0, 10.0), (1.0, pytest.approx(9.0))]
    del c["none@1"]["samples"]  # hand-made cells without samples: their median
    assert ct.latency(c, "none@1") == 18.0


def test_reaching_at_forty_percent_passes():
    # 84.9 <= 85 at minute 4 of 10: exactly 40%.
    attention = {2: 92.0, 4: 84.9, 6: 86.0, 8: 84.0, 10: 83.0}
    v = ct.verdict(cell(100.0, {"none": NONE, "xgb": XGB, "attention": attention}), 10)
    assert (v["level"], v["minutes"], v["pass"], v["gained"]) == (85.0, 4.0, True, True)
    assert v["share"] == pytest.approx(0.4)
    assert ct.verdict_line(v) == ("The transferred model first reaches the measurement-only search's final latency "
                                  "(85.00 ms) at 4 min, 40% of the budget: **PASS** (at most 40%).")


def test_equal_latency_counts_as_reached():
    v = ct.verdict(cell(100.0, {"none": NONE, "attention": {2: 85.0, 4: 99.0, 6: 99.0, 8: 99.0, 10: 99.0}}), 10)
    assert v["minutes"] == 2.0 and v["share"] == pytest.approx(0.2) and v["pass"]


def test_reaching_later_or_never_fails():
    late = ct.verdict(cell(100.0, {"none": NONE, "attention": {2: 92.0, 4: 86.0, 6: 85.0, 8: 84.0, 10: 83.0}}), 10)
    assert late["minutes"] == 6.0 and late["share"] == pytest.approx(0.6) and not late["pass"]
    never = ct.verdict(cell(100.0, {"none": NONE, "attention": {2: 99.0, 4: 95.0, 6: 90.0, 8: 88.0, 10: 86.0}}), 10)
    assert never["minutes"] is None and never["share"] is None and not never["pass"]
    assert "never reaches the measurement-only search's final latency (85.00 ms)" in ct.verdict_line(never)
    assert "**FAIL**" in ct.verdict_line(never)


def test_search_that_gained_nothing_is_said_so():
    # Measurement only ended slower than untuned (85 > 80): the untuned model
    # (minute 0) already "reaches" it, which proves nothing.
    v = ct.verdict(cell(80.0, {"none": NONE, "attention": {2: 90.0, 4: 90.0, 6: 90.0, 8: 90.0, 10: 90.0}}), 10)
    assert v["minutes"] == 0.0 and v["pass"] and not v["gained"]
    assert "shows nothing" in ct.verdict_line(v)


def results():
    attention = {2: 92.0, 4: 84.9, 6: 86.0, 8: 84.0, 10: 83.0}
    return {"held_out": "avx2-t1", "isa": "avx2", "threads": 1, "budget_minutes": 10, "checkpoints": 5, "rounds": 3,
            "fine_tune_share": 0.1, "commit": "abc1234", "titles": {"mobilenet_v2": "MobileNetV2"},
            "cells": {"mobilenet_v2": cell(100.0, {"none": NONE, "xgb": XGB, "attention": attention})}}


def test_section_has_the_curve_table_and_the_verdict():
    text = "\n".join(ct.section(results(), "c.png"))
    assert "## Tuning curves on the held-out target (avx2-t1)" in text
    assert "--isa avx2 --threads 1" in text and "![latency against tuning time](c.png)" in text
    assert "| minutes | measurement only | XGBoost, online from nothing | attention, transferred |" in text
    assert "| 0 (untuned) | 100.00 | 100.00 | 100.00 |" in text
    assert "| 4 | 90.00 | 93.00 | 84.90 |" in text
    assert "| 10 | 85.00 | 86.00 | 83.00 |" in text
    assert "### MobileNetV2" in text and "**PASS**" in text and "2.0e-06" in text


def test_chart_is_written(tmp_path):
    path = tmp_path / "c.png"
    ct.chart(results(), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
