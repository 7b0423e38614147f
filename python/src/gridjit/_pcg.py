"""gj_init_params and gj_network_init_params on the CPU, with numpy: the same values, bit
for bit.

docs/design.md §2.8: element i is ``(2u - 1) * 1e-4 * scale`` in float, u the first
next_float of a PCG32 generator (§5) seeded with (seed, 1) and advanced by i. The states
of all elements are made by doubling (the states of elements [k, 2k) are those of
[0, k) advanced by k steps, one affine map mod 2^64), in log2(n) vectorised steps.
The i-th draw of one sequential stream is that same value, which is how tiny-cuda-nn's
network initialisation (docs/networks.md §5: one stream, layer after layer) is had here.
gridjit.torch uses both where CUDA is not available.
"""

from __future__ import annotations

MULT = 0x5851F42D4C957F2D
MASK64 = (1 << 64) - 1


def seeded(initstate: int, initseq: int) -> tuple:
    """(state, inc) of a PCG32 seeded with (initstate, initseq), as Python ints."""
    inc = ((initseq << 1) | 1) & MASK64
    state = inc  # one step from state 0
    state = (state + initstate) & MASK64
    state = (state * MULT + inc) & MASK64
    return state, inc


def _numpy():
    try:
        import numpy as np
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "gridjit.torch needs numpy to initialise parameters on the CPU (without CUDA): pip install numpy"
        ) from exc
    return np


def uniform(n: int, seed: int):
    """float32 numpy array: the first n next_float values in [0, 1) of a PCG32 seeded (seed, 1)."""
    np = _numpy()
    if n == 0:
        return np.empty(0, dtype=np.float32)
    state0, inc = seeded(int(seed) & MASK64, 1)
    states = np.empty(n, dtype=np.uint64)
    states[0] = state0
    filled, mult, plus = 1, MULT, inc  # (mult, plus): the map of `filled` steps
    while filled < n:
        take = min(filled, n - filled)
        states[filled : filled + take] = states[:take] * np.uint64(mult) + np.uint64(plus)
        filled += take
        plus = ((mult + 1) * plus) & MASK64
        mult = (mult * mult) & MASK64
    # next_uint of each state (PCG-XSH-RR), then next_float.
    xorshifted = ((((states >> np.uint64(18)) ^ states) >> np.uint64(27)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    rot = (states >> np.uint64(59)).astype(np.uint32)
    bits = (xorshifted >> rot) | (xorshifted << ((np.uint32(32) - rot) & np.uint32(31)))
    return ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)


def init_params(n: int, seed: int, scale: float = 1.0):
    """float32 numpy array of n initial parameters, as gj_init_params writes them."""
    np = _numpy()
    out = np.empty(n, dtype=np.float32)
    if n == 0:
        return out
    u = uniform(n, seed)
    np.multiply(u, np.float32(2.0), out=out)
    out -= np.float32(1.0)
    out *= np.float32(1e-4)
    out *= np.float32(scale)
    return out


def network_init_bound(fan_in: int, fan_out: int, layer: int, sine: bool, scale: float = 1.0):
    """The bound b of a layer's uniform draw (docs/networks.md §5), in float as tiny-cuda-nn
    computes it: Xavier uniform on the stored shape, or SIREN's with a Sine hidden activation."""
    np = _numpy()
    f32 = np.float32
    if sine:
        if layer == 0:
            return f32(scale) * (f32(30.0) / f32(fan_in))
        return f32(scale) * np.sqrt(f32(6.0) / f32(fan_in))
    return f32(scale) * np.sqrt(f32(6.0) / f32(fan_in + fan_out))


def network_init_params(layers, sine: bool, seed: int, scale: float = 1.0):
    """float32 numpy array of an MLP's initial weights, as gj_network_init_params (and
    tiny-cuda-nn) draws them: one stream seeded (seed, 1), layer after layer in memory
    order, ``w = (r * 2) * b - b`` rounded to float at each step. layers: dicts with fan_in,
    fan_out and offset (gridjit.Network.layers), back to back from 0."""
    np = _numpy()
    n = sum(layer["fan_in"] * layer["fan_out"] for layer in layers)
    r = uniform(n, seed)
    out = np.empty(n, dtype=np.float32)
    for index, layer in enumerate(layers):
        begin = layer["offset"]
        end = begin + layer["fan_in"] * layer["fan_out"]
        b = network_init_bound(layer["fan_in"], layer["fan_out"], index, sine, scale)
        twice = r[begin:end] * np.float32(2.0)  # rounded on its own, as in tiny-cuda-nn
        out[begin:end] = twice * b - b
    return out
