#!/usr/bin/env python3
"""The figures of docs/benchmarks.md, from docs/benchmarks/results.json alone:

    python3 docs/benchmarks/plot.py            # writes the PNGs beside this script
    python3 docs/benchmarks/plot.py --tables   # prints the markdown tables of benchmarks.md,
                                               # each after a comment naming its section

  ratio_by_pass.png     kernel time gridjit / tiny-cuda-nn per pass, C1-C4, SoA and AoS outputs
  compile_latency.png   cold compile per pass: 2 cores (previous release, now), 16 cores
  fused_vs_jit.png      fused encoding + MLP against tiny-cuda-nn's JIT fusion
  pytorch_ratios.png    gridjit.torch / tinycudann on tiny-cuda-nn's workloads

results.json comes from the raw benchmark outputs through make_results.py (beside this
script). Needs matplotlib (only for the PNGs); renders headless (Agg).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PASS_NAMES = {
    "forward": "forward",
    "forward_dydx": "forward + dy/dx",
    "backward": "backward params",
    "backward_input": "backward params + dL/dx",
    "step": "training step with dL/dx",
}
SHORT_PASS = {"forward": "fwd", "forward_dydx": "fwd+dy/dx", "backward": "bwd",
              "backward_input": "bwd+dL/dx", "step": "step"}
COLOURS = {"soa": "#1f77b4", "aos": "#ff7f0e", "prev": "#9e9e9e", "ref": "#555555", "extra": "#2ca02c"}


def load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"plot.py: cannot read {path}: {e}")


def stamp(r: dict) -> str:
    m = r["machine"]
    return f"{m['gpu']} ({m['arch']}), {r['date']}"


# ---- figures ---------------------------------------------------------------------------

def bar_labels(ax, bars, fmt: str, size: float = 6.5, rotation: int = 0) -> None:
    for b in bars:
        ax.annotate(fmt.format(b.get_height()), (b.get_x() + b.get_width() / 2, b.get_height()), rotation=rotation,
                    ha="center", va="bottom", fontsize=size, xytext=(0, 1), textcoords="offset points")


def current_kernels(r: dict) -> tuple:
    """The latest kernel figures and their commit: the kernels as they are now where measured,
    else the final kernels where measured."""
    if "current_kernels" in r:
        return r["current_kernels"], r["commits"]["current_measured"]
    if "final_kernels" in r:
        return r["final_kernels"], r["commits"]["final_measured"]
    return r["kernels"], r["commits"]["kernels_measured"]


def plot_ratio_by_pass(r: dict, plt, out: Path) -> None:
    kernels, commit = current_kernels(r)
    names = list(kernels)
    fig, axes = plt.subplots(1, len(names), figsize=(12, 3.6), sharey=True)
    for ax, name in zip(axes, names):
        k = kernels[name]
        xs = range(len(r["passes"]))
        for i, layout in enumerate(("soa", "aos")):
            ratios = [k[layout][p] / k["reference"][p] for p in r["passes"]]
            bars = ax.bar([x + (i - 0.5) * 0.38 for x in xs], ratios, 0.38, color=COLOURS[layout],
                          label="gridjit, feature-major (SoA)" if layout == "soa" else "gridjit, point-major (AoS)")
            bar_labels(ax, bars, "{:.2f}", 7, rotation=90)
        ax.axhline(1.0, color="black", lw=0.8, ls="--", label="tiny-cuda-nn (1.0)")
        ax.set_xticks(list(xs), [SHORT_PASS[p] for p in r["passes"]], rotation=35, ha="right", fontsize=8)
        ax.set_title(name, fontsize=10)
        ax.set_ylim(0, 1.4)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("time / tiny-cuda-nn's (below 1: faster)", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3, frameon=False)
    fig.suptitle(f"gridjit kernels / tiny-cuda-nn's, 2^21 uniform points, fp16 ({stamp(r)}, "
                 f"kernels of {commit})", fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out, dpi=100)


def plot_compile_latency(r: dict, plt, out: Path) -> None:
    keys = ["forward", "forward,backward", "all", "precompile"]
    labels = ["forward", "forward +\nbackward", "all passes", "precompile\n(module programs)"]
    c2, c16 = r["compile_2_cores"], r["compile_16_cores_previous_release"]
    series = [
        (f"2 cores, previous release ({r['commits']['previous_release']})", [c2["previous_release"][k][0] for k in keys],
         COLOURS["prev"]),
        (f"2 cores, {r['commits']['final']}", [c2["final"][k][0] for k in keys], COLOURS["aos"]),
        (f"2 cores, now ({r['commits']['split']})", [c2["split"][k][0] for k in keys], COLOURS["soa"]),
        (f"16 cores (H200 machine), previous release ({c16['commit']})", [c16[k][0] for k in keys], COLOURS["extra"]),
    ]
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    width = 0.2
    for i, (label, values, colour) in enumerate(series):
        bars = ax.bar([x + (i - 1.5) * width for x in range(len(keys))], values, width, label=label, color=colour)
        bar_labels(ax, bars, "{:.2f}", 7)
    ax.set_xticks(range(len(keys)), labels, fontsize=8)
    ax.set_ylabel("cold compile, wall seconds", fontsize=8)
    ax.set_ylim(0, max(max(v) for _, v, _ in series) * 1.25)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("gridjit compile / precompile --no-cache, tiny-cuda-nn's default HashGrid, sm_90 "
                 "(median of 3)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def plot_fused(r: dict, plt, out: Path) -> None:
    f = r["fused"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.4), gridspec_kw={"width_ratios": [3, 2]})
    rows = [("inference", "inference"), ("training_step", "training step"), ("forward_backward", "forward + backward")]
    series = [("reference_jit", "tiny-cuda-nn, JIT-fused", COLOURS["ref"]),
              ("reference_unfused", "tiny-cuda-nn, unfused", COLOURS["prev"]),
              ("fused", "gridjit, fused", COLOURS["soa"]),
              ("unfused_soa", "gridjit, unfused (SoA)", COLOURS["aos"])]
    width = 0.2
    for i, (key, label, colour) in enumerate(series):
        bars = left.bar([x + (i - 1.5) * width for x in range(len(rows))], [f["ms"][row][key] for row, _ in rows],
                        width, label=label, color=colour)
        bar_labels(left, bars, "{:.3f}", 7, rotation=90)
    left.set_xticks(range(len(rows)), [name for _, name in rows], fontsize=8)
    left.set_ylabel("ms, 2^21 points", fontsize=8)
    left.set_ylim(0, 8.5)
    left.legend(fontsize=7, loc="upper left", ncol=2)
    left.grid(axis="y", alpha=0.3)
    left.set_title("time per call", fontsize=9)
    kinds = [("inference", "inference kernel"), ("training", "training kernels")]
    for i, (key, label, colour) in enumerate([("reference_jit", "tiny-cuda-nn, JIT", COLOURS["ref"]),
                                              ("fused", "gridjit, fused", COLOURS["soa"])]):
        bars = right.bar([x + (i - 0.5) * 0.35 for x in range(len(kinds))],
                         [f["cold_compile_s"][k][key] for k, _ in kinds], 0.35, label=label, color=colour)
        bar_labels(right, bars, "{:.2f}", 7)
    right.set_xticks(range(len(kinds)), [name for _, name in kinds], fontsize=8)
    right.set_ylabel("cold compile, s", fontsize=8)
    right.set_ylim(0, 6)
    right.legend(fontsize=7, loc="upper left")
    right.grid(axis="y", alpha=0.3)
    right.set_title("first call, empty caches", fontsize=9)
    fig.suptitle(f"HashGrid C1 + MLP 32-64-64-16 on tensor cores ({r['machine']['gpu']}, gridjit "
                 f"{f['commit']}, {r['commits']['reference']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def pytorch_rows(r: dict) -> list:
    """(label, tinycudann, gridjit, unit, kind) for the PyTorch figure and table; kind "time"
    (lower is faster) or "loss"."""
    t, g = r["pytorch"]["tinycudann"], r["pytorch"]["gridjit"]
    rows = [
        ("eikonal SDF: median step", "eikonal", "median_step_ms", "ms", "time"),
        ("image fit: median step", "image", "median_step_ms", "ms", "time"),
        ("256 points: no-grad forward call", "percall", "forward_no_grad_us", "µs", "time"),
        ("256 points: forward + backward call", "percall", "forward_backward_us", "µs", "time"),
        ("2^21 uniform points: forward", "throughput", "forward_ms", "ms", "time"),
        ("2^21 uniform points: forward + backward", "throughput", "forward_backward_ms", "ms", "time"),
        ("2^21 points along rays: forward", "throughput", "rays_forward_ms", "ms", "time"),
        ("2^21 points along rays: forward + backward", "throughput", "rays_forward_backward_ms", "ms", "time"),
    ]
    # The model (grid + FullyFusedMLP) where measured: gridjit.torch's against tinycudann's
    # default (unfused) path.
    for n in ("2^18", "2^21"):
        for what, key in (("inference", "inference_ms"), ("training step", "train_step_ms")):
            if f"{key}_{n}" in g.get("model", {}) and f"{key}_{n}" in t.get("model", {}):
                rows.append((f"model, {n} points: {what}", "model", f"{key}_{n}", "ms", "time"))
    out = [(label, t[w][k], g[w][k], unit, kind) for label, w, k, unit, kind in rows]
    s = r.get("bwdbwd_script")
    if s:
        out.append(("test_grid_bwdbwd.py: step (1 / tqdm's it/s)", 1e3 / s["tinycudann"]["it_per_s"],
                    1e3 / s["gridjit"]["it_per_s"], "ms", "time"))
    out += [("eikonal SDF: loss at step 1500", t["eikonal"]["final_loss"], g["eikonal"]["final_loss"], "", "loss"),
            ("image fit: loss at step 1000", t["image"]["final_loss"], g["image"]["final_loss"], "", "loss")]
    if s:
        out.append(("test_grid_bwdbwd.py: loss at step 1500", s["tinycudann"]["final_loss"], s["gridjit"]["final_loss"],
                    "", "loss"))
    return out


def plot_pytorch(r: dict, plt, out: Path) -> None:
    rows = [(label, g / t, kind) for label, t, g, _, kind in pytorch_rows(r)][::-1]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colours = [COLOURS["soa"] if kind == "time" else COLOURS["extra"] for _, _, kind in rows]
    bars = ax.barh(range(len(rows)), [v for _, v, _ in rows], color=colours)
    for b, (_, v, _) in zip(bars, rows):
        ax.annotate(f"{v:.2f}", (v, b.get_y() + b.get_height() / 2), va="center", fontsize=7,
                    xytext=(2, 0), textcoords="offset points")
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=8)
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xlim(0, max(1.25, max(v for _, v, _ in rows) + 0.25))
    ax.set_xlabel("gridjit.torch / tinycudann (below 1: faster, or lower loss)", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=COLOURS["soa"], label="time"), Patch(color=COLOURS["extra"], label="final loss")],
              fontsize=7, loc="upper right")
    ax.set_title(f"PyTorch: gridjit.torch against tinycudann ({stamp(r)}, torch {r['machine']['torch']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


# ---- tables ----------------------------------------------------------------------------

def ms(x: float) -> str:
    return f"{x:.3f}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}"


def table(header: list, rows: list) -> str:
    """A markdown table; a header starting with "~" names a left-aligned (text) column."""
    align = ["---" if h.startswith("~") else "---:" for h in header]
    header = [h.lstrip("~") for h in header]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def kernels_table(entries: dict, passes: list, extra: list) -> str:
    """Config x pass: tiny-cuda-nn, gridjit SoA and AoS, their ratios to tiny-cuda-nn, then
    the extra (header, cell(entry, pass)) columns."""
    rows = [[name, PASS_NAMES[p], ms(e["reference"][p]), ms(e["soa"][p]), ms(e["aos"][p]),
             ratio(e["soa"][p], e["reference"][p]), ratio(e["aos"][p], e["reference"][p]),
             *(cell(e, p) for _, cell in extra)] for name, e in entries.items() for p in passes]
    return table(["~config", "~pass", "tiny-cuda-nn", "gridjit SoA", "gridjit AoS", "SoA / tiny-cuda-nn",
                  "AoS / tiny-cuda-nn", *(header for header, _ in extra)], rows)


def tables(r: dict) -> dict:
    """The tables of docs/benchmarks.md by section, as markdown."""
    out = {}
    k, prev, now = r["kernels"], r["commits"]["previous_release"], r["commits"]["kernels_measured"]
    if "final_kernels" in r:
        pre = r["commits"]["presplit"]
        out["1 kernels, C1-C4"] = kernels_table(r["final_kernels"], r["passes"], [
            (f"SoA / {pre}", lambda e, p: ratio(e["soa"][p], e["presplit_soa"][p])),
            (f"AoS / {pre}", lambda e, p: ratio(e["aos"][p], e["presplit_aos"][p]))])
    else:
        out["1 kernels, C1-C4"] = kernels_table(k, r["passes"], [])

    if "current_kernels" in r:
        now_c, before = r["commits"]["current_measured"], r["commits"]["current_before"]
        out[f"1 kernels now ({now_c}), C1-C4"] = kernels_table(r["current_kernels"], r["passes"], [
            ("AoS / SoA", lambda e, p: ratio(e["aos"][p], e["soa"][p])),
            (f"SoA / {before}", lambda e, p: ratio(e["soa"][p], e["before_soa"][p])),
            (f"AoS / {before}", lambda e, p: ratio(e["aos"][p], e["before_aos"][p]))])

    rows = []
    for name, e in k.items():
        for p in ("forward", "backward"):
            rows.append([name, PASS_NAMES[p], ms(e["soa"][p]), ms(e["aos"][p]), ratio(e["aos"][p], e["soa"][p]),
                         ms(e["previous_aos"][p])])
    out["2 AoS and SoA"] = table(["~config", "~pass", "SoA", "AoS", "AoS / SoA", f"previous release ({prev}), AoS"],
                                 rows)

    if "levels_per_thread" in r:
        lpt = r["levels_per_thread"]["C1"]
        rows = [[g, ms(lpt["aos"][g]["forward"]), ms(lpt["aos"][g]["backward"]), ms(lpt["soa"][g]["forward"]),
                 ms(lpt["soa"][g]["backward"])] for g in ("1", "2", "4", "8")]
        out["2 levels per thread, C1"] = table(["~levels per thread", "AoS forward", "AoS backward", "SoA forward",
                                                "SoA backward"], rows)

    if "backward_levels_per_thread" in r:
        rows = []
        for name, e in r["backward_levels_per_thread"].items():
            for inputs in ("uniform", "rays"):
                one, four = e[inputs]["1"], e[inputs]["4"]
                rows.append([name, inputs, ms(one["backward"]), ms(four["backward"]), ratio(four["backward"], one["backward"]),
                             ms(one["backward_input"]), ms(four["backward_input"]),
                             ratio(four["backward_input"], one["backward_input"])])
        out["2 backward levels per thread"] = table(["~config", "~points", "backward, 1", "backward, 4", "4 / 1",
                                                     "with dL/dx, 1", "with dL/dx, 4", "4 / 1"], rows)

    rows = []
    for name, e in k.items():
        for p in ("forward", "backward", "step"):
            rows.append([name, PASS_NAMES[p], ms(e["soa"][p]), ms(e["rays_soa"][p]), ratio(e["rays_soa"][p], e["soa"][p]),
                         ms(e["aos"][p]), ms(e["rays_aos"][p]), ratio(e["rays_aos"][p], e["aos"][p])])
    out["3 rays"] = table(["~config", "~pass", "SoA uniform", "SoA rays", "rays / uniform", "AoS uniform", "AoS rays",
                           "rays / uniform"], rows)

    if "aggregation" in r:
        rows = []
        for name, e in r["aggregation"].items():
            for p in ("backward", "step"):
                rows.append([name, PASS_NAMES[p], ms(e["soa"]["off"][p]), ms(e["soa"]["on"][p]),
                             ratio(e["soa"]["on"][p], e["soa"]["off"][p]), ms(e["aos"]["off"][p]), ms(e["aos"]["on"][p]),
                             ratio(e["aos"]["on"][p], e["aos"]["off"][p])])
        out["3 warp aggregation"] = table(["~config", "~pass (rays)", "SoA, off", "SoA, on", "on / off", "AoS, off",
                                           "AoS, on", "on / off"], rows)

    rows = []
    for name, e in r["spread"].items():
        for p in r["passes"]:
            rows.append([name, PASS_NAMES[p], ms(e["previous_soa"][p]), ms(e["soa"][p]),
                         ratio(e["soa"][p], e["previous_soa"][p]), ms(e["previous_aos"][p]), ms(e["aos"][p]),
                         ratio(e["aos"][p], e["previous_aos"][p])])
    out["4 spread"] = table(["~config", "~pass", f"SoA, {prev}", f"SoA, {now}", "ratio", f"AoS, {prev}", f"AoS, {now}",
                             "ratio"], rows)

    if "pytorch" in r:
        fmt = {"ms": "{:.3f} ms", "µs": "{:.1f} µs", "": "{:.4g}"}
        rows = [[label, fmt[unit].format(t), fmt[unit].format(g), ratio(g, t)]
                for label, t, g, unit, _ in pytorch_rows(r)]
        out["5 pytorch"] = table(["~workload", "tinycudann", "gridjit.torch", "gridjit / tinycudann"], rows)

    if "bwdbwd_script" in r:
        t, g = r["bwdbwd_script"]["tinycudann"], r["bwdbwd_script"]["gridjit"]
        rows = [["it/s (tqdm's last line)", f"{t['it_per_s']:.2f}", f"{g['it_per_s']:.2f}", "–"],
                ["time per step (1 / it/s)", f"{1e3 / t['it_per_s']:.3f} ms", f"{1e3 / g['it_per_s']:.3f} ms",
                 ratio(t["it_per_s"], g["it_per_s"])],
                ["loss at the last step", f"{t['final_loss']:.4g}", f"{g['final_loss']:.4g}",
                 ratio(g["final_loss"], t["final_loss"])],
                ["mean of the last 100 losses printed", f"{t['mean_loss_last_100']:.4g}",
                 f"{g['mean_loss_last_100']:.4g}", ratio(g["mean_loss_last_100"], t["mean_loss_last_100"])]]
        out["5 test_grid_bwdbwd.py"] = table(["~1500 steps", "tinycudann", "gridjit.torch", "gridjit / tinycudann"], rows)

    if "launch_calls" in r:
        c = r["launch_calls"]
        rows = [["host: until the last call returns", f"{c['forward']['host_us']:.2f} µs", f"{c['backward']['host_us']:.2f} µs"],
                ["wall: until the GPU has finished", f"{c['forward']['wall_us']:.2f} µs", f"{c['backward']['wall_us']:.2f} µs"]]
        header = ["~per call", "gj_forward", "gj_backward"]
        if "before" in c:
            b, before = c["before"], r["commits"]["launch_before"]
            for row, key in zip(rows, ("host_us", "wall_us")):
                row += [f"{b['forward'][key]:.2f} µs", f"{b['backward'][key]:.2f} µs"]
            header += [f"gj_forward, {before}", f"gj_backward, {before}"]
        out["6 launch overhead"] = table(header, rows)

    c2, c16 = r["compile_2_cores"], r["compile_16_cores_previous_release"]
    what = [("forward", "`gridjit compile --pass forward`"), ("forward,backward", "`gridjit compile --pass forward,backward`"),
            ("all", "`gridjit compile` (every pass)"), ("precompile", "`gridjit precompile` (the module's programs, on threads)")]

    def secs(pair):
        return f"{pair[0]:.2f} s ({pair[1]:.2f})"
    rows = [[label, secs(c2["split"][key]), secs(c2["final"][key]), secs(c2["previous_release"][key]), secs(c16[key])]
            for key, label in what]
    out["7 compile latency"] = table(["~what", f"2 cores, {r['commits']['split']}", f"2 cores, {r['commits']['final']}",
                                      f"2 cores, {prev}", f"16 cores (H200 machine), {c16['commit']}"], rows)
    m = c2["module_programs_ms"]
    rows = [[f"`{name}`", str(m["7a28696"].get(name, "–")), str(m["split"][name])] for name in m["split"]]
    out["7 module programs"] = table(["~program", "7a28696 (ms)", f"{r['commits']['split']} (ms)"], rows)

    b = r["compile_h200_bench_ms"]
    rows = [[name, ", ".join(map(str, b["previous_release"][name])), ", ".join(map(str, b["kernels_measured"][name]))]
            for name in b["previous_release"]]
    rows.append(["median", str(b["median_ms"]["previous_release"]), str(b["median_ms"]["kernels_measured"])])
    out["7 bench cold compile"] = table(["~config", f"{prev} (ms)", f"{now} (ms)"], rows)

    f = r["fused"]
    names = [("inference", "inference"), ("training_step", "training step (forward, backward, Adam)"),
             ("forward_backward", "forward + backward")]
    rows = [[label, f"{f['ms'][key]['reference_jit']:.3f} ms", f"{f['ms'][key]['reference_unfused']:.3f} ms",
             f"{f['ms'][key]['fused']:.3f} ms", f"{f['ms'][key]['unfused_soa']:.3f} ms",
             ratio(f["ms"][key]["fused"], f["ms"][key]["reference_jit"])] for key, label in names]
    rows += [[f"cold compile, {kind} kernel{'s' if kind == 'training' else ''}",
              f"{f['cold_compile_s'][kind]['reference_jit']:.2f} s", "–", f"{f['cold_compile_s'][kind]['fused']:.2f} s",
              "–", ratio(f["cold_compile_s"][kind]["fused"], f["cold_compile_s"][kind]["reference_jit"])]
             for kind in ("inference", "training")]
    out["8 fused"] = table(["~", "tiny-cuda-nn, JIT-fused", "tiny-cuda-nn, unfused", "gridjit, fused",
                            "gridjit, unfused (SoA features)", "fused / tiny-cuda-nn JIT"], rows)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=HERE / "results.json")
    ap.add_argument("--out-dir", type=Path, default=HERE)
    ap.add_argument("--tables", action="store_true", help="print the markdown tables instead of drawing")
    args = ap.parse_args()
    r = load(args.results)
    if args.tables:
        print("\n\n".join(f"<!-- {name} -->\n{text}" for name, text in tables(r).items()))
        return 0
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot.py: needs matplotlib (pip install matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 8, "savefig.bbox": "tight"})
    for name, draw in (("ratio_by_pass.png", plot_ratio_by_pass), ("compile_latency.png", plot_compile_latency),
                       ("fused_vs_jit.png", plot_fused), ("pytorch_ratios.png", plot_pytorch)):
        draw(r, plt, args.out_dir / name)
        plt.close("all")
        print(f"wrote {args.out_dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
