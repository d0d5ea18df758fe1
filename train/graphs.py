"""IR graphs as tensors: ``ir_nodes`` / ``ir_edges`` rows -> per-``ir_id`` node and edge arrays.

Two stages, so that the expensive one is cached and the split-dependent one is cheap:

1. :func:`encode_graphs` (dataset-level, cacheable): every node's categorical columns become
   integer codes into dictionaries of the strings seen in the dataset, its numeric columns raw
   float values (NaN when null); edges become local (within-graph) index pairs with their kind
   and position. Graphs are concatenated, delimited by ``node_ptr`` / ``edge_ptr``.
2. :class:`GraphFeaturizer` (fitted on the training split only): categorical vocabularies with
   a missing and an out-of-vocabulary bucket, numeric columns signed-log scaled and
   standardized with training statistics (missing -> 0 plus an indicator), and typed edges
   (data / region x forward / reverse) with a bucketed operand position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from schemas.tables import IR_NODES

FEATURIZER_VERSION = 2
"""Bump whenever encoding or featurization changes: it is part of the processed-cache key and
of every checkpoint, so a stale cache or an incompatible checkpoint is never used."""

CATEGORICAL: tuple[str, ...] = (
    "node_kind",
    "op_name",
    "dialect",
    "dtype",
    "layout",
    "predicate",
    "cache_modifier",
    "eviction_policy",
    "input_precision",
    "parent_op",
)
"""Categorical node features; ``parent_op`` is the op name of the enclosing region op."""


def _product(column: str) -> pl.Expr:
    # list.eval + first rather than list.agg, which polars before 1.35 lacks (the harvest/train
    # floor is 1.17); same values: an empty list's product is 1.0, a null list's null.
    return (
        pl.col(column)
        .list.eval(pl.element().cast(pl.Float64).product())
        .list.first()
        .alias(f"{column}_prod")
    )


NUMERIC_EXPRESSIONS: dict[str, pl.Expr] = {
    **{
        name: pl.col(name).cast(pl.Float64)
        for name in (
            "depth",
            "num_operands",
            "num_results",
            "numel",
            "bitwidth",
            "is_pointer",
            "arg_index",
            "region_index",
            "mma_version",
            "swizzle_vec",
            "swizzle_per_phase",
            "swizzle_max_phase",
            "axis",
            "constant",
            "range_start",
            "range_end",
            "divisibility",
            "contiguity",
            "loop_num_stages",
            "num_pending",
        )
    },
    "rank": pl.col("shape").list.len().cast(pl.Float64),
    "dim_first": pl.col("shape").list.first().cast(pl.Float64),
    "dim_last": pl.col("shape").list.last().cast(pl.Float64),
    "size_per_thread_prod": _product("size_per_thread"),
    "threads_per_warp_prod": _product("threads_per_warp"),
    "warps_per_cta_prod": _product("warps_per_cta"),
    "instr_shape_prod": _product("instr_shape"),
    "order_first": pl.col("order").list.first().cast(pl.Float64),
}
"""Numeric node features (raw values; list columns reduced to rank, first/last dim, products)."""

NUMERIC: tuple[str, ...] = tuple(NUMERIC_EXPRESSIONS)
NODE_COLUMNS: tuple[str, ...] = tuple(
    name
    for name in IR_NODES.names
    if name not in ("schema_version", "level", "attrs_json", "loc_line", "loc_col", "var_name")
)
"""``ir_nodes`` columns the encoder reads (the rest: locations, names, attrs_json carry no
signal that generalizes across kernels)."""
EDGE_COLUMNS: tuple[str, ...] = ("ir_id", "src", "dst", "kind", "position")

EDGE_KINDS: tuple[str, ...] = ("data", "region")
NUM_EDGE_TYPES = 2 * len(EDGE_KINDS)
"""Edge types: kind x direction; type = 2 * kind index + (1 for the added reverse edge)."""
MAX_POSITION = 8
"""Operand positions >= this share one bucket; null positions get bucket MAX_POSITION + 1."""
NUM_POSITIONS = MAX_POSITION + 2

MISSING, OOV = 0, 1
"""Reserved vocabulary indices: null value, value not seen in training."""


@dataclass
class EncodedGraphs:
    """Dataset-level encoding of many IR graphs, concatenated.

    ``node_ptr`` int64 [G+1], ``edge_ptr`` int64 [G+1]: graph g owns nodes
    ``node_ptr[g]:node_ptr[g+1]`` and edges ``edge_ptr[g]:edge_ptr[g+1]``; ``cat_codes`` int32
    [N, len(CATEGORICAL)] codes into ``dictionaries`` (-1 = null); ``numeric`` float32
    [N, len(NUMERIC)] raw values (NaN = null); ``edge_index`` int64 [2, E] node indices local to
    the graph; ``edge_kind`` int8 [E] index into EDGE_KINDS; ``edge_pos`` int32 [E] (-1 = null).
    """

    ir_ids: list[str]
    node_ptr: np.ndarray
    edge_ptr: np.ndarray
    cat_codes: np.ndarray
    dictionaries: dict[str, list[str]]
    numeric: np.ndarray
    edge_index: np.ndarray
    edge_kind: np.ndarray
    edge_pos: np.ndarray

    @property
    def num_graphs(self) -> int:
        return len(self.ir_ids)

    def index_of(self) -> dict[str, int]:
        """ir_id -> graph index."""
        return {ir_id: i for i, ir_id in enumerate(self.ir_ids)}

    def arrays(self) -> dict[str, np.ndarray]:
        """The array fields by name (for safetensors)."""
        return {
            "node_ptr": self.node_ptr,
            "edge_ptr": self.edge_ptr,
            "cat_codes": self.cat_codes,
            "numeric": self.numeric,
            "edge_index": self.edge_index,
            "edge_kind": self.edge_kind,
            "edge_pos": self.edge_pos,
        }

    def meta(self) -> dict[str, Any]:
        """The non-array fields (JSON-serializable)."""
        return {"ir_ids": self.ir_ids, "dictionaries": self.dictionaries}

    @classmethod
    def from_parts(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> EncodedGraphs:
        return cls(ir_ids=list(meta["ir_ids"]), dictionaries=dict(meta["dictionaries"]), **arrays)


def encode_graphs(nodes: pl.DataFrame, edges: pl.DataFrame) -> EncodedGraphs:
    """Encode the rows of ``ir_nodes`` and ``ir_edges`` (one level) into :class:`EncodedGraphs`.

    Graphs are ordered by ir_id; nodes by node_id within a graph. Refuses edges that name a
    node their graph does not have, or graphs whose node ids are not 0..n-1 (both mean the
    tables are inconsistent).
    """
    nodes = nodes.select([c for c in NODE_COLUMNS if c in nodes.columns]).sort("ir_id", "node_id")
    parents = nodes.select(
        "ir_id", pl.col("node_id").alias("parent_id"), pl.col("op_name").alias("parent_op")
    )
    nodes = nodes.join(parents, on=["ir_id", "parent_id"], how="left", maintain_order="left")
    ir_ids = nodes["ir_id"].unique(maintain_order=True).to_list()
    counts = nodes.group_by("ir_id", maintain_order=True).len()["len"].to_numpy()
    node_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    local = nodes["node_id"].to_numpy().astype(np.int64)
    expected = np.arange(len(local)) - np.repeat(node_ptr[:-1], counts)
    if not np.array_equal(local, expected):
        raise ValueError(
            "ir_nodes: node_id of some graph is not 0..n-1; the IR tables are inconsistent"
        )
    dictionaries: dict[str, list[str]] = {}
    codes = np.full((nodes.height, len(CATEGORICAL)), -1, dtype=np.int32)
    for j, column in enumerate(CATEGORICAL):
        values = (
            nodes[column]
            if column in nodes.columns
            else pl.Series(column, [None] * nodes.height, pl.String)
        )
        uniques = values.drop_nulls().unique().sort()
        dictionaries[column] = uniques.to_list()
        lookup = {value: i for i, value in enumerate(dictionaries[column])}
        codes[:, j] = values.replace_strict(lookup, default=-1, return_dtype=pl.Int32).to_numpy()
    numeric = (
        nodes.select([expr.alias(name) for name, expr in NUMERIC_EXPRESSIONS.items()])
        .fill_nan(None)
        .to_numpy()
        .astype(np.float32)
    )
    edge_index, edge_kind, edge_pos, edge_ptr = _encode_edges(edges, ir_ids, counts)
    return EncodedGraphs(
        ir_ids, node_ptr, edge_ptr, codes, dictionaries, numeric, edge_index, edge_kind, edge_pos
    )


def _encode_edges(
    edges: pl.DataFrame, ir_ids: list[str], counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    order = pl.DataFrame(
        {"ir_id": ir_ids, "__g": np.arange(len(ir_ids))},
        schema={"ir_id": pl.String, "__g": pl.Int64},
    )
    edges = (
        edges.select(EDGE_COLUMNS)
        .join(order, on="ir_id", how="inner")
        .sort("__g", "dst", "position", "src")
    )
    graph = edges["__g"].to_numpy()
    per_graph = np.bincount(graph, minlength=len(ir_ids))
    src = edges["src"].to_numpy().astype(np.int64)
    dst = edges["dst"].to_numpy().astype(np.int64)
    if len(src) and (
        src.min() < 0 or dst.min() < 0 or (np.maximum(src, dst) >= counts[graph]).any()
    ):
        raise ValueError(
            "ir_edges: an edge names a node its graph does not have; the IR tables are inconsistent"
        )
    unknown = set(edges["kind"].unique().to_list()) - set(EDGE_KINDS)
    if unknown:
        raise ValueError(f"ir_edges: unknown edge kind(s) {sorted(unknown)}; expected {EDGE_KINDS}")
    kind = edges["kind"].replace_strict(
        {k: i for i, k in enumerate(EDGE_KINDS)}, return_dtype=pl.Int8
    )
    position = edges["position"].fill_null(-1).to_numpy().astype(np.int32)
    edge_ptr = np.concatenate([[0], np.cumsum(per_graph)]).astype(np.int64)
    return np.stack([src, dst]), kind.to_numpy(), position, edge_ptr


CLIP = 8.0
"""Standardized numeric values are clipped to [-CLIP, CLIP]: unseen extremes stay bounded."""


def signed_log(values: np.ndarray) -> np.ndarray:
    """sign(x) * ln(1 + |x|): compresses sizes spanning many orders of magnitude, keeps sign.
    Infinite constants (e.g. the -inf seed of a max-reduction) map to +-ln(1 + 1e38); NaN stays."""
    finite = np.clip(values, -1e38, 1e38)
    return np.sign(finite) * np.log1p(np.abs(finite))


@dataclass
class FeaturizedGraphs:
    """Model-ready tensors (numpy) of many graphs; same layout as :class:`EncodedGraphs`.

    ``x_cat`` int64 [N, C] vocabulary indices (0 missing, 1 out-of-vocabulary);
    ``x_num`` float32 [N, 2F] standardized values then missing indicators;
    ``edge_index`` int64 [2, 2E] local indices, each IR edge followed by its reverse block;
    ``edge_type`` int64 [2E] in [0, NUM_EDGE_TYPES); ``edge_pos`` int64 [2E] in [0, NUM_POSITIONS).
    """

    ir_ids: list[str]
    node_ptr: np.ndarray
    edge_ptr: np.ndarray
    x_cat: np.ndarray
    x_num: np.ndarray
    edge_index: np.ndarray
    edge_type: np.ndarray
    edge_pos: np.ndarray


@dataclass(frozen=True)
class UnseenValues:
    """Nodes holding values of one categorical column that a featurizer's vocabulary lacks:
    ``nodes`` how many nodes, ``graphs`` in how many distinct graphs, ``values`` the distinct
    such values, sorted."""

    nodes: int
    graphs: int
    values: list[str]


@dataclass
class GraphFeaturizer:
    """Vocabularies and numeric statistics fitted on training graphs; JSON round-trippable."""

    vocabularies: dict[str, list[str]]
    mean: list[float]
    std: list[float]
    version: int = FEATURIZER_VERSION

    @property
    def vocab_sizes(self) -> list[int]:
        """Embedding table size per categorical column (vocabulary + missing + OOV)."""
        return [len(self.vocabularies[c]) + 2 for c in CATEGORICAL]

    @property
    def num_numeric(self) -> int:
        """Width of ``x_num``: a value and a missing indicator per numeric feature."""
        return 2 * len(NUMERIC)

    @classmethod
    def fit(cls, graphs: EncodedGraphs, graph_indices: np.ndarray | list[int]) -> GraphFeaturizer:
        """Fit on the graphs ``graph_indices`` of ``graphs`` (the training split's graphs)."""
        rows = _node_rows(graphs.node_ptr, np.asarray(graph_indices, dtype=np.int64))
        vocabularies = {}
        for j, column in enumerate(CATEGORICAL):
            seen = np.unique(graphs.cat_codes[rows, j])
            vocabularies[column] = sorted(graphs.dictionaries[column][c] for c in seen if c >= 0)
        scaled = signed_log(graphs.numeric[rows].astype(np.float64))
        present = ~np.isnan(scaled)
        count = present.sum(axis=0)
        filled = np.where(present, scaled, 0.0)
        # Columns never present in training get mean 0 / std 1 (only the indicator speaks).
        mean = filled.sum(axis=0) / np.maximum(count, 1)
        var = (np.where(present, scaled - mean, 0.0) ** 2).sum(axis=0) / np.maximum(count, 1)
        std = np.where(np.sqrt(var) > 1e-6, np.sqrt(var), 1.0)
        return cls(vocabularies, mean.tolist(), std.tolist())

    def transform(self, graphs: EncodedGraphs) -> FeaturizedGraphs:
        """Featurize every graph of ``graphs`` (vectorized over all nodes and edges)."""
        if self.version != FEATURIZER_VERSION:
            raise ValueError(
                f"featurizer version {self.version} != this code's {FEATURIZER_VERSION}"
            )
        x_cat = np.empty(graphs.cat_codes.shape, dtype=np.int64)
        for j, column in enumerate(CATEGORICAL):
            lookup = self._lookup(column, graphs.dictionaries[column])
            x_cat[:, j] = lookup[graphs.cat_codes[:, j] + 1]
        scaled = signed_log(graphs.numeric.astype(np.float64))
        missing = np.isnan(scaled)
        standardized = np.clip((scaled - np.asarray(self.mean)) / np.asarray(self.std), -CLIP, CLIP)
        x_num = np.concatenate([np.where(missing, 0.0, standardized), missing], axis=1).astype(
            np.float32
        )
        kind = graphs.edge_kind.astype(np.int64)
        pos = np.where(
            graphs.edge_pos < 0, MAX_POSITION + 1, np.minimum(graphs.edge_pos, MAX_POSITION)
        )
        edge_index, edge_type, edge_pos = _with_reverse(
            graphs.edge_index, kind, pos.astype(np.int64), graphs.edge_ptr
        )
        return FeaturizedGraphs(
            graphs.ir_ids,
            graphs.node_ptr,
            2 * graphs.edge_ptr,
            x_cat,
            x_num,
            edge_index,
            edge_type,
            edge_pos,
        )

    def _lookup(self, column: str, dictionary: list[str]) -> np.ndarray:
        """int64 [len(dictionary) + 1]: the vocabulary index of encoded code c at ``c + 1``;
        code -1 (null) -> MISSING, dictionary strings not in the vocabulary -> OOV."""
        index = {value: i + 2 for i, value in enumerate(self.vocabularies[column])}
        return np.array([MISSING] + [index.get(s, OOV) for s in dictionary], dtype=np.int64)

    def unseen_values(
        self, graphs: EncodedGraphs, graph_indices: np.ndarray | list[int]
    ) -> dict[str, UnseenValues]:
        """The categorical columns in which nodes of the graphs ``graph_indices`` of ``graphs``
        hold a (non-null) value this featurizer's vocabulary lacks, which :meth:`transform`
        maps to the one OOV bucket: the model cannot tell such values apart, nor from any
        other value it never saw. Columns without such nodes are left out (an empty dict: the
        model reads every value). Vectorized over nodes; the lookups loop over the graphs'
        dictionaries only."""
        indices = np.asarray(graph_indices, dtype=np.int64)
        rows = _node_rows(graphs.node_ptr, indices)
        owner = np.repeat(indices, np.diff(graphs.node_ptr)[indices])  # graph of each row
        found: dict[str, UnseenValues] = {}
        for j, column in enumerate(CATEGORICAL):
            codes = graphs.cat_codes[rows, j]
            unseen = self._lookup(column, graphs.dictionaries[column])[codes + 1] == OOV
            if unseen.any():
                found[column] = UnseenValues(
                    nodes=int(unseen.sum()),
                    graphs=int(np.unique(owner[unseen]).size),
                    values=sorted(graphs.dictionaries[column][c] for c in np.unique(codes[unseen])),
                )
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "vocabularies": self.vocabularies,
            "mean": self.mean,
            "std": self.std,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphFeaturizer:
        return cls(
            dict(data["vocabularies"]), list(data["mean"]), list(data["std"]), int(data["version"])
        )


def _node_rows(node_ptr: np.ndarray, graph_indices: np.ndarray) -> np.ndarray:
    """Concatenated node row indices of the given graphs."""
    if len(graph_indices) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(node_ptr[g], node_ptr[g + 1]) for g in graph_indices])


def _with_reverse(
    edge_index: np.ndarray, kind: np.ndarray, pos: np.ndarray, edge_ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per graph: its E edges, then the same E reversed (type + 1), so graph g's 2E edges stay
    contiguous at ``2 * edge_ptr[g]``. Messages then flow both ways, typed by direction."""
    counts = np.diff(edge_ptr)
    graph = np.repeat(np.arange(len(counts)), counts)
    # Stable interleave by graph: key (graph, is_reverse, original order).
    order = np.lexsort(
        (
            np.concatenate([np.arange(len(kind))] * 2),
            np.repeat([0, 1], len(kind)),
            np.tile(graph, 2),
        )
    )
    both_index = np.concatenate([edge_index, edge_index[::-1]], axis=1)[:, order]
    both_type = np.concatenate([2 * kind, 2 * kind + 1])[order]
    both_pos = np.concatenate([pos, pos])[order]
    return both_index, both_type, both_pos
