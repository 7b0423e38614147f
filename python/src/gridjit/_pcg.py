"""gj_init_params on the CPU, with numpy: the same values, bit for bit.

docs/design.md §2.8: element i is ``(2u - 1) * 1e-4 * scale`` in float, u the first
next_float of a PCG32 generator (§5) seeded with (seed, 1) and advanced by i. The states
of all elements are made by doubling (the states of elements [k, 2k) are those of
[0, k) advanced by k steps, one affine map mod 2^64), in log2(n) vectorised steps.
gridjit.torch uses it to initialise parameters where CUDA is not available.
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


def init_params(n: int, seed: int, scale: float = 1.0):
    """float32 numpy array of n initial parameters, as gj_init_params writes them."""
    try:
        import numpy as np
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "gridjit.torch needs numpy to initialise parameters on the CPU (without CUDA): pip install numpy"
        ) from exc

    out = np.empty(n, dtype=np.float32)
    if n == 0:
        return out
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
    u = ((bits >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)
    np.multiply(u, np.float32(2.0), out=out)
    out -= np.float32(1.0)
    out *= np.float32(1e-4)
    out *= np.float32(scale)
    return out
