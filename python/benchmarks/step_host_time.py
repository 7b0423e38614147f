#!/usr/bin/env python3
"""Where a PyTorch training step of a grid + fully fused MLP model waits on the host.

    PYTHONPATH=/path/to/gridjit-package python3 python/benchmarks/step_host_time.py \
        [--package gridjit|tinycudann] [--log2-points 18] [--json out.json] [--profile N]

The model and step of compare_tcnn.py's "model" workload: NetworkWithInputEncoding(3, 16,
tiny-cuda-nn's default HashGrid, FullyFusedMLP 64 x 2), an L2 loss on float outputs,
zero_grad, backward, torch.optim.Adam. compare_tcnn.py times each step between two CUDA
events and synchronises after it, so a step starts on an idle GPU and every microsecond
the host spends before a kernel is queued is GPU time lost; at 2^18 points that is a
visible share of the step. This script measures, for the package given:

- synced: the median step between two events with a synchronisation after each step (what
  compare_tcnn.py reports);
- pipelined: the mean step over --iterations steps queued back to back, one
  synchronisation at the end (the GPU's own time a step where the host keeps ahead of it,
  the host's where it does not);
- host: the median host time (perf_counter) of each phase of a step: the forward call, the
  loss, zero_grad, backward, the optimizer step, with the GPU kept busy (no
  synchronisation inside the measured steps), and of the whole step;
- with --profile N: cProfile's 25 most expensive functions (cumulative) over N steps;
- with --kernels N: torch.profiler's kernels over N synchronised steps, each with its
  count and GPU time a step (what the step's GPU time is made of).

synced - pipelined is what host latency costs a synchronised step. Prints a table, then
one JSON object (or writes it to --json).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tcnn_workloads import DEFAULT_HASHGRID, MODEL_NETWORK, event_median_ms, import_package  # noqa: E402

PHASES = ("forward", "loss", "zero_grad", "backward", "optimizer")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", choices=("gridjit", "tinycudann"), default="gridjit")
    parser.add_argument("--log2-points", type=int, default=18)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--profile", type=int, default=0, help="cProfile over this many steps (0: off)")
    parser.add_argument("--kernels", type=int, default=0,
                        help="torch.profiler's kernels over this many steps (0: off)")
    parser.add_argument("--json", help="write the JSON object here instead of stdout")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("step_host_time.py: needs a CUDA device", file=sys.stderr)
        return 2
    tcnn, _ = import_package(args.package)
    torch.manual_seed(1)
    n = 1 << args.log2_points
    model = tcnn.NetworkWithInputEncoding(3, 16, DEFAULT_HASHGRID, MODEL_NETWORK).cuda()
    optimizer = torch.optim.Adam(model.parameters(), 1e-2)
    x = torch.rand(n, 3, device="cuda")
    target = torch.rand(n, 16, device="cuda")

    def step(marks=None):
        t0 = time.perf_counter()
        y = model(x)
        t1 = time.perf_counter()
        loss = (y.float() - target).square().mean()
        t2 = time.perf_counter()
        optimizer.zero_grad()
        t3 = time.perf_counter()
        loss.backward()
        t4 = time.perf_counter()
        optimizer.step()
        t5 = time.perf_counter()
        if marks is not None:
            for name, a, b in zip(PHASES, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5)):
                marks[name].append((b - a) * 1e6)
            marks["step"].append((t5 - t0) * 1e6)
        return loss

    # compare_tcnn.py's timing (its settle() waits for gridjit's programs compiled behind the
    # first steps, so that the fused kernels are timed).
    synced_ms = event_median_ms(step, args.warmup, args.iterations)

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.iterations):
        step()
    end.record()
    end.synchronize()
    pipelined = start.elapsed_time(end) / args.iterations

    # Host times with the GPU kept busy: a sync every 10 steps bounds the queue.
    marks = {name: [] for name in PHASES + ("step",)}
    for i in range(args.iterations):
        step(marks)
        if i % 10 == 9:
            torch.cuda.synchronize()
    torch.cuda.synchronize()

    result = {
        "package": args.package,
        "n_points": n,
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "synced_step_ms": synced_ms,
        "pipelined_step_ms": pipelined,
        "host_us": {name: statistics.median(v) for name, v in marks.items()},
    }
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.profile):
            step()
        torch.cuda.synchronize()
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
        result["profile"] = text.getvalue()

    if args.kernels:
        try:
            result["kernels_total_us"], result["kernels"] = kernel_times(step, args.kernels)
        except Exception as error:  # a profiler that cannot run here leaves the timings standing
            result["kernels_error"] = f"{type(error).__name__}: {error}"

    print(f"{args.package} at 2^{args.log2_points} points on {result['device']}: step synced "
          f"{result['synced_step_ms']:.3f} ms, pipelined {pipelined:.3f} ms")
    print("  host, median us: " + ", ".join(f"{k} {v:.1f}" for k, v in result["host_us"].items()))
    if args.profile:
        print(result["profile"])
    if "kernels" in result:
        print(f"  kernels and copies: {result['kernels_total_us']:.1f} us a step")
        for name, count, us in result["kernels"]:
            print(f"  kernel {us:9.1f} us/step  x{count:<4} {name[:110]}")
    if "kernels_error" in result:
        print(f"  kernels: not profiled ({result['kernels_error']})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    else:
        print(json.dumps({k: v for k, v in result.items() if k != "profile"}))
    return 0


def kernel_times(step, steps: int) -> tuple:
    """(GPU us a step of every kernel and copy, [(kernel name, launches a step, GPU us a
    step)] of the 30 costliest), over steps synchronised steps under torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
            torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        us = getattr(event, "self_device_time_total", None)
        if us is None:
            us = getattr(event, "self_cuda_time_total", 0.0)
        if us > 0:
            rows.append((event.key, round(event.count / steps, 2), us / steps))
    rows.sort(key=lambda row: -row[2])
    return sum(row[2] for row in rows), rows[:30]


if __name__ == "__main__":
    sys.exit(main())
