#!/usr/bin/python3
"""Writes bench/ZOO.md and bench/zoo.png from bench/zoo.py's results
(bench/out/zoo/results.json); zoo.py calls it at the end of every run, run it
by hand to redraw:
    /usr/bin/python3 bench/zoo_report.py [--results bench/out/zoo/results.json] [--out bench]
The chart needs python3-matplotlib; without it ZOO.md gets a text chart instead.

ZOO.md: the geometric mean of Tessera / ONNX Runtime per (batch, threads),
interleaved and in separate processes; the cells above 1 first; every cell
(Tessera, ONNX Runtime and torch medians, both ratios, the accuracy against
torch); the models that did not export or run, with the error; and the
profiles of the cells above 1 (Tessera's slowest steps and time per op type,
ONNX Runtime's per node and op type from its own profiler).
"""
import argparse
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOADED = 0.5  # a load average above this before the cells (the harness itself is not running then): "loaded"


def fmt_ms(v):
    if v is None:
        return "—"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def fmt_ratio(r, bold_above=1.0):
    if r is None:
        return "—"
    return f"**{r:.2f}**" if r > bold_above else f"{r:.2f}"


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def median_of(cell, rt, where="interleaved"):
    c = cell.get(where, {}).get(rt, {})
    return c.get("median_ms") if c.get("status") == "ok" else None


def _p10(samples):
    s = sorted(samples)
    h = 0.1 * (len(s) - 1)
    lo = int(h)
    return s[-1] if lo + 1 >= len(s) else s[lo] + (h - lo) * (s[lo + 1] - s[lo])


def p10_ratio(cell, where="interleaved"):
    """Tessera / ORT of the runs' 10th percentiles: what the runs least disturbed by other work show."""
    key = "p10_ratio" if where == "interleaved" else "separate_p10_ratio"
    if cell.get(key):
        return cell[key]
    t, o = (cell.get(where, {}).get(rt, {}) for rt in ("tessera", "ort"))
    if where == "interleaved" and t.get("samples") and o.get("samples") and t.get("status") == o.get("status") == "ok":
        return _p10(t["samples"]) / _p10(o["samples"])
    return None


def accuracy_text(cell):
    t = cell.get("interleaved", {}).get("tessera", {})
    if t.get("status") != "ok":
        return "—"
    a = t.get("accuracy", {})
    if "error" in a:
        return f"FAIL: {a['error']}"
    if "rel" not in a:
        return "—"
    return f"{a['rel']:.1e}" + ("" if a["pass"] else " **FAIL**")


def sort_key(key):
    model, b, t = key.split("|")
    return (int(b[1:]), int(t[1:]), model)


def cell_rows(cells, keys):
    rows = ["| model | family | batch | threads | Tessera ms | ORT ms | torch ms | Tessera / ORT | separate: Tessera ms | "
            "ORT ms | Tessera / ORT | p10 ratio: interleaved, separate | accuracy (rel. to max) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in keys:
        c = cells[k]
        if c.get("status") == "export failed":
            rows.append(f"| {c['model']} | {c['family']} | {c['batch']} | {c['threads']} | export failed (below) "
                        "| | | | | | | | |")
            continue
        flag = " (quick)" if c.get("quick") else ""
        rows.append(" | ".join([
            f"| {c['model']}{flag}", c["family"], str(c["batch"]), str(c["threads"]),
            fmt_ms(median_of(c, "tessera")) if c.get("status") == "ok" else "failed (below)",
            fmt_ms(median_of(c, "ort")), fmt_ms(median_of(c, "torch")), fmt_ratio(c.get("ratio")),
            fmt_ms(median_of(c, "tessera", "separate")), fmt_ms(median_of(c, "ort", "separate")),
            fmt_ratio(c.get("separate_ratio")),
            f"{fmt_ratio(p10_ratio(c), 99)}, {fmt_ratio(p10_ratio(c, 'separate'), 99)}", accuracy_text(c)]) + " |")
    return rows


def failures(cells):
    rows = []
    for k in sorted(cells, key=sort_key):
        c = cells[k]
        errs = []
        if c.get("status") == "export failed":
            errs.append(f"export: {c.get('error')}")
        for rt, rc in c.get("interleaved", {}).items():
            if rc.get("status") != "ok":
                errs.append(f"{rt} {rc.get('status')}: {rc.get('reason')}")
            elif "error" in rc.get("accuracy", {}):
                errs.append(f"{rt} output: {rc['accuracy']['error']}")
        for rt, rc in c.get("separate", {}).items():
            if rc.get("status") != "ok":
                errs.append(f"{rt} (separate process) {rc.get('status')}: {rc.get('reason')}")
        for e in errs:
            rows.append(f"| {c['model']} | {c['batch']} | {c['threads']} | {e.replace('|', '/')[:600]} |")
    return rows


def profile_section(cells):
    out = []
    keys = [k for k in cells if cells[k].get("profile")]
    keys.sort(key=lambda k: -(max(cells[k].get("ratio") or 0, cells[k].get("separate_ratio") or 0)))
    for k in keys:
        c = cells[k]
        out.append(f"### {c['model']}, batch {c['batch']}, {c['threads']} threads "
                   f"(Tessera / ORT {fmt_ratio(c.get('ratio'), 99)} interleaved, "
                   f"{fmt_ratio(c.get('separate_ratio'), 99)} separate)\n")
        tp = c["profile"].get("tessera", {})
        if "error" in tp:
            out.append(f"Tessera's profile failed: {tp['error']}\n")
        elif tp:
            out.append(f"Tessera (`tessera bench --profile 15`, medians per step, sum {fmt_ms(tp.get('sum_ms'))} ms), "
                       "time per op type:\n")
            out += ["| op | steps | ms | % | GFLOP/s |", "|---|---|---|---|---|"]
            out += [f"| {op} | {n} | {ms:.3f} | {pct:.1f} | {gf} |" for op, n, ms, pct, gf in tp.get("ops", [])[:8]]
            out.append("\nslowest steps:\n")
            out += ["| step | node | op | ms | GFLOP/s |", "|---|---|---|---|---|"]
            out += [f"| {i} | `{node}` | {op} | {ms:.3f} | {gf} |" for i, node, op, ms, gf in tp.get("steps", [])[:10]]
            out.append("")
        op = c["profile"].get("ort", {})
        if "error" in op:
            out.append(f"ONNX Runtime's profile failed: {op['error']}\n")
        elif op:
            out.append(f"ONNX Runtime (its profiler, `enableProfiling`; each node's median ms, sum {fmt_ms(op.get('sum_ms'))} ms), "
                       "time per op type:\n")
            out += ["| op | nodes | ms | % |", "|---|---|---|---|"]
            out += [f"| {o} | {n} | {ms:.3f} | {pct:.1f} |" for o, n, ms, pct in op.get("ops", [])[:8]]
            out.append("\nslowest nodes:\n")
            out += ["| node | op | ms |", "|---|---|---|"]
            out += [f"| `{node}` | {o} | {ms:.3f} |" for node, o, ms in op.get("steps", [])[:10]]
            out.append("")
    return out


def text_chart(cells, keys, width=40):
    lines = ["```", "Tessera / ONNX Runtime, interleaved (| marks 1.0; # up to the ratio, capped at 2.0)"]
    for k in keys:
        r = cells[k].get("ratio")
        if r is None:
            continue
        n = int(min(r, 2.0) / 2.0 * width + 0.5)
        bar = "".join("|" if i == width // 2 else "#" if i < n else " " for i in range(width))
        lines.append(f"{k:44s} {bar} {r:.2f}")
    lines.append("```")
    return lines


def chart(cells, groups, path):
    """One panel per (batch, threads): each model's ratio, interleaved and separate. False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = {g: ks for g, ks in groups.items() if any(cells[k].get("ratio") for k in ks)}
    return bool(groups) and _draw(plt, cells, groups, path)


def _draw(plt, cells, groups, path):
    n = max(len(v) for v in groups.values())
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 0.22 * n + 1.5), squeeze=False)
    for ax, (g, keys) in zip(axes[0], groups.items()):
        keys = sorted((k for k in keys if cells[k].get("ratio")), key=lambda k: cells[k]["ratio"])
        y = range(len(keys))
        ax.barh([i + 0.2 for i in y], [cells[k]["ratio"] for k in keys], height=0.4, color="#d62728",
                label="interleaved")
        ax.barh([i - 0.2 for i in y], [cells[k].get("separate_ratio") or 0 for k in keys], height=0.4,
                color="#1f77b4", label="separate processes")
        ax.set_yticks(list(y))
        ax.set_yticklabels([cells[k]["model"] for k in keys], fontsize=7)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_title(f"batch {g[0]}, {g[1]} thread{'s' if g[1] > 1 else ''}", fontsize=9)
        ax.set_xlabel("Tessera / ONNX Runtime (< 1: Tessera faster)", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=7, ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def markdown(results, png_name=None, results_path=None):
    cells = results.get("cells", {})
    keys = sorted(cells, key=sort_key)
    groups = {}
    for k in keys:
        groups.setdefault((cells[k]["batch"], cells[k]["threads"]), []).append(k)
    loads = [c["loadavg_before"][0] for c in cells.values() if c.get("loadavg_before")]
    med_load = statistics.median(loads) if loads else 0
    quick = any(c.get("quick") for c in cells.values())
    m, v = results.get("machine", {}), results.get("versions", {})
    out = ["# The torchvision zoo: Tessera beside ONNX Runtime (issue 23)", ""]
    if med_load > LOADED or quick:
        out += [f"> **Not a clean measurement.** " + (
            f"Taken on a loaded machine (1-minute load average before the cells: median {med_load:.2f}, "
            f"range {min(loads):.2f}-{max(loads):.2f}, on {m.get('cores', '?')} cores; other work ran beside it). "
            if med_load > LOADED else "") + ("Some cells are --quick runs (3 timed runs). " if quick else "") +
            "Regenerate on a quiet machine with the command below.", ""]
    out += ["Regenerate (all models, batch 1 and 8, 1 and 2 threads; resumable, per-cell results in "
            "`bench/out/zoo/results.json`):", "", "```", "/usr/bin/python3 bench/zoo.py", "```", "",
            "The runs that made these results: " + "; ".join(f"`{c}`" for c in results.get(
                "commands", [results.get("last_command", "?")])) + ". Redraw this file and the chart from the results "
            "alone: `/usr/bin/python3 bench/zoo_report.py`.", "",
            f"Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('isa', '?')}, "
            f"{m.get('memory_gib', '?')} GiB. Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".", "",
            "How: models and exports in `bench/zoo_models.py` (seeded random weights, opset 13, sizes there). Each "
            "cell is timed twice: *interleaved* by bench/perf_harness.py's workers (`tessera serve`, "
            "bench/ort_worker.js, torch eager in bench/perf_worker.py; loaded one after another, warmed up, then "
            "rounds in a seeded shuffled order with a settle wait before each run), and in *separate* processes, "
            "each runtime alone as a user's script would time it (`tessera bench`, bench/ort_bench.js: load, "
            "warm up, time back to back). Medians of each cell's runs (the number is in results.json). "
            "*Tessera / ORT* below 1: Tessera is faster. *Accuracy*: the largest max|Tessera - torch| / "
            f"max|torch| over the model's outputs; a cell passes at <= {results.get('tolerance', 1e-4):g}.", ""]
    # summary
    out += ["## Geometric mean of Tessera / ONNX Runtime", "",
            "Medians' ratios, and (p10) the ratios of each runtime's 10th-percentile run, which the "
            "machine's other work disturbs least.", "",
            "| batch | threads | cells | interleaved | separate | interleaved (p10) | separate (p10) | "
            "cells above 1 (interleaved) | above 1.1 | accuracy failures | not run |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (b, t), ks in sorted(groups.items()):
        rs = [cells[k].get("ratio") for k in ks]
        ss = [cells[k].get("separate_ratio") for k in ks]
        acc_fail = sum(1 for k in ks if "FAIL" in accuracy_text(cells[k]))
        not_run = sum(1 for k in ks if cells[k].get("status") != "ok")
        g, gs = geomean(rs), geomean(ss)
        ps = [p10_ratio(cells[k], "separate") for k in ks]
        gp, gsp = geomean([p10_ratio(cells[k]) for k in ks]), geomean(ps)
        n_ps = sum(1 for x in ps if x)
        out.append(f"| {b} | {t} | {len(ks)} | {fmt_ratio(g, 99)} | {fmt_ratio(gs, 99)} | {fmt_ratio(gp, 99)} | "
                   f"{fmt_ratio(gsp, 99)}{f' ({n_ps} cells)' if n_ps < sum(1 for x in ss if x) else ''} | "
                   f"{sum(1 for r in rs if r and r > 1)} | {sum(1 for r in rs if r and r > 1.1)} | {acc_fail} | "
                   f"{not_run} |")
    out.append("")
    above = [k for k in keys if (cells[k].get("ratio") or 0) > 1 or (cells[k].get("separate_ratio") or 0) > 1]
    above.sort(key=lambda k: -max(cells[k].get("ratio") or 0, cells[k].get("separate_ratio") or 0))
    out += [f"## Cells above 1 ({len(above)}: Tessera slower in either measurement), the worst first", ""]
    out += cell_rows(cells, above) if above else ["None."]
    out += ["", "## Every cell", ""] + cell_rows(cells, keys) + [""]
    if png_name:
        out += [f"![Tessera / ONNX Runtime per model]({png_name})", ""]
    else:
        out += text_chart(cells, keys) + [""]
    fails = failures(cells)
    out += ["## Did not export, load or run", ""]
    out += (["| model | batch | threads | error |", "|---|---|---|---|"] + fails) if fails else ["Nothing."]
    out += ["", "## Profiles of the cells above 1", "",
            "Each from a run of its own after the cell's timing (`tessera bench --profile 15`; bench/ort_bench.js "
            "--profile: ONNX Runtime's trace, each node's median over the runs it covers). "
            "The sums differ from the medians above: per-step timing adds a barrier per step, ORT's profiler its "
            "own overhead.", ""]
    prof = profile_section(cells)
    out += prof if prof else ["None.", ""]
    return "\n".join(out) + "\n"


def write(results, out_dir, results_path=None):
    os.makedirs(out_dir, exist_ok=True)
    cells = results.get("cells", {})
    groups = {}
    for k in sorted(cells, key=sort_key):
        groups.setdefault((cells[k]["batch"], cells[k]["threads"]), []).append(k)
    png = os.path.join(out_dir, "zoo.png")
    drawn = chart(cells, groups, png)
    md = os.path.join(out_dir, "ZOO.md")
    with open(md, "w") as f:
        f.write(markdown(results, "zoo.png" if drawn else None, results_path))
    return md, png if drawn else None


def main():
    import json
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(HERE, "out", "zoo", "results.json"))
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    with open(args.results) as f:
        results = json.load(f)
    md, png = write(results, args.out, args.results)
    print(f"wrote {md}" + (f" and {png}" if png else " (no matplotlib: a text chart)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
