"""The network bindings without a GPU (gridjit.Network, gridjit.NetworkModule): the
configuration and tiny-cuda-nn's parameter layout (docs/networks.md §1, §2), errors naming
the key, code generation, and the module's entry points (refusals; launches on the fake
libcuda of the CMake build where it is there)."""

from __future__ import annotations

import json
from ctypes import byref
from pathlib import Path

import pytest

import gridjit
from conftest import needs_nvrtc, run_python
from gridjit import _capi

MLP = {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2}
GRID = {"otype": "HashGrid", "n_levels": 16, "n_features_per_level": 2}


def mlp_params(padded_in: int, width: int, hidden: int, padded_out: int) -> int:
    """docs/networks.md §2: padded_in * W + (H - 1) * W^2 + W * padded_out (H >= 1)."""
    if hidden == 0:
        return padded_in * padded_out
    return padded_in * width + (hidden - 1) * width * width + width * padded_out


def test_worked_example_of_the_docs():
    # docs/networks.md §2: tinycudann's Network(3, 1, FullyFusedMLP 64 x 2).
    net = gridjit.Network(MLP, 3, 1)
    assert (net.n_input_dims, net.input_width, net.padded_input_width) == (3, 3, 16)
    assert (net.n_output_dims, net.padded_output_width) == (1, 16)
    assert net.n_params == net.n_mlp_params == 6144 and net.n_layers == 3
    assert [(lv["fan_out"], lv["fan_in"], lv["offset"]) for lv in net.layers] == [
        (64, 16, 0),
        (64, 64, 1024),
        (16, 64, 5120),
    ]
    assert net.input_padding == 1.0 and not net.is_model and net.encoding is None
    # The same network behind a HashGrid of 16 levels x 2 features: 7168 MLP parameters first.
    model = gridjit.Network({"encoding": GRID, "network": MLP}, 3, 1)
    assert model.is_model and model.n_mlp_params == 7168 and model.input_padding == 0.0
    assert (model.n_input_dims, model.input_width, model.padded_input_width) == (3, 32, 32)
    encoding = model.encoding
    assert encoding.n_dims == 3 and encoding.n_output_dims == 32
    assert model.n_params == 7168 + encoding.n_params


@pytest.mark.parametrize(
    "otype, width, hidden, n_in, n_out",
    [
        ("FullyFusedMLP", 16, 1, 2, 1),
        ("FullyFusedMLP", 32, 4, 17, 3),
        ("FullyFusedMLP", 128, 8, 64, 16),
        ("MegakernelMLP", 64, 3, 32, 17),
        ("CutlassMLP", 32, 0, 5, 7),
        ("MLP", 128, 2, 33, 128),
    ],
)
def test_parameter_count_and_layers_follow_tiny_cuda_nn(otype, width, hidden, n_in, n_out):
    config = {"otype": otype, "n_neurons": width, "n_hidden_layers": hidden, "activation": "Tanh"}
    net = gridjit.Network(config, n_in, n_out)
    padded_in, padded_out = -(-n_in // 16) * 16, -(-n_out // 16) * 16
    assert net.n_params == mlp_params(padded_in, width, hidden, padded_out)
    assert net.otype == ("CutlassMLP" if otype in ("CutlassMLP", "MLP") else "FullyFusedMLP")
    layers = net.layers
    assert len(layers) == max(hidden, 0) + 1
    offset = 0
    for index, layer in enumerate(layers):
        assert layer["layer"] == index and layer["offset"] == offset
        assert layer["n_params"] == layer["fan_in"] * layer["fan_out"]
        assert layer["activation"] == ("None" if index == len(layers) - 1 else "Tanh")
        offset += layer["n_params"]
    assert offset == net.n_params
    assert layers[0]["fan_in"] == padded_in and layers[-1]["fan_out"] == padded_out


def test_every_getter_and_the_canonical_form():
    config = {"otype": "CutlassMLP", "n_neurons": 32, "n_hidden_layers": 3, "activation": "leakyrelu",
              "output_activation": "Sigmoid"}
    net = gridjit.Network(config, 5, 2)
    assert (net.otype, net.n_neurons, net.n_hidden_layers) == ("CutlassMLP", 32, 3)
    assert (net.activation, net.output_activation) == ("LeakyReLU", "Sigmoid")
    canonical = net.hyperparams
    assert canonical["n_input_dims"] == 5 and canonical["n_output_dims"] == 2
    again = gridjit.Network(net.hyperparams_json)  # both widths are keys: no arguments needed
    assert again.hyperparams == canonical and again.n_params == net.n_params
    assert "CutlassMLP" in repr(net)
    model = gridjit.Network({"encoding": GRID, "network": config}, 3, 4)
    assert model.hyperparams["otype"] == "NetworkWithInputEncoding"
    assert set(model.hyperparams) == {"otype", "encoding", "network"}


@pytest.mark.parametrize(
    "config, n_in, n_out, fragment",
    [
        ({"otype": "FullyFusedMLP", "n_neurons": 48}, 3, 1, "n_neurons: must be 16, 32, 64 or 128 (got 48)"),
        ({"otype": "FullyFusedMLP", "n_hidden_layers": 0}, 3, 1, "n_hidden_layers"),
        ({"otype": "Transformer"}, 3, 1, "otype"),
        ({"otype": "FullyFusedMLP", "activation": "Swish"}, 3, 1, "activation"),
        ({"otype": "FullyFusedMLP", "n_neuron": 64}, 3, 1, "did you mean 'n_neurons'"),
        ({"encoding": GRID, "network": {"n_neurons": 12}}, 3, 1, "network: n_neurons"),
        ({"encoding": dict(GRID, n_levels=0), "network": MLP}, 3, 1, "encoding: n_levels"),
        (MLP, 3, 0, "n_output_dims"),
        (MLP, 3, 1025, "n_output_dims"),
    ],
)
def test_config_errors_name_the_key(config, n_in, n_out, fragment):
    with pytest.raises(gridjit.InvalidConfigError) as info:
        gridjit.Network(config, n_in, n_out)
    assert fragment in str(info.value)
    assert info.value.call == "gj_network_create"


def test_unknown_keys_skipped_on_request_with_the_library_messages():
    config = {"encoding": dict(GRID, n_levls=8), "network": dict(MLP, feedback_alignment=False)}
    with pytest.raises(gridjit.InvalidConfigError):
        gridjit.Network(config, 3, 1)
    model = gridjit.Network(config, 3, 1, ignore_unknown_keys=True)
    joined = "\n".join(model.ignored_keys)
    assert len(model.ignored_keys) == 2 and "did you mean 'n_levels'" in joined and "feedback_alignment" in joined
    assert model.encoding.n_levels == 16  # the misspelt key was skipped
    assert gridjit.Network(MLP, 3, 1, ignore_unknown_keys=True).ignored_keys == []
    with pytest.raises(gridjit.InvalidConfigError) as info:  # wrong values stay errors
        gridjit.Network({"n_neurons": 7}, 3, 1, ignore_unknown_keys=True)
    assert info.value.call == "gj_network_create_ex"


def test_layer_out_of_range_and_closed_objects():
    net = gridjit.Network(MLP, 3, 1)
    with pytest.raises(gridjit.InvalidArgumentError):
        net.layer(3)
    net.close()
    net.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        net.n_params


def test_generate_is_deterministic():
    net = gridjit.Network(MLP, 3, 1)
    source = net.generate()
    assert source == net.generate()
    assert "gj_network_inference" in source and "gj_network_backward" in source
    named = net.generate(name="my_mlp", device_functions_only=True)
    assert "my_mlp_config" in named and "my_mlp_inference" not in named
    model = gridjit.Network({"encoding": GRID, "network": MLP}, 3, 1)
    assert "gj_encode_encoding" in model.generate() or "_encoding" in model.generate()


# ----------------------------------------------------------------------------- modules


def test_module_of_a_network_and_its_context_size(monkeypatch):
    net = gridjit.Network({"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}, 3, 2)
    module = net.module()  # no driver needed until a launch
    # docs/networks.md §8: per 32 points the padded input (16), fp16; the backward recomputes the
    # hidden layer's output (16 wide: by default).
    assert module.context_bytes(100) == 4 * 32 * 16 * 2
    assert module.context_bytes(0) == 0
    module.close()
    module.close()
    with pytest.raises(ValueError, match="closed"):
        module.context_bytes(1)
    # Keeping the context (GRIDJIT_NETWORK_RECOMPUTE=0 when the module is made): each layer's output too.
    monkeypatch.setenv("GRIDJIT_NETWORK_RECOMPUTE", "0")
    keeping = net.module()
    assert keeping.context_bytes(100) == 4 * 32 * (16 + 16 + 16) * 2
    keeping.close()
    monkeypatch.delenv("GRIDJIT_NETWORK_RECOMPUTE")
    # A model's module runs the fused encoding + network kernels: its context is per point too.
    model = gridjit.Network({"encoding": GRID, "network": MLP}, 3, 1).module()
    assert model.context_bytes(32) > 0
    model.close()


def test_a_model_module_says_how_it_sums_the_encoding_gradients():
    """design.md §8.3: fp16 for an fp16 encoding with F >= 2, else fp32; 0 for a network."""
    def size(encoding):
        module = gridjit.Network({"encoding": encoding, "network": MLP}, 3, 1).module()
        try:
            return module.encoding_gradient_size()
        finally:
            module.close()

    half = {"otype": "HashGrid", "n_levels": 4, "n_features_per_level": 2, "log2_hashmap_size": 12,
            "precision": "fp16"}
    assert size(half) == 2
    assert size(dict(half, n_features_per_level=1)) == 4
    assert size(dict(half, precision="fp32")) == 4
    net = gridjit.Network({"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}, 3, 2).module()
    assert net.encoding_gradient_size() == 0
    net.close()
    assert _capi.lib.gj_network_module_encoding_gradient_size(None) == 0
    with pytest.raises(TypeError):
        gridjit.NetworkModule(gridjit.Encoding(GRID, 3))


def test_waiting_for_the_compiles_behind_the_passes():
    """A module with nothing compiling behind its passes (none has run) returns at once, alone
    or through gridjit.wait_compiles(), which waits for every live module; a closed one is no
    longer among them; a NULL module is refused."""
    module = gridjit.Network({"encoding": GRID, "network": MLP}, 3, 1).module()
    module.wait_compiles()
    gridjit.wait_compiles()
    module.close()
    gridjit.wait_compiles()
    assert _capi.lib.gj_network_module_wait_compiles(None) == 1


def test_network_entry_points_refuse_a_null_module():
    lib = _capi.lib
    desc = _capi.init_struct(_capi.NetworkPassDesc, "gj_network_pass_desc_init")
    init = _capi.init_struct(_capi.NetworkInitDesc, "gj_network_init_desc_init")
    assert lib.gj_network_inference(None, None, byref(desc)) == 1
    assert lib.gj_network_forward(None, None, byref(desc)) == 1
    assert lib.gj_network_backward(None, None, byref(desc)) == 1
    assert lib.gj_network_init_params(None, None, byref(init)) == 1
    train = _capi.init_struct(_capi.NetworkTrainDesc, "gj_network_train_desc_init")
    adam = _capi.init_struct(_capi.NetworkAdamDesc, "gj_network_adam_desc_init")
    assert lib.gj_network_train_step(None, None, byref(train)) == 1
    assert lib.gj_network_adam_step(None, None, byref(adam)) == 1
    assert lib.gj_network_module_context_bytes(None, 100) == 0
    lib.gj_network_module_destroy(None)  # no-ops
    lib.gj_network_destroy(None)
    ctx = gridjit.Context()
    handle = _capi.network_module_p()
    assert lib.gj_network_module_create(ctx.handle, None, byref(handle)) == 1 and not handle.value
    # The defaults the _init functions set (docs/networks.md §8).
    assert desc.dL_dparams_mode == _capi.GRAD_OVERWRITE and desc.n == 0
    assert init.seed == 1337 and init.scale == 1.0


def test_launches_without_a_driver_raise_no_driver():
    code = (
        "import gridjit\n"
        "m = gridjit.Network({'n_neurons': 16, 'n_hidden_layers': 1}, 3, 1).module()\n"
        "for call in (lambda: m.init_params(params_fp32=64), lambda: m.inference(0, 0, 0, 0)):\n"
        "    try:\n"
        "        call()\n"
        "    except gridjit.NoDriverError as exc:\n"
        "        assert 'GRIDJIT_DRIVER' in str(exc), exc\n"
        "        print(exc.call)\n"
        "    else:\n"
        "        print('no error')\n"
    )
    result = run_python(code, {"GRIDJIT_DRIVER": "off"})
    # n = 0 launches nothing (no error); the initialisation's copy needs the driver.
    assert result.returncode == 0 and result.stdout.split() == ["gj_network_init_params", "no", "error"], result.stderr


def _fake_driver():
    path = Path(gridjit.library_path).resolve().parent / "tests" / "libgj_fake_cuda.so"
    return path if path.is_file() else None


def test_the_gradients_fp32_knob_makes_a_model_sum_its_encoding_in_fp32():
    """GRIDJIT_NETWORK_GRADIENTS_FP32=1 (a measuring knob, read when a module is made): a
    model's fp16 encoding then sums its gradients in fp32 (4 bytes a parameter, not 2)."""
    code = (
        "import gridjit\n"
        "net = gridjit.Network({'encoding': {'otype': 'HashGrid', 'n_levels': 2}, 'network': {'n_neurons': 16}}, 3, 2)\n"
        "print(net.module().encoding_gradient_size())\n"
    )
    sizes = [run_python(code, {"GRIDJIT_NETWORK_GRADIENTS_FP32": v}).stdout.strip() for v in ("0", "1")]
    assert sizes == ["2", "4"]


def test_launches_on_the_fake_driver():
    """On the CMake build's stand-in libcuda (it runs nothing): every NetworkModule entry point
    gets GJ_OK for a well-formed call and the library's message for a malformed one, so the
    descriptors the wrappers fill are the ones the library expects."""
    fake = _fake_driver()
    if fake is None:
        pytest.skip("the fake libcuda of the CMake build (tests/libgj_fake_cuda.so) is not beside the library")
    code = (
        "import gridjit\n"
        "ctx = gridjit.Context()\n"
        "if ctx.nvrtc_supported_archs() == []: raise SystemExit('no nvrtc')\n"
        "m = gridjit.Network({'n_neurons': 16, 'n_hidden_layers': 1}, 3, 2, context=ctx).module()\n"
        "p = 1 << 20\n"  # any 16-byte aligned address: the fake reads no memory
        "m.init_params(p, params_fp32=p + 4096, seed=7, scale=0.5)\n"
        "m.inference(100, p, p, p)\n"
        "m.forward(100, p, p, p, p)\n"
        "m.backward(100, p, p, p, dL_dparams=p, dL_dinput=p)\n"
        "m.inference(100, p, p, p, fp16=True)\n"
        "m.forward(100, p, p, p, p, fp16=True)\n"
        "m.backward(100, p, p, p, dL_dparams=p, dL_dinput=p, fp16=True)\n"
        "m.backward(100, p, p, p, dL_dparams=p, accumulate=True)\n"
        "m.backward(100, p, p, p, dL_dparams=p, loss_scale=128.0)\n"
        "m.backward(100, p, p, p, dL_dparams=p, loss_scale=128.0, unscale=True)\n"
        "try:\n"
        "    m.backward(100, p, p, p, dL_dparams=p, accumulate=True, loss_scale=128.0, unscale=True)\n"
        "except gridjit.InvalidArgumentError as exc:\n"
        "    assert 'unscale_gradients needs' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('unscaling accumulated gradients was taken')\n"
        "for bad in (-1.0, float('inf')):\n"
        "    try:\n"
        "        m.backward(100, p, p, p, dL_dparams=p, loss_scale=bad)\n"
        "    except gridjit.InvalidArgumentError as exc:\n"
        "        assert 'dL_doutput_scale' in str(exc), exc\n"
        "    else:\n"
        "        raise SystemExit('a loss scale of %r was taken' % bad)\n"
        "m.train_step(100, p, p, p, p, loss=p, loss_scale=4.0)\n"
        "m.adam_step(p, p, p, p, p, p, learning_rate=1e-2)\n"
        "try:\n"
        "    m.train_step(100, p, 0, p, p)\n"
        "except gridjit.InvalidArgumentError as exc:\n"
        "    assert 'target' in str(exc) and exc.call == 'gj_network_train_step', exc\n"
        "else:\n"
        "    raise SystemExit('a step without targets was taken')\n"
        "try:\n"
        "    m.adam_step(p, p, p, p, p, p, beta1=1.0)\n"
        "except gridjit.InvalidArgumentError as exc:\n"
        "    assert 'beta1 = 1' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('beta1 = 1 was taken')\n"
        "try:\n"
        "    m.backward(100, p, p, p)\n"
        "except gridjit.InvalidArgumentError as exc:\n"
        "    assert 'dL_dparams, dL_dinput' in str(exc) and exc.call == 'gj_network_backward', exc\n"
        "try:\n"
        "    m.forward(100, p, p, p, 0)\n"
        "except gridjit.InvalidArgumentError as exc:\n"
        "    assert 'context' in str(exc), exc\n"
        "print('ok')\n"
    )
    result = run_python(code, {"GRIDJIT_DRIVER": str(fake)})
    if "no nvrtc" in result.stdout + result.stderr:
        pytest.skip("NVRTC is not available here")
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr + result.stdout


def test_struct_mirrors_include_the_network_descriptors():
    sizes = gridjit.STRUCT_SIZES
    for name in ("NetworkLayerInfo", "NetworkPassDesc", "NetworkInitDesc", "NetworkTrainDesc", "NetworkAdamDesc"):
        assert sizes[name][0] == sizes[name][1]
    assert json.loads(gridjit.Network(MLP, 3, 1).hyperparams_json)["n_neurons"] == 64


@needs_nvrtc
def test_a_network_precompiles_its_module_programs_into_the_cache(tmp_path):
    """gj_network_precompile through Network.precompile: the six programs (inference, the
    forward for training, the backward, the backward with dL/dinput, the training step, Adam)
    compiled with NVRTC into the context's cache, then found there; an unknown architecture is
    an error that names it. Needs NVRTC, not a GPU."""
    ctx = gridjit.Context()
    ctx.set_cache_dir(str(tmp_path))
    net = gridjit.Network({"otype": "FullyFusedMLP", "n_neurons": 16, "n_hidden_layers": 1}, 3, 2, context=ctx)
    first = net.precompile("sm_80")
    assert first["programs"] == 6 and first["compiled"] == 6 and first["cached"] == 0
    again = net.precompile("sm_80")
    assert again["compiled"] == 0 and again["cached"] == 6
    with pytest.raises(gridjit.GridJitError, match="sm_1"):
        net.precompile("sm_1")
