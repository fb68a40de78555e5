#!/usr/bin/env python3
"""Regenerates bench/COSTMODEL.md from a records file and its collection
(issue 21), by running the tessera CLI's costmodel commands:

- the dataset: networks, tasks, and records per target (read from the
  records and the collection's tasks.json);
- XGBoost's within-task pairwise accuracy per target, with its pair count,
  bootstrap 95% interval and TenSet's per-task average (and top-k scores), by
  k-fold cross-validation within task (`costmodel eval --folds K`: every
  candidate judged once);
- transfer: for each target held out in turn, the attention model trained on
  the others and fine-tuned on 0, 5 and 10% of the held-out target's records,
  beside attention and xgb trained on all of them (`costmodel transfer`);
- pruning: xgb's accuracy against the share of the training records kept,
  for each method, on a within-task and a by-task split, means over seeds
  (`costmodel prune --eval`);
- with --tuning: tuning curves on the --held-out target for ResNet-50,
  MobileNetV2 and BERT-base — measurement only, XGBoost online from nothing,
  the transferred attention model (the transfer's model fine-tuned on the
  largest --fine-tune-share, at most 10%) — and whether the transferred
  model reaches the measurement-only search's final latency within 40% of
  the budget (bench/costmodel_tuning.py; its docstring has the full and the
  smoke command).

Usage (a small dataset, as the tests make; the full one is collected by
`tessera dataset collect --networks $(bench/dataset_networks.py) ...`):
  tessera dataset collect --networks A.onnx,B.onnx --out DS --targets avx2-t1,avx2-t2 --per-task 24
  /usr/bin/python3 bench/costmodel_bench.py --records DS/records.rank0.jsonl --dataset DS
(several rank files: `tessera dataset merge DS -o all.jsonl` first.) Exits
non-zero, with the command's output, when a command fails or prints no table.
The tuning curves:
  /usr/bin/python3 bench/costmodel_bench.py --records DS/all.jsonl --dataset DS --tuning --held-out avx2-t2 \\
      [--tuning-models resnet50 mobilenet_v2 bert_base] [--budget-minutes 10] [--checkpoints 5]
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import costmodel_tuning  # noqa: E402


def run(cli, args, work=None, reuse=False, makes=()):
    """The command's stdout; stops the script with its output when it fails.
    With `work`, the output is kept in work/outputs (named by a hash of the
    command line); `reuse` returns a kept output instead of running again when
    the files the command `makes` exist too (--reuse: a report rebuilt after
    the tuning curves without the hour of training before them)."""
    cmd = [cli, *args]
    kept = None
    if work:
        os.makedirs(os.path.join(work, "outputs"), exist_ok=True)
        kept = os.path.join(work, "outputs", hashlib.sha1("\0".join(cmd).encode()).hexdigest()[:16] + ".txt")
        if reuse and os.path.exists(kept) and all(os.path.exists(m) for m in makes):
            print(f"costmodel_bench: reusing the output of {' '.join(cmd)}", file=sys.stderr)
            with open(kept) as f:
                return f.read()
    print(f"costmodel_bench: {' '.join(cmd)}", file=sys.stderr)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"costmodel_bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    if kept:
        with open(kept, "w") as f:
            f.write(p.stdout)
    return p.stdout


def transfer_model(work, target):
    """The model `costmodel transfer --held-out target` fine-tunes on the largest
    share (the tuning curves on that target start from it)."""
    return os.path.join(work, f"transfer-{target}.pt")


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def table(text, header_start, what):
    """The rows after the line starting with header_start: each its name (the
    first column, which may hold spaces) and one number per other column."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header_start):
            header = line.split()
            rows = []
            for row in lines[i + 1:]:
                tokens = row.split()
                numbers = tokens[len(tokens) - (len(header) - 1):]
                if len(tokens) < len(header) or not all(is_number(x) for x in numbers):
                    break
                rows.append([" ".join(tokens[:len(tokens) - len(numbers)]), *numbers])
            if rows:
                return header, rows
    sys.exit(f"costmodel_bench: no {what} table in:\n{text}")


def dataset_summary(records, datasets):
    """(networks, tasks, {target name: records}) of the records' collections."""
    networks, tasks, names = set(), set(), {}
    for d in datasets:
        t = json.load(open(os.path.join(d, "tasks.json")))
        networks.update(n["name"] for n in t["networks"])
        tasks.update(task["key"] for task in t["tasks"])
        for target in t["targets"]:
            names[target["target"]] = target["name"]
    per_target = Counter()
    for path in records:
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                per_target[names.get(r["target"], r["target"])] += 1
    return sorted(networks), len(tasks), per_target


def markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def mean_rows(runs):
    """The rows of several runs of one table (same names in the same order),
    each number the mean over the runs, printed as the first run prints it."""
    out = []
    for rows in zip(*runs):
        if len({r[0] for r in rows}) != 1:
            sys.exit(f"costmodel_bench: the runs' tables differ: {[r[0] for r in rows]}")
        cells = [rows[0][0]]
        for c, first in enumerate(rows[0][1:], start=1):
            mean = sum(float(r[c]) for r in rows) / len(rows)
            decimals = len(first.split(".")[1]) if "." in first else 0
            cells.append(f"{mean:.{decimals}f}")
        out.append(cells)
    return out


def prune_verdict(header, rows):
    """Whether a method keeping at most 55% of the train records is within
    0.005 pairwise accuracy of the whole train part."""
    kept, pairwise = header.index("kept"), header.index("pairwise")
    full = next(float(r[pairwise]) for r in rows if r[0] == "all")
    small = [r for r in rows if r[0] != "all" and float(r[kept]) <= 0.55]
    if not small:
        return "No method kept 55% or less: no verdict."
    best = max(small, key=lambda r: float(r[pairwise]))
    loss = full - float(best[pairwise])
    ok = loss <= 0.005
    return (f"Best at 45% removed or more: {best[0]} keeping {best[kept]}, pairwise {best[pairwise]} against "
            f"{full:.4f} ({-loss:+.4f}): **{'PASS' if ok else 'FAIL'}** (within 0.005).")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", nargs="+", required=True, help="records files (JSON lines)")
    ap.add_argument("--dataset", nargs="+", required=True, help="their collection directories (tasks.json)")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "tessera"), help="the tessera CLI (default build/tessera)")
    ap.add_argument("--out", default=os.path.join(HERE, "COSTMODEL.md"), help="the report (default bench/COSTMODEL.md)")
    ap.add_argument("--work", default=os.path.join(HERE, "out", "costmodel"), help="model files go here")
    ap.add_argument("--rounds", type=int, default=500, help="xgb's boosting rounds")
    ap.add_argument("--epochs", type=int, default=40, help="attention's training passes")
    ap.add_argument("--folds", type=int, default=5, help="xgb's k-fold cross-validation within task")
    ap.add_argument("--label", default="ratio", choices=["min", "median", "ratio"],
                    help="a schedule's cost from its repeats (costmodel --label; default ratio, the tuner's "
                         "pooled cost: the paired default runs cancel the machine's slow phases)")
    ap.add_argument("--test-share", type=float, default=0.3,
                    help="pruning: the share held out (within-task: of each group; by-task: of the tasks)")
    ap.add_argument("--fine-tune-share", default="0,0.05,0.10", help="transfer: shares fine-tuned on")
    ap.add_argument("--methods", default="random,cluster,loss,twins", help="pruning methods")
    ap.add_argument("--keep", default="1,0.75,0.55,0.5,0.25", help="pruning: shares kept")
    ap.add_argument("--prune-splits", default="within-task,by-task",
                    help="pruning: the splits judged on (a comma list; test share --test-share)")
    ap.add_argument("--prune-seeds", default="1,2",
                    help="pruning: each split drawn and pruned with each seed, the report has the means")
    ap.add_argument("--threads", type=int, default=1, help="XGBoost's and torch's threads")
    ap.add_argument("--tuning", action="store_true", help="also the tuning curves on --held-out")
    ap.add_argument("--held-out", help="--tuning: the target tuned for (its ISA and threads), held out by transfer")
    ap.add_argument("--tuning-models", nargs="+", default=costmodel_tuning.MODELS,
                    help="--tuning: bench/tuning_bench.py's model names")
    ap.add_argument("--budget-minutes", type=float, default=10, help="--tuning: each search's budget")
    ap.add_argument("--checkpoints", type=int, default=5,
                    help="--tuning: points of a curve (equal shares of the budget)")
    ap.add_argument("--timing-rounds", type=int, default=15, help="--tuning: interleaved timing rounds")
    ap.add_argument("--skip-tune", action="store_true", help="--tuning: reuse the records of earlier runs")
    ap.add_argument("--transfer-targets", nargs="+",
                    help="the targets held out in turn by the transfer section (default: every target)")
    ap.add_argument("--cache", help="the features cache file (costmodel --cache; default none: computed each time)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the outputs of an earlier run's evaluations kept in --work (same command lines) "
                         "and its tuning curves (same target, models, budget, checkpoints and rounds)")
    a = ap.parse_args()
    if a.tuning:
        if not a.held_out:
            sys.exit("costmodel_bench: --tuning needs --held-out TARGET")
        try:
            costmodel_tuning.target_isa_threads(a.held_out)
            share = costmodel_tuning.transfer_share(a.fine_tune_share)
            costmodel_tuning.tuning_bench_module(a.tuning_models)
        except ValueError as e:
            sys.exit(f"costmodel_bench: {e}")
    os.makedirs(a.work, exist_ok=True)
    data = ["--records", *a.records, "--dataset", *a.dataset, "-q", "--threads", str(a.threads), "--label", a.label,
            *(["--cache", a.cache] if a.cache else [])]

    networks, tasks, per_target = dataset_summary(a.records, a.dataset)
    targets = sorted(per_target)

    if a.tuning and (a.held_out not in targets or len(targets) < 2):
        sys.exit(f"costmodel_bench: --held-out {a.held_out}: transfer needs it among two targets or more of the "
                 f"records (they have: {', '.join(targets)})")
    transferred = transfer_model(a.work, a.held_out)
    transfers = []
    if len(targets) >= 2:
        for t in a.transfer_targets or targets:
            if t not in targets:
                sys.exit(f"costmodel_bench: --transfer-targets {t}: no target of the records ({', '.join(targets)})")
            keep = ["--fine-tuned-out", transfer_model(a.work, t)]
            out = run(a.cli, ["costmodel", "transfer", "--held-out", t, "--epochs", str(a.epochs), "--rounds",
                              str(a.rounds), "--fine-tune-share", a.fine_tune_share, *keep, *data],
                      a.work, a.reuse, keep[1:])
            transfers.append((t, *table(out, "model", "transfer")))

    xgb_out = run(a.cli, ["costmodel", "eval", "--folds", str(a.folds), "--rounds", str(a.rounds), *data],
                  a.work, a.reuse)
    xgb_header, xgb_rows = table(xgb_out, "target", "xgb eval")
    prunings = []
    for split in a.prune_splits.split(","):
        runs = [table(run(a.cli, ["costmodel", "prune", "--eval", "--method", a.methods, "--keep", a.keep, "--rounds",
                                  str(a.rounds), "--split", split, "--test-share", str(a.test_share), "--seed", seed,
                                  *data], a.work, a.reuse), "method", "pruning")
                for seed in a.prune_seeds.split(",")]
        prunings.append((split, runs[0][0], mean_rows([rows for _, rows in runs])))

    pooled = " (the tuner's pooled cost)" if a.label == "ratio" else ""
    lines = [
        f"# Learned cost models: dataset, XGBoost, transfer, pruning{', tuning curves' if a.tuning else ''} (issue 21)",
        "",
        f"Generated by `/usr/bin/python3 bench/costmodel_bench.py {' '.join(sys.argv[1:])}` on "
        f"{datetime.date.today()} (xgb {a.rounds} rounds, attention "
        f"{a.epochs} epochs, {a.threads} thread(s); label {a.label}: a schedule's cost is the {a.label} of its repeats"
        f"{pooled}).",
        "",
        "## The dataset",
        "",
        f"{len(networks)} networks, {tasks} tasks; records per target:",
        "",
        *markdown_table(["target", "records"], [[t, str(per_target[t])] for t in targets]),
        "",
        f"Networks: {', '.join(networks)}.",
        "",
        f"## XGBoost within task ({a.folds}-fold cross-validation: every candidate judged once, by a model "
        "trained on the other folds)",
        "",
        "pairs: the pairs of candidates within a fold of a task (measured costs differ); ci95: a bootstrap interval "
        "of the pairwise accuracy over those groups; per-task: TenSet's average of each group's accuracy, weighted "
        "by its size; tasks: the (task, fold) groups.",
        "",
        *markdown_table(xgb_header, xgb_rows),
        "",
        "## Transfer to a held-out target (attention)",
        "",
    ]
    if not transfers:
        lines += ["One target only: nothing to transfer to.", ""]
    for t, header, rows in transfers:
        lines += [f"Held out: {t}.", "", *markdown_table(header, rows), ""]
    seeds = a.prune_seeds.split(",")
    lines += [
        "## Pruning",
        "",
        "XGBoost trained on the pruned train part of a split, judged on its (unpruned) test part, beside the whole "
        f"train part (`all`); the means over {len(seeds)} seed(s) ({', '.join(seeds)}), each drawing the split and "
        "the pruning. `keep` is the share of each task group asked, `kept` the share of the train records kept. "
        "Methods: `random` (a uniform draw per group), `cluster` (one representative per k-means cluster of the "
        "group's program rows), `loss` (drop the programs a first model already orders best), `twins` (a schedule "
        "measured on the targets of one ISA, which differ in threads only, kept on the share of them: each keeps a "
        "copy). The criterion: at least 45% removed (kept at most 0.55) within 0.005 of `all`.",
        "",
    ]
    for split, header, rows in prunings:
        what = (f"{a.test_share} of each task group's schedules held out" if split == "within-task" else
                f"{a.test_share} of the tasks held out: judged on tasks never trained on" if split == "by-task" else
                f"test share {a.test_share}")
        lines += [f"### Split {split} ({what})", "", *markdown_table(header, rows), "", prune_verdict(header, rows), ""]
    if a.tuning:
        results = a.reuse and costmodel_tuning.kept_results(a.held_out, transferred, share, a.tuning_models, a.work,
                                                            a.budget_minutes, a.checkpoints, a.timing_rounds)
        if not results:
            results = costmodel_tuning.run(a.cli, a.held_out, transferred, share, a.tuning_models, a.work,
                                           a.budget_minutes, a.checkpoints, a.timing_rounds, a.skip_tune)
        chart = os.path.splitext(os.path.basename(a.out))[0].lower() + "_tuning.png"
        costmodel_tuning.chart(results, os.path.join(os.path.dirname(os.path.abspath(a.out)), chart))
        lines += costmodel_tuning.section(results, chart)
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print(f"costmodel_bench: wrote {a.out}")


if __name__ == "__main__":
    main()
