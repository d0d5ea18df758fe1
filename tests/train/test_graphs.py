"""IR tables -> encoded and featurized graph tensors (train.graphs), on a real harvest."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from train.data import read_ir_tables
from train.graphs import (
    CATEGORICAL,
    MISSING,
    NUM_EDGE_TYPES,
    NUMERIC,
    OOV,
    GraphFeaturizer,
    UnseenValues,
    encode_graphs,
)


@pytest.fixture(scope="module")
def tables(harvested: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    return read_ir_tables(harvested, "ttgir")


def test_counts_per_graph_equal_the_ir_tables(tables):
    nodes, edges = tables
    encoded = encode_graphs(nodes, edges)
    node_counts = dict(nodes.group_by("ir_id").len().iter_rows())
    edge_counts = dict(edges.group_by("ir_id").len().iter_rows())
    assert sorted(encoded.ir_ids) == sorted(node_counts)
    assert len(set(encoded.ir_ids)) == len(encoded.ir_ids)  # each graph stored once
    for g, ir_id in enumerate(encoded.ir_ids):
        assert encoded.node_ptr[g + 1] - encoded.node_ptr[g] == node_counts[ir_id]
        assert encoded.edge_ptr[g + 1] - encoded.edge_ptr[g] == edge_counts.get(ir_id, 0)
    assert encoded.cat_codes.shape == (nodes.height, len(CATEGORICAL))
    assert encoded.numeric.shape == (nodes.height, len(NUMERIC))


def test_edges_keep_kind_and_endpoints(tables):
    nodes, edges = tables
    encoded = encode_graphs(nodes, edges)
    g = int(np.argmax(np.diff(encoded.edge_ptr)))
    ir_id = encoded.ir_ids[g]
    e0, e1 = encoded.edge_ptr[g], encoded.edge_ptr[g + 1]
    got = sorted(
        zip(
            encoded.edge_index[0, e0:e1].tolist(),
            encoded.edge_index[1, e0:e1].tolist(),
            encoded.edge_kind[e0:e1].tolist(),
        )
    )
    rows = edges.filter(pl.col("ir_id") == ir_id)
    want = sorted(
        zip(
            rows["src"].to_list(),
            rows["dst"].to_list(),
            [0 if k == "data" else 1 for k in rows["kind"]],
        )
    )
    assert got == want


def test_featurizer_reverse_edges_and_types(tables):
    nodes, edges = tables
    encoded = encode_graphs(nodes, edges)
    featurizer = GraphFeaturizer.fit(encoded, np.arange(encoded.num_graphs))
    feats = featurizer.transform(encoded)
    assert feats.edge_index.shape[1] == 2 * encoded.edge_index.shape[1]
    assert set(np.unique(feats.edge_type)) <= set(range(NUM_EDGE_TYPES))
    # Every graph's block of 2E edges: the first E forward (even types), the next E reversed.
    g = int(np.argmax(np.diff(encoded.edge_ptr)))
    e0, e1 = feats.edge_ptr[g], feats.edge_ptr[g + 1]
    half = (e1 - e0) // 2
    forward, backward = feats.edge_index[:, e0 : e0 + half], feats.edge_index[:, e0 + half : e1]
    assert np.array_equal(forward[::-1], backward)
    assert (feats.edge_type[e0 : e0 + half] % 2 == 0).all() and (
        feats.edge_type[e0 + half : e1] % 2 == 1
    ).all()
    assert np.isfinite(feats.x_num).all()
    assert feats.x_num.shape[1] == featurizer.num_numeric


def test_vocabulary_from_training_graphs_only_and_oov(tables):
    nodes, edges = tables
    encoded = encode_graphs(nodes, edges)
    op = CATEGORICAL.index("op_name")
    # Train on the first graph only: ops absent from it must map to the OOV bucket.
    featurizer = GraphFeaturizer.fit(encoded, [0])
    first_ops = set(nodes.filter(pl.col("ir_id") == encoded.ir_ids[0])["op_name"].drop_nulls())
    assert set(featurizer.vocabularies["op_name"]) == first_ops
    feats = featurizer.transform(encoded)
    names = nodes.sort("ir_id", "node_id")["op_name"].to_list()
    for name, index in zip(names, feats.x_cat[:, op].tolist()):
        if name is None:
            assert index == MISSING
        elif name in first_ops:
            assert index == 2 + featurizer.vocabularies["op_name"].index(name)
        else:
            assert index == OOV


def test_unseen_values_count_the_nodes_transform_puts_in_the_oov_bucket(tables):
    """What predict's warning reports: per column, the nodes of the graphs asked about whose
    value maps to OOV (nulls are MISSING, not unseen), in how many graphs, which values."""
    nodes, edges = tables
    encoded = encode_graphs(nodes, edges)
    featurizer = GraphFeaturizer.fit(encoded, [0])
    asked = [1, 2, len(encoded.ir_ids) - 1]
    unseen = featurizer.unseen_values(encoded, asked)
    x_cat = featurizer.transform(encoded).x_cat
    rows = np.concatenate([np.arange(encoded.node_ptr[g], encoded.node_ptr[g + 1]) for g in asked])
    in_oov = {c for j, c in enumerate(CATEGORICAL) if (x_cat[rows, j] == OOV).any()}
    assert set(unseen) == in_oov and "op_name" in in_oov
    ops = nodes.filter(
        pl.col("ir_id").is_in([encoded.ir_ids[g] for g in asked])
        & ~pl.col("op_name").is_in(featurizer.vocabularies["op_name"])
    )
    assert unseen["op_name"] == UnseenValues(
        nodes=ops.height,
        graphs=ops["ir_id"].n_unique(),
        values=sorted(ops["op_name"].unique().to_list()),
    )
    assert featurizer.unseen_values(encoded, [0]) == {}  # its own training graph
    assert featurizer.unseen_values(encoded, []) == {}


def test_featurizer_json_round_trip(tables):
    import json

    nodes, edges = tables
    encoded = encode_graphs(nodes, edges)
    featurizer = GraphFeaturizer.fit(encoded, np.arange(encoded.num_graphs))
    again = GraphFeaturizer.from_dict(json.loads(json.dumps(featurizer.to_dict())))
    a, b = featurizer.transform(encoded), again.transform(encoded)
    assert np.array_equal(a.x_cat, b.x_cat) and np.array_equal(a.x_num, b.x_num)


def test_inconsistent_edges_are_refused(tables):
    nodes, edges = tables
    broken = edges.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(10**6).otherwise(pl.col("dst")).alias("dst")
    )
    with pytest.raises(ValueError, match="ir_edges"):
        encode_graphs(nodes, broken)
