"""The experiment: splits, neural models and baselines per seed, metrics, checkpoint, report.

:func:`run_experiment` is what ``python -m train`` runs. For every split kind asked for and
every seed it draws a split (:func:`train.splits.assign_splits`, runs kept whole), fits the
tabular and graph featurizers on the training runs only (identical-program configs collapsed:
:func:`train.tables.collapse_identical`), trains each neural model (early stopping on the
validation runs) and fits the baselines on the same training runs, then scores every model on
the training, validation and test runs (:func:`train.metrics.evaluate`; train beside val/test
shows overfitting). With ``refit`` every model is then fitted again on the training and
validation runs and judged on the test runs (:func:`refit_gnn`, :func:`judge_baselines`). With
``final`` it then trains one model on every run of the dataset (:func:`train_final`), the one
to ship.

Outputs in ``out`` (checked before any work; layout: :mod:`train.layout`), built in a hidden
sibling directory and swapped in whole at the end (:mod:`train.staging`), so an interrupted or
failed run leaves ``out`` as it was:
``splits.parquet`` (kind, seed, run_id, split), ``checkpoints/<model>/<kind>/seed-<N>/`` (every
evaluation model, for :mod:`train.replay`), ``checkpoint/`` (the final model with ``final``;
otherwise the first split kind's seed-0 model of the first neural model) and what
:func:`train.report.write_report` writes (metrics.json, report.md, plots).
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
import torch.distributed as dist

from train.baselines import BASELINES
from train.baselines.analytic import analytic_prior
from train.baselines.compare import evaluate_baselines
from train.checkpoint import Checkpoint, save_checkpoint, seen_facts
from train.clusters import (
    DEFAULT_DISTANCE,
    cluster_families,
    family_op_sets,
    nearest_training_similarity,
)
from train.data import GraphSamples, LoadedDataset, load_dataset
from train.features import TabularFeatures
from train.fit import TrainConfig, predict_samples, train_model
from train.graphs import FeaturizedGraphs, GraphFeaturizer
from train.layout import SHIPPED, SPLITS_FILE, out_problem, seed_checkpoint_dir
from train.losses import RANKING_LOSSES
from train.model import ModelConfig
from train.report import ModelResult, write_report
from train.settings import cache_location
from train.splits import SPLIT_KINDS, assign_splits, split_digest, split_frame, val_into_train
from train.staging import out_refusal, recover_stale, staged_out
from train.tables import collapse_identical, ranked_runs

NEURAL_MODES: dict[str, str] = {"gnn": "config", "gnn-plain": "plain", "mlp": "none"}
"""Neural models by name -> graph mode (:data:`train.model.GRAPH_MODES`): ``gnn`` the
config-sensitive graph encoder, ``gnn-plain`` the config-independent one (ablation), ``mlp``
the same network without a graph branch (what the IR graphs add)."""
GNN = "gnn"
SIDE_MLP = "mlp"
NEURAL = tuple(NEURAL_MODES)
MODELS: tuple[str, ...] = (*NEURAL, *BASELINES)
DEFAULT_MODELS: tuple[str, ...] = ("gnn", "mlp", "tabular", "analytic", "default", "random")
PARTITIONS = ("train", "val", "test")
"""Every model is judged on all three: train next to val/test shows how much it overfits."""

DEFAULT_SEEDS = 5
CPU_THREADS = 1
"""torch intra-op threads per training process on CPU when ``--threads`` is not given.

Measured with ``python -m train.bench --threads 1,2`` (docs/training.md, "Speed"): the batches
are small graphs (a few thousand nodes, hidden width 64), so intra-op parallelism costs more
in thread hand-offs than it gains, and on a loaded machine torch's default (one thread per
core) was several times slower than one thread. Scale out with processes (torchrun) instead."""


class UsageError(Exception):
    """A bad option or a dataset that cannot be trained on: ``python -m train`` prints the
    message on one line and exits 2."""


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything ``python -m train`` controls."""

    data: str
    out: str
    split: str = "family"
    """A split kind (:data:`train.splits.SPLIT_KINDS`) or several, comma-separated: every kind
    runs on the same seeds and gets its own tables in the report."""
    level: str = "ttgir"
    seeds: int = DEFAULT_SEEDS
    models: tuple[str, ...] = DEFAULT_MODELS
    harvests: str = "latest"
    val_fraction: float = 0.2
    test_fraction: float = 0.2
    cache_dir: str | None = None
    hidden: int = 64
    layers: int = 3
    dropout: float = 0.1
    threads: int | None = None
    """torch intra-op threads; None: :data:`CPU_THREADS` on CPU, torch's default on CUDA."""
    prior: bool = False
    """Neural models score = learned residual + the analytic rule's estimate."""
    collapse: bool = True
    """Train on one config per distinct program (:func:`train.tables.collapse_identical`)."""
    relative: bool = True
    """Give every model the run-relative copies of the config features (``rel:``)."""
    cluster_distance: float = DEFAULT_DISTANCE
    """Jaccard distance at which the ``cluster`` split cuts (:mod:`train.clusters`)."""
    final: bool = False
    """After the evaluation, train one model on every run and save it as ``out/checkpoint``."""
    final_model: str | None = None
    """Neural model :func:`train_final` trains (None: the best by mean test Kendall tau)."""
    exclude_families: tuple[str, ...] = ()
    """Families left out of everything (evaluation and final model): to check a shipped model
    on kernels it has never seen."""
    refit: bool = False
    """After each seed's models are fitted on its train runs (neural ones early-stopped on its
    val runs), fit them again on train + val (neural ones for the epoch count they stopped
    at) and judge and save those on the test runs (:func:`refit_parts`). Train and val
    figures stay those of the first fit, which never saw the val runs."""
    train: TrainConfig = field(default_factory=TrainConfig)

    @property
    def split_kinds(self) -> tuple[str, ...]:
        return tuple(k.strip() for k in self.split.split(",") if k.strip())


def check_config(config: ExperimentConfig) -> None:
    """Refuse bad options before any work starts (:class:`UsageError` naming the option)."""
    if "://" not in config.data and not Path(config.data).is_dir():
        raise UsageError(f"--data {config.data}: no such dataset directory")
    unknown = [m for m in config.models if m not in MODELS]
    if unknown:
        raise UsageError(
            f"--models: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}"
        )
    if not config.models:
        raise UsageError("--models: no model given")
    kinds = config.split_kinds
    bad = [k for k in kinds if k not in SPLIT_KINDS]
    if not kinds or bad:
        raise UsageError(
            f"--split {config.split!r}: choose one or more of {', '.join(SPLIT_KINDS)}"
        )
    for option, names in (("--models", tuple(config.models)), ("--split", kinds)):
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:  # each would count as more seeds and narrow the intervals
            raise UsageError(f"{option}: {', '.join(twice)} given twice")
    if not _device_usable(config.train.device):
        raise UsageError(
            f"--device {config.train.device}: not a device torch can use here (cpu, or cuda / "
            "cuda:N with a CUDA build of torch and that GPU)"
        )
    positive = {
        "--seeds": config.seeds,
        "--epochs": config.train.epochs,
        "--hidden": config.hidden,
        "--layers": config.layers,
        "--runs-per-batch": config.train.runs_per_batch,
        "--patience": config.train.patience,
    }
    for option, value in positive.items():
        if value < 1:
            raise UsageError(f"{option} must be >= 1, got {value}")
    if config.threads is not None and config.threads < 1:
        raise UsageError(f"--threads must be >= 1, got {config.threads}")
    if not (np.isfinite(config.train.lr) and config.train.lr > 0):
        raise UsageError(f"--lr must be a finite number > 0, got {config.train.lr}")
    if config.level not in ("ttgir", "ttir"):
        raise UsageError(f"--level must be ttgir or ttir, got {config.level!r}")
    if config.train.loss.ranking not in RANKING_LOSSES:
        raise UsageError(f"--loss must be one of {', '.join(RANKING_LOSSES)}")
    if config.final_model is not None and config.final_model not in NEURAL:
        raise UsageError(f"--final-model {config.final_model}: choose one of {', '.join(NEURAL)}")
    if config.final_model is not None and not config.final:  # it would ship another model
        raise UsageError(
            f"--final-model {config.final_model}: names the model --final trains; add --final"
        )
    if config.final and config.final_model is None and not _neural(config):
        raise UsageError(
            f"--final trains a neural model: add one of {', '.join(NEURAL)} to --models "
            "or name it with --final-model"
        )


def rows_key(samples: pl.DataFrame) -> str:
    """Hex digest of which measurements an experiment learnt from: every (run_id, config_id,
    harvest_id, status) of ``samples``, in sorted order. Unlike ``dataset_key`` it ignores
    the IR level, the file layout (compaction) and the featurizer, so two experiments on the
    same rows compare seed by seed (:mod:`train.compare`)."""
    rows = samples.select("run_id", "config_id", "harvest_id", "status").sort(
        "run_id", "config_id", "harvest_id"
    )
    digest = hashlib.sha256()
    for column in rows.columns:
        digest.update("\x1f".join(rows[column].cast(pl.String).fill_null("").to_list()).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()[:32]


def _device_usable(device: str) -> bool:
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        return False
    if parsed.type == "cuda":
        return torch.cuda.is_available() and (parsed.index or 0) < torch.cuda.device_count()
    return parsed.type == "cpu"


def probe_out(out: str) -> None:
    """Check the run can build ``out`` beside it and swap it in at the end (after cleaning up
    what killed runs into it left, :func:`train.staging.recover_stale`), before hours of
    training are lost to a read-only or mistyped output directory, or one holding files the
    swap would delete (:class:`UsageError` otherwise). ``out`` itself is not created."""
    recover_stale(out)
    problem = out_refusal(out)
    if problem is not None:
        raise UsageError(problem)


def probe_cache(cache_dir: str | None) -> None:
    """Check the processed-data cache root can be created and written (:class:`UsageError`
    naming the option or variable that set it otherwise): found only when the loaded dataset
    is written there, it used to stop the run with a traceback."""
    root, source = cache_location(cache_dir)
    problem = out_problem(root, source)
    if problem is not None:
        raise UsageError(f"{problem}; give --cache-dir a writable directory")


def _neural(config: ExperimentConfig) -> list[str]:
    return [m for m in config.models if m in NEURAL]


def _is_main() -> bool:
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def resolve_threads(config: ExperimentConfig) -> int | None:
    """The intra-op thread count to set (None: leave torch's): ``--threads``, else
    :data:`CPU_THREADS` when training on CPU."""
    if config.threads is not None:
        return config.threads
    return None if config.train.device.startswith("cuda") else CPU_THREADS


def exclude_families(loaded: LoadedDataset, families: Sequence[str]) -> LoadedDataset:
    """``loaded`` without the samples of ``families`` (:class:`UsageError` for a family the
    dataset does not have)."""
    if not families:
        return loaded
    known = set(loaded.samples["family"].unique().to_list())
    unknown = sorted(set(families) - known)
    if unknown:
        raise UsageError(
            f"--exclude-families: {', '.join(unknown)} not in the dataset "
            f"(it has {', '.join(sorted(known))})"
        )
    kept = loaded.samples.filter(~pl.col("family").is_in(list(families)))
    return replace(loaded, samples=kept)


def check_dataset(loaded: LoadedDataset, data: str) -> list[str]:
    """The rankable runs of ``loaded``; :class:`UsageError` when there is nothing to learn."""
    samples = loaded.samples
    if samples.is_empty():
        raise UsageError(f"--data {data}: the dataset has no committed measurements")
    valid = int(samples["valid"].sum())
    if valid == 0:
        raise UsageError(
            f"--data {data}: none of its {samples.height} configs ran ok (status ok with a "
            "positive median); there is no latency to learn"
        )
    rankable = ranked_runs(samples)
    if not rankable:
        raise UsageError(f"--data {data}: no run has two valid configs; nothing to rank")
    return rankable


def plan_splits(
    config: ExperimentConfig, samples: pl.DataFrame, clusters: Mapping[str, str] | None
) -> dict[tuple[str, int], pl.DataFrame]:
    """(kind, seed) -> split of every run, all drawn before any training so that a split
    the data cannot make (one family, one device) stops the command at once."""
    plans = {}
    for kind in config.split_kinds:
        for seed in range(config.seeds):
            try:
                plans[(kind, seed)] = assign_splits(
                    samples,
                    kind,
                    seed,
                    config.val_fraction,
                    config.test_fraction,
                    groups=clusters if kind == "cluster" else None,
                )
            except ValueError as exc:
                raise UsageError(f"--split {kind}: {exc}") from None
            training = split_frame(samples, plans[(kind, seed)], "train")
            if not ranked_runs(training):  # nothing to learn an order from
                raise UsageError(
                    f"--split {kind}: seed {seed}'s training runs have no run with two configs "
                    "that ran ok (too few valid runs for this split; harvest more, or fewer "
                    "--seeds)"
                )
    return plans


@dataclass
class SeedData:
    """Featurizers and featurized graphs of one seed's split, shared by its neural models."""

    parts: dict[str, pl.DataFrame]
    tabular: TabularFeatures
    featurizer: GraphFeaturizer
    featurized: FeaturizedGraphs

    def samples(self, config_sensitive: bool, prior: bool) -> dict[str, GraphSamples]:
        """GraphSamples of every non-empty partition."""
        return {
            p: GraphSamples(
                f,
                self.featurized,
                self.tabular.transform(f),
                prior=analytic_prior(f) if prior else None,
                config_sensitive=config_sensitive,
            )
            for p, f in self.parts.items()
            if f.height
        }


def prepare_seed(
    loaded: LoadedDataset, parts: dict[str, pl.DataFrame], *, relative: bool = True
) -> SeedData:
    """Fit the tabular and graph featurizers on ``parts["train"]`` (only)."""
    tabular = TabularFeatures(relative=relative).fit(parts["train"])
    featurizer = GraphFeaturizer.fit(loaded.graphs, loaded.graph_indices(parts["train"]))
    return SeedData(parts, tabular, featurizer, featurizer.transform(loaded.graphs))


def run_gnn(
    config: ExperimentConfig,
    seed: int,
    parts: dict[str, pl.DataFrame],
    tabular: TabularFeatures | None,
    loaded: LoadedDataset,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    *,
    name: str = GNN,
    prepared: SeedData | None = None,
    kind: str | None = None,
) -> tuple[Checkpoint, dict[str, GraphSamples]]:
    """Train the neural model ``name`` (:data:`NEURAL_MODES`) on ``parts["train"]``, early
    stopping on ``parts["val"]`` when present; return it as a checkpoint with the samples of
    every partition. ``prepared`` reuses a seed's featurizers (``tabular`` is then ignored).
    ``kind``: the split kind ``parts`` come from (default: the first of ``config``'s), recorded
    with how it was drawn in the checkpoint's ``extra`` (:func:`split_facts`)."""
    if prepared is None:
        prepared = prepare_seed(loaded, parts, relative=config.relative)
        if tabular is not None:
            prepared.tabular = tabular
    mode = NEURAL_MODES[name]
    model_config = ModelConfig(
        vocab_sizes=tuple(prepared.featurizer.vocab_sizes),
        num_numeric=prepared.featurizer.num_numeric,
        num_tab=len(prepared.tabular.names),
        hidden=config.hidden,
        layers=config.layers,
        dropout=config.dropout,
        graph_mode=mode,
        prior=config.prior,
    )
    samples = prepared.samples(model_config.config_sensitive, config.prior)
    train_config = replace(config.train, seed=seed)
    fit = train_model(
        samples["train"], samples.get("val"), model_config, train_config, on_epoch=on_epoch
    )
    notice = fit.notice
    if "val" in parts and "val" not in samples:
        # A split whose validation partition came out empty (two families: one trains, one is
        # tested): the report says "early-stopped on the val runs' tau", which it was not. The
        # final model has no "val" part at all, and its last epoch is meant.
        notice = no_validation_notice(kind or config.split_kinds[0])
    extra = {
        "train": asdict(train_config),
        **split_facts(config, kind or config.split_kinds[0], seed),
        "best_epoch": fit.best_epoch,
        "selection": fit.selection,
        "notice": notice,
        "best_value": fit.best_val,
        "history": fit.history,
        "dataset_key": loaded.key,
        "data": config.data,
        "final": False,
    }
    checkpoint = Checkpoint(
        fit.model,
        prepared.featurizer,
        prepared.tabular,
        config.level,
        extra,
        seen=seen_facts(parts["train"]),
        name=name,
    )
    return checkpoint, samples


def no_validation_notice(kind: str) -> str:
    """What a model trained on a split without validation runs says: no early stopping."""
    return (
        f"the {kind} split left no run for validation (too few groups to hold out one for "
        "validation and one for test): its models keep their last epoch instead of early "
        "stopping on validation tau; harvest more families for a validation split"
    )


def split_facts(config: ExperimentConfig, kind: str, seed: int) -> dict[str, Any]:
    """What a checkpoint records about the split it was trained on: ``split`` (the kind),
    ``seed`` and what drew it (fractions, cluster distance, families left out, whether
    identical programs were collapsed and run-relative features used), so that a replay can
    find or redraw its held-out runs and fit its baselines the same way."""
    return {
        "split": kind,
        "seed": seed,
        "val_fraction": config.val_fraction,
        "test_fraction": config.test_fraction,
        "cluster_distance": config.cluster_distance,
        "excluded_families": list(config.exclude_families),
        "collapse_identical": config.collapse,
        "run_relative_features": config.relative,
    }


def refit_parts(parts: Mapping[str, pl.DataFrame], *, collapse: bool) -> dict[str, pl.DataFrame]:
    """The partitions of a seed's refit (``--refit``): its train and val runs to fit on (one
    config per distinct program when ``collapse``), its test runs to judge; no val runs, so
    neural models train a fixed epoch count and keep the last."""
    rows = pl.concat([parts["train"], parts["val"]], how="vertical_relaxed")
    return {"train": collapse_identical(rows) if collapse else rows, "test": parts["test"]}


def refit_gnn(
    config: ExperimentConfig,
    seed: int,
    parts: Mapping[str, pl.DataFrame],
    loaded: LoadedDataset,
    first: Checkpoint,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    *,
    name: str,
    kind: str,
) -> tuple[Checkpoint, dict[str, GraphSamples]]:
    """``--refit``: the neural model ``name`` trained again on the seed's train + val runs for
    the epoch its first fit (``first``, early-stopped on the val runs) kept. Its checkpoint
    records the first fit's epoch choice and ``refit`` (epochs, runs trained on)."""
    epochs = int(first.extra["best_epoch"])
    again = replace(config, train=replace(config.train, epochs=epochs))
    refit = refit_parts(parts, collapse=config.collapse)
    checkpoint, samples = run_gnn(again, seed, refit, None, loaded, on_epoch, name=name, kind=kind)
    checkpoint.extra.update(
        {
            "best_epoch": epochs,
            "selection": first.extra["selection"],
            "best_value": first.extra["best_value"],
            "first_fit_history": first.extra["history"],
            "notice": first.extra["notice"],
            "refit": {"epochs": epochs, "train_runs": refit["train"]["run_id"].n_unique()},
        }
    )
    return checkpoint, samples


def judge_baselines(
    config: ExperimentConfig,
    names: Sequence[str],
    samples: pl.DataFrame,
    splits: pl.DataFrame,
    seed: int,
    kind: str,
) -> list[ModelResult]:
    """The baselines ``names`` of one seed fitted and judged on every partition; with
    ``--refit`` (and val runs) judged on train and val as fitted on the train runs, and on
    test as fitted again on train + val, as the neural models are."""
    fit = {"seed": seed, "split_kind": kind, "collapse": config.collapse, "relative": config.relative}
    if not config.refit or split_frame(samples, splits, "val").is_empty():
        return evaluate_baselines(names, samples, splits, partitions=PARTITIONS, **fit)
    first = evaluate_baselines(names, samples, splits, partitions=("train", "val"), **fit)
    return first + evaluate_baselines(names, samples, val_into_train(splits), partitions=("test",), **fit)


def _cluster_meta(
    config: ExperimentConfig, loaded: LoadedDataset
) -> tuple[dict[str, frozenset[str]], dict[str, str] | None]:
    op_sets = family_op_sets(loaded.samples, loaded.graphs)
    if "cluster" not in config.split_kinds:
        return op_sets, None
    return op_sets, cluster_families(op_sets, config.cluster_distance)


def _held_out_similarity(
    samples: pl.DataFrame, splits: pl.DataFrame, op_sets: Mapping[str, frozenset[str]]
) -> float | None:
    """Median over test families of their nearest training family's op-set Jaccard
    similarity (1.0: a training family uses exactly the same operations)."""
    joined = samples.select("run_id", "family").unique().join(splits, on="run_id")
    families = {p: set(joined.filter(pl.col("split") == p)["family"]) for p in ("train", "test")}
    values = nearest_training_similarity(
        sorted(families["test"] - families["train"]), sorted(families["train"]), op_sets
    )
    return float(np.median(values)) if values else None


@dataclass
class Prepared:
    """What :func:`prepare_experiment` checked and loaded before any training."""

    loaded: LoadedDataset
    rankable: list[str]
    op_sets: dict[str, frozenset[str]]
    clusters: dict[str, str] | None
    plans: dict[tuple[str, int], pl.DataFrame]
    threads: int | None


def prepare_experiment(config: ExperimentConfig) -> Prepared:
    """Everything that can refuse the command, done before any training: options, ``--out``
    probed for writing, the dataset loaded and checked, every split drawn. Raises
    :class:`UsageError` or :class:`schemas.DatasetError`."""
    check_config(config)
    if _is_main():
        probe_out(config.out)
    probe_cache(config.cache_dir)
    threads = resolve_threads(config)
    if threads:
        torch.set_num_threads(threads)
    loaded = load_dataset(
        config.data, level=config.level, harvests=config.harvests, cache_dir=config.cache_dir
    )
    loaded = exclude_families(loaded, config.exclude_families)
    rankable = check_dataset(loaded, config.data)
    op_sets, clusters = _cluster_meta(config, loaded)
    plans = plan_splits(config, loaded.samples, clusters)
    return Prepared(loaded, rankable, op_sets, clusters, plans, threads)


def run_experiment(
    config: ExperimentConfig,
    *,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    prepared: Prepared | None = None,
) -> list[ModelResult]:
    """Run the whole experiment; returns every :class:`train.report.ModelResult`.

    ``on_event(kind, info)`` is called with ("loaded", ...), ("epoch", ...), ("model", ...),
    ("notice", {"text"}) and ("final", ...) for progress displays. ``prepared``: the result
    of :func:`prepare_experiment` when the caller already ran it. Raises :class:`UsageError`
    for bad options or a dataset that cannot be trained on (before any training),
    :class:`schemas.DatasetError` for an unreadable dataset. Whatever it raises (Ctrl-C
    included), ``config.out`` is left as it was: the outputs are swapped in only once all are
    written (:func:`train.staging.staged_out`).
    """
    ready = prepared or prepare_experiment(config)
    emit = on_event or (lambda kind, info: None)
    with staged_out(config.out, writer=_is_main()) as out:
        return _run_into(out, config, ready, emit)


def _run_into(
    out: Path,
    config: ExperimentConfig,
    ready: Prepared,
    emit: Callable[[str, dict[str, Any]], None],
) -> list[ModelResult]:
    """:func:`run_experiment`'s work, its files written to ``out`` (a fresh directory)."""
    loaded, rankable, op_sets, clusters, plans, threads = (
        ready.loaded, ready.rankable, ready.op_sets, ready.clusters, ready.plans, ready.threads
    )  # fmt: skip
    samples = loaded.samples
    emit(
        "loaded",
        {
            "samples": samples.height,
            "graphs": loaded.graphs.num_graphs,
            "runs": len(rankable),
            "from_cache": loaded.from_cache,
        },
    )
    results: list[ModelResult] = []
    similarity: dict[str, list[float | None]] = {}
    best_epochs: dict[str, list[int]] = {}
    baselines = [m for m in config.models if m not in NEURAL]
    first_checkpoint: Checkpoint | None = None
    notices: set[str] = set()
    if _is_main():
        write_splits(out / SPLITS_FILE, plans)
    for kind in config.split_kinds:
        for seed in range(config.seeds):
            splits = plans[(kind, seed)]
            similarity.setdefault(kind, []).append(_held_out_similarity(samples, splits, op_sets))
            parts = {p: split_frame(samples, splits, p) for p in PARTITIONS}
            if config.collapse:
                parts["train"] = collapse_identical(parts["train"])
            prepared = (
                prepare_seed(loaded, parts, relative=config.relative) if _neural(config) else None
            )
            for name in _neural(config):
                checkpoint, neural_samples = run_gnn(
                    config,
                    seed,
                    parts,
                    None,
                    loaded,
                    lambda row, s=seed, n=name, k=kind: emit(
                        "epoch", {"kind": k, "seed": s, "model": n, **row}
                    ),
                    name=name,
                    prepared=prepared,
                    kind=kind,
                )
                if config.refit and not parts["val"].is_empty():
                    # train and val figures are the first fit's (its val runs unseen), test
                    # figures and the saved checkpoint the refit's
                    first = {p: s for p, s in neural_samples.items() if p != "test"}
                    results += _judge(name, kind, seed, parts, checkpoint, first)
                    checkpoint, refit_samples = refit_gnn(
                        config,
                        seed,
                        parts,
                        loaded,
                        checkpoint,
                        lambda row, s=seed, n=name, k=kind: emit(
                            "epoch", {"kind": k, "seed": s, "model": n, "refit": True, **row}
                        ),
                        name=name,
                        kind=kind,
                    )
                    neural_samples = {p: s for p, s in refit_samples.items() if p == "test"}
                # The split it was trained on, checked wherever splits.parquet is read back
                # for it (train.layout.find_splits_file): an edited file or another run's would
                # have a replay judge it on runs it trained on.
                checkpoint.extra["split_digest"] = split_digest(splits)
                if _is_main():  # every seed's model: a replay judges each on its own split
                    save_checkpoint(seed_checkpoint_dir(out, name, kind, seed), checkpoint)
                notice = checkpoint.extra["notice"]
                if notice and notice not in notices:
                    notices.add(notice)
                    emit("notice", {"text": notice})
                if kind == config.split_kinds[0]:
                    best_epochs.setdefault(name, []).append(int(checkpoint.extra["best_epoch"]))
                results += _judge(name, kind, seed, parts, checkpoint, neural_samples)
                if first_checkpoint is None:
                    first_checkpoint = checkpoint
                emit("model", {"kind": kind, "seed": seed, "model": name})
            if baselines and _is_main():
                results += judge_baselines(config, baselines, samples, splits, seed, kind)
                for name in baselines:
                    emit("model", {"kind": kind, "seed": seed, "model": name})
    final = None
    if config.final:
        final = train_final(config, loaded, results, best_epochs, emit)
    if _is_main():
        out.mkdir(parents=True, exist_ok=True)
        shipped = final or first_checkpoint
        if shipped is not None:
            save_checkpoint(out / SHIPPED, shipped)
        meta = {
            "data": config.data,
            "dataset_key": loaded.key,
            "split": ",".join(config.split_kinds),
            "level": config.level,
            "seeds": config.seeds,
            "samples": samples.height,
            "rows_key": rows_key(samples),
            "runs": samples["run_id"].n_unique(),
            "rankable_runs": len(rankable),
            "families": samples["family"].n_unique(),
            "excluded_families": list(config.exclude_families),
            "epochs": config.train.epochs,
            "loss": config.train.loss.ranking,
            "prior": config.prior,
            "collapse_identical": config.collapse,
            "run_relative_features": config.relative,
            "refit": config.refit,
            "threads": threads or torch.get_num_threads(),
            "held_out_nearest_jaccard_median": {
                kind: _median([v for v in values if v is not None])
                for kind, values in similarity.items()
            },
        }
        if clusters is not None:
            meta["clusters"] = sorted(set(clusters.values()))
        if shipped is not None:
            meta["checkpoint"] = (
                f"final {shipped.name} trained on every run ({shipped.extra['epochs']} epochs)"
                if final
                else f"{shipped.name}, {config.split_kinds[0]} split seed 0 (not final: --final "
                "trains on every run)"
            )
        write_report(str(out), results, meta=meta)
    return results


def write_splits(path: Path, plans: Mapping[tuple[str, int], pl.DataFrame]) -> None:
    """Every split of ``plans`` as one table (kind, seed, run_id, split), by atomic rename."""
    table = pl.concat(
        [
            splits.select(pl.lit(kind).alias("kind"), pl.lit(seed).alias("seed"), "run_id", "split")
            for (kind, seed), splits in plans.items()
        ]
    )
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    table.write_parquet(tmp)
    os.replace(tmp, path)


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _judge(
    name: str,
    kind: str,
    seed: int,
    parts: dict[str, pl.DataFrame],
    checkpoint: Checkpoint,
    samples: dict[str, GraphSamples],
) -> list[ModelResult]:
    results = []
    for partition, part_samples in samples.items():
        pred = predict_samples(checkpoint.model, part_samples)
        results.append(
            ModelResult.from_predictions(
                name,
                partition,
                seed,
                parts[partition],
                pred.score,
                predicted_ms=pred.latency_ms,
                p_valid=pred.p_valid,
                split_kind=kind,
            )
        )
    return results


def choose_final_model(config: ExperimentConfig, results: list[ModelResult]) -> tuple[str, str]:
    """(model name, reason): ``config.final_model`` when given, else the neural model with the
    best mean test Kendall tau on the first split kind."""
    if config.final_model is not None:
        return config.final_model, "--final-model"
    kind = config.split_kinds[0]
    scores: dict[str, list[float]] = {}
    for r in results:
        if r.model in NEURAL and r.partition == "test" and r.split_kind == kind:
            value = r.metrics.get("kendall_tau", float("nan"))
            if np.isfinite(value):
                scores.setdefault(r.model, []).append(value)
    if not scores:
        name = _neural(config)[0]
        return name, "the first neural model (no test score to choose by)"
    name = max(scores, key=lambda m: float(np.mean(scores[m])))
    return name, f"best mean test kendall_tau on the {kind} split ({np.mean(scores[name]):.3f})"


def train_final(
    config: ExperimentConfig,
    loaded: LoadedDataset,
    results: list[ModelResult],
    best_epochs: Mapping[str, list[int]],
    emit: Callable[[str, dict[str, Any]], None],
) -> Checkpoint:
    """Train the model to ship on every run of the dataset (every family: nothing held out).

    There is no validation split left to stop on, so it trains for the median best epoch its
    evaluation seeds early-stopped at (``--epochs`` when it was not evaluated) and keeps the
    last epoch. Returns the checkpoint (``extra["final"]`` True) with what it has seen.
    """
    name, reason = choose_final_model(config, results)
    epochs = best_epochs.get(name)
    count = max(1, round(statistics.median(epochs))) if epochs else config.train.epochs
    rows = collapse_identical(loaded.samples) if config.collapse else loaded.samples
    parts = {"train": rows}
    final_config = replace(config, train=replace(config.train, epochs=count))
    emit("final", {"model": name, "epochs": count, "reason": reason})
    checkpoint, _ = run_gnn(
        final_config,
        0,
        parts,
        None,
        loaded,
        lambda row: emit("epoch", {"kind": "final", "seed": 0, "model": name, **row}),
        name=name,
    )
    checkpoint.extra.update(
        {
            "final": True,
            "epochs": count,
            "epochs_from": "median best epoch of the evaluation seeds" if epochs else "--epochs",
            "chosen_by": reason,
            "split": None,
        }
    )
    return checkpoint
