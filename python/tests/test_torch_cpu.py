"""gridjit.torch without a GPU: construction, input
checks, and the autograd functions' algebra (first and second order, loss scaling)
checked in float64 against the PyTorch reference through the same launch interface."""

from __future__ import annotations

import copy
import io
import pickle

import pytest

try:
    import gridjit.torch as gjt  # without torch: ImportError saying torch is needed
    import torch
except ImportError as _exc:  # skip the module, with the message the package gives
    pytest.skip(str(_exc), allow_module_level=True)

import gridjit  # noqa: E402
from gridjit import _pcg  # noqa: E402
from torch_reference import Reference, ReferenceOps  # noqa: E402

HASH = {"otype": "HashGrid", "n_levels": 3, "log2_hashmap_size": 6, "base_resolution": 4, "per_level_scale": 1.5}

cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU initialisation path (no CUDA)")


def test_construction_like_tinycudann():
    enc = gjt.Encoding(3, {"otype": "HashGrid", "n_levels": 4, "log2_hashmap_size": 10}, seed=7, dtype=torch.float)
    assert enc.n_input_dims == 3 and enc.n_output_dims == 8
    layout = gridjit.Encoding({"otype": "HashGrid", "n_levels": 4, "log2_hashmap_size": 10}, 3)
    assert enc.n_params == layout.n_params and enc.levels == layout.levels
    assert isinstance(enc.params, torch.nn.Parameter) and enc.params.requires_grad
    assert enc.params.shape == (enc.n_params,) and enc.params.dtype == torch.float32
    assert [name for name, _ in enc.named_parameters()] == ["params"]
    assert enc.hyperparams["precision"] == "fp32" and enc.loss_scale == 1.0
    assert enc.params.detach().abs().max().item() <= 1e-4
    assert "n_output_dims=8" in repr(enc) and "seed=7" in repr(enc)


def test_default_dtype_is_half():
    enc = gjt.Encoding(2, HASH)
    assert enc.dtype == torch.half and enc.params.dtype == torch.half
    assert enc.hyperparams["precision"] == "fp16" and enc.loss_scale == 128.0


def test_bad_dtype_and_conflicting_precision():
    with pytest.raises(ValueError, match="fp32 or fp16"):
        gjt.Encoding(2, HASH, dtype=torch.float64)
    with pytest.raises(ValueError, match="precision"):
        gjt.Encoding(2, dict(HASH, precision="fp32"), dtype=torch.half)
    assert gjt.Encoding(2, dict(HASH, precision="FP32"), dtype=torch.float).dtype == torch.float32


def test_bad_configuration_raises_the_library_error():
    with pytest.raises(gridjit.InvalidConfigError, match="n_levls"):
        gjt.Encoding(2, {"otype": "HashGrid", "n_levls": 2})


@cpu_only
def test_cpu_initialisation_matches_the_formula():
    a = gjt.Encoding(2, HASH, seed=1337, dtype=torch.float)
    b = gjt.Encoding(2, HASH, seed=1337, dtype=torch.float)
    c = gjt.Encoding(2, HASH, seed=42, dtype=torch.float)
    h = gjt.Encoding(2, HASH, seed=1337, dtype=torch.half)
    assert a.params.device.type == "cpu"
    assert torch.equal(a.params, b.params) and not torch.equal(a.params, c.params)
    assert torch.equal(h.params.detach(), a.params.detach().half())  # rounded from the same floats
    values = a.params.detach()
    assert values.abs().max() <= 1e-4 and values.min() < -5e-5 and values.max() > 5e-5
    assert abs(values.mean().item()) < 1e-5  # uniform around 0


def test_pcg_init_against_a_scalar_pcg32():
    """_pcg's doubling against a plain step-by-step PCG32 (docs/design.md §2.8, §5)."""
    values = _pcg.init_params(37, seed=5)
    mask = (1 << 64) - 1
    state, inc = _pcg.seeded(5, 1)
    import struct

    for i in range(37):
        old = state
        state = (state * _pcg.MULT + inc) & mask
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        out = ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF
        u = struct.unpack("<f", struct.pack("<I", (out >> 9) | 0x3F800000))[0] - 1.0
        f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]  # noqa: E731
        expected = f32(f32(f32(f32(u * 2.0) - 1.0) * f32(1e-4)) * 1.0)
        assert values[i] == expected, i


def test_cpu_input_is_refused_clearly():
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    with pytest.raises(ValueError, match=r"CPU tensor.*CUDA devices only.*x\.cuda\(\)"):
        enc(torch.rand(4, 2))


def test_wrong_shape_dtype_and_type_are_refused():
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    with pytest.raises(ValueError, match=r"shape \(batch, 2\) \(got \(4, 3\)\)"):
        enc(torch.rand(4, 3))
    with pytest.raises(ValueError, match=r"shape \(batch, 2\) \(got \(8,\)\)"):
        enc(torch.rand(8))
    with pytest.raises(TypeError, match="floating-point dtype"):
        enc(torch.zeros(4, 2, dtype=torch.int32))
    with pytest.raises(TypeError, match="torch.Tensor"):
        enc([[0.5, 0.5]])
    with pytest.raises(ValueError, match=f"1-D tensor of {enc.n_params} elements"):
        gjt.encode(enc, torch.rand(4, 2), torch.zeros(3))
    with pytest.raises(ValueError, match=r"max_level must lie in \[0, 1\]"):
        enc(torch.rand(4, 2), max_level=1.5)
    with pytest.raises(ValueError, match=r"max_level must lie in \[0, 1\]"):
        enc(torch.rand(4, 2), max_level=float("nan"))
    with pytest.raises(ValueError, match=r"max_level per point must have shape \(4,\)"):
        enc(torch.rand(4, 2), max_level=torch.ones(5))


def test_copies_pickles_and_state_dicts():
    enc = gjt.Encoding(2, HASH, seed=3, dtype=torch.float)
    clone = copy.deepcopy(enc)
    assert torch.equal(clone.params, enc.params) and clone.params is not enc.params
    buffer = io.BytesIO()
    torch.save(enc, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert torch.equal(loaded.params, enc.params) and loaded.hyperparams == enc.hyperparams
    again = pickle.loads(pickle.dumps(enc))
    assert again.n_params == enc.n_params and again._native.encoding.levels == enc.levels
    other = gjt.Encoding(2, HASH, seed=4, dtype=torch.float)
    other.load_state_dict(enc.state_dict())
    assert torch.equal(other.params, enc.params)


# ----------------------------------------------------------------------------- autograd algebra

CONFIGS = [
    dict(HASH),
    {"otype": "DenseGrid", "n_levels": 2, "base_resolution": 3, "per_level_scale": 2.0},
    {"otype": "TiledGrid", "n_levels": 3, "base_resolution": 3, "per_level_scale": 1.7, "interpolation": "Smoothstep"},
    dict(HASH, interpolation="Nearest"),
]


def _ops_and_inputs(config, seed=0):
    enc = gridjit.Encoding(dict(config, precision="fp32"), 2)
    ops = ReferenceOps(Reference(enc, double_cells=True), dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(6, 2, dtype=torch.float64, generator=gen).requires_grad_(True)
    params = (torch.rand(enc.n_params, dtype=torch.float64, generator=gen) * 2 - 1).requires_grad_(True)
    return ops, x, params


@pytest.mark.parametrize("config", CONFIGS, ids=["hash", "dense", "tiled-smoothstep", "nearest"])
@pytest.mark.parametrize("loss_scale", [1.0, 128.0])
def test_autograd_functions_first_and_second_order(config, loss_scale):
    ops, x, params = _ops_and_inputs(config)

    def f(x, params):
        return gjt._EncodeFunction.apply(ops, x, params, None, 1.0, loss_scale, False)

    assert torch.autograd.gradcheck(f, (x, params))
    assert torch.autograd.gradgradcheck(f, (x, params))


def test_autograd_with_per_point_max_level():
    ops, x, params = _ops_and_inputs(HASH, seed=1)
    mlpp = torch.tensor([0.0, 0.2, 0.5, 0.7, 1.0, 0.34], dtype=torch.float32)

    def f(x, params):
        return gjt._EncodeFunction.apply(ops, x, params, mlpp, 1.0, 1.0, False)

    y = f(x, params)
    assert (y[0, 2:] == 0).all() and (y[4] != 0).all()  # m = 0 keeps level 0 only
    assert torch.autograd.gradcheck(f, (x, params))
    assert torch.autograd.gradgradcheck(f, (x, params))


def test_eikonal_style_second_order_matches_the_reference():
    """A loss on dL/dx (create_graph=True), through the functions, against autograd of
    the reference directly."""
    ops, x, params = _ops_and_inputs(CONFIGS[2], seed=2)
    reference = ops.reference

    def loss_of(forward):
        x_ = x.detach().requires_grad_(True)
        p_ = params.detach().requires_grad_(True)
        y = forward(x_, p_)
        (dx,) = torch.autograd.grad(y.sum(), x_, create_graph=True)
        loss = ((dx.norm(dim=1) - 1) ** 2).sum()
        return torch.autograd.grad(loss, (x_, p_))

    ours = loss_of(lambda x_, p_: gjt._EncodeFunction.apply(ops, x_, p_, None, 1.0, 1.0, False))
    theirs = loss_of(lambda x_, p_: reference.forward(x_, p_))
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)
        assert b.abs().max() > 0


def test_backward_with_no_gradient_needed_returns_nothing():
    ops, x, params = _ops_and_inputs(HASH)
    y = gjt._EncodeFunction.apply(ops, x.detach(), params, None, 1.0, 1.0, False)
    (g,) = torch.autograd.grad(y.sum(), params)
    assert g.shape == params.shape and g.abs().sum() > 0
