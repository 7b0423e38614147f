#!/usr/bin/env python3
"""DistributedDataParallel with gridjit.torch.Encoding, checked: two processes (spawned
with torch.multiprocessing) each take half of a batch, DDP averages the gradients, and
the result must equal one process's gradients on the whole batch (to 1e-3 of the largest:
fp32 summation order and the MLP's kernels for other batch sizes); the parameters' post-accumulate
gradient hooks must fire (they are what DDP's reducer rides on), and after a few Adam
steps the replicas' parameters must still be identical.

    python3 python/tests/ddp_check.py --backend gloo   # both processes on cuda:0
    python3 python/tests/ddp_check.py --backend nccl   # cuda:0 and cuda:1 (needs 2 GPUs)
    python3 python/tests/ddp_check.py --cpu-reference  # no GPU: the PyTorch reference on the CPU
    python3 python/tests/ddp_check.py --model network  # a NetworkWithInputEncoding instead

Prints one "PASS ..." line and exits 0, or "FAIL ..." lines and exits 1.
test_torch_ddp.py runs it.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2
BATCH = 8192
GRID = {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2, "log2_hashmap_size": 15,
        "base_resolution": 16, "per_level_scale": 1.5}


NETWORK = {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2}


def make_model(device, kind="encoding"):
    """kind "encoding": an Encoding followed by a torch MLP; "network": a
    NetworkWithInputEncoding (its params first in model.parameters())."""
    import gridjit.torch as gjt

    torch.manual_seed(0)
    if kind == "network":
        model = gjt.NetworkWithInputEncoding(3, 1, GRID, NETWORK)
        if device.type == "cpu":
            from network_reference import run_network_on_the_cpu

            gjt._cpu_input = lambda x, params: x
            run_network_on_the_cpu(model)
        with torch.no_grad():
            model.params[model.n_mlp_params :].uniform_(-0.5, 0.5)
        return torch.nn.Sequential(model).to(device)
    encoder = gjt.Encoding(3, GRID, dtype=None if device.type == "cuda" else torch.half)
    if device.type == "cpu":  # the PyTorch reference in place of the kernels (checks this script)
        from torch_reference import run_on_the_cpu

        gjt._cpu_input = lambda x, params: x
        run_on_the_cpu(encoder)
    with torch.no_grad():
        encoder.params.uniform_(-0.5, 0.5)  # O(1) features, so that gradients are well above rounding
    return torch.nn.Sequential(
        encoder, Float(), torch.nn.Linear(encoder.n_output_dims, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
    ).to(device)


class Float(torch.nn.Module):
    def forward(self, x):
        return x.float()


def loss_of(model, x, scale=1.0):
    """Sum of squared errors times scale. A sum, not a mean: the encoding's output is fp16,
    so dL/dy reaches it in fp16, and a mean over thousands of points would make it
    subnormal (few significant bits; tinycudann's too). Powers of two keep it exact."""
    target = (x - 0.5).norm(dim=-1, keepdim=True) - 0.3
    return (model(x) - target).square().sum() * scale


def worker(rank: int, backend: str, store: str, cpu: bool, kind: str = "encoding") -> None:
    if cpu:
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", rank if backend == "nccl" else 0)
        torch.cuda.set_device(device)
    # A file store, not a TCP port: a port found free and then bound by the first worker can
    # be taken by another process in between.
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=WORLD)
    try:
        check(rank, device, kind)
    finally:
        dist.destroy_process_group()


def check(rank: int, device: torch.device, kind: str = "encoding") -> None:
    failures = []
    model = make_model(device, kind)
    x = torch.rand(BATCH, 3, generator=torch.Generator().manual_seed(1)).to(device)

    # One process on the whole batch.
    single = copy.deepcopy(model)
    loss_of(single, x, 1.0 / WORLD).backward()  # = the mean over the processes of their shards' sums
    expected = [p.grad.detach().clone() for p in single.parameters()]

    fired = []
    params = model[0].params
    params.register_post_accumulate_grad_hook(lambda p: fired.append(p.grad is not None))
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=None if device.type == "cpu" else [device.index])
    shard = x.chunk(WORLD)[rank]
    loss_of(ddp, shard).backward()
    if not fired or not all(fired):
        failures.append(f"rank {rank}: the {kind} parameters' gradient hook did not fire ({fired})")
    for (name, p), e in zip(model.named_parameters(), expected):
        if p.grad is None:
            failures.append(f"rank {rank}: {name} has no gradient")
            continue
        if p.grad.dtype != torch.float32:
            failures.append(f"rank {rank}: {name}.grad is {p.grad.dtype}, not float32")
        scale = e.abs().max().item()
        err = (p.grad - e).abs().max().item()
        if not err <= 1e-3 * scale:
            failures.append(f"rank {rank}: {name}: averaged gradient differs from the whole batch's by {err:.3g} "
                            f"(max {scale:.3g})")
    grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    gathered = [torch.empty_like(grads) for _ in range(WORLD)]
    dist.all_gather(gathered, grads)
    if not all(torch.equal(g, gathered[0]) for g in gathered):
        failures.append(f"rank {rank}: the processes' reduced gradients differ")

    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    losses = []
    for step in range(5):
        optimizer.zero_grad()
        batch = torch.rand(BATCH // WORLD, 3, generator=torch.Generator().manual_seed(10 + step * WORLD + rank))
        loss = loss_of(ddp, batch.to(device), 1.0 / BATCH)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(WORLD)]
    dist.all_gather(gathered, flat)
    if not all(torch.equal(g, gathered[0]) for g in gathered):
        failures.append(f"rank {rank}: parameters differ between the processes after 5 Adam steps")
    if not all(torch.isfinite(torch.tensor(losses))):
        failures.append(f"rank {rank}: non-finite loss {losses}")
    for line in failures:
        print("FAIL", line, flush=True)
    if failures:
        raise SystemExit(1)
    if rank == 0:
        print(f"rank 0: gradients equal the whole batch's, hooks fired, 5 steps in sync (losses {losses})", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    parser.add_argument("--cpu-reference", action="store_true",
                        help="run on the CPU with the PyTorch reference in place of the kernels (checks the "
                             "script and gridjit.torch's autograd under DDP without a GPU; gloo only)")
    parser.add_argument("--model", choices=("encoding", "network"), default="encoding",
                        help="encoding: gridjit.torch.Encoding + a torch MLP (default); network: a "
                             "gridjit.torch.NetworkWithInputEncoding")
    args = parser.parse_args()
    if args.cpu_reference and args.backend != "gloo":
        parser.error("--cpu-reference works with --backend gloo only")
    if not args.cpu_reference and not torch.cuda.is_available():
        print("SKIP no CUDA device")
        return 0
    if args.backend == "nccl" and torch.cuda.device_count() < WORLD:
        print(f"SKIP nccl needs {WORLD} GPUs (found {torch.cuda.device_count()})")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        try:
            mp.spawn(worker, args=(args.backend, f"{tmp}/store", args.cpu_reference, args.model), nprocs=WORLD,
                     join=True)
        except Exception as exc:  # a worker failed: its FAIL lines are above
            print(f"FAIL ddp ({'cpu reference' if args.cpu_reference else args.backend}): {exc}", flush=True)
            return 1
    where = "cpu reference" if args.cpu_reference else args.backend
    if args.model == "network":
        where += ", NetworkWithInputEncoding"
    print(f"PASS ddp ({where}): {WORLD} processes, averaged gradients equal one process's on the whole batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
