"""The cost model: dataset tables -> PyTorch Geometric samples, the GNN and its baselines,
metrics, checkpoints, prediction. Imports :mod:`schemas` only; needs the ``train`` extra
(LightGBM and matplotlib, also in it, are imported where they are used)."""

from __future__ import annotations

from schemas.extras import require_extra

require_extra("train", "train", ("torch", "torch_geometric", "safetensors", "numpy", "scipy"))
