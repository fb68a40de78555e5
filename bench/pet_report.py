#!/usr/bin/python3
"""Writes bench/PET.md from bench/out/pet/results.json (bench/pet_bench.py's
numbers); also parses `tessera ... --dump-pet` output for it.

Usage: /usr/bin/python3 bench/pet_report.py [results.json] [--out bench]
"""
import argparse
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODE_TITLES = {"all": "both", "equivalent": "equivalent only", "partial": "partial only"}
NUM = r"([-+0-9.eE]+|inf|nan)"
HEADER = re.compile(
    rf"PET: (\d+) subprograms searched, (\d+) mutants \((\d+) equivalent, (\d+) partially equivalent, (\d+) different\), "
    rf"(\d+) measured, (\d+) costs from the database, (\d+) applied; {NUM} s( \(budget spent\))? \(generating {NUM} s, "
    rf"verifying {NUM} s, correcting {NUM} s, measuring {NUM} s\)")
SUMMED = re.compile(rf"^  summed cost of the subprograms: {NUM} ms -> {NUM} ms$")
REGION = re.compile(rf"^  (\S.*): original {NUM} ms$")
WHOLE = re.compile(rf"^  whole model with (.+): {NUM} ms -> {NUM} ms \((measured, {NUM} s|from the database)"
                   rf"(?:; ratio {NUM}(?:, upper quartile {NUM})?)?\): (kept|undone)$")
CANDIDATE = re.compile(rf"^    (\*| ) (.+?) \((equivalent|partial, (\d+) boxes corrected)\) {NUM} ms$")
PASS_ALL = re.compile(rf"^  PET in all: {NUM} s")
GAIN = 1.03   # a measured gain: the median per-round speedup at least this, and its 10th percentile above 1
SLOWER = 0.97  # slower: the median per-round speedup below this, or its 90th percentile below 1


def parse_dump(text):
    """The search report of `--dump-pet` (src/pet/search.cpp, SearchReport::to_text) as a dict, or None."""
    rep, region = None, None
    for line in text.replace("\r", "\n").splitlines():
        m = HEADER.search(line)
        if m:
            g = m.groups()
            keys = ["subprograms", "mutants", "equivalent", "partial", "different", "measured", "db_hits", "applied"]
            rep = {k: int(v) for k, v in zip(keys, g[:8])}
            rep.update(seconds=float(g[8]), budget_spent=bool(g[9]), generate_s=float(g[10]), verify_s=float(g[11]),
                       correct_s=float(g[12]), measure_s=float(g[13]), applied_list=[], notes=[])
            continue
        if rep is None:
            continue
        m = SUMMED.match(line)
        if m:
            rep["cost_before_ms"], rep["cost_after_ms"] = float(m.group(1)), float(m.group(2))
            continue
        m = WHOLE.match(line)
        if m:
            rep.setdefault("model_checks", []).append(
                {"choices": m.group(1), "before_ms": float(m.group(2)), "after_ms": float(m.group(3)),
                 "check_s": float(m.group(5)) if m.group(5) else 0.0,
                 "ratio": float(m.group(6)) if m.group(6) else None,
                 "ratio_high": float(m.group(7)) if m.group(7) else None, "kept": m.group(8) == "kept"})
            continue
        m = REGION.match(line)
        if m:
            region = (m.group(1), float(m.group(2)))
            continue
        m = CANDIDATE.match(line)
        if m and m.group(1) == "*" and region:
            rep["applied_list"].append({"subprogram": region[0], "family": m.group(2),
                                        "partial": m.group(3) != "equivalent", "boxes": int(m.group(4) or 0),
                                        "before_ms": region[1], "after_ms": float(m.group(5))})
            continue
        m = PASS_ALL.match(line)
        if m:
            rep["pass_s"] = float(m.group(1))
            continue
        if line.startswith("  note: "):
            rep["notes"].append(line[len("  note: "):])

    return rep


def compare_outputs(d, threads, cells):
    """Adds to each PET cell the largest difference of its output from PET off's, over max |PET off output|."""
    import numpy as np
    base = os.path.join(d, "outputs", f"t{threads}")
    try:
        off = np.load(os.path.join(base, "off", "output_0.npy")).astype(np.float64)
    except (OSError, ValueError):
        return
    for name, cell in cells.items():
        if name in ("off", "ort"):
            continue
        try:
            got = np.load(os.path.join(base, name, "output_0.npy")).astype(np.float64)
        except (OSError, ValueError):
            continue
        if got.shape == off.shape:
            cell["rel_diff_vs_off"] = float(np.abs(got - off).max() / max(float(np.abs(off).max()), 1e-30))


def speedup(cells, name):
    """PET off's latency over `name`'s, round by round (the rounds are interleaved): (median, p10, p90)."""
    a, b = cells.get("off", {}).get("samples", []), cells.get(name, {}).get("samples", [])
    ratios = sorted(x / y for x, y in zip(a, b) if y > 0)
    if not ratios:
        return None
    q = statistics.quantiles(ratios, n=10) if len(ratios) >= 2 else [ratios[0]] * 9
    return statistics.median(ratios), q[0], q[-1]


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def fmt_speedup(s):
    return "–" if s is None else f"{s[0]:.2f}x [{s[1]:.2f}, {s[2]:.2f}]"


def verdict(s, applied=True):
    """`applied` False: PET changed nothing, so both sides run the same plan and a "gain" is noise, not PET's."""
    if s is None:
        return "not measured"
    if s[0] < SLOWER or s[2] < 1:
        return "slower"
    return "gain" if applied and s[0] >= GAIN and s[1] > 1 else "same"


def rows(results):
    for key, e in results["entries"].items():
        model, batch = key.rsplit("@", 1)
        yield model, int(batch), e


def markdown(results):
    t = results["threads"][-1]
    o = ["# PET: partially equivalent transformations on CPUs (issue 19)", ""]
    o.append(f"Regenerated by `{results['command']}` on {results['date'][:16].replace('T', ' ')}"
             f" (took {results.get('total_seconds', '?')} s).")
    if results.get("quick"):
        o += ["", "**Smoke test (--quick): too few runs, not a valid result.**"]
    m, v = results["machine"], results["versions"]
    o += ["", f"- Machine: {m['cpu']}, {m['cores']} cores ({m['isa']}), {m['memory_gib']} GiB.",
          f"- Tessera: {v['tessera']}. ONNX Runtime: {v['onnxruntime']}.",
          f"- Every search cold (an empty PET database), budget {fmt(results['budget'])} s (`--pet-budget`), "
          f"its candidates measured at {t} threads. Timing: {results['runs']} interleaved rounds at {t} threads "
          "(bench/perf_harness.py's workers: each runtime a process of its own, order shuffled (seeded) each round). "
          "*Speedup* = PET off's latency / PET on's, round by round: median [10th, 90th percentile].",
          "- *PET on* is `--pet` as shipped (fully and partially equivalent mutants); the ablation restricts the "
          "search to one kind (`--pet-mutants equivalent|partial`). Errors are max |output - torch's| / max |torch "
          "output| (torch is the independent reference); *vs off* compares PET on's output with PET off's.", ""]
    o += ["## End to end", "",
          "| model | batch | PET off ms | PET on ms | speedup | ONNX Runtime ms | PET on / ORT | error off | error on "
          "| vs off | search s | PET on 2nd compile s | applied |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = {}
    for model, batch, e in rows(results):
        cells = e["timing"].get(str(t), {})
        s = e["search"].get("all", {})
        rep = s.get("report", {})
        on, off, ort = (cells.get(k, {}).get("median_ms") for k in ("all", "off", "ort"))
        sp = speedup(cells, "all")
        fams = {}
        for a in rep.get("applied_list", []):
            fams[a["family"]] = fams.get(a["family"], 0) + 1
        applied = ", ".join(f"{f} x{n}" for f, n in sorted(fams.items())) or "none"
        checks = rep.get("model_checks", [])
        if checks and not any(c["kept"] for c in checks):
            applied = "none: " + "; ".join(f"{c['choices']} undone by the whole-model check "
                                           f"({fmt(c['before_ms'])} -> {fmt(c['after_ms'])} ms)" for c in checks)
        if s.get("status") == "failed":
            applied = f"search failed: {s.get('reason')}"
        changed = bool(fams) and not (checks and not any(c["kept"] for c in checks))
        verdicts[(model, batch)] = (verdict(sp, changed), sp)
        o.append(f"| {results['titles'].get(model, model)} | {batch} | {fmt(off)} | {fmt(on)} | {fmt_speedup(sp)} "
                 f"| {fmt(ort)} | {fmt(on / ort if on and ort else None)} "
                 f"| {fmt(cells.get('off', {}).get('rel_diff'), 2)} | {fmt(cells.get('all', {}).get('rel_diff'), 2)} "
                 f"| {fmt(cells.get('all', {}).get('rel_diff_vs_off'), 2)} | {fmt(rep.get('seconds'))}"
                 f"{' (budget spent)' if rep.get('budget_spent') else ''} | {fmt(s.get('second_pet_s'))} | {applied} |")
    o += ["", "## What the issue asks, as measured", ""]
    slower = [f"{m} b{b} ({fmt_speedup(sp)})" for (m, b), (v, sp) in verdicts.items() if v == "slower"]
    gains = sorted({m for (m, b), (v, sp) in verdicts.items() if v == "gain" and not m.startswith("csrnet")})
    csr = verdicts.get(("csrnet", 1))
    worst_err = max((e["timing"].get(str(t), {}).get("all", {}).get("rel_diff", 0) or 0 for _, _, e in rows(results)),
                    default=0)
    o.append(f"- No model slower with PET on (median speedup below {SLOWER} or 90th percentile below 1): "
             + ("yes" if not slower else "**no**: " + ", ".join(slower)) + ".")
    o.append(f"- CSRNet at batch 1 at least 1.3x: {fmt_speedup(csr[1]) if csr else 'not measured'}.")
    o.append(f"- A measured gain (median at least {GAIN}, 10th percentile above 1, PET's choices kept) on models other than CSRNet: "
             + (", ".join(results["titles"].get(m, m) for m in gains) or "none") + ".")
    o.append(f"- Largest error of PET on against torch: {fmt(worst_err, 2)} (wanted within 1e-4).")
    reps = [e["search"].get("all", {}).get("report", {}) for _, _, e in rows(results)]
    o.append("- Longest cold search: " + fmt(max((r.get("seconds", 0) for r in reps), default=0))
             + " s; the longest of PET's whole times, whole-model checks included: "
             + fmt(max((r.get("pass_s", r.get("seconds", 0)) for r in reps), default=0)) + " s (wanted at most 60).")
    seconds = [e["search"].get("all", {}).get("second_pet_s") for _, _, e in rows(results)]
    seconds = [x for x in seconds if x is not None]
    o.append("- A second compile of the same model (its PET database warm): at most "
             + (fmt(max(seconds)) + " s in PET" if seconds else "not measured") + " (wanted under 1).")
    o += ["", "## Ablation: fully equivalent mutants only, partially equivalent only, both", ""]
    if results.get("ablation_batches"):
        o += [f"At batch {', '.join(map(str, results['ablation_batches']))} (`--ablation-batches`); other batches "
              "search and time PET as shipped only.", ""]
    o += [
          "| model | batch | " + " | ".join(f"speedup, {MODE_TITLES[k]}" for k in MODE_TITLES)
          + " | " + " | ".join(f"search s, {MODE_TITLES[k]}" for k in MODE_TITLES) + " |",
          "|---|---|" + "---|" * (2 * len(MODE_TITLES))]
    for model, batch, e in rows(results):
        if len(e["search"]) < len(MODE_TITLES):
            continue  # a batch without the ablation (--ablation-batches)
        cells = e["timing"].get(str(t), {})
        o.append(f"| {results['titles'].get(model, model)} | {batch} | "
                 + " | ".join(fmt_speedup(speedup(cells, k)) for k in MODE_TITLES) + " | "
                 + " | ".join(fmt(e["search"].get(k, {}).get("report", {}).get("seconds")) for k in MODE_TITLES) + " |")
    o += ["", "## Mutations applied (PET on), by subprogram", "",
          "| model | batch | subprogram | family | kind | boxes corrected | measured ms before | after |",
          "|---|---|---|---|---|---|---|---|"]
    for model, batch, e in rows(results):
        for a in e["search"].get("all", {}).get("report", {}).get("applied_list", []):
            o.append(f"| {results['titles'].get(model, model)} | {batch} | {a['subprogram']} | {a['family']} "
                     f"| {'partial' if a['partial'] else 'equivalent'} | {a['boxes']} | {fmt(a['before_ms'])} "
                     f"| {fmt(a['after_ms'])} |")
    o += ["", "## The search (PET on, cold)", "",
          "| model | batch | subprograms | mutants | equivalent | partial | different | measured | applied "
          "| generating s | verifying s | correcting s | measuring s | total s | compile s | summed cost ms before -> after "
          "| whole model ms before -> after |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for model, batch, e in rows(results):
        s = e["search"].get("all", {})
        r = s.get("report")
        if not r:
            o.append(f"| {results['titles'].get(model, model)} | {batch} | {s.get('reason', 'no report')} |"
                     + " |" * 15)
            continue
        cost = (f"{fmt(r['cost_before_ms'])} -> {fmt(r['cost_after_ms'])}" if "cost_before_ms" in r else "–")
        whole = "; ".join(f"{c['choices']}: {fmt(c['before_ms'])} -> {fmt(c['after_ms'])}, "
                          f"{'kept' if c['kept'] else 'undone'} ({fmt(c['check_s'])} s)"
                          for c in r.get("model_checks", [])) or "–"
        o.append(f"| {results['titles'].get(model, model)} | {batch} | {r['subprograms']} | {r['mutants']} "
                 f"| {r['equivalent']} | {r['partial']} | {r['different']} | {r['measured']} | {r['applied']} "
                 f"| {fmt(r['generate_s'])} | {fmt(r['verify_s'])} | {fmt(r['correct_s'])} | {fmt(r['measure_s'])} "
                 f"| {fmt(r['seconds'])}{' (budget spent)' if r['budget_spent'] else ''} | {fmt(s.get('wall_s'))} "
                 f"| {cost} | {whole} |")
    ver = results.get("verifier", {})
    o += ["", "## Verifier: corrupted mutants against brute force", "",
          f"`{ver.get('command', '?')}` (exit {ver.get('exit', '?')}, {fmt(ver.get('wall_s'))} s):", "", "```",
          ver.get("text", "") or ver.get("stderr", ""), "```", ""]
    return "\n".join(o)


def write(results, out_dir):
    path = os.path.join(out_dir, "PET.md")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(markdown(results))
    return path


def main():
    import json
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?", default=os.path.join(HERE, "out", "pet", "results.json"))
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    with open(args.results) as f:
        results = json.load(f)
    print(write(results, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
