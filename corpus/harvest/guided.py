"""A model-guided harvest (``--rank-with MODEL --budget K|P%|auto``): every config is compiled
as usual, the model ranks each run's compiled configs, and only the default config plus the
model's choice is benchmarked. The rest are written as ``skipped`` rows whose ``error`` names
the model and the budget (:data:`BUDGET_SKIP`), with their compile outcome and IR, so the
dataset says what was not measured and why.

- ``K``: the default plus the first K other configs of the model's hedged order
  (:func:`train.guide.hedged_order`: its best, then its order spread over the knob space).
- ``P%``: K = ceil(P% of the run's compiled configs), at least 1.
- ``auto``: the model's predicted best and the default first, then one config at a time by
  expected improvement over the best so far (:class:`train.guide.EiPolicy`), until no config
  is expected to improve it by 1 %. Its decisions use one timing pass per config; the
  recorded labels come from the usual interleaved passes over every config it chose.

The model's ranking of a run may say it could not read all of the candidates (inputs it was
trained with missing, IR values it never saw): the guide collects those warnings per run, prints
each kind once when it first happens, and the summary counts the runs of each.

Resume: a harvest without ``--budget`` measures the configs an earlier budgeted harvest
skipped (:func:`corpus.harvest.resume.resume_plan`); a budgeted one counts them as done.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Console
from rich.text import Text

from corpus.guide.candidates import candidate_frames
from corpus.harvest.compile_worker import CompileOutcome
from corpus.harvest.plan import PlannedConfig, PlannedRun
from corpus.harvest.report import BestOfRun
from corpus.harvest.resume import BUDGET_SKIP
from schemas.console import print_labelled, print_trimmed
from schemas.enums import Status
from train.guide import Budget, EiPolicy, EiSettings, GuideModel, hedged_order, score_candidates
from train.guide.encoding import knob_matrix
from train.predict import INPUT_WARNINGS, UnseenArchWarning, input_warning, warning_parts


class GuidedRun:
    """The benchmark plan of one run: which configs first, then (``auto``) one at a time.

    Config ids in ``order`` are the run's compiled configs in the model's order (best first).
    """

    def __init__(
        self,
        order: Sequence[str],
        first: Sequence[str],
        reasons: Mapping[str, str],
        policy: EiPolicy | None = None,
        note: str | None = None,
    ) -> None:
        self.order = list(order)
        self.first = list(first)
        self.reasons = dict(reasons)
        self.policy = policy
        self.note = note
        """Why the model did not guide this run (it is benchmarked in full), or None."""
        self.measured: dict[int, float] = {}
        self._index = {config_id: i for i, config_id in enumerate(self.order)}

    @property
    def adaptive(self) -> bool:
        """True for ``auto``: more configs are chosen after the first ones are timed."""
        return self.policy is not None

    def wants(self, config_id: str) -> bool:
        """Whether ``config_id`` is among the configs benchmarked first."""
        return config_id in self.first

    def observe(self, config_id: str, median_ms: float | None) -> None:
        """A benchmarked config's median (None: it failed; it cost a benchmark all the same)."""
        self.measured[self._index[config_id]] = median_ms if median_ms else math.inf

    def next(self) -> str | None:
        """``auto``: the next config to benchmark, None when the policy stops."""
        if self.policy is None:
            return None
        index = self.policy.next(self.measured)
        return None if index is None else self.order[index]

    def skip_reason(self, config_id: str) -> str:
        """The ``error`` of a config this harvest did not benchmark."""
        return self.reasons[config_id]


def benchmark_everything(configs: Sequence[str], note: str) -> GuidedRun:
    """The plan of a run the model could not rank: every config, as without ``--budget``."""
    return GuidedRun(configs, configs, {}, note=note)


@dataclass
class GuideStats:
    """What the summary says about the guided runs."""

    compiled: int = 0
    benchmarked: int = 0
    runs: int = 0
    notes: Counter[str] = field(default_factory=Counter)
    """Why the model could not rank a run -> how many runs (benchmarked in full)."""
    warned: Counter[str] = field(default_factory=Counter)
    """Kind of :data:`~train.predict.INPUT_WARNINGS` -> how many runs' ranking raised it."""
    first_warning: dict[str, str] = field(default_factory=dict)
    """Kind of :data:`~train.predict.INPUT_WARNINGS` -> the message of the first run that raised it."""

    def copy(self) -> GuideStats:
        return GuideStats(
            self.compiled,
            self.benchmarked,
            self.runs,
            Counter(self.notes),
            Counter(self.warned),
            dict(self.first_warning),
        )

    def since(self, before: GuideStats) -> GuideStats:
        """What was added after ``before`` (a :meth:`copy` of this object): one run's share."""
        return GuideStats(
            self.compiled - before.compiled,
            self.benchmarked - before.benchmarked,
            self.runs - before.runs,
            self.notes - before.notes,
            self.warned - before.warned,
            {k: m for k, m in self.first_warning.items() if k not in before.first_warning},
        )

    def add(self, other: GuideStats) -> None:
        self.compiled += other.compiled
        self.benchmarked += other.benchmarked
        self.runs += other.runs
        self.notes.update(other.notes)
        self.warned.update(other.warned)
        for kind, message in other.first_warning.items():
            self.first_warning.setdefault(kind, message)


class RunGuide:
    """Ranks each run's compiled configs with ``model`` and plans its benchmarks under
    ``budget`` (one instance per harvest; lanes call :meth:`plan` from their threads).
    ``console``: where the first run of each kind of :data:`~train.predict.INPUT_WARNINGS` is
    noted (None: only the summary says it). ``allow_unseen_arch``: rank for a device or IR
    target the model never saw (``--allow-unseen-arch``; the harvest warned once, see
    :func:`corpus.harvest.app.load_guide`) instead of benchmarking each run in full."""

    def __init__(
        self,
        model: GuideModel,
        budget: Budget,
        ei: EiSettings | None = None,
        console: Console | None = None,
        allow_unseen_arch: bool = False,
    ) -> None:
        self.model = model
        self.budget = budget
        self.ei = ei or EiSettings()
        self.console = console
        self.allow_unseen_arch = allow_unseen_arch
        self.stats = GuideStats()
        self.lock = threading.Lock()

    def plan(
        self,
        run: PlannedRun,
        outcomes: Mapping[str, CompileOutcome | None],
        run_row: Mapping[str, Any],
        arch: str,
        sass: Mapping[str, Any] | None = None,
    ) -> GuidedRun:
        """Rank the configs of ``run`` that compiled (``outcomes`` by config id) for the device
        ``arch`` and choose what to benchmark (``sass``: instruction statistics by config id,
        see :func:`corpus.guide.candidates.candidate_frames`). A ranking that fails benchmarks
        the whole run (the note says why)."""
        compiled = [
            p
            for p in run.configs
            if (o := outcomes.get(p.config.id)) is not None and o.status == Status.OK.value
        ]
        ids = [p.config.id for p in compiled]
        # Handed over by the ranking, not caught with warnings.catch_warnings: its filters are
        # process-wide, and lanes rank from several threads at once.
        caught: list[UserWarning] = []
        try:
            guided = self._rank(run, compiled, outcomes, run_row, arch, sass, caught.append)
        except Exception as exc:  # never lose the run: measure it all, and say why
            guided = benchmark_everything(ids, f"{type(exc).__name__}: {exc}")
        kinds: dict[str, str] = {}
        for warning in caught:  # the first message of each kind: the run counts once per kind
            if isinstance(warning, UnseenArchWarning):  # --allow-unseen-arch: said before any work
                continue
            kinds.setdefault(type(warning).__name__, str(warning))
        with self.lock:
            self.stats.runs += 1
            self.stats.compiled += len(ids)
            if guided.note:
                self.stats.notes[guided.note] += 1
            first = [kind for kind in kinds if kind not in self.stats.first_warning]
            self.stats.warned.update(kinds.keys())
            for kind in first:
                self.stats.first_warning[kind] = kinds[kind]
        for kind in first:
            self._note(kinds[kind])
        return guided

    def _note(self, message: str) -> None:
        """The one line a kind of :data:`~train.predict.INPUT_WARNINGS` gets when it first
        happens: once, not once per run, as their texts carry per-run counts (Python's default
        filter printed one per run amid the progress display)."""
        if self.console is not None:
            headline, details = warning_parts(message)
            details.append("(said for the first run only; the summary counts the runs)")
            print_labelled(self.console, "warning", "yellow", input_warning(f"model {self.model.name}: {headline}", details))

    def _rank(
        self,
        run: PlannedRun,
        compiled: Sequence[PlannedConfig],
        outcomes: Mapping[str, CompileOutcome | None],
        run_row: Mapping[str, Any],
        arch: str,
        sass: Mapping[str, Any] | None,
        on_input_warning: Callable[[UserWarning], None],
    ) -> GuidedRun:
        ids = [p.config.id for p in compiled]
        if len(ids) < 2:
            return GuidedRun(ids, ids, {})
        known = {i: o for i, o in outcomes.items() if o is not None}
        candidates = candidate_frames(run, compiled, known, run_row, arch=arch, level=self.model.level, sass=sass)
        scores = score_candidates(
            self.model,
            candidates.frame,
            candidates.ir_nodes,
            candidates.ir_edges,
            candidates.ir_graphs,
            arch=arch,
            allow_unseen_arch=self.allow_unseen_arch,
            on_input_warning=on_input_warning,
        )
        order = np.argsort(scores.rank, kind="stable")
        ranked = [ids[i] for i in order]
        rank_of = {config_id: position + 1 for position, config_id in enumerate(ranked)}
        default = run.default_config_id if run.default_config_id in rank_of else None
        n = len(ranked)
        if self.budget.auto:
            policy = EiPolicy(
                scores.predicted_ms[order],
                scores.p_valid[order],
                np.arange(1, n + 1),
                default=None if default is None else rank_of[default] - 1,
                features=knob_matrix(candidates.frame)[order],
                settings=self.ei,
            )
            first = [ranked[i] for i in policy.start]
            reasons = {
                c: f"{BUDGET_SKIP} auto: model {self.model.name} ranked it {rank_of[c]} of {n} and "
                f"expected no config to gain {self.ei.threshold:.0%} more"
                for c in ranked
            }
            return GuidedRun(ranked, first, reasons, policy)
        extra = self.budget.extra_configs(n)
        assert extra is not None
        # The configs are benchmarked without looking at results in between: the model's order
        # spread over the knobs, so one region it is wrong about cannot take the whole budget.
        hedged = hedged_order(
            scores.predicted_ms,
            scores.p_valid,
            scores.rank,
            features=knob_matrix(candidates.frame),
            settings=self.ei,
        )
        picks = [ids[i] for i in hedged]
        pick_of = {config_id: position + 1 for position, config_id in enumerate(picks)}
        others = [c for c in picks if c != default]
        first = ([default] if default else []) + others[:extra]
        reasons = {
            c: f"{BUDGET_SKIP} {self.budget.text}: model {self.model.name} ranked it {rank_of[c]} "
            f"of {n}, {pick_of[c]} in its hedged order"
            for c in ranked
        }
        return GuidedRun(ranked, first, reasons)

    def plan_text(self, compiled: Sequence[int]) -> str:
        """What the budget will benchmark of runs with ``compiled`` configs each (to measure,
        before compiling: the dry run's line)."""
        total = sum(compiled)
        most = sum(self.budget.most_benchmarked(n) for n in compiled)
        if self.budget.auto:
            how = (
                f"model {self.model.name}'s pick and the default, then one config at a time while "
                f"one is expected to gain {self.ei.threshold:.0%}: up to all {total:,} configs"
            )
        elif total and most >= total:  # K or P% covers every run: said here, once, not per run
            return (
                f"--budget {self.budget.text} benchmarks all {total:,} configs to measure (the default "
                f"and model {self.model.name}'s top {self.budget.text} are every config of each run): "
                "it saves no benchmark over a harvest without --budget, only adds the ranking"
            )
        else:
            whole = sum(1 for n in compiled if n and self.budget.most_benchmarked(n) >= n)
            runs = sum(1 for n in compiled if n)
            every = f" (every config of {whole} of the {runs} runs)" if whole else ""
            how = f"the default and model {self.model.name}'s hedged top {self.budget.text} of each run: at most {most:,} of {total:,} configs{every}"
        return f"--budget {self.budget.text} benchmarks {how}; every config is compiled, the rest written as skipped rows"

    def count_benchmarked(self, configs: int) -> None:
        """Add ``configs`` benchmarked configs of one run to the summary's count."""
        with self.lock:
            self.stats.benchmarked += configs

    def snapshot(self) -> GuideStats:
        """The counts so far (a Ray lane takes one before and after each run)."""
        with self.lock:
            return self.stats.copy()

    def print_summary(self, console: Console, best_of: Sequence[BestOfRun]) -> None:
        """Benchmarks spent vs an exhaustive harvest, and what was found (``best_of``: the
        summary's line of each run)."""
        stats = self.stats
        if not stats.compiled:
            print_trimmed(  # Text: a checkpoint's name and the --budget typed are no markup
                console,
                Text(
                    f"guided by model {self.model.name} (--budget {self.budget.text}): no config "
                    f"compiled in {stats.runs} run(s), nothing to rank"
                ),
            )
            return
        share = stats.benchmarked / stats.compiled
        print_trimmed(  # wrapped, no line ending in a blank
            console,
            Text(
                f"guided by model {self.model.name} (--budget {self.budget.text}): benchmarked "
                f"{stats.benchmarked} of {stats.compiled} compiled config(s) ({share:.0%}) in "
                f"{stats.runs} run(s); an exhaustive harvest benchmarks all {stats.compiled}"
            ),
        )
        speedups = [
            row.default_ms / row.best_ms
            for row in best_of
            if row.best_ms is not None and row.default_ms is not None
        ]
        if speedups:
            mean = math.exp(float(np.mean(np.log(speedups))))
            print_trimmed(
                console,
                Text(
                    f"best found: {mean:.2f}x faster than the default config (geometric mean over "
                    f"{len(speedups)} run(s); per run in the table above)"
                ),
            )
        for note, runs in stats.notes.most_common():
            print_labelled(
                console, "warning", "yellow", f"the model could not rank {runs} run(s), benchmarked in full: {note}"
            )
        for kind, what in INPUT_WARNINGS.items():
            if runs := stats.warned[kind]:
                headline, details = warning_parts(stats.first_warning[kind])
                line = f"in {runs} of {stats.runs} guided run(s) the model ranked the candidates {what}" + ("; in the first:" if details else f"; the first run's: {headline}")
                print_labelled(console, "warning", "yellow", input_warning(line, details))
