"""``python -m train.replay``: replay tuners on the held-out runs of a trained model.

``--model DIR`` is a ``python -m train --out`` directory or one checkpoint directory
(``checkpoint.json`` + weights). In an output directory every evaluation model of one neural
model on one split kind is a seed (``DIR/checkpoints/<model>/<kind>/seed-N``, see
:mod:`train.layout`): ``--model-name`` picks the model (default: the one ``DIR/checkpoint``
ships, else the first of gnn, gnn-plain, mlp there), ``--split`` the kind (default: the first
kind the training ran). A checkpoint records its split kind and seed; its held-out runs are
the ``test`` runs of that kind and seed in the output's ``splits.parquet``, else the split is
redrawn from ``--data`` as ``python -m train`` drew it (fractions, cluster distance and
families left out, from the checkpoint), and the report says so. A checkpoint without a split
(the ``--final`` model, trained on everything) treats every run of ``--data`` as held out.

Per seed, the baselines that learn (LightGBM) are fitted on the seed's training runs exactly
as ``python -m train`` fits them (:func:`train.baselines.compare.fit_baselines`: identical
programs collapsed and run-relative features as the checkpoint's training had them), and every
strategy of :mod:`train.replay.strategies` tunes every held-out run with at least two valid
configs. Nothing runs on a GPU; no benchmark is repeated: the dataset's measurements are the
ground truth.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from schemas import Status
from train.baselines.compare import fit_baselines
from train.checkpoint import WEIGHTS, read_meta
from train.clusters import DEFAULT_DISTANCE, cluster_families, family_op_sets
from train.data import load_dataset, read_ir_tables
from train.experiment import NEURAL
from train.guide import EiSettings, GuideModel, Scores, load_model, score_candidates
from train.layout import (
    CHECKPOINTS,
    META,
    REPLAYS,
    SHIPPED,
    SPLITS_FILE,
    find_splits_file,
    seed_checkpoints,
)
from train.predict import UnseenIrValuesWarning
from train.replay.strategies import (
    KNOWN,
    NEEDS_MODEL,
    REMEASURED,
    STRATEGIES,
    RunOutcome,
    replay_run,
    run_inputs,
)
from train.replay.summary import one_benchmark_note
from train.report_doc import few_runs_note
from train.splits import assign_splits, split_frame, val_into_train
from train.tables import HARVEST_MODES, load_samples, ranked_runs

HELD_OUT = "test"
"""The partition replayed by default: val runs chose the model's best epoch, so only test runs
are unseen."""
REPLAYABLE = ("test", "val")
REPLAY_HARVESTS = tuple(mode for mode in HARVEST_MODES if mode != "all")
"""How repeated harvests of a config become its one ground-truth latency."""


@dataclass(frozen=True)
class ReplayConfig:
    """Everything ``python -m train.replay`` controls."""

    data: str
    model: str
    out: str | None = None
    """Default: :func:`default_out`."""
    model_name: str | None = None
    """Neural model of a ``python -m train`` output (gnn, gnn-plain, mlp); None: its default."""
    split: str | None = None
    """Split kind of a ``python -m train`` output; None: the first kind it ran."""
    strategies: tuple[str, ...] = STRATEGIES
    repeats: int = 3
    """Seeded draws per run of the randomized adaptive tuner (``lfbo``)."""
    harvests: str = "latest"
    threads: int | None = None
    ei_threshold: float = EiSettings().threshold
    ei_lengthscale: float = EiSettings().lengthscale
    ei_noise: float = EiSettings().noise_sigma
    partition: str = HELD_OUT
    """``val`` replays the runs that chose the model's epoch instead of the test runs: where a
    tuner's settings (``--ei-*``) are chosen without looking at the figures they are judged by."""
    allow_unseen_arch: bool = False
    """Rank runs of an arch the model never saw (with a warning) instead of refusing."""
    remeasured: str | None = None
    """Another harvest of the same runs: the ``remeasured`` strategy orders configs by its
    latencies, and only held-out runs it measured every config of are replayed."""


def check_config(config: ReplayConfig) -> None:
    """Refuse bad options before any work starts (``ValueError`` naming the option)."""
    if "://" not in config.data and not Path(config.data).is_dir():
        raise ValueError(f"--data {config.data}: no such dataset directory")
    if not Path(config.model).is_dir():
        raise ValueError(f"--model {config.model}: no such directory")
    selection = select_checkpoints(Path(config.model), config.model_name, config.split)
    if config.partition != HELD_OUT and selection.kind is None:
        # Such a model held nothing out: its "val runs" would be every run, mislabelled.
        raise ValueError(
            f"--partition {config.partition}: the checkpoint {config.model} was trained on "
            f"every run (no split), so it has no {config.partition} runs; replay it without "
            "--partition"
        )
    if config.partition == "val":
        refit = [path for path in selection.paths if read_meta(path / META).get("extra", {}).get("refit")]
        if refit:  # trained on those runs: a replay of them would judge the model on its own training
            raise ValueError(
                f"--partition val: {refit[0]} was refit on its val runs (python -m train --refit); "
                "replay its test runs (no --partition), or train without --refit to replay val"
            )
    unknown = [s for s in config.strategies if s not in KNOWN]
    if unknown:
        raise ValueError(
            f"--strategies: unknown {', '.join(unknown)}; known: {', '.join(KNOWN)}"
        )
    if REMEASURED in config.strategies and config.remeasured is None:
        raise ValueError("--strategies remeasured needs --remeasured DIR (a second harvest of the runs)")
    if config.remeasured is not None and "://" not in config.remeasured and not Path(config.remeasured).is_dir():
        raise ValueError(f"--remeasured {config.remeasured}: no such dataset directory")
    if config.remeasured is not None and _same_place(config.remeasured, config.data):
        # ordered by the very latencies it is judged by, remeasured always found the best first
        raise ValueError(
            f"--remeasured {config.remeasured}: is --data itself; give a second harvest of the "
            "same runs (the same command into another directory)"
        )
    if config.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {config.repeats}")
    repeated = sorted({s for s in config.strategies if config.strategies.count(s) > 1})
    if repeated:
        raise ValueError(f"--strategies: {', '.join(repeated)} given twice")
    if not config.strategies:
        raise ValueError("--strategies: no strategy given")
    if config.harvests not in REPLAY_HARVESTS:
        raise ValueError(
            f"--harvests must be one of {', '.join(REPLAY_HARVESTS)} (a replay needs one "
            "measurement per config; 'all' keeps every harvest's row)"
        )
    if not 0 < config.ei_threshold < 1:
        raise ValueError(f"--ei-threshold must be in (0, 1), got {config.ei_threshold}")
    if not config.ei_lengthscale > 0:
        raise ValueError(f"--ei-lengthscale must be > 0, got {config.ei_lengthscale}")
    if not config.ei_noise > 0:
        raise ValueError(f"--ei-noise must be > 0, got {config.ei_noise}")
    if config.partition not in REPLAYABLE:
        raise ValueError(f"--partition must be one of {', '.join(REPLAYABLE)}, got {config.partition}")


def _same_place(first: str, second: str) -> bool:
    """Whether two dataset locations (directories or URLs) name the same dataset."""
    if "://" in first or "://" in second:
        return first.rstrip("/") == second.rstrip("/")
    return Path(first).resolve() == Path(second).resolve()


@dataclass(frozen=True)
class Selection:
    """The checkpoints one replay judges: every seed of neural model ``name`` on split kind
    ``kind`` (None: a model trained without a split)."""

    name: str
    kind: str | None
    paths: tuple[Path, ...]


def _describe(kind: str | None) -> str:
    return "no split (every run)" if kind is None else f"the {kind} split"


def _single(root: Path, model_name: str | None, split: str | None) -> Selection:
    if not (root / WEIGHTS).is_file():
        raise ValueError(f"--model {root}: no {WEIGHTS} beside its {META} (an incomplete checkpoint)")
    meta = read_meta(root / META)
    name = str(meta.get("name", "gnn"))
    kind = meta.get("extra", {}).get("split")
    if model_name is not None and model_name != name:
        raise ValueError(f"--model-name {model_name}: the checkpoint {root} is a {name} model")
    if split is not None and split != kind:
        raise ValueError(
            f"--split {split}: the checkpoint {root} was trained on {_describe(kind)}"
        )
    return Selection(name, kind, (root,))


def _kind_order(root: Path) -> list[str]:
    """Split kinds in the order ``python -m train`` ran them (its ``splits.parquet``)."""
    path = root / "splits.parquet"
    if not path.is_file():
        return []
    kinds = pl.read_parquet(path, columns=None)
    if "kind" not in kinds.columns:
        return []
    return [str(k) for k in kinds["kind"].unique(maintain_order=True).to_list()]


def _default_name(root: Path, names: Sequence[str]) -> str:
    shipped = root / SHIPPED / META
    if shipped.is_file():
        name = read_meta(shipped).get("name")
        if name in names:
            return str(name)
    return sorted(names, key=lambda n: (NEURAL.index(n) if n in NEURAL else len(NEURAL), n))[0]


def select_checkpoints(root: Path, model_name: str | None, split: str | None) -> Selection:
    """The checkpoints under ``--model root`` to replay (see the module docstring); a
    ``ValueError`` naming what exists when there is none to match the options."""
    if (root / META).is_file():
        return _single(root, model_name, split)
    found = seed_checkpoints(root)
    if not found:
        hint = ""
        if (root / SHIPPED / META).is_file():
            hint = f"; give --model {root / SHIPPED} to replay the one model there"
        output = _output_above(root)
        if output is not None:  # e.g. OUT/checkpoints or OUT/checkpoints/gnn
            hint = f"; give --model {output}, the python -m train output it is part of"
        raise ValueError(
            f"--model {root}: no checkpoint.json there and no per-seed models in "
            f"{root}/checkpoints/<model>/<split>/seed-N (python -m train writes them){hint}"
        )
    names = sorted({c.model for c in found})
    if model_name is None:
        model_name = _default_name(root, names)
    elif model_name not in names:
        raise ValueError(
            f"--model-name {model_name}: {root}/checkpoints has {', '.join(names)}"
        )
    mine = [c for c in found if c.model == model_name]
    present = {c.kind for c in mine}
    kinds = [k for k in _kind_order(root) if k in present] + sorted(
        present - set(_kind_order(root))
    )
    if split is None:
        split = kinds[0]
    elif split not in present:
        raise ValueError(
            f"--split {split}: {root}/checkpoints/{model_name} has {', '.join(kinds)} only"
        )
    _refuse_incomplete(root / CHECKPOINTS / model_name / split)
    return Selection(model_name, split, tuple(c.path for c in mine if c.kind == split))


def _refuse_incomplete(kind_dir: Path) -> None:
    """A ``ValueError`` naming the first seed directory under ``kind_dir`` that lacks its
    ``checkpoint.json`` or weights, or whose ``checkpoint.json`` is no JSON: such a seed used to be dropped from the replay without a
    word (no ``checkpoint.json``) or to end it in a traceback after the start (no weights)."""
    for seed_dir in sorted(kind_dir.glob("seed-*")):
        missing = [name for name in (META, WEIGHTS) if not (seed_dir / name).is_file()]
        if seed_dir.is_dir() and missing:
            raise ValueError(
                f"--model: {seed_dir} holds no {' and no '.join(missing)} (an incomplete "
                "checkpoint): train again, or remove the directory to replay the other seeds"
            )
        if seed_dir.is_dir():
            read_meta(seed_dir / META)  # a damaged one is named before any work


def missing_seeds(root: Path, selection: Selection) -> list[int]:
    """Seeds of the selected split kind that the ``splits.parquet`` of the ``python -m train``
    output ``root`` lists but that have no checkpoint there (removed by hand): the replay's
    means are over fewer seeds than the training's, which the report says."""
    path = root / SPLITS_FILE
    if (root / META).is_file() or selection.kind is None or not path.is_file():
        return []
    splits = pl.read_parquet(path)
    if "kind" in splits.columns:
        splits = splits.filter(pl.col("kind") == selection.kind)
    trained = {int(seed) for seed in splits["seed"].unique().to_list()}
    present = {int(p.name.removeprefix("seed-")) for p in selection.paths}
    return sorted(trained - present)


def _output_above(directory: Path) -> Path | None:
    """The ``python -m train`` output ``directory`` lies inside (``OUT/checkpoints``,
    ``OUT/checkpoints/<model>``, ``OUT/checkpoints/<model>/<kind>``), or None."""
    resolved = directory.resolve()
    for parent in resolved.parents[:3]:
        if resolved.is_relative_to(parent / CHECKPOINTS) and seed_checkpoints(parent):
            return parent
    return None


def default_out(
    root: Path, selection: Selection, partition: str = HELD_OUT, remeasured: str | None = None
) -> Path:
    """Where the report goes without ``--out``: ``CHECKPOINT/replay`` for one checkpoint
    directory, ``OUT/replay/<model>-<kind>`` for a ``python -m train`` output; ``-val``
    appended when the val runs are replayed, ``-remeasured`` with ``--remeasured`` (its report
    covers the remeasured runs only: it must not replace the whole partition's)."""
    suffix = "" if partition == HELD_OUT else f"-{partition}"
    if remeasured is not None:
        suffix += "-remeasured"
    if (root / META).is_file():
        return root / f"replay{suffix}"
    return root / REPLAYS / f"{selection.name}-{selection.kind}{suffix}"


def data_location(data: str) -> str:
    """``--data`` as ``replay.json`` records it (``meta.data_location``): a directory's absolute
    path, so that a later replay from another working directory knows it; a URL as given."""
    return data if "://" in data else str(Path(data).resolve())


def other_data_problem(out: Path, data: str) -> str | None:
    """Why the default output directory ``out`` must not take a replay of ``data``, or None.

    The default names the model, not the data: a replay of the same model on another dataset
    would replace the earlier one's files without a word. So it may replace only a replay of
    the same dataset (a rerun); one of other data, or a ``replay.json`` that cannot tell, is
    kept, and the replay asks for an ``--out`` of its own."""
    path = out / "replay.json"
    if not path.is_file():
        return None  # nothing there yet, or a replay stopped before writing it: nothing to lose
    try:
        meta = json.loads(path.read_text()).get("meta", {})
        # replay.json of an older version has no data_location: its data, as given, from here
        earlier = str(meta.get("data_location") or meta["data"])
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return (
            f"{out} (the default --out) holds a replay whose {path.name} does not say which "
            f"dataset it replayed; give --out DIR for this replay of --data {data}, or remove "
            f"{out} to replace it"
        )
    if _same_place(earlier, data):
        return None
    return (
        f"{out} (the default --out) holds the replay of another dataset ({earlier}), which this "
        f"replay of --data {data} would replace; give --out DIR to keep both, or remove {out} "
        "to replace it"
    )


@dataclass(frozen=True)
class SeedModel:
    """One checkpoint and the split it was trained on (``extra``: its training facts)."""

    path: Path
    model: GuideModel
    split: str | None
    seed: int
    extra: Mapping[str, Any]


def seed_models(selection: Selection) -> list[SeedModel]:
    """The selected checkpoints loaded, sorted by seed."""
    models = []
    for path in selection.paths:
        model = load_model(path)
        extra = model.checkpoint.extra
        models.append(
            SeedModel(path, model, extra.get("split"), int(extra.get("seed", 0)), extra)
        )
    return sorted(models, key=lambda m: m.seed)


def _stored_split(seed_model: SeedModel, samples: pl.DataFrame) -> pl.DataFrame | None:
    """The seed's split from the ``splits.parquet`` of the output the checkpoint belongs to,
    when there is one that matches ``samples``."""
    stored = find_splits_file(seed_model.path)
    if stored is None:
        return None
    table = pl.read_parquet(stored)
    table = table.filter(pl.col("seed") == seed_model.seed)
    if "kind" in table.columns:
        table = table.filter(pl.col("kind") == seed_model.split)
    if table.is_empty() or samples.join(table, on="run_id", how="semi").is_empty():
        return None
    return table.select("run_id", "split")


def redraw_split(
    config: ReplayConfig, samples: pl.DataFrame, seed_model: SeedModel, level: str
) -> pl.DataFrame:
    """The seed's split drawn again from ``--data`` as ``python -m train`` drew it: the
    checkpoint's kind, seed, fractions, families left out and (``cluster``) the clusters of
    :mod:`train.clusters` at its distance."""
    extra = seed_model.extra
    kind = str(seed_model.split)
    excluded = list(extra.get("excluded_families", []))
    frame = samples.filter(~pl.col("family").is_in(excluded))
    groups = None
    if kind == "cluster":  # op sets come from the encoded graphs
        loaded = load_dataset(config.data, level=level, harvests=config.harvests)
        kept = loaded.samples.filter(~pl.col("family").is_in(excluded))
        distance = float(extra.get("cluster_distance", DEFAULT_DISTANCE))
        groups = cluster_families(family_op_sets(kept, loaded.graphs), distance)
    return assign_splits(
        frame,
        kind,
        seed_model.seed,
        float(extra.get("val_fraction", 0.2)),
        float(extra.get("test_fraction", 0.2)),
        groups=groups,
    )


def partitions(
    config: ReplayConfig, samples: pl.DataFrame, seed_model: SeedModel, level: str
) -> tuple[pl.DataFrame, pl.DataFrame, str | None]:
    """(training rows, held-out rows, a note for the report or None) of one seed."""
    if seed_model.split is None:
        what = "is the final model" if seed_model.extra.get("final") else "records no split"
        return (
            samples.clear(),
            samples,
            f"{seed_model.path.name} {what} (trained on everything): every run of --data "
            "counts as held out, so the model's figures are optimistic",
        )
    splits = _stored_split(seed_model, samples)
    if splits is not None:
        note = None
        unsplit = samples.join(splits, on="run_id", how="anti")
        if not unsplit.is_empty():  # runs added to --data since training: no partition to judge them in
            families = ", ".join(sorted(set(unsplit["family"].unique().to_list())))
            note = (
                f"seed {seed_model.seed}: {unsplit['run_id'].n_unique()} run(s) of --data ({families}) "
                f"are in none of its partitions in {find_splits_file(seed_model.path)} (not in the data "
                "the model was trained with): left out"
            )
        return _training_rows(samples, splits, seed_model), split_frame(samples, splits, config.partition), note
    splits = redraw_split(config, samples, seed_model, level)
    held = split_frame(samples, splits, config.partition)
    stored = find_splits_file(seed_model.path)
    why = (
        "no splits.parquet beside the checkpoint"
        if stored is None
        else f"{stored} names no run of --data for this seed (a model trained on other data)"
    )
    note = f"seed {seed_model.seed}: {why}; the {seed_model.split} split was drawn again as python -m train drew it"
    trained_on = set(seed_model.model.checkpoint.seen.get("families", []))
    seen_held = sorted(set(held["family"].unique().to_list()) & trained_on)
    if seed_model.split in FAMILY_KINDS and seen_held:  # they would pass for unseen kernels
        held = held.filter(~pl.col("family").is_in(seen_held))
        note += f"; its held-out runs of families the model trained on are left out ({', '.join(seen_held)})"
    return _training_rows(samples, splits, seed_model), held, note


def _training_rows(samples: pl.DataFrame, splits: pl.DataFrame, seed_model: SeedModel) -> pl.DataFrame:
    """The rows the seed's model was fitted on, which the learning baselines are fitted on too:
    its train runs, with its val runs for a ``--refit`` checkpoint."""
    fitted = val_into_train(splits) if seed_model.extra.get("refit") else splits
    return split_frame(samples, fitted, "train")


FAMILY_KINDS = ("family", "cluster")
"""Split kinds that hold out whole families: a redrawn split's held-out family must be one the
checkpoint never trained on (``seen.families``), or its runs are no unseen kernels."""


def static_scores(
    names: Sequence[str],
    train: pl.DataFrame,
    held: pl.DataFrame,
    seed: int,
    *,
    collapse: bool = True,
    relative: bool = True,
) -> dict[str, np.ndarray]:
    """Scores (lower = predicted faster) of the analytic rule and LightGBM on ``held``, fitted
    on ``train`` by :func:`train.baselines.compare.fit_baselines` (``collapse``/``relative``:
    as the model's training had them). LightGBM is left out without training runs."""
    wanted = [
        n
        for n in ("analytic", "tabular")
        if n in names and not (n == "tabular" and train.is_empty())
    ]
    if not wanted:
        return {}
    # The analytic rule learns nothing; without training runs its features are fitted on the
    # held-out rows, which holds no label.
    fitted = fit_baselines(
        wanted,
        held if train.is_empty() else train,
        seed=seed,
        collapse=collapse and not train.is_empty(),
        relative=relative,
    )
    x_held = fitted.features.transform(held)
    return {
        name: np.asarray(model.predict(held, x_held), dtype=np.float64)
        for name, model in fitted.models.items()
    }


def fully_measured(samples: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``samples`` without the runs that hold a ``skipped`` config (the ground truth of a
    replay is every config's measurement), and how many runs that left out."""
    pruned = samples.filter(pl.col("status") == Status.SKIPPED.value).select("run_id").unique()
    return samples.join(pruned, on="run_id", how="anti"), pruned.height


def remeasured_latency(url: str, level: str, harvests: str) -> pl.DataFrame:
    """(run_id, config_id, remeasured_ms) of another harvest: its median latency, inf for a
    config that did not run."""
    rows = load_samples(url, level=level, harvests=harvests)
    return rows.select(
        "run_id",
        "config_id",
        pl.when(pl.col("valid"))
        .then(pl.col("median_ms").fill_null(float("inf")))
        .otherwise(float("inf"))
        .alias("remeasured_ms"),
    )


def with_remeasured(held: pl.DataFrame, remeasured: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """``held`` (sorted) with the column ``remeasured_ms``, keeping only runs whose every config
    the other harvest measured; and how many runs were left out."""
    joined = held.join(remeasured, on=["run_id", "config_id"], how="left")
    complete = joined.group_by("run_id").agg(pl.col("remeasured_ms").is_not_null().all().alias("ok"))
    kept = complete.filter(pl.col("ok")).select("run_id")
    rows = joined.join(kept, on="run_id", how="semi").sort("run_id", "config_id")
    return rows, complete.height - kept.height


def _warn_unless_unseen_ir(warning: UserWarning) -> None:
    """What ranking a seed's held-out runs tells, minus unseen IR values: held-out families hold
    IR their training never showed, which is what a split measures, not a user's mistake, so
    that warning would repeat for every seed. Missing inputs or an allowed unseen arch still
    warn."""
    if not isinstance(warning, UnseenIrValuesWarning):
        warnings.warn(warning, stacklevel=2)


def replay_seed(
    config: ReplayConfig,
    samples: pl.DataFrame,
    seed_model: SeedModel,
    ir_tables: tuple[pl.DataFrame, pl.DataFrame],
    remeasured: pl.DataFrame | None = None,
) -> tuple[list[RunOutcome], str | None]:
    """Every strategy on every replayable held-out run of one seed (with ``remeasured``, see
    :func:`remeasured_latency`: only runs it measured)."""
    train, held, note = partitions(config, samples, seed_model, seed_model.model.level)
    found = held.height
    held = held.filter(pl.col("run_id").is_in(ranked_runs(held))).sort("run_id", "config_id")
    rankable = held.height
    if remeasured is not None:
        held, missing = with_remeasured(held, remeasured)
        if missing:
            left_out = f"seed {seed_model.seed}: {missing} held-out run(s) not remeasured in {config.remeasured} left out"
            note = left_out if note is None else f"{note}; {left_out}"
    if held.is_empty():
        # Say why: "no held-out run with two valid configs" was printed also when --data held
        # none of them (a model of other data) or --remeasured measured none of them.
        if not found:
            why = f"--data holds none of the {config.partition} runs of its split"
        elif not rankable:
            why = "none has two valid configs"
        else:
            why = f"{config.remeasured} remeasured none of them"
        empty = f"seed {seed_model.seed}: no held-out run to replay ({why})"
        return [], empty if note is None else f"{note}; {empty}"
    scores = static_scores(
        config.strategies,
        train,
        held,
        seed_model.seed,
        collapse=bool(seed_model.extra.get("collapse_identical", True)),
        relative=bool(seed_model.extra.get("run_relative_features", True)),
    )
    if remeasured is not None:
        scores[REMEASURED] = held["remeasured_ms"].to_numpy().astype(np.float64)
    strategies = [s for s in config.strategies if s != "tabular" or "tabular" in scores]
    model = None
    if NEEDS_MODEL & set(config.strategies):
        # Every config of a held-out run is ranked together (run-relative features need them).
        model = score_candidates(
            seed_model.model,
            held,
            *ir_tables,
            allow_unseen_arch=config.allow_unseen_arch,
            on_input_warning=_warn_unless_unseen_ir,
        )
    ei = ei_settings(config)
    outcomes = []
    bounds = (
        held.with_row_index("__i")
        .group_by("run_id", maintain_order=True)
        .agg(pl.col("__i").min().alias("start"), pl.len().alias("n"))
    )
    for start, n in bounds.select("start", "n").iter_rows():
        rows = slice(start, start + n)
        run = run_inputs(
            held.slice(start, n),
            {name: values[rows] for name, values in scores.items()},
            None
            if model is None
            else Scores(model.rank[rows], model.predicted_ms[rows], model.p_valid[rows]),
        )
        for name in strategies:
            outcomes.append(
                replay_run(name, run, seed=seed_model.seed, repeats=config.repeats, ei=ei)
            )
    return outcomes, note


def ei_settings(config: ReplayConfig) -> EiSettings:
    """The expected-improvement settings ``ei`` and ``auto`` replay with."""
    return EiSettings(
        threshold=config.ei_threshold,
        lengthscale=config.ei_lengthscale,
        noise_sigma=config.ei_noise,
    )


def _few_runs(runs: Mapping[tuple[int, str], int], partition: str) -> str:
    """``python -m train``'s warning of too few held-out runs ('' when enough), for the
    replayed ``(seed, run_id)`` pairs: over the seeds that contributed runs, as the intervals
    are."""
    seeds = {seed for seed, _ in runs}
    if not seeds:
        return ""
    return few_runs_note(len(runs) / len(seeds), len(seeds), partition, compared="strategies")


def run_replay(
    config: ReplayConfig, *, on_seed: Callable[[int, int], None] | None = None
) -> tuple[list[RunOutcome], dict[str, Any]]:
    """Replay every seed; returns the outcomes and the report's metadata. ``on_seed(seed,
    runs)`` is called after each seed (progress)."""
    check_config(config)
    if config.threads:
        import torch

        torch.set_num_threads(config.threads)
    selection = select_checkpoints(Path(config.model), config.model_name, config.split)
    models = seed_models(selection)
    level = models[0].model.level
    samples, pruned = fully_measured(
        load_samples(config.data, level=level, harvests=config.harvests, keep_skipped=True)
    )
    if samples.is_empty() and pruned:  # else the split, drawn on no run, is what complains
        raise ValueError(
            f"--data {config.data}: no fully measured run to replay: all {pruned} run(s) hold "
            "configs a --budget harvest skipped (status skipped), and a tuner's cost can only "
            "be judged on runs whose every config was measured; harvest the same runs again "
            "into the same directory without --budget to measure the skipped configs"
        )
    ir_tables = read_ir_tables(config.data, level)
    remeasured = (
        None
        if config.remeasured is None
        else remeasured_latency(config.remeasured, level, config.harvests)
    )
    outcomes: list[RunOutcome] = []
    notes = []
    absent = missing_seeds(Path(config.model), selection)
    if absent:
        notes.append(
            f"seed(s) {', '.join(map(str, absent))} of the {selection.kind} split (in "
            f"{Path(config.model) / SPLITS_FILE}) have no {selection.name} checkpoint: the figures "
            f"are over seed(s) {', '.join(str(m.seed) for m in models)} only"
        )
    if pruned:
        notes.append(
            f"{pruned} run(s) with configs never benchmarked (status skipped: a --budget harvest) "
            "left out: a tuner's cost can only be judged on runs whose every config was measured"
        )
    for seed_model in models:
        mine, note = replay_seed(config, samples, seed_model, ir_tables, remeasured)
        outcomes += mine
        if note:
            notes.append(note)
        if on_seed:
            on_seed(seed_model.seed, len({o.run_id for o in mine}))
    runs = {(o.seed, o.run_id): o.n_configs for o in outcomes}
    few = _few_runs(runs, config.partition if selection.kind else "replayed")
    if few:
        notes.append(few)
    if same := one_benchmark_note(runs.values()):
        notes.append(same)
    meta = {
        "data": config.data,
        "data_location": data_location(config.data),
        "model": selection.name,
        "checkpoints": [m.model.name for m in models],
        "refit": any(bool(m.extra.get("refit")) for m in models),
        "split": selection.kind or "none (every run held out)",
        "seeds": [m.seed for m in models],
        "runs": len(runs),
        "configs": int(sum(runs.values())),
        "repeats": config.repeats,
        "ei_threshold": config.ei_threshold,
        "ei_lengthscale": config.ei_lengthscale,
        "ei_noise": config.ei_noise,
        "partition": config.partition,
        "strategies": list(config.strategies),
        "remeasured": config.remeasured,
        "notes": notes,
    }
    return outcomes, meta
