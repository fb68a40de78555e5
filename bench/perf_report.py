#!/usr/bin/python3
"""Writes bench/RESULTS.md and bench/results.png from the raw results of
bench/perf_harness.py (bench/out/perf/results.json).

perf_harness.py calls this at the end of every run; run it by hand only to
redraw the report from an existing results.json (e.g. after changing its layout):
    /usr/bin/python3 bench/perf_report.py [--results bench/out/perf/results.json] [--out bench]
Needs Debian's python3-matplotlib.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = ["tessera", "ort", "torch", "torchscript", "opencv"]
PEERS = RUNTIMES[1:]
LABELS = {"tessera": "Tessera", "ort": "ONNX Runtime", "torch": "torch eager", "torchscript": "TorchScript",
          "opencv": "OpenCV DNN", "tessera_base": "Tessera baseline"}
COLORS = {"tessera": "#d62728", "ort": "#1f77b4", "torch": "#ff7f0e", "torchscript": "#2ca02c", "opencv": "#9467bd",
          "tessera_base": "#e377c2"}
BASELINE = "tessera_base"  # perf_harness.py --baseline BIN: an earlier Tessera build, interleaved like a peer


def runtimes_of(results):
    """The runtimes of a run: RUNTIMES, and the baseline build after Tessera when the run had one."""
    return RUNTIMES[:1] + [BASELINE] + RUNTIMES[1:] if results.get("baseline") else RUNTIMES


def baseline_ratio(cells):
    t, b = cells.get("tessera", {}), cells.get(BASELINE, {})
    if t.get("status") == "ok" and b.get("status") == "ok" and "median_ms" in t and "median_ms" in b:
        return t["median_ms"] / b["median_ms"]
    return None


def fmt_ms(v):
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def best_peer(cells):
    """(runtime, median ms) of the fastest peer that ran, or None."""
    ok = [(cells[p]["median_ms"], p) for p in PEERS if p in cells and cells[p].get("status") == "ok"
          and "median_ms" in cells[p]]
    return (min(ok)[1], min(ok)[0]) if ok else None


def ratio_of(cells):
    best = best_peer(cells)
    t = cells.get("tessera", {})
    if best and t.get("status") == "ok" and "median_ms" in t:
        return t["median_ms"] / best[1]
    return None


def diff_text(cell):
    if cell.get("status") != "ok":
        return "—"
    if "diff_error" in cell:
        return cell["diff_error"]
    if "max_abs_diff" not in cell:
        return "—"
    return f"{cell['max_abs_diff']:.2g} ({cell['rel_diff']:.2g})"


class Notes:
    """Numbered reasons for cells that did not run, one number per distinct text."""

    def __init__(self):
        self.items = []

    def ref(self, text):
        if text not in self.items:
            self.items.append(text)
        return f"[{self.items.index(text) + 1}]"

    def lines(self):
        return [f"{i + 1}. {t}" for i, t in enumerate(self.items)]


def cell_text(results, model, rt, cell, notes):
    status = cell.get("status", "failed")
    if status == "ok" and "median_ms" in cell:
        return fmt_ms(cell["median_ms"])
    reason = cell.get("reason", "no timed run")
    word = "n/a" if status == "unavailable" else "failed"
    return f"{word} {notes.ref(f'{LABELS[rt]} on {model}: {status}: {reason}')}"


def thread_table(results, threads):
    per_model = results["cells"].get(str(threads), {})
    notes = Notes()
    rts = runtimes_of(results)
    head = ["model"] + [f"{LABELS[r]} ms" for r in rts] + [
        "best peer", "Tessera / best peer", "Tessera max abs diff vs torch (relative)"]
    if results.get("baseline"):
        head.append("Tessera / baseline")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    faster, worst, failed = 0, None, []
    for m in results["models"]:
        if m not in per_model:
            continue
        cells = per_model[m]
        row = [results["titles"].get(m, m)]
        row += [cell_text(results, m, rt, cells.get(rt, {}), notes) for rt in rts]
        best = best_peer(cells)
        ratio = ratio_of(cells)
        row.append(LABELS[best[0]] if best else "—")
        row.append("—" if ratio is None else f"**{ratio:.2f}**" if ratio < 1 else f"{ratio:.2f}")
        row.append(diff_text(cells.get("tessera", {})))
        if results.get("baseline"):
            b = baseline_ratio(cells)
            row.append("—" if b is None else f"{b:.2f}")
        lines.append("| " + " | ".join(row) + " |")
        if ratio is None:
            failed.append(m)
            continue
        faster += ratio < 1
        if worst is None or ratio > worst[0]:
            worst = (ratio, m)
    n = sum(1 for m in results["models"] if m in per_model)
    summary = f"**Tessera faster than the best peer on {faster} of {n} models"
    summary += f", worst ratio {worst[0]:.2f} ({results['titles'].get(worst[1], worst[1])}).**" if worst else ".**"
    if failed:
        summary += f" No ratio (Tessera or every peer did not run) for: {', '.join(failed)}."
    if results.get("baseline"):
        base = [(baseline_ratio(per_model[m]), m) for m in results["models"] if m in per_model]
        base = [(r, m) for r, m in base if r is not None]
        if base:
            worst_b = max(base)
            summary += (f" Against the baseline build ({results['baseline']}), interleaved in the same rounds: "
                        f"median ratio {statistics.median(r for r, _ in base):.2f}, worst {worst_b[0]:.2f} "
                        f"({results['titles'].get(worst_b[1], worst_b[1])}).")
    return lines, summary, notes


def load_accuracy_table(results):
    """Every runtime's load time and accuracy, one row per model and thread count."""
    rts = runtimes_of(results)
    head = ["model", "threads"] + [LABELS[r] for r in rts]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in results["models"]:
        for t in results["threads"]:
            cells = results["cells"].get(str(t), {}).get(m)
            if cells is None:
                continue
            row = [results["titles"].get(m, m), str(t)]
            for rt in rts:
                c = cells.get(rt, {})
                if c.get("status") != "ok" or "ready" not in c:
                    row.append("—")
                    continue
                load = c["ready"].get("compile_ms", 0) / 1e3
                rel = f"{c['rel_diff']:.1g}" if "rel_diff" in c else c.get("diff_error", "—")
                row.append(f"{load:.1f} s, {rel}")
            lines.append("| " + " | ".join(row) + " |")
    return lines


def settle_text(results):
    """How long the runs waited for the other runtimes' threads to stop (perf_harness.py --settle-ms)."""
    cap = results.get("settle_ms")
    if not cap:
        return ", so the previous runtime's pool threads are idle"
    waits, unsettled = {}, 0
    for per_model in results["cells"].values():
        for cells in per_model.values():
            for rt, cell in cells.items():
                waits.setdefault(rt, []).extend(cell.get("settle_ms", []))
                unsettled += cell.get("unsettled", 0)
    after = ", ".join(f"{LABELS[rt]} {statistics.median(w):.0f} ms" for rt, w in waits.items() if w)
    return (f", then a wait until the other runtimes' threads had stopped running (at most {cap:g} ms; a "
            "runtime's pool may spin on after its run and take a core from the next one), median wait before "
            f"each runtime's runs: {after}; {unsettled} runs found the others still running at the limit")


def markdown(results):
    mach, ver = results["machine"], results["versions"]
    out = ["# Tessera against ONNX Runtime, PyTorch and OpenCV DNN: inference latency", ""]
    if results.get("quick"):
        out += [f"> **QUICK SMOKE TEST — NOT A VALID RESULT.** This file was written with `--quick` "
                f"({results['runs']} timed rounds, fewer than the 20 a result needs); it only shows that the "
                "harness runs. Regenerate it without `--quick`.", ""]
    out += [
        f"Regenerated by `{results['command']}` on {results['date'][:16].replace('T', ' ')} "
        f"(took {results.get('total_seconds', '?')} s).",
        "",
        f"- Machine: {mach['cpu']}, {mach['cores']} cores ({mach['isa']}), {mach['memory_gib']} GiB, "
        f"Linux {mach['kernel']}.",
        f"- Tessera: {ver['tessera']}, `tessera serve`.",
        f"- ONNX Runtime: {ver['onnxruntime']} (CPU, node {ver['node']}), graph optimization \"all\", "
        "intraOpNumThreads = threads, interOpNumThreads 1, sequential execution.",
        f"- PyTorch {ver['torch']} (torchvision {ver['torchvision']}): *torch eager* under "
        "torch.inference_mode(); *TorchScript* traced, torch.jit.freeze + torch.jit.optimize_for_inference "
        "(oneDNN); torch.set_num_threads(threads).",
        f"- OpenCV DNN {ver['opencv']}: cv2.dnn.readNetFromONNX, default backend, CPU target, "
        "cv2.setNumThreads(threads).",
        "",
        "How it is measured: batch 1, seeded random weights and inputs (bench/perf_models.py), ONNX opset 13 "
        "exported by torch with constant folding; every runtime reads the same model.onnx (the torch runtimes "
        "rebuild the same module) and the same input_0.npy. Each runtime is a process of its own, loaded while "
        f"the others wait; after {results['warmup']} warm-up runs each, {results['runs']} rounds in which every "
        "runtime runs once, the order shuffled (seeded) each round, so drift hits all alike and no runtime always follows the same one (with a "
        f"{results.get('gap_ms', 0):g} ms pause before each run{settle_text(results)}; "
        f"OMP_WAIT_POLICY={results.get('omp_wait_policy', 'unset')}, so OpenMP's threads sleep instead of "
        "spinning between runs). Latency is the median of "
        "these runs, timed inside each runtime's process around one inference call. *Tessera / best peer* "
        "below 1 means Tessera is faster. *Max abs diff vs torch*: largest |output − torch eager's output at "
        "export| (in parentheses: divided by the largest |torch output|).",
        "",
    ]
    for t in results["threads"]:
        if str(t) not in results["cells"]:
            continue
        lines, summary, notes = thread_table(results, t)
        out += [f"## {t} thread{'s' if t != 1 else ''}", ""] + lines + ["", summary, ""]
        if notes.items:
            out += ["Cells that did not run:", ""] + notes.lines() + [""]
    out += ["## Load time and accuracy of every runtime", "",
            "Load time (`compile_ms` of the ready line: Tessera's compilation, ORT's session creation, OpenCV's "
            "readNetFromONNX, the torch runtimes' model construction and tracing/freezing), then max abs diff vs "
            "torch / max |torch output|.", ""]
    out += load_accuracy_table(results) + [""]
    out += ["![latency normalized to the best peer](results.png)", "",
            "Raw samples: bench/out/perf/results.json; worker logs: bench/out/perf/<model>/logs/.", ""]
    return "\n".join(out)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    threads = [t for t in results["threads"] if str(t) in results["cells"]]
    models = results["models"]
    fig, axes = plt.subplots(len(threads), 1, figsize=(max(8, 1.5 * len(models) + 2), 3.6 * len(threads) + 0.8),
                             squeeze=False)
    width = 0.8 / len(RUNTIMES)
    cap = 4.0  # linear axis up to 4x the best peer; taller bars are cut and labelled with their value
    for ax, t in zip(axes[:, 0], threads):
        per_model = results["cells"][str(t)]
        ratios = [per_model[m][rt]["median_ms"] / best_peer(per_model[m])[1] for m in models if m in per_model
                  and best_peer(per_model[m]) for rt in RUNTIMES if "median_ms" in per_model[m].get(rt, {})
                  and per_model[m][rt].get("status") == "ok"]
        top = min(cap, max(ratios + [1.0]) * 1.12)
        for i, rt in enumerate(RUNTIMES):
            xs, ys = [], []
            for j, m in enumerate(models):
                cells = per_model.get(m, {})
                best = best_peer(cells)
                c = cells.get(rt, {})
                x = j + (i - (len(RUNTIMES) - 1) / 2) * width
                if best and c.get("status") == "ok" and "median_ms" in c:
                    r = c["median_ms"] / best[1]
                    xs.append(x)
                    ys.append(min(r, top))
                    if r > top:
                        ax.text(x, top, f"{r:.1f}", rotation=90, ha="center", va="top", fontsize=6, color="white")
                elif m in per_model:
                    ax.text(x, 0.02 * top, "n/a" if c.get("status") == "unavailable" else "failed", rotation=90,
                            ha="center", va="bottom", fontsize=6, color=COLORS[rt])
            ax.bar(xs, ys, width, label=LABELS[rt], color=COLORS[rt])
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylim(0, top)
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models, fontsize=8)
        ax.set_ylabel("latency / best peer's")
        ax.set_title(f"{t} thread{'s' if t != 1 else ''} (lower is faster; 1 = the fastest of ONNX Runtime, "
                     "torch eager, TorchScript, OpenCV DNN)", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(RUNTIMES), fontsize=8, frameon=False)
    title = f"Median latency, batch 1, {results['machine']['cpu']}, {results['machine']['cores']} cores"
    if results.get("quick"):
        title = "QUICK SMOKE TEST - NOT A VALID RESULT\n" + title
    fig.suptitle(title, fontsize=11, color="red" if results.get("quick") else "black")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results, out_dir):
    md = os.path.join(out_dir, "RESULTS.md")
    png = os.path.join(out_dir, "results.png")
    os.makedirs(out_dir, exist_ok=True)
    with open(md, "w") as f:
        f.write(markdown(results))
    plot(results, png)
    return md, png


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(HERE, "out", "perf", "results.json"))
    ap.add_argument("--out", default=HERE, help="directory for RESULTS.md and results.png")
    args = ap.parse_args()
    if not os.path.exists(args.results):
        sys.exit(f"{args.results} does not exist; run bench/perf_harness.py first")
    with open(args.results) as f:
        results = json.load(f)
    md, png = write(results, args.out)
    print(f"wrote {md} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
