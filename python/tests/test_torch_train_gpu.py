"""gridjit.torch training as tinycudann users do it, on a GPU: tiny-cuda-nn's eikonal SDF
workload with the default dtype and stock Adam (finite throughout), the fp16 parameter
copy following every kind of update, a training step captured in a CUDA graph replaying
as eager mode does, torch.compile, DataParallel.

Skips (visibly) without CUDA. Run from the repository root with the built package on
PYTHONPATH, e.g.: PYTHONPATH=/tmp/gridjit-py python3 -m pytest python/tests -x -q
"""

from __future__ import annotations

import math

import pytest

from conftest import eager_copy, torch_or_skip

gjt, torch = torch_or_skip(needs_cuda=True)

from tcnn_models import SDF, SDF_GRID, eikonal_loss  # noqa: E402

DEVICE = torch.device("cuda", 0)


def test_eikonal_sdf_trains_with_the_default_dtype_and_stock_adam():
    """The issue's reproduction: every loss was NaN from the second step on with fp16
    parameters. Now: fp16 kernels (default dtype), fp32 parameters and gradients."""
    torch.manual_seed(0)
    model = SDF(gjt).to(DEVICE)
    assert model.encoder.dtype == torch.half  # the preferred precision on sm_70+
    assert model.encoder.params.dtype == torch.float32
    optimizer = torch.optim.Adam(model.parameters(), 2.0e-3)
    losses = []
    for _ in range(200):
        x = torch.rand([51200, 3], dtype=torch.float, device=DEVICE)
        loss = eikonal_loss(model, x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses), [i for i, v in enumerate(losses) if not math.isfinite(v)][:5]
    assert model.encoder.params.grad.dtype == torch.float32
    assert losses[-1] < 0.5 * losses[0], (losses[0], losses[-1])


@pytest.mark.parametrize("fused", [False, True], ids=["foreach", "fused"])
def test_the_fp16_copy_follows_optimizer_steps(fused):
    """Whether or not the optimizer bumps the version counter (fused ones do not), the
    next forward reads the updated parameters: module(x) equals encode() with the
    parameters given explicitly (cast afresh every call)."""
    enc = gjt.Encoding(3, SDF_GRID, dtype=torch.half).to(DEVICE)
    optimizer = torch.optim.Adam(enc.parameters(), lr=1e-2, fused=fused)
    x = torch.rand(4096, 3, device=DEVICE)
    for _ in range(3):
        y = enc(x)
        assert torch.equal(y, gjt.encode(enc, x, enc.params))
        optimizer.zero_grad()
        y.float().square().mean().backward()
        optimizer.step()
    assert torch.equal(enc(x), gjt.encode(enc, x, enc.params))


# ----------------------------------------------------------------------------- CUDA graphs


def _warm_up(step, n=3):
    """torch's recipe: a few eager iterations on a side stream before capturing."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(n):
            step()
    torch.cuda.current_stream().wait_stream(side)


def test_cuda_graph_forward_replays_bit_identically():
    enc = gjt.Encoding(3, SDF_GRID, dtype=torch.half).to(DEVICE)
    with torch.no_grad():
        enc.params.uniform_(-1, 1)
    static_x = torch.rand(8192, 3, device=DEVICE)
    with torch.no_grad():
        _warm_up(lambda: enc(static_x))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = enc(static_x)
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    for _ in range(3):
        static_x.copy_(torch.rand(8192, 3, device=DEVICE, generator=gen))
        graph.replay()
        with torch.no_grad():
            eager = enc(static_x)
        assert torch.equal(static_y, eager)
        with torch.no_grad():
            enc.params.add_(1e-2)  # the graph casts the parameters of the moment of each replay


def test_cuda_graph_training_step_replays_like_eager():
    """A whole training step (forward, fit + eikonal loss through create_graph, backward,
    capturable Adam) captured in a CUDA graph and replayed, against the same steps run
    eagerly from the same state (copied after the capture, so that nothing but torch's
    recipe happens between the warm-up and the capture). The first step's encoding output
    is bit-identical (no atomics in the forward pass); afterwards gradients, summed with
    fp32 atomic additions in an order that differs between runs, differ in their last
    bits, and so do the parameters: the losses agree to 1e-4 relative, the parameters to
    1e-5."""
    warm_up_inputs = [torch.rand(16384, 3, device=DEVICE) for _ in range(3)]
    batches = [torch.rand(16384, 3, device=DEVICE) for _ in range(8)]

    def make():
        torch.manual_seed(0)
        model = SDF(gjt).to(DEVICE)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)

    def step(model, optimizer, x):
        optimizer.zero_grad(set_to_none=True)
        x = x.detach().requires_grad_(True)  # an alias of the batch's memory
        features = model.encoder(x)
        sdf = model.decoder(features.float())
        (nablas,) = torch.autograd.grad(sdf, x, torch.ones_like(sdf), create_graph=True)
        target = (x.detach() - 0.5).norm(dim=-1, keepdim=True) - 0.3
        norm = nablas.norm(dim=-1)
        loss = torch.nn.functional.mse_loss(sdf, target) + 0.1 * torch.nn.functional.mse_loss(norm, torch.ones_like(norm))
        loss.backward()
        optimizer.step()
        return features.detach(), loss.detach()

    model, optimizer = make()
    side = torch.cuda.Stream()  # torch's recipe: eager iterations on a side stream first
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for x in warm_up_inputs:
            step(model, optimizer, x)
    torch.cuda.current_stream().wait_stream(side)
    static_x = batches[0].clone()
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_features, static_loss = step(model, optimizer, static_x)
    torch.cuda.synchronize()

    # The captured step has not run yet: the state after the warm-up, for the eager run.
    eager_model, eager_optimizer = eager_copy(make, model, optimizer)

    replayed, eager = [], []
    for x in batches:
        static_x.copy_(x)
        graph.replay()
        replayed.append((static_features.clone(), static_loss.item()))
    for x in batches:
        features, loss = step(eager_model, eager_optimizer, x.clone())
        eager.append((features, loss.item()))
    torch.cuda.synchronize()

    assert torch.equal(replayed[0][0], eager[0][0]), "first step's encoding output"
    for k, ((_, a), (_, b)) in enumerate(zip(replayed, eager)):
        assert math.isfinite(a) and abs(a - b) <= 1e-4 * abs(b), (k, a, b)
    for (name, p), q in zip(model.named_parameters(), eager_model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-5, msg=lambda m: f"{name}: {m}")


# ----------------------------------------------------------------------------- torch.compile


def test_torch_compile_of_a_model_holding_the_encoding():
    """torch.compile (default backend): the encoding runs eagerly (a graph break), the MLP
    compiled; outputs and gradients as eager mode's (the MLP's compiled kernels may round
    differently: close, not equal), the encoding's bit for bit."""
    torch.manual_seed(0)
    model = SDF(gjt).to(DEVICE)
    x = torch.rand(4096, 3, device=DEVICE)
    y = model(x)
    grads = torch.autograd.grad(y.square().mean(), list(model.parameters()))
    compiled = torch.compile(model)
    y_compiled = compiled(x)
    torch.testing.assert_close(y_compiled, y, rtol=1e-4, atol=1e-5)
    for a, b in zip(torch.autograd.grad(y_compiled.square().mean(), list(model.parameters())), grads):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-6)
    encoder = torch.compile(model.encoder)
    assert torch.equal(encoder(x), model.encoder(x))


# ----------------------------------------------------------------------------- DataParallel

two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")


@two_gpus
def test_data_parallel_replicas():
    torch.manual_seed(0)
    model = SDF(gjt).to(DEVICE)
    x = torch.rand(8192, 3, device=DEVICE)
    (single,) = torch.autograd.grad(model(x).square().mean(), [model.encoder.params])
    parallel = torch.nn.DataParallel(model, device_ids=[0, 1])
    (split,) = torch.autograd.grad(parallel(x).square().mean(), [model.encoder.params])
    torch.testing.assert_close(split, single, rtol=1e-3, atol=1e-7)
