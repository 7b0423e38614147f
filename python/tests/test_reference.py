"""The PyTorch reference (torch_reference.py) against the repository's independent C
reference (tools/reference/cpu_reference.c), on the CPU: hashes, dense and WRAP
indices, every pass, max_level, stochastic sampling, and the CPU initialisation of
gridjit.torch. This is what makes the reference a trustworthy yardstick for the GPU
tests. Needs torch, a C compiler and the repository's tools/reference."""

from __future__ import annotations

import ctypes
import subprocess

import pytest

from conftest import REPO, c_compiler, installed_header

torch = pytest.importorskip("torch", reason="the PyTorch reference needs torch")

import gridjit  # noqa: E402
from gridjit import _pcg  # noqa: E402
from torch_reference import Reference, corner_hash, stochastic_sample  # noqa: E402

SOURCE = REPO / "tools" / "reference" / "cpu_reference.c"
F64 = ctypes.POINTER(ctypes.c_double)
F32 = ctypes.POINTER(ctypes.c_float)


@pytest.fixture(scope="module")
def cref(tmp_path_factory):
    cc, header = c_compiler(), installed_header()
    if cc is None:
        pytest.skip("no C compiler to build the C reference")
    if not SOURCE.is_file() or not header.is_file():
        pytest.skip(f"the C reference ({SOURCE}) or the configured header ({header}) is missing")
    out = tmp_path_factory.mktemp("cref") / "libcref.so"
    subprocess.run(
        [
            cc, "-std=c11", "-O1", "-shared", "-fPIC", "-ffp-contract=off", "-o", str(out),
            f"-I{header.parent}", f"-I{SOURCE.parent}", str(SOURCE), gridjit.library_path, "-lm",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    lib = ctypes.CDLL(str(out))
    lib.gj_ref_from_encoding.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.gj_ref_forward.argtypes = [ctypes.c_void_p, F64, F32, ctypes.c_double, F64]
    lib.gj_ref_backward.argtypes = [
        ctypes.c_void_p, F64, F32, ctypes.c_double, ctypes.c_uint64, ctypes.c_uint64, F64, F64, F64,
    ]
    lib.gj_ref_backward_backward.argtypes = [ctypes.c_void_p, F64, F32, ctypes.c_double, F64, F64, F64, F64, F64]
    lib.gj_ref_hash.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)]
    lib.gj_ref_hash.restype = ctypes.c_uint32
    lib.gj_ref_stochastic_sample.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32]
    lib.gj_ref_stochastic_sample.restype = ctypes.c_float
    return lib


def _ptr(t: torch.Tensor, kind):
    return ctypes.cast(t.data_ptr(), kind)


class CEncoding:
    def __init__(self, lib, encoding):
        self.lib = lib
        self.buffer = ctypes.create_string_buffer(1 << 16)  # gj_ref_encoding, with room to spare
        lib.gj_ref_from_encoding(self.buffer, encoding.handle)
        self.encoding = encoding

    def passes(self, x, params, max_level, dy, ddx):
        e = self.encoding
        n, width, d = x.shape[0], e.n_output_dims, e.n_dims
        params = params.to(torch.float64).contiguous()
        y = torch.zeros(n, width, dtype=torch.float64)
        dparams = torch.zeros(e.n_params, dtype=torch.float64)
        dx = torch.zeros(n, d, dtype=torch.float64)
        bb_dparams = torch.zeros(e.n_params, dtype=torch.float64)
        bb_ddy = torch.zeros(n, width, dtype=torch.float64)
        bb_dx = torch.zeros(n, d, dtype=torch.float64)
        for i in range(n):
            xi = x[i].contiguous()
            dyi = dy[i].contiguous()
            ddxi = ddx[i].contiguous()
            m = float(max_level[i]) if isinstance(max_level, torch.Tensor) else max_level
            self.lib.gj_ref_forward(self.buffer, _ptr(params, F64), _ptr(xi, F32), m, _ptr(y[i], F64))
            self.lib.gj_ref_backward(
                self.buffer, _ptr(params, F64), _ptr(xi, F32), m, i, n, _ptr(dyi, F64), _ptr(dparams, F64),
                _ptr(dx[i], F64),
            )
            self.lib.gj_ref_backward_backward(
                self.buffer, _ptr(params, F64), _ptr(xi, F32), m, _ptr(ddxi, F64), _ptr(dyi, F64),
                _ptr(bb_dparams, F64), _ptr(bb_ddy[i], F64), _ptr(bb_dx[i], F64),
            )
        return y, dparams, dx, bb_dparams, bb_ddy, bb_dx


def torch_passes(reference: Reference, x, params, max_level, dy, ddx):
    x_ = x.to(torch.float64).requires_grad_(True)  # float32 values; float64 gradients
    p_ = params.to(torch.float64).clone().requires_grad_(True)
    dy_ = dy.clone().requires_grad_(True)
    y = reference.forward(x_, p_, max_level)
    dx, dparams = torch.autograd.grad(y, (x_, p_), dy_, create_graph=True, allow_unused=True)
    dx = torch.zeros_like(x_, dtype=torch.float64) if dx is None else dx
    if dx.requires_grad:
        bb = torch.autograd.grad(dx, (p_, dy_, x_), ddx, allow_unused=True)
    else:
        bb = (None, None, None)
    bb = [torch.zeros_like(t, dtype=torch.float64) if g is None else g for g, t in zip(bb, (p_, dy_, x_))]
    return y.detach(), dparams.detach(), dx.detach().double(), *[b.detach() for b in bb]


CONFIGS = {
    "hash-coherent-linear": ({"otype": "HashGrid", "n_levels": 4, "log2_hashmap_size": 7, "base_resolution": 3}, 3),
    "hash-prime-smoothstep": (
        {"otype": "HashGrid", "n_levels": 3, "log2_hashmap_size": 6, "hash": "Prime", "interpolation": "Smoothstep"},
        2,
    ),
    "hash-reversed-f4": (
        {"otype": "HashGrid", "n_levels": 2, "n_features_per_level": 4, "log2_hashmap_size": 9, "hash": "ReversedPrime"},
        3,
    ),
    "hash-rng": ({"otype": "HashGrid", "n_levels": 3, "log2_hashmap_size": 6, "hash": "Rng"}, 2),
    "hash-baseconvert-f1": (
        {"otype": "HashGrid", "n_levels": 3, "n_features_per_level": 1, "log2_hashmap_size": 8, "hash": "BaseConvert"},
        4,
    ),
    "dense": ({"otype": "DenseGrid", "n_levels": 3, "base_resolution": 4, "per_level_scale": 1.5}, 2),
    "dense-nearest": ({"otype": "DenseGrid", "n_levels": 2, "base_resolution": 5, "interpolation": "Nearest"}, 3),
    "tiled-smoothstep": (
        {"otype": "TiledGrid", "n_levels": 4, "base_resolution": 3, "per_level_scale": 1.6, "interpolation": "Smoothstep"},
        2,
    ),
    # Resolutions above MAX_BASES[1]? No: D = 5 (MAX_BASES 0x54 = 84) with fine levels: WRAP.
    "tiled-wrap": ({"otype": "TiledGrid", "n_levels": 2, "base_resolution": 3, "per_level_scale": 40.0}, 5),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_passes_agree_with_the_c_reference(cref, name):
    config, dims = CONFIGS[name]
    enc = gridjit.Encoding(dict(config, precision="fp32"), dims)
    reference = Reference(enc)
    modes = {lv["mode"] for lv in reference.levels}
    if name == "tiled-wrap":
        assert "wrap" in modes
    gen = torch.Generator().manual_seed(hash(name) % 1000)
    n = 24
    x = torch.rand(n, dims, generator=gen, dtype=torch.float32)
    x[0] = 1.0  # the upper boundary: corners one past the last vertex
    x[1] = 0.0
    params = torch.rand(enc.n_params, generator=gen, dtype=torch.float64) * 2 - 1
    dy = torch.rand(n, enc.n_output_dims, generator=gen, dtype=torch.float64) * 2 - 1
    ddx = torch.rand(n, dims, generator=gen, dtype=torch.float64) * 2 - 1
    max_level = torch.rand(n, generator=gen, dtype=torch.float32)
    max_level[:4] = 1.0
    c = CEncoding(cref, enc).passes(x, params, max_level, dy, ddx)
    t = torch_passes(reference, x, params, max_level, dy, ddx)
    labels = ["y", "dL/dparams", "dL/dx", "bwdbwd dL/dparams", "bwdbwd dL/ddLdy", "bwdbwd dL/dx"]
    for label, a, b in zip(labels, t, c):
        scale = max(b.abs().max().item(), 1.0)
        assert torch.allclose(a.double(), b, rtol=1e-9, atol=1e-9 * scale), f"{name}: {label}"
    assert c[0].abs().max() > 0


@pytest.mark.parametrize("hash_name, number", [("Prime", 0), ("CoherentPrime", 1), ("ReversedPrime", 2),
                                               ("Rng", 3), ("BaseConvert", 4)])
@pytest.mark.parametrize("dims", [1, 2, 3, 7])
def test_hashes_agree_with_the_c_reference(cref, hash_name, number, dims):
    gen = torch.Generator().manual_seed(dims)
    v = torch.randint(0, 1 << 32, (50, dims), generator=gen, dtype=torch.int64)
    v[0] = (1 << 32) - 1
    ours = corner_hash(hash_name, v)
    for i in range(v.shape[0]):
        corner = (ctypes.c_uint32 * dims)(*[int(c) for c in v[i]])
        assert int(ours[i]) == cref.gj_ref_hash(number, dims, corner), (hash_name, dims, i)


def test_stochastic_samples_agree_with_the_c_reference(cref):
    n = 1000
    for level in (0, 3, 17):
        points = torch.arange(0, n, 37, dtype=torch.int64)
        ours = stochastic_sample(points + level * n)
        for i, p in enumerate(points.tolist()):
            assert float(ours[i]) == cref.gj_ref_stochastic_sample(p, n, level)


def test_cpu_initialisation_matches_the_c_pcg32(cref):
    class Pcg(ctypes.Structure):
        _fields_ = [("state", ctypes.c_uint64), ("inc", ctypes.c_uint64)]

    cref.gj_ref_pcg32_seed.argtypes = [ctypes.POINTER(Pcg), ctypes.c_uint64, ctypes.c_uint64]
    cref.gj_ref_pcg32_advance.argtypes = [ctypes.POINTER(Pcg), ctypes.c_uint64]
    cref.gj_ref_pcg32_next_float.argtypes = [ctypes.POINTER(Pcg)]
    cref.gj_ref_pcg32_next_float.restype = ctypes.c_float
    values = _pcg.init_params(5000, seed=1337)
    for i in (0, 1, 2, 777, 4095, 4096, 4999):
        rng = Pcg()
        cref.gj_ref_pcg32_seed(ctypes.byref(rng), 1337, 1)
        cref.gj_ref_pcg32_advance(ctypes.byref(rng), i)
        u = ctypes.c_float(cref.gj_ref_pcg32_next_float(ctypes.byref(rng))).value
        expected = ctypes.c_float(ctypes.c_float(ctypes.c_float(u * 2.0).value - 1.0).value * ctypes.c_float(1e-4).value)
        assert values[i] == expected.value, i


def test_stochastic_dparams_follow_the_sampled_corner():
    """Stochastic dL/dparams (§6.2) moves each point's gradient to one corner: the
    total per level equals the exact gradient's total, the placement differs."""
    enc = gridjit.Encoding({"otype": "HashGrid", "n_levels": 2, "log2_hashmap_size": 12, "precision": "fp32"}, 2)
    reference = Reference(enc)
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(64, 2, generator=gen)
    dy = torch.rand(64, enc.n_output_dims, generator=gen, dtype=torch.float64)
    stochastic = reference.stochastic_dparams(x, dy)
    p = torch.zeros(enc.n_params, dtype=torch.float64, requires_grad=True)
    (exact,) = torch.autograd.grad(reference.forward(x, p), p, dy)
    assert torch.allclose(stochastic.sum(), exact.sum())
    assert not torch.allclose(stochastic, exact)
