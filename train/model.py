"""The cost model: an edge-typed GNN over the IR graph, joined with the side features.

Node encoder (categorical embeddings + numeric projection) -> ``layers`` GINE convolutions
whose edge attributes embed the edge type (data / region x forward / reverse) and the
operand position -> mean and max pooling per graph -> concatenated with an MLP of the
sample's side features (config knobs, grid, problem size, static stats, device) -> three
heads: a ranking score (lower = predicted faster), log latency (ln ms) and a validity logit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn
from torch_geometric.nn import GINEConv, global_max_pool, global_mean_pool

from train.data import Batch
from train.graphs import NUM_EDGE_TYPES, NUM_POSITIONS


@dataclass(frozen=True)
class ModelConfig:
    """Architecture hyperparameters (stored in checkpoints)."""

    vocab_sizes: tuple[int, ...]
    num_numeric: int
    num_tab: int
    hidden: int = 64
    layers: int = 3
    cat_dim: int = 8
    dropout: float = 0.1
    use_graph: bool = True
    """False drops the graph branch (an MLP on the side features only: an ablation)."""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "vocab_sizes": list(self.vocab_sizes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        return cls(**{**data, "vocab_sizes": tuple(data["vocab_sizes"])})


@dataclass
class ModelOutput:
    """Per-sample outputs, each float32 [B]: ``score`` (rank by ascending score),
    ``log_latency`` (ln of predicted median ms), ``valid_logit`` (logit of status == ok)."""

    score: torch.Tensor
    log_latency: torch.Tensor
    valid_logit: torch.Tensor


def _mlp(width_in: int, hidden: int, width_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(width_in, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, width_out)
    )


class CostModel(nn.Module):
    """Edge-typed GINE cost model; see the module docstring."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        h = config.hidden
        self.embeddings = nn.ModuleList(
            nn.Embedding(size, config.cat_dim) for size in config.vocab_sizes
        )
        node_width = config.cat_dim * len(config.vocab_sizes) + config.num_numeric
        self.node_in = _mlp(node_width, h, h, 0.0)
        self.edge_type = nn.Embedding(NUM_EDGE_TYPES, h)
        self.edge_pos = nn.Embedding(NUM_POSITIONS, h)
        self.convs = nn.ModuleList(
            GINEConv(_mlp(h, h, h, 0.0), train_eps=True) for _ in range(config.layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(h) for _ in range(config.layers))
        self.tab = _mlp(config.num_tab, h, h, config.dropout)
        graph_width = 2 * h + 1 if config.use_graph else 0
        self.trunk = nn.Sequential(
            nn.Linear(graph_width + h, h),
            nn.ReLU(),
            nn.Dropout(config.dropout),
            nn.Linear(h, h),
            nn.ReLU(),
        )
        self.heads = nn.Linear(h, 3)

    def embed_graphs(self, batch: Batch) -> torch.Tensor:
        """Pooled embedding per distinct graph of the batch: float32 [n_graphs, 2 * hidden]."""
        parts = [emb(batch.x_cat[:, j]) for j, emb in enumerate(self.embeddings)]
        x = self.node_in(torch.cat([*parts, batch.x_num], dim=1))
        edge_attr = self.edge_type(batch.edge_type) + self.edge_pos(batch.edge_pos)
        for conv, norm in zip(self.convs, self.norms):
            # Residual + LayerNorm keeps deep message passing stable on graphs of 10..1000 nodes.
            x = norm(x + torch.relu(conv(x, batch.edge_index, edge_attr)))
        size = batch.n_graphs
        return torch.cat(
            [
                global_mean_pool(x, batch.node_graph, size),
                global_max_pool(x, batch.node_graph, size),
            ],
            dim=1,
        )

    def forward(self, batch: Batch) -> ModelOutput:
        side = self.tab(batch.tab)
        if self.config.use_graph:
            pooled = self.embed_graphs(batch)
            has_graph = batch.sample_graph >= 0
            per_sample = torch.zeros(
                len(side), pooled.shape[1], dtype=side.dtype, device=side.device
            )
            per_sample[has_graph] = pooled[batch.sample_graph[has_graph]]
            features = torch.cat([per_sample, has_graph.unsqueeze(1).to(side.dtype), side], dim=1)
        else:
            features = side
        out = self.heads(self.trunk(features))
        return ModelOutput(score=out[:, 0], log_latency=out[:, 1], valid_logit=out[:, 2])
