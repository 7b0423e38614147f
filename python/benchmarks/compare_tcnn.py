#!/usr/bin/env python3
"""gridjit.torch beside tinycudann on tiny-cuda-nn's workloads: runs tcnn_workloads.py once
per package, each in its own process (its own CUDA context, nothing shared), and writes
one JSON with both results and the ratios gridjit / tinycudann (below 1: gridjit faster).

    python3 python/benchmarks/compare_tcnn.py --json tcnn_compare.json
    python3 python/benchmarks/compare_tcnn.py --steps 300 --image-steps 200   # shorter
    python3 python/benchmarks/compare_tcnn.py --workload model,checkpoint --json model.json   # issue 18's
    python3 python/benchmarks/compare_tcnn.py --workload eikonal,percall,throughput --repeat 3

--repeat N runs the two packages N times, alternating (tinycudann, gridjit, tinycudann, ...),
and compares the median of each timing over the runs (a host-bound step such as the eikonal
one moves by a quarter between runs of the same build); the losses and checks that are not
timings are the first run's, and the JSON keeps every run's timings under "repeats".
--budget S starts no round (one run of each package) that the longest round so far says
would end after S seconds; a SIGTERM (`timeout`) stops the running round. Either way the
report covers the complete rounds, and says how many.

The packages must be importable by the running Python (gridjit from the installed package
or PYTHONPATH; tinycudann as built by its bindings/torch/setup.py). When tinycudann cannot
be imported, its entry says why and gridjit's results are still written (exit status 3).

Checks, against issue 15's targets, printed as PASS/FAIL lines:
  checkpoint: tinycudann's state_dicts load into gridjit and give its outputs (fp16 within
  2^-7 with O(1) parameters, tinycudann accumulating in fp16; fp32 within 1e-5)
  eikonal: finite throughout, final loss within 10 % of tinycudann's (the mean over the last
  tenth of the steps: one step's loss moves by a few per cent with its batch), step time <= 0.9x
  percall: no-grad forward and forward + backward <= 0.5x
  throughput: forward <= 0.75x, forward + backward <= 0.6x
and issue 18's, for the model workload (NetworkWithInputEncoding, C1 + FullyFusedMLP 64x2,
against tinycudann's better figure, jit_fusion on or off):
  model: 2^21 points inference <= 0.75x, training step <= 0.65x; 2^18 points training
  step <= 0.75x; tinycudann's Network / NetworkWithInputEncoding checkpoints load into
  gridjit and give its outputs within 2 % of their scale
The ratio checks (loss agreement, speed) are informative: the exit status does not depend
on them. It comes from the runs: 4 when a workload produced a non-finite loss or a
checkpoint output beyond its tolerance; 3 when a package is missing; else a run's own
failure status (2: no GPU; 1: an exception, its traceback printed); 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = ("tinycudann", "gridjit")  # tinycudann first: it writes the checkpoint gridjit reads

#: (workload, key, target ratio) for the speed checks: gridjit / tinycudann <= target.
SPEED_TARGETS = [
    ("eikonal", "median_step_ms", 0.9),
    ("percall", "forward_no_grad_us", 0.5),
    ("percall", "forward_backward_us", 0.5),
    ("throughput", "forward_ms", 0.75),
    ("throughput", "forward_backward_ms", 0.6),
]
#: Issue 18's model targets: (key, target), against tinycudann's better of jit_fusion off / on.
MODEL_TARGETS = [
    ("inference_ms_2^21", 0.75),
    ("train_step_ms_2^21", 0.65),
    ("train_step_ms_2^18", 0.75),
]
RATIO_KEYS = {
    "eikonal": ("median_step_ms", "final_loss", "final_loss_mean"),
    "image": ("median_step_ms", "final_loss", "final_loss_mean"),
    "percall": ("forward_no_grad_us", "forward_backward_us"),
    "throughput": ("forward_ms", "forward_backward_ms", "rays_forward_ms", "rays_forward_backward_ms"),
}


def run_package(package: str, args, directory: Path) -> tuple:
    out = directory / f"{package}.json"
    command = [
        sys.executable, str(HERE / "tcnn_workloads.py"), "--package", package, "--workload", args.workload,
        "--steps", str(args.steps), "--image-steps", str(args.image_steps), "--calls", str(args.calls),
        "--model-iterations", str(args.model_iterations),
        "--seed", str(args.seed), "--json", str(out), "--checkpoint", str(directory / "tcnn_checkpoint.pt"),
    ]
    start = time.perf_counter()
    status = subprocess.run(command).returncode  # its lines go straight to our stdout/stderr
    seconds = time.perf_counter() - start
    if out.is_file():
        result = json.loads(out.read_text())
    else:
        result = {"package": package, "error": f"tcnn_workloads.py exited with {status} and wrote no JSON"}
    result["exit_status"] = status
    result["wall_s"] = seconds
    return result, status


def is_timing(key: str, value) -> bool:
    """A workload's timing: a number whose key says milliseconds or microseconds
    (median_step_ms, forward_no_grad_us, train_step_ms_2^21_jit, ...)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and ("_ms" in key or key.endswith("_us")))


def combine_repeats(runs: list) -> dict:
    """The workloads of several runs of one package as one: every timing that all runs have
    is their median, everything else the first run's; "repeats" lists each timing per run."""
    if not runs:
        return {}
    combined = json.loads(json.dumps(runs[0]))  # a deep copy
    if len(runs) == 1:
        return combined
    repeats = {}
    for workload, first in runs[0].items():
        if not isinstance(first, dict):
            continue
        for key, value in first.items():
            if not is_timing(key, value):
                continue
            values = [run.get(workload, {}).get(key) for run in runs]
            if all(is_timing(key, v) for v in values):
                combined[workload][key] = statistics.median(values)
                repeats.setdefault(workload, {})[key] = values
    combined["repeats"] = repeats
    return combined


def ratios(ours: dict, theirs: dict) -> dict:
    out = {}
    for workload, keys in RATIO_KEYS.items():
        a, b = ours.get(workload), theirs.get(workload)
        if not a or not b:
            continue
        out[workload] = {key: a[key] / b[key] if b.get(key) else None for key in keys if key in a and key in b}
        if "psnr_db" in a and "psnr_db" in b:
            out[workload]["psnr_db_difference"] = a["psnr_db"] - b["psnr_db"]
    a, b = ours.get("model"), theirs.get("model")
    if a and b:
        out["model"] = {}
        for key, _ in MODEL_TARGETS + [("inference_ms_2^18", None)]:
            best = min((b[k] for k in (key, key + "_jit") if b.get(k)), default=None)
            if a.get(key) and best:
                out["model"][key] = a[key] / best
    return out


def best_tinycudann(theirs: dict, key: str):
    model = theirs.get("model", {})
    return min((model[k] for k in (key, key + "_jit") if model.get(k)), default=None)


def checks(ours: dict, theirs: dict, ratio: dict) -> list:
    lines = []
    for workload in ("eikonal", "image"):
        if workload in ours:
            ok = ours[workload].get("finite", False)
            lines.append((ok, f"{workload}: gridjit's loss finite throughout"))
    if "model" in ours:
        lines.append((ours["model"].get("finite", False), "model: gridjit's training losses finite"))
    for case in ours.get("checkpoint", {}).get("cases", []):
        lines.append((case["within_tolerance"], f"checkpoint: a tinycudann {case['config']['otype']} {case['dtype']} "
                                               f"state_dict in gridjit: max output error {case['max_abs_error']:.3g}"))
    for case in ours.get("checkpoint", {}).get("networks", []):
        kind = "NetworkWithInputEncoding" if case["config"].get("encoding") else "Network"
        lines.append((case["within_tolerance"], f"checkpoint: a tinycudann {kind} state_dict in gridjit "
                                               f"({case['n_params']} vs {case['tinycudann_n_params']} parameters): "
                                               f"max output error {case['max_abs_error']:.3g} of outputs up to "
                                               f"{case['max_abs_output']:.3g}; initial network weights equal: "
                                               f"{case['initial_network_weights_equal']} (informative)"))
    eik = ratio.get("eikonal", {})
    if eik.get("final_loss_mean") is not None:
        lines.append((abs(eik["final_loss_mean"] - 1) <= 0.10,
                      f"eikonal: final loss (mean of the last tenth of the steps) "
                      f"{ours['eikonal']['final_loss_mean']:.5g} vs {theirs['eikonal']['final_loss_mean']:.5g} "
                      f"(ratio {eik['final_loss_mean']:.3f}, target within 10 %)"))
    for workload, key, target in SPEED_TARGETS:
        value = ratio.get(workload, {}).get(key)
        if value is not None:
            lines.append((value <= target, f"{workload} {key}: {ours[workload][key]:.4g} vs "
                                           f"{theirs[workload][key]:.4g} = {value:.3f}x (target <= {target}x)"))
    for key, target in MODEL_TARGETS:
        value = ratio.get("model", {}).get(key)
        if value is not None:
            lines.append((value <= target, f"model {key}: {ours['model'][key]:.4g} vs "
                                           f"{best_tinycudann(theirs, key):.4g} = {value:.3f}x (target <= {target}x)"))
    return lines


class _Stopped(Exception):
    """SIGTERM while the packages run: the current round is abandoned."""


def _stop(signum, frame):
    raise _Stopped()


def run_rounds(repeat: int, budget, run_one, clock=time.perf_counter) -> tuple:
    """Up to repeat rounds of run_one(package) -> (result, status) for each package in
    turn; returns ({package: [results of the complete rounds]}, {package: worst status},
    why it stopped early or None). With budget (seconds), no round starts that the longest
    one so far says would end past it. _Stopped (SIGTERM) ends the running round."""
    runs = {package: [] for package in PACKAGES}
    statuses = {}
    start, longest, stopped = clock(), 0.0, None
    try:
        for r in range(repeat):
            if budget is not None and r and clock() - start + longest > budget:
                stopped = f"the budget of {budget:g} s would be passed by round {r + 1}"
                break
            round_start = clock()
            for package in PACKAGES:
                print(f"== {package}" + (f" (run {r + 1} of {repeat})" if repeat > 1 else ""), flush=True)
                result, status = run_one(package)
                runs[package].append(result)
                statuses[package] = max(statuses.get(package, 0), status)
            longest = max(longest, clock() - round_start)
    except _Stopped:
        stopped = "stopped by SIGTERM"
    complete = min(len(results) for results in runs.values())
    return {package: results[:complete] for package, results in runs.items()}, statuses, stopped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="all", help="passed to tcnn_workloads.py (default all)")
    parser.add_argument("--steps", type=int, default=1500, help="eikonal steps (default 1500)")
    parser.add_argument("--image-steps", type=int, default=1000, help="image fit steps (default 1000)")
    parser.add_argument("--calls", type=int, default=2000, help="per-call measurement calls (default 2000)")
    parser.add_argument("--model-iterations", type=int, default=30, help="model workload iterations (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each package, alternating; timings compared as medians (default 1)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds: start no round that would end after them (default: no limit)")
    parser.add_argument("--json", default="tcnn_compare.json", help="output (default tcnn_compare.json)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1 (got {args.repeat})")

    signal.signal(signal.SIGTERM, _stop)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs, statuses, stopped = run_rounds(args.repeat, args.budget, lambda p: run_package(p, args, Path(tmp)))
    rounds = len(runs[PACKAGES[0]])
    if stopped:
        print(f"== {stopped}: the report covers {rounds} complete round(s)", flush=True)
    if not rounds:
        return 1
    for package in PACKAGES:
        results[package] = runs[package][0]
        workloads = [run.get("workloads", {}) for run in runs[package] if "workloads" in run]
        if workloads:
            results[package]["workloads"] = combine_repeats(workloads)
    combined = {"packages": results, "repeat": rounds, "stopped_early": stopped}
    ours = results["gridjit"].get("workloads", {})
    theirs = results["tinycudann"].get("workloads", {})
    ratio = ratios(ours, theirs)
    combined["ratios_gridjit_over_tinycudann"] = ratio
    lines = checks(ours, theirs, ratio) if theirs else [(ours and all(r.get("finite", True) for r in ours.values()),
                                                         "gridjit: losses finite (tinycudann missing: no ratios)")]
    combined["checks"] = [{"pass": bool(ok), "what": what} for ok, what in lines]
    Path(args.json).write_text(json.dumps(combined, indent=1) + "\n")

    print("== ratios gridjit / tinycudann (below 1: gridjit faster or lower)"
          + (f", timings as medians of {rounds} runs" if rounds > 1 else ""))
    for workload, keys in ours.get("repeats", {}).items():
        for key, values in keys.items():
            other = theirs.get("repeats", {}).get(workload, {}).get(key)
            if other:
                print(f"  runs of {workload} {key}: gridjit {', '.join(f'{v:.4g}' for v in values)}; "
                      f"tinycudann {', '.join(f'{v:.4g}' for v in other)}")
    for workload, values in ratio.items():
        print(f"  {workload}: " + ", ".join(f"{k} {v:.3f}" for k, v in values.items() if v is not None))
    for package in PACKAGES:
        if "error" in results[package]:
            print(f"MISSING {package}: {results[package]['error']}")
    for ok, what in lines:
        print(("PASS " if ok else "FAIL ") + what)
    print(f"wrote {args.json}")
    for status in (4, 3):  # a non-finite loss first, then a missing package
        if status in statuses.values():
            return status
    return max(statuses.values())  # 0, or the first failure's status (2: no GPU, 1: an exception)


if __name__ == "__main__":
    sys.exit(main())
