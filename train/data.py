"""Dataset directory -> training samples: one per measurement, graphs stored once per ir_id.

:func:`load_dataset` reads the samples table (:func:`train.tables.load_samples`) and the IR
tables of one level through the gated reader and encodes the graphs (:mod:`train.graphs`).
The result is cached on disk under a key of the dataset's location and content (every Parquet
file's path, size, mtime and storage version: a local file's ctime and inode), :data:`train.graphs.FEATURIZER_VERSION`, :data:`SAMPLES_VERSION`,
:data:`schemas.SCHEMA_VERSION`, :func:`code_digest` (the source of the code that makes an entry)
and the options, as safetensors + JSON + Parquet: nothing is pickled, and a changed dataset,
featurizer or reader is never served stale.

:class:`GraphSamples` holds the featurized graphs once and per-sample rows (graph index, side
features, targets); :meth:`GraphSamples.collate` batches samples so that a graph shared by
many configs goes through the GNN once per batch, or, for the config-sensitive encoder
(``config_sensitive=True``), once per sample with per-config node features: each node's
numeric features relative to the mean of the same operation over the run's configs (the op
that grows with a config's tile shows it), and whether that operation varies at all within
the run (a config-sensitive node).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs
import torch
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file
from torch_geometric.data import Data

from schemas import SCHEMA_VERSION, DatasetError, TableNotFoundError, read_table
from schemas.check import GRAPH_SIZES, graph_size_problems
from schemas.reader import stable
from schemas.storage import list_files, resolve
from schemas.tables import IR_EDGES, IR_NODES
from train.features import run_relative
from train.graphs import (
    CATEGORICAL,
    EDGE_COLUMNS,
    FEATURIZER_VERSION,
    NODE_COLUMNS,
    EncodedGraphs,
    FeaturizedGraphs,
    encode_graphs,
)
from train.settings import cache_root
from train.tables import load_samples

TABLES_READ = ("runs", "measurements", "ir_graphs", "ir_nodes", "ir_edges")
OP_COLUMN = CATEGORICAL.index("op_name")


@dataclass(frozen=True)
class LoadedDataset:
    """What :func:`load_dataset` returns: the samples table, the encoded graphs of its level,
    the cache key and whether the cache served it."""

    samples: pl.DataFrame
    graphs: EncodedGraphs
    key: str
    from_cache: bool

    def graph_indices(self, frame: pl.DataFrame) -> np.ndarray:
        """Indices into ``graphs`` of the IRs the rows of ``frame`` compiled to (sorted, each
        once): what :meth:`train.graphs.GraphFeaturizer.fit` takes for a training split."""
        index = self.graphs.index_of()
        wanted = {index[i] for i in frame["ir_id"].drop_nulls().to_list() if i in index}
        return np.array(sorted(wanted), dtype=np.int64)


def dataset_fingerprint(data: str) -> list[tuple[str, int, int, str]]:
    """(path relative to the dataset root, size in bytes, mtime in ns, storage version: a local
    file's ctime and inode, an object's ETag or generation; :attr:`schemas.storage.FileStat.identity`)
    of every visible Parquet file of the tables training reads, sorted. Any added, removed or
    rewritten file changes it, one written over in place with its size and mtime kept (``cp
    -p``, ``touch -r``, an object uploaded again) included."""
    loc = resolve(data)
    entries = []
    for table in TABLES_READ:
        try:
            files = stable(lambda t=table: list_files(loc, t))
        except TableNotFoundError:
            continue
        entries.extend((os.path.relpath(f.path, loc.root), *f.identity) for f in files)
    return sorted(entries)


SAMPLES_VERSION = 2
"""Bump whenever what :func:`train.tables.load_samples` returns for the same files changes (how
the reader chooses or pools harvests, what it refuses): part of the processed-cache key, so an
entry made by older code is never served. Unlike :data:`train.graphs.FEATURIZER_VERSION` it is
not recorded in checkpoints. 2: pooled samples of one timer only; runs timed in different ways,
NaN latencies and unknown statuses refused."""


ENTRY_SOURCES = ("schemas", "train/data.py", "train/tables.py", "train/graphs.py")
"""What makes a cache entry, relative to the repository root: every module of ``schemas`` (the
gated reader: which files, rows and harvests it serves) and the train modules that turn its
tables into samples and encoded graphs."""
ENTRY_LIBRARIES = ("polars", "pyarrow", "numpy")
"""Libraries whose versions are part of :func:`code_digest`: they compute the entry's values."""


@functools.cache
def code_digest() -> str:
    """Hex digest of the source of :data:`ENTRY_SOURCES` and the versions of
    :data:`ENTRY_LIBRARIES`: part of the cache key, so that an entry made by other code is never
    served. :data:`SAMPLES_VERSION` and :data:`train.graphs.FEATURIZER_VERSION` are bumped by
    hand and were not always (``--harvests all`` refusing a run timed in two ways left
    SAMPLES_VERSION at 2, and entries made before it went on serving such runs)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for source in ENTRY_SOURCES:
        path = root / source
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes() + b"\0")
    for library in ENTRY_LIBRARIES:
        digest.update(f"{library}=={importlib.metadata.version(library)}\0".encode())
    return digest.hexdigest()


def cache_key(
    data: str,
    *,
    level: str,
    harvests: str,
    featurizer_version: int = FEATURIZER_VERSION,
    samples_version: int = SAMPLES_VERSION,
    code: str | None = None,
) -> str:
    """Hex digest of the dataset's identity (its resolved location: two datasets whose files
    look alike, e.g. two empty directories, never share an entry), its fingerprint, the
    featurizer and samples versions, the schema version, the code that makes an entry
    (``code``, default :func:`code_digest`) and the load options."""
    loc = resolve(data)
    scheme = data.split("://", 1)[0] if "://" in data and not data.startswith("file://") else "file"
    payload = {
        "dataset": f"{scheme}://{loc.root}",
        "files": dataset_fingerprint(data),
        "featurizer_version": featurizer_version,
        "samples_version": samples_version,
        "schema_version": SCHEMA_VERSION,
        "code": code_digest() if code is None else code,
        "level": level,
        "harvests": harvests,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def read_ir_tables(data: str, level: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``ir_nodes`` and ``ir_edges`` rows of ``level`` (an empty frame for a table the dataset
    does not have, e.g. every compile failed: :func:`require_whole_graphs` refuses that when
    samples name graphs)."""
    return (
        _ir_rows(data, "ir_nodes", IR_NODES.empty_table().select(list(NODE_COLUMNS)), level),
        _ir_rows(data, "ir_edges", IR_EDGES.empty_table().select(list(EDGE_COLUMNS)), level),
    )


def _ir_rows(data: str, table: str, empty: pa.Table, level: str) -> pl.DataFrame:
    try:
        rows = read_table(data, table, columns=empty.column_names, filters=[("level", "=", level)])
    except TableNotFoundError:
        rows = empty
    return _frame(rows)


IR_TABLES = ("ir_graphs", "ir_nodes", "ir_edges")


def require_whole_graphs(data: str, level: str, samples: pl.DataFrame, nodes: pl.DataFrame, edges: pl.DataFrame) -> None:
    """Refuse (DatasetError) samples whose ``level`` graph is missing or lacks nodes or edges
    its ``ir_graphs`` row counts: a lost IR file would otherwise make their configs look like
    configs without IR (no graph), and training would go on without a word. So would a lost
    IR table: samples that name graphs need all three."""
    referenced = samples["ir_id"].drop_nulls().unique()
    if referenced.is_empty():  # a dataset storing no IR, e.g. every compile failed
        return
    loc = resolve(data)
    lost = [
        t for t in IR_TABLES if loc.fs.get_file_info(loc.table_dir(t)).type != pafs.FileType.Directory
    ]
    if lost:
        raise DatasetError(
            f"{data}: the {level} IR is incomplete: measurements name {len(referenced)} {level} graph(s), "
            f"but the dataset has no {' and no '.join(lost)} table (table directory not found). "
            f"`python -m schemas check {data}` names the problems; restore the table's files"
        )
    columns = ["ir_id", *(count for count, _, _ in GRAPH_SIZES)]
    graphs = read_table(data, "ir_graphs", columns=columns, filters=[("level", "=", level)])
    known = set(graphs.column("ir_id").to_pylist())
    problems = graph_size_problems(graphs, nodes.to_arrow(), edges.to_arrow(), referenced.to_arrow())
    absent = [ir_id for ir_id in referenced.to_list() if ir_id not in known]
    if absent:
        problems.insert(0, f"{len(absent)} {level} graph(s) that measurements name are not in ir_graphs, e.g. ir_id={absent[0]}")
    if problems:
        raise DatasetError(
            f"{data}: the {level} IR is incomplete: {'; '.join(problems)}. `python -m schemas check {data}` "
            "names the problems; restore the files, or train with --level on an intact level"
        )


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def load_dataset(
    data: str,
    *,
    level: str = "ttgir",
    harvests: str = "latest",
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
) -> LoadedDataset:
    """Samples table + encoded graphs of ``data``, from the processed cache when it is current.

    ``cache_dir``: root of the processed cache (default :func:`train.settings.cache_root`);
    entries live in ``<cache_dir>/<key>/`` and appear by atomic rename. An entry whose files
    do not match the digests its ``done`` file records (truncated, altered, or written by
    older code) is discarded and made again.
    """
    key = cache_key(data, level=level, harvests=harvests)
    entry = Path(cache_dir if cache_dir is not None else cache_root()) / key
    if use_cache and (entry / "done").exists():
        cached = _read_entry(entry)
        if cached is not None:
            return LoadedDataset(cached[0], cached[1], key, True)
        _discard_entry(entry)
    samples = load_samples(data, level=level, harvests=harvests)
    nodes, edges = read_ir_tables(data, level)
    require_whole_graphs(data, level, samples, nodes, edges)
    graphs = encode_graphs(nodes, edges)
    # Files that changed while they were read (a harvest committing into the dataset, a
    # compaction) made what was read another state than the key names: no entry then, or a
    # later state with the key's files would be served rows of the others.
    if use_cache and cache_key(data, level=level, harvests=harvests) == key:
        _write_entry(entry, samples, graphs)
    return LoadedDataset(samples, graphs, key, False)


ENTRY_FILES = ("samples.parquet", "graphs.safetensors", "graphs.json")
"""The files of a cache entry; its ``done`` file records their SHA-256 (:func:`_write_entry`)."""


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_entry(entry: Path) -> tuple[pl.DataFrame, EncodedGraphs] | None:
    """The samples and graphs of a cache entry, or None when its files are not the ones its
    ``done`` file records (a truncated or altered copy would fail to load with a library's
    traceback naming no file, or, damaged inside its data, load wrong values without a word)."""
    try:
        recorded = json.loads((entry / "done").read_text())
        files = recorded["files"] if isinstance(recorded, dict) else None
        if not isinstance(files, dict) or any(
            files.get(name) != _file_digest(entry / name) for name in ENTRY_FILES
        ):
            return None
        arrays = load_file(str(entry / "graphs.safetensors"))
        meta = json.loads((entry / "graphs.json").read_text())
        return pl.read_parquet(entry / "samples.parquet"), EncodedGraphs.from_parts(arrays, meta)
    except (OSError, ValueError, KeyError, TypeError, pl.exceptions.PolarsError, SafetensorError):
        return None


def _discard_entry(entry: Path) -> None:
    """Move a damaged entry aside (one rename: a concurrent reader sees it whole or not at all)
    and delete it, so that :func:`_write_entry` can put a sound one in its place."""
    aside = Path(tempfile.mkdtemp(prefix=f".{entry.name}.discarded.", dir=entry.parent))
    with contextlib.suppress(FileNotFoundError):  # another process discarded it first
        os.replace(entry, aside / entry.name)
    shutil.rmtree(aside, ignore_errors=True)


def _write_entry(entry: Path, samples: pl.DataFrame, graphs: EncodedGraphs) -> None:
    """Write the cache entry into a temporary sibling, then rename it into place (a concurrent
    writer of the same key loses the rename harmlessly: its content is identical)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    try:
        samples.write_parquet(tmp / "samples.parquet")
        save_file(
            {k: np.ascontiguousarray(v) for k, v in graphs.arrays().items()},
            str(tmp / "graphs.safetensors"),
        )
        (tmp / "graphs.json").write_text(json.dumps(graphs.meta()))
        digests = {name: _file_digest(tmp / name) for name in ENTRY_FILES}
        (tmp / "done").write_text(json.dumps({"featurizer_version": FEATURIZER_VERSION, "files": digests}))
        try:
            os.rename(tmp, entry)
        except OSError:
            if not (entry / "done").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Batch:
    """A training batch. Graph tensors cover the batch's distinct graphs only.

    x_cat int64 [N, C]; x_num float32 [N, F]; edge_index int64 [2, E] (batch-global node
    indices); edge_type, edge_pos int64 [E]; node_graph int64 [N] (graph of each node, in
    [0, n_graphs)); sample_graph int64 [B] (graph of each sample, -1 when the config has no
    graph, e.g. compile failed); tab float32 [B, T] side features; log_latency float32 [B]
    (NaN unless valid); valid bool [B]; group int64 [B] (run of each sample, batch-local);
    tie_tol float32 [B] (log-latency half-spread of the sample's timing, for near-ties).
    In a config-sensitive batch every sample with a graph has its own copy of it (``n_graphs``
    = samples with a graph) and ``node_rel`` / ``node_sensitive`` are set.
    """

    x_cat: torch.Tensor
    x_num: torch.Tensor
    edge_index: torch.Tensor
    edge_type: torch.Tensor
    edge_pos: torch.Tensor
    node_graph: torch.Tensor
    n_graphs: int
    sample_graph: torch.Tensor
    tab: torch.Tensor
    log_latency: torch.Tensor
    valid: torch.Tensor
    group: torch.Tensor
    tie_tol: torch.Tensor
    prior: torch.Tensor | None = None
    """float32 [B]: the analytic prior's score (ln units, run-centered); None without one."""
    node_rel: torch.Tensor | None = None
    """float32 [N, F] (config-sensitive batches): each node's numeric values minus the mean of
    the same op over its run's graphs; None otherwise."""
    node_sensitive: torch.Tensor | None = None
    """float32 [N] (config-sensitive batches): 1 where the node's op varies within the run."""

    def to(self, device: torch.device | str) -> Batch:
        moved = {
            k: (v.to(device) if isinstance(v, torch.Tensor) else v)
            for k, v in self.__dict__.items()
        }
        return Batch(**moved)


class GraphSamples:
    """Samples of one split: per-measurement rows pointing into a shared graph store.

    ``frame``: rows of the samples table (its order is the sample order); ``graphs``: the
    featurized graphs (any superset of the graphs the rows use); ``tab``: float32
    [len(frame), T] side features (e.g. :class:`train.features.TabularFeatures` output);
    ``prior``: float64 [len(frame)] analytic prior score per sample (ln units; centered per
    run here), or None; ``config_sensitive``: batches carry one graph copy per sample with
    run-relative node features (see the module docstring), computed from the rows' graphs
    only (no labels).
    """

    def __init__(
        self,
        frame: pl.DataFrame,
        graphs: FeaturizedGraphs,
        tab: np.ndarray,
        *,
        prior: np.ndarray | None = None,
        config_sensitive: bool = False,
    ) -> None:
        if len(tab) != frame.height:
            raise ValueError(f"tab has {len(tab)} rows but the frame {frame.height}")
        self.frame = frame
        self.graphs = graphs
        index = {ir_id: i for i, ir_id in enumerate(graphs.ir_ids)}
        self.graph_index = np.array(
            [index.get(i, -1) if i is not None else -1 for i in frame["ir_id"].to_list()],
            dtype=np.int64,
        )
        self._tab = np.ascontiguousarray(tab, dtype=np.float32)
        self._valid = frame["valid"].fill_null(False).to_numpy().astype(bool)
        self._log_latency = (
            frame["log_latency"].fill_null(float("nan")).to_numpy().astype(np.float32)
        )
        spread = (frame["p80_ms"].log() - frame["p20_ms"].log()).fill_null(0.0).fill_nan(0.0) / 2
        self._tie_tol = spread.clip(lower_bound=0.0).to_numpy().astype(np.float32)
        self.tab = torch.from_numpy(self._tab)
        self.valid = torch.from_numpy(self._valid)
        self.log_latency = torch.from_numpy(self._log_latency)
        self.tie_tol = torch.from_numpy(self._tie_tol)
        runs = frame["run_id"].to_numpy()
        self.run_ids, self.run_of = np.unique(runs, return_inverse=True)
        # One stable sort, split at run boundaries: linear in samples (not runs x samples).
        order = np.argsort(self.run_of, kind="stable")
        bounds = np.cumsum(np.bincount(self.run_of, minlength=len(self.run_ids)))[:-1]
        self.run_members = np.split(order, bounds)
        self._x_cat = torch.from_numpy(graphs.x_cat)
        self._x_num = torch.from_numpy(graphs.x_num)
        self._edge_index = torch.from_numpy(graphs.edge_index)
        self._edge_type = torch.from_numpy(graphs.edge_type)
        self._edge_pos = torch.from_numpy(graphs.edge_pos)
        self._prior = None
        if prior is not None:
            values = np.nan_to_num(np.asarray(prior, dtype=np.float64), nan=0.0)
            if values.shape != (frame.height,):
                raise ValueError(f"prior has shape {values.shape}; the frame {frame.height} rows")
            self._prior = run_relative(values[:, None], runs)[:, 0].astype(np.float32)
        self.config_sensitive = config_sensitive
        if config_sensitive:
            self._op_stats = RunOpStats.of(self.run_of, self.graph_index, graphs)

    def __len__(self) -> int:
        return self.frame.height

    def __getitem__(self, i: int) -> Data:
        """Sample ``i`` as a ``torch_geometric.data.Data`` (x_cat, x_num, edge_index,
        edge_type, edge_pos, tab [1, T], y = log latency, valid); for inspection and custom
        loops (training batches use :meth:`collate`, which shares graphs)."""
        g = int(self.graph_index[i])
        n0, n1 = (self.graphs.node_ptr[g], self.graphs.node_ptr[g + 1]) if g >= 0 else (0, 0)
        e0, e1 = (self.graphs.edge_ptr[g], self.graphs.edge_ptr[g + 1]) if g >= 0 else (0, 0)
        return Data(
            x_cat=self._x_cat[n0:n1],
            x_num=self._x_num[n0:n1],
            edge_index=self._edge_index[:, e0:e1],
            edge_type=self._edge_type[e0:e1],
            edge_pos=self._edge_pos[e0:e1],
            tab=self.tab[i : i + 1],
            y=self.log_latency[i : i + 1],
            valid=self.valid[i : i + 1],
            num_nodes=int(n1 - n0),
        )

    def collate(self, indices: Sequence[int] | np.ndarray) -> Batch:
        """Batch the samples ``indices``: each distinct graph among them appears once, or, when
        ``config_sensitive``, once per sample with its run-relative node features."""
        idx = np.asarray(indices, dtype=np.int64)
        g_of = self.graph_index[idx]
        has = g_of >= 0
        if self.config_sensitive:
            instances = g_of[has]
            sample_graph = np.arange(len(instances))
        else:
            instances, sample_graph = np.unique(g_of[has], return_inverse=True)
        full_sample_graph = np.full(len(idx), -1, dtype=np.int64)
        full_sample_graph[has] = sample_graph
        ptr, eptr = self.graphs.node_ptr, self.graphs.edge_ptr
        n_nodes = ptr[instances + 1] - ptr[instances]
        n_edges = eptr[instances + 1] - eptr[instances]
        node_rows = _ranges(ptr[instances], n_nodes)
        edge_rows = _ranges(eptr[instances], n_edges)
        offsets = np.repeat(np.cumsum(n_nodes) - n_nodes, n_edges)
        _, group = np.unique(self.run_of[idx], return_inverse=True)
        g = self.graphs
        node_rel = node_sensitive = None
        if self.config_sensitive:
            node_runs = np.repeat(self.run_of[idx[has]], n_nodes)
            rel, sensitive = self._op_stats.lookup(node_runs, node_rows, g)
            node_rel, node_sensitive = torch.from_numpy(rel), torch.from_numpy(sensitive)
        # Gathers run in numpy: torch's indexing kernels cost ~100x more per call here (thread
        # pool start-up on small tensors), and collation must outpace the training step.
        return Batch(
            x_cat=torch.from_numpy(g.x_cat[node_rows]),
            x_num=torch.from_numpy(g.x_num[node_rows]),
            edge_index=torch.from_numpy(g.edge_index[:, edge_rows] + offsets),
            edge_type=torch.from_numpy(g.edge_type[edge_rows]),
            edge_pos=torch.from_numpy(g.edge_pos[edge_rows]),
            node_graph=torch.from_numpy(np.repeat(np.arange(len(instances)), n_nodes)),
            n_graphs=len(instances),
            sample_graph=torch.from_numpy(full_sample_graph),
            tab=torch.from_numpy(self._tab[idx]),
            log_latency=torch.from_numpy(self._log_latency[idx]),
            valid=torch.from_numpy(self._valid[idx]),
            group=torch.from_numpy(group.astype(np.int64)),
            tie_tol=torch.from_numpy(self._tie_tol[idx]),
            prior=None if self._prior is None else torch.from_numpy(self._prior[idx]),
            node_rel=node_rel,
            node_sensitive=node_sensitive,
        )

    def run_batches(
        self,
        runs_per_batch: int,
        *,
        shuffle: bool,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> Iterator[np.ndarray]:
        """Sample indices, whole runs at a time (ranking pairs never cross runs).

        With ``world_size`` > 1 the run order is padded to a multiple of ``world_size`` and
        rank ``rank`` takes every world_size-th run, so every rank runs the same number of
        steps (as DistributedSampler does).
        """
        order = (
            np.random.default_rng(seed).permutation(len(self.run_members))
            if shuffle
            else np.arange(len(self.run_members))
        )
        if world_size > 1 and len(order):
            pad = (-len(order)) % world_size
            order = np.concatenate([order, order[:pad]])[rank::world_size]
        for start in range(0, len(order), runs_per_batch):
            yield np.concatenate(
                [self.run_members[r] for r in order[start : start + runs_per_batch]]
            )


@dataclass(frozen=True)
class RunOpStats:
    """Per (run, op) statistics of node features over the distinct graphs a run's samples use.

    ``keys`` int64 [K] sorted: run index * ``n_codes`` + op code (the featurized ``op_name``
    vocabulary index); ``mean`` float32 [K, F]: mean numeric value (the standardized half of
    ``x_num``) of the op's nodes in the run; ``sensitive`` float32 [K]: 1 when any of those
    values differs between the op's nodes of the run (the op changes with the config).
    """

    keys: np.ndarray
    mean: np.ndarray
    sensitive: np.ndarray
    n_codes: int

    @classmethod
    def of(
        cls, run_of: np.ndarray, graph_index: np.ndarray, graphs: FeaturizedGraphs
    ) -> RunOpStats:
        """Statistics of every run of the samples (``run_of`` / ``graph_index``, one per
        sample) over the distinct graphs each run's samples use."""
        op = graphs.x_cat[:, OP_COLUMN]
        n_codes = int(op.max()) + 1 if len(op) else 1
        width = graphs.x_num.shape[1] // 2
        used = graph_index >= 0
        pairs = np.unique(np.stack([run_of[used], graph_index[used]], axis=1), axis=0)
        if len(pairs) == 0:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, np.zeros((0, width), np.float32), np.zeros(0, np.float32), n_codes)
        ptr = graphs.node_ptr
        counts = ptr[pairs[:, 1] + 1] - ptr[pairs[:, 1]]
        rows = _ranges(ptr[pairs[:, 1]], counts)
        keys = np.repeat(pairs[:, 0], counts) * n_codes + op[rows]
        unique, inverse = np.unique(keys, return_inverse=True)
        values = graphs.x_num[rows, :width].astype(np.float64)
        sums = np.zeros((len(unique), width))
        np.add.at(sums, inverse, values)
        highest = np.full((len(unique), width), -np.inf)
        lowest = np.full((len(unique), width), np.inf)
        np.maximum.at(highest, inverse, values)
        np.minimum.at(lowest, inverse, values)
        mean = sums / np.bincount(inverse)[:, None]
        sensitive = ((highest - lowest) > 1e-6).any(axis=1)
        return cls(unique, mean.astype(np.float32), sensitive.astype(np.float32), n_codes)

    def lookup(
        self, node_runs: np.ndarray, node_rows: np.ndarray, graphs: FeaturizedGraphs
    ) -> tuple[np.ndarray, np.ndarray]:
        """(node_rel float32 [N, F], node_sensitive float32 [N]) for graph rows ``node_rows``
        placed in runs ``node_runs``."""
        width = graphs.x_num.shape[1] // 2
        keys = node_runs * self.n_codes + np.minimum(
            graphs.x_cat[node_rows, OP_COLUMN], self.n_codes - 1
        )
        position = np.clip(np.searchsorted(self.keys, keys), 0, max(len(self.keys) - 1, 0))
        found = self.keys[position] == keys if len(self.keys) else np.zeros(len(keys), dtype=bool)
        values = graphs.x_num[node_rows, :width]
        mean = self.mean[position] if len(self.keys) else np.zeros_like(values)
        rel = np.where(found[:, None], values - mean, 0.0).astype(np.float32)
        sensitive = np.where(found, self.sensitive[position] if len(self.keys) else 0.0, 0.0)
        return rel, sensitive.astype(np.float32)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + n) for each (s, n), vectorized."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(total, dtype=np.int64) + offsets
