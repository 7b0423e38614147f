"""A plain-PyTorch MLP with tiny-cuda-nn's layout and activations, written from
docs/networks.md (§2 the layout, §3 the activations), and launch layers of its interface.

- mlp(): the network of a gridjit.Network's layer table on given parameters (any dtype,
  differentiable by autograd, so the reference of every gradient is autograd's). It is the
  yardstick of the GPU tests of gridjit.torch.Network and NetworkWithInputEncoding, and
  test_torch_network_cpu.py checks it against the C reference of tools/reference.
- ReferenceNetOps / ReferenceModelOps: the interface of gridjit._torch_launch._NetOps /
  _ModelOps (forward(x, params) -> (y, saved), backward(...), inference), computed with
  mlp() (and the encoding reference of torch_reference.py) in float64, with the C side's
  conventions: float32 output, fp32 dL/dparams, dL/dy taken as given (the loss scale is the
  caller's business); ``calls`` records what each pass received.
"""

from __future__ import annotations

import torch

K_ACT = 10.0  # tiny-cuda-nn's K_ACT (Squareplus, Softplus)


def activation(name: str, z: torch.Tensor) -> torch.Tensor:
    """docs/networks.md §3."""
    if name == "None":
        return z
    if name == "ReLU":
        return torch.relu(z)
    if name == "LeakyReLU":
        return torch.where(z > 0, z, 0.01 * z)
    if name == "Exponential":
        return torch.exp(z)
    if name == "Sine":
        return torch.sin(z)
    if name == "Sigmoid":
        return torch.sigmoid(z)
    if name == "Squareplus":
        kz = K_ACT * z
        return (kz + torch.sqrt(kz * kz + 4.0)) / (2.0 * K_ACT)
    if name == "Softplus":
        return torch.nn.functional.softplus(z, beta=K_ACT, threshold=1e9)
    if name == "Tanh":
        return torch.tanh(z)
    if name == "SiLU":
        return z * torch.sigmoid(z)
    raise ValueError(f"unknown activation {name!r}")


def mlp(layers, params: torch.Tensor, x: torch.Tensor, n_output_dims: int, input_padding: float) -> torch.Tensor:
    """The MLP of ``layers`` (gridjit.Network.layers: fan_in, fan_out, offset, activation
    per weight matrix) on x (n, input width): the input padded with input_padding to layer
    0's fan_in, z = W h, h = act(z) layer after layer, the first n_output_dims outputs. No
    biases. Computed in params' dtype promoted with x's."""
    dtype = torch.promote_types(params.dtype, x.dtype)
    h = x.to(dtype)
    padded = layers[0]["fan_in"]
    if h.shape[1] < padded:
        pad = torch.full((h.shape[0], padded - h.shape[1]), float(input_padding), dtype=dtype, device=h.device)
        h = torch.cat([h, pad], dim=1)
    for layer in layers:
        begin = layer["offset"]
        w = params[begin : begin + layer["n_params"]].to(dtype).reshape(layer["fan_out"], layer["fan_in"])
        h = activation(layer["activation"], h @ w.t())
    return h[:, :n_output_dims]


class ReferenceNetOps:
    """_NetOps's interface on CPU tensors for a gridjit.torch Network (see the module doc)."""

    def __init__(self, native):
        mlp_net = native.mlp
        self.layers = mlp_net.layers
        self.n_in = mlp_net.n_input_dims
        self.n_out = mlp_net.n_output_dims
        self.n_params = mlp_net.n_params
        self.padding = mlp_net.input_padding
        self.calls = []

    def _y(self, x, params):
        return mlp(self.layers, params.to(torch.float64), x.to(torch.float64), self.n_out, self.padding)

    def inference(self, x, params):
        self.calls.append(("inference", params))
        return self._y(x, params).to(torch.float32)

    def forward(self, x, params):
        self.calls.append(("forward", params))
        return self._y(x, params).to(torch.float32), (x.detach().clone(),)

    def backward(self, x, params, saved, dy, want_dx, want_dparams, stochastic=False, dparams_out=None, loss_scale=1.0):
        self.calls.append(("backward", params, dy, loss_scale))
        dy = dy * loss_scale  # what the kernels read; the gradients are divided by it below
        assert dy.dtype == torch.float32 and dy.is_contiguous() and dy.shape == (x.shape[0], self.n_out)
        with torch.enable_grad():
            x_ = saved[0].to(torch.float64).requires_grad_(True)
            p_ = params.detach().to(torch.float64).requires_grad_(True)
            dx, dparams = torch.autograd.grad(self._y(x_, p_), (x_, p_), dy.to(torch.float64))
        dx = dx.to(torch.float32) if want_dx else None
        if want_dparams:
            if dparams_out is not None:
                dparams = dparams_out.copy_(dparams)
            else:
                dparams = dparams.to(torch.float32)
        else:
            dparams = None
        return _unscaled(dx, loss_scale), _unscaled(dparams, loss_scale)


def _unscaled(gradient, loss_scale):
    """The launch layers' division by the loss scale (in place, as theirs)."""
    return gradient if gradient is None or loss_scale == 1.0 else gradient.mul_(1.0 / loss_scale)


class ReferenceModelOps:
    """_ModelOps's interface on CPU tensors for a gridjit.torch NetworkWithInputEncoding:
    the encoding reference (torch_reference.Reference, float64) padded with zeros to the
    network's input width, then mlp(); one parameter vector, the network's part first."""

    def __init__(self, native):
        from torch_reference import Reference

        self.net = ReferenceNetOps(native)
        self.encoding = Reference(native.encoding.encoding)
        self.n_mlp = native.n_mlp_params
        self.n_params = native.n_params
        self.n_in = native.n_input_dims
        self.n_out = self.net.n_out
        self.width = native.mlp.n_input_dims  # the encoding's output, padded
        self.calls = self.net.calls

    def _y(self, x, params):
        params = params.to(torch.float64)
        h = self.encoding.forward(x.to(torch.float32), params[self.n_mlp :], 1.0, dtype=torch.float64)
        if h.shape[1] < self.width:
            h = torch.cat([h, h.new_zeros(h.shape[0], self.width - h.shape[1])], dim=1)
        return mlp(self.net.layers, params[: self.n_mlp], h, self.n_out, 0.0)

    def inference(self, x, params):
        self.calls.append(("inference", params))
        return self._y(x, params).to(torch.float32)

    def forward(self, x, params):
        self.calls.append(("forward", params))
        return self._y(x, params).to(torch.float32), ()

    def backward(self, x, params, saved, dy, want_dx, want_dparams, stochastic=False, dparams_out=None, loss_scale=1.0):
        self.calls.append(("backward", params, dy, loss_scale))
        dy = dy * loss_scale  # what the kernels read; the gradients are divided by it below
        with torch.enable_grad():
            x_ = x.detach().to(torch.float32).requires_grad_(True)
            p_ = params.detach().to(torch.float64).requires_grad_(True)
            dx, dparams = torch.autograd.grad(self._y(x_, p_), (x_, p_), dy.to(torch.float64), allow_unused=True)
        dx = (torch.zeros_like(x) if dx is None else dx.to(torch.float32)) if want_dx else None
        dparams = dparams.to(torch.float32) if want_dparams else None
        if dparams is not None and dparams_out is not None:
            dparams = dparams_out.copy_(dparams)
        return _unscaled(dx, loss_scale), _unscaled(dparams, loss_scale)


def run_network_on_the_cpu(module):
    """Makes a gridjit.torch Network or NetworkWithInputEncoding whose parameters are on the
    CPU run through the reference ops (device index -1). Returns them. CPU input still goes
    through gridjit.torch._cpu_input: the caller replaces that."""
    native = module._native
    ops = ReferenceNetOps(native) if native.encoding is None else ReferenceModelOps(native)
    native._ops[-1] = ops
    return ops
