"""gridjit.torch: a drop-in for ``tinycudann.Encoding`` on gridjit's kernels.

Swap it in for tiny-cuda-nn's grid encodings::

    import gridjit.torch as tcnn            # instead of: import tinycudann as tcnn
    enc = tcnn.Encoding(3, {"otype": "HashGrid", "n_levels": 16}, dtype=torch.float)
    y = enc(x)                              # x: (batch, 3) in [0, 1] on a CUDA device

Conventions (those of tinycudann.Encoding):

- ``Encoding(n_input_dims, encoding_config, seed=1337, dtype=torch.half)``; the
  configuration is tiny-cuda-nn's grid-encoding JSON (HashGrid, DenseGrid, TiledGrid);
  dtype torch.half or torch.float is the precision of the parameters and of the output
  (it sets the configuration's "precision"). The parameters are one ``nn.Parameter``,
  ``params``, of ``n_params`` elements, initialised from the seed as gj_init_params does
  (uniform in ±1e-4): on the current CUDA device when CUDA is available (as tinycudann),
  else on the CPU (the same values, computed with numpy).
- Input (batch, n_input_dims), any floating dtype (converted to float32, as tinycudann
  does), on a CUDA device; output (batch, n_output_dims) of the parameters' dtype, AoS.
  Any batch size, 0 included. A CPU tensor, another shape or a non-floating dtype is
  refused with an error saying what was expected; so are input and parameters on
  different devices.
- Gradients: dL/dparams, dL/dx, and the second order (the backward pass is itself
  differentiable: a loss on dL/dx, such as an eikonal term, gets its gradients with
  respect to the parameters, dL/dy and x from gj_backward_backward; a loss on
  dL/dparams gets them from the forward and backward passes with the parameters
  replaced by that loss's gradient). fp16 modules scale dL/dy by 128 inside the backward
  passes and divide the gradients by it afterwards, as tinycudann does, to keep small
  gradients out of fp16's subnormal range.
- ``forward(x, max_level=None)``: max_level is a number in [0, 1] or a tensor of one
  value per point (docs/design.md §6.5: finer levels output 0 and get no gradient).
- Stochastic interpolation, when the configuration sets
  "stochastic_interpolation": true, applies while the module is in training mode
  (``module.train()``, the default): the backward pass then spreads each point's
  parameter gradient to one sampled corner. In eval mode (``module.eval()``) gradients
  are the exact ones. Second-order gradients are always exact.

The kernels run on the device of the tensors, on PyTorch's current stream of that
device, in PyTorch's CUDA context (the device's primary context): nothing is copied or
synchronised. One gridjit module (the compiled kernels) is made per device the first
time the encoding runs there, so an Encoding moved between GPUs, or replicated on
several by DataParallel, works; kernels are compiled with NVRTC on first use and kept
in gridjit's disk cache (docs/cache.md), so later runs load them in milliseconds.
Configure the cache through :func:`context`.
"""

from __future__ import annotations

try:
    import torch
except ImportError as _exc:  # say what is needed, whatever the import failed on
    raise ImportError(
        "gridjit.torch needs PyTorch (the `torch` package), which could not be imported "
        f"({_exc}): install it, e.g. `pip install torch` or `pip install './python[torch]'`"
    ) from _exc

import json
import threading
from typing import Mapping, Optional, Union

from . import _pcg
from .core import Context, Encoding as _GridEncoding, Module as _GridModule, default_context
from .errors import GridJitError

__all__ = ["Encoding", "context", "encode"]

_PRECISIONS = {torch.float16: "fp16", torch.float32: "fp32"}


def context() -> Context:
    """The gridjit context of every gridjit.torch module (the package's default context):
    its disk-cache settings (set_cache_dir, cache_stats, ...) apply to them."""
    return default_context()


# ----------------------------------------------------------------------------- devices

_thread = threading.local()


def _prepare_thread(ctx: Context, device: torch.device) -> None:
    """Once per thread and device: make sure the thread's current CUDA context is the
    device's primary context (PyTorch's) before gridjit runs there.

    Called inside ``torch.cuda.device(device)``. A tensor operation binds the primary
    context to the thread (the CUDA runtime does that on first use, also on autograd's
    worker threads); gj_runtime_probe then reports the current context's device, which
    must be ours. Without this, gridjit would fall back to device 0's primary context on
    a thread that has none, which is right only for device 0.
    """
    ready = getattr(_thread, "ready", None)
    if ready is None:
        ready = _thread.ready = set()
    if device.index in ready:
        return
    torch.empty(1, device=device).fill_(0)
    info = ctx.runtime_probe(strict=True)
    if info.device != device.index:
        raise GridJitError(
            f"gridjit.torch: the current CUDA context of this thread belongs to device {info.device}, "
            f"not to {device}: another library changed the thread's context"
        )
    ready.add(device.index)


def _aligned(tensor: torch.Tensor, alignment: int = 16) -> torch.Tensor:
    """The tensor itself when its data is aligned as gridjit requires, else a copy."""
    if tensor.data_ptr() % alignment == 0:
        return tensor
    return tensor.clone(memory_format=torch.contiguous_format)


class _Ops:
    """The passes of one encoding on one device, on torch tensors (all contiguous, on
    the device, of the dtypes gridjit takes). Launches go to the current stream.

    The autograd functions below only talk to this interface, so that the tests can
    check their algebra on the CPU with a PyTorch reference of the same interface.
    """

    def __init__(self, native: "_Native", device: torch.device):
        self.native = native
        self.device = device
        self.dtype = native.dtype
        self.n_dims = native.encoding.n_dims
        self.width = native.encoding.n_output_dims
        self.n_params = native.encoding.n_params

    def _run(self, stochastic: bool, launch) -> None:
        module = self.native.module(self.device, stochastic)
        with torch.cuda.device(self.device):
            _prepare_thread(self.native.context, self.device)
            launch(module, torch.cuda.current_stream(self.device).cuda_stream)

    def init(self, params: torch.Tensor, seed: int) -> None:
        if params.numel():
            self._run(False, lambda m, s: m.init_params(params.data_ptr(), seed=seed, stream=s))

    def forward(self, x, params, mlpp, ml):
        n = x.shape[0]
        y = torch.empty((n, self.width), dtype=self.dtype, device=self.device)
        if n:
            params = _aligned(params)
            self._run(
                False,
                lambda m, s: m.forward(
                    n, x.data_ptr(), params.data_ptr(), y.data_ptr(), max_level=ml,
                    max_level_per_point=_ptr(mlpp), stream=s,
                ),
            )
        return y

    def backward(self, x, params, mlpp, ml, dy, want_dx, want_dparams, stochastic):
        n = x.shape[0]
        dx = torch.empty((n, self.n_dims), dtype=torch.float32, device=self.device) if want_dx else None
        if not n:  # nothing is launched for n = 0, not even the zeroing
            dparams = torch.zeros(self.n_params, dtype=self.dtype, device=self.device) if want_dparams else None
            return dx, dparams
        dparams = torch.empty(self.n_params, dtype=self.dtype, device=self.device) if want_dparams else None
        if want_dx or want_dparams:
            params = _aligned(params)
            self._run(
                stochastic,
                lambda m, s: m.backward(
                    n, x.data_ptr(), params.data_ptr(), dy.data_ptr(), dL_dparams=_ptr(dparams),
                    dL_dx=_ptr(dx), max_level=ml, max_level_per_point=_ptr(mlpp), stream=s,
                ),
            )
        return dx, dparams

    def backward_backward(self, x, params, mlpp, ml, ddLdx, dy, want_dparams, want_ddy, want_dx):
        n = x.shape[0]
        dx = torch.empty((n, self.n_dims), dtype=torch.float32, device=self.device) if want_dx else None
        ddy = torch.empty((n, self.width), dtype=self.dtype, device=self.device) if want_ddy else None
        if not n:
            dparams = torch.zeros(self.n_params, dtype=self.dtype, device=self.device) if want_dparams else None
            return dparams, ddy, dx
        dparams = torch.empty(self.n_params, dtype=self.dtype, device=self.device) if want_dparams else None
        if want_dparams or want_ddy or want_dx:
            params = _aligned(params)
            self._run(
                False,
                lambda m, s: m.backward_backward(
                    n, x.data_ptr(), params.data_ptr(), ddLdx.data_ptr(), dy.data_ptr(),
                    dL_dparams=_ptr(dparams), dL_ddLdy=_ptr(ddy), dL_dx=_ptr(dx), max_level=ml,
                    max_level_per_point=_ptr(mlpp), stream=s,
                ),
            )
        return dparams, ddy, dx


def _ptr(tensor: Optional[torch.Tensor]) -> Optional[int]:
    return None if tensor is None else tensor.data_ptr()


class _Native:
    """The gridjit objects behind an Encoding: its gj_encoding, one for exact gradients
    when the configuration asks for stochastic interpolation, and gj_modules made per
    (device, gradient mode) on first use. Shared by copies of the module (deepcopy,
    DataParallel replicas); pickled as its configuration."""

    def __init__(self, n_input_dims: int, config_json: str, dtype: torch.dtype):
        self.n_input_dims = n_input_dims
        self.config_json = config_json
        self.dtype = dtype
        self.context = default_context()
        self.encoding = _GridEncoding(config_json, n_input_dims, self.context)
        self.exact_encoding = self.encoding
        if self.encoding.stochastic_interpolation:
            exact = self.encoding.hyperparams
            exact["stochastic_interpolation"] = False
            self.exact_encoding = _GridEncoding(exact, n_input_dims, self.context)
        self._modules = {}
        self._ops = {}
        self._lock = threading.Lock()

    @property
    def stochastic(self) -> bool:
        return self.exact_encoding is not self.encoding

    def module(self, device: torch.device, stochastic: bool) -> _GridModule:
        key = (device.index, bool(stochastic) and self.stochastic)
        module = self._modules.get(key)
        if module is None:
            with self._lock:
                module = self._modules.get(key)
                if module is None:
                    module = _GridModule(self.encoding if key[1] else self.exact_encoding)
                    self._modules[key] = module
        return module

    def ops(self, device: torch.device) -> _Ops:
        ops = self._ops.get(device.index)
        if ops is None:
            with self._lock:
                ops = self._ops.setdefault(device.index, _Ops(self, device))
        return ops

    def close(self) -> None:
        """Destroys the modules, after the devices that ran them have finished."""
        modules, self._modules = getattr(self, "_modules", {}), {}
        for device_index in {key[0] for key in modules}:
            try:
                torch.cuda.synchronize(device_index)
            except Exception:  # the CUDA runtime may be gone at interpreter exit
                pass
        for module in modules.values():
            module.close()

    def __del__(self) -> None:
        self.close()

    def __deepcopy__(self, memo) -> "_Native":
        return self  # immutable configuration; modules are per device and thread-safe

    def __getstate__(self) -> dict:
        return {"n_input_dims": self.n_input_dims, "config_json": self.config_json, "dtype": str(self.dtype)}

    def __setstate__(self, state: dict) -> None:
        dtype = {str(d): d for d in _PRECISIONS}[state["dtype"]]
        self.__init__(state["n_input_dims"], state["config_json"], dtype)


# ----------------------------------------------------------------------------- autograd


class _EncodeFunction(torch.autograd.Function):
    """y = encoding(x; params). Its backward is _BackwardFunction, itself differentiable."""

    @staticmethod
    def forward(ctx, ops, x, params, mlpp, ml, loss_scale, stochastic):
        ctx.set_materialize_grads(False)
        ctx.ops, ctx.ml, ctx.loss_scale, ctx.stochastic = ops, ml, loss_scale, stochastic
        ctx.save_for_backward(x, params, mlpp)
        return ops.forward(x, params, mlpp, ml)

    @staticmethod
    def backward(ctx, dy):
        want_dx, want_dparams = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        if dy is None or not (want_dx or want_dparams):
            return None, None, None, None, None, None, None
        x, params, mlpp = ctx.saved_tensors
        dx, dparams = _BackwardFunction.apply(
            ctx.ops, dy, x, params, mlpp, ctx.ml, ctx.loss_scale, ctx.stochastic, want_dx, want_dparams
        )
        return None, dx, dparams, None, None, None, None


class _BackwardFunction(torch.autograd.Function):
    """(dL/dx, dL/dparams) = backward(dL/dy; x, params), and its own gradients."""

    @staticmethod
    def forward(ctx, ops, dy, x, params, mlpp, ml, loss_scale, stochastic, want_dx, want_dparams):
        ctx.set_materialize_grads(False)
        dy = dy.to(ops.dtype).contiguous()
        ctx.ops, ctx.ml, ctx.loss_scale = ops, ml, loss_scale
        ctx.save_for_backward(dy, x, params, mlpp)
        scaled = dy * loss_scale if loss_scale != 1 else dy
        dx, dparams = ops.backward(x, params, mlpp, ml, scaled, want_dx, want_dparams, stochastic)
        if loss_scale != 1:
            dx = None if dx is None else dx / loss_scale
            dparams = None if dparams is None else dparams / loss_scale
        return dx, dparams

    @staticmethod
    def backward(ctx, g_dx, g_dparams):
        # g_dx = dLoss/d(dL/dx) (H), g_dparams = dLoss/d(dL/dparams) (Q).
        need_dy, need_x, need_params = ctx.needs_input_grad[1], ctx.needs_input_grad[2], ctx.needs_input_grad[3]
        dy, x, params, mlpp = ctx.saved_tensors
        ops, ml, scale = ctx.ops, ctx.ml, ctx.loss_scale
        scaled = dy * scale if scale != 1 else dy
        out_dy = out_x = out_params = None
        if g_dx is not None and (need_dy or need_x or need_params):
            # dL/dx is bilinear in (dL/dy, params): gj_backward_backward gives all three.
            h = g_dx.to(x.dtype).contiguous()
            out_params, out_dy, out_x = ops.backward_backward(x, params, mlpp, ml, h, scaled, need_params, need_dy, need_x)
            if scale != 1:
                out_params = None if out_params is None else out_params / scale
                out_x = None if out_x is None else out_x / scale
        if g_dparams is not None and (need_dy or need_x):
            # dL/dparams[e] = sum_i sum_corners W * dL/dy[i]: linear in dL/dy, free of the
            # parameters. <Q, dL/dparams> is the forward pass with parameters Q, dotted
            # with dL/dy: its gradient in dL/dy is forward(x; Q), in x backward(x; Q, dL/dy).
            q = g_dparams.to(ops.dtype).contiguous()
            if need_dy:
                y_q = ops.forward(x, q, mlpp, ml)
                out_dy = y_q if out_dy is None else out_dy + y_q
            if need_x:
                dx_q, _ = ops.backward(x, q, mlpp, ml, scaled, True, False, False)
                if scale != 1:
                    dx_q = dx_q / scale
                out_x = dx_q if out_x is None else out_x + dx_q
        return None, out_dy, out_x, out_params, None, None, None, None, None, None


# ----------------------------------------------------------------------------- module


class Encoding(torch.nn.Module):
    """A multiresolution grid encoding (HashGrid, DenseGrid, TiledGrid) with the
    constructor and conventions of ``tinycudann.Encoding``; see the module docstring.

    Parameters
    ----------
    n_input_dims: input dimensions (the inputs' shape is (batch, n_input_dims)).
    encoding_config: tiny-cuda-nn's grid-encoding configuration (a dict; JSON text works too).
    seed: seed of the parameters' initialisation.
    dtype: torch.half (default) or torch.float: the parameters' and the output's type.
    """

    def __init__(
        self,
        n_input_dims: int,
        encoding_config: Union[Mapping, str],
        seed: int = 1337,
        dtype: Optional[torch.dtype] = None,
    ):
        super().__init__()
        dtype = torch.half if dtype is None else dtype
        if dtype not in _PRECISIONS:
            raise ValueError(f"Encoding only supports fp32 or fp16 precision, but got {dtype}")
        config = json.loads(encoding_config) if isinstance(encoding_config, str) else dict(encoding_config)
        precision = _PRECISIONS[dtype]
        given = config.get("precision")
        if given is not None and str(given).lower() != precision:
            raise ValueError(
                f'encoding_config has "precision": {given!r} but dtype is {dtype}: leave "precision" out '
                "(dtype sets it) or make them agree"
            )
        config["precision"] = precision
        self.n_input_dims = int(n_input_dims)
        self.encoding_config = encoding_config
        self.seed = seed
        self.dtype = dtype
        self._native = _Native(self.n_input_dims, json.dumps(config), dtype)
        self.n_output_dims = self._native.encoding.n_output_dims
        self.n_params = self._native.encoding.n_params
        self.loss_scale = 128.0 if dtype == torch.half else 1.0
        self.params = torch.nn.Parameter(self._initial_params(seed), requires_grad=True)

    def _initial_params(self, seed: int) -> torch.Tensor:
        if torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())
            params = torch.empty(self.n_params, dtype=self.dtype, device=device)
            self._native.ops(device).init(params, seed)
            return params
        return torch.from_numpy(_pcg.init_params(self.n_params, seed)).to(self.dtype)

    @property
    def hyperparams(self) -> dict:
        """The canonical configuration gridjit uses (every key, canonical spellings)."""
        return self._native.encoding.hyperparams

    @property
    def levels(self) -> list:
        """The level table (scale, resolution, entries, offset, hashed per level)."""
        return self._native.encoding.levels

    def forward(self, x: torch.Tensor, max_level: Union[float, torch.Tensor, None] = None) -> torch.Tensor:
        """Encodes x (batch, n_input_dims) into (batch, n_output_dims)."""
        return encode(self, x, max_level=max_level)

    def extra_repr(self) -> str:
        return (
            f"n_input_dims={self.n_input_dims}, n_output_dims={self.n_output_dims}, seed={self.seed}, "
            f"dtype={self.dtype}, hyperparams={self._native.encoding.hyperparams}"
        )


def _check_input(module: Encoding, x) -> None:
    """What does not depend on the device: type, dtype, shape."""
    where = "gridjit.torch.Encoding"
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{where}: the input must be a torch.Tensor (got {type(x).__name__})")
    if not x.is_floating_point():
        raise TypeError(f"{where}: the input must have a floating-point dtype (got {x.dtype}); it is used as float32")
    if x.dim() != 2 or x.shape[1] != module.n_input_dims:
        raise ValueError(
            f"{where}: the input must have shape (batch, {module.n_input_dims}) (got {tuple(x.shape)})"
        )


def _check_devices(x: torch.Tensor, params: torch.Tensor, mlpp: Optional[torch.Tensor]) -> None:
    where = "gridjit.torch.Encoding"
    if x.device.type != "cuda":
        raise ValueError(
            f"{where}: the input is a {x.device.type.upper()} tensor ({x.device}); gridjit runs on CUDA devices "
            "only: move it with x.cuda() or x.to(device)"
        )
    if params.device != x.device:
        raise ValueError(
            f"{where}: the input is on {x.device} but the parameters are on {params.device}: move the module "
            f"with .to({str(x.device)!r}) (or the input); mixed devices are not supported"
        )
    if mlpp is not None and mlpp.device != x.device:
        raise ValueError(f"{where}: max_level is on {mlpp.device} but the input is on {x.device}")


def _max_level_arguments(max_level, n: int):
    """(scalar, per-point tensor or None) for a launch."""
    if max_level is None:
        return 1.0, None
    if isinstance(max_level, torch.Tensor) and max_level.dim() > 0:
        if max_level.numel() != n or max_level.dim() > 2 or (max_level.dim() == 2 and max_level.shape[1] != 1):
            raise ValueError(
                f"gridjit.torch.Encoding: max_level per point must have shape ({n},) or ({n}, 1) "
                f"(got {tuple(max_level.shape)})"
            )
        if not max_level.is_floating_point():
            raise TypeError(f"gridjit.torch.Encoding: max_level must be floating-point (got {max_level.dtype})")
        return 1.0, max_level.detach().to(torch.float32).reshape(n).contiguous()
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
    """The encoding's forward pass with explicit parameters (default: module.params), as
    a differentiable function of x and params (e.g. for torch.autograd.gradcheck)."""
    _check_input(module, x)
    params = module.params if params is None else params
    if not isinstance(params, torch.Tensor) or params.dim() != 1 or params.numel() != module.n_params:
        shape = tuple(params.shape) if isinstance(params, torch.Tensor) else type(params).__name__
        raise ValueError(
            f"gridjit.torch.Encoding: the parameters must be a 1-D tensor of {module.n_params} elements (got {shape})"
        )
    ml, mlpp = _max_level_arguments(max_level, x.shape[0])
    _check_devices(x, params, mlpp)
    native = module._native
    stochastic = module.training and native.stochastic
    return _EncodeFunction.apply(
        native.ops(x.device),
        x.to(torch.float32).contiguous(),
        params.to(module.dtype).contiguous(),
        mlpp,
        ml,
        module.loss_scale,
        stochastic,
    )
