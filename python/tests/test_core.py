"""The bindings without a GPU: configuration, layout, generation, compilation, the disk
cache, NVRTC, the runtime probe, and errors as exceptions with the library's messages."""

from __future__ import annotations

import json
import re
import subprocess
import threading

import pytest

import gridjit
from conftest import installed_tool, needs_nvrtc, run_python

# docs/design.md §2.7, the worked example.
WORKED = {
    "otype": "HashGrid",
    "base_resolution": 32,
    "log2_hashmap_size": 16,
    "n_features_per_level": 2,
    "n_levels": 20,
    "per_level_scale": 1.5,
}
SMALL = {"otype": "HashGrid", "n_levels": 2, "log2_hashmap_size": 8, "base_resolution": 4, "precision": "fp32"}


def test_version_matches_library_and_package():
    assert gridjit.__version__ == gridjit.version_string()
    major, minor, patch = (int(p) for p in gridjit.version_string().split("."))
    assert gridjit.version() == major * 10000 + minor * 100 + patch


def test_worked_example_layout():
    enc = gridjit.Encoding(WORKED, 3)
    assert (enc.n_dims, enc.n_levels, enc.n_features_per_level) == (3, 20, 2)
    assert enc.n_output_dims == 40
    assert enc.n_params == 2555904
    assert enc.precision == "fp16"
    assert (enc.grid_type, enc.interpolation, enc.hash) == ("Hash", "Linear", "CoherentPrime")
    assert (enc.base_resolution, enc.per_level_scale, enc.log2_hashmap_size) == (32, 1.5, 16)
    assert enc.stochastic_interpolation is False and enc.fixed_point_pos is False
    levels = enc.levels
    assert len(levels) == 20
    assert levels[0] == {"level": 0, "scale": 31.0, "resolution": 32, "entries": 32768, "offset": 0, "hashed": False}
    assert levels[1] == {"level": 1, "scale": 47.0, "resolution": 48, "entries": 65536, "offset": 32768, "hashed": True}
    assert levels[2]["scale"] == 71.0 and levels[2]["offset"] == 98304
    assert all(lv["entries"] == 65536 and lv["hashed"] for lv in levels[1:])
    assert enc.level(19) == levels[19]


def test_every_getter_reflects_the_configuration():
    config = {
        "otype": "TiledGrid",
        "n_levels": 3,
        "n_features_per_level": 4,
        "base_resolution": 5,
        "per_level_scale": 1.25,
        "interpolation": "smoothstep",
        "hash": "BaseConvert",
        "stochastic_interpolation": True,
        "fixed_point_pos": True,
        "precision": "fp32",
    }
    enc = gridjit.Encoding(json.dumps(config), 2)  # JSON text works as well as a dict
    assert (enc.grid_type, enc.interpolation, enc.hash, enc.precision) == ("Tiled", "Smoothstep", "BaseConvert", "fp32")
    assert enc.stochastic_interpolation is True and enc.fixed_point_pos is True
    assert (enc.n_dims, enc.n_levels, enc.n_features_per_level, enc.n_output_dims) == (2, 3, 4, 12)
    assert enc.base_resolution == 5 and enc.per_level_scale == 1.25
    # Tiled: every level has at most base_resolution^D = 25 entries.
    assert all(lv["entries"] <= 25 and not lv["hashed"] for lv in enc.levels)
    assert enc.n_params == sum(lv["entries"] for lv in enc.levels) * 4


def test_hyperparams_round_trip():
    enc = gridjit.Encoding({"otype": "DenseGrid", "n_levels": 4}, 2)
    hp = enc.hyperparams
    assert hp["type"] == "Dense" and hp["n_dims_to_encode"] == 2 and hp["precision"] == "fp16"
    assert json.loads(enc.hyperparams_json) == hp
    again = gridjit.Encoding(enc.hyperparams_json)  # n_dims from n_dims_to_encode
    assert again.hyperparams == hp and again.levels == enc.levels and again.n_params == enc.n_params
    assert "gridjit.Encoding(" in repr(enc)


def test_invalid_config_raises_with_the_library_message():
    ctx = gridjit.Context()
    with pytest.raises(gridjit.InvalidConfigError) as info:
        gridjit.Encoding({"otype": "HashGrid", "n_levls": 4}, 3, context=ctx)
    err = info.value
    assert err.status == 2 and err.status_name == "GJ_ERROR_INVALID_CONFIG"
    assert err.call == "gj_encoding_create"
    assert "n_levls" in str(err) and "n_levels" in str(err)  # names the key, suggests the right one
    assert str(err) == ctx.errmsg  # exactly gj_context_errmsg, read on this thread
    assert isinstance(err, ValueError) and isinstance(err, gridjit.GridJitError)


@pytest.mark.parametrize(
    "config, n_dims, fragment",
    [
        ({"n_features_per_level": 3}, 3, "n_features_per_level"),
        ({"interpolation": "Cubic"}, 3, "interpolation"),
        ({"n_dims_to_encode": 2}, 3, "n_dims_to_encode"),
        ({"log2_hashmap_size": 40}, 3, "log2_hashmap_size"),
        ({"precision": "fp64"}, 3, "precision"),
    ],
)
def test_config_errors_name_the_key(config, n_dims, fragment):
    with pytest.raises(gridjit.InvalidConfigError, match=re.escape(fragment)):
        gridjit.Encoding(config, n_dims)


def test_errors_are_per_thread():
    ctx = gridjit.Context()
    with pytest.raises(gridjit.InvalidConfigError):
        gridjit.Encoding({"n_levels": 0}, 3, context=ctx)
    main_message = ctx.errmsg
    assert "n_levels" in main_message
    seen = {}

    def other():
        seen["before"] = ctx.errmsg  # another thread has no message of its own yet
        try:
            gridjit.Encoding({"base_resolution": 0}, 3, context=ctx)
        except gridjit.InvalidConfigError as exc:
            seen["error"] = str(exc)
        seen["after"] = ctx.errmsg

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen["before"] == ""
    assert "base_resolution" in seen["error"] and seen["after"] == seen["error"]
    assert ctx.errmsg == main_message  # this thread's message is untouched
    gridjit.Encoding({"n_levels": 2}, 3, context=ctx)
    assert ctx.errmsg == ""  # a successful call empties it


def test_level_out_of_range():
    enc = gridjit.Encoding(SMALL, 2)
    with pytest.raises(gridjit.InvalidArgumentError) as info:
        enc.level(2)
    assert info.value.status == 1 and info.value.call == "gj_encoding_level"


def test_status_names_and_messages():
    assert gridjit.status_name(0) == "GJ_OK"
    assert gridjit.status_name(6) == "GJ_ERROR_COMPILE"
    assert gridjit.status_name(999) == "GJ_UNKNOWN_STATUS"
    assert gridjit.status_message(5) == "NVRTC is not available"
    for status, cls in gridjit.errors.ERRORS_BY_STATUS.items():
        assert gridjit.status_name(status) == "GJ_" + gridjit._capi.STATUS_NAMES[status]
        err = gridjit.errors.error_for(status, "", "gj_test")
        assert type(err) is cls and err.status == status
        assert str(err) == f"gj_test: {gridjit.status_message(status)}"  # no message: the status's description
    assert set(gridjit.errors.ERRORS_BY_STATUS) == set(range(1, 16))


def test_generate_is_deterministic_and_takes_options():
    enc = gridjit.Encoding(SMALL, 2)
    source = enc.generate()
    assert source == enc.generate()
    assert "__global__" in source and "gj_encode" in source
    named = enc.generate(name="my_grid", device_functions_only=True)
    assert "my_grid" in named and "__global__" not in named
    forward_only = enc.generate(gridjit.CodegenOptions(passes=["forward"]))
    assert "gj_encode_bwd" in source and "gj_encode_bwd" not in forward_only
    padded = enc.generate({"output_width_multiple": 16, "block_size": 128, "points_per_thread": 2, "order": "point"})
    assert padded != source
    with pytest.raises(ValueError, match="order"):
        enc.generate(order="diagonal")
    with pytest.raises(ValueError, match="unknown pass"):
        enc.generate(passes=["sideways"])


def test_generate_refuses_bad_options_with_the_library_message():
    enc = gridjit.Encoding(SMALL, 2)
    with pytest.raises(gridjit.InvalidArgumentError) as info:
        enc.generate(name="not an identifier")
    assert info.value.call == "gj_encoding_generate" and "name" in str(info.value)


def test_compile_options():
    options = gridjit.compile_options("sm_90")
    assert any("sm_90" in o for o in options)
    with pytest.raises(gridjit.InvalidArgumentError):
        gridjit.compile_options("banana")


def test_runtime_probe_without_driver_in_a_subprocess():
    # GRIDJIT_DRIVER=off: as if there were no driver, also on a machine with a GPU.
    code = (
        "import gridjit\n"
        "info = gridjit.runtime_probe()\n"
        "assert not info.available and info.status == 'GJ_ERROR_NO_DRIVER', info\n"
        "assert 'GRIDJIT_DRIVER' in info.reason, info.reason\n"
        "try:\n"
        "    gridjit.runtime_probe(strict=True)\n"
        "except gridjit.NoDriverError as exc:\n"
        "    assert exc.message == info.reason and exc.call == 'gj_runtime_probe'\n"
        "else:\n"
        "    raise SystemExit('no NoDriverError')\n"
        "try:\n"
        "    gridjit.Encoding({'n_levels': 2}, 2).module()\n"
        "except gridjit.NoDriverError as exc:\n"
        "    assert 'GRIDJIT_DRIVER' in str(exc) and exc.call == 'gj_module_create', exc\n"
        "else:\n"
        "    raise SystemExit('no NoDriverError from gj_module_create')\n"
        "print('ok')\n"
    )
    result = run_python(code, {"GRIDJIT_DRIVER": "off"})
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_runtime_probe_result_is_consistent():
    info = gridjit.runtime_probe()
    assert isinstance(info, gridjit.RuntimeInfo)
    if info.available:
        assert info.device_count >= 1 and info.arch.startswith("sm_") and info.device_name
        assert info.arch == "sm_%d%d" % info.compute_capability
    else:
        assert info.status in ("GJ_ERROR_NO_DRIVER", "GJ_ERROR_NO_DEVICE") and info.reason


def test_module_entry_points_refuse_a_null_module():
    """Every runtime entry through the declared prototypes (the GPU tests run them for
    real): a NULL module is refused, getters of NULL return 0."""
    capi = gridjit._capi
    lib = capi.lib
    fwd = capi.init_struct(capi.ForwardDesc, "gj_forward_desc_init")
    bwd = capi.init_struct(capi.BackwardDesc, "gj_backward_desc_init")
    bwdbwd = capi.init_struct(capi.BackwardBackwardDesc, "gj_backward_backward_desc_init")
    init = capi.init_struct(capi.InitDesc, "gj_init_desc_init")
    from ctypes import byref

    assert lib.gj_forward(None, None, byref(fwd)) == 1
    assert lib.gj_backward(None, None, byref(bwd)) == 1
    assert lib.gj_backward_backward(None, None, byref(bwdbwd)) == 1
    assert lib.gj_init_params(None, None, byref(init)) == 1
    ctx = gridjit.Context()
    module = capi.module_p()
    assert lib.gj_module_create(ctx.handle, None, None, byref(module)) == 1 and not module.value
    assert "must not be NULL" in ctx.errmsg
    assert lib.gj_module_prepare(None, 7) == 1
    info = capi.ModuleProgramInfo()
    assert lib.gj_module_describe_program(None, 0, byref(info)) == 1
    assert lib.gj_module_n_programs(None) == 0
    assert lib.gj_module_passes(None) == 0
    assert lib.gj_module_output_width(None) == 0
    assert lib.gj_module_n_params(None) == 0
    assert lib.gj_module_element_size(None) == 0
    lib.gj_module_destroy(None)  # a no-op
    # The defaults the _init functions set (docs/runtime.md).
    assert fwd.max_level == 1.0 and fwd.y_layout == capi.LAYOUT_AOS
    assert bwd.dL_dparams_mode == capi.GRAD_OVERWRITE and bwdbwd.max_level == 1.0
    assert init.scale == 1.0 and init.seed == 0


def test_log_callback_and_level():
    ctx = gridjit.Context()
    messages = []
    ctx.set_log(lambda level, message: messages.append((level, message)))
    ctx.set_log_level("debug")
    ctx.set_cache_dir("/proc/gridjit-cannot-write-here")  # unusable: one warning when first used
    ctx.set_cache_enabled(True)
    enc = gridjit.Encoding(SMALL, 2, context=ctx)
    try:
        enc.compile("sm_90")
    except gridjit.NoNvrtcError:
        pass
    assert messages, "the log callback received nothing"
    assert all(level in ("debug", "info", "warning", "error") for level, _ in messages)
    count = len(messages)
    ctx.set_log(None)  # silenced
    ctx.set_log_level(3)
    gridjit.Encoding(SMALL, 2, context=ctx).generate()
    try:
        enc.compile("sm_80")
    except gridjit.NoNvrtcError:
        pass
    assert len(messages) == count


def test_closed_objects_refuse_use():
    ctx = gridjit.Context()
    enc = gridjit.Encoding(SMALL, 2, context=ctx)
    enc.close()
    with pytest.raises(ValueError, match="closed"):
        enc.n_params
    with ctx:
        pass
    with pytest.raises(ValueError, match="closed"):
        ctx.errmsg


# ----------------------------------------------------------------------------- NVRTC


@needs_nvrtc
def test_nvrtc_version_and_archs(context):
    major, minor = context.nvrtc_version()
    assert major >= 12 and minor >= 0
    assert gridjit.nvrtc_version() == (major, minor)
    archs = context.nvrtc_supported_archs()
    assert "sm_90" in archs and all(a.startswith("sm_") for a in archs)


@needs_nvrtc
def test_compile_cache_miss_then_hit(context):
    enc = gridjit.Encoding(SMALL, 2, context=context)
    first = enc.compile("sm_90", passes=["forward"])
    assert first.kind == "cubin" and first.arch == "sm_90" and len(first.binary) > 0
    assert first.binary[:4] == b"\x7fELF"
    assert first.cache_status == "miss" and re.fullmatch(r"[0-9a-f]{32}", first.cache_key)
    assert ("&gj_encode_forward", first.kernels[0][1]) == first.kernels[0] and first.kernels[0][1].startswith("_Z")
    assert first.compile_ms > 0 and "gj_encode" in first.source
    second = enc.compile("sm_90", passes=["forward"])
    assert second.cache_status == "hit" and second.cache_key == first.cache_key and second.binary == first.binary
    stats = context.cache_stats()
    assert (stats.hits, stats.misses, stats.compiles) == (1, 1, 1)
    assert stats.bytes_written > 0 and stats.bytes_read > 0
    assert stats.entries == 1 and stats.bytes > 0 and stats.max_bytes > 0
    assert stats.directory == context.cache_dir
    assert context.cache_stats("context").hits == 1
    with pytest.deprecated_call():
        assert stats.disk_bytes == stats.bytes  # the old name still answers
    with pytest.raises(ValueError, match="scope"):
        context.cache_stats("galaxy")
    entries = context.cache_entries()
    assert [e.key for e in entries] == [first.cache_key]
    assert entries[0].kind == "cubin" and entries[0].target == "sm_90" and entries[0].writable
    assert entries[0].path.startswith(context.cache_dir)
    assert context.cache_verify() == (1, 0)
    assert context.cache_prune() == (0, 0)
    assert context.cache_clear() == 1
    assert context.cache_entries() == []


@needs_nvrtc
def test_cache_stats_count_as_the_cli_does(context, tmp_path):
    """Context.cache_stats() is `gridjit cache stats --json`: the same directory-wide counts
    under the same names; after set_cache_dir, the new directory's (no hits carried over)."""
    enc = gridjit.Encoding(SMALL, 2, context=context)
    enc.compile("sm_90", passes=["forward"])
    enc.compile("sm_90", passes=["forward"])  # a hit
    first_dir = context.cache_dir
    ours = context.cache_stats().as_dict()
    assert (ours["hits"], ours["misses"], ours["entries"]) == (1, 1, 1) and ours["directory"] == first_dir

    context.set_cache_dir(str(tmp_path / "other"))
    moved = context.cache_stats()
    assert moved.directory == str(tmp_path / "other") and moved.directory != first_dir
    assert (moved.hits, moved.misses, moved.compiles, moved.entries, moved.bytes) == (0, 0, 0, 0, 0)
    back = gridjit.Context()
    back.set_cache_dir(first_dir)
    assert back.cache_stats().hits == 1  # what the first directory counted stays there
    back.close()

    tool = installed_tool()
    if tool is None:
        pytest.skip("no gridjit tool beside the package to compare with")
    for directory, expected in ((first_dir, ours), (moved.directory, moved.as_dict())):
        run = subprocess.run([str(tool), "cache", "stats", "--json", "--cache-dir", directory],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        cli = json.loads(run.stdout)
        assert set(cli) == set(expected), (sorted(cli), sorted(expected))
        for key, value in cli.items():
            if key == "compile_ms":
                assert value == pytest.approx(expected[key], abs=1e-3)
            else:
                assert value == expected[key], key


@needs_nvrtc
def test_compile_ptx_and_cache_settings(context, tmp_path):
    enc = gridjit.Encoding(SMALL, 2, context=context)
    context.set_cache_keep_source(True)
    context.set_cache_max_bytes(1 << 30)
    context.set_lineinfo(False)
    ptx = enc.compile("compute_90", passes=["forward"])
    assert ptx.kind == "ptx" and ptx.binary.endswith(b"\0") and b".entry" in ptx.binary
    kinds = sorted(e.kind for e in context.cache_entries())
    assert kinds == ["ptx", "source"]
    context.set_cache_enabled(False)
    off = enc.compile("compute_90", passes=["forward"])
    assert off.cache_status == "off"
    context.set_cache_enabled(True)
    context.set_lineinfo(None)
    other = tmp_path / "other"
    context.set_cache_dir(str(other))
    assert context.cache_dir == str(other)
    context.set_cache_dir(None)  # back to the environment / default
    assert context.cache_dir != str(other)


@needs_nvrtc
def test_compile_errors(context):
    enc = gridjit.Encoding(SMALL, 2, context=context)
    with pytest.raises(gridjit.InvalidArgumentError) as bad_arch:
        enc.compile("pentium")
    assert "pentium" in str(bad_arch.value)
    with pytest.raises(gridjit.UnsupportedArchError):
        enc.compile("sm_10")
    with pytest.raises(gridjit.CompileError) as info:
        context.compile_source("__global__ void k() { this is not cuda; }\n", ["&k"], "sm_90")
    err = info.value
    assert err.status == 6 and err.call == "gj_compile_source"
    assert "error" in err.log and "this is not cuda" in err.log  # numbered source lines around the error
    assert err.log in str(err)
    good = context.compile_source("extern \"C\" __global__ void k(float *p) { p[0] = 1.0f; }\n", ["k"], "sm_90")
    assert good.kind == "cubin" and good.kernels[0][0] == "k"


@needs_nvrtc
def test_nvrtc_disabled(context):
    enc = gridjit.Encoding(SMALL, 2, context=context)
    context.set_nvrtc_enabled(False)
    with pytest.raises(gridjit.NoNvrtcError) as info:
        context.nvrtc_version()
    assert info.value.status == 5 and info.value.message == context.errmsg
    with pytest.raises(gridjit.GridJitError) as compile_info:
        enc.compile("sm_90", passes=["forward"])  # nothing cached: cannot be had
    assert compile_info.value.status in (5, 12)
    context.set_nvrtc_enabled(True)
    assert enc.compile("sm_90", passes=["forward"]).kind == "cubin"


@needs_nvrtc
def test_precompile(context):
    enc = gridjit.Encoding(SMALL, 2, context=context)
    report = enc.precompile("sm_90", passes=["forward"], threads=2)
    assert report["programs"] >= 1 and report["compiled"] + report["cached"] == report["programs"]
    assert report["ms"] > 0
    again = enc.precompile("sm_90", passes=["forward"], threads=2)
    assert again["cached"] == again["programs"] and again["compiled"] == 0


def test_module_backward_passes_dy_dx(monkeypatch):
    """Module.backward hands dy_dx to gj_backward (dL/dx from the forward's dy/dx), and
    leaves it NULL when not given. The launch itself is the C library's (its GPU tests)."""
    import ctypes
    from types import SimpleNamespace

    from gridjit import _capi, core

    module = object.__new__(core.Module)
    module._handle = 1
    module._bwd = _capi.init_struct(_capi.BackwardDesc, "gj_backward_desc_init")
    module.context = SimpleNamespace(check=lambda status, call: None)
    seen = []

    def fake_backward(handle, stream, desc_ref):
        seen.append(_capi.BackwardDesc.from_buffer_copy(desc_ref._obj))
        return 0

    monkeypatch.setattr(core.lib, "gj_backward", fake_backward)
    try:
        module.backward(8, 0x1000, 0x2000, 0x3000, dL_dx=0x4000, dy_dx=0x5000)
        module.backward(8, 0x1000, 0x2000, 0x3000, dL_dparams=0x6000)
        module.backward(8, 0x1000, 0x2000, 0x3000, dL_dx=0x4000, dy_dx_compact=0x7000)
    finally:
        module._handle = None  # nothing to destroy: the handle was never the library's
    assert seen[0].dy_dx == 0x5000 and seen[0].dL_dx == 0x4000
    assert seen[1].dy_dx is None and seen[1].dy_dx_compact is None and seen[1].dL_dparams == 0x6000
    assert seen[2].dy_dx is None and seen[2].dy_dx_compact == 0x7000
    assert seen[0].struct_size == ctypes.sizeof(_capi.BackwardDesc)
