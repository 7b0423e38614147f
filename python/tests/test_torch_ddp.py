"""gridjit.torch under DistributedDataParallel: ddp_check.py in a fresh interpreter (two
spawned processes; gloo with both on cuda:0, NCCL on two GPUs where there are two; on
the CPU with the PyTorch reference in place of the kernels). The GPU runs skip
(visibly) without CUDA."""

from __future__ import annotations

import subprocess

import pytest

from conftest import HERE, NO_CUDA, run_python_args

try:
    import torch
except ImportError as _exc:
    pytest.skip(f"torch is not installed ({_exc})", allow_module_level=True)

if not torch.distributed.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)


def _run(*args: str) -> subprocess.CompletedProcess:
    return run_python_args(str(HERE / "ddp_check.py"), *args)


def test_ddp_algebra_on_the_cpu_with_the_reference():
    """The same checks with the PyTorch reference in place of the kernels: gridjit.torch's
    autograd functions and parameter hooks under DDP, without a GPU."""
    result = _run("--cpu-reference")
    assert result.returncode == 0 and "PASS ddp (cpu reference)" in result.stdout, result.stdout + result.stderr


def test_ddp_of_a_network_on_the_cpu_with_the_reference():
    """A NetworkWithInputEncoding under DDP (its one params, the loss scale, the gradient
    hooks), with the PyTorch MLP and grid in place of the kernels."""
    result = _run("--cpu-reference", "--model", "network")
    assert result.returncode == 0 and "PASS ddp (cpu reference, NetworkWithInputEncoding)" in result.stdout, (
        result.stdout + result.stderr
    )


@needs_cuda
def test_ddp_of_a_network_gloo_two_processes_on_one_gpu():
    result = _run("--backend", "gloo", "--model", "network")
    assert result.returncode == 0 and "PASS ddp (gloo, NetworkWithInputEncoding)" in result.stdout, (
        result.stdout + result.stderr
    )


@needs_cuda
def test_ddp_gloo_two_processes_on_one_gpu():
    result = _run("--backend", "gloo")
    assert result.returncode == 0 and "PASS ddp (gloo)" in result.stdout, result.stdout + result.stderr


@needs_cuda
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL needs two GPUs (NCCL refuses two ranks on one GPU)")
def test_ddp_nccl_two_gpus():
    result = _run("--backend", "nccl")
    assert result.returncode == 0 and "PASS ddp (nccl)" in result.stdout, result.stdout + result.stderr
