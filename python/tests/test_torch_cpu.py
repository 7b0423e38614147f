"""gridjit.torch without a GPU: construction, the tinycudann surface, input checks, and
the module's behaviour end to end (fp32 parameters, the fp16 parameter copy and when it
is made again, fp32 gradients, optimisers, GradScaler, state_dict, pickling,
torch.compile) with the launch layer replaced by the PyTorch reference
(torch_reference.ReferenceOps, the same interface as gridjit._torch_launch._Ops) on CPU
tensors; the launch layer itself against recording stand-ins for the C launches; and
the autograd functions' algebra (first and second order) checked in float64."""

from __future__ import annotations

import copy
import io
import json
import pickle
import types
import warnings

import pytest

from conftest import torch_or_skip

gjt, torch = torch_or_skip()

import gridjit  # noqa: E402
from gridjit import _capi, _pcg, _torch_launch  # noqa: E402
from torch_reference import Reference, ReferenceOps, run_on_the_cpu  # noqa: E402

HASH = {"otype": "HashGrid", "n_levels": 3, "log2_hashmap_size": 6, "base_resolution": 4, "per_level_scale": 1.5}

cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only paths (no CUDA here)")


# ----------------------------------------------------------------------------- a CPU backend


@pytest.fixture
def cpu_backend(monkeypatch):
    """attach(encoding) moves the encoding to the CPU and makes it run on CPU tensors through
    ReferenceOps (in the encoding's precision, fp32 gradients, as the real modules) and
    returns those ops. CPU input is then taken as it is instead of being moved to CUDA."""
    monkeypatch.setattr(gjt, "_cpu_input", lambda x, params: x)

    def attach(encoding):
        encoding.cpu()  # made on the current CUDA device where there is one
        return run_on_the_cpu(encoding)

    return attach


def points(n=16, dims=2, seed=0):
    return torch.rand(n, dims, generator=torch.Generator().manual_seed(seed))


def reference_grads(enc, x, dy):
    """y and dL/dparams of the reference in float64, at the parameters rounded to the
    module's precision (what the kernels read)."""
    reference = Reference(enc._native.encoding)
    p = enc.params.detach().to(enc.dtype).double().requires_grad_(True)
    y = reference.forward(x, p)
    (g,) = torch.autograd.grad(y, p, dy.double())
    return y.detach(), g


# ----------------------------------------------------------------------------- construction


@pytest.mark.parametrize("dtype", [torch.half, torch.float, None])
def test_parameters_are_fp32_whatever_the_dtype(dtype):
    enc = gjt.Encoding(3, {"otype": "HashGrid", "n_levels": 4, "log2_hashmap_size": 10}, seed=7, dtype=dtype)
    assert isinstance(enc.params, torch.nn.Parameter) and enc.params.requires_grad
    assert enc.params.dtype == torch.float32 and enc.params.shape == (enc.n_params,)
    assert [name for name, _ in enc.named_parameters()] == ["params"]
    state = enc.state_dict()
    assert list(state) == ["params"] and state["params"].dtype == torch.float32
    expected = dtype or gjt._preferred_dtype()
    assert enc.dtype == expected
    assert enc.hyperparams["precision"] == {torch.half: "fp16", torch.float: "fp32"}[expected]
    assert enc.loss_scale == (128.0 if expected == torch.half else 1.0)


def test_construction_like_tinycudann():
    enc = gjt.Encoding(3, {"otype": "HashGrid", "n_levels": 4, "log2_hashmap_size": 10}, seed=7, dtype=torch.float)
    assert enc.n_input_dims == 3 and enc.n_output_dims == 8 and enc.seed == 7
    layout = gridjit.Encoding({"otype": "HashGrid", "n_levels": 4, "log2_hashmap_size": 10}, 3)
    assert enc.n_params == layout.n_params and enc.levels == layout.levels
    assert isinstance(enc, gjt.Module) and isinstance(enc, torch.nn.Module)
    assert enc.params.detach().abs().max().item() <= 1e-4
    text = repr(enc)
    assert text.startswith("Encoding(n_input_dims=3, n_output_dims=8, seed=7, dtype=torch.float32, hyperparams={")
    assert "'otype': 'HashGrid'" in text


@cpu_only
def test_preferred_precision_without_cuda_is_fp32():
    assert gjt._preferred_dtype() == torch.float
    assert gjt.Encoding(2, HASH).dtype == torch.float


def test_bad_dtype():
    with pytest.raises(ValueError, match="fp32 or fp16"):
        gjt.Encoding(2, HASH, dtype=torch.float64)


def test_conflicting_precision_warns_and_dtype_wins():
    with pytest.warns(UserWarning, match=r'"precision": \'fp32\' but dtype is torch.float16') as record:
        enc = gjt.Encoding(2, dict(HASH, precision="fp32"), dtype=torch.half)
    assert enc.hyperparams["precision"] == "fp16"
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gjt.Encoding(2, dict(HASH, precision="FP32"), dtype=torch.float).dtype == torch.float32


def test_unknown_keys_warn_with_the_key_and_a_suggestion():
    with pytest.warns(UserWarning) as record:
        enc = gjt.Encoding(2, {"otype": "HashGrid", "n_levls": 2, "some_tcnn_key": True, "n_levels": 3})
    messages = [str(w.message) for w in record]
    assert len(messages) == 2, messages
    assert any("n_levls" in m and "did you mean 'n_levels'" in m for m in messages), messages
    assert any("some_tcnn_key" in m for m in messages), messages
    assert all(w.filename == __file__ for w in record), [w.filename for w in record]
    assert enc.hyperparams["n_levels"] == 3 and "n_levls" not in enc.hyperparams
    # The strict parser (gridjit.Encoding) still refuses them.
    with pytest.raises(gridjit.InvalidConfigError, match="n_levls"):
        gridjit.Encoding({"otype": "HashGrid", "n_levls": 2}, 2)


def test_known_configurations_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gjt.Encoding(3, {"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 2, "log2_hashmap_size": 19,
                         "base_resolution": 16, "per_level_scale": 2.0, "interpolation": "Linear"})


def test_bad_values_still_raise():
    with pytest.raises(gridjit.InvalidConfigError, match="n_levels"):
        gjt.Encoding(2, {"otype": "HashGrid", "n_levels": -1})
    with pytest.raises(gridjit.InvalidConfigError, match="otype"):
        gjt.Encoding(2, {"otype": "Frequency"})


@pytest.mark.parametrize(
    "otype, grid",
    [("Grid", "Hash"), ("HashGrid", "Hash"), ("hashgrid", "Hash"), ("DenseGrid", "Dense"), ("DENSEGRID", "Dense"),
     ("TiledGrid", "Tiled"), ("tiledgrid", "Tiled")],
)
def test_otype_spellings_tinycudann_accepts(otype, grid):
    enc = gjt.Encoding(2, {"otype": otype, "n_levels": 2, "base_resolution": 4}, dtype=torch.float)
    assert enc._native.encoding.grid_type == grid


@cpu_only
def test_cpu_initialisation_matches_the_formula():
    a = gjt.Encoding(2, HASH, seed=1337, dtype=torch.float)
    b = gjt.Encoding(2, HASH, seed=1337, dtype=torch.half)
    c = gjt.Encoding(2, HASH, seed=42, dtype=torch.float)
    assert a.params.device.type == "cpu"
    assert torch.equal(a.params, b.params) and not torch.equal(a.params, c.params)
    values = a.params.detach()
    assert torch.equal(values, torch.from_numpy(_pcg.init_params(a.n_params, 1337)))
    assert values.abs().max() <= 1e-4 and values.min() < -5e-5 and values.max() > 5e-5


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


# ----------------------------------------------------------------------------- tinycudann's surface


def test_module_level_functions():
    assert gjt.supports_jit_fusion() is torch.cuda.is_available()
    for name in ("supports_jit_fusion", "free_temporary_memory", "NetworkWithInputEncoding", "Network", "Encoding"):
        assert name in gjt.__all__ and hasattr(gjt, name)


@pytest.mark.parametrize("cuda", [False, True], ids=["without-cuda", "with-cuda"])
def test_jit_fusion_property(monkeypatch, cuda):
    # The generated kernels are the only path: jit_fusion is whether they can run (CUDA), and
    # setting the other value warns once (tinycudann's sample prints "JIT fusion is enabled"
    # after `model.jit_fusion = tcnn.supports_jit_fusion()`).
    monkeypatch.setattr(gjt, "_jit_fusion_warned", False)
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert gjt.supports_jit_fusion() is cuda
    assert enc.jit_fusion is cuda
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc.jit_fusion = gjt.supports_jit_fusion()  # silent: what it is
    with pytest.warns(UserWarning, match="setting jit_fusion has no effect") as record:
        enc.jit_fusion = not cuda
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc.jit_fusion = not cuda  # once only
    assert enc.jit_fusion is cuda
    with pytest.raises(AttributeError, match="can not be deleted"):
        del enc.jit_fusion


def test_free_temporary_memory_drops_the_parameter_copies(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    cpu_backend(enc)
    enc(points())
    assert enc._cast is not None
    gjt.free_temporary_memory()
    assert enc._cast is None
    enc(points())
    assert enc._cast is not None


# ----------------------------------------------------------------------------- input


@cpu_only
def test_cpu_input_is_moved_with_tinycudanns_warning():
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    with pytest.warns(UserWarning, match="input must be a CUDA tensor, but isn't") as record:
        with pytest.raises((RuntimeError, AssertionError)):  # .cuda() fails: no GPU here
            enc(torch.rand(4, 2))
    assert record[0].filename == __file__


def test_wrong_shape_dtype_and_type_are_refused(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    cpu_backend(enc)
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


def test_input_of_another_dtype_or_layout_is_converted(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    cpu_backend(enc)
    x = points(8)
    y = enc(x)
    assert torch.equal(enc(x.double()), y)
    assert torch.equal(enc(x.t().contiguous().t()), y)  # a non-contiguous view
    x64 = x.double().requires_grad_(True)
    (dx,) = torch.autograd.grad(enc(x64).sum(), x64)
    assert dx.dtype == torch.float64


# ----------------------------------------------------------------------------- parameters and their fp16 copy


def test_fp32_modules_read_the_parameters_directly(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.float)
    ops = cpu_backend(enc)
    enc(points())
    assert ops.calls[-1][1] is enc.params and enc._cast is None


def test_fp16_copy_is_made_once_and_again_after_each_change(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    ops = cpu_backend(enc)
    x = points()

    def kernel_params():
        enc(x)
        used = ops.calls[-1][1]
        assert used.dtype == torch.half and torch.equal(used, enc.params.detach().half())
        return used

    first = kernel_params()
    assert kernel_params() is first  # unchanged parameters: the same copy
    with torch.no_grad():
        enc.params.add_(1e-3)  # bumps the version
    second = kernel_params()
    assert second is not first
    optimizer = torch.optim.SGD(enc.parameters(), lr=0.5)
    enc(x).float().sum().backward()
    optimizer.step()
    third = kernel_params()
    assert third is not second
    enc.load_state_dict({"params": torch.full((enc.n_params,), 0.25)})
    fourth = kernel_params()
    assert fourth is not third and (fourth == 0.25).all()
    with torch.no_grad():
        enc.params.copy_(torch.full((enc.n_params,), 0.5))
    assert (kernel_params() == 0.5).all()
    # The documented limit: .data does not bump the version; params_changed() says so.
    enc.params.data.fill_(0.75)
    enc(x)
    assert (ops.calls[-1][1] == 0.5).all()
    enc.params_changed()
    assert (kernel_params() == 0.75).all()
    # Moving or converting the module (nn.Module._apply) drops the copy too.
    enc.float()
    assert enc._cast is None


def test_replaced_parameter_data_is_not_mistaken_for_the_cached_one(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    ops = cpu_backend(enc)
    enc(points())
    enc.params.data = torch.full((enc.n_params,), 0.125)  # a new tensor, version counter kept
    enc(points())
    assert (ops.calls[-1][1] == 0.125).all()


def test_optimizer_steps_that_do_not_bump_the_version_are_seen(cpu_backend):
    """Fused optimizers update in place without bumping the version counter: the global
    step hook drops the copy of the encodings whose parameters they hold, only those."""
    a = gjt.Encoding(2, HASH, dtype=torch.half)
    b = gjt.Encoding(2, HASH, dtype=torch.half)
    ops_a, ops_b = cpu_backend(a), cpu_backend(b)
    x = points()
    a(x), b(x)
    copy_b = b._cast
    optimizer = torch.optim.Adam(a.parameters(), lr=0.1, fused=True)
    a(x).float().sum().backward()
    optimizer.step()
    assert a._cast is None and b._cast is copy_b
    a(x)
    assert torch.equal(ops_a.calls[-1][1], a.params.detach().half())
    del ops_b


def test_a_data_parallel_replica_reads_its_own_parameter_copy(cpu_backend):
    """DataParallel's replicas hold their parameters as plain tensors (copies broadcast from
    the original, non-leaf): the replica casts its own, and gradients reach the original."""
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    ops = cpu_backend(enc)
    x = points()
    enc(x)
    replica = enc._replicate_for_data_parallel()
    copied = enc.params * 1.0 + 0.5  # what Broadcast would give, shifted to tell them apart
    setattr(replica, "params", copied)
    y = replica(x)
    assert torch.equal(ops.calls[-1][1], copied.detach().half()) and enc._cast[3] is not replica._cast[3]
    (g,) = torch.autograd.grad(y.float().sum(), enc.params)
    assert g.dtype == torch.float32 and g.abs().sum() > 0


def test_no_grad_forward_skips_autograd(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    cpu_backend(enc)
    x = points()
    with torch.no_grad():
        y = enc(x)
    assert y.grad_fn is None and y.dtype == torch.half
    enc.params.requires_grad_(False)
    assert enc(x).grad_fn is None
    assert enc(x.clone().requires_grad_(True)).grad_fn is not None
    enc.params.requires_grad_(True)
    y = enc(x)
    assert type(y.grad_fn).__name__ == "_EncodeFunctionBackward"


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("dtype", [torch.half, torch.float])
def test_gradients_are_fp32_and_unscaled(cpu_backend, dtype):
    enc = gjt.Encoding(2, HASH, dtype=dtype)
    cpu_backend(enc)
    with torch.no_grad():
        enc.params.copy_(torch.rand(enc.n_params, generator=torch.Generator().manual_seed(1)) * 2 - 1)
    x = points(64)
    dy = torch.rand(64, enc.n_output_dims, generator=torch.Generator().manual_seed(2)).to(dtype)
    y = enc(x)
    assert y.dtype == dtype
    y.backward(dy)
    ref_y, ref_g = reference_grads(enc, x, dy)
    assert enc.params.grad.dtype == torch.float32
    # The reference's float64 gradient rounded once to fp32: not scaled by loss_scale.
    assert torch.equal(enc.params.grad, ref_g.float())
    assert torch.equal(y, ref_y.to(dtype))


def test_second_order_gradients_reach_the_fp32_parameters(cpu_backend):
    """An eikonal loss (autograd.grad with create_graph) through an fp16 module: dL/dparams
    in fp32, equal to the reference's at the fp16 parameters."""
    enc = gjt.Encoding(2, dict(HASH, interpolation="Smoothstep"), dtype=torch.half)
    cpu_backend(enc)
    with torch.no_grad():
        enc.params.copy_(torch.rand(enc.n_params, generator=torch.Generator().manual_seed(3)) * 2 - 1)
    weights = torch.rand(enc.n_output_dims, generator=torch.Generator().manual_seed(4))

    def eikonal(forward, params):
        x = points(32, seed=5).requires_grad_(True)
        y = forward(x, params)
        (dx,) = torch.autograd.grad((y.double() * weights).sum(), x, create_graph=True)
        loss = ((dx.norm(dim=1) - 1) ** 2).mean()
        return torch.autograd.grad(loss, params)[0]

    ours = eikonal(lambda x, p: enc(x), enc.params)
    reference = Reference(enc._native.encoding)
    p = enc.params.detach().half().double().requires_grad_(True)
    theirs = eikonal(lambda x, q: reference.forward(x.double(), q).half().double(), p)
    assert ours.dtype == torch.float32
    assert theirs.abs().max() > 0
    torch.testing.assert_close(ours.double(), theirs, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda p: torch.optim.Adam(p, lr=1e-2),
        lambda p: torch.optim.Adam(p, lr=1e-2, foreach=False),
        lambda p: torch.optim.Adam(p, lr=1e-2, fused=True),
        lambda p: torch.optim.AdamW(p, lr=1e-2),
        lambda p: torch.optim.SGD(p, lr=1.0, momentum=0.9),
    ],
    ids=["adam", "adam-for-loop", "adam-fused", "adamw", "sgd"],
)
def test_stock_optimisers_train_an_fp16_module(cpu_backend, make_optimizer):
    """Default Adam (eps 1e-8) on fp32 parameters and fp32 gradients: finite, the loss
    falls, and every step's forward reads the updated parameters."""
    torch.manual_seed(0)
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    ops = cpu_backend(enc)
    head = torch.nn.Linear(enc.n_output_dims, 1)
    optimizer = make_optimizer(list(enc.parameters()) + list(head.parameters()))
    x = points(256, seed=6)
    target = torch.sin(6 * x[:, :1]) * torch.cos(4 * x[:, 1:])
    losses = []
    for _ in range(30):
        loss = torch.nn.functional.mse_loss(head(enc(x).float()), target)
        optimizer.zero_grad()
        loss.backward()
        assert enc.params.grad.dtype == torch.float32 and torch.isfinite(enc.params.grad).all()
        optimizer.step()
        losses.append(loss.item())
    enc(x)
    assert torch.equal(ops.calls[-1][1], enc.params.detach().half())  # the copy follows the steps
    assert all(torch.isfinite(torch.tensor(losses)))
    moments = [v for v in optimizer.state[enc.params].values() if v.shape == enc.params.shape]
    assert moments and all(v.dtype == torch.float32 for v in moments)
    assert losses[-1] < 0.5 * losses[0], losses


def test_grad_scaler_unscales_the_fp32_gradients(cpu_backend):
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    cpu_backend(enc)
    optimizer = torch.optim.Adam(enc.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    x = points(64)
    before = enc.params.detach().clone()
    loss = enc(x).float().square().mean()
    scaler.scale(loss).backward()
    scaled = enc.params.grad.clone()
    scaler.unscale_(optimizer)  # refuses fp16 gradients ("Attempting to unscale FP16 gradients")
    torch.testing.assert_close(enc.params.grad * 2.0**10, scaled)
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**10  # no inf/NaN found
    assert not torch.equal(enc.params.detach(), before)


# ----------------------------------------------------------------------------- checkpoints and copies


def test_state_dict_round_trip_and_foreign_checkpoints(cpu_backend):
    enc = gjt.Encoding(2, HASH, seed=3, dtype=torch.half)
    ops = cpu_backend(enc)
    x = points()
    with torch.no_grad():
        enc.params.copy_(torch.rand(enc.n_params, generator=torch.Generator().manual_seed(7)))
    state = enc.state_dict()
    assert state["params"].dtype == torch.float32
    other = gjt.Encoding(2, HASH, seed=4, dtype=torch.half)
    cpu_backend(other)
    other.load_state_dict(state)
    assert torch.equal(other.params, enc.params) and torch.equal(other(x), enc(x))
    # A tinycudann Encoding's checkpoint: {"params": fp32 tensor of n_params}.
    tcnn_state = {"params": torch.linspace(-1, 1, enc.n_params, dtype=torch.float32)}
    other.load_state_dict(tcnn_state)
    assert torch.equal(other.params.detach(), tcnn_state["params"])
    # An fp16 checkpoint of an older gridjit: loaded exactly (fp16 values are fp32 values).
    old_state = {"params": torch.linspace(-1, 1, enc.n_params).half()}
    other.load_state_dict(old_state)
    assert other.params.dtype == torch.float32 and torch.equal(other.params.detach(), old_state["params"].float())
    other(x)
    assert torch.equal(other._native._ops[-1].calls[-1][1], old_state["params"])
    del ops


def test_copies_and_pickles_carry_no_native_objects(cpu_backend):
    enc = gjt.Encoding(2, HASH, seed=3, dtype=torch.half)
    cpu_backend(enc)
    enc(points())
    assert enc._cast is not None
    clone = copy.deepcopy(enc)
    assert torch.equal(clone.params, enc.params) and clone.params is not enc.params
    assert clone._cast is None and clone._native is enc._native
    buffer = io.BytesIO()
    torch.save(enc, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert torch.equal(loaded.params, enc.params) and loaded.hyperparams == enc.hyperparams
    assert loaded.dtype == torch.half and loaded._cast is None
    data = pickle.dumps(enc)
    assert b"CDLL" not in data and b"c_void_p" not in data and b"ReferenceOps" not in data
    again = pickle.loads(data)
    assert again.n_params == enc.n_params and again.levels == enc.levels
    assert again._native._ops == {}  # launch layers are made again on first use
    cpu_backend(again)
    assert torch.equal(again(points()), enc(points()))


def test_pickled_configuration_is_canonical_and_warns_no_more():
    with pytest.warns(UserWarning, match="unknown_key"):
        enc = gjt.Encoding(2, dict(HASH, unknown_key=1), dtype=torch.float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = pickle.loads(pickle.dumps(enc))
    assert again.hyperparams == enc.hyperparams


# ----------------------------------------------------------------------------- torch.compile


def test_torch_compile_runs_the_encoding_eagerly(cpu_backend):
    """A model holding the encoding, compiled (aot_eager backend: no C++ toolchain needed):
    the encoding is a graph break; outputs and gradients equal eager mode's."""
    torch.manual_seed(0)
    enc = gjt.Encoding(2, HASH, dtype=torch.half)
    cpu_backend(enc)
    model = torch.nn.Sequential(enc, torch.nn.Linear(enc.n_output_dims, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    model[1].to(torch.half)
    model[3].to(torch.half)
    x = points(64)
    eager = model(x)
    grads = torch.autograd.grad(eager.float().sum(), list(model.parameters()))
    compiled = torch.compile(model, backend="aot_eager")
    out = compiled(x)
    assert torch.equal(out, eager)
    for a, b in zip(torch.autograd.grad(out.float().sum(), list(model.parameters())), grads):
        assert torch.equal(a, b)


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


def _apply(ops, x, params, kernel_params, mlpp=None):
    """kernel_params: "same" passes params itself (an fp32 module), "alias" a detached alias
    (the fp16 path: the kernels read another tensor, gradients go to params)."""
    kparams = params if kernel_params == "same" else params.detach()
    return gjt._EncodeFunction.apply(ops, x, params, kparams, mlpp, 1.0, False)


@pytest.mark.parametrize("config", CONFIGS, ids=["hash", "dense", "tiled-smoothstep", "nearest"])
@pytest.mark.parametrize("kernel_params", ["same", "alias"])
def test_autograd_functions_first_and_second_order(config, kernel_params):
    ops, x, params = _ops_and_inputs(config)

    def f(x, params):
        return _apply(ops, x, params, kernel_params)

    assert torch.autograd.gradcheck(f, (x, params))
    assert torch.autograd.gradgradcheck(f, (x, params))


def test_autograd_with_per_point_max_level():
    ops, x, params = _ops_and_inputs(HASH, seed=1)
    mlpp = torch.tensor([0.0, 0.2, 0.5, 0.7, 1.0, 0.34], dtype=torch.float32)

    def f(x, params):
        return _apply(ops, x, params, "same", mlpp)

    y = f(x, params)
    assert (y[0, 2:] == 0).all() and (y[4] != 0).all()  # m = 0 keeps level 0 only
    assert torch.autograd.gradcheck(f, (x, params))
    assert torch.autograd.gradgradcheck(f, (x, params))


@pytest.mark.parametrize("kernel_params", ["same", "alias"])
def test_eikonal_style_second_order_matches_the_reference(kernel_params):
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

    ours = loss_of(lambda x_, p_: _apply(ops, x_, p_, kernel_params))
    theirs = loss_of(lambda x_, p_: reference.forward(x_, p_))
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)
        assert b.abs().max() > 0


def test_a_backward_pass_computes_only_the_gradients_it_uses():
    """torch.autograd.grad(y, x, create_graph=True), an eikonal term's pass, uses dL/dx
    only: the parameters' gradient (a pass over every point and level, and a buffer of
    every parameter) is left out. A later pass computes what it uses: both for a loss on
    y and dL/dx with respect to (x, params), only dL/dparams with respect to params. The
    results are the reference's either way."""
    ops, x, params = _ops_and_inputs(HASH, seed=3)
    asked = []
    backward = ops.backward

    def spy(x_, p_, mlpp, ml, dy, want_dx, want_dparams, stochastic):
        asked.append((want_dx, want_dparams))
        return backward(x_, p_, mlpp, ml, dy, want_dx, want_dparams, stochastic)

    ops.backward = spy

    def grads(forward):
        y = forward(x, params)
        (dx,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        loss = ((dx.norm(dim=1) - 1) ** 2).sum() + y.square().sum()
        return torch.autograd.grad(loss, (x, params))

    ours = grads(lambda x_, p_: _apply(ops, x_, p_, "alias"))
    assert asked == [(True, False), (True, True)]
    theirs = grads(lambda x_, p_: ops.reference.forward(x_, p_))
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12) and b.abs().max() > 0
    asked.clear()
    (g,) = torch.autograd.grad(_apply(ops, x, params, "alias").sum(), params)
    assert asked == [(False, True)] and g.abs().max() > 0


def test_backward_with_no_gradient_needed_returns_nothing():
    ops, x, params = _ops_and_inputs(HASH)
    y = _apply(ops, x.detach(), params, "same")
    (g,) = torch.autograd.grad(y.sum(), params)
    assert g.shape == params.shape and g.abs().sum() > 0


# ----------------------------------------------------------------------------- the launch layer


@pytest.fixture
def fake_launches(monkeypatch):
    """gridjit.torch's launch layer (gridjit._torch_launch._Ops) on CPU tensors with the C
    launch functions replaced by recorders: checks which descriptor fields the per-call
    path sets, the handles and streams it passes, and its error path, without a GPU."""
    import contextlib

    records = []
    status = {"value": 0}

    def recorder(name):
        def fn(handle, stream, desc_ref):
            desc = desc_ref._obj
            fields = {field: getattr(desc, field) for field, _ in desc._fields_}
            records.append((name, handle, stream, fields))
            return status["value"]

        return fn

    for name in ("gj_forward", "gj_backward", "gj_backward_backward"):
        monkeypatch.setattr(_capi.lib, name, recorder(name))
    handles = {False: types.SimpleNamespace(handle=0x1000), True: types.SimpleNamespace(handle=0x2000)}
    monkeypatch.setattr(gjt._Native, "module", lambda self, index, stochastic: handles[bool(stochastic)])
    stream = {"raw": 0x7777, "device": 0}
    monkeypatch.setattr(_torch_launch, "_raw_stream", lambda index: stream["raw"])
    monkeypatch.setattr(_torch_launch, "_current_device", lambda: stream["device"])
    switched = []

    @contextlib.contextmanager
    def device(index):
        switched.append(index)
        yield

    monkeypatch.setattr(torch.cuda, "device", device)

    def make(dtype=torch.half):
        native = gjt._Native(2, json.dumps(dict(HASH, precision={torch.half: "fp16", torch.float: "fp32"}[dtype])),
                             dtype)
        ops = _torch_launch._Ops(native, 0)
        ops.device = torch.device("cpu")  # tensors on the CPU; the fake launches only read pointers
        ops._local.descriptors = _torch_launch._Descriptors()
        return ops

    return types.SimpleNamespace(make=make, records=records, status=status, stream=stream, switched=switched)


def test_launch_layer_sets_every_pointer_per_call(fake_launches):
    ops = fake_launches.make()
    x = torch.rand(5, 2)
    params = torch.rand(ops.n_params).half()
    mlpp = torch.rand(5)
    y = ops.forward(x, params, None, 0.5)
    assert y.shape == (5, ops.width) and y.dtype == torch.half
    name, handle, stream, d = fake_launches.records[-1]
    assert (name, handle, stream) == ("gj_forward", 0x1000, 0x7777)
    assert d["n"] == 5 and d["x"] == x.data_ptr() and d["params"] == params.data_ptr() and d["y"] == y.data_ptr()
    assert d["max_level"] == 0.5 and d["max_level_per_point"] is None and d["dy_dx"] is None
    ops.forward(x, params, mlpp, 1.0)
    assert fake_launches.records[-1][3]["max_level_per_point"] == mlpp.data_ptr()

    dy = torch.rand(5, ops.width).half()
    dx, dparams = ops.backward(x, params, None, 1.0, dy, True, True, True)
    name, handle, _, d = fake_launches.records[-1]
    assert (name, handle) == ("gj_backward", 0x2000)  # stochastic: the stochastic module
    assert dparams.dtype == torch.float32 and dparams.shape == (ops.n_params,) and dx.dtype == torch.float32
    assert d["dL_dy"] == dy.data_ptr() and d["dL_dparams"] == dparams.data_ptr() and d["dL_dx"] == dx.data_ptr()
    assert d["dL_dparams_mode"] == _capi.GRAD_OVERWRITE and d["max_level_per_point"] is None
    dx, dparams = ops.backward(x, params, mlpp, 1.0, dy, False, True, False)
    name, handle, _, d = fake_launches.records[-1]
    assert handle == 0x1000 and dx is None and d["dL_dx"] is None and d["max_level_per_point"] == mlpp.data_ptr()

    h = torch.rand(5, 2)
    dparams, ddy, dxx = ops.backward_backward(x, params, None, 1.0, h, dy, True, True, True)
    name, handle, _, d = fake_launches.records[-1]
    assert (name, handle) == ("gj_backward_backward", 0x1000)
    assert dparams.dtype == torch.float32 and ddy.dtype == torch.half and dxx.dtype == torch.float32
    assert d["dL_ddLdx"] == h.data_ptr() and d["dL_dy"] == dy.data_ptr()
    assert (d["dL_dparams"], d["dL_ddLdy"], d["dL_dx"]) == (dparams.data_ptr(), ddy.data_ptr(), dxx.data_ptr())
    dparams, ddy, dxx = ops.backward_backward(x, params, None, 1.0, h, dy, False, True, False)
    d = fake_launches.records[-1][3]
    assert d["dL_dparams"] is None and d["dL_dx"] is None and dparams is None and dxx is None

    count = len(fake_launches.records)
    dx, dparams = ops.backward(x[:0], params, None, 1.0, dy[:0], True, True, False)
    assert len(fake_launches.records) == count  # n = 0: nothing launched
    assert dparams.dtype == torch.float32 and (dparams == 0).all() and dx.shape == (0, 2)
    assert fake_launches.switched == []


def test_launch_layer_switches_device_only_for_the_legacy_stream_of_another_device(fake_launches):
    ops = fake_launches.make(torch.float)
    x, params = torch.rand(3, 2), torch.rand(ops.n_params)
    fake_launches.stream.update(raw=0, device=0)  # legacy stream, current device: direct
    ops.forward(x, params, None, 1.0)
    assert fake_launches.records[-1][2] == 0 and fake_launches.switched == []
    fake_launches.stream.update(raw=0, device=1)  # legacy stream of another device: switch
    ops.forward(x, params, None, 1.0)
    assert fake_launches.records[-1][2] is None and fake_launches.switched == [0]
    fake_launches.stream.update(raw=0x42, device=1)  # a stream carries its context: direct
    ops.forward(x, params, None, 1.0)
    assert fake_launches.records[-1][2] == 0x42 and fake_launches.switched == [0]


def test_launch_layer_raises_the_status_error_with_the_call(fake_launches):
    ops = fake_launches.make()
    fake_launches.status["value"] = 1  # GJ_ERROR_INVALID_ARGUMENT
    with pytest.raises(gridjit.InvalidArgumentError) as info:
        ops.forward(torch.rand(3, 2), torch.rand(ops.n_params).half(), None, 1.0)
    assert info.value.call == "gj_forward"


# ----------------------------------------------------------------------------- programs compiled ahead

SMALL_GRID = {"otype": "HashGrid", "n_levels": 2, "n_features_per_level": 2, "log2_hashmap_size": 8,
              "base_resolution": 4}
SMALL_MLP = {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}


def _wait_idle(worker):
    """Until the precompiler's thread has emptied its queue and ended (at most 5 s)."""
    import time

    for _ in range(500):
        with worker._lock:
            if worker._thread is None:
                return
        time.sleep(0.01)
    raise AssertionError("the precompiler did not finish its jobs")


def test_the_precompiler_compiles_each_key_once_in_the_background():
    import threading

    calls, gate = [], threading.Event()

    def job(name, fail=False):
        def compile_():
            if name == "first":
                gate.wait(5)
            calls.append(name)
            if fail:
                raise gridjit.GridJitError("NVRTC failed")

        return name, compile_

    worker = gjt._Precompiler()
    worker.submit([job("first")])
    # Queued behind the first job; a key submitted twice is compiled once; a failure is dropped.
    worker.submit([job("failing", fail=True), job("other"), job("other")])
    assert calls == []  # the caller did not wait
    gate.set()
    _wait_idle(worker)
    assert calls == ["first", "failing", "other"]
    worker.submit([job("again")])  # the thread starts again for later work
    _wait_idle(worker)
    assert calls[-1] == "again"
    worker.close()
    worker.submit([job("late")])  # closed: nothing more
    worker.close()
    assert calls[-1] == "again" and worker._thread is None


def test_close_drops_the_queue_and_waits_for_the_job_under_way():
    import threading

    calls, started, gate = [], threading.Event(), threading.Event()

    def slow():
        started.set()
        gate.wait(5)
        calls.append("slow")

    worker = gjt._Precompiler()
    worker.submit([("slow", slow), ("queued", lambda: calls.append("queued"))])
    assert started.wait(5)
    threading.Timer(0.05, gate.set).start()
    worker.close()  # returns once the slow job is done; the queued one never runs
    assert calls == ["slow"] and worker._thread is None


@pytest.fixture
def submitted(monkeypatch):
    """The jobs modules ask the precompiler for, on a device of compute capability 9.0, when
    asked by the test: CUDA reads as unavailable, so that construction asks nothing on a GPU
    host either (and puts the parameters on the CPU)."""
    jobs = []
    monkeypatch.setattr(gjt, "_precompiler", types.SimpleNamespace(submit=jobs.extend))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: (9, 0))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    return jobs


def test_an_encoding_asks_for_its_programs_for_its_device(submitted, monkeypatch):
    enc = gjt.Encoding(3, SMALL_GRID, dtype=torch.float)  # no CUDA (the fixture): construction asks nothing
    assert submitted == []
    enc._native.precompile_soon(0)
    (key, compile_), = submitted
    assert key[0] == "encoding" and key[1] == enc._native.exact_encoding.hyperparams_json and key[-1] == "sm_90"
    calls = []
    monkeypatch.setattr(type(enc._native.exact_encoding), "precompile",
                        lambda self, arch, options: calls.append((self, arch, options.gradients_fp32)))
    compile_()
    assert calls == [(enc._native.exact_encoding, "sm_90", True)]
    # A stochastic encoding's modules are two: the exact one and the sampling one.
    stochastic = gjt.Encoding(3, dict(SMALL_GRID, stochastic_interpolation=True), dtype=torch.float)
    submitted.clear()
    stochastic._native.precompile_soon(0)
    assert len({key for key, _ in submitted}) == 2
    # Off by the environment, or where the device cannot be asked.
    submitted.clear()
    monkeypatch.setenv("GRIDJIT_TORCH_PRECOMPILE", "0")
    enc._native.precompile_soon(0)
    monkeypatch.delenv("GRIDJIT_TORCH_PRECOMPILE")

    def no_device(index):
        raise RuntimeError("no CUDA device")

    monkeypatch.setattr(torch.cuda, "get_device_capability", no_device)
    enc._native.precompile_soon(0)
    assert submitted == []


def test_networks_and_models_ask_for_the_programs_their_launches_use(submitted, monkeypatch):
    calls = []
    monkeypatch.setattr(gridjit.Network, "precompile", lambda self, arch: calls.append((self, arch)))
    net = gjt.Network(3, 2, SMALL_MLP)
    net._native.precompile_soon(0)
    for _, compile_ in submitted:
        compile_()
    assert calls == [(net._native.mlp, "sm_90")]  # the network alone
    submitted.clear()
    calls.clear()
    model = gjt.NetworkWithInputEncoding(3, 2, SMALL_GRID, SMALL_MLP)
    model._native.precompile_soon(0)
    for _, compile_ in submitted:
        compile_()
    assert calls == [(model._native.model, "sm_90")]  # the fused model's module
    submitted.clear()
    calls.clear()
    stochastic = gjt.NetworkWithInputEncoding(3, 2, dict(SMALL_GRID, stochastic_interpolation=True), SMALL_MLP)
    stochastic._native.precompile_soon(0)
    keys = [key[0] for key, _ in submitted]
    assert keys == ["network", "encoding", "encoding"]  # the composed path: network part, both encodings
