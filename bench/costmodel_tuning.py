"""Tuning curves on the held-out target (issue 21): each model's end-to-end
latency against tuning time for three searches of the same budget on the
held-out target's ISA and thread count —

- measurement only (`tessera tune --cost-model none`),
- XGBoost trained online from nothing (`--cost-model xgb`),
- the transferred attention model (`--cost-model attention --cost-model-file M`,
  M written by `costmodel transfer --held-out T --fine-tuned-out M`: trained on
  the other targets' records and fine-tuned on the largest --fine-tune-share,
  at most 10%, of T's, drawn as transfer draws them),

then the model as tuned after each checkpoint timed interleaved with the
untuned one (bench/tuning_bench.py's tune and evaluate: `tessera serve`
workers; a checkpoint's latency is the untuned median over the median of
the per-round ratios, as TUNING.md's speedups). The issue's line per model: the time at
which the transferred model's curve first reaches the measurement-only
search's final latency, as a share of the budget, PASS at 40% or less. The
curve is measured at the checkpoints only (equal shares of the budget), so a
crossing is the first checkpoint at or below that latency, never interpolated.

bench/costmodel_bench.py --tuning runs this after its transfer tables and
adds the section and the chart (costmodel_tuning.png beside the report);
results go to WORK/tuning/results.json. The full run, on the quiet collection
(bench/out/dataset; avx2-t2 held out, say):

  /usr/bin/python3 bench/costmodel_bench.py --records bench/out/dataset/all.jsonl \\
      --dataset bench/out/dataset/records --tuning --held-out avx2-t2 --budget-minutes 10

A smoke run (a tiny dataset of two ONNX node models, as the tests make; one
model tuned a minute per search; 4 minutes on this 2-core machine):

  N=../shared/onnx-backend-tests/node
  build/tessera dataset collect --networks $N/test_conv_with_strides_padding/model.onnx,$N/test_matmul_2d/model.onnx \\
      --out /tmp/ds --targets avx2-t1,avx2-t2 --per-task 8 --repeats 3 --remeasures 0 -q
  /usr/bin/python3 bench/costmodel_bench.py --records /tmp/ds/records.rank0.jsonl --dataset /tmp/ds \\
      --out /tmp/cm/COSTMODEL.md --work /tmp/cm --rounds 20 --epochs 4 --methods random --keep 1,0.5 \\
      --tuning --held-out avx2-t1 --tuning-models mobilenet_v2 --budget-minutes 1 --timing-rounds 3
"""
import json
import os
import re
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import tuning_report  # noqa: E402  (its speedup(); matplotlib and torch only inside its write())

# search (tune --cost-model) -> its title in the tables and the chart
SEARCHES = {
    "none": "measurement only",
    "xgb": "XGBoost, online from nothing",
    "attention": "attention, transferred",
}
PASS_SHARE = 0.4        # the transferred model must reach the final measurement-only latency by this share
MAX_FINE_TUNE = 0.10    # the transferred model sees at most this share of the held-out target's records
MODELS = ["resnet50", "mobilenet_v2", "bert_base"]  # the (tuning_bench.MODELS names)


def target_isa_threads(name):
    """(isa, threads) of a dataset target name such as avx2-t1 (`tune --isa --threads`)."""
    m = re.fullmatch(r"(avx512|avx2)-t([1-9][0-9]*)", name)
    if not m:
        raise ValueError(f"held-out target '{name}' is not ISA-tTHREADS (avx512-t1, avx512-t2, avx2-t1, avx2-t2)")
    return m.group(1), int(m.group(2))


def transfer_share(shares):
    """The share the transferred model is fine-tuned on: the largest of
    `costmodel transfer --fine-tune-share` (a comma list); at most MAX_FINE_TUNE."""
    share = max(float(s) for s in shares.split(","))
    if share > MAX_FINE_TUNE + 1e-12:
        raise ValueError(f"the transferred model would be fine-tuned on {share:g} of the held-out target's records; "
                         f"the issue allows at most {MAX_FINE_TUNE:g} (--fine-tune-share)")
    return share


def latency(cell, key):
    """A variant's latency (ms): the untuned model's median over the variant's
    paired speedup (tuning_report.speedup: a slow spell of the machine cancels
    in each round's ratio); its own median when the cell has no samples."""
    d, v = cell["default"], cell[key]
    if key == "default" or "samples" not in v or "samples" not in d:
        return v["median_ms"]
    return d["median_ms"] / tuning_report.speedup(cell, key)


def latency_curve(cell, mode):
    """[(minutes, ms)] of one search: the untuned model at 0, then every checkpoint (latency())."""
    pts = [(float(k.split("@")[1]), latency(cell, k)) for k in cell if k.startswith(mode + "@")]
    return [(0.0, cell["default"]["median_ms"])] + sorted(pts)


def first_reaching(curve, level):
    """The first time of `curve` whose latency is at or below `level`; None when none is."""
    return next((t for t, ms in curve if ms <= level), None)


def verdict(cell, budget):
    """The issue's line for one model: {level: the measurement-only search's
    final latency, minutes and share: when the transferred model's curve first
    reaches it (None: never), pass, gained: whether measurement only beat the
    untuned model at all (if not, reaching its latency proves nothing)}."""
    none = latency_curve(cell, "none")
    level = none[-1][1]
    t = first_reaching(latency_curve(cell, "attention"), level)
    share = None if t is None else t / budget
    return {"level": level, "minutes": t, "share": share, "pass": share is not None and share <= PASS_SHARE + 1e-9,
            "gained": level < none[0][1]}


def verdict_line(v):
    level = f"the measurement-only search's final latency ({v['level']:.2f} ms)"
    if v["minutes"] is None:
        reach = f"never reaches {level} within the budget"
    else:
        reach = f"first reaches {level} at {v['minutes']:g} min, {100 * v['share']:.0f}% of the budget"
    line = f"The transferred model {reach}: **{'PASS' if v['pass'] else 'FAIL'}** (at most {100 * PASS_SHARE:.0f}%)."
    if not v["gained"]:
        line += " Measurement only did not beat the untuned model, so reaching its latency shows nothing."
    return line


def section(results, chart_name):
    """COSTMODEL.md's tuning-curve section (markdown lines) from results.json's contents."""
    budget = results["budget_minutes"]
    lines = [
        f"## Tuning curves on the held-out target ({results['held_out']})",
        "",
        f"Each model: one `tessera tune` run of {budget:g} min per search on {results['held_out']} "
        f"(`--isa {results['isa']} --threads {results['threads']}`): measurement only (`--cost-model none`), "
        "XGBoost trained online from nothing (`--cost-model xgb`), and the attention model transferred to "
        f"{results['held_out']} (`--cost-model attention --cost-model-file`: trained on the other targets, "
        f"fine-tuned on {100 * results['fine_tune_share']:g}% of {results['held_out']}'s records by "
        "`costmodel transfer --fine-tuned-out`). The model as tuned after t minutes is compiled with the records "
        f"of the first t minutes (the last checkpoint: all of them, the model guard's verdicts too) and timed "
        f"interleaved with the untuned one (`tessera serve` processes, {results['rounds']} rounds; ms: the untuned "
        "model's median over the median over the rounds of its time over the tuned one's in the same round, so a "
        "slow spell of the machine cancels). "
        "The criterion: the first checkpoint at which the transferred model's latency is at or below the "
        f"measurement-only search's final latency, at most {100 * PASS_SHARE:.0f}% of the budget. "
        + (f"Build: {results['commit']}." if results.get("commit") else ""),
        "",
        f"![latency against tuning time]({chart_name})",
        "",
    ]
    for name, cell in results["cells"].items():
        curves = {m: dict(latency_curve(cell, m)) for m in SEARCHES}
        times = sorted({t for c in curves.values() for t in c})
        lines += [f"### {results['titles'][name]}", "",
                  "| minutes | " + " | ".join(SEARCHES[m] for m in SEARCHES) + " |",
                  "|---:|" + "---:|" * len(SEARCHES)]
        for t in times:
            lines.append(f"| {t:g}{' (untuned)' if t == 0 else ''} | "
                         + " | ".join(f"{curves[m][t]:.2f}" if t in curves[m] else "-" for m in SEARCHES) + " |")
        worst = max(v["rel_diff_torch"] for v in cell.values())
        lines += ["", verdict_line(verdict(cell, budget)),
                  f"Outputs: largest difference from torch's relative to its largest value {worst:.1e}.", ""]
    return lines


def chart(results, path):
    """Latency against tuning time, one panel per model, the level to reach and the 40% line marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    budget = results["budget_minutes"]
    cells = results["cells"]
    fig, axes = plt.subplots(1, len(cells), figsize=(3.8 * len(cells), 3.2), squeeze=False)
    for ax, (name, cell) in zip(axes[0], cells.items()):
        for m, title in SEARCHES.items():
            xs, ys = zip(*latency_curve(cell, m))
            ax.plot(xs, ys, marker="o", linestyle="-" if m == "attention" else "--", label=title)
        ax.axhline(verdict(cell, budget)["level"], color="grey", linewidth=0.8, linestyle=":")
        ax.axvline(PASS_SHARE * budget, color="grey", linewidth=0.8)
        ax.set_title(results["titles"][name], fontsize=9)
        ax.set_xlabel("tuning time (min)")
        ax.set_ylabel("latency (ms)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"held out: {results['held_out']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tuning_bench_module(models):
    """bench/tuning_bench.py (torch is imported with it: only when tuning),
    after checking it knows every model name."""
    sys.path.insert(0, HERE)
    import tuning_bench
    unknown = [m for m in models if m not in tuning_bench.MODELS]
    if unknown:
        raise ValueError(f"no tuning model {', '.join(unknown)} (bench/tuning_bench.py has: "
                         f"{', '.join(tuning_bench.MODELS)})")
    return tuning_bench


def results_path(work):
    """Where run() keeps its results."""
    return os.path.join(work, "tuning", "results.json")


def settings(held_out, model_file, fine_tune_share, budget_minutes, checkpoints, rounds):
    """What a run's results depend on, as run() records them."""
    return {"held_out": held_out, "model_file": model_file, "fine_tune_share": fine_tune_share,
            "budget_minutes": budget_minutes, "checkpoints": checkpoints, "rounds": rounds}


def kept_results(held_out, model_file, fine_tune_share, models, work, budget_minutes, checkpoints, rounds):
    """The results run() kept in results_path(work) when they are of the same
    settings() and models; else None."""
    path = results_path(work)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        kept = json.load(f)
    want = settings(held_out, model_file, fine_tune_share, budget_minutes, checkpoints, rounds)
    same = all(kept.get(k) == v for k, v in want.items()) and sorted(kept.get("cells", {})) == sorted(models)
    if same:
        print(f"costmodel_bench: reusing the tuning curves of {path} (commit {kept.get('commit')})", file=sys.stderr)
    return kept if same else None


def run(cli, held_out, model_file, fine_tune_share, models, work, budget_minutes, checkpoints, rounds, skip_tune):
    """The three searches and the timing per model; returns (and keeps in
    results_path(work)) the results section() and chart() read."""
    tuning_bench = tuning_bench_module(models)
    isa, threads = target_isa_threads(held_out)
    out = os.path.join(work, "tuning", held_out)
    opts = types.SimpleNamespace(tessera=cli, skip_tune=skip_tune, budget_minutes=budget_minutes, threads=threads,
                                 checkpoints=checkpoints, rounds=rounds)
    extra = {"none": [], "xgb": [], "attention": ["--cost-model-file", model_file]}
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    results = {**settings(held_out, model_file, fine_tune_share, budget_minutes, checkpoints, rounds),
               "isa": isa, "threads": threads, "commit": commit,
               "titles": {m: tuning_bench.MODELS[m] for m in models}, "cells": {}}
    path = results_path(work)
    for name in models:
        runs = {m: tuning_bench.tune(opts, name, isa, m, extra=extra[m], out=out) for m in SEARCHES}
        tuning_bench.log(f"timing {name} on {held_out}")
        results["cells"][name] = tuning_bench.evaluate(opts, name, isa, runs, out=out)
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
    return results
