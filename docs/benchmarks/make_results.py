#!/usr/bin/env python3
"""Builds docs/benchmarks/results.json, the one file that docs/benchmarks.md's tables and
plot.py's figures come from, out of the raw outputs of one GPU session:

  --bench FILE     JSON lines: one `gridjit bench --json` or `bench_tcnn --json` object per
                   line, each with a "label" added by the runner (docs/benchmarks.md,
                   "Reproducing"): tcnn/CX/rN (the reference, round N), new/CX/LAYOUT/rN
                   (gridjit, round N), old/CX/LAYOUT (the previous release), rays/CX/LAYOUT
                   (--input rays), new|old/SX/LAYOUT (the spread), with LAYOUT soa or aos
  --sweeps FILE    optional JSON lines of the same kind: new/CX/LAYOUT/lptG (--levels-per-
                   thread G) and new/CX/LAYOUT/auto; rays/CX/LAYOUT/agg0
                   (GRIDJIT_AGGREGATE_MIN=0) and rays/CX/LAYOUT/auto
  --pytorch FILE   optional: python/benchmarks/compare_tcnn.py --json's output
  --script-logs TINYCUDANN_LOG GRIDJIT_LOG
                   optional: the tqdm output of tiny-cuda-nn's scripts/test_grid_bwdbwd.py
                   run with each package
  --calls FILE     optional: `gridjit bench --json --calls C` of a tiny batch
  --calls-before FILE
                   optional: the same with the build before the hot-path change
  --current FILE   optional: JSON lines of the kernels as they are now, measured in a later
                   session than --final: tcnn/CX/rN, new/CX/LAYOUT/rN, old/CX/LAYOUT/rN (the
                   build before that session's changes), rays/CX/LAYOUT; the ratio figure
                   draws these where present (docs/benchmarks/raw/ keeps such files)
  --final FILE     optional: JSON lines of the final kernels, measured in a later session
                   than --bench: tcnn/CX/rN, new/CX/LAYOUT/rN, pre/CX/LAYOUT/rN (the build
                   before the kernel split), rays/CX/soa, and the backward's levels per
                   thread: lpt/CX/soa/G and lptrays/CX/soa/G (--input rays)

Several rounds of one label (r1, r2, ...) give their median. Times are in ms unless a
key says otherwise. The sections named in HAND_ENTERED (figures measured with
/usr/bin/time, taken from an earlier session, or read from test logs) are not in any
raw file: they are kept as they are in the existing --out file.

    python3 docs/benchmarks/make_results.py --bench bench.jsonl --sweeps sweeps.jsonl \\
        --pytorch tcnn_compare.json --script-logs script_tcnn.log script_gridjit.log --calls calls.json

(docs/benchmarks.md, "Reproducing", has the commands that write these files.)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PASSES = ("forward", "forward_dydx", "backward", "backward_input", "step")
HAND_ENTERED = (
    "machine",
    "date",
    "commits",
    "compile_2_cores",
    "compile_16_cores_previous_release",
    "launch_fake_driver",
    "fused",
    "device_functions",
    "checks",
)


def read_lines(path: Path) -> dict:
    """label -> list of objects (several where a label repeats)."""
    rows: dict = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"{path}:{number}: not JSON: {e}")
        if "label" not in row:
            sys.exit(f"{path}:{number}: no \"label\" (see the docstring)")
        rows.setdefault(row["label"], []).append(row)
    return rows


def pass_times(row: dict) -> dict:
    """{pass: ms} of a gridjit bench or bench_tcnn object."""
    if "passes" in row:  # gridjit bench
        return {p: row["passes"][p]["median_ms"] for p in PASSES if p in row["passes"]}
    return {p: row[p] for p in PASSES if p in row}  # bench_tcnn


def median_of(rows: list) -> dict:
    times = [pass_times(r) for r in rows]
    return {p: round(statistics.median(t[p] for t in times), 4) for p in PASSES if all(p in t for t in times)}


def group(rows: dict, pattern: str) -> dict:
    """Rows whose label matches pattern (groups: name, variant), merged over rounds."""
    out: dict = {}
    for label, objs in rows.items():
        m = re.fullmatch(pattern, label)
        if m:
            out.setdefault(m.group("name"), {}).setdefault(m.group("variant"), []).extend(objs)
    return out


def configs(rows: dict) -> dict:
    out = {}
    for label, objs in rows.items():
        m = re.fullmatch(r"(new|old)/(?P<name>[CS]\d+)/(soa|aos)(/r\d+)?", label)
        if m and m.group("name") not in out:
            row = objs[0]
            out[m.group("name")] = {"dims": row["n_dims"], "points": row["n_points"], "config": row["config"]}
    return dict(sorted(out.items()))


def kernel_table(rows: dict, kinds: list) -> dict:
    """config -> {"reference": ..., "rounds": N, PREFIX + layout: ...} from the rows whose
    labels match kinds' patterns: (prefix, pattern), "reference" for bench_tcnn's."""
    out: dict = {}
    for prefix, pattern in kinds:
        for name, variants in group(rows, pattern).items():
            entry = out.setdefault(name, {})
            if prefix == "reference":
                entry["reference"] = median_of([r for objs in variants.values() for r in objs])
                entry["rounds"] = len(variants)
            else:
                for layout, objs in variants.items():
                    entry[prefix + layout] = median_of(objs)
    return dict(sorted(out.items()))


REFERENCE = ("reference", r"tcnn/(?P<name>C\d+)/(?P<variant>r\d+)")
NEW = ("", r"new/(?P<name>C\d+)/(?P<variant>soa|aos)(/r\d+)?")
RAYS = ("rays_", r"rays/(?P<name>C\d+)/(?P<variant>soa|aos)")


def kernels(rows: dict) -> dict:
    return kernel_table(rows, [REFERENCE, NEW, ("previous_", r"old/(?P<name>C\d+)/(?P<variant>soa|aos)"), RAYS])


def spread(rows: dict) -> dict:
    out: dict = {}
    for prefix, tag in (("previous_", "old"), ("", "new")):
        for name, variants in group(rows, tag + r"/(?P<name>S\d+)/(?P<variant>soa|aos)").items():
            for layout, objs in variants.items():
                out.setdefault(name, {})[prefix + layout] = median_of(objs)
    return dict(sorted(out.items()))


def bench_compile(rows: dict) -> dict:
    """bench's cold compile (ms) per configuration: every row of each build."""
    out: dict = {"previous_release": {}, "kernels_measured": {}}
    for label, objs in sorted(rows.items()):
        m = re.fullmatch(r"(?P<build>new|old)/(?P<name>C\d+)/(soa|aos)(/r\d+)?", label)
        if m:
            key = "previous_release" if m.group("build") == "old" else "kernels_measured"
            out[key].setdefault(m.group("name"), []).extend(round(o["compile_ms"]) for o in objs)
    for build in out.values():
        for name in build:
            build[name].sort()
    out["median_ms"] = {k: round(statistics.median(v for vs in out[k].values() for v in vs))
                        for k in ("previous_release", "kernels_measured")}
    return out


def final_kernels(rows: dict) -> dict:
    """The final kernels beside the reference and the build before the split, per config."""
    return kernel_table(rows, [REFERENCE, NEW, ("presplit_", r"pre/(?P<name>C\d+)/(?P<variant>soa|aos)(/r\d+)?"), RAYS])


def current_kernels(rows: dict) -> dict:
    """The kernels as they are now beside the reference and the build before, per config."""
    return kernel_table(rows, [REFERENCE, NEW, ("before_", r"old/(?P<name>C\d+)/(?P<variant>soa|aos)(/r\d+)?"), RAYS])


def backward_levels(rows: dict) -> dict:
    """The backward passes into feature-major dL/dy by levels per thread: config -> input -> G."""
    out: dict = {}
    for tag, inputs in (("lpt", "uniform"), ("lptrays", "rays")):
        for name, variants in group(rows, tag + r"/(?P<name>[CS]\d+)/soa/(?P<variant>\d+)").items():
            for g, objs in variants.items():
                out.setdefault(name, {}).setdefault(inputs, {})[g] = median_of(objs)
    return dict(sorted(out.items()))


def sweeps(rows: dict) -> tuple:
    lpt: dict = {}
    for name, variants in group(rows, r"new/(?P<name>C\d+)/(?P<variant>(soa|aos)/(lpt\d+|auto))").items():
        for variant, objs in variants.items():
            layout, g = variant.split("/")
            lpt.setdefault(name, {}).setdefault(layout, {})[g.replace("lpt", "")] = median_of(objs)
    agg: dict = {}
    for name, variants in group(rows, r"rays/(?P<name>C\d+)/(?P<variant>(soa|aos)/(agg0|auto))").items():
        for variant, objs in variants.items():
            layout, a = variant.split("/")
            agg.setdefault(name, {}).setdefault(layout, {})["off" if a == "agg0" else "on"] = median_of(objs)
    return dict(sorted(lpt.items())), dict(sorted(agg.items()))


def sig(x, digits: int = 7):
    """x rounded to a few significant digits (numbers only)."""
    return float(f"{x:.{digits}g}") if isinstance(x, float) else x


def pytorch(path: Path) -> dict:
    data = json.loads(path.read_text())
    keep = {
        "eikonal": ("steps", "batch", "final_loss", "final_loss_mean", "median_step_ms", "first_step_s"),
        "image": ("steps", "batch", "final_loss", "psnr_db", "median_step_ms"),
        "percall": ("batch", "calls", "forward_no_grad_us", "forward_backward_us"),
        "throughput": ("points", "forward_ms", "forward_backward_ms", "rays_forward_ms", "rays_forward_backward_ms"),
        "model": ("inference_ms_2^18", "train_step_ms_2^18", "inference_ms_2^18_jit", "train_step_ms_2^18_jit",
                  "inference_ms_2^21", "train_step_ms_2^21", "inference_ms_2^21_jit", "train_step_ms_2^21_jit"),
    }
    packages = data["packages"]
    out: dict = {"torch": packages["gridjit"].get("torch"), "configs": {}}
    for w in keep:
        if "config" in packages["gridjit"]["workloads"].get(w, {}):
            out["configs"][w] = packages["gridjit"]["workloads"][w]["config"]
    for package in ("tinycudann", "gridjit"):
        work = packages[package]["workloads"]
        out[package] = {w: {k: sig(work[w][k]) for k in keys if k in work[w]} for w, keys in keep.items() if w in work}
    out["ratios"] = {w: {k: sig(v, 3) for k, v in r.items()} for w, r in data["ratios_gridjit_over_tinycudann"].items()}
    out["checkpoint"] = [
        {"otype": c["config"]["otype"], "interpolation": c["config"].get("interpolation", "Linear"),
         "dtype": c["dtype"].replace("torch.", ""), "max_abs_error": sig(c["max_abs_error"], 3),
         "tolerance": sig(c["tolerance"], 3), "within_tolerance": c["within_tolerance"]}
        for c in packages["gridjit"]["workloads"].get("checkpoint", {}).get("cases", [])
    ]
    return out


def script_log(path: Path) -> dict:
    """tqdm's last rate and the losses of one test_grid_bwdbwd.py run."""
    text = path.read_text(encoding="utf-8", errors="replace")
    losses = [float(x) for x in re.findall(r"loss=([0-9.eE+-]+)\]", text)]
    rates = re.findall(r"\|\s*(\d+)/(\d+) \[[^\]]*?([0-9.]+)it/s", text)
    if not losses or not rates:
        sys.exit(f"{path}: no tqdm lines with loss= and it/s")
    step, total, rate = rates[-1]
    tail = losses[-100:]
    return {"steps": int(total), "it_per_s": float(rate), "final_loss": losses[-1],
            "mean_loss_last_100": round(sum(tail) / len(tail), 5), "non_finite": "nan" in text.lower()}


def calls(path: Path) -> dict:
    row = json.loads(path.read_text())
    return {"points": row["n_points"], "n_levels": row["config"]["n_levels"], "calls": row["calls"]["count"],
            "forward": row["calls"]["forward"], "backward": row["calls"]["backward"]}


def dumps(value, indent: int = 0) -> str:
    """JSON with one line per object whose values are all numbers or strings (a row of a table)."""
    flat = not isinstance(value, (dict, list)) or all(not isinstance(v, (dict, list)) for v in
                                                      (value.values() if isinstance(value, dict) else value))
    if flat:
        return json.dumps(value)
    pad = " " * (indent + 1)
    if isinstance(value, list):
        return "[\n" + ",\n".join(pad + dumps(v, indent + 1) for v in value) + "\n" + " " * indent + "]"
    return "{\n" + ",\n".join(f"{pad}{json.dumps(k)}: {dumps(v, indent + 1)}" for k, v in value.items()) + \
        "\n" + " " * indent + "}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=Path, help="required for a new results.json; without it the keys it gives are "
                    "kept from the existing one")
    ap.add_argument("--sweeps", type=Path)
    ap.add_argument("--pytorch", type=Path)
    ap.add_argument("--script-logs", type=Path, nargs=2, metavar=("TINYCUDANN_LOG", "GRIDJIT_LOG"))
    ap.add_argument("--calls", type=Path)
    ap.add_argument("--calls-before", type=Path)
    ap.add_argument("--final", type=Path)
    ap.add_argument("--current", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    args = ap.parse_args()

    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    if not args.bench and not old:
        sys.exit(f"make_results.py: --bench is required: {args.out} does not exist yet")
    rows = read_lines(args.bench) if args.bench else None
    out: dict = {
        "about": "Figures of docs/benchmarks.md and its plots (plot.py). Times in ms unless the key says "
                 "otherwise; medians over rounds. Built by make_results.py from raw files; the keys in "
                 "hand_entered are typed in and kept as they are.",
        "hand_entered": list(HAND_ENTERED),
    }
    for key in HAND_ENTERED:
        if key in old:
            out[key] = old[key]
    out["passes"] = list(PASSES)
    for key, make in (("configs", configs), ("kernels", kernels), ("spread", spread),
                      ("compile_h200_bench_ms", bench_compile)):
        if rows is not None:
            out[key] = make(rows)
        elif key in old:
            out[key] = old[key]
    if args.sweeps:
        out["levels_per_thread"], out["aggregation"] = sweeps(read_lines(args.sweeps))
    else:
        for key in ("levels_per_thread", "aggregation"):
            if key in old:
                out[key] = old[key]
    final = read_lines(args.final) if args.final else None
    for key, value in (("pytorch", args.pytorch and pytorch(args.pytorch)),
                       ("launch_calls", args.calls and calls(args.calls)),
                       ("final_kernels", final and final_kernels(final)),
                       ("current_kernels", args.current and current_kernels(read_lines(args.current))),
                       ("backward_levels_per_thread", final and backward_levels(final))):
        if value:
            out[key] = value
        elif key in old:
            out[key] = old[key]
    if args.calls and args.calls_before:
        out["launch_calls"]["before"] = calls(args.calls_before)
    if args.script_logs:
        out["bwdbwd_script"] = {"tinycudann": script_log(args.script_logs[0]), "gridjit": script_log(args.script_logs[1])}
    elif "bwdbwd_script" in old:
        out["bwdbwd_script"] = old["bwdbwd_script"]
    ordered = {k: out[k] for k in ("about", "hand_entered", *HAND_ENTERED) if k in out}
    ordered.update({k: v for k, v in out.items() if k not in ordered})
    args.out.write_text(dumps(ordered) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
