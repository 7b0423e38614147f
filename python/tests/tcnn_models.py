"""tiny-cuda-nn's own configurations and its SDF model, shared by the gridjit.torch tests
and the benchmarks that run them (python/benchmarks/tcnn_workloads.py, train_step.py).

The package under test is an argument (``tcnn``: gridjit.torch or tinycudann), so that
the benchmarks run the same model with either; nothing here imports gridjit.
"""

from __future__ import annotations

import torch

#: tiny-cuda-nn's documented HashGrid defaults (C1 of docs/benchmarks.md).
DEFAULT_HASHGRID = {
    "otype": "HashGrid",
    "n_levels": 16,
    "n_features_per_level": 2,
    "log2_hashmap_size": 19,
    "base_resolution": 16,
    "per_level_scale": 2.0,
}

#: tiny-cuda-nn's scripts/test_grid_bwdbwd.py, test_train(): SDF(True, 4, base_resolution=12).
SDF_GRID = {
    "otype": "HashGrid",
    "n_levels": 4,
    "n_features_per_level": 2,
    "log2_hashmap_size": 15,
    "base_resolution": 12,
    "per_level_scale": 1.5,
    "interpolation": "Linear",
}


class SDF(torch.nn.Module):
    """The model of test_grid_bwdbwd.py: tcnn.Encoding(3, SDF_GRID) with the default dtype
    + a torch MLP 8 -> 64 -> 1."""

    def __init__(self, tcnn):
        super().__init__()
        self.encoder = tcnn.Encoding(3, SDF_GRID)
        self.decoder = torch.nn.Sequential(
            torch.nn.Linear(self.encoder.n_output_dims, 64), torch.nn.ReLU(True), torch.nn.Linear(64, 1)
        )

    def forward(self, x):
        return self.decoder(self.encoder(x).to(dtype=torch.float))

    def forward_with_nablas(self, x):
        """(sdf, dsdf/dx), the gradient through autograd.grad(create_graph=True)."""
        with torch.enable_grad():
            x = x.requires_grad_(True)
            sdf = self.forward(x)
            nablas = torch.autograd.grad(
                sdf, x, torch.ones_like(sdf, device=x.device), create_graph=True, retain_graph=True, only_inputs=True
            )[0]
        return sdf, nablas


def eikonal_loss(model: SDF, x: torch.Tensor) -> torch.Tensor:
    """test_grid_bwdbwd.py's loss: the mean squared error of |dsdf/dx| against 1."""
    _, nablas = model.forward_with_nablas(x)
    norm = nablas.norm(dim=-1)
    return torch.nn.functional.mse_loss(norm, torch.ones_like(norm), reduction="mean")
