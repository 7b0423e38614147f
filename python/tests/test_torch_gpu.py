"""gridjit.torch on a GPU: gradients checked numerically (gradcheck, gradgradcheck) for
every grid type and interpolation, every pass against the PyTorch reference, fp16,
max_level, stochastic interpolation, streams, devices, threads, batch sizes 0 and 2^20.

Skips (visibly) without CUDA. Run from the repository root with the built package on
PYTHONPATH, e.g.: PYTHONPATH=/tmp/gridjit-py python3 -m pytest python/tests -x -q
"""

from __future__ import annotations

import threading

import pytest

from conftest import torch_or_skip

gjt, torch = torch_or_skip(needs_cuda=True)

import gridjit  # noqa: E402
from gridjit import _pcg  # noqa: E402
from tcnn_models import DEFAULT_HASHGRID  # noqa: E402
from torch_reference import Reference  # noqa: E402

DEVICE = torch.device("cuda", 0)
GRIDS = {
    # D = 2: level 0 dense (16 entries), levels 1 and 2 hashed into 32 entries.
    "Hash": {"otype": "HashGrid", "n_levels": 3, "log2_hashmap_size": 5, "base_resolution": 4, "per_level_scale": 1.5},
    "Dense": {"otype": "DenseGrid", "n_levels": 3, "base_resolution": 4, "per_level_scale": 1.5},
    "Tiled": {"otype": "TiledGrid", "n_levels": 3, "base_resolution": 4, "per_level_scale": 1.5},
}
INTERPOLATIONS = ["Nearest", "Linear", "Smoothstep"]


def make(config, dims=2, dtype=torch.float, seed=1337, device=DEVICE, uniform=True):
    with torch.cuda.device(device):
        enc = gjt.Encoding(dims, config, seed=seed, dtype=dtype)
    enc = enc.to(device)
    if uniform:  # O(1) parameters: numerical checks need values well above rounding
        gen = torch.Generator(device=device).manual_seed(seed)
        with torch.no_grad():
            enc.params.copy_(torch.rand(enc.n_params, generator=gen, device=device) * 2 - 1)
    return enc


def reference_of(enc) -> Reference:
    return Reference(enc._native.encoding)


def inner_points(enc, n, margin=0.1, seed=0):
    """n points whose every level coordinate lies at least margin (in cells) from a cell
    boundary, so that finite differences never straddle one."""
    gen = torch.Generator().manual_seed(seed)
    scales = torch.tensor([lv["scale"] for lv in enc.levels], dtype=torch.float64)
    kept = []
    while sum(len(k) for k in kept) < n:
        x = torch.rand(4096, enc.n_input_dims, generator=gen, dtype=torch.float64) * 0.9 + 0.05
        frac = torch.frac(x[:, None, :] * scales[None, :, None] + 0.5)
        ok = ((frac > margin) & (frac < 1 - margin)).all(dim=2).all(dim=1)
        kept.append(x[ok])
    return torch.cat(kept)[:n].to(torch.float32).to(DEVICE)


def close(ours, theirs, rel, what):
    ours, theirs = ours.double(), theirs.double()
    scale = max(theirs.abs().max().item(), 1e-30)
    err = (ours - theirs).abs().max().item()
    assert err <= rel * scale, f"{what}: max error {err:.3g} > {rel} * {scale:.3g}"


def passes(forward, x, params, dy, ddx):
    """y, dL/dx, dL/dparams and the backward of backward of a forward function."""
    x_ = x.detach().clone().requires_grad_(True)
    p_ = params.detach().clone().requires_grad_(True)
    dy_ = dy.detach().clone().requires_grad_(True)
    y = forward(x_, p_)
    dx, dp = torch.autograd.grad(y, (x_, p_), dy_, create_graph=True, allow_unused=True, materialize_grads=True)
    if dx.requires_grad:
        bb = torch.autograd.grad(dx, (p_, dy_, x_), ddx, allow_unused=True, materialize_grads=True)
    else:  # the reference's Nearest: dL/dx does not depend on anything
        bb = (torch.zeros_like(p_), torch.zeros_like(dy_), torch.zeros_like(x_))
    return [t.detach() for t in (y, dx, dp, *bb)]


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_gradcheck(grid, interpolation):
    enc = make(dict(GRIDS[grid], interpolation=interpolation))
    x = inner_points(enc, 8).requires_grad_(True)
    p = enc.params.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x, p: gjt.encode(enc, x, p), (x, p), eps=1e-3, atol=2e-3, rtol=1e-2, nondet_tol=1e-4
    )


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_gradgradcheck(grid, interpolation):
    enc = make(dict(GRIDS[grid], interpolation=interpolation))
    x = inner_points(enc, 6, seed=1).requires_grad_(True)
    p = enc.params.detach().clone().requires_grad_(True)
    assert torch.autograd.gradgradcheck(
        lambda x, p: gjt.encode(enc, x, p), (x, p), eps=1e-3, atol=2e-3, rtol=1e-2, nondet_tol=1e-4
    )


def test_nearest_has_zero_input_gradient():
    enc = make(dict(GRIDS["Hash"], interpolation="Nearest"))
    x = torch.rand(100, 2, device=DEVICE, requires_grad=True)
    y = enc(x)
    (dx,) = torch.autograd.grad(y.sum(), x)
    assert torch.count_nonzero(dx) == 0
    assert y.abs().max() > 0


# ----------------------------------------------------------------------------- reference


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_passes_against_the_reference(grid, interpolation, dims):
    enc = make(dict(GRIDS[grid], interpolation=interpolation), dims=dims)
    n = 777
    gen = torch.Generator(device=DEVICE).manual_seed(dims)
    x = torch.rand(n, dims, device=DEVICE, generator=gen)
    dy = torch.rand(n, enc.n_output_dims, device=DEVICE, generator=gen) * 2 - 1
    ddx = torch.rand(n, dims, device=DEVICE, generator=gen) * 2 - 1
    ours = passes(lambda x, p: gjt.encode(enc, x, p), x, enc.params, dy, ddx)
    reference = reference_of(enc)
    theirs = passes(lambda x, p: reference.forward(x, p), x.double(), enc.params.double(), dy.double(), ddx.double())
    names = ["y", "dL/dx", "dL/dparams", "bwdbwd dL/dparams", "bwdbwd dL/ddLdy", "bwdbwd dL/dx"]
    for name, a, b in zip(names, ours, theirs):
        close(a, b, 1e-5 if name == "y" else 1e-4, f"{grid} {interpolation} D={dims} {name}")
    assert ours[0].dtype == torch.float32 and ours[0].shape == (n, enc.n_output_dims)


def test_fp16_forward_and_gradients_within_fp16_tolerance():
    enc = make(DEFAULT_HASHGRID, dims=3, dtype=torch.half)
    assert enc.params.dtype == torch.float32 and enc.loss_scale == 128.0
    n = 4096
    x = torch.rand(n, 3, device=DEVICE)
    y = enc(x)
    assert y.dtype == torch.half and y.shape == (n, 32)
    reference = reference_of(enc)
    kernel_params = enc.params.detach().half()  # what the kernels read
    expected = reference.forward(x, kernel_params)
    # One rounding to fp16 of an fp32 sum: half an fp16 ulp plus fp32 noise.
    err = (y.double() - expected).abs()
    assert (err <= expected.abs() * (2.0**-11 + 1e-6) + 1e-6).all(), err.max().item()
    dy = (torch.rand(n, 32, device=DEVICE) * 2 - 1).half()
    xg = x.clone().requires_grad_(True)
    dx, dp = torch.autograd.grad(enc(xg), (xg, enc.params), dy)
    ref_dx, ref_dp = passes(lambda x, p: reference.forward(x, p), x.double(), kernel_params.double(), dy.double(),
                            torch.zeros(n, 3, device=DEVICE, dtype=torch.float64))[1:3]
    assert dp.dtype == torch.float32 and dx.dtype == torch.float32
    close(dx, ref_dx, 1e-3, "fp16 dL/dx")
    close(dp, ref_dp, 1e-4, "fp16 module dL/dparams")  # accumulated in fp32 (gradients_fp32)


def test_max_level_scalar_and_per_point():
    enc = make(DEFAULT_HASHGRID, dims=3)
    reference = reference_of(enc)
    n = 1000
    x = torch.rand(n, 3, device=DEVICE)
    y_half = enc(x, max_level=0.5)
    assert torch.count_nonzero(y_half[:, 18:]) == 0 and torch.count_nonzero(y_half[:, :16]) > 0
    close(y_half, reference.forward(x, enc.params.detach(), 0.5), 1e-5, "max_level 0.5")
    m = torch.rand(n, device=DEVICE)
    y = enc(x, max_level=m)
    close(y, reference.forward(x, enc.params.detach(), m), 1e-5, "per-point max_level")
    dp = torch.autograd.grad(enc(x, max_level=0.0).sum(), enc.params)[0]
    first = enc.levels[1]["offset"] * 2
    assert torch.count_nonzero(dp[first:]) == 0 and torch.count_nonzero(dp[:first]) > 0
    with pytest.raises(ValueError, match="max_level"):
        enc(x, max_level=-0.1)


def test_stochastic_interpolation_follows_training_mode():
    config = dict(GRIDS["Hash"], log2_hashmap_size=12, stochastic_interpolation=True)
    enc = make(config)
    reference = reference_of(enc)
    n = 2048
    x = torch.rand(n, 2, device=DEVICE)
    dy = torch.rand(n, enc.n_output_dims, device=DEVICE)
    enc.train()
    (train_dp,) = torch.autograd.grad(enc(x), enc.params, dy)
    close(train_dp, reference.stochastic_dparams(x, dy), 1e-4, "stochastic dL/dparams")
    enc.eval()
    (eval_dp,) = torch.autograd.grad(enc(x), enc.params, dy)
    exact = passes(lambda x, p: reference.forward(x, p), x.double(), enc.params.double(), dy.double(),
                   torch.zeros(n, 2, device=DEVICE, dtype=torch.float64))[2]
    close(eval_dp, exact, 1e-4, "eval-mode dL/dparams")
    assert (train_dp - eval_dp).abs().max() > 1e-3


# ----------------------------------------------------------------------------- runtime


def test_initial_parameters_equal_the_cpu_initialisation():
    cpu = None
    for dtype in (torch.float, torch.half, None):
        enc = gjt.Encoding(3, DEFAULT_HASHGRID, seed=7, dtype=dtype)
        assert enc.params.device.type == "cuda" and enc.params.dtype == torch.float32
        if cpu is None:
            cpu = torch.from_numpy(_pcg.init_params(enc.n_params, 7))
        assert torch.equal(enc.params.detach().cpu(), cpu)  # fp32 values, also for fp16 modules


def test_batch_zero():
    enc = make(GRIDS["Hash"])
    x = torch.empty(0, 2, device=DEVICE, requires_grad=True)
    y = enc(x)
    assert y.shape == (0, enc.n_output_dims) and y.dtype == torch.float32
    y.sum().backward()
    assert x.grad.shape == (0, 2)
    assert enc.params.grad is not None and torch.count_nonzero(enc.params.grad) == 0


def test_large_batch():
    enc = make(DEFAULT_HASHGRID, dims=3, dtype=torch.half)
    n = 1 << 20
    x = torch.rand(n, 3, device=DEVICE)
    y = enc(x)
    assert y.shape == (n, 32) and torch.isfinite(y).all()
    y.float().square().mean().backward()
    assert torch.isfinite(enc.params.grad).all() and torch.count_nonzero(enc.params.grad) > 0
    sample = torch.randint(0, n, (2048,), device=DEVICE)
    expected = reference_of(enc).forward(x[sample], enc.params.detach().half())
    err = (y[sample].double() - expected).abs()
    assert (err <= expected.abs() * (2.0**-11 + 1e-6) + 1e-6).all()


@pytest.mark.parametrize("fused", [False, True], ids=["adam", "adam-fused"])
def test_an_optimizer_step_makes_the_fp16_copy_at_once(fused):
    """On a GPU the step hook casts the stepped parameters right after the step (its host
    work hidden behind the step's kernels): the copy holds the new values and the version
    the step left, also after a fused step (which bumps no version), and the next forward
    pass uses it as it is."""
    enc = make(GRIDS["Hash"], dtype=torch.half)
    other = make(GRIDS["Hash"], dtype=torch.half)
    x = torch.rand(512, 2, device=DEVICE)
    enc(x), other(x)
    copy_other = other._cast
    optimizer = torch.optim.Adam(enc.parameters(), lr=0.1, fused=fused)
    enc(x).float().square().mean().backward()
    before = enc._cast[3]
    optimizer.step()
    cast = enc._cast
    assert cast is not None and cast[3] is not before and other._cast is copy_other
    assert cast[2] == enc.params._version and cast[1] == enc.params.data_ptr()
    assert torch.equal(cast[3], enc.params.detach().half())
    assert not torch.equal(cast[3], before)
    expected = reference_of(enc).forward(x, enc.params.detach().half())
    y = enc(x)
    assert enc._cast is cast
    err = (y.double() - expected).abs()
    assert (err <= expected.abs() * (2.0**-11 + 1e-6) + 1e-6).all()


def test_work_on_a_side_stream_is_ordered():
    """The kernels run on the current stream: on a side stream they wait for the work
    queued before them there (a long sleep, then the copy of the input)."""
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("torch.cuda._sleep is not available")
    enc = make(GRIDS["Hash"])
    source = torch.rand(1 << 16, 2, device=DEVICE)
    expected = enc(source).detach()
    side = torch.cuda.Stream(device=DEVICE)
    x = torch.zeros_like(source)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time
        x.copy_(source)
        y = enc(x)
        grad = torch.autograd.grad(enc(x).sum(), enc.params)[0]
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(y, expected)
    reference_grad = torch.autograd.grad(enc(source).sum(), enc.params)[0]
    close(grad, reference_grad, 1e-5, "dL/dparams on the side stream")


def test_input_dtype_conversion_and_gradient():
    enc = make(GRIDS["Dense"])
    x64 = torch.rand(64, 2, device=DEVICE, dtype=torch.float64, requires_grad=True)
    y = enc(x64)
    (dx,) = torch.autograd.grad(y.sum(), x64)
    assert dx.dtype == torch.float64
    y32 = enc(x64.detach().float())
    assert torch.equal(y, y32)


def test_cpu_input_is_moved_with_a_warning_and_cpu_parameters_refused():
    enc = make(GRIDS["Hash"])
    x = torch.rand(5, 2)
    with pytest.warns(UserWarning, match="input must be a CUDA tensor, but isn't") as record:
        y = enc(x)
    assert record[0].filename == __file__
    assert y.device == DEVICE and torch.equal(y, enc(x.to(DEVICE)))
    cpu_enc = make(GRIDS["Hash"]).cpu()
    with pytest.raises(ValueError, match="parameters are on cpu"):
        cpu_enc(torch.rand(5, 2, device=DEVICE))


def test_runs_on_other_threads():
    enc = make(GRIDS["Tiled"])
    x = torch.rand(300, 2, device=DEVICE)
    expected = enc(x).detach()
    expected_grad = torch.autograd.grad(enc(x).sum(), enc.params)[0]
    result = {}

    def work():
        try:
            result["y"] = enc(x).detach()
            result["grad"] = torch.autograd.grad(enc(x).sum(), enc.params)[0]
        except Exception as exc:  # reported below
            result["error"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert "error" not in result, result.get("error")
    assert torch.equal(result["y"], expected)
    close(result["grad"], expected_grad, 1e-5, "dL/dparams on another thread")


def test_native_module_description_and_errors():
    enc = make(GRIDS["Hash"])
    enc(torch.rand(10, 2, device=DEVICE))
    module = enc._native.module(0, False)
    assert module.passes == gridjit.PASS_ALL
    assert module.output_width == enc.n_output_dims and module.n_params == enc.n_params
    assert module.element_size == 4 and module.gradient_element_size == 4
    half = make(GRIDS["Hash"], dtype=torch.half)
    half(torch.rand(10, 2, device=DEVICE))
    assert half._native.module(0, False).element_size == 2
    assert half._native.module(0, False).gradient_element_size == 4  # gradients_fp32
    programs = module.programs()
    assert programs and all(p["arch"].startswith(("sm_", "compute_")) for p in programs)
    assert all(p["cache"] in ("hit", "miss", "off") and p["binary_bytes"] > 0 for p in programs)
    module.prepare(gridjit.PASS_ALL)
    assert len(module.programs()) >= len(programs)
    x = torch.rand(10, 2, device=DEVICE)
    y = torch.empty(10, enc.n_output_dims, device=DEVICE)
    with pytest.raises(gridjit.InvalidArgumentError) as info:
        module.forward(10, x.data_ptr(), enc.params.data_ptr() + 4, y.data_ptr())  # misaligned parameters
    assert info.value.call == "gj_forward" and "aligned" in str(info.value)
    with pytest.raises(gridjit.InvalidArgumentError, match="max_level"):
        module.forward(10, x.data_ptr(), enc.params.data_ptr(), y.data_ptr(), max_level=2.0)
    with pytest.raises(gridjit.InvalidArgumentError, match="nothing to compute"):
        module.backward(10, x.data_ptr(), enc.params.data_ptr(), y.data_ptr())
    with pytest.raises(gridjit.InvalidArgumentError):
        module.backward_backward(10, x.data_ptr(), enc.params.data_ptr(), x.data_ptr(), y.data_ptr())
    with pytest.raises(gridjit.InvalidArgumentError, match="scale"):
        module.init_params(enc.params.data_ptr(), scale=float("inf"))
    info = gridjit.runtime_probe(strict=True)
    assert info.available and info.device_count == torch.cuda.device_count()


two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")


@two_gpus
def test_second_device_and_mixed_devices():
    enc = make(GRIDS["Hash"])
    x = torch.rand(500, 2, device=DEVICE)
    y0 = enc(x).detach()
    other = torch.device("cuda", 1)
    enc.to(other)
    y1 = enc(x.to(other))
    assert y1.device == other and torch.equal(y1.cpu(), y0.cpu())
    (dp,) = torch.autograd.grad(y1.sum(), enc.params)
    assert dp.device == other
    with pytest.raises(ValueError, match="mixed devices"):
        enc(x)
    assert {key[0] for key in enc._native._modules} >= {0, 1}
