"""Kernel families grouped by the similarity of their IR, for the ``cluster`` split.

Holding out a family does not hold out its kernel when a near-twin stays in training:
``softmax`` and ``log_softmax``, or ``matmul``, ``persistent_matmul`` and ``batched_matmul``,
compile to graphs made of almost the same operations. The ``cluster`` split therefore holds
out *groups* of families: each family's op set (the distinct operation names of every graph
its configs compiled to, at the level being trained on) is compared with every other's by a
weighted Jaccard similarity, and families are joined by complete-linkage agglomerative
clustering (``scipy.cluster.hierarchy``) cut at :data:`DEFAULT_DISTANCE`: every two families
of a cluster are at most that far apart. A model judged on a held-out cluster has seen no
kernel built from the same operations: that is the honest "unseen kernel" number. Families
with no stored graph are clusters of their own.

Why weighted: every Triton kernel has ``tt.func``, ``tt.load``, ``tt.store``,
``tt.make_range``, ``tt.splat``, ``tt.addptr``..., so plain Jaccard calls any two kernels
half alike and clustering chains them into one group (on the 147-run tiny harvest: 3
clusters at 0.5, one of them 20 of 27 families). Each op is weighted by its inverse document
frequency over the dataset's families, ln(families / families using it): an op every family
uses weighs 0, a rare one (``tt.dot``, ``tt.scan``, ``tt.atomic_rmw``) much. Complete linkage
instead of average keeps chains from forming. At 0.7 the tiny harvest's 27 families form 11
clusters: the matmuls (matmul, persistent, batched, int8, split-k, epilogue) together,
log_softmax with cross_entropy, layer norms with rmsnorm, the two attentions together.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import polars as pl
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from train.graphs import CATEGORICAL, EncodedGraphs

DEFAULT_DISTANCE = 0.7
"""Complete-linkage cut in weighted Jaccard distance: two families share a cluster only if
every pair in it shares at least 30 % of its (IDF-weighted) operations."""


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


def op_weights(op_sets: Mapping[str, frozenset[str]]) -> dict[str, float]:
    """Inverse document frequency of each op over the families: ln(n / families using it)."""
    n = len(op_sets)
    counts: dict[str, int] = {}
    for ops in op_sets.values():
        for op in ops:
            counts[op] = counts.get(op, 0) + 1
    return {op: math.log(n / count) for op, count in counts.items()}


def jaccard(
    a: frozenset[str], b: frozenset[str], weights: Mapping[str, float] | None = None
) -> float:
    """Weighted Jaccard similarity sum(w, a ∩ b) / sum(w, a ∪ b) (plain |a ∩ b| / |a ∪ b|
    without ``weights``); 0 when the union weighs nothing (nothing known, nothing shared)."""
    if weights is None:
        union = len(a | b)
        return len(a & b) / union if union else 0.0
    union_w = sum(weights.get(op, 0.0) for op in a | b)
    return sum(weights.get(op, 0.0) for op in a & b) / union_w if union_w > 0 else 0.0


def cluster_families(
    op_sets: Mapping[str, frozenset[str]], distance: float = DEFAULT_DISTANCE
) -> dict[str, str]:
    """family -> cluster label (``"+"``-joined sorted member families), by complete-linkage
    clustering of weighted Jaccard distances cut at ``distance`` (see the module docstring)."""
    families = sorted(op_sets)
    if len(families) < 2:
        return {f: f for f in families}
    weights = op_weights(op_sets)
    n = len(families)
    dist = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            similarity = jaccard(op_sets[families[i]], op_sets[families[j]], weights)
            dist[i, j] = dist[j, i] = 1.0 - similarity
    labels = fcluster(
        linkage(squareform(dist, checks=False), method="complete"),
        t=distance,
        criterion="distance",
    )
    members: dict[int, list[str]] = {}
    for family, label in zip(families, labels):
        members.setdefault(int(label), []).append(family)
    return {f: "+".join(sorted(group)) for group in members.values() for f in group}


def nearest_training_similarity(
    held_out: Iterable[str], training: Iterable[str], op_sets: Mapping[str, frozenset[str]]
) -> list[float]:
    """Per held-out family, its highest weighted Jaccard similarity (weights over every family
    of ``op_sets``) to any training family: how close the nearest kernel the model did see
    is (1.0: the same distinctive operations)."""
    weights = op_weights(op_sets)
    train = [op_sets[f] for f in training if f in op_sets]
    return [
        max((jaccard(op_sets[f], t, weights) for t in train), default=0.0)
        for f in held_out
        if f in op_sets
    ]
