"""Kernel families grouped by the similarity of their IR, for the ``cluster`` split.

Holding out a family does not hold out its kernel when a near-twin stays in training:
``softmax`` and ``log_softmax``, or ``matmul``, ``persistent_matmul`` and ``batched_matmul``,
compile to graphs made of almost the same operations. The ``cluster`` split therefore holds
out *groups* of families: each family's op set (the distinct operation names of every graph
its configs compiled to, at the level being trained on) is compared with every other's by
Jaccard similarity, and families are joined by average-linkage agglomerative clustering
(``scipy.cluster.hierarchy``) until the clusters are at least :data:`DEFAULT_DISTANCE` apart
in Jaccard distance. A model judged on a held-out cluster has seen no kernel built from the
same operations: that is the honest "unseen kernel" number. Families with no stored graph are
clusters of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import polars as pl
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from train.graphs import CATEGORICAL, EncodedGraphs

DEFAULT_DISTANCE = 0.5
"""Families closer than this in Jaccard distance of their op sets (average linkage) share a
cluster: at 0.5, two families whose op sets overlap by more than half of their union do."""


def family_op_sets(samples: pl.DataFrame, graphs: EncodedGraphs) -> dict[str, frozenset[str]]:
    """family -> the distinct op names of every graph its samples' ``ir_id`` point to (empty
    for a family whose graphs are not stored)."""
    column = CATEGORICAL.index("op_name")
    names = graphs.dictionaries.get("op_name", [])
    index = graphs.index_of()
    result: dict[str, set[str]] = {}
    pairs = samples.select("family", "ir_id").unique().drop_nulls("family")
    for family, ir_id in pairs.iter_rows():
        ops = result.setdefault(family, set())
        g = index.get(ir_id) if ir_id is not None else None
        if g is None:
            continue
        codes = np.unique(graphs.cat_codes[graphs.node_ptr[g] : graphs.node_ptr[g + 1], column])
        ops.update(names[c] for c in codes if c >= 0)
    return {family: frozenset(ops) for family, ops in result.items()}


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 when both are empty (nothing known, nothing shared)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def cluster_families(
    op_sets: Mapping[str, frozenset[str]], distance: float = DEFAULT_DISTANCE
) -> dict[str, str]:
    """family -> cluster label (``"+"``-joined sorted member families), by average-linkage
    clustering of Jaccard distances cut at ``distance`` (see the module docstring)."""
    families = sorted(op_sets)
    if len(families) < 2:
        return {f: f for f in families}
    n = len(families)
    dist = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            dist[i, j] = dist[j, i] = 1.0 - jaccard(op_sets[families[i]], op_sets[families[j]])
    labels = fcluster(
        linkage(squareform(dist, checks=False), method="average"), t=distance, criterion="distance"
    )
    members: dict[int, list[str]] = {}
    for family, label in zip(families, labels):
        members.setdefault(int(label), []).append(family)
    return {f: "+".join(sorted(group)) for group in members.values() for f in group}


def nearest_training_similarity(
    held_out: Iterable[str], training: Iterable[str], op_sets: Mapping[str, frozenset[str]]
) -> list[float]:
    """Per held-out family, its highest Jaccard similarity to any training family: how close
    the nearest kernel the model did see is (1.0: the same operations)."""
    train = [op_sets[f] for f in training if f in op_sets]
    return [
        max((jaccard(op_sets[f], t) for t in train), default=0.0) for f in held_out if f in op_sets
    ]
