"""gridjit: run-time generated CUDA kernels for multiresolution hash-grid encodings.

Python bindings of libgridjit (bundled in this package and loaded with ctypes; see
:mod:`gridjit._capi` for why ctypes), plus :mod:`gridjit.torch`, a drop-in for
``tinycudann.Encoding``, ``Network`` and ``NetworkWithInputEncoding``.

>>> import gridjit
>>> enc = gridjit.Encoding({"otype": "HashGrid", "n_levels": 8}, n_dims=2)
>>> enc.n_params, enc.n_output_dims
>>> source = enc.generate()                  # the CUDA translation unit
>>> program = enc.compile("sm_90")           # a cubin, through the disk cache (needs NVRTC)

The library is looked for in the package (``gridjit/lib/libgridjit.so.0``), then in the
file named by the environment variable GRIDJIT_LIBRARY.
"""

from ._capi import BOUND_FUNCTIONS, STRUCT_SIZES, library_path
from ._capi import PASS_ALL, PASS_BACKWARD, PASS_BACKWARD_BACKWARD, PASS_FORWARD
from .core import (
    CacheEntry,
    CacheStats,
    CodegenOptions,
    Context,
    Encoding,
    Module,
    Network,
    NetworkModule,
    Program,
    RuntimeInfo,
    compile_options,
    default_context,
    version,
    version_string,
    wait_compiles,
)
from .errors import (
    CompileError,
    CorruptError,
    CudaError,
    GridJitError,
    GridJitIOError,
    InternalError,
    InvalidArgumentError,
    InvalidConfigError,
    LayoutTooLargeError,
    NoDeviceError,
    NoDriverError,
    NoNvrtcError,
    NotFoundError,
    OutOfMemoryError,
    PassNotCompiledError,
    UnsupportedArchError,
    status_message,
    status_name,
)

__version__ = version_string()


def nvrtc_version() -> tuple:
    """(major, minor) of the NVRTC gridjit loads (default context); NoNvrtcError without one."""
    return default_context().nvrtc_version()


def runtime_probe(strict: bool = False) -> RuntimeInfo:
    """Whether a CUDA driver and device are usable (default context); see Context.runtime_probe."""
    return default_context().runtime_probe(strict=strict)


__all__ = [
    "BOUND_FUNCTIONS",
    "CacheEntry",
    "CacheStats",
    "CodegenOptions",
    "CompileError",
    "Context",
    "CorruptError",
    "CudaError",
    "Encoding",
    "GridJitError",
    "GridJitIOError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidConfigError",
    "LayoutTooLargeError",
    "Module",
    "Network",
    "NetworkModule",
    "NoDeviceError",
    "NoDriverError",
    "NoNvrtcError",
    "NotFoundError",
    "OutOfMemoryError",
    "PASS_ALL",
    "PASS_BACKWARD",
    "PASS_BACKWARD_BACKWARD",
    "PASS_FORWARD",
    "PassNotCompiledError",
    "Program",
    "RuntimeInfo",
    "STRUCT_SIZES",
    "UnsupportedArchError",
    "__version__",
    "compile_options",
    "default_context",
    "library_path",
    "nvrtc_version",
    "runtime_probe",
    "status_message",
    "status_name",
    "version",
    "version_string",
]
