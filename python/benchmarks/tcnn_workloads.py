#!/usr/bin/env python3
"""tiny-cuda-nn's own PyTorch workloads, run with either package: gridjit.torch or
tinycudann, imported as ``tcnn`` (the only difference between the runs).

    python3 python/benchmarks/tcnn_workloads.py --package gridjit    --json gridjit.json
    python3 python/benchmarks/tcnn_workloads.py --package tinycudann --json tcnn.json
    python3 python/benchmarks/compare_tcnn.py --json both.json     # both, and the ratios

Workloads (--workload, comma-separated, default all):

eikonal     tiny-cuda-nn's scripts/test_grid_bwdbwd.py test_train(): SDF = Encoding
            (HashGrid, 4 levels, F 2, log2_hashmap_size 15, base 12, per_level_scale 1.5,
            Linear) + torch MLP 8 -> 64 -> 1; eikonal loss (mse of |dsdf/dx| against 1)
            through autograd.grad(create_graph=True); torch.optim.Adam(model.parameters(),
            2e-3); 51200 uniform points per step; the default dtype. --steps steps
            (default 1500); the loss every 10 steps; wall time per step as the median over
            windows of 10 steps, synchronised at each window's end (the loss is read there).
image       an image fit: Encoding (2-D HashGrid, 16 levels, F 2, log2 15, base 16,
            per_level_scale 1.5) + torch MLP (2 hidden layers of 64, ReLU) -> RGB, fitted to
            a procedural 512x512 image (examples/python/fit_image.py's, deterministic, no
            download) with MSE on 2^18 random pixels per step, Adam 1e-2; --image-steps
            (default 1000); loss every 10 steps, final PSNR, median step time as above.
percall     host time per call at a 256-point batch, tiny-cuda-nn's default HashGrid with 8
            levels, default dtype: no-grad forward, and forward + backward (dL/dparams);
            wall time over --calls calls (default 2000) after 200 of warm-up.
throughput  2^21 uniform points, tiny-cuda-nn's default HashGrid (16 levels), fp16: forward
            (no grad) and forward + backward (dL/dparams) through torch; CUDA-event medians
            of 50 after 10 of warm-up.
model       issue 18's PyTorch model: NetworkWithInputEncoding(3, 16, tiny-cuda-nn's default
            HashGrid (C1), FullyFusedMLP 64 x 2 ReLU), at 2^18 and 2^21 uniform points:
            inference (no grad) and a training step (forward, MSE against random targets,
            backward, torch.optim.Adam 1e-2 step); CUDA-event medians of --model-iterations
            (default 30) after 5 of warm-up. tinycudann is measured with its default
            jit_fusion and, where supports_jit_fusion(), with jit_fusion on as well
            (keys ending in _jit).
checkpoint  with --checkpoint FILE: the tinycudann run saves Encodings (HashGrid fp16 and
            fp32, DenseGrid, TiledGrid, Smoothstep) with O(1) parameters, their state_dict,
            inputs and outputs; the gridjit run loads each state_dict into its Encoding and
            compares the outputs (fp16: within 2^-7, tinycudann accumulating in fp16;
            fp32: within 1e-5). Where tinycudann has networks it also saves a Network and
            two NetworkWithInputEncoding models (as initialised, with their initial
            parameters): gridjit loads them and compares the outputs (within 2 % of the
            output's scale: both compute in fp16 between layers), and reports whether its
            own initial network weights for the same seed equal tinycudann's.

Prints one line per result and writes everything as JSON (--json). Every run seeds torch
with --seed, so both packages see the same points. Exit status 0; 2 on a bad argument;
3 when the package cannot be imported (the message says why; nothing else is run); 4 when
a workload produced a non-finite loss or a checkpoint output beyond its tolerance (the
JSON is written first).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python" / "tests"))

from tcnn_models import DEFAULT_HASHGRID, SDF, SDF_GRID, eikonal_loss  # noqa: E402

DEVICE = torch.device("cuda")
EIKONAL_BATCH = 51200  # test_grid_bwdbwd.py's points per step
IMAGE_SIZE = 512
IMAGE_BATCH = 1 << 18

IMAGE_GRID = {  # a 2-D grid of the size tiny-cuda-nn's image-learning samples use
    "otype": "HashGrid",
    "n_levels": 16,
    "n_features_per_level": 2,
    "log2_hashmap_size": 15,
    "base_resolution": 16,
    "per_level_scale": 1.5,
}


# gridjit.torch.wait_compiles once gridjit is imported: called after the first timed call, so
# that a model's fused backward, compiled behind its first training steps where tiers are on
# (docs/networks.md §10), is what the median times. tinycudann has nothing to wait for.
_wait_compiles = None


def settle() -> None:
    if _wait_compiles is not None:
        _wait_compiles()


def import_package(name: str):
    """The package as tiny-cuda-nn's scripts name it (tcnn), and its version."""
    global _wait_compiles
    if name == "gridjit":
        import gridjit
        import gridjit.torch as tcnn

        _wait_compiles = tcnn.wait_compiles
        return tcnn, gridjit.__version__
    import tinycudann as tcnn

    version = getattr(tcnn, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("tinycudann")
        except Exception:  # not installed as a distribution (e.g. an egg): unknown
            version = "unknown"
    return tcnn, version


def finite(values) -> bool:
    return all(math.isfinite(v) for v in values)


# ----------------------------------------------------------------------------- eikonal


def timed_training(step, steps: int, window: int = 10):
    """Runs step(i) -> loss tensor for steps steps; returns (losses every window steps,
    median seconds per step over windows, first step's seconds). The first window is
    warm-up (kernel compiles, cache loads, allocator growth) and is not in the median."""
    losses, per_step = [], []
    torch.cuda.synchronize()
    start = time.perf_counter()
    loss = step(0)
    loss_value = loss.item()
    first = time.perf_counter() - start
    settle()  # in the first window, which is not in the median
    losses.append((0, loss_value))
    window_start = time.perf_counter()
    for i in range(1, steps):
        loss = step(i)
        if i % window == 0 or i == steps - 1:
            loss_value = loss.item()  # synchronises
            now = time.perf_counter()
            done = i % window or window
            if i > window:
                per_step.append((now - window_start) / done)
            window_start = now
            losses.append((i, loss_value))
    median = statistics.median(per_step) if per_step else float("nan")
    return losses, median, first


def final_loss_mean(losses: list) -> float:
    """The mean of the losses sampled over the last tenth of the steps (at least one
    sample): the loss of one step moves by a few per cent with its random batch, so two
    runs are compared on this, not on their last step alone."""
    last_step = losses[-1][0]
    tail = [v for i, v in losses if i >= last_step * 0.9]
    return statistics.mean(tail or [losses[-1][1]])


def eikonal(tcnn, args) -> dict:
    device = DEVICE
    torch.manual_seed(args.seed)
    model = SDF(tcnn).to(device)
    optimizer = torch.optim.Adam(model.parameters(), 2.0e-3)

    def step(_):
        x = torch.rand([EIKONAL_BATCH, 3], dtype=torch.float, device=device)
        loss = eikonal_loss(model, x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    losses, median, first = timed_training(step, args.steps)
    values = [v for _, v in losses]
    nan_step = next((i for i, v in losses if not math.isfinite(v)), None)
    return {
        "config": SDF_GRID,
        "dtype": str(model.encoder.dtype),
        "param_dtype": str(model.encoder.params.dtype),
        "steps": args.steps,
        "batch": EIKONAL_BATCH,
        "loss_every_10": losses,
        "final_loss": values[-1],
        "final_loss_mean": final_loss_mean(losses),
        "finite": finite(values) and bool(torch.isfinite(model.encoder.params).all()),
        "first_non_finite_step": nan_step,
        "median_step_ms": median * 1e3,
        "first_step_s": first,
    }


# ----------------------------------------------------------------------------- image


def image_fit(tcnn, args) -> dict:
    sys.path.insert(0, str(REPO / "examples" / "python"))
    from fit_image import make_image  # the procedural 512x512 target, no gridjit needed

    device = DEVICE
    torch.manual_seed(args.seed)
    size = IMAGE_SIZE
    image = make_image(size, device)
    targets = image.reshape(-1, 3)
    encoding = tcnn.Encoding(2, IMAGE_GRID)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(encoding.n_output_dims, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 3),
    )
    model = torch.nn.ModuleDict({"encoding": encoding, "mlp": mlp}).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = IMAGE_BATCH

    def forward(xy):
        return model["mlp"](model["encoding"](xy).float())

    def step(_):
        xy = torch.rand(batch, 2, device=device)
        index = (xy[:, 1] * size).long().clamp_(0, size - 1) * size + (xy[:, 0] * size).long().clamp_(0, size - 1)
        loss = torch.nn.functional.mse_loss(forward(xy), targets[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    losses, median, first = timed_training(step, args.image_steps)
    pixels = (torch.arange(size, device=device, dtype=torch.float32) + 0.5) / size
    grid_y, grid_x = torch.meshgrid(pixels, pixels, indexing="ij")
    all_xy = torch.stack([grid_x.flatten(), grid_y.flatten()], dim=1)
    with torch.no_grad():
        result = torch.cat([forward(chunk) for chunk in all_xy.split(1 << 18)])
    mse = torch.mean((result - targets) ** 2).item()
    values = [v for _, v in losses]
    return {
        "config": IMAGE_GRID,
        "dtype": str(encoding.dtype),
        "steps": args.image_steps,
        "batch": batch,
        "loss_every_10": losses,
        "final_loss": values[-1],
        "final_loss_mean": final_loss_mean(losses),
        "finite": finite(values),
        "psnr_db": -10.0 * math.log10(max(mse, 1e-12)),
        "median_step_ms": median * 1e3,
        "first_step_s": first,
    }


# ----------------------------------------------------------------------------- per call


def per_call(tcnn, args) -> dict:
    device = DEVICE
    torch.manual_seed(args.seed)
    config = dict(DEFAULT_HASHGRID, n_levels=8)
    encoding = tcnn.Encoding(3, config).to(device)
    x = torch.rand(256, 3, device=device)
    dy = torch.rand(256, encoding.n_output_dims, device=device).to(encoding.dtype)

    def wall_us(fn) -> float:
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(args.calls):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / args.calls * 1e6

    def forward_no_grad():
        with torch.no_grad():
            encoding(x)

    params = encoding.params

    def forward_backward():
        params.grad = None
        encoding(x).backward(dy)

    return {
        "config": config,
        "dtype": str(encoding.dtype),
        "batch": 256,
        "calls": args.calls,
        "forward_no_grad_us": wall_us(forward_no_grad),
        "forward_backward_us": wall_us(forward_backward),
    }


# ----------------------------------------------------------------------------- throughput


def ray_samples(rays: int, samples: int, device) -> torch.Tensor:
    """Points as NeRF-style training feeds them: rays from outside the unit cube through a
    random point near its centre, `samples` stratified samples between where each ray
    enters and leaves the cube, each ray's samples consecutive and sorted along it (the
    same construction as `gridjit bench --input rays`)."""
    target = 0.25 + 0.5 * torch.rand(rays, 1, 3, device=device)
    direction = torch.nn.functional.normalize(torch.randn(rays, 1, 3, device=device), dim=-1)
    origin = target - 2.0 * direction
    safe = torch.where(direction.abs() < 1e-12, torch.full_like(direction, 1e-12), direction)
    a, b = (0.0 - origin) / safe, (1.0 - origin) / safe
    t0 = torch.minimum(a, b).amax(dim=-1, keepdim=True)
    t1 = torch.maximum(a, b).amin(dim=-1, keepdim=True)
    bins = torch.arange(samples, device=device).view(1, samples, 1)
    t = t0 + (t1 - t0) * (bins + torch.rand(rays, samples, 1, device=device)) / samples
    return (origin + t * direction).clamp(0.0, 1.0).reshape(rays * samples, 3).contiguous()


def throughput(tcnn, args) -> dict:
    device = DEVICE
    torch.manual_seed(args.seed)
    encoding = tcnn.Encoding(3, DEFAULT_HASHGRID, dtype=torch.half).to(device)
    n = 1 << 21
    x = torch.rand(n, 3, device=device)
    rays = ray_samples(8192, 256, device)  # 2^21 points along rays
    dy = (torch.rand(n, encoding.n_output_dims, device=device) * 2 - 1).half()
    params = encoding.params

    def forward(points):
        with torch.no_grad():
            encoding(points)

    def forward_backward(points):
        params.grad = None
        encoding(points).backward(dy)

    return {
        "config": DEFAULT_HASHGRID,
        "dtype": str(encoding.dtype),
        "points": n,
        "forward_ms": event_median_ms(lambda: forward(x)),
        "forward_backward_ms": event_median_ms(lambda: forward_backward(x)),
        "rays": "8192 x 256 samples, sorted along each ray",
        "rays_forward_ms": event_median_ms(lambda: forward(rays)),
        "rays_forward_backward_ms": event_median_ms(lambda: forward_backward(rays)),
    }


# ----------------------------------------------------------------------------- model

MODEL_NETWORK = {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None", "n_neurons": 64,
                 "n_hidden_layers": 2}


def event_median_ms(fn, warmup=10, iterations=50) -> float:
    times = []
    for i in range(warmup + iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i == 0:
            settle()
        if i >= warmup:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def model_workload(tcnn, args) -> dict:
    """NetworkWithInputEncoding(3, 16, C1, FullyFusedMLP 64 x 2) through torch: inference, a
    training step with torch.optim.Adam, and the same step optimising the input positions
    too (their gradient through the model, as pose or point refinement asks for), at 2^18
    and 2^21 points."""
    device = DEVICE
    result = {"encoding": DEFAULT_HASHGRID, "network": MODEL_NETWORK, "n_output_dims": 16}
    jit_modes = [None]
    supports = getattr(tcnn, "supports_jit_fusion", lambda: False)
    if args.package == "tinycudann" and supports():
        jit_modes.append(True)
    for log2 in (18, 21):
        n = 1 << log2
        for jit in jit_modes:
            torch.manual_seed(args.seed)
            model = tcnn.NetworkWithInputEncoding(3, 16, DEFAULT_HASHGRID, MODEL_NETWORK).to(device)
            if jit is not None:
                model.jit_fusion = jit
            suffix = f"_2^{log2}" + ("_jit" if jit else "")
            optimizer = torch.optim.Adam(model.parameters(), 1e-2)
            x = torch.rand(n, 3, device=device)
            target = torch.rand(n, 16, device=device)
            losses = []

            def inference():
                with torch.no_grad():
                    model(x)

            def training_step(inputs, optimizers, record):
                def step():
                    y = model(inputs)
                    loss = (y.float() - target).square().mean()
                    for o in optimizers:
                        o.zero_grad()
                    loss.backward()
                    for o in optimizers:
                        o.step()
                    if record:
                        losses.append(loss.detach())

                return step

            # The second step optimises the input positions too (their gradient through the model).
            x_param = x.clone().requires_grad_(True)
            x_optimizer = torch.optim.Adam([x_param], 1e-4)
            train_step = training_step(x, [optimizer], True)
            train_step_dx = training_step(x_param, [optimizer, x_optimizer], False)

            result["inference_ms" + suffix] = event_median_ms(inference, 5, args.model_iterations)
            result["train_step_ms" + suffix] = event_median_ms(train_step, 5, args.model_iterations)
            result["train_step_dx_ms" + suffix] = event_median_ms(train_step_dx, 5, args.model_iterations)
            values = [v.item() for v in losses]
            result["losses" + suffix] = [values[0], values[-1]]
            result["finite" + suffix] = finite(values)
            with torch.no_grad():
                result["output_dtype"] = str(model(x[:16]).dtype)
            result["jit_fusion" + suffix] = bool(getattr(model, "jit_fusion", False))
            result["n_params"] = int(model.params.numel())
            del model, optimizer, x, target, x_param, x_optimizer
            torch.cuda.empty_cache()
    result["finite"] = all(v for k, v in result.items() if k.startswith("finite_"))
    return result


# ----------------------------------------------------------------------------- checkpoint

CHECKPOINT_CASES = [
    (DEFAULT_HASHGRID, torch.half),
    (DEFAULT_HASHGRID, torch.float),
    ({"otype": "DenseGrid", "n_levels": 4, "base_resolution": 8, "per_level_scale": 1.5}, torch.half),
    ({"otype": "TiledGrid", "n_levels": 4, "base_resolution": 8, "per_level_scale": 1.5}, torch.float),
    (dict(DEFAULT_HASHGRID, n_levels=8, interpolation="Smoothstep"), torch.half),
]


def checkpoint(tcnn, args) -> dict:
    """tinycudann writes, gridjit reads: Encodings of several configurations with O(1)
    parameters, their state_dict, inputs and outputs (--checkpoint FILE). The gridjit run
    loads each state_dict into a gridjit Encoding of the same configuration and compares
    the outputs: the same parameters at the same corners give the same values up to
    rounding (see the tolerance below)."""
    path = Path(args.checkpoint)
    if args.package == "tinycudann":
        cases = []
        for index, (config, dtype) in enumerate(CHECKPOINT_CASES):
            torch.manual_seed(args.seed + index)
            encoding = tcnn.Encoding(3, config, dtype=dtype).to(DEVICE)
            with torch.no_grad():
                encoding.params.uniform_(-1, 1)
                x = torch.rand(65536, 3, device=DEVICE)
                y = encoding(x)
            cases.append({"config": config, "dtype": str(dtype), "state_dict": {k: v.cpu() for k, v in
                                                                                 encoding.state_dict().items()},
                          "x": x.cpu(), "y": y.float().cpu()})
        networks = tinycudann_networks(tcnn, args)
        torch.save({"cases": cases, "networks": networks}, path)
        return {"written": str(path), "cases": len(cases), "networks": len(networks)}
    if not path.is_file():
        return {"skipped": f"no checkpoint at {path}: run --package tinycudann --workload checkpoint first"}
    saved = torch.load(path, weights_only=False)
    results = []
    for case in saved["cases"]:
        dtype = {"torch.float16": torch.half, "torch.float32": torch.float}[case["dtype"]]
        encoding = tcnn.Encoding(3, case["config"], dtype=dtype).to(DEVICE)
        encoding.load_state_dict(case["state_dict"])
        with torch.no_grad():
            y = encoding(case["x"].to(DEVICE)).float().cpu()
        expected = case["y"]
        error = (y - expected).abs()
        # Parameters lie in [-1, 1] and the corner weights sum to 1. fp16: tinycudann rounds
        # each weight to fp16 and accumulates the 2^D corners in fp16 (gridjit in fp32, one
        # rounding at the end): about (2^D + 1) half-ulps of 1 apart at most, 2^-7 allowed.
        # fp32: both accumulate in fp32; 1e-5 allows any summation order.
        tolerance = 2.0**-7 if dtype == torch.half else 1e-5
        ok = bool((error <= tolerance).all())
        results.append({"config": case["config"], "dtype": case["dtype"], "max_abs_error": error.max().item(),
                        "mean_abs_error": error.mean().item(), "tolerance": tolerance,
                        "max_abs_output": expected.abs().max().item(), "within_tolerance": ok})
    networks = [check_network(tcnn, case) for case in saved.get("networks", [])]
    return {"cases": results, "networks": networks,
            "all_within_tolerance": all(r["within_tolerance"] for r in results + networks)}


NETWORK_CASES = [  # (n_input_dims, n_output_dims, encoding or None, network)
    (3, 1, None, MODEL_NETWORK),
    (3, 16, DEFAULT_HASHGRID, MODEL_NETWORK),
    (3, 4, dict(DEFAULT_HASHGRID, n_levels=4, log2_hashmap_size=15),  # 8 features, padded to 16
     {"otype": "FullyFusedMLP", "activation": "Tanh", "output_activation": "Sigmoid", "n_neurons": 32,
      "n_hidden_layers": 3}),
]


def make_network(tcnn, case, seed):
    n_in, n_out, encoding, network = case
    if encoding is None:
        return tcnn.Network(n_in, n_out, network, seed=seed).to(DEVICE)
    return tcnn.NetworkWithInputEncoding(n_in, n_out, encoding, network, seed=seed).to(DEVICE)


def tinycudann_networks(tcnn, args) -> list:
    """tinycudann's networks as initialised: state_dict, inputs, outputs (none without networks)."""
    saved = []
    for index, case in enumerate(NETWORK_CASES):
        torch.manual_seed(args.seed + index)
        try:
            module = make_network(tcnn, case, 1337)
        except RuntimeError as exc:  # built without networks
            print(f"  checkpoint: no networks in tinycudann ({exc})")
            return []
        if case[2] is not None:
            with torch.no_grad():  # grid features of some size, as after training
                n_mlp = module.params.numel() - tcnn.Encoding(3, case[2]).params.numel()
                module.params[n_mlp:].uniform_(-1, 1)
        x = torch.rand(65536, 3, device=DEVICE)
        with torch.no_grad():
            y = module(x)
        saved.append({"case": case, "state_dict": {k: v.cpu() for k, v in module.state_dict().items()},
                      "x": x.cpu(), "y": y.float().cpu()})
    return saved


def check_network(tcnn, saved) -> dict:
    """gridjit loads a tinycudann network's state_dict and gives its outputs within 2 % of
    their scale; informative: whether gridjit's initial network weights (seed 1337) are
    tinycudann's."""
    case = saved["case"]
    module = make_network(tcnn, case, 1337)
    params = saved["state_dict"]["params"]
    n_mlp = getattr(module, "n_mlp_params", module.params.numel())
    same_count = params.numel() == module.params.numel()
    init_equal = same_count and torch.equal(module.params.detach()[:n_mlp].cpu(), params[:n_mlp])
    result = {"config": {"encoding": case[2], "network": case[3], "n_output_dims": case[1]},
              "dtype": "network", "n_params": int(module.params.numel()), "tinycudann_n_params": int(params.numel()),
              "initial_network_weights_equal": bool(init_equal)}
    if not same_count:
        result.update(max_abs_error=float("inf"), mean_abs_error=float("inf"), tolerance=0.0,
                      max_abs_output=float("nan"), within_tolerance=False)
        return result
    module.load_state_dict(saved["state_dict"])
    with torch.no_grad():
        y = module(saved["x"].to(DEVICE)).float().cpu()
    expected = saved["y"]
    error = (y - expected).abs()
    scale = expected.abs().max().item()
    tolerance = 0.02 * max(scale, 1e-3)
    result.update(max_abs_error=error.max().item(), mean_abs_error=error.mean().item(), tolerance=tolerance,
                  max_abs_output=scale, within_tolerance=bool((error <= tolerance).all()))
    return result


WORKLOADS = {
    "eikonal": eikonal,
    "image": image_fit,
    "percall": per_call,
    "throughput": throughput,
    "model": model_workload,
    "checkpoint": checkpoint,
}


def case_name(case: dict) -> str:
    """A checkpoint case's name: the encoding's otype, or the network's class."""
    config = case["config"]
    if "network" in config:
        return "NetworkWithInputEncoding" if config.get("encoding") else "Network"
    return config["otype"]


def report(name: str, result: dict) -> None:
    if name in ("eikonal", "image"):
        extra = f", PSNR {result['psnr_db']:.2f} dB" if "psnr_db" in result else ""
        state = "finite" if result["finite"] else f"NON-FINITE (first at step {result.get('first_non_finite_step')})"
        print(f"  {name}: {result['steps']} steps, final loss {result['final_loss']:.6g} (mean of the last tenth {result['final_loss_mean']:.6g}){extra}, loss {state}, "
              f"median step {result['median_step_ms']:.3f} ms, first step {result['first_step_s']:.2f} s")
    elif name == "percall":
        print(f"  percall (256 points, 8 levels, {result['dtype']}): no-grad forward "
              f"{result['forward_no_grad_us']:.1f} us, forward + backward {result['forward_backward_us']:.1f} us")
    elif name == "throughput":
        print(f"  throughput (2^21 points, 16 levels, fp16): forward {result['forward_ms']:.3f} ms, "
              f"forward + backward {result['forward_backward_ms']:.3f} ms; along rays: forward "
              f"{result['rays_forward_ms']:.3f} ms, forward + backward {result['rays_forward_backward_ms']:.3f} ms")
    elif name == "model":
        for log2 in (18, 21):
            for jit in ("", "_jit"):
                key = f"_2^{log2}{jit}"
                if "inference_ms" + key in result:
                    mode = ", jit_fusion on" if jit else ""
                    print(f"  model (C1 + FullyFusedMLP 64x2 -> 16, 2^{log2} points{mode}): "
                          f"inference {result['inference_ms' + key]:.3f} ms, training step with Adam "
                          f"{result['train_step_ms' + key]:.3f} ms (optimising the inputs too: "
                          f"{result['train_step_dx_ms' + key]:.3f} ms), loss {result['losses' + key][0]:.4g} -> "
                          f"{result['losses' + key][1]:.4g}")
    elif "cases" in result and isinstance(result["cases"], list):
        for case in result["cases"] + result.get("networks", []):
            print(f"  checkpoint {case_name(case)} {case['dtype']}: max error {case['max_abs_error']:.3g} "
                  f"(outputs up to {case['max_abs_output']:.3g}): "
                  f"{'within' if case['within_tolerance'] else 'BEYOND'} tolerance {case['tolerance']:.3g}"
                  + (f"; initial network weights equal to tinycudann's: {case['initial_network_weights_equal']}"
                     if "initial_network_weights_equal" in case else ""))
    else:
        print(f"  checkpoint: {result}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", choices=("gridjit", "tinycudann"), required=True)
    parser.add_argument("--workload", default="all",
                        help="comma-separated: eikonal,image,percall,throughput,model,checkpoint or all "
                             "(checkpoint only with --checkpoint)")
    parser.add_argument("--checkpoint", default=None,
                        help="the checkpoint workload's file: tinycudann writes it, gridjit reads it")
    parser.add_argument("--steps", type=int, default=1500, help="eikonal training steps (default 1500)")
    parser.add_argument("--image-steps", type=int, default=1000, help="image fit steps (default 1000)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per per-call measurement (default 2000)")
    parser.add_argument("--model-iterations", type=int, default=30,
                        help="timed iterations of each model measurement (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args()
    if args.workload == "all":
        names = [w for w in WORKLOADS if w != "checkpoint" or args.checkpoint]
    else:
        names = [w.strip() for w in args.workload.split(",") if w.strip()]
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown or not names:
        parser.error(f"unknown workload(s) {unknown}: choose from {', '.join(WORKLOADS)} or all")
    if "checkpoint" in names and not args.checkpoint:
        parser.error("the checkpoint workload needs --checkpoint FILE")
    if not torch.cuda.is_available():
        print("tcnn_workloads.py: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    try:
        tcnn, version = import_package(args.package)
    except Exception as exc:  # ImportError, or tinycudann's EnvironmentError for a missing build
        print(f"tcnn_workloads.py: MISSING {args.package}: cannot import it ({type(exc).__name__}: {exc})",
              file=sys.stderr)
        if args.json:
            Path(args.json).write_text(json.dumps({"package": args.package, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 3
    results = {
        "package": args.package,
        "version": version,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "seed": args.seed,
        "workloads": {},
    }
    print(f"{args.package} {version} | torch {torch.__version__} | {results['device']}")
    for name in names:
        result = WORKLOADS[name](tcnn, args)
        results["workloads"][name] = result
        report(name, result)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    bad = [n for n, r in results["workloads"].items()
           if r.get("finite") is False or r.get("all_within_tolerance") is False]
    return 4 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
