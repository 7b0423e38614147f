"""A plain-PyTorch implementation of gridjit's encoding, written from docs/design.md.

It is the yardstick of the GPU tests and the baseline of python/benchmarks/train_step.py.
Only the level table comes from gridjit (scale, resolution, entries, offset, hashed:
docs/design.md §2, read with gj_encoding_level); cells, weights, corner indices (dense,
hashed with every hash of §5, and the exact WRAP modulo of §4), max_level (§6.5) and
stochastic interpolation (§6.2) are computed here. Derivatives come from PyTorch's
autograd, second order included, so the reference of every backward pass is autograd
applied to :meth:`Reference.forward`.

Integer arithmetic: PyTorch has no well-defined unsigned 32/64-bit arithmetic, so
uint32 values live in int64 tensors, products modulo 2^32 are formed from 16-bit halves
(no int64 product overflows), and uint64 values (PCG32 states) are four 16-bit limbs.

Not implemented: fixed_point_pos (refused in the constructor).
"""

from __future__ import annotations

import torch

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
PCG_MULT = 0x5851F42D4C957F2D
MAX_BASES = {1: 0xFFFFFFFF, 2: 0xFFFF, 3: 0x659, 4: 0xFF, 5: 0x54, 6: 0x28, 7: 0x17, 8: 0xF, 9: 0xB, 10: 0x9}
PRIMES = (1958374283, 2654435761, 805459861, 3674653429, 2097192037, 1434869437, 2165219737)


def mulmod32(a: torch.Tensor, p: int) -> torch.Tensor:
    """(a * p) mod 2^32 for a in [0, 2^32) (int64 tensor) and a Python int p."""
    p &= M32
    lo, hi = p & 0xFFFF, p >> 16
    return (a * lo + (((a * hi) & 0xFFFF) << 16)) & M32


class U64:
    """uint64 values as four int64 tensors of 16-bit limbs (least significant first)."""

    def __init__(self, limbs):
        self.limbs = limbs

    @staticmethod
    def from_nonnegative(t: torch.Tensor) -> "U64":
        """From an int64 tensor of values in [0, 2^63)."""
        return U64([(t >> (16 * k)) & 0xFFFF for k in range(4)])

    @staticmethod
    def const(value: int, like: torch.Tensor) -> "U64":
        return U64([torch.full_like(like, (value >> (16 * k)) & 0xFFFF) for k in range(4)])

    @staticmethod
    def shifted_u32(v: torch.Tensor, shift: int) -> "U64":
        """(v << shift) mod 2^64 for v in [0, 2^32)."""
        src = [v & 0xFFFF, v >> 16, torch.zeros_like(v), torch.zeros_like(v)]
        whole, bits = divmod(shift, 16)
        out = []
        for k in range(4):
            j = k - whole
            cur = src[j] if 0 <= j < 4 else torch.zeros_like(v)
            below = src[j - 1] if 0 <= j - 1 < 4 else torch.zeros_like(v)
            out.append(((cur << bits) | (below >> (16 - bits) if bits else 0)) & 0xFFFF)
        return U64(out)

    def __xor__(self, other: "U64") -> "U64":
        return U64([a ^ b for a, b in zip(self.limbs, other.limbs)])

    def bit(self, k: int) -> torch.Tensor:
        return (self.limbs[k // 16] >> (k % 16)) & 1

    def mul_const(self, c: int) -> "U64":
        c_limbs = [(c >> (16 * k)) & 0xFFFF for k in range(4)]
        sums = [sum(self.limbs[i] * c_limbs[k - i] for i in range(k + 1)) for k in range(4)]
        return U64._carry(sums)

    def add(self, other: "U64") -> "U64":
        return U64._carry([a + b for a, b in zip(self.limbs, other.limbs)])

    def add_const(self, c: int) -> "U64":
        return U64._carry([a + ((c >> (16 * k)) & 0xFFFF) for k, a in enumerate(self.limbs)])

    @staticmethod
    def _carry(sums) -> "U64":
        out, carry = [], 0
        for s in sums:
            s = s + carry
            out.append(s & 0xFFFF)
            carry = s >> 16
        return U64(out)

    @staticmethod
    def where(mask: torch.Tensor, a: "U64", b: "U64") -> "U64":
        return U64([torch.where(mask, x, y) for x, y in zip(a.limbs, b.limbs)])

    def halves(self):
        """(high 32 bits, low 32 bits) as int64 tensors."""
        return (self.limbs[3] << 16) | self.limbs[2], (self.limbs[1] << 16) | self.limbs[0]


def pcg32_seeded(initstate: int, initseq: int):
    """(state, inc) of PCG32 seeded with (initstate, initseq) (§5)."""
    inc = ((initseq << 1) | 1) & M64
    state = (0 * PCG_MULT + inc) & M64
    state = (state + initstate) & M64
    state = (state * PCG_MULT + inc) & M64
    return state, inc


def pcg32_advanced_state(initstate: int, initseq: int, delta: U64) -> U64:
    """The state of PCG32(initstate, initseq) advanced by delta (per element), by
    Brown's jump-ahead (§5)."""
    state0, inc = pcg32_seeded(initstate, initseq)
    like = delta.limbs[0]
    acc_mult, acc_plus = U64.const(1, like), U64.const(0, like)
    cur_mult, cur_plus = PCG_MULT, inc
    for k in range(64):
        bit = delta.bit(k).bool()
        if bool(bit.any()):
            acc_mult = U64.where(bit, acc_mult.mul_const(cur_mult), acc_mult)
            acc_plus = U64.where(bit, acc_plus.mul_const(cur_mult).add_const(cur_plus), acc_plus)
        cur_plus = ((cur_mult + 1) * cur_plus) & M64
        cur_mult = (cur_mult * cur_mult) & M64
    return acc_mult.mul_const(state0).add(acc_plus)


def pcg32_output(state: U64) -> torch.Tensor:
    """next_uint() of PCG-XSH-RR for a state (the state before the update)."""
    hi, lo = state.halves()
    shifted_hi, shifted_lo = hi >> 18, ((hi & 0x3FFFF) << 14) | (lo >> 18)
    xh, xl = hi ^ shifted_hi, lo ^ shifted_lo
    xorshifted = ((xh << 5) | (xl >> 27)) & M32
    rot = hi >> 27
    return ((xorshifted >> rot) | (xorshifted << ((32 - rot) & 31))) & M32


def pcg32_float(out: torch.Tensor) -> torch.Tensor:
    """next_float from a next_uint value: (out >> 9) / 2^23, exact in float32."""
    return (out >> 9).to(torch.float32) / 8388608.0


def stochastic_sample(index: torch.Tensor) -> torch.Tensor:
    """u of §6.2: next_float of PCG32(1337, 1) advanced by index (int64, >= 0)."""
    return pcg32_float(pcg32_output(pcg32_advanced_state(1337, 1, U64.from_nonnegative(index))))


def corner_hash(name: str, v: torch.Tensor) -> torch.Tensor:
    """§5: the uint32 hash of corners v (n, D) (int64 values in [0, 2^32))."""
    d_count = v.shape[1]
    if name in ("Prime", "CoherentPrime", "ReversedPrime"):
        k = torch.zeros_like(v[:, 0])
        for d in range(d_count):
            if name == "ReversedPrime":
                p = PRIMES[6 - d]
            elif name == "CoherentPrime" and d == 0:
                p = 1
            else:
                p = PRIMES[d]
            k = k ^ mulmod32(v[:, d], p)
        return k
    if name == "BaseConvert":
        k = torch.zeros_like(v[:, 0])
        for d in range(d_count):
            k = mulmod32((k + v[:, d]) & M32, 2531011)
        return k
    if name == "Rng":
        shift = 64 // d_count
        step = U64.shifted_u32(v[:, 0], 0)
        for d in range(1, d_count):
            step = step ^ U64.shifted_u32(v[:, d], d * shift)
        return pcg32_output(pcg32_advanced_state(1337, 1, step))
    raise ValueError(f"unknown hash {name!r}")


class Reference:
    """The encoding of a gridjit.Encoding (or anything with the same attributes), in
    PyTorch. forward() is differentiable in x and params to any order.

    double_cells=False (default) locates cells as the GPU does (p = fmaf(s, x, 0.5f) in
    float32); True computes p and t in float64, for finite-difference checks where
    float32 rounding of t would swamp the differences (cf. the C reference's _xd).
    """

    def __init__(self, encoding, double_cells: bool = False):
        self.double_cells = double_cells
        if encoding.fixed_point_pos:
            raise ValueError("the PyTorch reference does not implement fixed_point_pos")
        self.n_dims = encoding.n_dims
        self.n_levels = encoding.n_levels
        self.n_features = encoding.n_features_per_level
        self.n_output_dims = encoding.n_output_dims
        self.n_params = encoding.n_params
        self.grid_type = encoding.grid_type
        self.hash = encoding.hash
        self.interpolation = encoding.interpolation
        self.stochastic = encoding.stochastic_interpolation
        self.levels = []
        max_base = MAX_BASES.get(self.n_dims, 0)
        for level in encoding.levels:
            if level["hashed"]:
                mode = "hash"
            elif level["resolution"] <= max_base:
                mode = "dense"
            else:
                mode = "wrap"
            self.levels.append(dict(level, mode=mode))

    # -- building blocks
    def locate(self, x: torch.Tensor, level: dict):
        """§3: cell corner c (int64, uint32 values) and fraction t (float64, differentiable in x)."""
        p = x.to(torch.float64) * level["scale"] + 0.5  # exact: a float times a float fits a double
        if self.double_cells:
            floor = torch.floor(p.detach())
            t = p - floor
        else:
            # fmaf: one rounding to float32. t keeps that float32 value, but its derivative
            # (the scale) flows in float64, as the C reference's double arithmetic does.
            p32 = p.detach().to(torch.float32)
            floor = torch.floor(p32)
            t = (p32 - floor).to(torch.float64) + (p - p.detach())
        cell = torch.nan_to_num(floor, nan=0.0).clamp(-(2.0**31), 2.0**31 - 1).to(torch.int64) & M32
        return cell, t

    def weight(self, t: torch.Tensor) -> torch.Tensor:
        if self.interpolation == "Smoothstep":
            return t * t * (3.0 - 2.0 * t)
        return t

    def corner_index(self, v: torch.Tensor, level: dict) -> torch.Tensor:
        """§4: the table entry of corners v (n, D) at a level."""
        entries, resolution = level["entries"], level["resolution"]
        if level["mode"] == "hash":
            return corner_hash(self.hash, v) % entries
        if level["mode"] == "dense":
            k = torch.zeros_like(v[:, 0])
            stride = 1
            for d in range(self.n_dims):
                k = (k + mulmod32(v[:, d], stride)) & M32
                stride = (stride * resolution) & M32
            return k % entries
        r = resolution % entries  # WRAP: exact dense index modulo the table, Horner
        k = torch.zeros_like(v[:, 0])
        for d in reversed(range(self.n_dims)):
            k = (k * r + v[:, d] % entries) % entries
        return k

    def active(self, max_level, n: int, device) -> torch.Tensor:
        """§6.5: (n, L) mask, (float)l < m * L + 1e-3 in float32."""
        if max_level is None:
            max_level = 1.0
        m = torch.as_tensor(max_level, dtype=torch.float32, device=device).reshape(-1, 1).expand(n, 1)
        threshold = m * torch.tensor(float(self.n_levels), dtype=torch.float32, device=device)
        threshold = threshold + torch.tensor(1e-3, dtype=torch.float32, device=device)
        levels = torch.arange(self.n_levels, dtype=torch.float32, device=device).reshape(1, -1)
        return levels < threshold

    def corners(self, x: torch.Tensor, level: dict, dtype: torch.dtype):
        """[(entry index (n,), weight W(b) (n,) differentiable in x)] over the cell's corners."""
        cell, t = self.locate(x, level)
        if self.interpolation == "Nearest":
            return [(self.corner_index(cell, level), torch.ones(x.shape[0], dtype=dtype, device=x.device))]
        w = self.weight(t.to(dtype))
        result = []
        for b in range(1 << self.n_dims):
            bits = [(b >> d) & 1 for d in range(self.n_dims)]
            v = torch.stack([(cell[:, d] + bits[d]) & M32 for d in range(self.n_dims)], dim=1)
            weight = torch.ones(x.shape[0], dtype=dtype, device=x.device)
            for d in range(self.n_dims):
                weight = weight * (w[:, d] if bits[d] else 1.0 - w[:, d])
            result.append((self.corner_index(v, level), weight))
        return result

    # -- passes
    def forward(self, x: torch.Tensor, params: torch.Tensor, max_level=None, dtype=torch.float64) -> torch.Tensor:
        """y (n, L*F) in dtype; differentiable in x and params (§6.1)."""
        n, f_count = x.shape[0], self.n_features
        table = params.to(dtype).reshape(-1, f_count)
        active = self.active(max_level, n, x.device).to(dtype)
        outputs = []
        for level in self.levels:
            y = torch.zeros(n, f_count, dtype=dtype, device=x.device)
            for index, weight in self.corners(x, level, dtype):
                y = y + weight[:, None] * table[level["offset"] + index]
            outputs.append(y * active[:, level["level"], None])
        return torch.cat(outputs, dim=1) if outputs else torch.zeros(n, 0, dtype=dtype, device=x.device)

    def stochastic_dparams(self, x: torch.Tensor, dy: torch.Tensor, max_level=None) -> torch.Tensor:
        """dL/dparams with stochastic interpolation (§6.2): each point's gradient goes to
        one corner, chosen per level with u = PCG32(1337, 1) advanced by i + l * n."""
        n, f_count = x.shape[0], self.n_features
        dparams = torch.zeros(self.n_params, dtype=torch.float64, device=x.device)
        active = self.active(max_level, n, x.device)
        points = torch.arange(n, dtype=torch.int64, device=x.device)
        for level in self.levels:
            cell, t = self.locate(x.detach(), level)
            if self.interpolation == "Nearest":
                corner = cell
            else:
                u = stochastic_sample(points + level["level"] * n)
                w = self.weight(t.to(torch.float32))  # compared in float32, as the GPU does
                corner = (cell + (u[:, None] < w).to(torch.int64)) & M32
            entry = level["offset"] + self.corner_index(corner, level)
            g = dy[:, level["level"] * f_count : (level["level"] + 1) * f_count].to(torch.float64)
            g = g * active[:, level["level"], None]
            targets = (entry[:, None] * f_count + torch.arange(f_count, device=x.device)).reshape(-1)
            dparams.index_add_(0, targets, g.reshape(-1))
        return dparams


class ReferenceOps:
    """The interface of gridjit.torch's launch layer (gridjit._torch_launch._Ops), computed
    with the reference and autograd. Lets the tests check gridjit.torch's autograd
    functions and its module (parameter cache, gradients, optimisers, state_dict) without
    a GPU.

    dtype is the kernels' precision as _Ops.dtype (the output's dtype and what dL/dy
    arrives in); the arithmetic is float64 throughout, so float64 gives exact checks and
    torch.half imitates an fp16 module (output rounded to fp16). grad_dtype is the dtype
    of dL/dparams: torch.float32 as the gridjit.torch modules (gradients_fp32); None keeps
    the parameters' dtype. ``calls`` records (pass, parameters tensor) per call."""

    def __init__(self, reference: Reference, dtype=torch.float64, grad_dtype=None):
        self.reference = reference
        self.dtype = dtype
        self.grad_dtype = grad_dtype
        self.calls = []

    def _y(self, x, params, mlpp, ml):
        return self.reference.forward(x, params, self._m(mlpp, ml), dtype=torch.float64)

    def forward(self, x, params, mlpp, ml):
        self.calls.append(("forward", params))
        return self._y(x, params, mlpp, ml).to(self.dtype)

    @staticmethod
    def _m(mlpp, ml):
        return ml if mlpp is None else mlpp

    def _grad(self, dparams, params):
        return dparams.to(self.grad_dtype or params.dtype)

    def backward(self, x, params, mlpp, ml, dy, want_dx, want_dparams, stochastic):
        self.calls.append(("backward", params))
        with torch.enable_grad():
            x_ = x.detach().requires_grad_(True)
            p_ = params.detach().to(torch.float64).requires_grad_(True)  # float64 gradients
            y = self._y(x_, p_, mlpp, ml)
            dx, dparams = torch.autograd.grad(y, (x_, p_), dy.to(torch.float64), allow_unused=True)
        dx = torch.zeros_like(x) if dx is None else dx
        dparams = torch.zeros_like(params) if dparams is None else dparams
        return (dx if want_dx else None), (self._grad(dparams, params) if want_dparams else None)

    def backward_backward(self, x, params, mlpp, ml, ddLdx, dy, want_dparams, want_ddy, want_dx):
        self.calls.append(("backward_backward", params))
        with torch.enable_grad():
            x_ = x.detach().requires_grad_(True)
            p_ = params.detach().to(torch.float64).requires_grad_(True)  # float64 gradients
            dy_ = dy.detach().to(torch.float64).requires_grad_(True)
            y = self._y(x_, p_, mlpp, ml)
            (dx,) = torch.autograd.grad(y, (x_,), dy_, create_graph=True, allow_unused=True)
            if dx is None or not dx.requires_grad:  # Nearest: dL/dx is identically zero
                grads = (None, None, None)
            else:
                grads = torch.autograd.grad(dx, (p_, dy_, x_), ddLdx.to(dx.dtype), allow_unused=True)
        dparams, ddy, dxx = (torch.zeros_like(t) if g is None else g for g, t in zip(grads, (params, dy_, x)))
        return (
            self._grad(dparams, params) if want_dparams else None,
            ddy.to(self.dtype) if want_ddy else None,
            dxx if want_dx else None,
        )


def run_on_the_cpu(encoding) -> ReferenceOps:
    """Makes a gridjit.torch Encoding whose parameters are on the CPU run through ReferenceOps
    (in the encoding's precision, fp32 gradients, as the real modules): they take the place
    of its launch layer for CPU tensors (device index -1). Returns them. CPU input still
    goes through gridjit.torch._cpu_input, which moves it to CUDA: the caller replaces that."""
    ops = ReferenceOps(Reference(encoding._native.encoding), dtype=encoding.dtype, grad_dtype=torch.float32)
    encoding._native._ops[-1] = ops
    return ops
