"""gridjit.torch.Network and NetworkWithInputEncoding without a GPU: construction and the
tinycudann surface (fp32 params with tiny-cuda-nn's count and order, state_dict, dtype,
loss_scale, hyperparams, warnings and errors), tiny-cuda-nn's initialisation on the CPU
(against the C reference of tools/reference, bit for bit), pickling, and the modules end
to end with the launch layer replaced by the PyTorch reference (network_reference.py):
outputs, the loss scale, gradients into the one parameter vector, the fp16 parameter copy,
optimisers, the refused second order, torch.compile; and the network launch layer
(_NetOps, _ModelOps) against recording stand-ins for the C launches."""

from __future__ import annotations

import copy
import ctypes
import pickle
import subprocess
import types
import warnings
from pathlib import Path

import pytest

from conftest import REPO, c_compiler, installed_header, torch_or_skip

gjt, torch = torch_or_skip()

import gridjit  # noqa: E402
from gridjit import _capi, _pcg, _torch_launch  # noqa: E402
from network_reference import mlp, run_network_on_the_cpu  # noqa: E402

MLP = {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 2, "activation": "ReLU"}
GRID = {"otype": "HashGrid", "n_levels": 3, "n_features_per_level": 2, "log2_hashmap_size": 6, "base_resolution": 4,
        "per_level_scale": 1.5}

cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only paths (no CUDA here)")


def mlp_count(n_in: int, n_out: int, width: int, hidden: int) -> int:
    """tiny-cuda-nn's parameter count of an MLP (docs/networks.md §2), widths padded to 16."""
    pin, pout = -(-n_in // 16) * 16, -(-n_out // 16) * 16
    if hidden == 0:
        return pin * pout
    return pin * width + (hidden - 1) * width * width + width * pout


@pytest.fixture
def cpu_net(monkeypatch):
    """attach(module) moves the module to the CPU and runs it on CPU tensors through the
    reference ops; CPU input is taken as it is instead of being moved to CUDA."""
    monkeypatch.setattr(gjt, "_cpu_input", lambda x, params: x)

    def attach(module):
        module.cpu()
        return run_network_on_the_cpu(module)

    return attach


def points(n=37, dims=3, seed=0):
    return torch.rand(n, dims, generator=torch.Generator().manual_seed(seed))


def reference(module, x, params=None):
    """The module's function in float64 at its parameters rounded to fp16 (what the kernels
    read), differentiable in params (and x)."""
    native = module._native
    p = module.params.detach().half().double() if params is None else params
    if native.encoding is None:
        return mlp(native.mlp.layers, p, x.double(), module.n_output_dims, native.mlp.input_padding)
    from torch_reference import Reference

    enc = Reference(native.encoding.encoding)
    h = enc.forward(x.float(), p[native.n_mlp_params :], 1.0, dtype=torch.float64)
    width = native.mlp.n_input_dims
    h = torch.cat([h, h.new_zeros(h.shape[0], width - h.shape[1])], dim=1)
    return mlp(native.mlp.layers, p[: native.n_mlp_params], h, module.n_output_dims, 0.0)


# ----------------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "n_in, n_out, config",
    [
        (3, 1, {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2}),
        (2, 3, {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1, "activation": "Sine"}),
        (32, 16, {"otype": "CutlassMLP", "n_neurons": 128, "n_hidden_layers": 4}),
        (17, 17, {"otype": "CutlassMLP", "n_neurons": 32, "n_hidden_layers": 0}),
        (5, 2, {}),  # tiny-cuda-nn's defaults: MLP, 128 neurons, 5 hidden layers
    ],
)
def test_network_parameters_are_fp32_with_tiny_cuda_nns_count(n_in, n_out, config):
    net = gjt.Network(n_in, n_out, config)
    width, hidden = config.get("n_neurons", 128), config.get("n_hidden_layers", 5)
    assert net.n_params == mlp_count(n_in, n_out, width, hidden) == net.n_mlp_params
    assert isinstance(net.params, torch.nn.Parameter) and net.params.requires_grad
    assert net.params.dtype == torch.float32 and net.params.shape == (net.n_params,)
    state = net.state_dict()
    assert list(state) == ["params"] and state["params"].shape == (net.n_params,)
    assert state["params"].dtype == torch.float32
    assert (net.n_input_dims, net.n_output_dims, net.seed) == (n_in, n_out, 1337)
    assert net.dtype == torch.half and net.loss_scale == 128.0
    assert net.network_config is config
    assert isinstance(net, gjt.Module)


@pytest.mark.parametrize(
    "encoding, network",
    [
        ({"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 2}, {"otype": "FullyFusedMLP", "n_neurons": 64,
                                                                            "n_hidden_layers": 2}),
        (GRID, MLP),  # 6 encoded features, padded to 16 network inputs
        ({"otype": "DenseGrid", "n_levels": 2, "n_features_per_level": 4, "base_resolution": 8, "per_level_scale": 1.5},
         {"otype": "CutlassMLP", "n_neurons": 32, "n_hidden_layers": 3, "activation": "Tanh"}),
    ],
)
def test_model_parameters_network_first_then_encoding(encoding, network):
    model = gjt.NetworkWithInputEncoding(3, 7, encoding, network)
    enc = gridjit.Encoding(dict(encoding, precision="fp16"), 3)
    n_mlp = mlp_count(enc.n_output_dims, 7, network["n_neurons"], network["n_hidden_layers"])
    assert model.n_mlp_params == n_mlp and model.n_params == n_mlp + enc.n_params
    assert model.params.dtype == torch.float32 and model.params.shape == (model.n_params,)
    assert list(model.state_dict()) == ["params"]
    assert model.hyperparams["otype"] == "NetworkWithInputEncoding"
    assert model.hyperparams["encoding"]["precision"] == "fp16"
    assert model.encoding_config is encoding and model.network_config is network
    assert (model.n_input_dims, model.n_output_dims, model.dtype) == (3, 7, torch.half)


def test_tinycudann_surface():
    net = gjt.Network(3, 1, MLP, seed=5)
    text = repr(net)
    assert text.startswith("Network(n_input_dims=3, n_output_dims=1, seed=5, dtype=torch.float16, hyperparams={")
    assert "'n_neurons': 16" in text
    assert net.jit_fusion is torch.cuda.is_available()
    with pytest.raises(AttributeError, match="can not be deleted"):
        del net.jit_fusion
    model = gjt.NetworkWithInputEncoding(2, 1, GRID, MLP)
    assert repr(model).startswith("NetworkWithInputEncoding(n_input_dims=2, n_output_dims=1, seed=1337")
    assert model.jit_fusion is gjt.supports_jit_fusion() is torch.cuda.is_available()


def test_configuration_as_json_text():
    import json

    net = gjt.Network(3, 1, json.dumps(MLP))
    model = gjt.NetworkWithInputEncoding(3, 1, json.dumps(GRID), json.dumps(MLP))
    assert net.hyperparams["n_neurons"] == 16 and model.hyperparams["encoding"]["n_levels"] == 3


def test_unknown_keys_warn_naming_the_key():
    with pytest.warns(UserWarning, match=r"gridjit.torch.Network: ignoring .*'n_neuron'; did you mean 'n_neurons'"):
        net = gjt.Network(3, 1, {"otype": "FullyFusedMLP", "n_neuron": 32})
    assert net.hyperparams["n_neurons"] == 128  # the default, as tiny-cuda-nn, which skips the key
    with pytest.warns(UserWarning) as record:
        gjt.NetworkWithInputEncoding(3, 1, dict(GRID, n_levls=2), dict(MLP, feedback_alignment=False))
    messages = [str(w.message) for w in record]
    assert any("encoding: unknown key 'n_levls'; did you mean 'n_levels'" in m for m in messages)
    assert any("network: unknown key 'feedback_alignment'" in m for m in messages)
    assert all(m.startswith("gridjit.torch.NetworkWithInputEncoding: ") for m in messages)
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gjt.Network(3, 1, MLP)
        gjt.NetworkWithInputEncoding(3, 1, GRID, MLP)


def test_a_models_encoding_precision_is_fp16():
    with pytest.warns(UserWarning, match=r'"precision": \'fp32\'.*runs in fp16'):
        model = gjt.NetworkWithInputEncoding(3, 1, dict(GRID, precision="fp32"), MLP)
    assert model.hyperparams["encoding"]["precision"] == "fp16"


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: gjt.Network(3, 1, {"n_neurons": 48}), "n_neurons: must be 16, 32, 64 or 128 (got 48)"),
        (lambda: gjt.Network(3, 1, {"otype": "FullyFusedMLP", "n_hidden_layers": 0}), "n_hidden_layers"),
        (lambda: gjt.Network(3, 1, {"activation": "Swish"}), "activation"),
        (lambda: gjt.Network(3, 0, MLP), "n_output_dims"),
        (lambda: gjt.Network(0, 1, MLP), "n_input_dims"),
        (lambda: gjt.NetworkWithInputEncoding(3, 1, GRID, {"n_neurons": 12}), "network: n_neurons"),
        (lambda: gjt.NetworkWithInputEncoding(3, 1, {"otype": "Frequency"}, MLP), "encoding: otype"),
        (lambda: gjt.NetworkWithInputEncoding(3, 1, dict(GRID, n_levels=0), MLP), "encoding: n_levels"),
    ],
)
def test_bad_configurations_raise_naming_the_key(make, fragment):
    with pytest.raises(gridjit.InvalidConfigError) as info:
        make()
    assert fragment in str(info.value)


# ----------------------------------------------------------------------------- initialisation


@cpu_only
def test_cpu_initialisation_is_tiny_cuda_nns_rule():
    net = gjt.Network(3, 2, {"otype": "FullyFusedMLP", "n_neurons": 32, "n_hidden_layers": 2}, seed=42)
    values = net.params.detach().numpy()
    layers = net._native.mlp.layers
    r = _pcg.uniform(net.n_params, 42)  # one stream, layer after layer
    import numpy as np

    for layer in layers:
        begin, end = layer["offset"], layer["offset"] + layer["n_params"]
        b = np.float32(np.sqrt(np.float32(6.0) / np.float32(layer["fan_in"] + layer["fan_out"])))
        assert np.array_equal(values[begin:end], (r[begin:end] * np.float32(2.0)) * b - b)
        assert np.abs(values[begin:end]).max() <= b
    assert np.array_equal(values, gjt.Network(3, 2, net.network_config, seed=42).params.detach().numpy())
    assert not np.array_equal(values, gjt.Network(3, 2, net.network_config, seed=43).params.detach().numpy())


@cpu_only
def test_cpu_initialisation_of_a_model():
    model = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP, seed=9)
    net = gjt.Network(16, 1, MLP, seed=9)  # 6 encoded features padded to 16: the same layers
    values = model.params.detach()
    assert torch.equal(values[: model.n_mlp_params], net.params.detach())
    n_enc = model.n_params - model.n_mlp_params
    assert torch.equal(values[model.n_mlp_params :], torch.from_numpy(_pcg.init_params(n_enc, 9)))
    assert values[model.n_mlp_params :].abs().max() <= 1e-4


@cpu_only
def test_sine_networks_use_sirens_bounds():
    net = gjt.Network(3, 1, {"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 2, "activation": "Sine"})
    values = net.params.detach()
    first, hidden, last = net._native.mlp.layers
    assert values[: first["n_params"]].abs().max() <= 30.0 / 16 and values[: first["n_params"]].abs().max() > 1.0
    bound = (6.0 / 16) ** 0.5
    assert values[hidden["offset"] :].abs().max() <= bound


def _compile_c_reference(tmp_path: Path):
    """A program on tools/reference's MLP (libgridjit_reference.a of the CMake build): for a
    network given as arguments (JSON, widths, seed), prints tiny-cuda-nn's initial
    parameters, then for points read from stdin (x, dL/dy) the outputs, dL/dx and the summed
    dL/dparams in double, all as hex floats. None where it cannot be built."""
    cc, header = c_compiler(), installed_header()
    build = Path(gridjit.library_path).resolve().parent
    archive = build / "libgridjit_reference.a"
    sources = REPO / "tools" / "reference"
    if cc is None or not header.is_file() or not archive.is_file() or not sources.is_dir():
        return None
    program = tmp_path / "mlp_ref.c"
    program.write_text(
        r"""
#include <stdio.h>
#include <stdlib.h>
#include "gridjit.h"
#include "mlp_reference.h"

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    gj_context *ctx = NULL;
    gj_network *net = NULL;
    gj_context_create(&ctx);
    if (gj_network_create(ctx, argv[1], (uint32_t)atoi(argv[2]), (uint32_t)atoi(argv[3]), &net) != GJ_OK) {
        fprintf(stderr, "%s\n", gj_context_errmsg(ctx));
        return 1;
    }
    gj_ref_mlp ref;
    gj_ref_mlp_from_network(&ref, net);
    gj_ref_pcg32 rng;
    gj_ref_pcg32_seed(&rng, strtoull(argv[4], NULL, 10), 1);
    float *init = malloc(ref.n_params * sizeof *init);
    double *params = malloc(ref.n_params * sizeof *params);
    double *grads = calloc(ref.n_params, sizeof *grads);
    gj_ref_mlp_init_params(&ref, &rng, 1.0f, init);
    for (uint64_t i = 0; i < ref.n_params; ++i) {
        printf("%a\n", (double)init[i]);
        params[i] = init[i];
    }
    int n = 0;
    if (scanf("%d", &n) != 1) return 3;
    double x[1024], dy[128], y[128], dx[1024];
    for (int p = 0; p < n; ++p) {
        for (uint32_t c = 0; c < ref.input_width; ++c) if (scanf("%lf", &x[c]) != 1) return 3;
        for (uint32_t c = 0; c < ref.padded_output_width; ++c) dy[c] = 0.0;
        for (uint32_t c = 0; c < ref.output_width; ++c) if (scanf("%lf", &dy[c]) != 1) return 3;
        gj_ref_mlp_forward(&ref, params, x, y);
        gj_ref_mlp_backward(&ref, params, x, dy, grads, dx);
        for (uint32_t c = 0; c < ref.output_width; ++c) printf("%a\n", y[c]);
        for (uint32_t c = 0; c < ref.input_width; ++c) printf("%a\n", dx[c]);
    }
    for (uint64_t i = 0; i < ref.n_params; ++i) printf("%a\n", grads[i]);
    return 0;
}
"""
    )
    exe = tmp_path / "mlp_ref"
    cmd = [cc, "-std=c11", "-O1", "-ffp-contract=off", "-o", str(exe), str(program), f"-I{header.parent}",
           f"-I{sources}", str(archive), f"-L{Path(gridjit.library_path).resolve().parent}",
           f"-Wl,-rpath,{Path(gridjit.library_path).resolve().parent}", "-l:" + Path(gridjit.library_path).name, "-lm"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail("the C reference program does not build: " + result.stderr)
    return exe


@pytest.fixture(scope="module")
def c_reference(tmp_path_factory):
    return _compile_c_reference(tmp_path_factory.mktemp("mlp_ref"))


ACTIVATIONS = ["None", "ReLU", "LeakyReLU", "Exponential", "Sine", "Sigmoid", "Squareplus", "Softplus", "Tanh", "SiLU"]


@pytest.mark.parametrize(
    "config, n_in, n_out",
    [
        ({"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1, "activation": "ReLU"}, 3, 1),
        ({"otype": "FullyFusedMLP", "n_neurons": 32, "n_hidden_layers": 2, "activation": "Sine",
          "output_activation": "Sigmoid"}, 5, 3),
        ({"otype": "CutlassMLP", "n_neurons": 64, "n_hidden_layers": 0, "output_activation": "Tanh"}, 17, 4),
    ]
    + [({"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 2, "activation": a, "output_activation": a}, 4,
        2) for a in ACTIVATIONS],
)
def test_reference_mlp_and_initialisation_against_the_c_reference(c_reference, config, n_in, n_out):
    """The Python side's initialisation (_pcg.network_init_params, what gridjit.torch uses
    without CUDA) equals tools/reference's gj_ref_mlp_init_params bit for bit, and the torch
    MLP of the GPU tests (network_reference.mlp) equals gj_ref_mlp_forward / _backward."""
    import json

    exe = c_reference
    if exe is None:
        pytest.skip("needs a C compiler, the installed gridjit.h, libgridjit_reference.a and tools/reference")
    net = gridjit.Network(config, n_in, n_out)
    n, seed = 5, 77
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(n, n_in, generator=gen, dtype=torch.float64)
    dy = torch.randn(n, n_out, generator=gen, dtype=torch.float64)
    stdin = f"{n}\n" + "\n".join(" ".join(f"{float(v)!r}" for v in [*x[i].tolist(), *dy[i].tolist()])
                                 for i in range(n)) + "\n"
    out = subprocess.run([str(exe), json.dumps(config), str(n_in), str(n_out), str(seed)], input=stdin,
                         capture_output=True, text=True, check=True).stdout.split()
    values = [float.fromhex(v) for v in out]
    n_params = net.n_params
    init_c = torch.tensor(values[:n_params], dtype=torch.float64)
    init_py = torch.from_numpy(_pcg.network_init_params(net.layers, net.activation == "Sine", seed)).double()
    assert torch.equal(init_py, init_c)
    at = n_params
    ys, dxs = [], []
    for _ in range(n):
        ys.append(values[at : at + n_out])
        at += n_out
        dxs.append(values[at : at + n_in])
        at += n_in
    grads_c = torch.tensor(values[at : at + n_params], dtype=torch.float64)
    p = init_c.clone().requires_grad_(True)
    x_ = x.clone().requires_grad_(True)
    y = mlp(net.layers, p, x_, n_out, net.input_padding)
    torch.testing.assert_close(y.detach(), torch.tensor(ys, dtype=torch.float64), rtol=1e-10, atol=1e-12)
    gx, gp = torch.autograd.grad(y, (x_, p), dy)
    torch.testing.assert_close(gx, torch.tensor(dxs, dtype=torch.float64), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(gp, grads_c, rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- the module on the CPU reference


@pytest.mark.parametrize("kind", ["network", "model"])
@pytest.mark.parametrize("n", [37, 1, 0])
def test_outputs_and_gradients_with_the_loss_scale(cpu_net, kind, n):
    torch.manual_seed(0)
    if kind == "network":
        module = gjt.Network(3, 2, dict(MLP, activation="Tanh", output_activation="Sigmoid"))
    else:
        module = gjt.NetworkWithInputEncoding(3, 2, GRID, dict(MLP, activation="Tanh"))
    ops = cpu_net(module)
    with torch.no_grad():  # parameters of some size, so that the encoding part matters
        module.params.uniform_(-0.5, 0.5)
    x = points(n).requires_grad_(True)
    y = module(x)
    assert y.dtype == torch.float32 and y.shape == (n, 2) and y.is_contiguous()
    y_ref = reference(module, x.detach())
    torch.testing.assert_close(y.double(), y_ref, rtol=1e-6, atol=1e-6)
    dy = torch.randn(n, 2, generator=torch.Generator().manual_seed(3))
    y.backward(dy)
    # dL/dy reached the launch layer as it was, with tinycudann's loss scale for the kernels
    # to apply as they read it ...
    name, _, seen, loss_scale = ops.calls[-1]
    assert name == "backward" and torch.equal(seen, dy) and loss_scale == 128.0
    # ... and the gradients came back divided by it: fp32, equal to the reference's.
    p = module.params.detach().half().double().requires_grad_(True)
    xr = x.detach().double().requires_grad_(True)
    gp, gx = torch.autograd.grad(reference(module, xr, p), (p, xr), dy.double(), allow_unused=True)
    assert module.params.grad.dtype == torch.float32 and module.params.grad.shape == (module.n_params,)
    torch.testing.assert_close(module.params.grad.double(), gp, rtol=1e-5, atol=1e-7)
    if n and kind == "network":  # the model's dL/dx: the grid reference in float32 (see torch_reference)
        torch.testing.assert_close(x.grad.double(), gx, rtol=1e-5, atol=1e-6)
    assert x.grad.shape == (n, 3)
    if kind == "model" and n:
        assert module.params.grad[module.n_mlp_params :].abs().sum() > 0  # the encoding's part got its share


def test_no_grad_and_inputs_without_grad(cpu_net):
    net = gjt.Network(3, 1, MLP)
    ops = cpu_net(net)
    with torch.no_grad():
        net(points())
    assert ops.calls[-1][0] == "inference"
    net.params.requires_grad_(False)
    net(points())
    assert ops.calls[-1][0] == "inference"
    net.params.requires_grad_(True)
    x = points().requires_grad_(True)
    y = net(x)
    assert ops.calls[-1][0] == "forward"
    (gx,) = torch.autograd.grad(y.sum(), x)  # only dL/dx asked for
    assert net.params.grad is None and gx.shape == x.shape


def test_fp16_copy_is_made_once_and_again_after_each_change(cpu_net):
    net = gjt.Network(3, 1, MLP)
    ops = cpu_net(net)
    net(points())
    net(points())
    first, second = ops.calls[-2][1], ops.calls[-1][1]
    assert first is second and first.dtype == torch.half
    optimizer = torch.optim.Adam(net.parameters(), 1e-2)
    net(points()).sum().backward()
    optimizer.step()
    net(points())
    assert ops.calls[-1][1] is not first
    assert torch.equal(ops.calls[-1][1], net.params.detach().half())
    with torch.no_grad():
        net.params.data.mul_(2)  # bumps no version counter
    net.params_changed()
    net(points())
    assert torch.equal(ops.calls[-1][1], net.params.detach().half())
    cached = ops.calls[-1][1]
    gjt.free_temporary_memory()
    net(points())
    assert ops.calls[-1][1] is not cached


@pytest.mark.parametrize("kind", ["network", "model"])
def test_adam_trains_the_module(cpu_net, kind):
    torch.manual_seed(0)
    module = (gjt.Network(3, 1, MLP) if kind == "network" else gjt.NetworkWithInputEncoding(3, 1, GRID, MLP))
    cpu_net(module)
    optimizer = torch.optim.Adam(module.parameters(), 1e-2)
    losses = []
    for step in range(60):
        x = points(64, seed=step)
        target = (x - 0.5).norm(dim=1, keepdim=True)
        loss = (module(x) - target).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(map(lambda v: v == v and v < 1e3, losses))
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:10]) / 10


def test_second_order_through_the_network_is_refused(cpu_net):
    net = gjt.Network(3, 1, dict(MLP, activation="Tanh"))
    cpu_net(net)
    x = points().requires_grad_(True)
    y = net(x)
    (gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)  # first order with a graph: fine
    torch.testing.assert_close(gx, torch.autograd.grad(net(x).sum(), x)[0])
    with pytest.raises(RuntimeError, match="second-order gradients through a Network .* not supported"):
        gx.square().sum().backward()


def test_state_dict_round_trip_and_a_tinycudann_checkpoint(cpu_net):
    model = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP)
    ops = cpu_net(model)
    x = points()
    before = model(x)
    checkpoint = {"params": torch.linspace(-1, 1, model.n_params)}  # what tinycudann saves: one fp32 vector
    model.load_state_dict(checkpoint)
    after = model(x)
    assert torch.equal(ops.calls[-1][1], checkpoint["params"].half()) and not torch.equal(before, after)
    again = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP, seed=3)
    cpu_net(again)
    again.load_state_dict(model.state_dict())
    assert torch.equal(again(x), after)
    with pytest.raises(RuntimeError, match="size mismatch"):
        again.load_state_dict({"params": torch.zeros(model.n_params - 1)})


def test_copies_and_pickles_carry_no_native_objects(cpu_net):
    model = gjt.NetworkWithInputEncoding(3, 1, GRID, MLP, seed=4)
    cpu_net(model)
    x = points()
    y = model(x)
    data = pickle.dumps(model)
    assert b"CDLL" not in data and b"c_void_p" not in data and b"Reference" not in data
    again = pickle.loads(data)
    assert again._native._ops == {} and again.n_params == model.n_params and again.hyperparams == model.hyperparams
    cpu_net(again)
    assert torch.equal(again(x), y)
    clone = copy.deepcopy(model)
    assert clone._native is model._native and torch.equal(clone(x), y)
    net = pickle.loads(pickle.dumps(gjt.Network(3, 2, MLP)))
    assert net.n_params == mlp_count(3, 2, 16, 2)


def test_input_checks(cpu_net):
    net = gjt.Network(3, 1, MLP)
    cpu_net(net)
    with pytest.raises(ValueError, match=r"gridjit.torch.Network: the input must have shape \(batch, 3\)"):
        net(torch.rand(4, 2))
    with pytest.raises(TypeError, match="floating-point"):
        net(torch.ones(4, 3, dtype=torch.int32))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        net([[0.5, 0.5, 0.5]])
    x = points(8, dims=6)[:, ::2]  # not contiguous, float64: converted
    torch.testing.assert_close(net(x.double()), net(x.contiguous()))


@cpu_only
def test_cpu_input_is_moved_with_tinycudanns_warning():
    net = gjt.Network(3, 1, MLP)
    with pytest.warns(UserWarning, match="input must be a CUDA tensor, but isn't") as record:
        with pytest.raises((RuntimeError, AssertionError)):  # .cuda() fails: no GPU here
            net(torch.rand(4, 3))
    assert record[0].filename == __file__


def test_torch_compile_runs_the_network_eagerly(cpu_net):
    torch.manual_seed(0)
    net = gjt.Network(3, 4, MLP)
    cpu_net(net)
    model = torch.nn.Sequential(net, torch.nn.Linear(4, 1))
    x = points(64)
    eager = model(x)
    grads = torch.autograd.grad(eager.sum(), list(model.parameters()))
    compiled = torch.compile(model, backend="aot_eager")
    out = compiled(x)
    assert torch.equal(out, eager)
    for a, b in zip(torch.autograd.grad(out.sum(), list(model.parameters())), grads):
        assert torch.equal(a, b)


# ----------------------------------------------------------------------------- the launch layer


@pytest.fixture
def fake_net_launches(monkeypatch):
    """_NetOps / _ModelOps on CPU tensors with the C launch functions replaced by recorders."""
    import contextlib

    records = []

    def recorder(name):
        def fn(handle, stream, desc_ref):
            desc = desc_ref._obj
            records.append((name, handle, stream, {f: getattr(desc, f) for f, _ in desc._fields_}))
            return 0

        return fn

    for name in ("gj_network_inference", "gj_network_forward", "gj_network_backward", "gj_forward", "gj_backward"):
        monkeypatch.setattr(_capi.lib, name, recorder(name))
    monkeypatch.setattr(gjt._Native, "module", lambda self, index, stochastic: types.SimpleNamespace(handle=0x1000))
    monkeypatch.setattr(_torch_launch, "_raw_stream", lambda index: 0x7777)
    monkeypatch.setattr(_torch_launch, "_current_device", lambda: 0)
    # Construction initialises the parameters on the host, as on a machine without CUDA:
    # with CUDA it would launch the real initialisation on the fake stream above.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    @contextlib.contextmanager
    def device(index):
        yield

    monkeypatch.setattr(torch.cuda, "device", device)

    def make(module, fused=False):
        native = module._native
        if fused:
            ops = _torch_launch._FusedModelOps(native, 0)
            parts = [ops, ops._composed, ops._composed.network, ops._composed.encoding]
        elif native.encoding is None:
            ops = _torch_launch._NetOps(native, 0)
            parts = [ops]
        else:
            ops = _torch_launch._ModelOps(native, 0)
            parts = [ops, ops.network, ops.encoding]
        for part in parts:  # tensors on the CPU; the fake launches only read pointers
            part.device = torch.device("cpu")
            if isinstance(part, _torch_launch._NetOps):
                part._local.descriptors = _torch_launch._NetDescriptors()
            elif isinstance(part, _torch_launch._Ops):
                part._local.descriptors = _torch_launch._Descriptors()
        return ops

    return types.SimpleNamespace(make=make, records=records)


def test_network_launch_layer_sets_every_pointer(fake_net_launches):
    net = gjt.Network(3, 2, MLP)
    ops = fake_net_launches.make(net)
    x, params = torch.rand(40, 3), torch.rand(net.n_params).half()
    y = ops.inference(x, params)
    name, handle, stream, d = fake_net_launches.records[-1]
    assert (name, handle, stream) == ("gj_network_inference", net._native.module.handle, 0x7777)
    assert (d["n"], d["input"], d["params"], d["output"]) == (40, x.data_ptr(), params.data_ptr(), y.data_ptr())
    assert y.shape == (40, 2) and y.dtype == torch.float32
    y, (context,) = ops.forward(x, params)
    name, _, _, d = fake_net_launches.records[-1]
    assert name == "gj_network_forward" and d["context"] == context.data_ptr() and d["output"] == y.data_ptr()
    assert context.dtype == torch.uint8 and context.numel() == net._native.module.context_bytes(40)
    dy = torch.rand(40, 2)
    dx, dparams = ops.backward(x, params, (context,), dy, True, True)
    name, _, _, d = fake_net_launches.records[-1]
    assert name == "gj_network_backward" and d["dL_doutput"] == dy.data_ptr() and d["context"] == context.data_ptr()
    assert d["dL_dparams"] == dparams.data_ptr() and d["dL_dinput"] == dx.data_ptr()
    assert d["dL_dparams_mode"] == _capi.GRAD_OVERWRITE and dparams.dtype == torch.float32 and dx.shape == (40, 3)
    assert d["dL_doutput_scale"] == 1.0
    ops.backward(x, params, (context,), dy, True, True, loss_scale=64.0)  # the kernels apply it, the library undoes it
    assert fake_net_launches.records[-1][3]["dL_doutput_scale"] == 64.0
    assert fake_net_launches.records[-1][3]["unscale_gradients"] == 1
    dx, dparams = ops.backward(x, params, (context,), dy, False, True)
    assert fake_net_launches.records[-1][3]["dL_dinput"] is None and dx is None
    count = len(fake_net_launches.records)
    dx, dparams = ops.backward(x[:0], params, (context,), dy[:0], True, True)
    assert len(fake_net_launches.records) == count and (dparams == 0).all() and dx.shape == (0, 3)


def test_model_ops_are_fused_unless_the_encoding_is_stochastic(monkeypatch):
    model = gjt.NetworkWithInputEncoding(3, 2, GRID, MLP)
    stochastic = gjt.NetworkWithInputEncoding(3, 2, dict(GRID, stochastic_interpolation=True), MLP)
    net = gjt.Network(3, 2, MLP)
    for name in ("_NetOps", "_ModelOps", "_FusedModelOps"):  # after construction, which may launch
        monkeypatch.setattr(gjt, name, lambda native, index, name=name: name)
    assert model._native.model_module is not None and model._native._make_ops(0) == "_FusedModelOps"
    assert stochastic._native._make_ops(0) == "_ModelOps"
    assert net._native.model_module is None and net._native._make_ops(0) == "_NetOps"


@pytest.mark.parametrize("fp16_gradients", [True, False])
def test_fused_model_launch_layer_passes_both_parts_in_one_launch(fake_net_launches, monkeypatch, fp16_gradients):
    model = gjt.NetworkWithInputEncoding(3, 2, GRID, MLP)
    ops = fake_net_launches.make(model, fused=True)
    ops._fp16_gradients = fp16_gradients
    module = model._native.model_module
    n_mlp, records = model.n_mlp_params, fake_net_launches.records
    x, params = torch.rand(40, 3), torch.rand(model.n_params).half()
    y = ops.inference(x, params)
    name, handle, stream, d = records[-1]
    assert (name, handle, stream) == ("gj_network_inference", module.handle, 0x7777)
    assert d["params"] == params.data_ptr() and d["encoding_params"] == params.data_ptr() + 2 * n_mlp
    assert d["input"] == x.data_ptr() and d["output"] == y.data_ptr() and y.shape == (40, 2)
    y, (context,) = ops.forward(x, params)
    name, _, _, d = records[-1]
    assert name == "gj_network_forward" and d["encoding_params"] == params.data_ptr() + 2 * n_mlp
    assert context.numel() == module.context_bytes(40) and d["context"] == context.data_ptr()

    # The backward launch does what the library does with the descriptor: the kernels sum the
    # encoding's gradients (0.5 each) in the element size the module sums in, into
    # dL_dencoding_params (fp16: a buffer, then converted) or dL_dencoding_params_fp32
    # directly; with unscale_gradients its finishing pass divides every fp32 gradient by the
    # loss scale.
    element = torch.float16 if fp16_gradients else torch.float32
    n_enc = model.n_params - n_mlp

    def backward(handle, stream, desc_ref):
        desc = desc_ref._obj
        records.append(("gj_network_backward", handle, stream, {f: getattr(desc, f) for f, _ in desc._fields_}))
        factor = 1.0 / (desc.dL_doutput_scale or 1.0) if desc.unscale_gradients else 1.0
        if desc.dL_dencoding_params:
            values = torch.full((n_enc,), 0.5, dtype=element)
            ctypes.memmove(desc.dL_dencoding_params, values.data_ptr(), n_enc * (torch.finfo(element).bits // 8))
        for pointer, count, value in (
            (desc.dL_dencoding_params_fp32, n_enc, 0.5),
            (desc.dL_dparams, n_mlp, 2.0),
            (desc.dL_dinput, 40 * 3, 3.0),
        ):
            if pointer:
                values = torch.full((count,), value * factor)
                ctypes.memmove(pointer, values.data_ptr(), 4 * count)
        return 0

    monkeypatch.setattr(ops, "_gj_backward", backward)
    count = len(records)
    dy = torch.rand(40, 2)
    dx, dparams = ops.backward(x, params, (context,), dy, True, True)
    assert len(records) == count + 1  # one call for both parts and the finishing pass
    name, _, _, d = records[-1]
    assert d["input"] == x.data_ptr() and d["encoding_params"] == params.data_ptr() + 2 * n_mlp
    assert d["dL_dparams"] == dparams.data_ptr() and d["dL_dinput"] == dx.data_ptr() and dx.shape == (40, 3)
    assert d["dL_dencoding_params_fp32"] == dparams.data_ptr() + 4 * n_mlp and d["unscale_gradients"] == 1
    if fp16_gradients:  # a buffer for the fp16 sums, converted by the library
        assert not dparams.data_ptr() <= d["dL_dencoding_params"] < dparams.data_ptr() + 4 * model.n_params
    else:
        assert d["dL_dencoding_params"] is None
    assert dparams.dtype == torch.float32 and (dparams[n_mlp:] == 0.5).all()
    assert (dparams[:n_mlp] == 2.0).all() and (dx == 3.0).all()
    assert records[-1][3]["dL_doutput_scale"] == 1.0
    # With the loss scale: the kernels take it (dL_doutput_scale) and the library divides every
    # gradient by it (unscale_gradients), still one call and no pass of the package's own.
    dx, dparams = ops.backward(x, params, (context,), dy, True, True, loss_scale=128.0)
    assert len(records) == count + 2 and dparams.dtype == torch.float32
    assert records[-1][3]["dL_doutput_scale"] == 128.0 and records[-1][3]["dL_doutput"] == dy.data_ptr()
    assert (dparams[n_mlp:] == 0.5 / 128).all() and (dparams[:n_mlp] == 2.0 / 128).all() and (dx == 3.0 / 128).all()
    dx, dparams = ops.backward(x, params, (context,), dy, True, False)
    d = records[-1][3]
    assert d["dL_dencoding_params"] is None and d["dL_dencoding_params_fp32"] is None and dparams is None


def test_model_launch_layer_composes_encoding_and_network(fake_net_launches):
    model = gjt.NetworkWithInputEncoding(3, 2, GRID, MLP)
    ops = fake_net_launches.make(model)
    n_mlp = model.n_mlp_params
    x, params = torch.rand(40, 3), torch.rand(model.n_params).half()
    y, saved = ops.forward(x, params)
    (enc_name, _, _, e), (net_name, _, _, d) = fake_net_launches.records[-2:]
    assert (enc_name, net_name) == ("gj_forward", "gj_network_forward")
    assert e["params"] == params.data_ptr() + 2 * n_mlp and d["params"] == params.data_ptr()
    assert d["input"] != e["y"]  # the fp16 encoding output, cast to float32 for the network
    assert ops.encoding.width == 16  # 6 features padded to the network's 16 inputs
    dy = torch.rand(40, 2)
    dx, dparams = ops.backward(x, params, saved, dy, True, True, loss_scale=128.0)
    (net_name, _, _, d), (enc_name, _, _, e) = fake_net_launches.records[-2:]
    assert (net_name, enc_name) == ("gj_network_backward", "gj_backward")
    assert d["dL_doutput_scale"] == 128.0  # the network's kernel scales; its dL/d(features) stays scaled
    assert d["unscale_gradients"] == 0
    assert d["dL_dparams"] == dparams.data_ptr() and e["dL_dparams"] == dparams.data_ptr() + 4 * n_mlp
    assert d["dL_dinput"] is not None and e["dL_dx"] == dx.data_ptr()
    assert dparams.shape == (model.n_params,) and dx.shape == (40, 3)
