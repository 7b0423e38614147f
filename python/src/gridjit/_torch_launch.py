"""The launch layer of gridjit.torch: the passes of one encoding (_Ops), of one network
alone (_NetOps) and of an encoding followed by a network (_ModelOps) on one CUDA device, on
torch tensors, through gridjit's C launch functions, with what their per-call paths look
up once. gridjit.torch imports it; it needs torch.
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING

import torch

from . import _capi
from .core import Context
from .errors import GridJitError, error_for

if TYPE_CHECKING:
    from .torch import _Native, _NetNative

_F32 = torch.float32
_F16 = torch.float16

# What the per-call path calls, looked up once. Each has a fallback for torch builds without
# the private entry point.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
if _raw_stream is None:  # pragma: no cover - every CUDA build of torch 2.x has it

    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
_empty = torch.empty
_zeros = torch.zeros
_U8 = torch.uint8


def _prepare_thread(ctx: Context, index: int) -> None:
    """Once per thread and device: make sure the thread's current CUDA context is the
    device's primary context (PyTorch's) before gridjit runs there.

    Called inside ``torch.cuda.device(index)``. A tensor operation binds the primary
    context to the thread (the CUDA runtime does that on first use, also on autograd's
    worker threads); gj_runtime_probe then reports the current context's device, which
    must be ours. Without this, gridjit would fall back to device 0's primary context on
    a thread that has none, which is right only for device 0.
    """
    torch.empty(1, device=torch.device("cuda", index)).fill_(0)
    info = ctx.runtime_probe(strict=True)
    if info.device != index:
        raise GridJitError(
            f"gridjit.torch: the current CUDA context of this thread belongs to device {info.device}, "
            f"not to cuda:{index}: another library changed the thread's context"
        )


class _Descriptors:
    """One thread's launch descriptors for one _Ops: prepared once by the C *_init
    functions, then only their fields are set per call (the ABI allows reusing a
    prepared struct). Per thread, because ctypes releases the GIL during a call and
    another thread must not rewrite a descriptor the library is reading."""

    __slots__ = ("fwd", "fwd_ref", "bwd", "bwd_ref", "bb", "bb_ref")

    def __init__(self):
        self.fwd = _capi.init_struct(_capi.ForwardDesc, "gj_forward_desc_init")
        self.bwd = _capi.init_struct(_capi.BackwardDesc, "gj_backward_desc_init")
        self.bb = _capi.init_struct(_capi.BackwardBackwardDesc, "gj_backward_backward_desc_init")
        self.fwd_ref = ctypes.byref(self.fwd)
        self.bwd_ref = ctypes.byref(self.bwd)
        self.bb_ref = ctypes.byref(self.bb)


def _unscale(dx, dparams, loss_scale: float) -> None:
    """Divides the gradients that are there (not None) by loss_scale, in place (nothing for 1)."""
    if loss_scale == 1.0:
        return
    unscale = 1.0 / loss_scale
    if dx is not None:
        dx.mul_(unscale)
    if dparams is not None:
        dparams.mul_(unscale)



class _DeviceOps:
    """What the launch layers of one library module on one CUDA device share (_Ops,
    _NetOps): the per-thread descriptors (an instance of the class's ``_descriptor_type``) and
    the launch on torch's current stream."""

    _descriptor_type = _Descriptors

    def __init__(self, native, index: int):
        self.native = native
        self.index = index
        self.device = torch.device("cuda", index)
        self._local = threading.local()

    def _descriptors(self):
        try:
            return self._local.descriptors
        except AttributeError:
            pass
        with torch.cuda.device(self.index):
            _prepare_thread(self.native.context, self.index)
        descriptors = self._local.descriptors = self._descriptor_type()
        return descriptors

    def _launch(self, fn, handle, desc_ref, call: str) -> None:
        index = self.index
        stream = _raw_stream(index)
        if stream or _current_device() == index:
            status = fn(handle, stream, desc_ref)
        else:  # legacy default stream of another device than the current one
            with torch.cuda.device(index):
                status = fn(handle, None, desc_ref)
        if status:
            raise error_for(status, self.native.context.errmsg, call)


class _Ops(_DeviceOps):
    """The passes of one encoding on one CUDA device, on torch tensors (all contiguous,
    on the device, of the dtypes gridjit takes). Launches go to PyTorch's current stream.

    gridjit.torch's autograd functions only talk to this interface, so that the tests
    can check their algebra on the CPU with a PyTorch reference of the same interface
    (torch_reference.ReferenceOps).

    The per-call path does no string formatting, creates no objects but the output
    tensors, and enters no context manager: the descriptors are prepared once per thread,
    the ctypes functions are bound once, the stream is the raw handle from torch. Only
    when the stream is the legacy default stream (raw 0, which gridjit resolves to the
    thread's current context) and torch's current device is another one, the launch
    switches the device (torch.cuda.device) around the call.
    """

    def __init__(self, native: "_Native", index: int):
        super().__init__(native, index)
        self.dtype = native.dtype
        self.grad_dtype = _F32
        encoding = native.encoding
        self.n_dims = encoding.n_dims
        self.n_params = encoding.n_params
        self._exact = native.module(index, False)
        # The output's width: n_output_dims, or more where the native pads it (a model's
        # encoding, whose output is the network's input: zeros up to a multiple of 16).
        self.width = native.output_width
        self._stochastic = native.module(index, True)
        self._exact_handle = self._exact.handle
        self._stochastic_handle = self._stochastic.handle
        lib = _capi.lib
        self._gj_forward = lib.gj_forward
        self._gj_backward = lib.gj_backward
        self._gj_backward_backward = lib.gj_backward_backward

    def init(self, params: torch.Tensor, seed: int) -> None:
        """Fills the fp32 params (on this device) with the seed's initial values."""
        if not params.numel():
            return
        scratch = params if self.dtype == _F32 else torch.empty(self.n_params, dtype=self.dtype, device=self.device)
        with torch.cuda.device(self.index):
            self._descriptors()
            self._exact.init_params(
                scratch.data_ptr(),
                params_fp32=None if scratch is params else params.data_ptr(),
                seed=seed,
                stream=_raw_stream(self.index),
            )

    def forward(self, x, params, mlpp, ml):
        n = x.shape[0]
        y = _empty((n, self.width), dtype=self.dtype, device=self.device)
        if n:
            descriptors = self._descriptors()
            d = descriptors.fwd
            d.n = n
            d.x = x.data_ptr()
            d.params = params.data_ptr()
            d.y = y.data_ptr()
            d.max_level_per_point = None if mlpp is None else mlpp.data_ptr()
            d.max_level = ml
            self._launch(self._gj_forward, self._exact_handle, descriptors.fwd_ref, "gj_forward")
        return y

    def backward(self, x, params, mlpp, ml, dy, want_dx, want_dparams, stochastic, dparams_out=None):
        """dparams_out: where to write dL/dparams (a contiguous fp32 tensor of n_params, e.g.
        a model's encoding part of its gradient) instead of a new tensor."""
        n = x.shape[0]
        dx = _empty((n, self.n_dims), dtype=_F32, device=self.device) if want_dx else None
        if not n:  # nothing is launched for n = 0, not even the zeroing
            dparams = None
            if want_dparams:
                dparams = _zeros(self.n_params, dtype=self.grad_dtype, device=self.device)
                if dparams_out is not None:
                    dparams = dparams_out.zero_()
            return dx, dparams
        dparams = None
        if want_dparams:
            dparams = dparams_out
            if dparams is None:
                dparams = _empty(self.n_params, dtype=self.grad_dtype, device=self.device)
        if want_dx or want_dparams:
            descriptors = self._descriptors()
            d = descriptors.bwd
            d.n = n
            d.x = x.data_ptr()
            d.params = params.data_ptr()
            d.dL_dy = dy.data_ptr()
            d.dL_dparams = None if dparams is None else dparams.data_ptr()
            d.dL_dx = None if dx is None else dx.data_ptr()
            d.max_level_per_point = None if mlpp is None else mlpp.data_ptr()
            d.max_level = ml
            handle = self._stochastic_handle if stochastic else self._exact_handle
            self._launch(self._gj_backward, handle, descriptors.bwd_ref, "gj_backward")
        return dx, dparams

    def backward_backward(self, x, params, mlpp, ml, ddLdx, dy, want_dparams, want_ddy, want_dx):
        n = x.shape[0]
        dx = _empty((n, self.n_dims), dtype=_F32, device=self.device) if want_dx else None
        ddy = _empty((n, self.width), dtype=self.dtype, device=self.device) if want_ddy else None
        if not n:
            dparams = _zeros(self.n_params, dtype=self.grad_dtype, device=self.device) if want_dparams else None
            return dparams, ddy, dx
        dparams = _empty(self.n_params, dtype=self.grad_dtype, device=self.device) if want_dparams else None
        if want_dparams or want_ddy or want_dx:
            descriptors = self._descriptors()
            d = descriptors.bb
            d.n = n
            d.x = x.data_ptr()
            d.params = params.data_ptr()
            d.dL_ddLdx = ddLdx.data_ptr()
            d.dL_dy = dy.data_ptr()
            d.dL_dparams = None if dparams is None else dparams.data_ptr()
            d.dL_ddLdy = None if ddy is None else ddy.data_ptr()
            d.dL_dx = None if dx is None else dx.data_ptr()
            d.max_level_per_point = None if mlpp is None else mlpp.data_ptr()
            d.max_level = ml
            self._launch(self._gj_backward_backward, self._exact_handle, descriptors.bb_ref, "gj_backward_backward")
        return dparams, ddy, dx


# ----------------------------------------------------------------------------- networks


class _NetDescriptors:
    """One thread's gj_network_pass_desc for each pass of one _NetOps (see _Descriptors)."""

    __slots__ = ("inf", "inf_ref", "fwd", "fwd_ref", "bwd", "bwd_ref")

    def __init__(self):
        self.inf = _capi.init_struct(_capi.NetworkPassDesc, "gj_network_pass_desc_init")
        self.fwd = _capi.init_struct(_capi.NetworkPassDesc, "gj_network_pass_desc_init")
        self.bwd = _capi.init_struct(_capi.NetworkPassDesc, "gj_network_pass_desc_init")
        self.inf_ref = ctypes.byref(self.inf)
        self.fwd_ref = ctypes.byref(self.fwd)
        self.bwd_ref = ctypes.byref(self.bwd)


class _NetOps(_DeviceOps):
    """The passes of one network alone (its gj_network_module) on one CUDA device, on torch
    tensors, with the per-call path of _Ops: x (n, n_in) float32 -> y (n, n_out) float32
    from fp16 parameters; the forward context is a uint8 tensor; dL/dparams fp32.

    forward/backward have the interface gridjit.torch's _NetworkFunction talks to (shared
    with _ModelOps and the tests' reference): forward(x, params) -> (y, saved tensors),
    backward(x, params, saved, dy, want_dx, want_dparams, stochastic, dparams_out, loss_scale) ->
    (dx, dparams): the kernels multiply dy by loss_scale as they read it (its fp16 rounding is
    then that of the scaled loss, as tinycudann's), and the gradients are divided by it before
    they are returned."""

    _descriptor_type = _NetDescriptors
    fp16_dy = True  # backward takes dy as float32 or as fp16 (read in place)

    def __init__(self, native: "_NetNative", index: int):
        super().__init__(native, index)
        self.n_in, self.n_out, self.n_params, module = self._parts(native)
        self._module = module
        self._handle = module.handle
        self._tile_bytes = module.context_bytes(32)  # the context of one 32-point tile
        lib = _capi.lib
        self._gj_inference = lib.gj_network_inference
        self._gj_forward = lib.gj_network_forward
        self._gj_backward = lib.gj_network_backward

    @staticmethod
    def _parts(native: "_NetNative") -> tuple:
        """(input width, output width, parameters, the gj_network_module) this layer runs."""
        network = native.mlp
        return network.n_input_dims, network.n_output_dims, network.n_params, native.module

    def init(self, params: torch.Tensor, seed: int) -> None:
        """Fills the fp32 params (n_params elements on this device, contiguous) with
        tiny-cuda-nn's initial values for seed (gj_network_init_params)."""
        with torch.cuda.device(self.index):
            self._descriptors()
            self._module.init_params(params_fp32=params.data_ptr(), seed=seed, stream=_raw_stream(self.index))

    def inference(self, x, params):
        n = x.shape[0]
        y = _empty((n, self.n_out), dtype=_F32, device=self.device)
        if n:
            descriptors = self._descriptors()
            d = descriptors.inf
            d.n = n
            d.input = x.data_ptr()
            d.params = params.data_ptr()
            d.output = y.data_ptr()
            self._launch(self._gj_inference, self._handle, descriptors.inf_ref, "gj_network_inference")
        return y

    def forward(self, x, params):
        n = x.shape[0]
        y = _empty((n, self.n_out), dtype=_F32, device=self.device)
        context = _empty(((n + 31) >> 5) * self._tile_bytes, dtype=_U8, device=self.device)
        if n:
            descriptors = self._descriptors()
            d = descriptors.fwd
            d.n = n
            d.input = x.data_ptr()
            d.params = params.data_ptr()
            d.output = y.data_ptr()
            d.context = context.data_ptr()
            self._launch(self._gj_forward, self._handle, descriptors.fwd_ref, "gj_network_forward")
        return y, (context,)

    def backward(self, x, params, saved, dy, want_dx, want_dparams, stochastic=False, dparams_out=None, loss_scale=1.0):
        return self._backward(x, params, saved, dy, want_dx, want_dparams, dparams_out, loss_scale, True)

    def _backward(self, x, params, saved, dy, want_dx, want_dparams, dparams_out, loss_scale, unscale):
        """The launch of backward: the gradients of the loss (unscale: the library's finishing
        pass divides them by loss_scale) or, for a caller that goes on in fp16, of the scaled
        loss."""
        n = x.shape[0]
        dx = _empty((n, self.n_in), dtype=_F32, device=self.device) if want_dx else None
        dparams = None
        if want_dparams:
            dparams = dparams_out
            if dparams is None:
                dparams = (_zeros if not n else _empty)(self.n_params, dtype=_F32, device=self.device)
            elif not n:
                dparams.zero_()
        if n and (want_dx or want_dparams):
            descriptors = self._descriptors()
            d = descriptors.bwd
            d.n = n
            d.params = params.data_ptr()
            d.context = saved[0].data_ptr()
            # fp16 dL/dy (a loss computed on the outputs cast to fp16) is read in place, floats
            # otherwise (docs/networks.md §8, "fp16 dL/doutput").
            half = dy.dtype is _F16
            d.dL_doutput = None if half else dy.data_ptr()
            d.dL_doutput_fp16 = dy.data_ptr() if half else None
            d.dL_doutput_scale = loss_scale
            d.dL_dparams = None if dparams is None else dparams.data_ptr()
            d.dL_dinput = None if dx is None else dx.data_ptr()
            d.unscale_gradients = unscale
            self._launch(self._gj_backward, self._handle, descriptors.bwd_ref, "gj_network_backward")
        return dx, dparams


class _ModelOps:
    """An encoding followed by a network, on one CUDA device, with _NetOps's interface: the
    encoding's launch layer (an _Ops, fp16, output padded with zeros to the network's input
    width) and the network's (_NetOps) composed, the parameters one vector (the network's
    first, then the encoding's, as tiny-cuda-nn). Until this layer runs the library's fused
    model kernels (docs/networks.md §9), the encoding's fp16 output is cast to the network's
    float32 input (one pass), and the network's dL/dinput back to fp16 for the encoding's
    backward pass (one pass)."""

    def __init__(self, native: "_NetNative", index: int):
        self.native = native
        self.index = index
        self.device = torch.device("cuda", index)
        self.encoding = native.encoding.ops(index)
        self.network = _NetOps(native, index)
        self.n_in = self.encoding.n_dims
        self.n_out = self.network.n_out
        self.n_mlp = self.network.n_params
        self.n_params = native.n_params
        self.half = self.encoding.dtype

    fp16_dy = True  # the network's backward reads fp16 dy in place

    def init(self, params: torch.Tensor, seed: int) -> None:
        n_mlp = self.n_mlp
        self.network.init(params[:n_mlp], seed)
        self.encoding.init(params[n_mlp:], seed)

    def inference(self, x, params):
        n_mlp = self.n_mlp
        h = self.encoding.forward(x, params[n_mlp:], None, 1.0).to(_F32)
        return self.network.inference(h, params[:n_mlp])

    def forward(self, x, params):
        n_mlp = self.n_mlp
        h = self.encoding.forward(x, params[n_mlp:], None, 1.0).to(_F32)
        y, saved = self.network.forward(h, params[:n_mlp])
        return y, saved

    def backward(self, x, params, saved, dy, want_dx, want_dparams, stochastic=False, dparams_out=None, loss_scale=1.0):
        n_mlp = self.n_mlp
        dparams = None
        if want_dparams:
            dparams = dparams_out if dparams_out is not None else _empty(self.n_params, dtype=_F32, device=self.device)
        # dL/d(features) of the scaled loss: the encoding's fp16 backward takes it so.
        dh, _ = self.network._backward(
            x, params[:n_mlp], saved, dy, True, want_dparams, None if dparams is None else dparams[:n_mlp], loss_scale, False
        )
        dx, _ = self.encoding.backward(
            x,
            params[n_mlp:],
            None,
            1.0,
            dh.to(self.half),
            want_dx,
            want_dparams,
            stochastic,
            None if dparams is None else dparams[n_mlp:],
        )
        _unscale(dx, dparams, loss_scale)
        return dx, dparams


class _FusedModelOps(_NetOps):
    """A model (an encoding followed by a network) on one CUDA device through the library's
    model kernels (its gj_network_module, docs/networks.md §9: one fused kernel per pass, the
    features never in memory; with dL/dinput the network's backward kernel, writing
    dL/d(features), then the encoding's own), with _NetOps's interface. The parameters are one vector,
    the network's first, then the encoding's (as tiny-cuda-nn). The module sums the
    encoding's gradients in the precision docs/design.md §8.3 gives it: in fp32 they go
    straight into dparams; in fp16 (an fp16 encoding with two or more features a level) into
    a buffer copied into dparams after the launch, one pass, as tinycudann converts its own
    fp16 gradients. An encoding with stochastic interpolation keeps the composed path
    (_ModelOps), whose backward pass can sample."""

    def __init__(self, native: "_NetNative", index: int):
        super().__init__(native, index)
        self.n_mlp = native.n_mlp_params
        self._encoding_offset = 2 * self.n_mlp  # bytes: the fp16 network parameters come first
        self._fp16_gradients = self._module.encoding_gradient_size() == 2
        self._composed = _ModelOps(native, index)  # the initialisation, part by part

    @staticmethod
    def _parts(native: "_NetNative") -> tuple:
        return native.n_input_dims, native.n_output_dims, native.n_params, native.model_module

    def init(self, params: torch.Tensor, seed: int) -> None:
        self._composed.init(params, seed)

    def inference(self, x, params):
        self._descriptors().inf.encoding_params = params.data_ptr() + self._encoding_offset
        return super().inference(x, params)

    def forward(self, x, params):
        self._descriptors().fwd.encoding_params = params.data_ptr() + self._encoding_offset
        return super().forward(x, params)

    def backward(self, x, params, saved, dy, want_dx, want_dparams, stochastic=False, dparams_out=None, loss_scale=1.0):
        n = x.shape[0]
        d = self._descriptors().bwd
        d.input = x.data_ptr()
        d.encoding_params = params.data_ptr() + self._encoding_offset
        d.dL_dencoding_params = None
        d.dL_dencoding_params_fp32 = None
        if want_dparams and n:
            if dparams_out is None:
                dparams_out = _empty(self.n_params, dtype=_F32, device=self.device)
            # The encoding's gradients straight into params' fp32 gradient; where the kernels sum
            # them in fp16, into a buffer the library then converts (and divides by the loss
            # scale) in the pass that also divides the network's.
            d.dL_dencoding_params_fp32 = dparams_out.data_ptr() + 4 * self.n_mlp
            if self._fp16_gradients:
                staged = _empty(self.n_params - self.n_mlp, dtype=torch.float16, device=self.device)
                d.dL_dencoding_params = staged.data_ptr()
        return self._backward(x, params, saved, dy, want_dx, want_dparams, dparams_out, loss_scale, True)
