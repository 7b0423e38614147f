"""gridjit.torch: a drop-in for tinycudann's grid encodings and fully fused MLPs on
gridjit's kernels.

Swap it in for tiny-cuda-nn's Python module::

    import gridjit.torch as tcnn            # instead of: import tinycudann as tcnn
    enc = tcnn.Encoding(3, {"otype": "HashGrid", "n_levels": 16})
    y = enc(x)                              # x: (batch, 3) in [0, 1] on a CUDA device
    model = tcnn.NetworkWithInputEncoding(3, 1, {"otype": "HashGrid"},
                                          {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2})

Networks (``Network``, ``NetworkWithInputEncoding``): see their classes and
docs/python.md; fp32 ``params`` in tiny-cuda-nn's layout (a model's network first, then
its encoding), fp16 kernels with tinycudann's loss scale (128) applied around the
network's backward pass, float32 output, no second order through the network.

Conventions of Encoding (those of tinycudann.Encoding; docs/python.md lists where gridjit
differs):

- ``Encoding(n_input_dims, encoding_config, seed=1337, dtype=None)``; the configuration
  is tiny-cuda-nn's grid-encoding JSON (otype Grid, HashGrid, DenseGrid or TiledGrid, any
  letter case). Keys gridjit does not know are skipped with a warning naming each (and the
  key it may have meant), as tinycudann accepts them.
- dtype (torch.half or torch.float; None: the preferred precision, torch.half on a GPU
  of compute capability 7.0 or newer, as tinycudann) is the precision of the kernels and
  of the output. The parameters are one fp32 ``nn.Parameter``, ``params``, of
  ``n_params`` elements whatever dtype is, initialised from the seed as gj_init_params
  does (uniform in ±1e-4): on the current CUDA device when CUDA is available, else on
  the CPU (the same values, computed with numpy). Stock optimisers, GradScaler and
  state_dict work on them unchanged.
- fp16 modules read an fp16 copy of the parameters, made when they have changed since
  the last call (load_state_dict, ``copy_`` under no_grad, optimizers: anything that
  bumps the tensor's version counter, and any torch.optim optimizer's step, seen by a
  global step hook because fused optimizers do not bump it) and reused otherwise. An
  in-place edit through ``params.data`` does not bump it: call
  :meth:`Encoding.params_changed` after one. While a CUDA graph is being captured the
  copy is always made (inside the graph), and once a graph has been captured through an
  encoding its eager calls make it every time (a replay changes the parameters without
  telling anyone).
- Gradients with respect to the parameters are computed in fp32 by the kernels (gridjit
  modules made with the code-generation option gradients_fp32) and reach ``params.grad``
  as fp32, with no cast or scaling pass. ``loss_scale`` (128 for fp16, 1 for fp32, as
  tinycudann) is kept for code that reads it; with fp32 accumulation the scaling
  tinycudann does by it would cancel exactly, so gridjit does not apply it.
- Input (batch, n_input_dims), any floating dtype (used as float32, as tinycudann),
  on a CUDA device (a CPU tensor is moved there with a warning, as tinycudann does);
  output (batch, n_output_dims) of dtype, point-major. Any batch size, 0 included.
- Gradients: dL/dparams, dL/dx, and the second order (the backward pass is itself
  differentiable: a loss on dL/dx, such as an eikonal term, gets its gradients with
  respect to the parameters, dL/dy and x from gj_backward_backward; a loss on
  dL/dparams gets them from the forward and backward passes with the parameters
  replaced by that loss's gradient).
- ``forward(x, max_level=None)``: max_level is a number in [0, 1] or a tensor of one
  value per point (docs/design.md §6.5: finer levels output 0 and get no gradient).
- Stochastic interpolation, when the configuration sets
  "stochastic_interpolation": true, applies while the module is in training mode.

The kernels run on the device of the tensors, on PyTorch's current stream of that
device, in PyTorch's CUDA context (the device's primary context): nothing is copied or
synchronised. One gridjit module (the compiled kernels) is made per device the first
time the encoding runs there, so an Encoding moved between GPUs, replicated by
DataParallel or trained under DistributedDataParallel works; kernels are compiled with
NVRTC on first use and kept in gridjit's disk cache (docs/cache.md). Under
torch.compile the encoding runs eagerly (a graph break). Configure the cache through
:func:`context`.
"""

from __future__ import annotations

try:
    import torch
except ImportError as _exc:  # say what is needed, whatever the import failed on
    raise ImportError(
        "gridjit.torch needs PyTorch (the `torch` package), which could not be imported "
        f"({_exc}): install it, e.g. `pip install torch` or `pip install './python[torch]'`"
    ) from _exc

import atexit
import collections
import gc
import json
import os
import sys
import threading
import warnings
import weakref
from typing import Mapping, Optional, Union

from . import _capi, _pcg
from ._torch_launch import _F32, _FusedModelOps, _ModelOps, _NetOps, _Ops
from .core import CodegenOptions, Context, Encoding as _GridEncoding, Module as _GridModule, default_context
from .core import Network as _GridNetwork, NetworkModule as _GridNetworkModule, wait_compiles

__all__ = [
    "Encoding",
    "Module",
    "Network",
    "NetworkWithInputEncoding",
    "context",
    "encode",
    "free_temporary_memory",
    "supports_jit_fusion",
    "wait_compiles",
]

_PRECISIONS = {torch.float16: "fp16", torch.float32: "fp32"}

# What the hot path calls, looked up once (the launch layer's are in _torch_launch). Each
# has a fallback for torch builds without the private entry point.
_capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing
_grad_enabled = torch.is_grad_enabled
_will_execute = getattr(torch._C, "_will_engine_execute_node", None)
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


def _wanted_gradients(ctx) -> tuple:
    """(want dL/dx, want dL/dparams) in the backward of a Function whose arguments begin
    (ops, x, params): whether the running backward pass uses each. needs_input_grad says
    whether it could; the engine knows whether the node the gradient goes to runs:
    torch.autograd.grad(y, x, create_graph=True), an eikonal term's pass, leaves the
    parameters out, and their gradient (a pass over every point and level, and a
    parameter-sized buffer) is then not computed. Where the engine cannot say (an older
    torch; an input of autograd.grad itself, which it refuses to answer for; compiled
    autograd), needs_input_grad decides."""
    return _wanted(ctx, 1, 0), _wanted(ctx, 2, 1)  # next_functions lists tensor arguments only


def _wanted(ctx, i: int, edge: int) -> bool:
    """_wanted_gradients for argument i, the edge-th tensor argument."""
    if not ctx.needs_input_grad[i]:
        return False
    if _will_execute is None:
        return True
    try:
        node = ctx.next_functions[edge][0]
        return node is None or bool(_will_execute(node))
    except Exception:  # noqa: BLE001 - the engine cannot say: keep the static answer
        return True


def context() -> Context:
    """The gridjit context of every gridjit.torch module (the package's default context):
    its disk-cache settings (set_cache_dir, cache_stats, ...) apply to them."""
    return default_context()


def supports_jit_fusion() -> bool:
    """Whether the modules run kernels generated and compiled at run time: True wherever
    CUDA is usable. gridjit has no other path: every module runs its generated kernels, and
    a NetworkWithInputEncoding runs its encoding and its network in one kernel, which is
    what tinycudann's optional JIT fusion gives (tinycudann answers whether that option can
    run there). Fusion into users' own kernels: the C API (docs/fusion.md)."""
    return torch.cuda.is_available()


#: Every gridjit.torch module alive (encodings, networks), for free_temporary_memory and
#: the optimizer step hook.
_live: "weakref.WeakSet[Module]" = weakref.WeakSet()


def free_temporary_memory() -> None:
    """Collects garbage (Python objects that hold tensors) and drops the fp16 copies of
    the parameters that live fp16 modules (encodings, networks) keep between calls; they
    are made again on the next call. PyTorch's caching allocator keeps the memory for reuse
    (torch.cuda.empty_cache() hands it back to the device)."""
    gc.collect()
    for module in list(_live):
        module.params_changed()


def _after_optimizer_step(optimizer, args, kwargs) -> None:
    """A global optimizer step post-hook: makes the fp16 copies of the modules whose
    parameters the optimizer holds again (_Module._params_stepped). Fused optimizers
    (fused=True) update the parameters without bumping their version counter, so the
    version alone would miss their steps."""
    stepped = None
    for module in list(_live):
        if module._cast is None:
            continue
        if stepped is None:
            stepped = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if id(module._parameters.get("params")) in stepped:
            module._params_stepped()


try:
    from torch.optim.optimizer import register_optimizer_step_post_hook as _register_step_hook
except ImportError:  # pragma: no cover - torch < 2.0
    _register_step_hook = None
if _register_step_hook is not None:
    _register_step_hook(_after_optimizer_step)


# ----------------------------------------------------------------------------- warnings

_THIS_FILE = os.path.normcase(os.path.abspath(__file__))
_TORCH_NN_DIR = os.path.normcase(os.path.dirname(os.path.abspath(torch.nn.__file__)))


def _user_stacklevel() -> int:
    """The stacklevel that points a warning, raised by this module's caller, at the user's
    line: the first frame outside this file and torch.nn (nn.Module.__call__)."""
    level, frame = 1, sys._getframe(2)
    while frame is not None:
        name = os.path.normcase(os.path.abspath(frame.f_code.co_filename))
        if name != _THIS_FILE and not name.startswith(_TORCH_NN_DIR):
            break
        frame, level = frame.f_back, level + 1
    return level + 1


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())


_jit_fusion_warned = False


# ----------------------------------------------------------------------------- native objects


def _aligned(tensor: torch.Tensor, alignment: int = 16) -> torch.Tensor:
    """The tensor when it is contiguous and its data aligned as gridjit requires, else a copy."""
    if tensor.data_ptr() % alignment == 0 and tensor.is_contiguous():
        return tensor
    return tensor.clone(memory_format=torch.contiguous_format)


def _synchronize(indices) -> None:
    """Waits for the CUDA devices (before the modules that ran there are destroyed)."""
    for index in indices:
        try:
            torch.cuda.synchronize(index)
        except Exception:  # the CUDA runtime may be gone at interpreter exit
            pass


class _Precompiler:
    """Compiles modules' programs into the disk cache on one background thread, a job at a
    time (an encoding's on every CPU: gj_precompile; a network's or model's programs, side by
    side: gj_network_precompile), so that a module's first launches find them
    there instead of compiling each pass when it is first launched, one after the other (an
    eikonal step's forward, backward and second-order backward: about 2 s on an H200 host
    with nothing cached; tinycudann compiles its kernels when it is built). A launch that
    needs a program while it is being compiled waits for it (the cache lets one compile a
    key at a time) instead of compiling it again. A job's errors are dropped: the launch
    that needs the program compiles it and reports them. At exit the queue is dropped and
    the job under way finished, so that the interpreter never ends during a compile."""

    def __init__(self):
        self._lock = threading.Lock()
        self._jobs = collections.deque()
        self._seen = set()
        self._thread = None
        self._closed = False

    def submit(self, jobs) -> None:
        """jobs: (key, compile) pairs, compile() filling the cache; each key once per process."""
        with self._lock:
            if self._closed:
                return
            for key, compile_ in jobs:
                if key not in self._seen:
                    self._seen.add(key)
                    self._jobs.append(compile_)
            if self._jobs and self._thread is None:
                self._thread = threading.Thread(target=self._work, name="gridjit-precompile", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._jobs or self._closed:
                    self._thread = None
                    return
                compile_ = self._jobs.popleft()
            try:
                compile_()
            except Exception:  # noqa: BLE001 - see the class docstring
                pass

    def close(self) -> None:
        """Drops the queue and waits for the job under way."""
        with self._lock:
            self._closed = True
            self._jobs.clear()
            thread = self._thread
        if thread is not None:
            thread.join()


_precompiler = _Precompiler()
atexit.register(_precompiler.close)


def _precompile_arch(context: Context, index: int) -> Optional[str]:
    """The architecture to compile ahead for on device index, or None: not wanted
    (GRIDJIT_TORCH_PRECOMPILE=0), no disk cache to put the programs in, or no device to ask."""
    if os.environ.get("GRIDJIT_TORCH_PRECOMPILE", "1") == "0" or context.cache_dir is None:
        return None
    try:
        major, minor = torch.cuda.get_device_capability(index)
    except Exception:  # noqa: BLE001 - the launches compile as they go
        return None
    return f"sm_{major}{minor}"


def _encoding_job(encoding: _GridEncoding, options: CodegenOptions, arch: str) -> tuple:
    key = ("encoding", encoding.hyperparams_json, encoding.n_dims, options.output_width_multiple, arch)
    return key, lambda: encoding.precompile(arch, options)


def _network_job(network: _GridNetwork, arch: str) -> tuple:
    key = ("network", network.hyperparams_json, network.n_input_dims, network.n_output_dims, arch)
    return key, lambda: network.precompile(arch)


class _PerDevice:
    """What _Native and _NetNative share: their launch layers, one per CUDA device index,
    made on first use by _make_ops (in ``_ops``, guarded by ``_lock``)."""

    def ops(self, index: int):
        """The launch layer for CUDA device index (made on first use)."""
        ops = self._ops.get(index)
        if ops is None:
            ops = self._make_ops(index)  # outside the lock: _Native.module() takes it
            with self._lock:  # two threads may make one each: the first one stored serves both
                ops = self._ops.setdefault(index, ops)
        return ops


class _Native(_PerDevice):
    """The gridjit objects behind an Encoding: its gj_encoding, one for exact gradients
    when the configuration asks for stochastic interpolation, and gj_modules made per
    (device, gradient mode) on first use, with fp32 gradients (gradients_fp32). Shared
    by copies of the module (deepcopy, DataParallel replicas); pickled as its canonical
    configuration.

    ``ignored`` lists the library's message for each configuration key it skipped."""

    def __init__(self, n_input_dims: int, config_json: str, dtype: torch.dtype, pad_to: int = 1):
        self.n_input_dims = n_input_dims
        self.dtype = dtype
        self.pad_to = pad_to
        self.context = default_context()
        self.encoding = _GridEncoding(config_json, n_input_dims, self.context, ignore_unknown_keys=True)
        self.ignored = list(self.encoding.ignored_keys)
        # A model's encoding pads its output with zeros up to the network's input width.
        self.output_width = -(-self.encoding.n_output_dims // pad_to) * pad_to
        self.config_json = self.encoding.hyperparams_json  # canonical: no unknown keys left
        self.exact_encoding = self.encoding
        if self.encoding.stochastic_interpolation:
            exact = json.loads(self.config_json)
            exact["stochastic_interpolation"] = False
            self.exact_encoding = _GridEncoding(exact, n_input_dims, self.context)
        self._modules = {}
        self._ops = {}
        self._lock = threading.Lock()

    @property
    def stochastic(self) -> bool:
        return self.exact_encoding is not self.encoding

    def module(self, index: int, stochastic: bool) -> _GridModule:
        key = (index, bool(stochastic) and self.stochastic)
        module = self._modules.get(key)
        if module is None:
            with self._lock:
                module = self._modules.get(key)
                if module is None:
                    encoding = self.encoding if key[1] else self.exact_encoding
                    module = _GridModule(encoding, self._options())
                    self._modules[key] = module
        return module

    def _options(self) -> CodegenOptions:
        """The code-generation options of this encoding's modules (and of their programs
        compiled ahead, precompile_soon)."""
        options = CodegenOptions(gradients_fp32=True)
        if self.output_width != self.encoding.n_output_dims:  # else: an Encoding's programs
            options.output_width_multiple = self.pad_to
        return options

    def precompile_soon(self, index: int) -> None:
        """Has the programs of this encoding's modules for device index compiled into the
        disk cache in the background (_precompiler, _precompile_arch)."""
        arch = _precompile_arch(self.context, index)
        if arch is not None:
            _precompiler.submit(self.precompile_jobs(arch))

    def precompile_jobs(self, arch: str) -> list:
        encodings = [self.exact_encoding] + ([self.encoding] if self.stochastic else [])
        return [_encoding_job(encoding, self._options(), arch) for encoding in encodings]

    def _make_ops(self, index: int) -> _Ops:
        return _Ops(self, index)

    def close(self) -> None:
        """Destroys the modules, after the devices that ran them have finished."""
        modules, self._modules = getattr(self, "_modules", {}), {}
        self._ops = {}
        _synchronize({key[0] for key in modules})
        for module in modules.values():
            module.close()

    def __del__(self) -> None:
        self.close()

    def __deepcopy__(self, memo) -> "_Native":
        return self  # immutable configuration; modules are per device and thread-safe

    def __getstate__(self) -> dict:
        return {
            "n_input_dims": self.n_input_dims,
            "config_json": self.config_json,
            "dtype": str(self.dtype),
            "pad_to": self.pad_to,
        }

    def __setstate__(self, state: dict) -> None:
        dtype = {str(d): d for d in _PRECISIONS}[state["dtype"]]
        self.__init__(state["n_input_dims"], state["config_json"], dtype, state.get("pad_to", 1))


# ----------------------------------------------------------------------------- autograd


class _EncodeFunction(torch.autograd.Function):
    """y = encoding(x; params), computed from kparams, the parameters in the kernels'
    precision (params itself for fp32). Gradients go to params, in fp32 from the kernels.
    Its backward is _BackwardFunction, itself differentiable.

    For fp16, params (the fp32 parameter) is kept on ctx, not saved: like tinycudann,
    which saves its fp16 cast, the backward pass needs only kparams, and an in-place
    update of the fp32 parameters between forward and backward is no error. params is
    needed only to route second-order gradients to it."""

    @staticmethod
    def forward(ctx, ops, x, params, kparams, mlpp, ml, stochastic):
        ctx.set_materialize_grads(False)
        ctx.ops, ctx.ml, ctx.stochastic = ops, ml, stochastic
        ctx.params = None if kparams is params else params
        ctx.save_for_backward(x, kparams, mlpp)
        return ops.forward(x, kparams, mlpp, ml)

    @staticmethod
    def backward(ctx, dy):
        want_dx, want_dparams = _wanted_gradients(ctx)
        if dy is None or not (want_dx or want_dparams):
            return None, None, None, None, None, None, None
        x, kparams, mlpp = ctx.saved_tensors
        ops = ctx.ops
        dy = dy.to(ops.dtype).contiguous()
        if _grad_enabled():  # create_graph: the backward pass is itself differentiated
            params = kparams if ctx.params is None else ctx.params
            dx, dparams = _BackwardFunction.apply(
                ops, dy, x, params, kparams, mlpp, ctx.ml, ctx.stochastic, want_dx, want_dparams
            )
        else:
            dx, dparams = ops.backward(x, kparams, mlpp, ctx.ml, dy, want_dx, want_dparams, ctx.stochastic)
        return None, dx, dparams, None, None, None, None


class _BackwardFunction(torch.autograd.Function):
    """(dL/dx, dL/dparams) = backward(dL/dy; x, kparams), and its own gradients (with
    respect to dL/dy, x and params)."""

    @staticmethod
    def forward(ctx, ops, dy, x, params, kparams, mlpp, ml, stochastic, want_dx, want_dparams):
        ctx.set_materialize_grads(False)
        ctx.ops, ctx.ml = ops, ml
        ctx.save_for_backward(dy, x, kparams, mlpp)
        return ops.backward(x, kparams, mlpp, ml, dy, want_dx, want_dparams, stochastic)

    @staticmethod
    def backward(ctx, g_dx, g_dparams):
        # g_dx = dLoss/d(dL/dx) (H), g_dparams = dLoss/d(dL/dparams) (Q).
        need_dy, need_x, need_params = ctx.needs_input_grad[1], ctx.needs_input_grad[2], ctx.needs_input_grad[3]
        dy, x, kparams, mlpp = ctx.saved_tensors
        ops, ml = ctx.ops, ctx.ml
        out_dy = out_x = out_params = None
        if g_dx is not None and (need_dy or need_x or need_params):
            # dL/dx is bilinear in (dL/dy, params): gj_backward_backward gives all three.
            h = g_dx.to(x.dtype).contiguous()
            out_params, out_dy, out_x = ops.backward_backward(x, kparams, mlpp, ml, h, dy, need_params, need_dy, need_x)
        if g_dparams is not None and (need_dy or need_x):
            # dL/dparams[e] = sum_i sum_corners W * dL/dy[i]: linear in dL/dy, free of the
            # parameters. <Q, dL/dparams> is the forward pass with parameters Q, dotted
            # with dL/dy: its gradient in dL/dy is forward(x; Q), in x backward(x; Q, dL/dy).
            q = _aligned(g_dparams.to(ops.dtype))
            if need_dy:
                y_q = ops.forward(x, q, mlpp, ml)
                out_dy = y_q if out_dy is None else out_dy + y_q
            if need_x:
                dx_q, _ = ops.backward(x, q, mlpp, ml, dy, True, False, False)
                out_x = dx_q if out_x is None else out_x + dx_q
        return None, out_dy, out_x, out_params, None, None, None, None, None, None


# ----------------------------------------------------------------------------- modules


def _preferred_dtype() -> torch.dtype:
    """tinycudann's preferred precision: fp16 where tensor cores take it (compute
    capability 7.0 or newer on every device), fp32 otherwise and without CUDA."""
    try:
        if not torch.cuda.is_available():
            return torch.float
        capabilities = [torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())]
    except Exception:  # no usable driver: as without CUDA
        return torch.float
    return torch.half if capabilities and min(capabilities) >= (7, 0) else torch.float


class Module(torch.nn.Module):
    """The base of gridjit.torch's modules, as tinycudann.Module: one ``params``
    parameter (fp32), ``dtype``, ``seed``, ``loss_scale`` and the ``jit_fusion``
    property (supports_jit_fusion(): it cannot be turned off); the cached copy of the
    parameters in the kernels' precision (fp16), with :meth:`params_changed`."""

    @property
    def jit_fusion(self) -> bool:
        """supports_jit_fusion(): the module always runs its generated kernels (fused, for a
        NetworkWithInputEncoding) where CUDA is usable. Setting another value warns once
        that it has no effect."""
        return supports_jit_fusion()

    @jit_fusion.setter
    def jit_fusion(self, value) -> None:
        global _jit_fusion_warned
        if bool(value) != supports_jit_fusion() and not _jit_fusion_warned:
            _jit_fusion_warned = True
            _warn(
                "gridjit.torch: setting jit_fusion has no effect: gridjit's modules always run their "
                "generated kernels (a NetworkWithInputEncoding its encoding and network in one kernel) "
                f"where CUDA is usable; here jit_fusion stays {supports_jit_fusion()}"
            )

    @jit_fusion.deleter
    def jit_fusion(self) -> None:
        raise AttributeError("`jit_fusion` can not be deleted")

    # -- the fp16 copy of the parameters (fp16 modules)
    def _reset_cache(self) -> None:
        # (source alias, data_ptr, version, cast) of the last fp16 copy; the alias keeps the
        # source's memory alive, so that its address cannot be reused by another tensor
        # while the entry stands.
        self.__dict__["_cast"] = None
        self.__dict__["_graph_captured"] = False

    def params_changed(self) -> None:
        """Drops the fp16 copy of the parameters, so that the next call makes it again.
        Needed only after changing ``params`` in a way that neither bumps its version
        counter nor is a torch.optim optimizer's step: an in-place edit through
        ``params.data``, or a hand-written update kernel (``copy_`` under
        ``torch.no_grad()``, load_state_dict and optimizers are seen). fp32 modules
        read the parameters directly and need nothing."""
        self.__dict__["_cast"] = None

    def _params_stepped(self) -> None:
        """After an optimizer step over params: the fp16 copy made again now rather than by
        the next call. The step's kernels are still queued, so the cast's host work (an
        allocation and a launch) hides behind them instead of keeping the GPU waiting at the
        start of the next forward pass. Lazily, as params_changed, on the CPU and around CUDA
        graphs."""
        self.__dict__["_cast"] = None
        params = self._parameters.get("params")
        if params is not None and params.is_cuda and not self._graph_captured and not _capturing():
            self._kernel_params(params)

    def _kernel_params(self, params: torch.Tensor) -> torch.Tensor:
        """params in the kernels' precision, contiguous and aligned: params itself when
        it has that dtype, else the cached cast (made again when params changed)."""
        if params.dtype is self.dtype:
            if params.data_ptr() & 15 or not params.is_contiguous():
                return _aligned(params.detach())
            return params
        if params.is_cuda and _capturing():
            # In a CUDA graph the cast must be part of the graph, so that each replay reads
            # the parameters of that moment. Replays then change them behind any cache's
            # back: from now on eager calls cast every time.
            self.__dict__["_graph_captured"] = True
            self.__dict__["_cast"] = None
            return params.detach().to(self.dtype, memory_format=torch.contiguous_format)
        cast = self._cast
        if cast is not None and cast[1] == params.data_ptr() and cast[2] == params._version:
            return cast[3]
        source = params.detach()
        kparams = source.to(self.dtype, memory_format=torch.contiguous_format)
        if not self._graph_captured:
            self.__dict__["_cast"] = (source, source.data_ptr(), params._version, kparams)
        return kparams

    # -- construction (the end of every constructor: _native, seed, dtype and n_params set)
    def _start(self, seed: int) -> None:
        """Warns about the configuration keys the library skipped, makes ``params`` from the
        seed, registers the module (free_temporary_memory, the optimizer step hook) and, with
        CUDA, has the programs of its launches compiled ahead for the parameters' device."""
        for message in self._native.ignored:
            _warn(f"{self._where}: ignoring a configuration key gridjit does not know: {message}")
        self._reset_cache()
        self.params = torch.nn.Parameter(self._initial_params(seed), requires_grad=True)
        _live.add(self)
        if torch.cuda.is_available():
            self._native.precompile_soon(self.params.get_device())
        if "torch._dynamo" in sys.modules:
            _make_eager_forward_disabled()

    def _initial_params(self, seed: int) -> torch.Tensor:
        """The seed's initial fp32 parameters: on the current CUDA device by the launch
        layer when CUDA is available, else computed on the CPU (_host_initial_params)."""
        if torch.cuda.is_available():
            index = torch.cuda.current_device()
            params = torch.empty(self.n_params, dtype=_F32, device=torch.device("cuda", index))
            self._native.ops(index).init(params, seed)
            return params
        return self._host_initial_params(seed)

    def _apply(self, *args, **kwargs):  # .to(), .cuda(), .half(), ...: the copy is stale
        self.params_changed()
        return super()._apply(*args, **kwargs)

    # -- pickling: the native objects travel as their configuration (their __getstate__)
    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_cast"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.__dict__.setdefault("_graph_captured", False)
        self.__dict__["_cast"] = None
        _live.add(self)


class Encoding(Module):
    """A multiresolution grid encoding (HashGrid, DenseGrid, TiledGrid) with the
    constructor and conventions of ``tinycudann.Encoding``; see the module docstring.

    Parameters
    ----------
    n_input_dims: input dimensions (the inputs' shape is (batch, n_input_dims)).
    encoding_config: tiny-cuda-nn's grid-encoding configuration (a dict; JSON text works too).
    seed: seed of the parameters' initialisation.
    dtype: torch.half or torch.float, the precision of the kernels and of the output;
        None (default): torch.half on GPUs of compute capability 7.0 or newer, else
        torch.float. The parameters are fp32 whatever dtype is.
    """

    _where = "gridjit.torch.Encoding"

    def __init__(
        self,
        n_input_dims: int,
        encoding_config: Union[Mapping, str],
        seed: int = 1337,
        dtype: Optional[torch.dtype] = None,
    ):
        super().__init__()
        dtype = _preferred_dtype() if dtype is None else dtype
        if dtype not in _PRECISIONS:
            raise ValueError(f"Encoding only supports fp32 or fp16 precision, but got {dtype}")
        precision = _PRECISIONS[dtype]
        why = f" but dtype is {dtype}: dtype sets the precision ({precision})"
        config = _with_precision(encoding_config, precision, self._where, why)
        native = _Native(int(n_input_dims), json.dumps(config), dtype)
        self.n_input_dims = int(n_input_dims)
        self.encoding_config = encoding_config
        self.seed = seed
        self.dtype = dtype
        self._native = native
        self.n_output_dims = native.encoding.n_output_dims
        self.n_params = native.encoding.n_params
        self.loss_scale = 128.0 if dtype == torch.half else 1.0
        self._start(seed)

    def _host_initial_params(self, seed: int) -> torch.Tensor:
        return torch.from_numpy(_pcg.init_params(self.n_params, seed))

    # -- description
    @property
    def hyperparams(self) -> dict:
        """The canonical configuration gridjit uses (every key, canonical spellings)."""
        return self._native.encoding.hyperparams

    @property
    def levels(self) -> list:
        """The level table (scale, resolution, entries, offset, hashed per level)."""
        return self._native.encoding.levels

    def extra_repr(self) -> str:
        return (
            f"n_input_dims={self.n_input_dims}, n_output_dims={self.n_output_dims}, seed={self.seed}, "
            f"dtype={self.dtype}, hyperparams={self._native.encoding.hyperparams}"
        )

    # -- the call
    def forward(self, x: torch.Tensor, max_level: Union[float, torch.Tensor, None] = None) -> torch.Tensor:
        """Encodes x (batch, n_input_dims) into (batch, n_output_dims) of dtype."""
        if _is_compiling():
            return _forward_outside_graph(self, x, max_level)
        params = self.params
        try:
            on_cuda = x.is_cuda
        except AttributeError:
            raise TypeError(
                f"gridjit.torch.Encoding: the input must be a torch.Tensor (got {type(x).__name__})"
            ) from None
        if not on_cuda:
            x = _cpu_input(x, params)
        if not (x.dtype is _F32 and x.dim() == 2 and x.shape[1] == self.n_input_dims and x.is_contiguous()):
            x = _normalise_input(self, x)
        if max_level is None:
            ml, mlpp = 1.0, None
        else:
            ml, mlpp = _max_level_arguments(max_level, x.shape[0])
        index = x.get_device()
        if params.get_device() != index or (mlpp is not None and mlpp.get_device() != index):
            _device_mismatch(x, params, mlpp)
        native = self._native
        ops = native._ops.get(index)
        if ops is None:
            ops = native.ops(index)
        kparams = self._kernel_params(params)
        if _grad_enabled() and (params.requires_grad or x.requires_grad):
            return _EncodeFunction.apply(ops, x, params, kparams, mlpp, ml, self.training and native.stochastic)
        return ops.forward(x, kparams, mlpp, ml)


def _eager_forward(module: Module, *args):
    return module.forward(*args)


_eager_forward_disabled = None


def _make_eager_forward_disabled():
    """_eager_forward wrapped in torch.compiler.disable. Made when torch._dynamo is already
    imported (importing it costs about a second, which gridjit.torch does not impose on
    programs that never compile), else by the first traced call."""
    global _eager_forward_disabled
    if _eager_forward_disabled is None:
        _eager_forward_disabled = torch.compiler.disable(_eager_forward)
    return _eager_forward_disabled


def _forward_outside_graph(module: Module, *args):
    """Under torch.compile a gridjit module runs eagerly: a graph break around its call (two
    more the first time, when the wrapper is made inside the traced region)."""
    fn = _eager_forward_disabled
    if fn is None:
        fn = _make_eager_forward_disabled()
    return fn(module, *args)


# ----------------------------------------------------------------------------- networks


class _NetNative(_PerDevice):
    """The gridjit objects behind a Network or a NetworkWithInputEncoding: the parsed
    configuration (``model``: a gj_network, of the model for NetworkWithInputEncoding, whose
    parse gives the errors, the skipped keys, the canonical form and the parameter count),
    the MLP the kernels run (``mlp``: a network alone; for a model, the network part with
    the encoding's padded output width as its input, so that no padding column exists and
    the layout is the model's), its gj_network_module (one for every device: its programs
    are per architecture, its launches on the caller's stream) and, for a model, the
    encoding's _Native (fp16, output padded with zeros to the network's input width, as
    tiny-cuda-nn pads it), and the module of the whole model (``model_module``: the fused
    encoding + network kernels the launches use; the network's module and the encoding's
    serve the initialisation and stochastic interpolation). Launch layers per device index,
    made on first use. Pickled as its canonical configuration."""

    def __init__(self, n_input_dims: int, n_output_dims: int, network_json: str, encoding_json: Optional[str] = None):
        self.n_input_dims = n_input_dims
        self.n_output_dims = n_output_dims
        self.context = default_context()
        if encoding_json is None:
            config = network_json
        else:
            config = '{"encoding": %s, "network": %s}' % (encoding_json, network_json)
        self.model = _GridNetwork(config, n_input_dims, n_output_dims, self.context, ignore_unknown_keys=True)
        self.ignored = list(self.model.ignored_keys)
        self.n_params = self.model.n_params
        self.n_mlp_params = self.model.n_mlp_params
        self.hyperparams_json = self.model.hyperparams_json
        canonical = json.loads(self.hyperparams_json)
        if encoding_json is None:
            self.network_json = json.dumps(canonical)
            self.encoding_json = None
            self.mlp = self.model
            self.encoding = None
        else:
            network = dict(canonical["network"])
            network.pop("n_input_dims", None)
            self.network_json = json.dumps(network)
            self.encoding_json = json.dumps(canonical["encoding"])
            width = self.model.padded_input_width
            self.mlp = _GridNetwork(self.network_json, width, n_output_dims, self.context)
            if self.mlp.n_params != self.n_mlp_params:  # the layouts must be one
                raise AssertionError(
                    f"gridjit.torch: the network part has {self.mlp.n_params} parameters, the model's "
                    f"{self.n_mlp_params}"
                )
            self.encoding = _Native(n_input_dims, self.encoding_json, torch.half, pad_to=_capi.NETWORK_ALIGNMENT)
            if self.encoding.output_width != width:
                raise AssertionError(f"gridjit.torch: the encoding's padded output has {self.encoding.output_width} "
                                     f"features, the network's input {width}")
        # Whether the backward pass interpolates stochastically in training (a model's encoding may).
        self.stochastic = self.encoding is not None and self.encoding.stochastic
        self.module = _GridNetworkModule(self.mlp)
        # A model's fused kernels: the module of the whole model (compiled on first use).
        self.model_module = None if self.encoding is None else _GridNetworkModule(self.model)
        self._ops = {}
        self._lock = threading.Lock()

    def precompile_soon(self, index: int) -> None:
        """Has the programs its launches use on device index compiled into the disk cache in
        the background (_precompiler): a network's module's, a model's fused module's, or for
        a model whose encoding interpolates stochastically (the composed path) the network
        part's and the encoding's."""
        arch = _precompile_arch(self.context, index)
        if arch is None:
            return
        if self.encoding is None:
            jobs = [_network_job(self.mlp, arch)]
        elif not self.stochastic:
            jobs = [_network_job(self.model, arch)]
        else:
            jobs = [_network_job(self.mlp, arch)] + self.encoding.precompile_jobs(arch)
        _precompiler.submit(jobs)

    def _make_ops(self, index: int):
        """_NetOps for a network alone; for a model _FusedModelOps (the fused kernels), or
        _ModelOps (encoding and network composed) where the encoding interpolates
        stochastically in training."""
        if self.encoding is None:
            return _NetOps(self, index)
        return (_ModelOps if self.stochastic else _FusedModelOps)(self, index)

    def close(self) -> None:
        """Destroys the network module, after the devices that ran it have finished."""
        ops, self._ops = getattr(self, "_ops", {}), {}
        _synchronize(ops)
        for name in ("module", "model_module"):
            module = getattr(self, name, None)
            if module is not None:
                module.close()

    def __del__(self) -> None:
        self.close()

    def __deepcopy__(self, memo) -> "_NetNative":
        return self  # immutable configuration; the module is thread-safe

    def __getstate__(self) -> dict:
        return {
            "n_input_dims": self.n_input_dims,
            "n_output_dims": self.n_output_dims,
            "network_json": self.network_json,
            "encoding_json": self.encoding_json,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["n_input_dims"], state["n_output_dims"], state["network_json"], state["encoding_json"])


class _NetworkFunction(torch.autograd.Function):
    """y = model(x; params), computed by ops (_NetOps, _ModelOps, or the tests' reference)
    from kparams, the parameters in fp16. The network's backward pass runs in fp16, so dL/dy
    is multiplied by the loss scale on its way in (by the kernels) and the gradients divided
    by it on their way out, as tinycudann does (dL/dparams reaches params as fp32)."""

    @staticmethod
    def forward(ctx, ops, x, params, kparams, loss_scale, stochastic):
        ctx.set_materialize_grads(False)
        y, saved = ops.forward(x, kparams)
        ctx.ops, ctx.loss_scale, ctx.stochastic = ops, loss_scale, stochastic
        ctx.params = params  # kept (not saved) only to mark a second-order use of params
        ctx.save_for_backward(x, kparams, *saved)
        return y

    @staticmethod
    def backward(ctx, dy):
        want_dx, want_dparams = _wanted_gradients(ctx)
        if dy is None or not (want_dx or want_dparams):
            return None, None, None, None, None, None
        x, kparams, *saved = ctx.saved_tensors
        if _grad_enabled():  # create_graph: the result may be differentiated again
            dx, dparams = _NetworkBackwardFunction.apply(ctx, dy, x, ctx.params, kparams, saved, want_dx, want_dparams)
        else:
            dx, dparams = _network_backward(ctx, dy, x, kparams, saved, want_dx, want_dparams)
        return None, dx, dparams, None, None, None


def _network_backward(ctx, dy, x, kparams, saved, want_dx, want_dparams):
    """(dL/dx, dL/dparams) with the loss scale: the kernels multiply dL/dy by it as they read it
    (gj_network_pass_desc.dL_doutput_scale: no pass of its own), and the launch layer has the
    gradients divided by it (the library's finishing pass, unscale_gradients, which also converts
    a model's fp16 encoding gradients to fp32)."""
    if dy.dtype is not _F32 and not (dy.dtype is torch.float16 and getattr(ctx.ops, "fp16_dy", False)):
        dy = dy.to(_F32)  # fp16 dy goes to the library's kernels as it is (no conversion pass)
    if not dy.is_contiguous():
        dy = dy.contiguous()
    return ctx.ops.backward(x, kparams, saved, dy, want_dx, want_dparams, ctx.stochastic, loss_scale=ctx.loss_scale)


class _NetworkBackwardFunction(torch.autograd.Function):
    """The backward pass of _NetworkFunction when a graph of it is asked for
    (create_graph=True): first-order gradients as usual, and a clear error if they are
    themselves differentiated (tiny-cuda-nn's networks have no second-order pass either)."""

    @staticmethod
    def forward(ctx, fwd_ctx, dy, x, params, kparams, saved, want_dx, want_dparams):
        # params is an input only so that a use of these gradients that reaches it lands in
        # backward below; the kernels read kparams.
        return _network_backward(fwd_ctx, dy, x, kparams, saved, want_dx, want_dparams)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            "gridjit.torch: second-order gradients through a Network or NetworkWithInputEncoding are not "
            "supported (a loss on dL/dx or dL/dparams, e.g. an eikonal term through the network); tinycudann's "
            "networks do not support double backward either. For an eikonal loss, use gridjit.torch.Encoding "
            "followed by a torch MLP: the encoding's second order is supported"
        )


class _NetworkModule(Module):
    """What Network and NetworkWithInputEncoding share: the parameters, the fp16 copy, the
    call through _NetworkFunction, the description."""

    def _setup(self, native: _NetNative, seed: int) -> None:
        self._native = native
        self.seed = seed
        # tiny-cuda-nn's networks are fp16 (its network precision on every GPU gridjit runs
        # networks on); so are a model's encoding and its loss scale.
        self.dtype = torch.half
        self.loss_scale = 128.0
        self.n_params = native.n_params
        self._start(seed)

    def _host_initial_params(self, seed: int) -> torch.Tensor:
        """tiny-cuda-nn's initialisation of the MLP (gj_network_init_params: Xavier uniform,
        or SIREN's for Sine, docs/networks.md §5) and, for a model, the encoding's
        (gj_init_params, as gridjit.torch.Encoding) after it; the launch layer's init does
        the same on a GPU."""
        native = self._native
        mlp = native.mlp
        values = _pcg.network_init_params(mlp.layers, mlp.activation == "Sine", seed)
        params = torch.from_numpy(values)
        if native.encoding is not None:
            encoding = torch.from_numpy(_pcg.init_params(native.encoding.encoding.n_params, seed))
            params = torch.cat([params, encoding])
        return params

    # -- description
    @property
    def hyperparams(self) -> dict:
        """The canonical configuration gridjit uses (every key, canonical spellings)."""
        return json.loads(self._native.hyperparams_json)

    @property
    def n_mlp_params(self) -> int:
        """The network's parameters (params[:n_mlp_params]); a model's encoding's follow."""
        return self._native.n_mlp_params

    def extra_repr(self) -> str:
        return (
            f"n_input_dims={self.n_input_dims}, n_output_dims={self.n_output_dims}, seed={self.seed}, "
            f"dtype={self.dtype}, hyperparams={self.hyperparams}"
        )

    # -- the call
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Maps x (batch, n_input_dims) to (batch, n_output_dims), float32."""
        if _is_compiling():
            return _forward_outside_graph(self, x)
        params = self.params
        try:
            on_cuda = x.is_cuda
        except AttributeError:
            raise TypeError(f"{self._where}: the input must be a torch.Tensor (got {type(x).__name__})") from None
        if not on_cuda:
            x = _cpu_input(x, params)
        if not (x.dtype is _F32 and x.dim() == 2 and x.shape[1] == self.n_input_dims and x.is_contiguous()):
            x = _normalise_input(self, x, self._where)
        index = x.get_device()
        if params.get_device() != index:
            _device_mismatch(x, params, None, self._where)
        native = self._native
        ops = native._ops.get(index)
        if ops is None:
            ops = native.ops(index)
        kparams = self._kernel_params(params)
        if _grad_enabled() and (params.requires_grad or x.requires_grad):
            stochastic = self.training and native.stochastic
            return _NetworkFunction.apply(ops, x, params, kparams, self.loss_scale, stochastic)
        return ops.inference(x, kparams)


class Network(_NetworkModule):
    """A fully fused MLP with the constructor and conventions of ``tinycudann.Network``.

    Parameters
    ----------
    n_input_dims, n_output_dims: the widths of the input (batch, n_input_dims) and the
        output (batch, n_output_dims).
    network_config: tiny-cuda-nn's network configuration (a dict; JSON text works too):
        "otype" FullyFusedMLP, CutlassMLP or MLP, "n_neurons" 16, 32, 64 or 128,
        "n_hidden_layers", "activation", "output_activation" (docs/networks.md §1).
    seed: seed of the parameters' initialisation (tiny-cuda-nn's rule).

    ``params``: one fp32 parameter in tiny-cuda-nn's layout and order; ``dtype`` torch.half
    (the kernels' precision); the output is float32 (values rounded to fp16 by the kernels).
    The input's padding columns (up to a multiple of 16) hold ones, as tinycudann's.
    """

    _where = "gridjit.torch.Network"

    def __init__(self, n_input_dims: int, n_output_dims: int, network_config: Union[Mapping, str], seed: int = 1337):
        super().__init__()
        text = network_config if isinstance(network_config, str) else json.dumps(dict(network_config))
        native = _NetNative(int(n_input_dims), int(n_output_dims), text)
        self.n_input_dims = int(n_input_dims)
        self.n_output_dims = int(n_output_dims)
        self.network_config = network_config
        self._setup(native, seed)


class NetworkWithInputEncoding(_NetworkModule):
    """A grid encoding followed by a fully fused MLP, with the constructor and conventions
    of ``tinycudann.NetworkWithInputEncoding``.

    Parameters
    ----------
    n_input_dims: the input's dimensions (the encoding's), n_output_dims: the output's.
    encoding_config: tiny-cuda-nn's grid-encoding configuration (as for Encoding).
    network_config: tiny-cuda-nn's network configuration (as for Network).
    seed: seed of the parameters' initialisation.

    ``params``: one fp32 parameter, the network's weights first, then the encoding's, as
    tiny-cuda-nn orders them (a tinycudann checkpoint loads). The encoding runs in fp16 and
    pads its output with zeros to a multiple of 16, the network's input width. Each pass is
    one fused kernel of the library (the features stay on chip, docs/networks.md §9); an
    encoding with stochastic interpolation runs as two kernels (encoding, then network).
    """

    _where = "gridjit.torch.NetworkWithInputEncoding"

    def __init__(
        self,
        n_input_dims: int,
        n_output_dims: int,
        encoding_config: Union[Mapping, str],
        network_config: Union[Mapping, str],
        seed: int = 1337,
    ):
        super().__init__()
        why = ": a model's encoding runs in fp16 (tiny-cuda-nn's network precision)"
        encoding = _with_precision(encoding_config, "fp16", self._where, why)
        text = network_config if isinstance(network_config, str) else json.dumps(dict(network_config))
        native = _NetNative(int(n_input_dims), int(n_output_dims), text, json.dumps(encoding))
        self.n_input_dims = int(n_input_dims)
        self.n_output_dims = int(n_output_dims)
        self.encoding_config = encoding_config
        self.network_config = network_config
        self._setup(native, seed)


# ----------------------------------------------------------------------------- argument checks
# Off the hot path: reached only when the input is not already a contiguous float32
# (batch, n_input_dims) CUDA tensor on the parameters' device.


def _with_precision(encoding_config: Union[Mapping, str], precision: str, where: str, why: str) -> dict:
    """The encoding configuration (a dict or JSON text) as a dict with "precision" set to
    precision; warns (why: the reason) when it gave another one."""
    config = json.loads(encoding_config) if isinstance(encoding_config, str) else dict(encoding_config)
    given = config.get("precision")
    if given is not None and str(given).lower() != precision:
        _warn(f'{where}: encoding_config has "precision": {given!r}{why}; leave "precision" out')
    config["precision"] = precision
    return config


def _cpu_input(x: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
    """A CPU input, moved as tinycudann does (with its warning): to the parameters' device."""
    _warn("input must be a CUDA tensor, but isn't. This indicates suboptimal performance.")
    return x.to(params.device) if params.is_cuda else x.cuda()


def _normalise_input(module: Module, x: torch.Tensor, where: str = "gridjit.torch.Encoding") -> torch.Tensor:
    if not x.is_floating_point():
        raise TypeError(f"{where}: the input must have a floating-point dtype (got {x.dtype}); it is used as float32")
    if x.dim() != 2 or x.shape[1] != module.n_input_dims:
        raise ValueError(f"{where}: the input must have shape (batch, {module.n_input_dims}) (got {tuple(x.shape)})")
    return x.to(_F32).contiguous()


def _device_mismatch(
    x: torch.Tensor, params: torch.Tensor, mlpp: Optional[torch.Tensor], where: str = "gridjit.torch.Encoding"
) -> None:
    if params.device != x.device:
        raise ValueError(
            f"{where}: the input is on {x.device} but the parameters are on {params.device}: move the module "
            f"with .to({str(x.device)!r}) (or the input); mixed devices are not supported"
        )
    raise ValueError(f"{where}: max_level is on {mlpp.device} but the input is on {x.device}")


def _max_level_arguments(max_level, n: int):
    """(scalar, per-point tensor or None) for a launch."""
    if isinstance(max_level, torch.Tensor) and max_level.dim() > 0:
        if max_level.numel() != n or max_level.dim() > 2 or (max_level.dim() == 2 and max_level.shape[1] != 1):
            raise ValueError(
                f"gridjit.torch.Encoding: max_level per point must have shape ({n},) or ({n}, 1) "
                f"(got {tuple(max_level.shape)})"
            )
        if not max_level.is_floating_point():
            raise TypeError(f"gridjit.torch.Encoding: max_level must be floating-point (got {max_level.dtype})")
        return 1.0, max_level.detach().to(_F32).reshape(n).contiguous()
    value = float(max_level)
    if not (0.0 <= value <= 1.0):  # NaN fails this too
        raise ValueError(f"gridjit.torch.Encoding: max_level must lie in [0, 1] (got {value})")
    return value, None


def encode(
    module: Encoding,
    x: torch.Tensor,
    params: Optional[torch.Tensor] = None,
    max_level: Union[float, torch.Tensor, None] = None,
) -> torch.Tensor:
    """The encoding's forward pass with explicit parameters (default: module.params, as
    module(x)), as a differentiable function of x and params (e.g. for
    torch.autograd.gradcheck). params may have any floating dtype: the kernels read it
    in the module's precision and its gradient comes back in params' dtype."""
    if params is None:
        return module(x, max_level=max_level)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"gridjit.torch.Encoding: the input must be a torch.Tensor (got {type(x).__name__})")
    if not isinstance(params, torch.Tensor) or params.dim() != 1 or params.numel() != module.n_params:
        shape = tuple(params.shape) if isinstance(params, torch.Tensor) else type(params).__name__
        raise ValueError(
            f"gridjit.torch.Encoding: the parameters must be a 1-D tensor of {module.n_params} elements (got {shape})"
        )
    if not x.is_cuda:
        x = _cpu_input(x, params)
    x = _normalise_input(module, x)
    ml, mlpp = (1.0, None) if max_level is None else _max_level_arguments(max_level, x.shape[0])
    index = x.get_device()
    if params.get_device() != index or (mlpp is not None and mlpp.get_device() != index):
        _device_mismatch(x, params, mlpp)
    kparams = _aligned(params.detach().to(module.dtype))
    ops = module._native.ops(index)
    stochastic = module.training and module._native.stochastic
    return _EncodeFunction.apply(ops, x, params, kparams, mlpp, ml, stochastic)
