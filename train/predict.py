"""Rank configs a model has never seen measured: API and ``python -m train.predict``.

**The stable entry point** for other code (the harvest's ``--rank-with``, replay, a Triton
``prune_configs_by`` provider) is :func:`rank_configs`: checkpoint + candidate configs + their
IR tables -> the candidates with ``rank`` (1 = try first, per ``run_id``), ``score``,
``predicted_ms`` and ``p_valid``. Load the checkpoint once with
:func:`train.checkpoint.load_checkpoint` and pass the object when ranking many runs.

Inputs are what a GPU-less machine can produce: the IR of each candidate's compile (a
dataset-layout directory, ``python -m extract compile`` output, or ``extract``'s
``IrGraph.to_arrow()`` tables) and a candidates frame with one row per config (config knobs,
launch grid, problem size, static stats; any column of :func:`train.tables.load_samples` it
lacks counts as unknown, and the inputs the model was trained with that are missing are named
in a :class:`MissingInputsWarning`; IR values the model never saw, such as a newer Triton's
ops, in an :class:`UnseenIrValuesWarning`). Candidates are ranked per ``run_id``: pass all
configs of one kernel launch together (the features compare a config with its run's others).

Ranking is validity-aware: configs the model predicts to fail (``p_valid`` < 0.5) come after
every config it predicts to run, each group in score order. A checkpoint refuses candidates
for an arch it never saw in training (:class:`UnseenArchError`) unless told to go on, which it
then does with an :class:`UnseenArchWarning`.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import polars as pl
from rich.console import Console

from schemas import DatasetError, read_table
from schemas.argtypes import positive_int
from schemas.console import print_error, print_labelled
from schemas.signals import stop_on_termination, stopped
from train.baselines.analytic import analytic_prior
from train.candidates import (
    CandidateError,
    complete_candidates,
    is_compile_output,
    join_compile_output,
    missing_inputs,
    read_candidates_csv,
    read_compile_output,
    runs_lacking,
    typed_candidates,
    with_graph_counts,
)
from train.checkpoint import Checkpoint, load_checkpoint
from train.data import GraphSamples, read_ir_tables
from train.fit import predict_samples
from train.graphs import EncodedGraphs, encode_graphs
from train.layout import SHIPPED, out_problem
from train.metrics import validity_aware_score
from train.ranking_view import print_ranking
from train.tables import load_samples

OUTPUT_COLUMNS = ("run_id", "config_id", "rank", "predicted_ms", "score", "p_valid")


class UnseenArchError(ValueError):
    """Candidates are for an arch (device), or their IR for a compile target, the checkpoint
    was never trained on."""


class UnseenArchWarning(UserWarning):
    """Ranking went on for an arch the checkpoint never saw (``allow_unseen_arch``)."""


class MissingInputsWarning(UserWarning):
    """The candidates lack inputs the model was trained with; its ranking degrades. The message
    is :func:`input_warning`'s: what and what to do on the first line, the inputs below."""

    advice = "add them to the candidates"
    """What to do about it, for a caller that words the first line its own way."""


class UnseenIrValuesWarning(UserWarning):
    """The candidates' IR holds categorical values (op names, dialects, dtypes, ...) the model
    never saw in training: it reads them all as one unknown value, so part of those graphs is
    unreadable to it and its ranking degrades. The message is :func:`input_warning`'s: what
    and what to do on the first line, then a line per column with a few of its values."""

    advice = "train it on runs that hold them to rank them fully"
    """What to do about it, for a caller that words the first line its own way."""


INPUT_WARNINGS: dict[str, str] = {
    MissingInputsWarning.__name__: "without some inputs it was trained with",
    UnseenIrValuesWarning.__name__: "on IR values it never saw in training",
}
"""The warnings of a ranking about what the model could not read (by class name) -> how the
model ranked despite them, for a caller that words the first line its own way ("model M ranks
the configs of K " + this: ``corpus.guide``; the guided harvest's summary). One table, so the
two say the same of each kind."""

DETAIL_INDENT = "  "
"""Before each detail line of an input warning (under its first line)."""


def input_warning(headline: str, details: Sequence[str]) -> str:
    """A warning's text: ``headline`` (what happened and what to do, one line), then each of
    ``details`` on a line of its own, indented (long lists are cut by the caller, with "and N
    more")."""
    return "\n".join([headline, *(DETAIL_INDENT + line for line in details)])


def warning_parts(warning: Warning | str) -> tuple[str, list[str]]:
    """(headline, detail lines without their indent) of an :func:`input_warning` text, for a
    caller that says the headline its own way (the harvest's note, ``corpus.guide``)."""
    headline, *details = str(warning).split("\n")
    return headline, [line.removeprefix(DETAIL_INDENT) for line in details]


def _some(names: Sequence[str], limit: int, rest: str = "") -> str:
    """``names`` joined, the first ``limit`` of them then "and N more" (``rest``: where the
    others are listed)."""
    more = len(names) - limit
    if more <= 1:  # "and 1 more" would take the room of the name
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {more} more" + (f" ({rest})" if rest else "")


InputWarningSink = Callable[[UserWarning], None]
"""Where :func:`rank_configs` hands its :class:`MissingInputsWarning` and
:class:`UnseenIrValuesWarning` instead of raising them (``on_input_warning``)."""


def _warn_input(sink: InputWarningSink | None, warning: UserWarning, stacklevel: int) -> None:
    """Raise ``warning`` as ``warnings.warn`` at ``stacklevel`` (counted from the caller of this
    function), or hand it to ``sink``: a caller ranking from several threads collects them
    without ``warnings.catch_warnings``, whose filters are process-wide."""
    if sink is None:
        warnings.warn(warning, stacklevel=stacklevel + 1)
    else:
        sink(warning)


def _checkpoint(checkpoint: Checkpoint | str | Path) -> Checkpoint:
    return checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)


def resolve_arch(
    ckpt: Checkpoint,
    frame: pl.DataFrame,
    arch: str | None,
    *,
    allow_unseen_arch: bool,
    on_warning: InputWarningSink | None = None,
) -> pl.DataFrame:
    """``frame`` with ``arch`` filled (from ``arch``; from the checkpoint when it saw exactly
    one, with a warning) and checked against the arches the checkpoint saw: unseen ones raise
    :class:`UnseenArchError`, or with ``allow_unseen_arch`` warn (:class:`UnseenArchWarning`,
    handed to ``on_warning`` when given)."""
    seen = list(ckpt.seen.get("arches", []))
    column = frame["arch"] if "arch" in frame.columns else pl.Series([None] * frame.height)
    if arch is not None:
        column = column.fill_null(arch)
    if column.null_count():
        if len(seen) != 1:
            raise UnseenArchError(
                f"{column.null_count()} candidate(s) name no arch and the checkpoint saw "
                f"{len(seen)} ({', '.join(seen) or 'none recorded'}): give the arch to rank for"
            )
        warnings.warn(
            f"{column.null_count()} candidate(s) name no arch: ranked for {seen[0]}, the only "
            "arch this model was trained on (give the arch to silence this)",
            UnseenArchWarning,
            stacklevel=3,
        )
        column = column.fill_null(seen[0])
    unseen = sorted(set(column.cast(pl.String).to_list()) - set(seen))
    if unseen:
        _refuse_unseen(
            f"the model was trained on {', '.join(seen) or 'no recorded arch'} only; candidates "
            f"are for {', '.join(unseen)}",
            allow_unseen_arch,
            on_warning,
        )
    return frame.with_columns(column.cast(pl.String).alias("arch"))


def check_ir_target(
    ckpt: Checkpoint,
    frame: pl.DataFrame,
    *,
    allow_unseen_arch: bool,
    on_warning: InputWarningSink | None = None,
) -> None:
    """Refuse candidates whose IR was compiled for a target (``ir_target``, e.g. ``sm_80``)
    other than every one the checkpoint read in training: the same kernel's IR differs per
    target (layouts, MMA versions), so its ranking there is a guess. Raises
    :class:`UnseenArchError`, or with ``allow_unseen_arch`` warns (to ``on_warning`` when
    given). Candidates without an
    ``ir_target`` and checkpoints that recorded none are not checked."""
    seen = list(ckpt.seen.get("ir_targets", []))
    if not seen or "ir_target" not in frame.columns:
        return
    unseen = sorted(set(frame["ir_target"].drop_nulls().cast(pl.String).to_list()) - set(seen))
    if unseen:
        _refuse_unseen(
            f"the model read IR compiled for {', '.join(seen)} only; the candidates' IR is "
            f"compiled for {', '.join(unseen)}",
            allow_unseen_arch,
            on_warning,
        )


def _refuse_unseen(what: str, allow_unseen_arch: bool, sink: InputWarningSink | None) -> None:
    message = f"{what}: its ranking there is a guess"
    if not allow_unseen_arch:
        raise UnseenArchError(message + " (allow_unseen_arch / --allow-unseen-arch to go on)")
    if sink is not None:  # a caller that said so once (the budgeted harvest): not once per run
        sink(UnseenArchWarning(message))
    else:
        warnings.warn(message, UnseenArchWarning, stacklevel=4)  # the caller of rank_configs


def rank_configs(
    checkpoint: Checkpoint | str | Path,
    candidates: pl.DataFrame,
    ir_nodes: pl.DataFrame,
    ir_edges: pl.DataFrame,
    ir_graphs: pl.DataFrame | None = None,
    *,
    arch: str | None = None,
    allow_unseen_arch: bool = False,
    on_input_warning: InputWarningSink | None = None,
) -> pl.DataFrame:
    """Predict latency and validity of every row of ``candidates`` and rank them per run.

    ``candidates``: one row per config (columns of :func:`train.tables.load_samples`; absent
    ones are unknown, and inputs the model was trained with that are absent or all null are
    named in a :class:`MissingInputsWarning`); ``run_id`` groups the configs ranked together
    (absent: one group); ``ir_id`` names each config's graph (of the checkpoint's level) in
    ``ir_nodes`` / ``ir_edges``; rows whose graph is absent are ranked on side features alone.
    ``ir_graphs`` (optional) supplies the graph summary counts the candidates lack. Categorical
    values of the candidates' graphs (op names, dialects, ...) the model never saw in training
    are read as one unknown value and named in an :class:`UnseenIrValuesWarning`. ``arch``
    fills candidates without an ``arch`` (the device they will run on; ``interpreter`` for
    Triton's CPU interpreter). See :func:`resolve_arch` for unseen arches.
    ``on_input_warning``: called with each :class:`MissingInputsWarning` and
    :class:`UnseenIrValuesWarning`, and with ``allow_unseen_arch`` the
    :class:`UnseenArchWarning` of an unseen arch or IR target, instead of raising it (None:
    raised with ``warnings.warn``); other warnings (candidates naming no arch) are raised as usual.

    Returns the candidates sorted by run_id, rank, with :data:`OUTPUT_COLUMNS` first: ``rank``
    1 = try first (validity-aware: predicted failures last), ``score`` (lower = predicted
    faster), ``predicted_ms`` (the latency head, ms), ``p_valid`` (probability it runs).
    """
    ckpt = _checkpoint(checkpoint)
    frame = with_graph_counts(typed_candidates(candidates), ir_graphs)
    frame = resolve_arch(ckpt, frame, arch, allow_unseen_arch=allow_unseen_arch, on_warning=on_input_warning)
    check_ir_target(ckpt, frame, allow_unseen_arch=allow_unseen_arch, on_warning=on_input_warning)
    absent = missing_inputs(frame, ckpt.seen.get("input_columns", []))
    if absent:
        message = input_warning(
            f"candidates lack {len(absent)} input(s) the model was trained with, so it ranks "
            f"less well ({MissingInputsWarning.advice})",
            [_some(absent, MISSING_NAMED, "checkpoint.json's seen.input_columns lists them all")],
        )
        _warn_input(on_input_warning, MissingInputsWarning(message), stacklevel=2)
    _warn_runs_lacking(frame, ckpt.seen.get("inputs_of_every_run", []), set(absent), on_input_warning)
    frame = complete_candidates(frame).with_columns(pl.col("valid").fill_null(False))
    encoded = encode_graphs(ir_nodes, ir_edges)
    if "ir_id" not in absent:  # all of them graph-less is said above
        _warn_graphless(frame, set(encoded.ir_ids), ckpt.level, on_input_warning)
    graphs = ckpt.graph_featurizer.transform(encoded)
    _warn_unseen_ir_values(ckpt, encoded, frame, on_input_warning)
    model_config = ckpt.model.config
    samples = GraphSamples(
        frame,
        graphs,
        ckpt.tabular.transform(frame),
        prior=analytic_prior(frame) if model_config.prior else None,
        config_sensitive=model_config.config_sensitive,
    )
    pred = predict_samples(ckpt.model, samples)
    order_key = validity_aware_score(pred.score, pred.p_valid)
    ranked = frame.with_columns(
        pl.Series("score", pred.score),
        pl.Series("predicted_ms", pred.latency_ms),
        pl.Series("p_valid", pred.p_valid),
        pl.Series("__key", order_key),
    ).with_columns(pl.col("__key").rank("ordinal").over("run_id").cast(pl.Int32).alias("rank"))
    first = list(OUTPUT_COLUMNS)
    rest = [c for c in ranked.columns if c not in first and c != "__key"]
    return ranked.select(first + rest).sort("run_id", "rank")


def _warn_runs_lacking(
    frame: pl.DataFrame, every_run: Sequence[str], said: set[str], sink: InputWarningSink | None
) -> None:
    """Warn about runs of ``frame`` that lack, in every row, an input every training run had
    (``every_run``), but for inputs the whole frame lacks (``said`` already). The frame-wide
    warning alone let a dataset or candidates file mixing runs with and without, e.g.,
    flops/bytes counts rank the runs without them silently on inputs the model never saw
    missing."""
    lacking = {c: n for c, n in runs_lacking(frame, every_run).items() if c not in said}
    if lacking:
        total = frame["run_id"].n_unique() if "run_id" in frame.columns else 1
        listed = [f"{column} ({count} of {total} runs)" for column, count in lacking.items()]
        message = input_warning(
            "some runs lack input(s) every training run had, so the model ranks them less well "
            "(add them to those runs' candidates)",
            [_some(listed, MISSING_NAMED)],
        )
        _warn_input(sink, MissingInputsWarning(message), stacklevel=3)


MISSING_NAMED = 8
"""Missing inputs a :class:`MissingInputsWarning` names (then "and N more")."""

UNSEEN_EXAMPLES = 3
"""Unseen values named per column in an :class:`UnseenIrValuesWarning` (the first, sorted;
then "and N more")."""


def _warn_unseen_ir_values(
    ckpt: Checkpoint, encoded: EncodedGraphs, frame: pl.DataFrame, sink: InputWarningSink | None
) -> None:
    """Warn once when nodes of the graphs ``frame``'s candidates reference hold categorical
    values the checkpoint's vocabularies lack (a newer Triton's op, another backend's dialect):
    the featurizer maps them to one out-of-vocabulary bucket, silently. Graphs of the IR tables
    no candidate references (a whole dataset's, when ranking some runs) are not counted."""
    index = encoded.index_of()
    referenced = sorted({index[i] for i in frame["ir_id"].drop_nulls().unique() if i in index})
    unseen = ckpt.graph_featurizer.unseen_values(encoded, referenced)
    if not unseen:
        return
    nodes = int(np.diff(encoded.node_ptr)[referenced].sum())
    message = input_warning(
        "the candidates' IR holds values the model never saw in training: its ranking of those "
        f"graphs degrades ({UnseenIrValuesWarning.advice})",
        [
            f"{column}: {u.nodes} of {nodes} nodes in {u.graphs} of {len(referenced)} graphs "
            f"({_some(u.values, UNSEEN_EXAMPLES)})"
            for column, u in unseen.items()
        ],
    )
    _warn_input(sink, UnseenIrValuesWarning(message), stacklevel=3)


NO_GRAPH_STATUSES = frozenset({"compile_error", "compile_timeout", "out_of_resources"})
"""Statuses of configs that have no IR graph because they did not compile: the model learnt
from such rows, graph-less, that they fail."""


def _warn_graphless(frame: pl.DataFrame, known: set[str], level: str, sink: InputWarningSink | None) -> None:
    """Warn when candidates that compiled (or may have) have no graph of ``level`` among the IR
    tables (``known`` ir_ids) while others have one: the model ranks them on side features
    alone, as it saw only compile failures ranked, so their places among the configs with a
    graph mean little (``corpus.record``'s rows of configs it never benchmarked have no IR)."""
    status = frame["status"] if "status" in frame.columns else pl.Series([None] * frame.height, dtype=pl.String)
    ids = frame["ir_id"].to_list()
    graphless = [
        i for i, (ir_id, s) in enumerate(zip(ids, status.to_list()))
        if (ir_id is None or ir_id not in known) and s not in NO_GRAPH_STATUSES
    ]  # fmt: skip
    if graphless and len(graphless) < frame.height:
        message = (
            f"{len(graphless)} of {frame.height} candidates have no {level} graph (ir_id missing "
            "or not in the IR tables) though they did not fail to compile: ranked on side "
            "features alone, their places among the others are not comparable"
        )
        _warn_input(sink, MissingInputsWarning(message), stacklevel=3)


def rank_dataset(
    checkpoint: Checkpoint | str | Path,
    data: str,
    *,
    harvests: str = "latest",
    allow_unseen_arch: bool = False,
) -> pl.DataFrame:
    """Rank every config of every run in the dataset ``data`` (measured or not: the ``skipped``
    configs of a budgeted harvest are the ones a user wants ranked)."""
    ckpt = _checkpoint(checkpoint)
    samples = load_samples(data, level=ckpt.level, harvests=harvests, keep_skipped=True)
    nodes, edges = read_ir_tables(data, ckpt.level)
    return rank_configs(ckpt, samples, nodes, edges, allow_unseen_arch=allow_unseen_arch)


def rank_ir_dir(
    checkpoint: Checkpoint | str | Path,
    candidates: pl.DataFrame | None,
    ir_dir: str,
    *,
    arch: str | None = None,
    allow_unseen_arch: bool = False,
) -> pl.DataFrame:
    """Like :func:`rank_configs`, reading the IR from ``ir_dir``: a dataset-layout directory
    (candidates then link by ``ir_id``) or ``python -m extract compile`` output (one
    directory per config; candidates link by ``ir_dir``, or are those directories alone when
    ``candidates`` is None: see :func:`train.candidates.read_compile_output`)."""
    ckpt = _checkpoint(checkpoint)
    if is_compile_output(ir_dir, ckpt.level):
        compiled, ir = read_compile_output(ir_dir, ckpt.level)
        frame = compiled if candidates is None else join_compile_output(candidates, compiled)
        return rank_configs(
            ckpt, frame, ir.nodes, ir.edges, ir.graphs, arch=arch,
            allow_unseen_arch=allow_unseen_arch,
        )  # fmt: skip
    if candidates is None:
        raise CandidateError(
            f"--ir {ir_dir}: dataset tables need a candidates file (or rank them with --data)"
        )
    nodes, edges = read_ir_tables(ir_dir, ckpt.level)
    graphs = pl.from_arrow(read_table(ir_dir, "ir_graphs", filters=[("level", "=", ckpt.level)]))
    assert isinstance(graphs, pl.DataFrame)
    return rank_configs(
        ckpt, candidates, nodes, edges, graphs, arch=arch, allow_unseen_arch=allow_unseen_arch
    )


def _input_problem(data: str | None, ir: str | None) -> str | None:
    """Why ``--data`` or ``--ir`` cannot be read, or None: a missing directory used to be
    reported as a missing table or a missing candidates file, not as the path mistyped."""
    for option, path in (("--data", data), ("--ir", ir)):
        if path is None or "://" in path:  # fsspec URLs are checked when read
            continue
        if not Path(path).exists():
            return f"{option} {path}: no such directory"
        if not Path(path).is_dir():
            return f"{option} {path}: not a directory"
    return None


def _checkpoint_problem(path: str) -> str | None:
    """Why ``--checkpoint`` names no checkpoint, or None; a ``python -m train --out``
    directory is pointed at the checkpoint it ships."""
    root = Path(path)
    if (root / "checkpoint.json").exists():
        return None
    if not root.exists():
        return f"--checkpoint {path}: no such directory"
    if (root / SHIPPED / "checkpoint.json").exists():
        return (
            f"--checkpoint {path}: a python -m train output, not a checkpoint; give "
            f"--checkpoint {root / SHIPPED} (the model it ships)"
        )
    return f"--checkpoint {path}: no checkpoint.json there"


def _read_candidates(path: Path) -> pl.DataFrame:
    if not path.is_file():
        raise CandidateError(f"--candidates {path}: no such file")
    try:
        return pl.read_parquet(path) if path.suffix == ".parquet" else read_candidates_csv(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise CandidateError(f"--candidates {path}: unreadable ({exc})".splitlines()[0]) from None


def _write(ranking: pl.DataFrame, out: Path) -> None:
    if out.suffix == ".parquet":
        ranking.write_parquet(out)
    else:  # CSV cells are flat: lists and structs go as JSON text, as --candidates reads them
        ranking.with_columns(
            pl.Series(name, [None if v is None else json.dumps(v) for v in ranking[name].to_list()], pl.String)
            for name, dtype in ranking.schema.items()
            if dtype.is_nested()
        ).write_csv(out)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m train.predict``."""
    parser = argparse.ArgumentParser(
        prog="python -m train.predict",
        description="Rank candidate configs with a checkpoint of python -m train (rank 1 = try "
        "first; configs predicted to fail last). Sources: a dataset (--data), a candidates "
        "file with their IR (--candidates + --ir), or extract compile output alone (--ir). "
        "Prints each run's first configs; --out keeps the whole ranking.",
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        help="directory written by python -m train (OUT/checkpoint) (required)",
    )
    parser.add_argument(
        "--data", help="dataset directory: rank every config of every run (default: none)"
    )
    parser.add_argument(
        "--candidates",
        help="Parquet/CSV of candidate configs (ir_id for dataset-layout --ir, ir_dir for "
        "extract compile output) (default: none; with --ir alone, each compile directory is "
        "a candidate)",
    )
    parser.add_argument(
        "--ir",
        help="the candidates' IR: a dataset-layout directory or python -m extract compile "
        "output (default: none)",
    )
    parser.add_argument(
        "--arch",
        help="arch the candidates will run on, for those that name none, e.g. sm_90 or "
        "interpreter (default: the checkpoint's, when it was trained on one)",
    )
    parser.add_argument(
        "--allow-unseen-arch",
        action="store_true",
        help="rank candidates for an arch the model never saw (with a warning) instead of refusing",
    )
    parser.add_argument(
        "--out",
        help="write the whole ranking here, .parquet or .csv (default: only printed)",
    )
    parser.add_argument(
        "--top", type=positive_int, default=5, help="configs shown per run (default 5)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m train.predict``; bad input exits 2 with a one-line message; Ctrl-C 130,
    SIGTERM 143 and SIGHUP 129, with one line instead of a traceback."""
    try:
        with stop_on_termination():
            return _predict(argv)
    except KeyboardInterrupt as stop:
        what, code = stopped(stop)
        sys.stderr.write(f"{what}: the ranking was not finished\n")
        return code


def _predict(argv: Sequence[str] | None) -> int:
    """:func:`main` inside its signal handling."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if problem := _checkpoint_problem(args.checkpoint):
        parser.error(problem)
    if args.data and (args.candidates or args.ir):
        parser.error("give --data, or --candidates/--ir, not both")
    if args.data and args.arch:
        parser.error("--arch is for --candidates/--ir: a dataset's runs name their own arch")
    if not args.data and not args.ir:
        parser.error("give --data DIR, or --ir DIR (with --candidates FILE)")
    if args.out and Path(args.out).suffix not in (".parquet", ".csv"):
        parser.error(f"--out {args.out}: name a .parquet or .csv file")
    if args.out and (problem := out_problem(Path(args.out).parent, f"--out {args.out}: its directory")):
        parser.error(problem)  # before the ranking, not after it
    errors = Console(stderr=True)
    if problem := _input_problem(args.data, args.ir):
        print_error(errors, problem)
        return 2
    try:
        checkpoint = load_checkpoint(args.checkpoint)
    except (ValueError, KeyError, OSError) as exc:  # another version, or not a checkpoint
        print_error(errors, str(exc))
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            if args.data:
                ranking = rank_dataset(
                    checkpoint, args.data, allow_unseen_arch=args.allow_unseen_arch
                )
            else:
                candidates = _read_candidates(Path(args.candidates)) if args.candidates else None
                ranking = rank_ir_dir(
                    checkpoint, candidates, args.ir, arch=args.arch,
                    allow_unseen_arch=args.allow_unseen_arch,
                )  # fmt: skip
        except (CandidateError, UnseenArchError, DatasetError) as exc:
            _show(errors, caught)
            print_error(errors, str(exc))
            return 2
    _show(errors, caught)
    if args.out:
        _write(ranking, Path(args.out))
    arches = ", ".join(checkpoint.seen.get("arches", [])) or "no recorded arch"
    source = f"{args.checkpoint} ({checkpoint.name}, trained on {arches})"
    print_ranking(Console(), ranking, top=args.top, source=source, out=args.out)
    return 0


SHOWN_WARNINGS = (UnseenArchWarning, MissingInputsWarning, UnseenIrValuesWarning)
"""What ``python -m train.predict`` prints of the warnings ranking raises, one line each."""


def _show(console: Console, caught: list[warnings.WarningMessage]) -> None:
    for item in caught:
        if issubclass(item.category, SHOWN_WARNINGS):
            print_labelled(console, "warning", "yellow", item.message)


if __name__ == "__main__":
    sys.exit(main())
