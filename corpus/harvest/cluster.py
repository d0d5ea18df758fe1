"""The harvest on a Ray cluster (``python -m corpus.harvest --ray [ADDRESS]``).

One long-lived :class:`Lane` actor per GPU (``num_gpus=1``; on the interpreter, one per unit of
the custom resource :data:`LANE_RESOURCE`, or a single one) holds a :class:`Harvester` with one
benchmark lane; its compiles are Ray CPU tasks (:func:`compile_config`) that run on any node.
The driver plans, drops what the dataset already holds (:mod:`.resume`), and feeds runs to the
actors one at a time, longest estimated cost first, so every actor stays busy and the tail is
short. An actor commits each run (rows, then the ``runs`` row) before it reports it done, so the
driver holds no data and a restarted driver resumes from the dataset. A lost actor is restarted
by Ray (``max_restarts``) and its in-flight run is handed out again; the rows it had written for
that run were never committed (each actor incarnation is a harvest of its own ``harvest_id``),
so nothing is lost or counted twice.

The driver holds the plan lock, records the harvest as pending and does the last step
(compaction, card) as a harvest on one machine does (:func:`corpus.harvest.app.harvesting`), so
a rerun after a kill during that step completes it; the lanes claim each run before measuring it
(:mod:`corpus.harvest.claims`), so a harvest whose plan overlaps (on Ray or not) never measures a
(run, config) at the same time. Locks, claims and the pending record are flocks and files of a
local dataset (a path every node and the driver reach, e.g. NFS): an fsspec URL (an object
store) has none, as for any harvest.
"""

from __future__ import annotations

import contextlib
import io
import logging
import secrets
import signal
import string
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from corpus.destination import check_out, probe_out
from corpus.harvest.app import (
    GuideRefused,
    HarvestConfig,
    HarvestError,
    HarvestOutcome,
    device_facts,
    finish_nothing_to_do,
    harvesting,
    load_guide,
    load_guide_inputs,
    plan_request,
    resolve_execution,
    said_on_stop,
    versions,
)
from corpus.harvest.checks import check_dtypes, check_plan, load_families
from corpus.harvest.claims import RunClaims, committed_harvests
from corpus.harvest.compile_worker import CompileOutcome, CompileTask
from corpus.harvest.device import DeviceFacts
from corpus.harvest.estimate import valid_configs
from corpus.harvest.identity import toolchain_fingerprint
from corpus.harvest.pending import runs_committed_by
from corpus.harvest.plan import PlannedRun, plan_runs
from corpus.harvest.report import RunSummary, print_plan, print_summary, progress_line
from corpus.harvest.resume import ResumePlan, resume_plan
from corpus.harvest.runner import (
    MEASURED_ELSEWHERE,
    CompilePool,
    Execution,
    Harvester,
    HarvestTotals,
    bench_settings,
)
from corpus.harvest.scratch import scratch_directory
from corpus.harvest.settings import read_settings, triton_cache_dir, worker_environments
from corpus.suite.spec import KernelSpec
from schemas.console import fill_markup, key_values, plain_text, print_trimmed
from schemas.enums import DEVICE_INTERPRETER, Status
from schemas.writer import new_writer_id

if TYPE_CHECKING:
    from corpus.harvest.guided import GuideStats  # imports train (torch): a guided harvest only
    from train.guide import Budget, GuideModel

LANE_RESOURCE = "kernel_corpus_lane"
"""Custom Ray resource that stands for a benchmark lane on the interpreter (no GPU): start the
cluster with ``--resources '{"kernel_corpus_lane": N}'`` for N interpreter lanes."""
MAX_RESTARTS = 3
"""How often Ray restarts a lost lane actor."""
RESTART_WAIT_S = 300.0
"""How long the driver waits for Ray to bring a lost lane actor back before retiring it."""
PING_S = 0.5
MAX_ATTEMPTS = 3
"""How often one run is handed out before the harvest gives up on it (it resumes next time)."""
ACTOR_PREFIX = "kernel-corpus-lane-"
"""Lane actors are named ``kernel-corpus-lane-<harvest token>-<i>`` (``ray list actors``)."""
LANE_CLOSE_S = 20.0
"""Seconds a Ray harvest that ends (finished or stopped) waits, in all, for its lanes to close
before it kills those still open (:func:`close_lanes`): within the 30 s that Slurm (KillWait)
and Kubernetes (terminationGracePeriodSeconds) give by default between SIGTERM and SIGKILL,
with time left for the driver's last line."""


@dataclass(frozen=True)
class LaneFacts:
    """What a lane actor reports when it starts: where it runs and what it measures with."""

    node: str
    facts: DeviceFacts
    toolchain: Mapping[str, Any]
    execution: Execution
    refusal: str | None = None
    """Why the lane's ``--rank-with`` model cannot rank here (:class:`GuideRefused`'s message),
    for the driver to refuse the harvest with; None: it ranks, or no model guides."""

    @property
    def model(self) -> str:
        return self.facts.model


@dataclass(frozen=True)
class RunDone:
    """A committed run as the driver sees it: counts, time and the summary's line, no rows."""

    run_id: str
    label: str
    node: str
    configs: int
    by_status: Mapping[str, int]
    seconds: float
    """Wall seconds the lane spent on the run."""
    guided: GuideStats | None = None
    """``--rank-with``: the run's share of the guide's counts (configs compiled, benchmarked)."""
    summary: RunSummary | None = None
    """Its best config and timing settings; None when nothing was measured (another harvest
    committed the run while this lane waited for its claim)."""
    compile_s: float = 0.0
    bench_s: float = 0.0
    bookkeeping_s: float = 0.0
    static_stats_s: float = 0.0
    """``cuobjdump`` in the compile tasks plus the lane's ``nvdisasm`` calls during the run."""
    sass_calls: int = 0
    ruled_out: int = 0
    """Of ``by_status``'s skipped rows, those of configs the family rules out: no work, so not
    in the progress line's configs (the configs to measure)."""


# -- compile tasks ----------------------------------------------------------------------------

_POOLS: dict[tuple[Any, ...], CompilePool] = {}
"""One compile process per Ray worker process and compile setup, kept across tasks."""
_SCRATCH: list[contextlib.ExitStack] = []


def compile_config(
    execution: Execution, environment: Mapping[str, str], task: CompileTask
) -> CompileOutcome:
    """Compile one config in this Ray worker's compile process (started on first use, with the
    same hard timeout and error mapping as the local pool). Its scratch directory is local to
    this node (the one in ``environment`` belongs to the actor's node)."""
    key = (
        execution.suite,
        execution.target,
        execution.static_stats,
        execution.compile_timeout_s,
        tuple(sorted(environment.items())),
    )
    pool = _POOLS.get(key)
    if pool is None:
        stack = contextlib.ExitStack()
        _SCRATCH.append(stack)
        scratch = stack.enter_context(scratch_directory())
        pool = _POOLS[key] = CompilePool(
            replace(execution, workers=1), {**environment, "TMPDIR": scratch}
        )
    return pool.submit(task).result()


class RayCompilePool:
    """Compiles as Ray CPU tasks; what :class:`Harvester` needs of a compile pool."""

    def __init__(self, execution: Execution, environment: Mapping[str, str]) -> None:
        import ray

        self.execution = execution
        self.environment = dict(environment)
        self.remote = ray.remote(num_cpus=1)(compile_config)

    def submit(self, task: CompileTask) -> Future[CompileOutcome]:
        return self.remote.remote(self.execution, self.environment, task).future()

    def warm_up(self) -> None:
        """Nothing to start: Ray starts its workers."""

    def close(self) -> None:
        """Nothing to stop: Ray owns its workers."""


# -- the lane actor ---------------------------------------------------------------------------


class Lane:
    """A benchmark lane on one device of one node (run as a Ray actor, see :func:`lane_actor`).

    It reads its own node's environment (Triton cache, CUDA_VISIBLE_DEVICES, which Ray sets to
    the actor's GPU), so lanes on different nodes need not agree on paths. ``token``: the
    harvest's, which the names of every file the lane writes start with (in every incarnation:
    Ray restarts an actor with the same arguments), so the driver can record them as pending
    before any lane writes (:mod:`corpus.harvest.pending`). ``claims``: whether the lane claims
    each run before measuring it (:mod:`corpus.harvest.claims`); False for ``--no-resume`` and
    ``--allow-repeat``.

    Every constructor argument is a small value that Ray keeps inline in the actor's creation
    task, which is what a restart (``max_restarts``) reruns. What the dataset held when the
    driver planned (the harvest_ids of each run committed then, which the claims compare with)
    comes with each :meth:`execute` instead: as one ``ray.put`` object passed to the
    constructor, it was an argument in the object store, which Ray does not hold for a restart
    (only the driver's own reference kept it; Ray logged an error line about it on every
    harvest: ray-project/ray#53727); and passed by value, it grows with the dataset past what
    Ray inlines (100 KiB), beyond which Ray puts it in the object store itself."""

    def __init__(self, config: HarvestConfig, token: str, claims: bool) -> None:
        import ray

        settings = read_settings()
        interpreter = config.device == "cpu"
        devices = (DEVICE_INTERPRETER,) if interpreter else ("cuda:0",)
        facts = device_facts(devices, settings.visible_devices)
        execution = resolve_execution(config, settings, devices, facts)
        toolchain = toolchain_fingerprint(
            settings.codegen_env, ir_target=execution.target if interpreter else None
        )
        if execution.cache_dir is None:
            execution = replace(execution, cache_dir=triton_cache_dir(settings, toolchain))
        execution = replace(execution, flush_every_s=float("inf"))  # execute_one commits each run
        self.stack = contextlib.ExitStack()
        scratch = self.stack.enter_context(scratch_directory())
        environment_for = worker_environments(
            settings, cache_dir=execution.cache_dir or "", scratch_dir=scratch
        )

        specs = load_families(config.suite, config.families)
        # --rank-with: each lane ranks its own runs (the model directory must be on every node,
        # as the suite is). The driver says (--allow-unseen-arch) or refuses what the same check
        # finds here; a lane that raised its refusal would fail to start, which the driver reports
        # as a lane error, so the lane hands it over (describe) and never runs.
        refusal = None
        try:
            self.guide = load_guide(config, facts.arch, Console(file=io.StringIO()), ir_target=execution.target)
        except GuideRefused as exc:
            self.guide, refusal = None, str(exc)
        self.harvester = Harvester(
            execution,
            specs,
            facts,
            toolchain,
            versions(),
            environment_for,
            pool=RayCompilePool(execution, environment_for(False)),
            claims=RunClaims.for_harvest(
                config.out, (), enabled=claims, budgeted=self.guide is not None
            ),
            writer_id=f"{token}-{new_writer_id()}",
            guide=self.guide,
        )
        self.facts = LaneFacts(ray.util.get_node_ip_address(), facts, toolchain, execution, refusal)
        self.current: str | None = None
        self.executing = threading.Lock()
        """Held while :meth:`execute` runs, so that :meth:`close` (in the actor's other thread)
        waits for the run in flight to be dropped or committed whole."""
        self.prefetched: dict[str, dict[str, Future[CompileOutcome]]] = {}
        """Compiles queued for the lane's next run (see :meth:`execute`)."""

    def describe(self) -> LaneFacts:
        return self.facts

    def busy(self) -> str | None:
        """The run_id being executed now (None when idle)."""
        return self.current

    def execute(
        self, run: PlannedRun, upcoming: PlannedRun | None = None, known: frozenset[str] = frozenset()
    ) -> RunDone:
        """Execute ``run`` and commit it; ``upcoming``, the run this lane gets next, has its
        compiles queued first, so they run while this one is benchmarked. ``known``: the
        harvest_ids of ``run`` committed when the driver planned, which its claim does not take
        for news (:meth:`RunClaims.claim`); a commit by any other harvest_id, this harvest's
        earlier lane incarnations included, is, so a restarted lane measures only what no one
        committed since."""
        with self.executing:
            return self._execute(run, upcoming, known)

    def _execute(self, run: PlannedRun, upcoming: PlannedRun | None, known: frozenset[str]) -> RunDone:
        if self.harvester.claims is not None:
            self.harvester.claims.learn((run.run_id, harvest) for harvest in known)
        self.current = run.run_id
        begin = time.perf_counter()
        listed = self._listing_spent()
        guided = self.guide.snapshot() if self.guide is not None else None
        compiles = self.prefetched.pop(run.run_id, None)
        if upcoming is not None and upcoming.run_id not in self.prefetched:
            self.prefetched[upcoming.run_id] = self.harvester.submit_compiles(upcoming)
        try:
            result = self.harvester.execute_one(run, compiles)
        finally:
            self.current = None
        rows = result.rows if result else []
        listing_s, listing_calls = (a - b for a, b in zip(self._listing_spent(), listed, strict=True))
        return RunDone(
            run.run_id,
            run.label,
            self.facts.node,
            len(rows),
            Counter(row["status"] for row in rows),
            time.perf_counter() - begin,
            guided=self._guide_share(guided),
            summary=RunSummary.of(result) if result and rows else None,
            ruled_out=sum(1 for p in result.run.configs if p.skip_reason is not None) if result else 0,
            compile_s=result.compile_s if result else 0.0,
            bench_s=result.bench_s if result else 0.0,
            bookkeeping_s=result.bookkeeping_s if result else 0.0,
            static_stats_s=(result.static_stats_s if result else 0.0) + listing_s,
            sass_calls=int(listing_calls),
        )

    def _guide_share(self, before: GuideStats | None) -> GuideStats | None:
        """What the guide counted since ``before`` (its snapshot as the run began)."""
        if self.guide is None or before is None:
            return None
        return self.guide.snapshot().since(before)

    def _listing_spent(self) -> tuple[float, int]:
        """Seconds and calls of the lane's ``nvdisasm`` batcher so far (it lists every run's
        cubins before the run's rows are committed)."""
        sass = self.harvester.sass
        return (sass.busy_s, sass.calls) if sass is not None else (0.0, 0)

    def close(self) -> None:
        """Stop the lane, promptly, committing nothing partial. It runs in the actor's second
        thread, beside an :meth:`execute` in flight: the harvester's stop flag makes that run
        drop itself at its next step (uncommitted, as a local harvest drops its run in flight on
        Ctrl-C), and its benchmark worker is killed so that no call waiting on it holds the stop
        up; a run that had finished measuring commits whole. Then it waits for that
        :meth:`execute` to return and kills a worker it may have started meanwhile. A lane
        that cannot stop in time (a compile or a claim it waits for) is killed by the driver
        (:func:`close_lanes`): its files of the run then commit nothing (no ``runs`` row)."""
        self.harvester.stop.set()
        self.harvester.close()
        with self.executing:
            self.harvester.close()
        self.stack.close()


def lane_actor(interpreter: bool, resources: Mapping[str, float]) -> Any:
    """The Ray actor class of :class:`Lane` for this cluster: one GPU each, or one unit of
    :data:`LANE_RESOURCE` on the interpreter (when the cluster declares it). The actor takes no
    CPU of its own (its compiles are CPU tasks); two threads, so ``busy`` answers and ``close``
    stops a run mid-way."""
    import ray

    options: dict[str, Any] = {"num_cpus": 0, "max_restarts": MAX_RESTARTS, "max_concurrency": 2}
    if not interpreter:
        options["num_gpus"] = 1
    elif resources.get(LANE_RESOURCE):
        options["resources"] = {LANE_RESOURCE: 1}
    return ray.remote(**options)(Lane)


def lane_count(interpreter: bool, resources: Mapping[str, float]) -> int:
    """Lanes the cluster can hold: its GPUs, or on the interpreter its :data:`LANE_RESOURCE`
    units (one lane when it declares none)."""
    if interpreter:
        return max(1, int(resources.get(LANE_RESOURCE, 1)))
    gpus = int(resources.get("GPU", 0))
    if gpus < 1:
        raise HarvestError(
            "--ray: the Ray cluster has no GPU; use --device cpu for the interpreter"
        )
    return gpus


# -- the driver -------------------------------------------------------------------------------


@dataclass
class Feed:
    """The driver's bookkeeping: which run each actor executes, and what came back."""

    queue: deque[PlannedRun]
    known: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """run_id -> harvest_ids that had committed the run when the driver planned: each run
    goes to its lane with its own (:meth:`Lane.execute`), so a restarted lane has them too."""
    attempts: Counter[str] = field(default_factory=Counter)
    done: list[RunDone] = field(default_factory=list)
    given_up: list[PlannedRun] = field(default_factory=list)
    lost: int = 0
    """Runs handed out again because their actor died."""


RAY_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
"""The logger through which Ray announces its token authentication when a cluster starts."""
RAY_LOCAL_NOTICES = ("Token authentication is enabled for this Ray cluster",)
"""What Ray logs as a warning when ``--ray local`` starts a cluster: token authentication is
on by default. That cluster is this process's own and is stopped at the end, so there is
nothing for the user to do about it."""


class DropLogRecords(logging.Filter):
    """Drops log records whose message contains one of ``fragments``."""

    def __init__(self, fragments: tuple[str, ...]) -> None:
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(fragment in message for fragment in self.fragments)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals whose handlers the harvest sets (Ctrl-C, a scheduler's preemption, a closed
terminal: :func:`schemas.signals.stop_on_termination`) and ``ray.init`` replaces."""


@contextlib.contextmanager
def keeping_signal_handlers() -> Iterator[None]:
    """Put back this process's handlers of :data:`STOP_SIGNALS` when the block ends.

    ``ray.init`` installs its own SIGTERM handlers (a Python one that exits 1, and its core
    worker's fatal-signal handler, which dumps a stack and aborts): without this, a Ray harvest
    that Slurm or Kubernetes preempts with SIGTERM died with SIGABRT (exit 134) instead of
    stopping as a harvest on one machine does (finished runs committed, "stopped by SIGTERM",
    exit 143). Python's own table still names the harvest's handlers, so setting them again
    reinstalls them at the C level. Only the main thread may set handlers."""
    main = threading.current_thread() is threading.main_thread()
    saved = {number: signal.getsignal(number) for number in STOP_SIGNALS} if main else {}
    try:
        yield
    finally:
        for number, handler in saved.items():
            if handler is not None:  # None: set outside Python, cannot be put back
                signal.signal(number, handler)


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` ("auto": the one this machine belongs to; "local":
    start one in this process) unless this process already did. The harvest's signal handlers
    survive it (:func:`keeping_signal_handlers`)."""
    import ray

    if ray.is_initialized():
        return
    with keeping_signal_handlers():
        if address != "local":
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, ValueError) as exc:  # no cluster; a bad address; no client
                raise HarvestError(connect_refusal(address, exc)) from None
            return
        quiet = DropLogRecords(RAY_LOCAL_NOTICES)
        logger = logging.getLogger(RAY_AUTH_LOGGER)
        logger.addFilter(quiet)
        try:
            # "local", not None: None joins the cluster RAY_ADDRESS or `ray start` names
            ray.init(address="local", log_to_driver=False)
        finally:
            logger.removeFilter(quiet)


def connect_refusal(address: str, error: Exception) -> str:
    """What to tell the user when joining the Ray cluster at ``address`` failed with ``error``
    (Ray's own message says ``--address`` and ``RAY_ADDRESS``, flags of ``ray``, not of the
    harvest, and came with a traceback)."""
    if address.startswith("ray://") and "ray[client]" in str(error):
        return (
            f"--ray {address}: connecting from outside the cluster needs Ray Client on this "
            "machine: pip install 'ray[client]' (or run the harvest on a node of the cluster "
            "with --ray)"
        )
    if address == "auto":
        return (
            "--ray (auto): this machine has joined no Ray cluster (no `ray start` here, "
            "RAY_ADDRESS not set): start one with `ray start --head`, give its address "
            "(--ray ray://HEAD:10001), or use --ray local for one in this process"
        )
    return f"--ray {address}: cannot join the Ray cluster there: {error}"


def harvest_on_ray(
    config: HarvestConfig, console: Console | None = None, work_begins: Callable[[], None] | None = None
) -> HarvestOutcome:
    """Plan, resume and execute a harvest on the Ray cluster ``config.ray``; ``work_begins``:
    called once the driver holds the plan lock, before any lane measures (until then a refusal
    leaves ``--out`` as it was: :func:`corpus.harvest.app.run_harvest`)."""
    console = console or Console()
    try:
        import ray
    except ImportError:
        raise HarvestError("--ray needs Ray: pip install -e '.[ray]' in a clone") from None
    if config.shard != (0, 1):
        raise HarvestError("--ray schedules the whole plan dynamically; drop --shard")
    guide_inputs = load_guide_inputs(config)  # a bad --budget or --rank-with: before any actor
    specs = load_families(config.suite, config.families)  # bad input is refused before any work
    check_dtypes(config.dtypes, specs)
    interpreter = config.device == "cpu"
    if config.device not in ("cpu", "cuda", "auto"):
        raise HarvestError(
            f"--ray --device {config.device}: use cuda (one lane per GPU of the cluster) or cpu"
        )
    if config.dry_run:
        check_out(config.out, force=config.force_out)  # what the harvest itself would refuse
    else:
        probe_out(config.out, force=config.force_out)  # before a cluster or an actor starts
    known = committed_harvests(config.out) if config.claims_runs else None  # before resume reads
    connect(config.ray or "auto")
    resources = ray.cluster_resources()
    count = lane_count(interpreter, resources)
    actor_class = lane_actor(interpreter, resources)
    token = harvest_token()
    # only small values as constructor arguments: Ray reruns the constructor with them on a
    # restart; what was committed goes to the lanes run by run (Lane.execute)
    actors = [
        actor_class.options(name=f"{ACTOR_PREFIX}{token}-{i}").remote(config, token, known is not None)
        for i in range(count)
    ]
    by_run: dict[str, set[str]] = {}
    for run_id, harvest in known or ():
        by_run.setdefault(run_id, set()).add(harvest)
    known_of = {run_id: frozenset(harvests) for run_id, harvests in by_run.items()}
    # Stopped, the driver knows only the runs whose results reached it; a lane finishing a run
    # as it closes commits it too, so the count said on the way out is the dataset's
    with said_on_stop(lambda: runs_committed_by(config.out, token)):
        try:
            return _harvest(config, specs, actors, interpreter, console, token, guide_inputs, known_of, work_begins)
        finally:
            if killed := close_lanes(actors):
                console.print(
                    f"lane(s) {', '.join(map(str, killed))} still closing after {LANE_CLOSE_S:g} s: "
                    "killed (a run they had not committed is not in --out; the same command measures it)",
                    markup=False, highlight=False,
                )  # fmt: skip


def close_lanes(actors: Sequence[Any], deadline_s: float = LANE_CLOSE_S) -> list[int]:
    """Ask every lane actor to close at once (:meth:`Lane.close`), wait for them all under one
    deadline of ``deadline_s`` seconds, then kill every actor (no restart). Returns the indices
    (into ``actors``) of those killed still closing. One lane at a time, each with its own
    timeout, a stop took N times as long, past a scheduler's grace before SIGKILL."""
    import ray

    closing: dict[Any, int] = {}
    try:
        for index, actor in enumerate(actors):
            with contextlib.suppress(Exception):  # an actor Ray could not start or lost for good
                closing[actor.close.remote()] = index
        ready, _ = ray.wait(list(closing), num_returns=len(closing), timeout=deadline_s) if closing else ([], [])
    finally:  # a second signal while they close still kills them
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
    closed = {closing[ref] for ref in ready}
    return [index for index in closing.values() if index not in closed]


def harvest_token() -> str:
    """A new Ray harvest's token: lowercase letters (``ray`` and 12 random ones), so that in
    its lanes' file names ``part-<token>-<writer id>-<seq>.parquet`` it reads as a prefix word,
    as ``compact`` and ``scrub`` add theirs. Also keeps actor names apart when two harvests
    share a cluster."""
    return "ray" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))


def _harvest(
    config: HarvestConfig,
    specs: Mapping[str, KernelSpec],
    actors: list[Any],
    interpreter: bool,
    console: Console,
    token: str,
    guide_inputs: tuple[GuideModel, Budget] | None,
    known: Mapping[str, frozenset[str]],
    work_begins: Callable[[], None] | None = None,
) -> HarvestOutcome:
    import ray

    try:
        lanes: list[LaneFacts] = ray.get([actor.describe.remote() for actor in actors])
    except ray.exceptions.RayError as exc:  # e.g. no CUDA on a node, a suite that fails there
        raise HarvestError(
            f"--ray: a lane actor failed to start: {str(exc).strip()[-600:]}"
        ) from None
    models = {lane.model for lane in lanes}
    toolchains = {repr(sorted(lane.toolchain.items())) for lane in lanes}
    if len(models) > 1 or len(toolchains) > 1:
        raise HarvestError(
            f"--ray: lanes differ ({', '.join(sorted(models))}; {len(toolchains)} toolchain(s)); harvest each model and toolchain separately"
        )
    first = lanes[0]
    request = plan_request(
        config, interpreter, first.model, first.toolchain, first.execution.target, first.execution.sm_count
    )
    planned = plan_runs(specs, request)
    check_plan(planned, why_empty=[], allow_empty=config.allow_empty)
    settings = bench_settings(first.execution)
    # refuses a model that cannot rank for the lanes' arch or IR target, before any run (a dry
    # run too); with --allow-unseen-arch it warns once, here
    guide = load_guide(config, first.facts.arch, console, guide_inputs, ir_target=first.execution.target)
    if refused := next((lane.refusal for lane in lanes if lane.refusal), None):
        raise GuideRefused(refused)  # a node whose checkpoint at that path is another model
    resumed = (
        resume_plan(config.out, planned, settings, budgeted=guide is not None)
        if config.resume
        else ResumePlan(list(planned))
    )
    if config.dry_run:
        committed = {r.run_id for r in planned} - {r.run_id for r in resumed.todo}
        budget = None if guide is None else guide.plan_text([valid_configs(run) for run in resumed.todo])
        print_plan(console, planned, committed, first.facts, first.execution, budget=budget)
        return HarvestOutcome(planned, len(planned) - len(resumed.todo), None)
    console.print(
        f"harvest on Ray: {resumed.describe()}; {len(actors)} lane(s) on {len({lane.node for lane in lanes})} node(s), device {first.model}, out {config.out}",
        markup=False,  # device and path are text: "runs[x]" kept
    )
    if guide is not None and resumed.todo:  # as a local harvest's start lines: before the work
        print_trimmed(console, key_values([("budget", guide.plan_text([valid_configs(run) for run in resumed.todo]))]))
    if not resumed.todo:
        finish_nothing_to_do(config, planned, console, resumed)
        return HarvestOutcome(planned, len(planned), None)
    # the same plan lock, pending record and last step as a harvest on one machine; the lanes
    # claim each run before measuring it
    with harvesting(config, planned, token, console, work_begins=work_begins):
        feed = Feed(deque(sorted(resumed.todo, key=lambda r: (-r.estimated_cost, r.run_id))), known)
        begin = time.monotonic()
        with said_on_stop(lambda: sum(1 for done in feed.done if done.configs)):
            feed_runs(feed, actors, console)
        elapsed = time.monotonic() - begin
        totals = cluster_totals(feed.done)
        print_nodes(console, feed, elapsed)
        runs = [d.summary for d in feed.done if d.summary]
        print_summary(console, totals, elapsed, config.out, runs=runs)
        if guide is not None:
            for done in feed.done:
                if done.guided is not None:
                    guide.stats.add(done.guided)
            guide.print_summary(console, [run.best for run in runs])
    if feed.given_up:
        raise HarvestError(
            f"{len(feed.given_up)} run(s) not done: lost with their lane {MAX_ATTEMPTS} times, "
            "or every lane was lost; rerun the same command to resume them"
        )
    return HarvestOutcome(planned, len(planned) - len(resumed.todo), totals)


def feed_runs(feed: Feed, actors: list[Any], console: Console) -> None:
    """Hand runs to actors as they free up, until every run is committed or given up.

    Each actor also holds the run it gets next (taken from the queue when its current one is
    handed out), so that run's compiles run during this one's benchmark: one run of
    lookahead per lane, as the local harvest's pipeline has. An actor that died mid-run gets
    both back in the queue (at the front: they are among the longest left) and is pinged until
    Ray has restarted it; one that stays dead (restarts exhausted, or not back within
    :data:`RESTART_WAIT_S`) is retired."""
    import ray
    from ray.exceptions import ActorUnavailableError, RayActorError

    pending: dict[Any, tuple[int, PlannedRun | None]] = {}
    """Object ref -> (actor, its run; None for a ping of a restarting actor)."""
    upcoming: dict[int, PlannedRun] = {}
    lost_at: dict[int, float] = {}

    def give(index: int) -> None:
        run = upcoming.pop(index, None) or (feed.queue.popleft() if feed.queue else None)
        if run is None:
            return
        after = feed.queue.popleft() if feed.queue else None
        if after is not None:
            upcoming[index] = after
        known = feed.known.get(run.run_id, frozenset())
        pending[actors[index].execute.remote(run, after, known)] = (index, run)

    def ping(index: int) -> None:
        pending[actors[index].describe.remote()] = (index, None)

    def lost(index: int, run: PlannedRun | None) -> None:
        if index in upcoming:
            feed.queue.appendleft(upcoming.pop(index))
        if run is not None:
            _requeue(feed, run, index, console)
        lost_at.setdefault(index, time.monotonic())

    runs_total = len(feed.queue)
    configs_total = sum(valid_configs(run) for run in feed.queue)  # as a local harvest's progress
    counts: Counter[str] = Counter()
    begin = time.monotonic()
    for index in range(len(actors)):
        give(index)
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        index, run = pending.pop(ready[0])
        try:
            value = ray.get(ready[0])
        except ActorUnavailableError:  # restarting: ask again shortly, unless it takes too long
            lost(index, run)
            if time.monotonic() - lost_at[index] <= RESTART_WAIT_S:
                time.sleep(PING_S)
                ping(index)
        except RayActorError:
            lost(index, run)
            if run is not None:  # it died mid-run: Ray restarts it
                ping(index)
            # else a ping found it dead for good: the lane is retired
        else:
            if run is not None:
                feed.done.append(value)
                counts.update(value.by_status)
                counts[Status.SKIPPED.value] -= value.ruled_out  # rows, not configs to measure
                if not value.configs:  # another harvest committed it while the lane waited
                    counts[MEASURED_ELSEWHERE] += valid_configs(run)
                # where the whole harvest stands (runs, configs, ETA), then this run's lane
                line = progress_line(
                    len(feed.done), runs_total, value.label, sum(counts.values()),
                    configs_total, counts, time.monotonic() - begin,
                )  # fmt: skip
                console.print(
                    f"{line}; {value.configs} config(s) in {value.seconds:.1f} s on {value.node} (lane {index})",
                    soft_wrap=True, highlight=False, markup=False,
                )  # fmt: skip
            lost_at.pop(index, None)
            give(index)
    feed.given_up.extend(feed.queue)  # only when every lane was retired


def _requeue(feed: Feed, run: PlannedRun, index: int, console: Console) -> None:
    feed.lost += 1
    feed.attempts[run.run_id] += 1
    console.print(fill_markup("[yellow]lane {index} lost[/] during {run}; the run is handed out again", index=index, run=run.label))
    if feed.attempts[run.run_id] >= MAX_ATTEMPTS:
        feed.given_up.append(run)
    else:
        feed.queue.appendleft(run)


def cluster_totals(done: Sequence[RunDone]) -> HarvestTotals:
    """The harvest's counters summed over what the lanes returned (no rows: the driver holds
    none)."""
    # a run another harvest committed whole while its lane waited for the claim comes back
    # with no config: done, not measured here (it used to count in "harvest finished: N runs")
    measured = sum(1 for d in done if d.configs)
    totals = HarvestTotals(
        runs_done=measured, configs_done=sum(d.configs for d in done), runs_elsewhere=len(done) - measured
    )
    for run in done:
        for status, n in run.by_status.items():
            totals.by_status[status] = totals.by_status.get(status, 0) + n
        totals.compile_s += run.compile_s
        totals.bench_s += run.bench_s
        totals.bookkeeping_s += run.bookkeeping_s
        totals.static_stats_s += run.static_stats_s
        totals.sass_calls += run.sass_calls
    return totals


def print_nodes(console: Console, feed: Feed, elapsed_s: float) -> None:
    """Runs, configs and throughput per node (before :func:`print_summary`'s totals)."""
    table = Table(title=f"per-node throughput ({elapsed_s:.1f} s wall)")
    for column in ("node", "runs", "configs", "busy s", "configs/s"):
        table.add_column(column, justify="left" if column == "node" else "right")
    by_node: dict[str, list[RunDone]] = {}
    for done in feed.done:
        by_node.setdefault(done.node, []).append(done)
    for node, dones in sorted(by_node.items()):
        configs = sum(d.configs for d in dones)
        table.add_row(
            plain_text(node),  # a host name from Ray
            str(len(dones)),
            str(configs),
            f"{sum(d.seconds for d in dones):.1f}",
            f"{configs / elapsed_s:.2f}" if elapsed_s > 0 else "-",
        )
    console.print(table)
    if feed.lost:
        console.print(f"{feed.lost} run(s) redone after a lost lane")
