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
  for each method (`costmodel prune --eval`).

Usage (a small dataset, as the tests make; the full one is collected by
`tessera dataset collect --networks $(bench/dataset_networks.py) ...`):
  tessera dataset collect --networks A.onnx,B.onnx --out DS --targets avx2-t1,avx2-t2 --per-task 24
  /usr/bin/python3 bench/costmodel_bench.py --records DS/records.rank0.jsonl --dataset DS
(several rank files: `tessera dataset merge DS -o all.jsonl` first.) Exits
non-zero, with the command's output, when a command fails or prints no table.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cli, args):
    """The command's stdout; stops the script with its output when it fails."""
    cmd = [cli, *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"costmodel_bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", nargs="+", required=True, help="records files (JSON lines)")
    ap.add_argument("--dataset", nargs="+", required=True, help="their collection directories (tasks.json)")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "tessera"), help="the tessera CLI (default build/tessera)")
    ap.add_argument("--out", default=os.path.join(HERE, "COSTMODEL.md"), help="the report (default bench/COSTMODEL.md)")
    ap.add_argument("--work", default=os.path.join(HERE, "out", "costmodel"), help="model files go here")
    ap.add_argument("--rounds", type=int, default=200, help="xgb's boosting rounds")
    ap.add_argument("--epochs", type=int, default=40, help="attention's training passes")
    ap.add_argument("--folds", type=int, default=5, help="xgb's k-fold cross-validation within task")
    ap.add_argument("--label", default="min", choices=["min", "median", "ratio"],
                    help="a schedule's cost from its repeats (costmodel --label)")
    ap.add_argument("--test-share", type=float, default=0.3, help="within-task share held out (pruning)")
    ap.add_argument("--fine-tune-share", default="0,0.05,0.10", help="transfer: shares fine-tuned on")
    ap.add_argument("--methods", default="random,cluster,loss", help="pruning methods")
    ap.add_argument("--keep", default="1,0.75,0.55,0.5,0.25", help="pruning: shares kept")
    ap.add_argument("--threads", type=int, default=1, help="XGBoost's and torch's threads")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = ["--records", *a.records, "--dataset", *a.dataset, "-q", "--threads", str(a.threads), "--label", a.label]
    split = ["--split", "within-task", "--test-share", str(a.test_share)]

    networks, tasks, per_target = dataset_summary(a.records, a.dataset)
    targets = sorted(per_target)

    xgb_out = run(a.cli, ["costmodel", "eval", "--folds", str(a.folds), "--rounds", str(a.rounds), *data])
    xgb_header, xgb_rows = table(xgb_out, "target", "xgb eval")

    transfers = []
    if len(targets) >= 2:
        for t in targets:
            out = run(a.cli, ["costmodel", "transfer", "--held-out", t, "--epochs", str(a.epochs), "--rounds",
                              str(a.rounds), "--fine-tune-share", a.fine_tune_share, *data])
            transfers.append((t, *table(out, "model", "transfer")))

    prune_out = run(a.cli, ["costmodel", "prune", "--eval", "--method", a.methods, "--keep", a.keep, "--rounds",
                            str(a.rounds), *split, *data])
    prune_header, prune_rows = table(prune_out, "method", "pruning")

    pooled = " (the tuner's pooled cost)" if a.label == "ratio" else ""
    lines = [
        "# Learned cost models: dataset, XGBoost, transfer, pruning (issue 21)",
        "",
        f"Generated by `/usr/bin/python3 bench/costmodel_bench.py --records {' '.join(a.records)} "
        f"--dataset {' '.join(a.dataset)}` on {datetime.date.today()} (xgb {a.rounds} rounds, attention "
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
    lines += [
        f"## Pruning (xgb trained on the pruned train part, judged on the test part; share {a.test_share})",
        "",
        *markdown_table(prune_header, prune_rows),
        "",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print(f"costmodel_bench: wrote {a.out}")


if __name__ == "__main__":
    main()
