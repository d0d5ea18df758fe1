"""The cost model: an edge-typed GNN over the IR graph, joined with the side features.

Node encoder (categorical embeddings + numeric projection) -> ``layers`` GINE convolutions
whose edge attributes embed the edge type (data / region x forward / reverse) and the
operand position -> mean and max pooling per graph -> concatenated with an MLP of the
sample's side features (config knobs, grid, problem size, static stats, device) -> three
heads: a ranking score (lower = predicted faster), log latency (ln ms) and a validity logit.

Graph modes (:data:`GRAPH_MODES`):

- ``config`` (config-sensitive, in the spirit of the TpuGraphs winners): every sample has its
  own copy of its graph; each node also gets its values relative to the same op across the
  run's configs and a config-sensitive flag (:class:`train.data.RunOpStats`), the config's
  side features modulate every node's input embedding (FiLM: knobs as node features on the
  ops), and pooling is done over all nodes and, separately, over the config-sensitive ones.
- ``plain``: one embedding per distinct graph, the same whatever the config (the earlier
  encoder; configs that share an IR share it).
- ``none``: no graph branch: an MLP on the side features only (the ablation that shows what
  the graphs add).

With ``prior`` the ranking score is a learned residual plus ``alpha`` times the analytic
rule's run-centered score (:class:`train.baselines.analytic.AnalyticBaseline`, ln units),
``alpha`` learned and starting at 1: the network only has to learn what the rule misses.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn
from torch_geometric.nn import GINEConv, global_max_pool, global_mean_pool

from train.data import Batch
from train.graphs import NUM_EDGE_TYPES, NUM_POSITIONS

GRAPH_MODES = ("config", "plain", "none")


@contextlib.contextmanager
def private_tempdir() -> Iterator[None]:
    """Point :mod:`tempfile` at a private directory while PyG builds its layers, and remove it.

    PyTorch Geometric renders each message-passing class's ``propagate`` from a Jinja template
    into ``$TMPDIR/<module>_propagate_*.py`` (``delete=False``) and imports it once per
    process; the module stays loaded, the file is never needed again and would be left behind
    by every training run.
    """
    previous = tempfile.tempdir
    scratch = tempfile.mkdtemp(prefix="kernel-corpus-pyg-")
    tempfile.tempdir = scratch
    try:
        yield
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(scratch, ignore_errors=True)


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
    graph_mode: str = "config"
    """How the IR graph enters (:data:`GRAPH_MODES`; see the module docstring)."""
    prior: bool = False
    """Score = learned residual + alpha * analytic prior (the batch's ``prior``)."""

    def __post_init__(self) -> None:
        if self.graph_mode not in GRAPH_MODES:
            raise ValueError(f"graph_mode {self.graph_mode!r} is not one of {GRAPH_MODES}")

    @property
    def use_graph(self) -> bool:
        return self.graph_mode != "none"

    @property
    def config_sensitive(self) -> bool:
        """Whether batches must carry per-sample graphs with run-relative node features."""
        return self.graph_mode == "config"

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
        if config.config_sensitive:
            node_width += config.num_numeric // 2 + 1  # run-relative values, sensitive flag
            # FiLM from the config's side features; zero-initialized: starts as the identity.
            self.film = nn.Linear(config.num_tab, 2 * h)
            nn.init.zeros_(self.film.weight)
            nn.init.zeros_(self.film.bias)
        self.node_in = _mlp(node_width, h, h, 0.0)
        self.edge_type = nn.Embedding(NUM_EDGE_TYPES, h)
        self.edge_pos = nn.Embedding(NUM_POSITIONS, h)
        with private_tempdir():
            self.convs = nn.ModuleList(
                GINEConv(_mlp(h, h, h, 0.0), train_eps=True) for _ in range(config.layers)
            )
        self.norms = nn.ModuleList(nn.LayerNorm(h) for _ in range(config.layers))
        self.tab = _mlp(config.num_tab, h, h, config.dropout)
        pooled = {"none": 0, "plain": 2 * h + 1, "config": 4 * h + 1}[config.graph_mode]
        self.trunk = nn.Sequential(
            nn.Linear(pooled + h, h),
            nn.ReLU(),
            nn.Dropout(config.dropout),
            nn.Linear(h, h),
            nn.ReLU(),
        )
        self.heads = nn.Linear(h, 3)
        if config.prior:
            self.prior_weight = nn.Parameter(torch.ones(()))

    def embed_graphs(self, batch: Batch) -> torch.Tensor:
        """Pooled embedding per graph of the batch: float32 [n_graphs, 2 * hidden] (plain), or
        [n_graphs, 4 * hidden] (config: all nodes, then the config-sensitive ones)."""
        parts = [emb(batch.x_cat[:, j]) for j, emb in enumerate(self.embeddings)]
        sensitive = None
        if self.config.config_sensitive:
            if batch.node_rel is None or batch.node_sensitive is None:
                raise ValueError("a config-sensitive model needs config-sensitive batches")
            sensitive = batch.node_sensitive
            parts += [batch.x_num, batch.node_rel, sensitive.unsqueeze(1)]
        else:
            parts.append(batch.x_num)
        x = self.node_in(torch.cat(parts, dim=1))
        if sensitive is not None:
            owner = self._graph_owner(batch)
            scale, shift = self.film(batch.tab[owner]).chunk(2, dim=1)
            x = x * (1 + scale[batch.node_graph]) + shift[batch.node_graph]
        edge_attr = self.edge_type(batch.edge_type) + self.edge_pos(batch.edge_pos)
        for conv, norm in zip(self.convs, self.norms):
            # Residual + LayerNorm keeps deep message passing stable on graphs of 10..1000 nodes.
            x = norm(x + torch.relu(conv(x, batch.edge_index, edge_attr)))
        size = batch.n_graphs
        pooled = [
            global_mean_pool(x, batch.node_graph, size),
            global_max_pool(x, batch.node_graph, size),
        ]
        if sensitive is not None:
            keep = sensitive > 0
            # Graphs without a sensitive node pool to zeros (mean) and, by PyG, zeros (max).
            pooled += [
                global_mean_pool(x[keep], batch.node_graph[keep], size),
                global_max_pool(x[keep], batch.node_graph[keep], size),
            ]
        return torch.cat(pooled, dim=1)

    @staticmethod
    def _graph_owner(batch: Batch) -> torch.Tensor:
        """Sample index of each graph copy of a config-sensitive batch: int64 [n_graphs]."""
        owner = torch.zeros(batch.n_graphs, dtype=torch.long, device=batch.tab.device)
        has = batch.sample_graph >= 0
        owner[batch.sample_graph[has]] = torch.nonzero(has, as_tuple=True)[0]
        return owner

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
        score = out[:, 0]
        if self.config.prior:
            if batch.prior is None:
                raise ValueError("a model with an analytic prior needs batches with one")
            score = score + self.prior_weight * batch.prior
        return ModelOutput(score=score, log_latency=out[:, 1], valid_logit=out[:, 2])
