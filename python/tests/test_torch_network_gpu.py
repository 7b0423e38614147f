"""gridjit.torch.Network and NetworkWithInputEncoding on a GPU, against a pure-torch MLP
built from the same parameters (network_reference.mlp, itself checked against the C
reference on the CPU): the initialisation, outputs and gradients for several shapes and
batch sizes, a model against Encoding + the torch MLP, a short Adam run, a CUDA graph of a
training step, torch.compile, state_dict. Quick (small grids, batches up to 2^14).

The kernels round activations and gradients to fp16 between layers (as tiny-cuda-nn's):
outputs are compared with a tolerance relative to the output's scale, gradients by
relative norm. A wrong layout, a missing loss scale or a misrouted gradient gives errors of
order 1, far above them.

Skips (visibly) without CUDA. Run from the repository root with the built package on
PYTHONPATH, e.g.: PYTHONPATH=python/src GRIDJIT_LIBRARY=build/libgridjit.so.0 python3 -m
pytest python/tests/test_torch_network_gpu.py -q -rs
"""

from __future__ import annotations

import math
import warnings

import pytest

from conftest import eager_copy, torch_or_skip

gjt, torch = torch_or_skip(needs_cuda=True)

from gridjit import _pcg  # noqa: E402
from network_reference import mlp  # noqa: E402

DEVICE = torch.device("cuda", 0)
GRID = {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2, "log2_hashmap_size": 14, "base_resolution": 8,
        "per_level_scale": 1.5}
MLP64 = {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2, "activation": "ReLU"}


def rel_max(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| relative to max |b| (the output's scale)."""
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-6))


def rel_norm(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def net_reference(net, x, params=None):
    """The network in float64 at its fp16-rounded parameters (what the kernels read)."""
    native = net._native
    p = net.params.detach().half().double() if params is None else params
    return mlp(native.mlp.layers, p, x.double(), net.n_output_dims, native.mlp.input_padding)


# ----------------------------------------------------------------------------- initialisation


def test_gpu_initialisation_equals_the_cpu_rule():
    """gj_network_init_params on the GPU and the numpy rule (used without CUDA, and checked
    against tools/reference bit for bit on the CPU) give the same floats."""
    for config in (MLP64, dict(MLP64, activation="Sine", n_neurons=32)):
        net = gjt.Network(3, 2, config, seed=123)
        assert net.params.is_cuda and net.params.dtype == torch.float32
        expected = _pcg.network_init_params(net._native.mlp.layers, config["activation"] == "Sine", 123)
        assert torch.equal(net.params.detach().cpu(), torch.from_numpy(expected)), config
    model = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP64, seed=5)
    n_mlp = model.n_mlp_params
    expected = _pcg.network_init_params(model._native.mlp.layers, False, 5)
    assert torch.equal(model.params.detach()[:n_mlp].cpu(), torch.from_numpy(expected))
    encoding = torch.from_numpy(_pcg.init_params(model.n_params - n_mlp, 5))
    assert torch.equal(model.params.detach()[n_mlp:].cpu(), encoding)


# ----------------------------------------------------------------------------- a network alone

SHAPES = [
    (3, 1, MLP64),
    (5, 4, {"otype": "FullyFusedMLP", "n_neurons": 32, "n_hidden_layers": 3, "activation": "Tanh",
            "output_activation": "Sigmoid"}),
    (2, 3, {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 2, "activation": "Sine"}),
    (32, 16, {"otype": "FullyFusedMLP", "n_neurons": 128, "n_hidden_layers": 1, "activation": "SiLU"}),
    (17, 3, {"otype": "CutlassMLP", "n_neurons": 64, "n_hidden_layers": 0}),
    # Outputs wider than the kernels' 128-column chunks, with hidden layers and without.
    # (tiny-cuda-nn's test_random_input.py shape, 3 -> 8 x 128 -> 256, is test_gpu_network's:
    # eight ReLU layers need a reference that rounds h to fp16 between layers, as the C one
    # does; this float64 one lands on the other side of a kink for some points.)
    (3, 256, {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2}),
    (16, 200, {"otype": "CutlassMLP", "n_neurons": 16, "n_hidden_layers": 0, "output_activation": "Sigmoid"}),
]


@pytest.mark.parametrize("n_in, n_out, config", SHAPES, ids=["64x2", "32x3-tanh-sigmoid", "16x2-sine", "128x1-silu",
                                                             "cutlass-0", "64x2-256-outputs", "cutlass-0-200-outputs"])
def test_network_forward_and_backward_against_the_torch_mlp(n_in, n_out, config):
    torch.manual_seed(0)
    net = gjt.Network(n_in, n_out, config)
    for n in (1, 31, 1000):
        x = torch.rand(n, n_in, device=DEVICE, requires_grad=True)
        y = net(x)
        assert y.dtype == torch.float32 and y.shape == (n, n_out)
        xr = x.detach().double().requires_grad_(True)
        p = net.params.detach().half().double().requires_grad_(True)
        y_ref = net_reference(net, xr, p)
        assert rel_max(y, y_ref) < 1e-2, (n, rel_max(y, y_ref))
        with torch.no_grad():  # the inference program
            assert rel_max(net(x), y_ref) < 1e-2, (n, rel_max(net(x), y_ref))
        dy = torch.randn(n, n_out, device=DEVICE) / n  # a mean over the batch: small dL/dy
        net.params.grad = None
        y.backward(dy)
        gp, gx = torch.autograd.grad(y_ref, (p, xr), dy.double())
        assert net.params.grad.dtype == torch.float32
        assert rel_norm(net.params.grad, gp) < 2e-2, (n, rel_norm(net.params.grad, gp))
        assert rel_norm(x.grad, gx) < 2e-2, (n, rel_norm(x.grad, gx))


def test_tiny_output_gradients_survive_thanks_to_the_loss_scale():
    """dL/dy of 1e-6 (a mean over 10^6 points): fp16 deltas of about 1e-7 would be
    subnormal or zero; with tinycudann's loss scale (128) the gradients stay accurate."""
    torch.manual_seed(1)
    net = gjt.Network(3, 1, MLP64)
    x = torch.rand(4096, 3, device=DEVICE)
    y = net(x)
    dy = torch.full_like(y, 1e-6)
    y.backward(dy)
    p = net.params.detach().half().double().requires_grad_(True)
    (gp,) = torch.autograd.grad(net_reference(net, x, p), p, dy.double())
    assert rel_norm(net.params.grad, gp) < 3e-2, rel_norm(net.params.grad, gp)


@pytest.mark.parametrize("kind", ["network", "model"])
def test_fp16_output_gradient_is_read_as_it_is(kind, monkeypatch):
    """dL/dy in fp16 (a loss on the outputs cast to fp16, as tinycudann's users write it) goes
    to the kernels in place (gj_network_pass_desc.dL_doutput_fp16, no conversion to float32):
    the same gradients as the same values handed over as float32: a network's dL/dx bit for
    bit, dL/dparams (and a model's dL/dx, which its encoding's backward sums over levels) up to
    the order in which the kernels' atomics sum them."""
    torch.manual_seed(3)
    if kind == "network":
        net = gjt.Network(3, 16, MLP64)
    else:
        net = gjt.NetworkWithInputEncoding(3, 16, GRID, MLP64)
    x = torch.rand(3000, 3, device=DEVICE, requires_grad=True)
    dy16 = (torch.rand(3000, 16, device=DEVICE) - 0.5).half()
    calls = []
    original = torch.Tensor.to

    def counting_to(self, *args, **kwargs):
        calls.append((self.dtype, args))
        return original(self, *args, **kwargs)

    grads = []
    for dy in (dy16, dy16.float()):
        net.zero_grad(set_to_none=True)
        x.grad = None
        y = net(x)
        if dy.dtype is torch.float16:
            monkeypatch.setattr(torch.Tensor, "to", counting_to)
        y.backward(dy)
        monkeypatch.setattr(torch.Tensor, "to", original)
        torch.cuda.synchronize()
        grads.append((net.params.grad.clone(), x.grad.clone()))
    assert not [c for c in calls if c[0] is torch.float16], calls  # no conversion of fp16 dy
    assert rel_norm(grads[0][0], grads[1][0]) < 1e-3, rel_norm(grads[0][0], grads[1][0])
    if kind == "network":
        assert torch.equal(grads[0][1], grads[1][1])
    else:
        assert rel_norm(grads[0][1], grads[1][1]) < 1e-5, rel_norm(grads[0][1], grads[1][1])
    assert grads[0][0].abs().sum() > 0


def test_zero_points_and_cpu_input():
    net = gjt.Network(3, 2, MLP64)
    x = torch.zeros(0, 3, device=DEVICE, requires_grad=True)
    y = net(x)
    assert y.shape == (0, 2)
    y.sum().backward()
    assert net.params.grad.shape == (net.n_params,) and (net.params.grad == 0).all()
    with pytest.warns(UserWarning, match="input must be a CUDA tensor"):
        y = net(torch.rand(8, 3))
    assert y.is_cuda


def test_second_order_is_refused_with_a_clear_error():
    net = gjt.Network(3, 1, dict(MLP64, activation="Tanh"))
    x = torch.rand(64, 3, device=DEVICE, requires_grad=True)
    (gx,) = torch.autograd.grad(net(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="second-order gradients .* not supported"):
        gx.norm(dim=1).sum().backward()


# ----------------------------------------------------------------------------- a model


@pytest.mark.parametrize("levels", [8, 4], ids=["16-features", "8-features-padded"])
def test_model_against_encoding_and_the_torch_mlp(levels):
    """NetworkWithInputEncoding equals gridjit.torch.Encoding (loaded with the model's
    encoding part) padded with zeros, followed by the torch MLP on the model's network part;
    gradients likewise, each part into its place of the one parameter vector."""
    torch.manual_seed(2)
    grid = dict(GRID, n_levels=levels)
    model = gjt.NetworkWithInputEncoding(3, 16, grid, MLP64)
    with torch.no_grad():
        model.params[model.n_mlp_params :].uniform_(-1, 1)  # features of some size
    n_mlp = model.n_mlp_params
    encoding = gjt.Encoding(3, grid, dtype=torch.half).to(DEVICE)
    with torch.no_grad():
        encoding.params.copy_(model.params[n_mlp:])
    x = torch.rand(3000, 3, device=DEVICE, requires_grad=True)
    y = model(x)
    width = model._native.mlp.n_input_dims
    xr = x.detach().clone().requires_grad_(True)
    features = encoding(xr).float()
    features = torch.cat([features, features.new_zeros(features.shape[0], width - features.shape[1])], 1)
    w = model.params.detach()[:n_mlp].half().float().requires_grad_(True)
    y_ref = mlp(model._native.mlp.layers, w, features, 16, 0.0)
    assert rel_max(y, y_ref) < 1e-2, rel_max(y, y_ref)
    with torch.no_grad():
        assert rel_max(model(x), y_ref) < 1e-2
    dy = torch.randn_like(y) / y.shape[0]
    y.backward(dy)
    # The reference's dL/dy reaches the fp16 encoding as fp16: scaled as the model scales it
    # (by 128, a power of two: exact), so that it is not the less accurate of the two.
    y_ref.backward(dy * 128.0)
    grad = model.params.grad * 128.0
    assert rel_norm(grad[:n_mlp], w.grad) < 2e-2, rel_norm(grad[:n_mlp], w.grad)
    assert rel_norm(grad[n_mlp:], encoding.params.grad) < 3e-2, rel_norm(grad[n_mlp:], encoding.params.grad)
    assert rel_norm(x.grad * 128.0, xr.grad) < 3e-2, rel_norm(x.grad * 128.0, xr.grad)


@pytest.mark.parametrize("kind", ["network", "model"])
def test_recomputing_backward_equals_keeping(kind, monkeypatch):
    """A 64-wide network recomputes by default (read when the C module is made, at the first
    call): the forward keeps the input rows alone and the backward recomputes the hidden layers'
    outputs with the forward's own products; GRIDJIT_NETWORK_RECOMPUTE=0 keeps the whole context.
    Outputs are equal bit for bit, a network's dL/dx too; a model's dL/dx (summed over levels with
    atomics) and the parameter gradients differ only by the order of their atomic sums (in fp16
    for the encoding's)."""
    torch.manual_seed(5)

    def make():
        if kind == "network":
            return gjt.Network(7, 5, MLP64, seed=3)
        return gjt.NetworkWithInputEncoding(3, 5, GRID, MLP64, seed=3)

    def run(module, x):
        x = x.detach().clone().requires_grad_(True)
        y = module(x)
        dy = torch.randn(y.shape, generator=torch.Generator(DEVICE).manual_seed(9), device=DEVICE)
        y.backward(dy / y.shape[0])
        return y.detach(), x.grad, module.params.grad

    def module_of(native):
        return native.module if kind == "network" else native.model_module

    x = torch.rand(2000, 7 if kind == "network" else 3, device=DEVICE)
    # A recomputing model's fused backward also sums its small levels in fp32 by default, which
    # rounds their gradients otherwise: off here, so that the recompute alone is compared.
    monkeypatch.setenv("GRIDJIT_NETWORK_SMALL_SUMS", "0")
    monkeypatch.setenv("GRIDJIT_NETWORK_RECOMPUTE", "0")
    keeping = make()
    with torch.no_grad():
        keeping.params.uniform_(-0.5, 0.5)
    y0, dx0, g0 = run(keeping, x)
    monkeypatch.delenv("GRIDJIT_NETWORK_RECOMPUTE")
    recomputing = make()
    with torch.no_grad():
        recomputing.params.copy_(keeping.params)
    y1, dx1, g1 = run(recomputing, x)
    # 7 inputs, or the grid's 16 features, padded to 16: a tile keeps 32 rows of 16 halves, or
    # keeping everything those, two hidden layers' 64 and the output's 16.
    assert module_of(recomputing._native).context_bytes(32) == 32 * 16 * 2
    assert module_of(keeping._native).context_bytes(32) == 32 * (16 + 64 + 64 + 16) * 2
    assert torch.equal(y0, y1)
    if kind == "network":
        assert torch.equal(dx0, dx1)
        assert rel_norm(g1, g0) < 1e-5, rel_norm(g1, g0)
    else:
        assert rel_norm(dx1, dx0) < 1e-5, rel_norm(dx1, dx0)
        # The network's gradients are fp32 sums; the fp16 encoding's are fp16 sums, whose
        # rounding follows the atomics' order (on the H200 the whole vector differed by 1.2e-4):
        # within a few units of fp16's last place (2^-10), where a wrong recompute is off by O(1).
        n_mlp = recomputing.n_mlp_params
        assert rel_norm(g1[:n_mlp], g0[:n_mlp]) < 1e-5, rel_norm(g1[:n_mlp], g0[:n_mlp])
        assert rel_norm(g1[n_mlp:], g0[n_mlp:]) < 5e-3, rel_norm(g1[n_mlp:], g0[n_mlp:])


def test_model_state_dict_round_trip():
    model = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP64, seed=1)
    other = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP64, seed=2)
    x = torch.rand(500, 3, device=DEVICE)
    assert not torch.equal(model(x), other(x))
    other.load_state_dict(model.state_dict())
    assert torch.equal(model(x), other(x))


# ----------------------------------------------------------------------------- training


def _sdf_target(x):
    return (x - 0.5).norm(dim=-1, keepdim=True) - 0.25


@pytest.mark.parametrize("kind", ["network", "model"])
def test_adam_lowers_the_loss_and_stays_finite(kind):
    torch.manual_seed(0)
    if kind == "network":
        module = gjt.Network(3, 1, MLP64)
    else:
        module = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP64)
    optimizer = torch.optim.Adam(module.parameters(), 1e-2)
    losses = []
    for _ in range(150):
        x = torch.rand(1 << 14, 3, device=DEVICE)
        loss = (module(x) - _sdf_target(x)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(math.isfinite(v) for v in losses)
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.2 * first, (first, last)


def test_cuda_graph_training_step_replays_like_eager():
    """A model's training step (forward, loss, backward, capturable Adam) captured in a CUDA
    graph and replayed, against the same steps run eagerly from the same state. The
    backward pass sums with atomics in an order that varies, the encoding's gradients in
    fp16 as tinycudann sums them (docs/python.md), and Adam's normalised step turns a last-bit
    difference of a gradient near zero into a step of up to the learning rate: losses agree
    to 1e-3 relative, 98 % of the parameters to 1e-4, and none differs by more than five
    steps of the learning rate (5e-2)."""
    warm_up = [torch.rand(8192, 3, device=DEVICE) for _ in range(3)]
    batches = [torch.rand(8192, 3, device=DEVICE) for _ in range(6)]

    def make():
        torch.manual_seed(0)
        model = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP64)
        return model, torch.optim.Adam(model.parameters(), lr=1e-2, capturable=True)

    def step(model, optimizer, x):
        optimizer.zero_grad(set_to_none=True)
        y = model(x)
        loss = (y - _sdf_target(x)).square().mean()
        loss.backward()
        optimizer.step()
        return y.detach(), loss.detach()

    model, optimizer = make()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for x in warm_up:
            step(model, optimizer, x)
    torch.cuda.current_stream().wait_stream(side)
    static_x = batches[0].clone()
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_y, static_loss = step(model, optimizer, static_x)
    torch.cuda.synchronize()
    eager_model, eager_optimizer = eager_copy(make, model, optimizer)
    replayed, eager = [], []
    for x in batches:
        static_x.copy_(x)
        graph.replay()
        replayed.append((static_y.clone(), static_loss.item()))
    for x in batches:
        y, loss = step(eager_model, eager_optimizer, x.clone())
        eager.append((y, loss.item()))
    torch.cuda.synchronize()
    assert torch.equal(replayed[0][0], eager[0][0]), "the first step's output (no atomics in the forward pass)"
    for k, ((_, a), (_, b)) in enumerate(zip(replayed, eager)):
        assert math.isfinite(a) and abs(a - b) <= 1e-3 * abs(b), (k, a, b)
    diff = (model.params - eager_model.params).abs()
    assert float((diff > 1e-4).float().mean()) < 2e-2, (float((diff > 1e-4).float().mean()), float(diff.max()))
    assert float(diff.max()) < 5e-2, float(diff.max())
    assert replayed[-1][1] < replayed[0][1]  # the replays trained


def test_torch_compile_of_a_model_holding_networks():
    """torch.compile (default backend): the gridjit modules run eagerly (graph breaks), the
    torch layer around them compiled; outputs and gradients as eager mode's."""
    torch.manual_seed(0)
    head = gjt.NetworkWithInputEncoding(3, 16, GRID, MLP64)
    tail = gjt.Network(16, 1, dict(MLP64, n_neurons=32))
    model = torch.nn.Sequential(head, torch.nn.Linear(16, 16).to(DEVICE), tail)
    x = torch.rand(4096, 3, device=DEVICE)
    y = model(x)
    grads = torch.autograd.grad(y.square().mean(), list(model.parameters()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(model)
        y_compiled = compiled(x)
    torch.testing.assert_close(y_compiled, y, rtol=1e-3, atol=1e-4)
    for a, b in zip(torch.autograd.grad(y_compiled.square().mean(), list(model.parameters())), grads):
        assert rel_norm(a, b) < 1e-2


# ----------------------------------------------------------------------------- the library's training step


def test_library_train_step_and_adam_on_torch_tensors():
    """gridjit.NetworkModule.train_step and adam_step (gj_network_train_step, gj_network_adam_step,
    docs/networks.md §10) on torch's device memory: the step's gradients equal forward + the L2
    loss gradient (computed here as the kernel does) + backward, and 200 steps with Adam lower
    the loss of a smooth target at least tenfold."""
    import gridjit

    net = gridjit.Network({"otype": "FullyFusedMLP", "n_neurons": 32, "n_hidden_layers": 2}, 3, 2)
    m = net.module()
    n, n_params = 4096, net.n_params
    gen = torch.Generator(device="cpu").manual_seed(3)
    x = torch.rand(n, 3, generator=gen).to(DEVICE)
    target = torch.stack([torch.sin(4 * x[:, 0]) * 0.4 + 0.5, x[:, 1] * x[:, 2]], dim=1).contiguous()
    params = torch.empty(n_params, dtype=torch.float16, device=DEVICE)
    master = torch.empty(n_params, dtype=torch.float32, device=DEVICE)
    m.init_params(params.data_ptr(), params_fp32=master.data_ptr())
    grads = torch.empty(n_params, dtype=torch.float32, device=DEVICE)
    y = torch.empty(n, 2, device=DEVICE)
    loss = torch.empty(1, device=DEVICE)
    m.train_step(n, x.data_ptr(), target.data_ptr(), params.data_ptr(), grads.data_ptr(), output=y.data_ptr(),
                 loss=loss.data_ptr())
    # The same through the passes apart.
    y2 = torch.empty_like(y)
    ctx = torch.empty(m.context_bytes(n), dtype=torch.uint8, device=DEVICE)
    m.forward(n, x.data_ptr(), params.data_ptr(), y2.data_ptr(), ctx.data_ptr())
    factor = torch.tensor(2.0 * 128.0 / (n * 2), dtype=torch.float32)
    dy = (factor.to(DEVICE) * (y2 - target)).half().float().contiguous()
    grads2 = torch.empty_like(grads)
    m.backward(n, params.data_ptr(), ctx.data_ptr(), dy.data_ptr(), dL_dparams=grads2.data_ptr())
    torch.cuda.synchronize()
    assert torch.equal(y, y2)
    assert abs(float(loss) - float(((y2 - target) ** 2).mean())) <= 1e-5 * float(((y2 - target) ** 2).mean())
    assert rel_max(grads, grads2) <= 1e-4

    m1 = torch.zeros_like(master)
    m2 = torch.zeros_like(master)
    steps = torch.zeros(n_params, dtype=torch.int32, device=DEVICE)
    first = float(loss)
    for _ in range(200):
        m.train_step(n, x.data_ptr(), target.data_ptr(), params.data_ptr(), grads.data_ptr(), loss=loss.data_ptr())
        m.adam_step(params.data_ptr(), master.data_ptr(), m1.data_ptr(), m2.data_ptr(), steps.data_ptr(),
                    grads.data_ptr(), learning_rate=1e-2)
    torch.cuda.synchronize()
    last = float(loss)
    assert math.isfinite(last) and last < 0.1 * first, (first, last)
    assert int(steps.min()) == 200 and int(steps.max()) == 200
    assert torch.equal(params, master.half())
