"""Dataset -> samples with shared graphs, and the processed cache (train.data)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from schemas import DatasetError, read_table
from tests.samesize import make_room, rewrite_keeping_size_and_mtime
from train import data as data_module
from train.data import GraphSamples, cache_key, load_dataset
from train.graphs import GraphFeaturizer


def test_one_sample_per_measurement(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    runs = read_table(harvested, "runs", columns=["n_configs"])
    measurements = read_table(harvested, "measurements", columns=["run_id"])
    assert (
        loaded.samples.height == measurements.num_rows == sum(runs.column("n_configs").to_pylist())
    )
    distinct = set(loaded.samples["ir_id"].drop_nulls())
    assert distinct <= set(loaded.graphs.ir_ids)


def test_graphs_shared_by_configs_go_through_once(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    feats = GraphFeaturizer.fit(loaded.graphs, np.arange(loaded.graphs.num_graphs)).transform(
        loaded.graphs
    )
    samples = GraphSamples(loaded.samples, feats, np.zeros((loaded.samples.height, 2), np.float32))
    batch = samples.collate(np.arange(len(samples)))
    used = set(samples.graph_index[samples.graph_index >= 0])
    assert batch.n_graphs == len(used)
    assert batch.x_cat.shape[0] == sum(int(feats.node_ptr[g + 1] - feats.node_ptr[g]) for g in used)
    # Two samples of one graph (a duplicated index stands in for two configs) share one copy.
    twice = samples.collate([0, 0])
    assert twice.n_graphs == 1 and twice.sample_graph.tolist() == [0, 0]
    # A per-sample PyG view carries exactly its graph.
    item = samples[0]
    g = samples.graph_index[0]
    assert item.num_nodes == feats.node_ptr[g + 1] - feats.node_ptr[g]
    assert item.edge_index.shape[1] == feats.edge_ptr[g + 1] - feats.edge_ptr[g]


def test_batches_keep_runs_whole(harvested, cache_dir):
    loaded = load_dataset(harvested, cache_dir=cache_dir)
    feats = GraphFeaturizer.fit(loaded.graphs, [0]).transform(loaded.graphs)
    samples = GraphSamples(loaded.samples, feats, np.zeros((loaded.samples.height, 1), np.float32))
    seen = []
    for idx in samples.run_batches(2, shuffle=True, seed=3):
        runs = set(samples.run_of[idx])
        assert len(runs) <= 2
        for r in runs:
            assert set(np.flatnonzero(samples.run_of == r)) <= set(idx)
        seen += list(idx)
    assert sorted(seen) == list(range(len(samples)))
    # Two ranks take disjoint shares of equal length (padding repeats runs).
    shares = [
        list(samples.run_batches(1, shuffle=True, seed=1, rank=r, world_size=2)) for r in (0, 1)
    ]
    assert len(shares[0]) == len(shares[1])


def test_second_load_comes_from_the_cache(harvested, cache_dir, monkeypatch):
    first = load_dataset(harvested, cache_dir=cache_dir)
    assert not first.from_cache

    def fail(*args, **kwargs):
        raise AssertionError("the tables were read again")

    monkeypatch.setattr(data_module, "load_samples", fail)
    second = load_dataset(harvested, cache_dir=cache_dir)
    assert second.from_cache and second.key == first.key
    assert second.samples.equals(first.samples)
    for name, array in first.graphs.arrays().items():
        assert np.array_equal(array, second.graphs.arrays()[name], equal_nan=True), name
    assert second.graphs.meta() == first.graphs.meta()
    # The entry holds no pickle: safetensors, JSON and Parquet only.
    entry = Path(cache_dir) / first.key
    assert sorted(p.name for p in entry.iterdir()) == [
        "done",
        "graphs.json",
        "graphs.safetensors",
        "samples.parquet",
    ]


def _same(a, b) -> bool:
    return a.samples.equals(b.samples) and all(
        np.array_equal(array, b.graphs.arrays()[name], equal_nan=True)
        for name, array in a.graphs.arrays().items()
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated: a safetensors traceback naming no file
        lambda data: data[:-8] + bytes(b ^ 0x55 for b in data[-8:]),  # same size, other values
    ],
    ids=["truncated", "altered"],
)
def test_a_damaged_cache_entry_is_made_again(harvested, cache_dir, damage):
    """A damaged graphs.safetensors in an entry stopped python -m train with the library's
    'incomplete metadata' traceback; altered inside its data it loaded other graph values
    without a word."""
    first = load_dataset(harvested, cache_dir=cache_dir)
    stored = Path(cache_dir) / first.key / "graphs.safetensors"
    stored.write_bytes(damage(stored.read_bytes()))
    again = load_dataset(harvested, cache_dir=cache_dir)
    assert not again.from_cache and _same(again, first)
    third = load_dataset(harvested, cache_dir=cache_dir)  # the entry was made again, whole
    assert third.from_cache and _same(third, first)
    assert [p.name for p in Path(cache_dir).iterdir()] == [first.key]  # nothing left aside


def test_key_changes_with_a_new_file_and_featurizer_version(harvested, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    before = cache_key(str(copy), level="ttgir", harvests="latest")
    assert cache_key(str(copy), level="ttgir", harvests="latest") == before
    assert cache_key(str(copy), level="ttir", harvests="latest") != before
    assert cache_key(str(copy), level="ttgir", harvests="latest", featurizer_version=999) != before
    # what load_samples returns changed (today: pooling by timer, refusals) with the featurizer
    # unchanged: an entry of the older code must not be served
    assert cache_key(str(copy), level="ttgir", harvests="latest", samples_version=1) != before
    one = next(Path(copy, "measurements").rglob("*.parquet"))
    pq.write_table(pq.read_table(one), one.with_name("part-extra.parquet"))
    assert cache_key(str(copy), level="ttgir", harvests="latest") != before


def test_an_entry_made_by_other_code_is_not_served(harvested, cache_dir, monkeypatch):
    """SAMPLES_VERSION and FEATURIZER_VERSION are bumped by hand; a reader or load_samples fix
    that forgot to (``--harvests all`` refusing runs timed in two ways) left entries made by
    the older code served, unchanged, after the upgrade."""
    first = load_dataset(harvested, cache_dir=cache_dir)
    monkeypatch.setattr(data_module, "code_digest", lambda: "other code")
    again = load_dataset(harvested, cache_dir=cache_dir)
    assert not again.from_cache and again.key != first.key


def test_code_digest_covers_the_reader_and_the_featurizer(tmp_path):
    """Every source an entry comes from is hashed: the gated reader (schemas) and the train
    modules that make samples and encoded graphs."""
    from train.data import ENTRY_SOURCES, code_digest

    root = Path(data_module.__file__).resolve().parent.parent
    for source in ("schemas/reader.py", "schemas/harvests.py", "train/tables.py", "train/graphs.py"):
        assert any((root / source).is_relative_to(root / s) for s in ENTRY_SOURCES), source
    assert len(code_digest()) == 64 and code_digest() == code_digest()


def test_new_file_is_not_served_stale(harvested, tmp_path, cache_dir):
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    first = load_dataset(str(copy), cache_dir=cache_dir)
    # Drop one run's commit: its measurements must disappear from the next load.
    runs_file = next(Path(copy, "runs").rglob("*.parquet"))
    table = pq.read_table(runs_file)
    pq.write_table(table.slice(1), runs_file)
    again = load_dataset(str(copy), cache_dir=cache_dir)
    assert not again.from_cache and again.key != first.key
    assert again.samples.height < first.samples.height


def test_a_file_rewritten_keeping_its_name_size_and_mtime_is_not_served_stale(harvested, tmp_path, cache_dir):
    """Labels rewritten in place at the same size, the mtime set back (`cp -p` of a same-size
    file over one, an edit then `touch -r`): the key named files by path, size and mtime, so
    the entry of the old labels was served and training learned them without a word."""
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    victim = next(Path(copy, "measurements").rglob("*.parquet"))
    make_room(victim)
    first = load_dataset(str(copy), cache_dir=cache_dir)
    rows = pq.read_table(victim)
    column = rows.schema.get_field_index("median_ms")
    doubled = pc.multiply(rows.column(column), 2.0)
    rewrite_keeping_size_and_mtime(victim, rows.set_column(column, "median_ms", doubled))
    again = load_dataset(str(copy), cache_dir=cache_dir)
    assert not again.from_cache and again.key != first.key
    assert again.samples["median_ms"].sum() > first.samples["median_ms"].sum()


def test_files_changed_while_read_leave_no_entry(harvested, tmp_path, cache_dir, monkeypatch):
    """The key was taken before the tables were read: a runs file that went while they were
    read (moved aside, later back) left an entry keyed by every file but holding the runs of
    the others, and the next load served it, runs short, without a word."""
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    whole = load_dataset(str(copy), use_cache=False)
    runs_file = next(Path(copy, "runs").rglob("*.parquet"))
    aside = tmp_path / "aside.parquet"
    real_load_samples = data_module.load_samples

    def load_after_a_file_went(*args, **kwargs):
        shutil.move(runs_file, aside)  # after the key was taken, before the tables are read
        return real_load_samples(*args, **kwargs)

    monkeypatch.setattr(data_module, "load_samples", load_after_a_file_went)
    short = load_dataset(str(copy), cache_dir=cache_dir)
    assert short.samples.height < whole.samples.height
    shutil.move(aside, runs_file)  # back: the files the key was taken of
    monkeypatch.setattr(data_module, "load_samples", real_load_samples)
    again = load_dataset(str(copy), cache_dir=cache_dir)
    assert again.samples.height == whole.samples.height


@pytest.mark.parametrize("table", ["ir_nodes", "ir_edges"])
def test_a_dataset_that_lost_ir_files_is_refused(harvested, tmp_path, cache_dir, table):
    """Its graphs would be missing or edgeless, and configs without a graph look like configs
    without IR: training used to go on (``loaded N samples, 0 graphs``)."""
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    for victim in Path(copy, table, "level=ttgir").glob("*.parquet"):
        victim.unlink()
    with pytest.raises(DatasetError, match=f"the ttgir IR is incomplete: ir_graphs: .* whose {table} rows"):
        load_dataset(str(copy), cache_dir=cache_dir)
    load_dataset(str(copy), level="ttir", cache_dir=cache_dir)  # the other level is whole


@pytest.mark.parametrize("table", ["ir_nodes", "ir_edges", "ir_graphs"])
def test_a_dataset_that_lost_an_ir_table_is_refused(harvested, tmp_path, cache_dir, table):
    """Without the ir_nodes directory every graph was read empty (its edges too) and training
    went on with 0 graphs; without ir_graphs the samples' graph counts were null."""
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    shutil.rmtree(copy / table)
    with pytest.raises(DatasetError, match=f"measurements name .* ttgir graph.*{table}"):
        load_dataset(str(copy), cache_dir=cache_dir)


def test_missing_dataset_is_refused(tmp_path, cache_dir):
    with pytest.raises(Exception, match="runs"):
        load_dataset(str(tmp_path / "nowhere"), cache_dir=cache_dir)


def test_cache_key_names_the_dataset(harvested, tmp_path):
    # Two empty directories have the same (empty) file fingerprint; their keys must differ,
    # so a cached entry never serves another dataset.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    key_a = cache_key(str(tmp_path / "a"), level="ttgir", harvests="latest")
    assert key_a != cache_key(str(tmp_path / "b"), level="ttgir", harvests="latest")
    assert key_a == cache_key(str(tmp_path / "a") + "/", level="ttgir", harvests="latest")
    copy = tmp_path / "copy"
    shutil.copytree(harvested, copy)
    assert cache_key(str(copy), level="ttgir", harvests="latest") != cache_key(
        harvested, level="ttgir", harvests="latest"
    )
