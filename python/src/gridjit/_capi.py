"""The C API of libgridjit, declared for ctypes.

Why ctypes rather than a compiled extension module: libgridjit is a plain C library
with a stable C ABI (docs/ABI.md) and it already compiles the CUDA kernels itself at run
time. Binding it with ctypes means the package contains no CPython extension at all:
nothing to compile against a particular Python, and nothing compiled against
PyTorch's C++ ABI (which changes with every torch release and with the CXX11 ABI
flag). One built tree therefore works with any Python 3 and any torch version, and a
wheel is tagged py3-none-<platform>. The price is that every struct the API exchanges
is mirrored here by hand; :func:`check_struct_sizes` verifies the mirrors against the
sizes the library itself writes, when the library is loaded.

Everything in this module is private to the package: use :mod:`gridjit`.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_size_t,
    c_uint,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path

_HERE = Path(__file__).resolve().parent

# ----------------------------------------------------------------------------- loading

#: SONAME of the library this package bundles (major version 0).
_SONAME = "libgridjit.so.0"


def _candidates() -> list[Path]:
    """Where the library is looked for: the copy bundled in the package, then the
    file named by the environment variable GRIDJIT_LIBRARY (a fallback for running the
    package from the source tree against a build directory)."""
    found = []
    bundled = _HERE / "lib" / _SONAME
    if bundled.is_file():
        found.append(bundled)
    env = os.environ.get("GRIDJIT_LIBRARY")
    if env:
        found.append(Path(env))
    return found


def _load() -> tuple[ctypes.CDLL, str]:
    candidates = _candidates()
    if not candidates:
        raise ImportError(
            f"gridjit: the bundled library {_HERE / 'lib' / _SONAME} is missing and GRIDJIT_LIBRARY is not set. "
            "Install the package with `pip install ./python` (from the gridjit repository), or point "
            "GRIDJIT_LIBRARY at a libgridjit.so built with CMake."
        )
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(str(path)), str(path)
        except OSError as exc:  # e.g. a missing dependency: say which file and why
            errors.append(f"{path}: {exc}")
    raise ImportError("gridjit: cannot load libgridjit: " + "; ".join(errors))


lib, library_path = _load()

# ----------------------------------------------------------------------------- structs
# Each mirrors a struct of include/gridjit.h.in field by field, in order; C enums are
# int on every platform gridjit supports. tests/test_capi.py compares every field's
# offset with what a C compiler says for the installed header.


class CodegenOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("passes", c_uint32),
        ("output_width_multiple", c_uint32),
        ("name", c_char_p),
        ("device_functions_only", c_int),
        ("block_size", c_uint32),
        ("points_per_thread", c_uint32),
        ("order", c_int),
        ("unroll_levels", c_int),
        ("gradients_fp32", c_int),
        ("levels_per_thread", c_uint32),
    ]


class LevelInfo(Structure):
    _fields_ = [
        ("level", c_uint32),
        ("scale", c_float),
        ("resolution", c_uint32),
        ("entries", c_uint32),
        ("offset", c_uint64),
        ("hashed", c_int),
    ]


class PrecompileReport(Structure):
    _fields_ = [
        ("programs", c_uint32),
        ("compiled", c_uint32),
        ("cached", c_uint32),
        ("ms", c_double),
    ]


class CacheStats(Structure):
    _fields_ = [
        ("hits", c_uint64),
        ("misses", c_uint64),
        ("compiles", c_uint64),
        ("compile_ms", c_double),
        ("bytes_read", c_uint64),
        ("bytes_written", c_uint64),
        ("evictions", c_uint64),
        ("corrupt", c_uint64),
        ("entries", c_uint64),
        ("disk_bytes", c_uint64),
        ("max_bytes", c_uint64),
    ]


class CacheEntryInfo(Structure):
    _fields_ = [
        ("key", c_char_p),
        ("config_key", c_char_p),
        ("path", c_char_p),
        ("bytes", c_uint64),
        ("target", c_char_p),
        ("kind", c_char_p),
        ("writable", c_int),
    ]


class RuntimeInfo(Structure):
    _fields_ = [
        ("driver_found", c_int),
        ("driver_version", c_int),
        ("device_count", c_int),
        ("device", c_int),
        ("device_name", c_char * 256),
        ("cc_major", c_int),
        ("cc_minor", c_int),
        ("arch", c_char * 16),
    ]


class ModuleProgramInfo(Structure):
    _fields_ = [
        ("program", c_char_p),
        ("arch", c_char * 24),
        ("compile_ms", c_double),
        ("cache", c_int),
        ("binary_bytes", c_size_t),
    ]


class ForwardDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n", c_uint64),
        ("x", c_void_p),
        ("params", c_void_p),
        ("y", c_void_p),
        ("y_layout", c_int),
        ("dy_dx", c_void_p),
        ("max_level_per_point", c_void_p),
        ("max_level", c_float),
        ("dy_dx_compact", c_void_p),
    ]


class BackwardDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n", c_uint64),
        ("x", c_void_p),
        ("params", c_void_p),
        ("dL_dy", c_void_p),
        ("dL_dy_layout", c_int),
        ("dL_dparams", c_void_p),
        ("dL_dparams_mode", c_int),
        ("dL_dx", c_void_p),
        ("max_level_per_point", c_void_p),
        ("max_level", c_float),
        ("dy_dx", c_void_p),
        ("dy_dx_compact", c_void_p),
    ]


class BackwardBackwardDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n", c_uint64),
        ("x", c_void_p),
        ("params", c_void_p),
        ("dL_ddLdx", c_void_p),
        ("dL_dy", c_void_p),
        ("dL_dy_layout", c_int),
        ("dL_dparams", c_void_p),
        ("dL_dparams_mode", c_int),
        ("dL_ddLdy", c_void_p),
        ("dL_ddLdy_layout", c_int),
        ("dL_dx", c_void_p),
        ("max_level_per_point", c_void_p),
        ("max_level", c_float),
    ]


class InitDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("params", c_void_p),
        ("params_fp32", c_void_p),
        ("seed", c_uint64),
        ("scale", c_float),
    ]


class NetworkLayerInfo(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("layer", c_uint32),
        ("fan_in", c_uint32),
        ("fan_out", c_uint32),
        ("offset", c_uint64),
        ("n_params", c_uint64),
        ("activation", c_int),
    ]


class NetworkPassDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n", c_uint64),
        ("input", c_void_p),
        ("params", c_void_p),
        ("output", c_void_p),
        ("context", c_void_p),
        ("dL_doutput", c_void_p),
        ("dL_dparams", c_void_p),
        ("dL_dparams_mode", c_int),
        ("dL_dinput", c_void_p),
        ("encoding_params", c_void_p),  # a model only: the encoding's parameters
        ("dL_dencoding_params", c_void_p),
        ("dL_doutput_scale", c_float),  # appended after 0.1.0: a loss scale the kernels apply (0: none)
        ("dL_dencoding_params_fp32", c_void_p),  # appended after the loss scale: a model's fp32 encoding gradients
        ("unscale_gradients", c_uint32),  # 1: the fp32 gradients divided by the loss scale
        ("output_fp16", c_void_p),  # appended after unscale_gradients: fp16 outputs instead of output
        ("dL_doutput_fp16", c_void_p),  # appended after output_fp16: fp16 dL/doutput instead of dL_doutput
    ]


class NetworkInitDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("params", c_void_p),
        ("params_fp32", c_void_p),
        ("seed", c_uint64),
        ("scale", c_float),
        ("encoding_params", c_void_p),  # a model only: the encoding's, its precision
        ("encoding_params_fp32", c_void_p),
    ]


class NetworkTrainDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("n", c_uint64),
        ("input", c_void_p),
        ("target", c_void_p),
        ("params", c_void_p),
        ("encoding_params", c_void_p),  # a model only
        ("loss_scale", c_float),  # 0: 128
        ("dL_dparams", c_void_p),
        ("dL_dencoding_params", c_void_p),  # a model only
        ("output", c_void_p),
        ("loss", c_void_p),
    ]


class NetworkAdamDesc(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("learning_rate", c_float),
        ("beta1", c_float),
        ("beta2", c_float),
        ("epsilon", c_float),
        ("l2_reg", c_float),
        ("loss_scale", c_float),
        ("params", c_void_p),
        ("params_fp32", c_void_p),
        ("first_moments", c_void_p),
        ("second_moments", c_void_p),
        ("steps", c_void_p),
        ("dL_dparams", c_void_p),
        ("encoding_params", c_void_p),  # a model only: the encoding's six arrays
        ("encoding_params_fp32", c_void_p),
        ("encoding_first_moments", c_void_p),
        ("encoding_second_moments", c_void_p),
        ("encoding_steps", c_void_p),
        ("dL_dencoding_params", c_void_p),
    ]


# Opaque handles: plain void pointers.
context_p = c_void_p
encoding_p = c_void_p
program_p = c_void_p
module_p = c_void_p
network_p = c_void_p
network_module_p = c_void_p
stream_t = c_void_p  # gj_stream (CUstream); None is the legacy default stream

LOG_FN = CFUNCTYPE(None, c_void_p, c_int, c_char_p)
CACHE_VISIT_FN = CFUNCTYPE(c_int, c_void_p, POINTER(CacheEntryInfo))

# ----------------------------------------------------------------------------- enums

STATUS_NAMES = {
    0: "OK",
    1: "ERROR_INVALID_ARGUMENT",
    2: "ERROR_INVALID_CONFIG",
    3: "ERROR_OUT_OF_MEMORY",
    4: "ERROR_LAYOUT_TOO_LARGE",
    5: "ERROR_NO_NVRTC",
    6: "ERROR_COMPILE",
    7: "ERROR_UNSUPPORTED_ARCH",
    8: "ERROR_NO_DRIVER",
    9: "ERROR_NO_DEVICE",
    10: "ERROR_CUDA",
    11: "ERROR_IO",
    12: "ERROR_NOT_FOUND",
    13: "ERROR_CORRUPT",
    14: "ERROR_PASS_NOT_COMPILED",
    15: "ERROR_INTERNAL",
}
GJ_OK = 0
GJ_ERROR_COMPILE = 6
GJ_ERROR_NO_DRIVER = 8
GJ_ERROR_NO_DEVICE = 9

PASS_FORWARD, PASS_BACKWARD, PASS_BACKWARD_BACKWARD, PASS_ALL = 1, 2, 4, 7
LAYOUT_AOS, LAYOUT_SOA = 0, 1
GRAD_OVERWRITE, GRAD_ACCUMULATE = 0, 1
CACHE_STATS_CONTEXT, CACHE_STATS_DIRECTORY = 0, 1
CONFIG_IGNORE_UNKNOWN_KEYS = 1  # gj_encoding_create_ex flags

GRID_TYPES = {0: "Hash", 1: "Dense", 2: "Tiled"}
INTERPOLATIONS = {0: "Nearest", 1: "Linear", 2: "Smoothstep"}
HASHES = {0: "Prime", 1: "CoherentPrime", 2: "ReversedPrime", 3: "Rng", 4: "BaseConvert"}
PRECISIONS = {0: "fp16", 1: "fp32"}
BINARY_KINDS = {0: None, 1: "cubin", 2: "ptx"}
CACHE_STATUSES = {0: "off", 1: "miss", 2: "hit"}
ORDERS = {"level": 0, "point": 1}
NETWORK_TYPES = {0: "FullyFusedMLP", 1: "CutlassMLP"}
ACTIVATIONS = {
    0: "None",
    1: "ReLU",
    2: "LeakyReLU",
    3: "Exponential",
    4: "Sine",
    5: "Sigmoid",
    6: "Squareplus",
    7: "Softplus",
    8: "Tanh",
    9: "SiLU",
}
NETWORK_ALIGNMENT = 16  # GJ_NETWORK_ALIGNMENT
LOG_LEVELS = {"debug": 0, "info": 1, "warning": 2, "error": 3}

# ----------------------------------------------------------------------------- functions
# name: (restype, argtypes). restype c_void_p for strings the caller frees with gj_free.
_status = c_int
_PROTOTYPES = {
    "gj_version_number": (c_uint, []),
    "gj_version_string": (c_char_p, []),
    "gj_status_name": (c_char_p, [c_int]),
    "gj_status_message": (c_char_p, [c_int]),
    "gj_free": (None, [c_void_p]),
    # context
    "gj_context_create": (_status, [POINTER(context_p)]),
    "gj_context_destroy": (None, [context_p]),
    "gj_context_errmsg": (c_char_p, [context_p]),
    "gj_context_set_log": (None, [context_p, LOG_FN, c_void_p]),
    "gj_context_set_log_level": (None, [context_p, c_int]),
    # encoding
    "gj_encoding_create": (_status, [context_p, c_char_p, c_uint32, POINTER(encoding_p)]),
    "gj_encoding_create_ex": (
        _status,
        [context_p, c_char_p, c_uint32, c_uint32, POINTER(c_void_p), POINTER(encoding_p)],
    ),
    "gj_encoding_destroy": (None, [encoding_p]),
    "gj_encoding_n_dims": (c_uint32, [encoding_p]),
    "gj_encoding_n_levels": (c_uint32, [encoding_p]),
    "gj_encoding_n_features_per_level": (c_uint32, [encoding_p]),
    "gj_encoding_n_output_dims": (c_uint32, [encoding_p]),
    "gj_encoding_n_params": (c_uint64, [encoding_p]),
    "gj_encoding_precision": (c_int, [encoding_p]),
    "gj_encoding_grid_type": (c_int, [encoding_p]),
    "gj_encoding_interpolation": (c_int, [encoding_p]),
    "gj_encoding_hash": (c_int, [encoding_p]),
    "gj_encoding_base_resolution": (c_uint32, [encoding_p]),
    "gj_encoding_per_level_scale": (c_float, [encoding_p]),
    "gj_encoding_log2_hashmap_size": (c_uint32, [encoding_p]),
    "gj_encoding_stochastic_interpolation": (c_int, [encoding_p]),
    "gj_encoding_fixed_point_pos": (c_int, [encoding_p]),
    "gj_encoding_level": (_status, [encoding_p, c_uint32, POINTER(LevelInfo)]),
    "gj_encoding_hyperparams": (c_void_p, [encoding_p]),
    # code generation and compiling
    "gj_codegen_options_init": (None, [c_void_p]),
    "gj_encoding_generate": (_status, [context_p, encoding_p, c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "gj_compile": (_status, [context_p, encoding_p, c_void_p, c_char_p, POINTER(program_p)]),
    "gj_compile_source": (_status, [context_p, c_char_p, POINTER(c_char_p), c_size_t, c_char_p, POINTER(program_p)]),
    "gj_program_destroy": (None, [program_p]),
    "gj_program_kind": (c_int, [program_p]),
    "gj_program_binary": (c_void_p, [program_p, POINTER(c_size_t)]),
    "gj_program_arch": (c_char_p, [program_p]),
    "gj_program_n_kernels": (c_size_t, [program_p]),
    "gj_program_kernel_name": (c_char_p, [program_p, c_size_t]),
    "gj_program_lowered_name": (c_char_p, [program_p, c_size_t]),
    "gj_program_log": (c_char_p, [program_p]),
    "gj_program_source": (c_char_p, [program_p]),
    "gj_program_compile_ms": (c_double, [program_p]),
    "gj_program_cache_status": (c_int, [program_p]),
    "gj_program_cache_key": (c_char_p, [program_p]),
    "gj_compile_options_string": (c_void_p, [c_char_p]),
    "gj_context_set_lineinfo": (_status, [context_p, c_int]),
    "gj_nvrtc_version": (_status, [context_p, POINTER(c_int), POINTER(c_int)]),
    "gj_nvrtc_supported_archs": (_status, [context_p, POINTER(c_void_p)]),
    "gj_precompile": (_status, [context_p, encoding_p, c_void_p, c_char_p, c_uint, POINTER(PrecompileReport)]),
    # disk cache
    "gj_context_set_cache_dir": (_status, [context_p, c_char_p]),
    "gj_context_set_cache_path": (_status, [context_p, c_char_p]),
    "gj_context_set_cache_enabled": (_status, [context_p, c_int]),
    "gj_context_set_cache_max_bytes": (_status, [context_p, c_uint64]),
    "gj_context_set_cache_keep_source": (_status, [context_p, c_int]),
    "gj_context_set_nvrtc_enabled": (_status, [context_p, c_int]),
    "gj_context_cache_dir": (c_char_p, [context_p]),
    "gj_context_cache_stats": (_status, [context_p, c_int, POINTER(CacheStats)]),
    "gj_cache_list": (_status, [context_p, CACHE_VISIT_FN, c_void_p]),
    "gj_cache_verify": (_status, [context_p, POINTER(c_uint64), POINTER(c_uint64)]),
    "gj_cache_prune": (_status, [context_p, POINTER(c_uint64), POINTER(c_uint64)]),
    "gj_cache_clear": (_status, [context_p, POINTER(c_uint64)]),
    # runtime
    "gj_runtime_probe": (_status, [context_p, POINTER(RuntimeInfo)]),
    "gj_module_create": (_status, [context_p, encoding_p, c_void_p, POINTER(module_p)]),
    "gj_module_prepare": (_status, [module_p, c_uint32]),
    "gj_module_destroy": (None, [module_p]),
    "gj_module_n_programs": (c_size_t, [module_p]),
    "gj_module_describe_program": (_status, [module_p, c_size_t, POINTER(ModuleProgramInfo)]),
    "gj_module_passes": (c_uint32, [module_p]),
    "gj_module_output_width": (c_uint32, [module_p]),
    "gj_module_n_params": (c_uint64, [module_p]),
    "gj_module_element_size": (c_size_t, [module_p]),
    "gj_module_gradient_element_size": (c_size_t, [module_p]),
    "gj_forward_desc_init": (None, [c_void_p]),
    "gj_backward_desc_init": (None, [c_void_p]),
    "gj_backward_backward_desc_init": (None, [c_void_p]),
    "gj_init_desc_init": (None, [c_void_p]),
    "gj_forward": (_status, [module_p, stream_t, POINTER(ForwardDesc)]),
    "gj_backward": (_status, [module_p, stream_t, POINTER(BackwardDesc)]),
    "gj_backward_backward": (_status, [module_p, stream_t, POINTER(BackwardBackwardDesc)]),
    "gj_init_params": (_status, [module_p, stream_t, POINTER(InitDesc)]),
    # networks
    "gj_network_create": (_status, [context_p, c_char_p, c_uint32, c_uint32, POINTER(network_p)]),
    "gj_network_create_ex": (
        _status,
        [context_p, c_char_p, c_uint32, c_uint32, c_uint32, POINTER(c_void_p), POINTER(network_p)],
    ),
    "gj_network_destroy": (None, [network_p]),
    "gj_network_encoding": (encoding_p, [network_p]),
    "gj_network_otype": (c_int, [network_p]),
    "gj_network_n_neurons": (c_uint32, [network_p]),
    "gj_network_n_hidden_layers": (c_uint32, [network_p]),
    "gj_network_activation": (c_int, [network_p]),
    "gj_network_output_activation": (c_int, [network_p]),
    "gj_network_n_input_dims": (c_uint32, [network_p]),
    "gj_network_input_width": (c_uint32, [network_p]),
    "gj_network_padded_input_width": (c_uint32, [network_p]),
    "gj_network_input_padding": (c_float, [network_p]),
    "gj_network_n_output_dims": (c_uint32, [network_p]),
    "gj_network_padded_output_width": (c_uint32, [network_p]),
    "gj_network_n_params": (c_uint64, [network_p]),
    "gj_network_n_mlp_params": (c_uint64, [network_p]),
    "gj_network_n_layers": (c_uint32, [network_p]),
    "gj_network_layer_info_init": (None, [c_void_p]),
    "gj_network_layer": (_status, [network_p, c_uint32, POINTER(NetworkLayerInfo)]),
    "gj_network_hyperparams": (c_void_p, [network_p]),
    "gj_network_generate": (_status, [context_p, network_p, c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "gj_network_module_create": (_status, [context_p, network_p, POINTER(network_module_p)]),
    "gj_network_module_destroy": (None, [network_module_p]),
    "gj_network_module_context_bytes": (c_uint64, [network_module_p, c_uint64]),
    "gj_network_module_encoding_gradient_size": (c_size_t, [network_module_p]),
    "gj_network_module_wait_compiles": (_status, [network_module_p]),
    "gj_network_precompile": (_status, [context_p, network_p, c_char_p, POINTER(PrecompileReport)]),
    "gj_network_pass_desc_init": (None, [c_void_p]),
    "gj_network_inference": (_status, [network_module_p, stream_t, POINTER(NetworkPassDesc)]),
    "gj_network_forward": (_status, [network_module_p, stream_t, POINTER(NetworkPassDesc)]),
    "gj_network_backward": (_status, [network_module_p, stream_t, POINTER(NetworkPassDesc)]),
    "gj_network_init_desc_init": (None, [c_void_p]),
    "gj_network_train_desc_init": (None, [c_void_p]),
    "gj_network_train_step": (_status, [network_module_p, stream_t, POINTER(NetworkTrainDesc)]),
    "gj_network_adam_desc_init": (None, [c_void_p]),
    "gj_network_adam_step": (_status, [network_module_p, stream_t, POINTER(NetworkAdamDesc)]),
    "gj_network_init_params": (_status, [network_module_p, stream_t, POINTER(NetworkInitDesc)]),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError as _exc:
        raise ImportError(f"gridjit: {library_path} does not export {_name}: a library of another version?") from _exc
    _fn.restype = _restype
    _fn.argtypes = _argtypes

#: Every C function the package binds (the tests check that each one is exercised).
BOUND_FUNCTIONS = tuple(_PROTOTYPES)


def take_string(ptr: int | None) -> str | None:
    """Copies a string the library allocated, then frees it with gj_free()."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.gj_free(ptr)


def text(raw: bytes | None) -> str:
    """A const char * of the library as str ('' for NULL)."""
    return raw.decode("utf-8", "replace") if raw else ""


# ----------------------------------------------------------------------------- self-check

#: The caller-allocated structs and the function that prepares each (docs/ABI.md).
INITIALISED_STRUCTS = (
    (CodegenOptions, "gj_codegen_options_init"),
    (ForwardDesc, "gj_forward_desc_init"),
    (BackwardDesc, "gj_backward_desc_init"),
    (BackwardBackwardDesc, "gj_backward_backward_desc_init"),
    (InitDesc, "gj_init_desc_init"),
    (NetworkLayerInfo, "gj_network_layer_info_init"),
    (NetworkPassDesc, "gj_network_pass_desc_init"),
    (NetworkInitDesc, "gj_network_init_desc_init"),
    (NetworkTrainDesc, "gj_network_train_desc_init"),
    (NetworkAdamDesc, "gj_network_adam_desc_init"),
)


def init_struct(struct_type: type[Structure], init_name: str) -> Structure:
    """A struct prepared by its C *_init function (which sets struct_size and the
    defaults), as the ABI requires before any field is set."""
    value = struct_type()
    getattr(lib, init_name)(ctypes.byref(value))
    return value


def check_struct_sizes() -> dict[str, tuple[int, int]]:
    """Calls each *_init function on a buffer larger than the ctypes mirror, and checks
    that the struct_size it writes equals ctypes.sizeof of the mirror and that it wrote
    nothing past that size. Returns {struct name: (ctypes size, C size)}; raises
    ImportError on a mismatch (the mirrors no longer match the library's header)."""
    sizes = {}
    guard = 64
    for struct_type, init_name in INITIALISED_STRUCTS:
        size = ctypes.sizeof(struct_type)
        buffer = (ctypes.c_ubyte * (size + guard))(*([0xA5] * (size + guard)))
        getattr(lib, init_name)(buffer)
        c_size = c_uint32.from_buffer(buffer).value
        sizes[struct_type.__name__] = (size, c_size)
        if c_size != size or any(b != 0xA5 for b in buffer[size:]):
            raise ImportError(
                f"gridjit: {library_path}: {init_name} prepares {c_size} bytes but the Python mirror "
                f"{struct_type.__name__} has {size}: the bindings do not match this library's header"
            )
    return sizes


STRUCT_SIZES = check_struct_sizes()
