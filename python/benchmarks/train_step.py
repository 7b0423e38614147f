#!/usr/bin/env python3
"""Training-step time of a hash grid + MLP with gridjit.torch.Encoding against the
plain-PyTorch reference encoding (python/tests/torch_reference.py), and the per-call
overhead of the Python layer at small batches.

    PYTHONPATH=/path/to/gridjit-package python3 python/benchmarks/train_step.py [--json out.json]

Step: forward (encoding, MLP of two hidden layers of 64), MSE loss, backward, Adam step;
CUDA events around each step, median of --iterations after --warmup steps. The
reference runs the same model with the encoding computed by ordinary PyTorch operations
in float32 (gathers per level and corner; the same numbers as gridjit up to rounding).

Overhead: wall time per call of the encoding's forward at batches of 1 and 1024 points,
(a) through gridjit.torch.Encoding (argument checks, autograd function, launch), (b) the
raw launch through gridjit.Module.forward (ctypes only), and (c) a trivial PyTorch op for
scale; (a) - (b) is what the Python layer adds. Prints a table, then one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import gridjit  # noqa: E402
import gridjit.torch as gjt  # noqa: E402
from tcnn_models import DEFAULT_HASHGRID as HASHGRID  # noqa: E402
from torch_reference import Reference  # noqa: E402


class ReferenceEncoding(torch.nn.Module):
    """The reference as a module with the same parameters and output as gridjit's."""

    def __init__(self, like: gjt.Encoding):
        super().__init__()
        self.reference = Reference(like._native.encoding)
        self.params = torch.nn.Parameter(like.params.detach().float().clone())
        self.n_output_dims = like.n_output_dims

    def forward(self, x):
        return self.reference.forward(x, self.params, dtype=torch.float32)


def make_model(encoding: torch.nn.Module, device) -> torch.nn.Module:
    mlp = torch.nn.Sequential(
        torch.nn.Linear(encoding.n_output_dims, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 3),
    )
    model = torch.nn.ModuleDict({"encoding": encoding, "mlp": mlp}).to(device)
    return model


def step_time(model, dims, batch, warmup, iterations, device) -> float:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(batch, dims, device=device)
    target = torch.rand(batch, 3, device=device)
    times = []
    for i in range(warmup + iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y = model["mlp"](model["encoding"](x).float())
        loss = torch.nn.functional.mse_loss(y, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        end.record()
        end.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def per_call_us(fn, calls: int) -> float:
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, default=3)
    parser.add_argument("--batches", default="65536,262144,1048576", help="comma-separated batch sizes")
    parser.add_argument("--dtype", choices=("auto", "half", "float"), default="auto",
                        help="gridjit's kernel precision (auto: half on sm_70+; parameters are fp32 either way)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000, help="calls per overhead measurement")
    parser.add_argument("--json", default=None, help="also write the JSON to this file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("train_step.py: needs a CUDA GPU", file=sys.stderr)
        return 1
    device = torch.device("cuda")
    encoding = gjt.Encoding(args.dims, HASHGRID, dtype={"auto": None, "half": torch.half, "float": torch.float}[args.dtype])
    encoding = encoding.to(device)
    dtype = encoding.dtype
    results = {
        "device": torch.cuda.get_device_name(),
        "gridjit": gridjit.__version__,
        "torch": torch.__version__,
        "config": HASHGRID,
        "dims": args.dims,
        "dtype": str(dtype),
        "train_step_ms": [],
        "overhead_us": [],
    }

    print(f"{results['device']}, gridjit {gridjit.__version__}, torch {torch.__version__}; "
          f"HashGrid {args.dims}-D, 16 levels, {encoding.n_params} parameters (kernels {dtype}) + MLP 2x64")
    print(f"{'batch':>9} | {'gridjit ms':>10} | {'reference ms':>12} | {'speed-up':>8}")
    for batch in (int(b) for b in args.batches.split(",")):
        ours = step_time(make_model(encoding, device), args.dims, batch, args.warmup, args.iterations, device)
        try:
            theirs = step_time(make_model(ReferenceEncoding(encoding), device), args.dims, batch, args.warmup,
                               max(3, args.iterations // 4), device)
        except torch.cuda.OutOfMemoryError:
            theirs = float("nan")
        torch.cuda.empty_cache()
        results["train_step_ms"].append({"batch": batch, "gridjit": ours, "reference": theirs})
        print(f"{batch:>9} | {ours:>10.3f} | {theirs:>12.3f} | {theirs / ours:>7.1f}x")

    module = encoding._native.module(device.index if device.index is not None else torch.cuda.current_device(), False)
    print(f"\n{'batch':>9} | {'Encoding us/call':>16} | {'raw launch us/call':>18} | {'python layer us':>15} | "
          f"{'torch.add us/call':>17}")
    for batch in (1, 1024):
        x = torch.rand(batch, args.dims, device=device)
        y = torch.empty(batch, encoding.n_output_dims, device=device, dtype=dtype)
        params = encoding._kernel_params(encoding.params).detach()  # in the kernels' precision
        stream = torch.cuda.current_stream().cuda_stream
        with torch.no_grad():
            layer = per_call_us(lambda: encoding(x), args.calls)
        raw = per_call_us(lambda: module.forward(batch, x.data_ptr(), params.data_ptr(), y.data_ptr(),
                                                 stream=stream), args.calls)
        trivial = per_call_us(lambda: torch.add(x, 1.0), args.calls)
        with torch.enable_grad():
            xg = x.clone().requires_grad_(True)
            autograd = per_call_us(lambda: encoding(xg), args.calls)
        results["overhead_us"].append({"batch": batch, "encoding_no_grad": layer, "encoding_with_grad": autograd,
                                       "raw_launch": raw, "python_layer": layer - raw, "torch_add": trivial})
        print(f"{batch:>9} | {layer:>16.1f} | {raw:>18.1f} | {layer - raw:>15.1f} | {trivial:>17.1f}"
              f"   (with autograd graph: {autograd:.1f} us)")

    text = json.dumps(results, indent=None)
    print("\n" + text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
