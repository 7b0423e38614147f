"""Contexts, encodings, programs and modules: the C API of libgridjit as Python objects.

The objects own their C handles and free them when closed or garbage-collected. An
object keeps the context it was made from alive. Device pointers and streams, where the
runtime takes them, are plain integers (e.g. ``tensor.data_ptr()`` and
``torch.cuda.current_stream().cuda_stream``); :mod:`gridjit.torch` does that for you.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import threading
import warnings
import weakref
from ctypes import byref, c_int, c_size_t, c_uint64, c_void_p
from dataclasses import dataclass, fields
from typing import Callable, Iterable, Mapping, Optional, Union

from . import _capi
from ._capi import lib
from .errors import GridJitError, error_for, status_name

# At interpreter exit the CUDA runtime of another library (torch) may already be torn
# down; unloading modules then could crash the process. Handles still alive at exit are
# left to the operating system.
_exiting = False


def _mark_exiting() -> None:
    global _exiting
    # A program still compiling behind a module's passes (docs/networks.md §10) is waited for
    # while the interpreter is whole; the library's own exit handler would otherwise do it later.
    try:
        wait_compiles()
    except Exception:  # noqa: BLE001 - exiting: its failure matters to no one now
        pass
    _exiting = True


atexit.register(_mark_exiting)


def version() -> int:
    """gj_version_number(): major * 10000 + minor * 100 + patch."""
    return int(lib.gj_version_number())


def version_string() -> str:
    """gj_version_string(), e.g. ``"0.1.0"``."""
    return _capi.text(lib.gj_version_string())


def compile_options(arch: str) -> list[str]:
    """The NVRTC options gridjit uses for arch (gj_compile_options_string), one per item.
    Raises InvalidArgumentError when arch is malformed."""
    raw = _capi.take_string(lib.gj_compile_options_string(arch.encode()))
    if raw is None:
        raise error_for(1, f"gj_compile_options_string: malformed architecture {arch!r}", "gj_compile_options_string")
    return [line for line in raw.splitlines() if line]


def _bytes_or_none(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else str(value).encode()


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class CacheStats:
    """The disk cache's counters, with the names of `gridjit cache stats --json` (as_dict()
    gives exactly that object): of the cache directory by default (every process that used
    it), or of this context alone. entries, bytes and max_bytes are the directory's now."""

    directory: Optional[str]  # the writable directory, None when there is none usable
    hits: int
    misses: int
    compiles: int
    compile_ms: float
    bytes_read: int
    bytes_written: int
    evictions: int
    corrupt: int
    entries: int
    bytes: int  # the entries' bytes on disk (with kept sources); the C field disk_bytes
    max_bytes: int

    @property
    def disk_bytes(self) -> int:
        """Deprecated: the name of the C struct's field; use ``bytes``, as the CLI does."""
        warnings.warn("CacheStats.disk_bytes is deprecated; use CacheStats.bytes", DeprecationWarning, stacklevel=2)
        return self.bytes

    def as_dict(self) -> dict:
        """The object `gridjit cache stats --json` prints, with the same keys."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class CacheEntry:
    """gj_cache_entry_info: one entry of a cache layer."""

    key: str
    config_key: str
    path: str
    bytes: int
    target: str
    kind: str
    writable: bool


@dataclass(frozen=True)
class RuntimeInfo:
    """gj_runtime_probe's result. ``available`` is False when there is no usable driver
    or device; ``reason`` then says why (the library's message)."""

    available: bool
    status: str
    reason: str
    driver_found: bool
    driver_version: int
    device_count: int
    device: int
    device_name: str
    compute_capability: tuple
    arch: str


@dataclass(frozen=True)
class Program:
    """A compiled program (gj_program), copied out of the library.

    ``binary`` is the cubin, or the PTX text including its terminating NUL; ``kernels``
    lists (name expression, lowered name) pairs; ``cache_status`` is ``"hit"``,
    ``"miss"`` or ``"off"``; ``cache_key`` is 32 hex digits or ``""``.
    """

    kind: Optional[str]
    binary: bytes
    arch: str
    kernels: list
    log: str
    source: str
    compile_ms: float
    cache_status: str
    cache_key: str

    @classmethod
    def _take(cls, handle: int) -> "Program":
        """Copies everything out of a gj_program; the caller destroys the handle."""
        size = c_size_t(0)
        pointer = lib.gj_program_binary(handle, byref(size))
        binary = ctypes.string_at(pointer, size.value) if pointer and size.value else b""
        kernels = [
            (_capi.text(lib.gj_program_kernel_name(handle, i)), _capi.text(lib.gj_program_lowered_name(handle, i)))
            for i in range(lib.gj_program_n_kernels(handle))
        ]
        return cls(
            kind=_capi.BINARY_KINDS.get(lib.gj_program_kind(handle)),
            binary=binary,
            arch=_capi.text(lib.gj_program_arch(handle)),
            kernels=kernels,
            log=_capi.text(lib.gj_program_log(handle)),
            source=_capi.text(lib.gj_program_source(handle)),
            compile_ms=float(lib.gj_program_compile_ms(handle)),
            cache_status=_capi.CACHE_STATUSES.get(lib.gj_program_cache_status(handle), "off"),
            cache_key=_capi.text(lib.gj_program_cache_key(handle)),
        )


@dataclass
class CodegenOptions:
    """gj_codegen_options. Fields left at None keep the library's defaults (the struct
    is always prepared by gj_codegen_options_init first).

    passes: bits of PASS_FORWARD | PASS_BACKWARD | PASS_BACKWARD_BACKWARD, or a list of
        names ("forward", "backward", "backward_backward"); order: "level" or "point";
        unroll_levels: device functions with unrolled literal levels instead of a loop over
        the level table; gradients_fp32: dL/dparams is float[n_params] whatever the
        precision (fp16 modules accumulate and write their parameter gradients in fp32);
        levels_per_thread: levels one thread of the level-major kernels handles per point
        (0, the default: chosen per launch by the layout, docs/runtime.md).
    """

    passes: Union[int, Iterable[str], None] = None
    output_width_multiple: Optional[int] = None
    name: Optional[str] = None
    device_functions_only: Optional[bool] = None
    block_size: Optional[int] = None
    points_per_thread: Optional[int] = None
    order: Optional[str] = None
    unroll_levels: Optional[bool] = None
    gradients_fp32: Optional[bool] = None
    levels_per_thread: Optional[int] = None

    _PASS_NAMES = {
        "forward": _capi.PASS_FORWARD,
        "backward": _capi.PASS_BACKWARD,
        "backward_backward": _capi.PASS_BACKWARD_BACKWARD,
        "all": _capi.PASS_ALL,
    }

    def to_struct(self) -> _capi.CodegenOptions:
        opts = _capi.init_struct(_capi.CodegenOptions, "gj_codegen_options_init")
        if self.passes is not None:
            if isinstance(self.passes, int):
                opts.passes = self.passes
            else:
                bits = 0
                for name in self.passes:
                    if name not in self._PASS_NAMES:
                        raise ValueError(f"unknown pass {name!r}: use forward, backward, backward_backward or all")
                    bits |= self._PASS_NAMES[name]
                opts.passes = bits
        if self.output_width_multiple is not None:
            opts.output_width_multiple = int(self.output_width_multiple)
        if self.name is not None:
            opts.name = self.name.encode()
        if self.device_functions_only is not None:
            opts.device_functions_only = int(bool(self.device_functions_only))
        if self.block_size is not None:
            opts.block_size = int(self.block_size)
        if self.points_per_thread is not None:
            opts.points_per_thread = int(self.points_per_thread)
        if self.order is not None:
            if self.order not in _capi.ORDERS:
                raise ValueError(f"order must be 'level' or 'point' (got {self.order!r})")
            opts.order = _capi.ORDERS[self.order]
        if self.unroll_levels is not None:
            opts.unroll_levels = int(bool(self.unroll_levels))
        if self.gradients_fp32 is not None:
            opts.gradients_fp32 = int(bool(self.gradients_fp32))
        if self.levels_per_thread is not None:
            opts.levels_per_thread = int(self.levels_per_thread)
        return opts

    @classmethod
    def make(cls, options: Union["CodegenOptions", Mapping, None] = None, **overrides) -> Optional["CodegenOptions"]:
        """Options from a CodegenOptions, a dict of its fields, and keyword overrides;
        None when nothing is given (the library's defaults)."""
        if options is None and not overrides:
            return None
        if isinstance(options, CodegenOptions):
            values = {f.name: getattr(options, f.name) for f in fields(options)}
        else:
            values = dict(options or {})
        values.update(overrides)
        return cls(**values)


def _options_pointer(options: Optional[CodegenOptions]):
    """(byref(struct) or None, struct): keep the struct alive while the call runs."""
    if options is None:
        return None, None
    struct = options.to_struct()
    return byref(struct), struct


# ----------------------------------------------------------------------------- context


def _create(context: "Context", create: str, config: str, widths: tuple, handle, ignore_unknown_keys: bool) -> list:
    """Parses config with gj_<x>_create (create), or with its _ex twin skipping unknown keys;
    the handle is written into handle. Returns the library's message for each skipped key
    ([] without ignore_unknown_keys)."""
    if not ignore_unknown_keys:
        context.check(getattr(lib, create)(context.handle, config.encode(), *widths, byref(handle)), create)
        return []
    create_ex, ignored = create + "_ex", c_void_p()
    status = getattr(lib, create_ex)(
        context.handle, config.encode(), *widths, _capi.CONFIG_IGNORE_UNKNOWN_KEYS, byref(ignored), byref(handle)
    )
    # Taken (and freed) whatever the status: the library may set it only on success.
    messages = _capi.take_string(ignored.value)
    context.check(status, create_ex)
    return [line for line in (messages or "").split("\n") if line]


def _hyperparams(call: str, handle: int) -> str:
    """The canonical configuration gj_<x>_hyperparams (call) writes for handle; OutOfMemoryError for NULL."""
    text = _capi.take_string(getattr(lib, call)(handle))
    if text is None:
        raise error_for(3, f"{call}: out of memory", call)
    return text


def _generate(context: "Context", call: str, handle: int, options, overrides: dict) -> str:
    """The translation unit gj_<x>_generate (call) writes for handle."""
    opts_p, _keep = _options_pointer(CodegenOptions.make(options, **overrides))
    source, length = c_void_p(), c_size_t(0)
    context.check(getattr(lib, call)(context.handle, handle, opts_p, byref(source), byref(length)), call)
    return _capi.take_string(source.value) or ""


class _Owned:
    """What every owner of one library handle shares: ``handle`` (ValueError once closed),
    close() (destroys it once; a second call, or __del__ after it, does nothing).

    Subclasses name themselves (``_what``, for the message) and their destroy function
    (``_destroy``, looked up on the library at close, where the tests count calls). Those
    that touch the CUDA driver when destroyed (``_spare_at_exit``) leave their handle to the
    operating system at interpreter exit (see _exiting)."""

    _what = ""
    _destroy = ""
    _spare_at_exit = False
    _handle = None

    @property
    def handle(self) -> int:
        if not self._handle:
            raise ValueError(f"the gridjit {self._what} is closed")
        return self._handle

    def close(self) -> None:
        """Destroys the library object; using it afterwards raises ValueError. A context:
        objects made from it must not be used afterwards; a module: synchronise the
        streams that use it first."""
        if self._handle:
            if not (self._spare_at_exit and _exiting):
                getattr(lib, self._destroy)(self._handle)
            self._handle = None

    def __del__(self) -> None:
        self.close()


class Context(_Owned):
    """A gj_context: error messages, logging, compile and disk-cache settings, and the
    lazily loaded NVRTC and CUDA driver. Safe to share between threads (the library's
    error messages are per thread, and each call reads its own)."""

    _what, _destroy, _spare_at_exit = "Context", "gj_context_destroy", True

    def __init__(self) -> None:
        handle = _capi.context_p()
        status = lib.gj_context_create(byref(handle))
        if status != _capi.GJ_OK or not handle.value:
            raise error_for(status or 3, "gj_context_create failed", "gj_context_create")
        self._handle = handle.value
        self._log_callback = None  # keeps the ctypes callback alive while installed

    # -- plumbing
    @property
    def errmsg(self) -> str:
        """The calling thread's message of its last failed call on this context ("" after success)."""
        return _capi.text(lib.gj_context_errmsg(self.handle))

    def check(self, status: int, call: str) -> None:
        """Raises the exception of a failed call, with this thread's message."""
        if status != _capi.GJ_OK:
            raise error_for(status, self.errmsg, call)

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- logging
    def set_log(self, callback: Optional[Callable[[str, str], None]]) -> None:
        """Sends the library's messages to callback(level, message), level one of
        "debug", "info", "warning", "error"; None silences them. The callback may run
        on gridjit's compile threads."""
        if callback is None:
            self._log_callback = None
            lib.gj_context_set_log(self.handle, _capi.LOG_FN(), None)
            return
        names = {v: k for k, v in _capi.LOG_LEVELS.items()}

        def trampoline(_user, level, message):
            try:
                callback(names.get(level, str(level)), _capi.text(message))
            except Exception:  # an exception cannot cross into C
                pass

        self._log_callback = _capi.LOG_FN(trampoline)
        lib.gj_context_set_log(self.handle, self._log_callback, None)

    def set_log_level(self, level: Union[str, int]) -> None:
        """Messages below level ("debug", "info", "warning" (default), "error") are dropped."""
        value = _capi.LOG_LEVELS[level] if isinstance(level, str) else int(level)
        lib.gj_context_set_log_level(self.handle, value)

    # -- compile settings
    def set_lineinfo(self, lineinfo: Optional[bool]) -> None:
        """Compile with -lineinfo (True), without (False), or as GRIDJIT_LINEINFO says (None)."""
        value = -1 if lineinfo is None else int(bool(lineinfo))
        self.check(lib.gj_context_set_lineinfo(self.handle, value), "gj_context_set_lineinfo")

    def set_nvrtc_enabled(self, enabled: bool) -> None:
        """False: behave as if libnvrtc were absent (only cached binaries can be had)."""
        self.check(lib.gj_context_set_nvrtc_enabled(self.handle, int(bool(enabled))), "gj_context_set_nvrtc_enabled")

    def nvrtc_version(self) -> tuple:
        """(major, minor) of NVRTC; NoNvrtcError when it cannot be loaded."""
        major, minor = c_int(0), c_int(0)
        self.check(lib.gj_nvrtc_version(self.handle, byref(major), byref(minor)), "gj_nvrtc_version")
        return major.value, minor.value

    def nvrtc_supported_archs(self) -> list:
        """The "sm_XX" architectures the loaded NVRTC supports."""
        out = c_void_p()
        self.check(lib.gj_nvrtc_supported_archs(self.handle, byref(out)), "gj_nvrtc_supported_archs")
        return (_capi.take_string(out.value) or "").split()

    # -- disk cache
    def set_cache_dir(self, directory: Optional[str]) -> None:
        """The writable cache directory; None: GRIDJIT_CACHE_DIR / the default."""
        self.check(lib.gj_context_set_cache_dir(self.handle, _bytes_or_none(directory)), "gj_context_set_cache_dir")

    def set_cache_path(self, path: Optional[str]) -> None:
        """Read-only cache layers, colon-separated; None: GRIDJIT_CACHE_PATH; "": none."""
        self.check(lib.gj_context_set_cache_path(self.handle, _bytes_or_none(path)), "gj_context_set_cache_path")

    def set_cache_enabled(self, enabled: bool) -> None:
        self.check(lib.gj_context_set_cache_enabled(self.handle, int(bool(enabled))), "gj_context_set_cache_enabled")

    def set_cache_max_bytes(self, max_bytes: int) -> None:
        """Byte cap of the writable directory; 0: GRIDJIT_CACHE_MAX_BYTES / 1 GiB."""
        self.check(lib.gj_context_set_cache_max_bytes(self.handle, int(max_bytes)), "gj_context_set_cache_max_bytes")

    def set_cache_keep_source(self, keep: bool) -> None:
        """Keep the generated source beside each new entry (KEY.cu)."""
        self.check(lib.gj_context_set_cache_keep_source(self.handle, int(bool(keep))), "gj_context_set_cache_keep_source")

    @property
    def cache_dir(self) -> Optional[str]:
        """The writable directory in use, or None when there is none usable."""
        raw = lib.gj_context_cache_dir(self.handle)
        return _capi.text(raw) if raw else None

    def cache_stats(self, scope: str = "directory") -> CacheStats:
        """The cache's counters, as `gridjit cache stats` counts them: summed in the cache
        directory over every process and context that used it ("directory", the default;
        this context's counts are added first), or this context's since it was made
        ("context", whichever directories it used). After set_cache_dir the directory
        scope is the new directory's."""
        scopes = {"context": _capi.CACHE_STATS_CONTEXT, "directory": _capi.CACHE_STATS_DIRECTORY}
        if scope not in scopes:
            raise ValueError(f"scope must be 'directory' or 'context' (got {scope!r})")
        out = _capi.CacheStats()
        self.check(lib.gj_context_cache_stats(self.handle, scopes[scope], byref(out)), "gj_context_cache_stats")
        counters = {name: getattr(out, name) for name, _ in _capi.CacheStats._fields_ if name != "disk_bytes"}
        return CacheStats(directory=self.cache_dir, bytes=out.disk_bytes, **counters)

    def cache_entries(self) -> list:
        """Every entry of every cache layer (read-only layers first)."""
        entries = []

        def visit(_user, info_p):
            info = info_p.contents
            entries.append(
                CacheEntry(
                    key=_capi.text(info.key),
                    config_key=_capi.text(info.config_key),
                    path=_capi.text(info.path),
                    bytes=int(info.bytes),
                    target=_capi.text(info.target),
                    kind=_capi.text(info.kind),
                    writable=bool(info.writable),
                )
            )
            return 0

        callback = _capi.CACHE_VISIT_FN(visit)
        self.check(lib.gj_cache_list(self.handle, callback, None), "gj_cache_list")
        return entries

    def cache_verify(self) -> tuple:
        """Reads and checks every entry; removes bad ones (writable layer). (checked, bad)."""
        checked, bad = c_uint64(0), c_uint64(0)
        self.check(lib.gj_cache_verify(self.handle, byref(checked), byref(bad)), "gj_cache_verify")
        return checked.value, bad.value

    def cache_prune(self) -> tuple:
        """Applies the byte cap now. (entries evicted, bytes freed)."""
        evicted, freed = c_uint64(0), c_uint64(0)
        self.check(lib.gj_cache_prune(self.handle, byref(evicted), byref(freed)), "gj_cache_prune")
        return evicted.value, freed.value

    def cache_clear(self) -> int:
        """Removes every entry of the writable directory; returns how many."""
        removed = c_uint64(0)
        self.check(lib.gj_cache_clear(self.handle, byref(removed)), "gj_cache_clear")
        return removed.value

    # -- runtime
    def runtime_probe(self, strict: bool = False) -> RuntimeInfo:
        """Whether a CUDA driver and device are usable, without creating a CUDA context.

        With strict=False a missing driver or device is reported in the result
        (``available`` False, ``reason`` the library's message); with strict=True it
        raises NoDriverError / NoDeviceError. Other failures always raise."""
        info = _capi.RuntimeInfo()
        status = lib.gj_runtime_probe(self.handle, byref(info))
        reason = self.errmsg if status != _capi.GJ_OK else ""
        if status != _capi.GJ_OK and (strict or status not in (_capi.GJ_ERROR_NO_DRIVER, _capi.GJ_ERROR_NO_DEVICE)):
            raise error_for(status, reason, "gj_runtime_probe")
        return RuntimeInfo(
            available=status == _capi.GJ_OK,
            status=status_name(status),
            reason=reason,
            driver_found=bool(info.driver_found),
            driver_version=int(info.driver_version),
            device_count=int(info.device_count),
            device=int(info.device),
            device_name=_capi.text(info.device_name),
            compute_capability=(int(info.cc_major), int(info.cc_minor)),
            arch=_capi.text(info.arch),
        )

    # -- compiling arbitrary source
    def compile_source(self, source: str, name_expressions: Iterable[str], arch: str) -> Program:
        """Compiles CUDA source with NVRTC (through the disk cache), registering each name
        expression (e.g. "&my_kernel"). CompileError carries the log on failure."""
        names = [n.encode() for n in name_expressions]
        array = (ctypes.c_char_p * max(len(names), 1))(*names)
        handle = _capi.program_p()
        status = lib.gj_compile_source(self.handle, source.encode(), array, len(names), arch.encode(), byref(handle))
        return _finish_compile(self, status, handle, "gj_compile_source")

    def encoding(self, config: Union[Mapping, str], n_dims: int = 0) -> "Encoding":
        return Encoding(config, n_dims, context=self)


def _finish_compile(context: Context, status: int, handle: c_void_p, call: str) -> Program:
    """A Program from a compile call's result; CompileError (with the log) or the status's
    exception on failure. Destroys the handle in every case."""
    errmsg = context.errmsg if status != _capi.GJ_OK else ""
    try:
        program = Program._take(handle.value) if handle.value else None
    finally:
        lib.gj_program_destroy(handle.value)
    if status != _capi.GJ_OK:
        raise error_for(status, errmsg, call, log=program.log if program else "")
    return program


_default_context: Optional[Context] = None
_default_lock = threading.Lock()


def default_context() -> Context:
    """The process-wide context used when none is given (created on first use)."""
    global _default_context
    with _default_lock:
        if _default_context is None:
            _default_context = Context()
        return _default_context


# ----------------------------------------------------------------------------- encoding


class Encoding(_Owned):
    """A parsed configuration and its parameter layout (gj_encoding).

    config: a tiny-cuda-nn grid-encoding configuration, as a dict or JSON text (plus
    gridjit's "n_dims_to_encode" and "precision"). n_dims: input dimensions, or 0 to take
    them from "n_dims_to_encode" (default 3). InvalidConfigError names the key at fault.

    ignore_unknown_keys: skip keys gridjit does not know instead of refusing them
    (gj_encoding_create_ex with GJ_CONFIG_IGNORE_UNKNOWN_KEYS, as tinycudann accepts
    them); ``ignored_keys`` then lists the library's message for each skipped key
    (naming it and, where one is close, the key it may have meant). Otherwise empty.
    """

    _what, _destroy = "Encoding", "gj_encoding_destroy"

    def __init__(
        self,
        config: Union[Mapping, str],
        n_dims: int = 0,
        context: Optional[Context] = None,
        ignore_unknown_keys: bool = False,
    ):
        self.context = context or default_context()
        self.config = config if isinstance(config, str) else json.dumps(dict(config))
        handle = _capi.encoding_p()
        self.ignored_keys: list = _create(
            self.context, "gj_encoding_create", self.config, (int(n_dims),), handle, ignore_unknown_keys
        )
        self._handle = handle.value

    # -- configuration
    @property
    def n_dims(self) -> int:
        return int(lib.gj_encoding_n_dims(self.handle))

    @property
    def n_levels(self) -> int:
        return int(lib.gj_encoding_n_levels(self.handle))

    @property
    def n_features_per_level(self) -> int:
        return int(lib.gj_encoding_n_features_per_level(self.handle))

    @property
    def n_output_dims(self) -> int:
        """n_levels * n_features_per_level."""
        return int(lib.gj_encoding_n_output_dims(self.handle))

    @property
    def n_params(self) -> int:
        return int(lib.gj_encoding_n_params(self.handle))

    @property
    def precision(self) -> str:
        """"fp16" or "fp32": the type of the parameters and outputs."""
        return _capi.PRECISIONS[lib.gj_encoding_precision(self.handle)]

    @property
    def grid_type(self) -> str:
        """"Hash", "Dense" or "Tiled"."""
        return _capi.GRID_TYPES[lib.gj_encoding_grid_type(self.handle)]

    @property
    def interpolation(self) -> str:
        return _capi.INTERPOLATIONS[lib.gj_encoding_interpolation(self.handle)]

    @property
    def hash(self) -> str:
        return _capi.HASHES[lib.gj_encoding_hash(self.handle)]

    @property
    def base_resolution(self) -> int:
        return int(lib.gj_encoding_base_resolution(self.handle))

    @property
    def per_level_scale(self) -> float:
        return float(lib.gj_encoding_per_level_scale(self.handle))

    @property
    def log2_hashmap_size(self) -> int:
        return int(lib.gj_encoding_log2_hashmap_size(self.handle))

    @property
    def stochastic_interpolation(self) -> bool:
        return bool(lib.gj_encoding_stochastic_interpolation(self.handle))

    @property
    def fixed_point_pos(self) -> bool:
        return bool(lib.gj_encoding_fixed_point_pos(self.handle))

    def level(self, index: int) -> dict:
        """One row of the level table (docs/design.md §2): level, scale, resolution,
        entries, offset (first entry; its first parameter is offset * F), hashed."""
        info = _capi.LevelInfo()
        status = lib.gj_encoding_level(self.handle, int(index), byref(info))
        self.context.check(status, "gj_encoding_level")
        return {
            "level": int(info.level),
            "scale": float(info.scale),
            "resolution": int(info.resolution),
            "entries": int(info.entries),
            "offset": int(info.offset),
            "hashed": bool(info.hashed),
        }

    @property
    def levels(self) -> list:
        """The level table, one dict per level (see :meth:`level`)."""
        return [self.level(i) for i in range(self.n_levels)]

    @property
    def hyperparams_json(self) -> str:
        """The canonical configuration: JSON that parses back to an identical encoding."""
        return _hyperparams("gj_encoding_hyperparams", self.handle)

    @property
    def hyperparams(self) -> dict:
        return json.loads(self.hyperparams_json)

    # -- code generation and compiling
    def generate(self, options: Union[CodegenOptions, Mapping, None] = None, **overrides) -> str:
        """The CUDA translation unit (byte-identical for identical inputs)."""
        return _generate(self.context, "gj_encoding_generate", self.handle, options, overrides)

    def compile(self, arch: str, options: Union[CodegenOptions, Mapping, None] = None, **overrides) -> Program:
        """Compiles with NVRTC (or loads from the disk cache) for arch: "sm_XY" gives a
        cubin, "compute_XY" PTX. CompileError carries NVRTC's annotated log."""
        opts_p, _keep = _options_pointer(CodegenOptions.make(options, **overrides))
        handle = _capi.program_p()
        status = lib.gj_compile(self.context.handle, self.handle, opts_p, arch.encode(), byref(handle))
        return _finish_compile(self.context, status, handle, "gj_compile")

    def precompile(
        self, arch: str, options: Union[CodegenOptions, Mapping, None] = None, threads: int = 0, **overrides
    ) -> dict:
        """Fills the disk cache with every program a module of this encoding needs on arch.
        Returns {"programs", "compiled", "cached", "ms"}."""
        opts_p, _keep = _options_pointer(CodegenOptions.make(options, **overrides))
        report = _capi.PrecompileReport()
        status = lib.gj_precompile(self.context.handle, self.handle, opts_p, arch.encode(), int(threads), byref(report))
        self.context.check(status, "gj_precompile")
        return {"programs": report.programs, "compiled": report.compiled, "cached": report.cached, "ms": report.ms}

    def module(self, options: Union[CodegenOptions, Mapping, None] = None, **overrides) -> "Module":
        """A runtime module of this encoding (needs a CUDA driver): see :class:`Module`."""
        return Module(self, options, **overrides)

    def __repr__(self) -> str:
        return f"gridjit.Encoding({self.hyperparams_json}, n_params={self.n_params})"


# ----------------------------------------------------------------------------- module

_LAYOUTS = {"aos": _capi.LAYOUT_AOS, "soa": _capi.LAYOUT_SOA}


def _layout(value: Union[str, int]) -> int:
    if isinstance(value, str):
        if value.lower() not in _LAYOUTS:
            raise ValueError(f"layout must be 'aos' or 'soa' (got {value!r})")
        return _LAYOUTS[value.lower()]
    return int(value)


class Module(_Owned):
    """An encoding's kernels on the GPU (gj_module): launches on the caller's stream
    with the caller's device pointers (plain integers). It compiles, through the disk
    cache, what a launch needs the first time, for the device of the calling thread's
    current CUDA context (docs/runtime.md). Needs a CUDA driver: NoDriverError /
    NoDeviceError otherwise.

    Pointers: x is n * D float32 (point-major); params, y, dL_dy, dL_ddLdy and
    dL_dparams are arrays of the module's precision (element_size bytes); dL_dx and
    dL_ddLdx are n * D float32. ``stream`` is a CUstream as an integer (0/None: the
    legacy default stream).
    """

    _what, _destroy, _spare_at_exit = "Module", "gj_module_destroy", True

    def __init__(self, encoding: Encoding, options: Union[CodegenOptions, Mapping, None] = None, **overrides):
        self.encoding = encoding
        self.context = encoding.context
        opts_p, _keep = _options_pointer(CodegenOptions.make(options, **overrides))
        handle = _capi.module_p()
        status = lib.gj_module_create(self.context.handle, encoding.handle, opts_p, byref(handle))
        self.context.check(status, "gj_module_create")
        self._handle = handle.value
        # Descriptor templates, prepared once by the C *_init functions; each launch
        # copies one (the ABI requires the _init, and a copy of a prepared one is one).
        self._fwd = _capi.init_struct(_capi.ForwardDesc, "gj_forward_desc_init")
        self._bwd = _capi.init_struct(_capi.BackwardDesc, "gj_backward_desc_init")
        self._bwdbwd = _capi.init_struct(_capi.BackwardBackwardDesc, "gj_backward_backward_desc_init")
        self._init = _capi.init_struct(_capi.InitDesc, "gj_init_desc_init")

    # -- description
    @property
    def passes(self) -> int:
        return int(lib.gj_module_passes(self.handle))

    @property
    def output_width(self) -> int:
        """The padded output width."""
        return int(lib.gj_module_output_width(self.handle))

    @property
    def n_params(self) -> int:
        return int(lib.gj_module_n_params(self.handle))

    @property
    def element_size(self) -> int:
        """2 (fp16) or 4 (fp32)."""
        return int(lib.gj_module_element_size(self.handle))

    @property
    def gradient_element_size(self) -> int:
        """Bytes of one dL/dparams element: 4 with the option gradients_fp32, else element_size."""
        return int(lib.gj_module_gradient_element_size(self.handle))

    def prepare(self, passes: int = _capi.PASS_ALL) -> None:
        """Compiles and loads now (in parallel) what the passes need on the current device."""
        self.context.check(lib.gj_module_prepare(self.handle, int(passes)), "gj_module_prepare")

    def programs(self) -> list:
        """What the module has compiled or loaded so far: dicts with program, arch,
        compile_ms, cache ("hit"/"miss"/"off") and binary_bytes."""
        result = []
        for i in range(lib.gj_module_n_programs(self.handle)):
            info = _capi.ModuleProgramInfo()
            self.context.check(lib.gj_module_describe_program(self.handle, i, byref(info)), "gj_module_describe_program")
            result.append(
                {
                    "program": _capi.text(info.program),
                    "arch": _capi.text(info.arch),
                    "compile_ms": float(info.compile_ms),
                    "cache": _capi.CACHE_STATUSES.get(info.cache, "off"),
                    "binary_bytes": int(info.binary_bytes),
                }
            )
        return result

    # -- launches
    @staticmethod
    def _max_level(desc, max_level: float, max_level_per_point: Optional[int]) -> None:
        desc.max_level = float(max_level)
        desc.max_level_per_point = max_level_per_point or None

    def forward(
        self,
        n: int,
        x: int,
        params: int,
        y: Optional[int] = None,
        *,
        y_layout: Union[str, int] = "aos",
        dy_dx: Optional[int] = None,
        dy_dx_compact: Optional[int] = None,
        max_level: float = 1.0,
        max_level_per_point: Optional[int] = None,
        stream: Optional[int] = None,
    ) -> None:
        """gj_forward: y and/or dy/dx (dy_k/dx_d at [(k * n + i) * D + d]; dy_dx_compact: the
        compact form, n * D * n_output_dims 16-bit values, for backward's dy_dx_compact)."""
        desc = _capi.ForwardDesc.from_buffer_copy(self._fwd)
        desc.n, desc.x, desc.params, desc.y, desc.y_layout = n, x, params, y or None, _layout(y_layout)
        desc.dy_dx = dy_dx or None
        desc.dy_dx_compact = dy_dx_compact or None
        self._max_level(desc, max_level, max_level_per_point)
        self.context.check(lib.gj_forward(self.handle, stream or None, byref(desc)), "gj_forward")

    def backward(
        self,
        n: int,
        x: int,
        params: int,
        dL_dy: int,
        *,
        dL_dy_layout: Union[str, int] = "aos",
        dL_dparams: Optional[int] = None,
        accumulate: bool = False,
        dL_dx: Optional[int] = None,
        dy_dx: Optional[int] = None,
        dy_dx_compact: Optional[int] = None,
        max_level: float = 1.0,
        max_level_per_point: Optional[int] = None,
        stream: Optional[int] = None,
    ) -> None:
        """gj_backward: dL/dparams (overwritten, or added to with accumulate) and/or dL/dx;
        with dy_dx or dy_dx_compact (what forward wrote for the same x, params and max
        level), dL/dx comes from it instead of from the parameters."""
        desc = _capi.BackwardDesc.from_buffer_copy(self._bwd)
        desc.n, desc.x, desc.params, desc.dL_dy, desc.dL_dy_layout = n, x, params, dL_dy, _layout(dL_dy_layout)
        desc.dL_dparams = dL_dparams or None
        desc.dL_dparams_mode = _capi.GRAD_ACCUMULATE if accumulate else _capi.GRAD_OVERWRITE
        desc.dL_dx = dL_dx or None
        desc.dy_dx = dy_dx or None
        desc.dy_dx_compact = dy_dx_compact or None
        self._max_level(desc, max_level, max_level_per_point)
        self.context.check(lib.gj_backward(self.handle, stream or None, byref(desc)), "gj_backward")

    def backward_backward(
        self,
        n: int,
        x: int,
        params: int,
        dL_ddLdx: int,
        dL_dy: int,
        *,
        dL_dy_layout: Union[str, int] = "aos",
        dL_dparams: Optional[int] = None,
        accumulate: bool = False,
        dL_ddLdy: Optional[int] = None,
        dL_ddLdy_layout: Union[str, int] = "aos",
        dL_dx: Optional[int] = None,
        max_level: float = 1.0,
        max_level_per_point: Optional[int] = None,
        stream: Optional[int] = None,
    ) -> None:
        """gj_backward_backward: gradients of a loss on the backward pass's dL/dx
        (dL_ddLdx) with respect to the parameters, dL/dy and x."""
        desc = _capi.BackwardBackwardDesc.from_buffer_copy(self._bwdbwd)
        desc.n, desc.x, desc.params, desc.dL_ddLdx = n, x, params, dL_ddLdx
        desc.dL_dy, desc.dL_dy_layout = dL_dy, _layout(dL_dy_layout)
        desc.dL_dparams = dL_dparams or None
        desc.dL_dparams_mode = _capi.GRAD_ACCUMULATE if accumulate else _capi.GRAD_OVERWRITE
        desc.dL_ddLdy, desc.dL_ddLdy_layout = dL_ddLdy or None, _layout(dL_ddLdy_layout)
        desc.dL_dx = dL_dx or None
        self._max_level(desc, max_level, max_level_per_point)
        self.context.check(lib.gj_backward_backward(self.handle, stream or None, byref(desc)), "gj_backward_backward")

    def init_params(
        self,
        params: int,
        *,
        params_fp32: Optional[int] = None,
        seed: int = 1337,
        scale: float = 1.0,
        stream: Optional[int] = None,
    ) -> None:
        """gj_init_params: parameters uniform in [-1e-4 * scale, 1e-4 * scale]; element i
        depends only on (seed, i)."""
        desc = _capi.InitDesc.from_buffer_copy(self._init)
        desc.params, desc.params_fp32, desc.seed, desc.scale = params, params_fp32 or None, int(seed), float(scale)
        self.context.check(lib.gj_init_params(self.handle, stream or None, byref(desc)), "gj_init_params")


# ----------------------------------------------------------------------------- networks


class Network(_Owned):
    """A network or a model configuration and its parameter layout (gj_network,
    docs/networks.md): tiny-cuda-nn's MLP JSON ("otype" FullyFusedMLP, CutlassMLP or MLP,
    "n_neurons", "n_hidden_layers", "activation", "output_activation"), alone (as
    tinycudann's Network) or behind an encoding ({"encoding": {...}, "network": {...}}, as
    tinycudann's NetworkWithInputEncoding).

    n_input_dims: a network alone's input width (a model: the encoding's input dimensions),
    0 to take it from the key "n_input_dims"; n_output_dims: the output width, 0 to take it
    from the network object's "n_output_dims". ignore_unknown_keys and ``ignored_keys`` as
    for :class:`Encoding` (gj_network_create_ex). InvalidConfigError names the key at fault.
    """

    _what, _destroy = "Network", "gj_network_destroy"

    def __init__(
        self,
        config: Union[Mapping, str],
        n_input_dims: int = 0,
        n_output_dims: int = 0,
        context: Optional[Context] = None,
        ignore_unknown_keys: bool = False,
    ):
        self.context = context or default_context()
        self.config = config if isinstance(config, str) else json.dumps(dict(config))
        handle = _capi.network_p()
        widths = (int(n_input_dims), int(n_output_dims))
        self.ignored_keys: list = _create(
            self.context, "gj_network_create", self.config, widths, handle, ignore_unknown_keys
        )
        self._handle = handle.value

    # -- configuration
    @property
    def is_model(self) -> bool:
        """True when an encoding is in front of the MLP."""
        return bool(lib.gj_network_encoding(self.handle))

    @property
    def encoding(self) -> Optional[Encoding]:
        """A model's encoding, as a new :class:`Encoding` of its canonical configuration
        (the library's own is owned by the network); None for a network alone."""
        borrowed = lib.gj_network_encoding(self.handle)
        if not borrowed:
            return None
        text = _hyperparams("gj_encoding_hyperparams", borrowed)
        return Encoding(text, int(lib.gj_encoding_n_dims(borrowed)), self.context)

    @property
    def otype(self) -> str:
        """"FullyFusedMLP" or "CutlassMLP" (the class tiny-cuda-nn serves it with)."""
        return _capi.NETWORK_TYPES[lib.gj_network_otype(self.handle)]

    @property
    def n_neurons(self) -> int:
        return int(lib.gj_network_n_neurons(self.handle))

    @property
    def n_hidden_layers(self) -> int:
        return int(lib.gj_network_n_hidden_layers(self.handle))

    @property
    def activation(self) -> str:
        return _capi.ACTIVATIONS[lib.gj_network_activation(self.handle)]

    @property
    def output_activation(self) -> str:
        return _capi.ACTIVATIONS[lib.gj_network_output_activation(self.handle)]

    @property
    def n_input_dims(self) -> int:
        """The width of what a caller feeds (a model: the encoding's input dimensions)."""
        return int(lib.gj_network_n_input_dims(self.handle))

    @property
    def input_width(self) -> int:
        """The MLP's input width before padding (a model: the encoding's output width)."""
        return int(lib.gj_network_input_width(self.handle))

    @property
    def padded_input_width(self) -> int:
        """input_width rounded up to a multiple of 16."""
        return int(lib.gj_network_padded_input_width(self.handle))

    @property
    def input_padding(self) -> float:
        """What the padding input columns hold: 1.0 for a network alone, 0.0 in a model."""
        return float(lib.gj_network_input_padding(self.handle))

    @property
    def n_output_dims(self) -> int:
        return int(lib.gj_network_n_output_dims(self.handle))

    @property
    def padded_output_width(self) -> int:
        return int(lib.gj_network_padded_output_width(self.handle))

    @property
    def n_params(self) -> int:
        """Every parameter: the MLP's, then (a model) the encoding's."""
        return int(lib.gj_network_n_params(self.handle))

    @property
    def n_mlp_params(self) -> int:
        """The MLP's parameters (where a model's encoding parameters start)."""
        return int(lib.gj_network_n_mlp_params(self.handle))

    @property
    def n_layers(self) -> int:
        """Weight matrices: n_hidden_layers + 1 (1 for a CutlassMLP without hidden layers)."""
        return int(lib.gj_network_n_layers(self.handle))

    def layer(self, index: int) -> dict:
        """One weight matrix: layer, fan_in (columns), fan_out (rows), offset (weight (o, i)
        is params[offset + o * fan_in + i]), n_params, activation (applied after it)."""
        info = _capi.init_struct(_capi.NetworkLayerInfo, "gj_network_layer_info_init")
        status = lib.gj_network_layer(self.handle, int(index), byref(info))
        self.context.check(status, "gj_network_layer")
        return {
            "layer": int(info.layer),
            "fan_in": int(info.fan_in),
            "fan_out": int(info.fan_out),
            "offset": int(info.offset),
            "n_params": int(info.n_params),
            "activation": _capi.ACTIVATIONS[info.activation],
        }

    @property
    def layers(self) -> list:
        """The layer table, one dict per weight matrix (see :meth:`layer`)."""
        return [self.layer(i) for i in range(self.n_layers)]

    @property
    def hyperparams_json(self) -> str:
        """The canonical configuration (both widths as keys): it parses back to an identical network."""
        return _hyperparams("gj_network_hyperparams", self.handle)

    @property
    def hyperparams(self) -> dict:
        return json.loads(self.hyperparams_json)

    def generate(self, options: Union[CodegenOptions, Mapping, None] = None, **overrides) -> str:
        """The CUDA translation unit of the network (gj_network_generate, docs/networks.md §7)."""
        return _generate(self.context, "gj_network_generate", self.handle, options, overrides)

    def module(self) -> "NetworkModule":
        """A runtime module of this network alone: see :class:`NetworkModule`."""
        return NetworkModule(self)

    def precompile(self, arch: str) -> dict:
        """Fills the disk cache with the programs a NetworkModule of this network (or model)
        needs on arch (inference, forward, backward, backward with dL/dinput; a model's encoding
        module's too: gj_network_precompile), so that modules made
        later load them without compiling. Returns {"programs", "compiled", "cached", "ms"}."""
        report = _capi.PrecompileReport()
        status = lib.gj_network_precompile(self.context.handle, self.handle, arch.encode(), byref(report))
        self.context.check(status, "gj_network_precompile")
        return {"programs": report.programs, "compiled": report.compiled, "cached": report.cached, "ms": report.ms}

    def __repr__(self) -> str:
        return f"gridjit.Network({self.hyperparams_json}, n_params={self.n_params})"


# Every live NetworkModule, for wait_compiles().
_network_modules: "weakref.WeakSet[NetworkModule]" = weakref.WeakSet()


def wait_compiles() -> None:
    """Returns once no network module compiles a program behind its passes (NetworkModule.
    wait_compiles for each live one): what a benchmark calls after its first training steps,
    so that it times the fused kernels (docs/networks.md §10, "Tiers")."""
    for module in list(_network_modules):
        if module._handle:  # not closed
            module.wait_compiles()


class NetworkModule(_Owned):
    """A network on the GPU (gj_network_module, docs/networks.md §8): its generated
    kernels, each program (inference; training) compiled through the disk cache on first
    use, launched on the caller's stream with the caller's device pointers (integers).
    Making one needs no driver; a launch does. A model's module runs the fused encoding +
    network kernels (§9), whose encoding parameters these wrappers do not pass: they serve
    networks alone (gridjit.torch's NetworkWithInputEncoding fills the pass descriptor
    itself).

    params: fp16, n_params, in tiny-cuda-nn's layout; input (n x n_input_dims), output and
    dL_doutput (n x n_output_dims), dL_dinput (n x n_input_dims) and dL_dparams (n_params):
    float32, or for output and dL_doutput fp16 values where fp16=True (output_fp16,
    dL_doutput_fp16 of the pass descriptor: tiny-cuda-nn's output precision). context:
    context_bytes(n) bytes, written by forward, read by backward.
    """

    _what, _destroy, _spare_at_exit = "NetworkModule", "gj_network_module_destroy", True

    def __init__(self, network: Network):
        if not isinstance(network, Network):
            raise TypeError(f"NetworkModule takes a gridjit.Network (got {type(network).__name__})")
        self.network = network
        self.context = network.context
        handle = _capi.network_module_p()
        status = lib.gj_network_module_create(self.context.handle, network.handle, byref(handle))
        self.context.check(status, "gj_network_module_create")
        self._handle = handle.value
        self._pass = _capi.init_struct(_capi.NetworkPassDesc, "gj_network_pass_desc_init")
        self._init = _capi.init_struct(_capi.NetworkInitDesc, "gj_network_init_desc_init")
        self._train = _capi.init_struct(_capi.NetworkTrainDesc, "gj_network_train_desc_init")
        self._adam = _capi.init_struct(_capi.NetworkAdamDesc, "gj_network_adam_desc_init")
        _network_modules.add(self)

    def context_bytes(self, n: int) -> int:
        """Bytes of the forward context for n points."""
        return int(lib.gj_network_module_context_bytes(self.handle, int(n)))

    def encoding_gradient_size(self) -> int:
        """A model's encoding gradient element in bytes: 2 (fp16) or 4 (fp32); 0 for a
        network alone."""
        return int(lib.gj_network_module_encoding_gradient_size(self.handle))

    def wait_compiles(self) -> None:
        """gj_network_module_wait_compiles: returns once no program of this module compiles
        behind its passes (a model's fused backward, while the unfused one serves its first
        training steps: docs/networks.md §10, "Tiers"); raises that compile's error where it
        failed and no pass has made the program since."""
        self.context.check(lib.gj_network_module_wait_compiles(self.handle), "gj_network_module_wait_compiles")

    def _desc(self, n, input, params, output, context, dL_doutput, dL_dparams, accumulate, dL_dinput, fp16=False):
        desc = _capi.NetworkPassDesc.from_buffer_copy(self._pass)
        desc.n, desc.input, desc.params, desc.context = n, input or None, params or None, context or None
        if fp16:
            desc.output_fp16, desc.dL_doutput_fp16 = output or None, dL_doutput or None
        else:
            desc.output, desc.dL_doutput = output or None, dL_doutput or None
        desc.dL_dparams, desc.dL_dinput = dL_dparams or None, dL_dinput or None
        desc.dL_dparams_mode = _capi.GRAD_ACCUMULATE if accumulate else _capi.GRAD_OVERWRITE
        return desc

    def inference(
        self, n: int, input: int, params: int, output: int, *, fp16: bool = False, stream: Optional[int] = None
    ) -> None:
        """gj_network_inference: output = the network of input (fp16: as fp16 values)."""
        desc = self._desc(n, input, params, output, None, None, None, False, None, fp16)
        self.context.check(lib.gj_network_inference(self.handle, stream or None, byref(desc)), "gj_network_inference")

    def forward(
        self,
        n: int,
        input: int,
        params: int,
        output: int,
        context: int,
        *,
        fp16: bool = False,
        stream: Optional[int] = None,
    ) -> None:
        """gj_network_forward: output (fp16: as fp16 values), and the forward context for backward."""
        desc = self._desc(n, input, params, output, context, None, None, False, None, fp16)
        self.context.check(lib.gj_network_forward(self.handle, stream or None, byref(desc)), "gj_network_forward")

    def backward(
        self,
        n: int,
        params: int,
        context: int,
        dL_doutput: int,
        *,
        dL_dparams: Optional[int] = None,
        accumulate: bool = False,
        dL_dinput: Optional[int] = None,
        loss_scale: float = 0.0,
        unscale: bool = False,
        fp16: bool = False,
        stream: Optional[int] = None,
    ) -> None:
        """gj_network_backward: dL/dparams (fp32, overwritten or added to) and/or dL/dinput
        from dL/doutput (fp16: fp16 values, read in place) and the context of the forward pass
        with the same n and params.
        loss_scale (0: none) multiplies dL/doutput as the kernels read it; the gradients are
        then those of the scaled loss (dL_doutput_scale, docs/networks.md §8), or with
        unscale (overwriting only) divided by it again in the library's finishing pass
        (unscale_gradients)."""
        desc = self._desc(n, None, params, None, context, dL_doutput, dL_dparams, accumulate, dL_dinput, fp16)
        desc.dL_doutput_scale = float(loss_scale)
        desc.unscale_gradients = 1 if unscale else 0
        self.context.check(lib.gj_network_backward(self.handle, stream or None, byref(desc)), "gj_network_backward")

    def train_step(
        self,
        n: int,
        input: int,
        target: int,
        params: int,
        dL_dparams: int,
        *,
        output: Optional[int] = None,
        loss: Optional[int] = None,
        loss_scale: float = 0.0,
        stream: Optional[int] = None,
    ) -> None:
        """gj_network_train_step (docs/networks.md §10): forward, tiny-cuda-nn's L2 loss against
        target (n x n_output_dims float32) and backward to the parameters in one kernel.
        dL_dparams (fp32) is overwritten with the gradients of the loss times loss_scale (0:
        128); output (optional) receives the outputs, loss (optional, one float32) the mean
        loss."""
        desc = _capi.NetworkTrainDesc.from_buffer_copy(self._train)
        desc.n, desc.input, desc.target, desc.params = n, input or None, target or None, params or None
        desc.dL_dparams, desc.output, desc.loss = dL_dparams or None, output or None, loss or None
        desc.loss_scale = float(loss_scale)
        self.context.check(lib.gj_network_train_step(self.handle, stream or None, byref(desc)), "gj_network_train_step")

    def adam_step(
        self,
        params: int,
        params_fp32: int,
        first_moments: int,
        second_moments: int,
        steps: int,
        dL_dparams: int,
        *,
        learning_rate: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        l2_reg: float = 1e-8,
        loss_scale: float = 0.0,
        stream: Optional[int] = None,
    ) -> None:
        """gj_network_adam_step: tiny-cuda-nn's Adam (docs/networks.md §10) over the n_params
        parameters: params (fp16, written), params_fp32 (the master weights), the two moments
        (float32) and the per-parameter step counts (uint32), all updated from dL_dparams, the
        gradients of the loss times loss_scale (0: 128, as train_step's)."""
        desc = _capi.NetworkAdamDesc.from_buffer_copy(self._adam)
        desc.params, desc.params_fp32 = params or None, params_fp32 or None
        desc.first_moments, desc.second_moments = first_moments or None, second_moments or None
        desc.steps, desc.dL_dparams = steps or None, dL_dparams or None
        desc.learning_rate, desc.beta1, desc.beta2 = float(learning_rate), float(beta1), float(beta2)
        desc.epsilon, desc.l2_reg, desc.loss_scale = float(epsilon), float(l2_reg), float(loss_scale)
        self.context.check(lib.gj_network_adam_step(self.handle, stream or None, byref(desc)), "gj_network_adam_step")

    def init_params(
        self,
        params: Optional[int] = None,
        *,
        params_fp32: Optional[int] = None,
        seed: int = 1337,
        scale: float = 1.0,
        stream: Optional[int] = None,
    ) -> None:
        """gj_network_init_params: tiny-cuda-nn's initialisation (docs/networks.md §5) into
        params (fp16) and/or params_fp32 (device memory)."""
        desc = _capi.NetworkInitDesc.from_buffer_copy(self._init)
        desc.params, desc.params_fp32 = params or None, params_fp32 or None
        desc.seed, desc.scale = int(seed), float(scale)
        status = lib.gj_network_init_params(self.handle, stream or None, byref(desc))
        self.context.check(status, "gj_network_init_params")


__all__ = [
    "CacheEntry",
    "CacheStats",
    "CodegenOptions",
    "Context",
    "Encoding",
    "GridJitError",
    "Module",
    "Network",
    "NetworkModule",
    "Program",
    "RuntimeInfo",
    "compile_options",
    "default_context",
    "version",
    "version_string",
]
