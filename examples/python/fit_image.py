#!/usr/bin/env python3
"""Fit an image with a multiresolution hash grid (gridjit.torch.Encoding) and a small MLP.

The image is generated procedurally (512 x 512: coloured rings, a rotated checkerboard
and discs with hard edges), so the example needs no data. Every --log-every steps it
prints the training loss and the PSNR of the full reconstruction; at the end it writes
the reconstruction as a PNG (with Pillow when installed, else with a small zlib writer).

    python3 examples/python/fit_image.py --steps 2000 --out fit.png

Needs a CUDA GPU, PyTorch and the gridjit package (`pip install ./python`, or
PYTHONPATH pointing at a `pip install --target DIR ./python` tree). The kernels are
compiled with NVRTC on the first run (a few seconds) and loaded from gridjit's disk
cache afterwards.
"""

from __future__ import annotations

import argparse
import math
import struct
import sys
import time
import zlib

import torch

HASHGRID = {  # tiny-cuda-nn's HashGrid defaults
    "otype": "HashGrid",
    "n_levels": 16,
    "n_features_per_level": 2,
    "log2_hashmap_size": 19,
    "base_resolution": 16,
    "per_level_scale": 2.0,
}


def make_image(size: int, device: torch.device) -> torch.Tensor:
    """(size, size, 3) floats in [0, 1]: a colourful pattern with sharp edges."""
    coords = (torch.arange(size, device=device, dtype=torch.float32) + 0.5) / size
    y, x = torch.meshgrid(coords, coords, indexing="ij")
    cx, cy = x - 0.5, y - 0.5
    radius = torch.sqrt(cx * cx + cy * cy)
    angle = torch.atan2(cy, cx)
    hue = (angle / (2 * math.pi) + 0.5 + torch.floor(radius * 12) / 12) % 1.0
    # hue -> RGB (full saturation)
    k = torch.stack([(hue * 6 + o) % 6 for o in (5.0, 3.0, 1.0)], dim=-1)
    rgb = 1 - torch.clamp(torch.minimum(k, 4 - k), 0, 1)
    # a rotated checkerboard darkens every other square
    u, v = cx * math.cos(0.4) - cy * math.sin(0.4), cx * math.sin(0.4) + cy * math.cos(0.4)
    checker = ((torch.floor(u * 10) + torch.floor(v * 10)) % 2 == 0).float()
    rgb = rgb * (0.55 + 0.45 * checker[..., None])
    # three discs with hard edges
    for (px, py, r, colour) in ((0.25, 0.3, 0.12, (1.0, 1.0, 1.0)), (0.72, 0.7, 0.15, (0.05, 0.05, 0.1)),
                                (0.7, 0.25, 0.08, (1.0, 0.85, 0.1))):
        inside = ((x - px) ** 2 + (y - py) ** 2 < r * r)[..., None]
        rgb = torch.where(inside, torch.tensor(colour, device=device), rgb)
    return rgb.clamp(0, 1)


def write_png(path: str, image: torch.Tensor) -> None:
    """Writes (H, W, 3) floats in [0, 1] as an 8-bit RGB PNG."""
    pixels = (image.clamp(0, 1) * 255 + 0.5).to(torch.uint8).cpu()
    height, width, _ = pixels.shape
    try:
        from PIL import Image

        Image.fromarray(pixels.numpy()).save(path)
        return
    except ImportError:
        pass
    raw = b"".join(b"\x00" + bytes(pixels[row].flatten().tolist()) for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


class ImageModel(torch.nn.Module):
    """Hash-grid encoding of (x, y), then an MLP of two hidden layers to RGB."""

    def __init__(self, dtype, width: int = 64):
        super().__init__()
        import gridjit.torch as gjt  # here, so that make_image can be imported without gridjit

        self.encoding = gjt.Encoding(2, HASHGRID, dtype=dtype)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(self.encoding.n_output_dims, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, 3),
        )

    def forward(self, xy: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.encoding(xy).float())


def psnr(mse: float) -> float:
    return -10.0 * math.log10(max(mse, 1e-12))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps (default 2000)")
    parser.add_argument("--out", default="fit_image.png", help="PNG of the reconstruction (default fit_image.png)")
    parser.add_argument("--target-out", default=None, help="also write the target image to this PNG")
    parser.add_argument("--size", type=int, default=512, help="image side in pixels (default 512)")
    parser.add_argument("--batch", type=int, default=1 << 18, help="pixels per step (default 2^18)")
    parser.add_argument("--log-every", type=int, default=250, help="print loss and PSNR every N steps")
    parser.add_argument("--dtype", choices=("auto", "half", "float"), default="auto",
                        help="precision of the grid's kernels and output (default auto: half on sm_70+, as "
                             "tinycudann); the parameters are fp32 either way")
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("fit_image.py: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 1
    torch.manual_seed(args.seed)
    device = torch.device("cuda")
    image = make_image(args.size, device)
    if args.target_out:
        write_png(args.target_out, image)

    start = time.perf_counter()
    model = ImageModel({"auto": None, "half": torch.half, "float": torch.float}[args.dtype]).to(device)
    # Stock Adam: the grid's parameters and gradients are fp32 whatever the kernels' precision.
    optimizer = torch.optim.Adam(
        [{"params": model.encoding.parameters()}, {"params": model.mlp.parameters(), "weight_decay": 1e-6}],
        lr=args.lr, betas=(0.9, 0.99), eps=1e-15,
    )
    pixels = torch.arange(args.size, device=device, dtype=torch.float32)
    grid_y, grid_x = torch.meshgrid(pixels, pixels, indexing="ij")
    all_xy = torch.stack([(grid_x.flatten() + 0.5) / args.size, (grid_y.flatten() + 0.5) / args.size], dim=1)
    targets = image.reshape(-1, 3)

    def render() -> tuple[torch.Tensor, float]:
        """The reconstruction and its mean squared error."""
        with torch.no_grad():
            result = torch.cat([model(chunk) for chunk in all_xy.split(1 << 18)]).reshape(args.size, args.size, 3)
        return result, torch.mean((result - image) ** 2).item()

    import gridjit

    print(f"gridjit {gridjit.__version__} | {torch.cuda.get_device_name()}")
    print(f"grid: {model.encoding.n_params} parameters (kernels {model.encoding.dtype}), "
          f"output {model.encoding.n_output_dims}; "
          f"image {args.size}x{args.size}, batch {args.batch}")
    train_start = None
    result = mse = None  # the last render
    for step in range(1, args.steps + 1):
        xy = torch.rand(args.batch, 2, device=device)
        index = (xy[:, 1] * args.size).long().clamp_(0, args.size - 1) * args.size
        index += (xy[:, 0] * args.size).long().clamp_(0, args.size - 1)
        loss = torch.nn.functional.mse_loss(model(xy), targets[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step == 1:
            torch.cuda.synchronize()
            train_start = time.perf_counter()
            print(f"first step (kernel compile or cache load included): {train_start - start:.2f} s")
        if step % args.log_every == 0 or step == args.steps:  # the last step renders
            result, mse = render()
            print(f"step {step:6d}  loss {loss.item():.6f}  PSNR {psnr(mse):6.2f} dB  "
                  f"({time.perf_counter() - train_start:.1f} s)")
    if result is None:  # no step
        result, mse = render()
    write_png(args.out, result)
    print(f"wrote {args.out}: PSNR {psnr(mse):.2f} dB after {args.steps} steps, {time.perf_counter() - start:.1f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
