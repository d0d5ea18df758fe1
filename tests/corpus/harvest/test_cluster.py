"""The harvest on a local Ray cluster (interpreter lanes stand in for GPUs)."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from corpus.harvest.app import HarvestConfig, HarvestOutcome, run_harvest
from corpus.harvest.claims import RunClaims
from corpus.harvest.cluster import (
    ACTOR_PREFIX,
    LANE_RESOURCE,
    close_lanes,
    connect_refusal,
    harvest_token,
    keeping_signal_handlers,
    lane_actor,
)
from corpus.harvest.settings import read_settings
from schemas import committed_runs, read_table
from schemas.check import check_dataset
from tests.conftest import RAY_LANES

from .conftest import (
    FAMILIES,
    ONE_RUN_ARGS,
    ONE_RUN_FAMILY,
    REPO,
    assert_rerun_finished,
    die_in_final_compaction,
    harvest_command,
    harvest_in_process,
)

ray = pytest.importorskip("ray")

LANES = RAY_LANES


@pytest.fixture
def local_ray(ray_cluster):
    """The session's Ray instance (``ray_cluster``): start-up is slow on a small machine."""
    assert ray.cluster_resources().get(LANE_RESOURCE) == LANES
    return ray_cluster


def _config(out: Path, **overrides) -> HarvestConfig:
    base = {"families": tuple(FAMILIES.split(",")), "max_configs": 2, "dtypes": ("float32",), "device": "cpu"}
    base |= {"workers": 1, "flush_every_s": 0.0}
    return HarvestConfig(str(out), **{**base, **overrides})


def _harvest(out: Path, **overrides):
    return run_harvest(_config(out, **overrides), read_settings(), Console(file=io.StringIO()))


def _committed(out: Path) -> list[tuple[str, str]]:
    """(run_id, config_id) of every committed measurement, repeats kept."""
    committed = {(r["run_id"], r["harvest_id"]) for r in committed_runs(str(out)).to_pylist()}
    rows = read_table(
        str(out), "measurements", columns=["run_id", "harvest_id", "config_id"]
    ).to_pylist()
    return [
        (r["run_id"], r["config_id"]) for r in rows if (r["run_id"], r["harvest_id"]) in committed
    ]


@pytest.fixture(scope="module")
def single_process(reference_dataset) -> list[tuple[str, str]]:
    """The session's unsharded single-process harvest of the same selection (same families,
    configs per run, dtypes and seed: the same plan), which other harvest tests compare with."""
    return sorted(_committed(reference_dataset))


def test_the_harvests_signal_handlers_survive_what_ray_init_installs():
    # ray.init sets a SIGTERM handler that exits 1 (and its core worker one that aborts): a
    # preempted Ray harvest must still take the harvest's own stop path
    def harvests(signum, frame):
        raise AssertionError

    before = signal.signal(signal.SIGTERM, harvests)
    try:
        with keeping_signal_handlers():
            signal.signal(signal.SIGTERM, lambda signum, frame: None)  # as ray.init does
        assert signal.getsignal(signal.SIGTERM) is harvests
    finally:
        signal.signal(signal.SIGTERM, before)


def test_ray_auto_without_a_cluster_names_the_fix():
    # --ray with no cluster on this machine was Ray's ConnectionError traceback, naming
    # `--address` and RAY_ADDRESS, flags of `ray`, not of the harvest. (Not run for real here:
    # auto also finds any Ray of this machine by its processes, the session's one included.)
    error = ConnectionError("Could not find any running Ray instance. Please specify ...")
    message = connect_refusal("auto", error)
    assert message.startswith("--ray (auto): this machine has joined no Ray cluster")
    assert "ray start --head" in message and "--ray local" in message


def test_ray_client_without_its_extra_is_named():
    error = ValueError("Ray Client requires pip package `ray[client]`. If you installed ...")
    message = connect_refusal("ray://head:10001", error)
    assert message.startswith("--ray ray://head:10001:") and "pip install 'ray[client]'" in message


def test_ray_harvest_equals_a_single_process_harvest(local_ray, single_process, tmp_path):
    out = tmp_path / "d"
    console = Console(file=io.StringIO(), width=200)
    outcome = run_harvest(_config(out, ray="auto"), read_settings(), console)
    printed = console.file.getvalue()
    # The driver's summary: per node, then the totals and best configs a local harvest prints.
    assert "per-node throughput" in printed and "best config per run" in printed
    assert re.search(r"compile \d", printed) and "benchmark" in printed
    for family in FAMILIES.split(","):
        assert re.search(rf"^\s*{family}\b", printed, re.M), family
    rows = _committed(out)
    assert sorted(rows) == single_process
    assert len(rows) == len(set(rows))
    assert outcome.totals is not None and outcome.totals.runs_done == len(outcome.planned)
    again = _harvest(out, ray="auto")  # a restarted driver resumes from the dataset
    assert again.totals is None and again.skipped_committed == len(again.planned)


def test_killing_a_lane_mid_run_loses_and_duplicates_nothing(local_ray, single_process, tmp_path):
    out = tmp_path / "d"
    errors: list[BaseException] = []

    def harvest() -> None:
        try:
            _harvest(out, ray="auto")
        except BaseException as exc:
            errors.append(exc)

    driver = threading.Thread(target=harvest)
    driver.start()
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and driver.is_alive() and time.monotonic() < deadline:
        names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]
        for name in (n for n in names if n.startswith(ACTOR_PREFIX)):
            try:
                actor = ray.get_actor(name)
                if ray.get(actor.busy.remote(), timeout=10):
                    ray.kill(actor, no_restart=False)  # Ray restarts it; its run is redone
                    killed = name
                    break
            except (ValueError, ray.exceptions.RayError):
                continue
        time.sleep(0.2)
    driver.join(timeout=600)
    assert not errors, errors
    assert killed is not None, "no lane was seen mid-run"
    rows = _committed(out)
    assert sorted(rows) == single_process
    assert len(rows) == len(set(rows))


def test_lanes_get_no_constructor_argument_that_a_restart_could_miss(tmp_path, one_run_shard):
    """The gap: each lane actor got the dataset's committed runs as one ``ray.put`` object, a
    constructor argument in the object store, while Ray restarts a lost actor
    (``max_restarts``) by rerunning its constructor and does not keep such arguments for that
    (ray-project/ray#53727): a restart could fail, and every harvest printed Ray's error line
    about it. The Ray harvest runs in a process of its own, with a Ray of its own (``--ray
    local``): Ray logs the line once per process, so the session's Ray instance, whose first
    lane creation may have logged it already, cannot show it. One run of its plan is committed
    first, so the committed runs the lanes compare with are not none, as on a dataset that
    grows. RAY_ADDRESS names a cluster that is not there: ``--ray local`` starts a Ray in the
    process whatever the environment says (``ray.init(address=None)``, as before, joined the
    cluster RAY_ADDRESS or ``ray start`` named, and here failed to)."""
    out = tmp_path / "d"
    index, count = one_run_shard
    harvest_in_process(out, *ONE_RUN_ARGS, "--shard", f"{index}/{count}", "--workers", "1")
    env = os.environ | {"RAY_ADDRESS": "127.0.0.1:9", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        harvest_command(out, *ONE_RUN_ARGS, "--ray", "local", "--workers", "1"),
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    printed = result.stdout + result.stderr
    assert result.returncode == 0, printed[-3000:]
    assert "1 run(s) complete" in printed, printed[-3000:]  # the other run went to a lane
    assert "max_restarts > 0" not in printed and "53727" not in printed, printed[-3000:]
    rows = _committed(out)
    assert len(rows) == len(set(rows)) and len({run_id for run_id, _ in rows}) == 2


# -- claims, the plan lock and the pending record, as for a harvest on one machine -------------


def _lane_busy_with(run_id: str) -> bool:
    """Whether a lane actor of a running Ray harvest is executing ``run_id`` now."""
    for name in [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)]:
        if not name.startswith(ACTOR_PREFIX):
            continue
        try:
            if ray.get(ray.get_actor(name).busy.remote(), timeout=10) == run_id:
                return True
        except (ValueError, ray.exceptions.RayError):  # an actor of a harvest that ended
            continue
    return False


def test_a_ray_lane_waits_for_a_run_another_harvest_measures(local_ray, tmp_path, one_run_shard):
    """The gap: Ray lanes took no run claims, so a Ray harvest and another harvest whose plans
    overlap measured the same (run, config) at the same time. Here harvest A holds the claim of
    one run (taken by the test, as A's lane would) when a Ray lane gets that run: the lane
    waits (it is seen busy with the run, which A then measures and commits), then finds the
    run measured and measures nothing. Without claims the lane measures it at once, and the
    run's configs are committed twice."""
    out = tmp_path / "d"
    run = _harvest(out, families=(ONE_RUN_FAMILY,), shard=one_run_shard, dry_run=True).planned[0]
    claims_a = RunClaims(str(out), known=())
    assert claims_a.claim(run, {}, own_harvest="a", before_waiting=lambda: None) is run
    errors: list[BaseException] = []
    outcomes: list[HarvestOutcome] = []
    printed = io.StringIO()

    def harvest_on_ray() -> None:
        try:
            config = _config(out, families=(ONE_RUN_FAMILY,), ray="auto")
            outcomes.append(run_harvest(config, read_settings(), Console(file=printed, width=200)))
        except BaseException as exc:
            errors.append(exc)

    driver = threading.Thread(target=harvest_on_ray, daemon=True)
    driver.start()
    deadline = time.monotonic() + 300
    while driver.is_alive() and not _lane_busy_with(run.run_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert driver.is_alive(), f"the Ray harvest ended without waiting for the claimed run {errors}"
    # A measures and commits the run while it holds the claim (no resume, no claims of its own)
    _harvest(out, families=(ONE_RUN_FAMILY,), shard=one_run_shard, allow_repeat=True, resume=False)
    claims_a.release([run.run_id])
    driver.join(600)
    assert not driver.is_alive() and errors == []
    rows = read_table(str(out), "measurements", columns=["run_id", "harvest_id", "config_id"]).to_pylist()
    of_run = [(r["harvest_id"], r["config_id"]) for r in rows if r["run_id"] == run.run_id]
    assert len(of_run) == len(run.configs) and len({h for h, _ in of_run}) == 1  # once, by A
    others = [(r["run_id"], r["config_id"]) for r in rows if r["run_id"] != run.run_id]
    assert others and len(others) == len(set(others))  # the plan's other run: once, by a lane
    assert check_dataset(str(out)).ok
    # the summary said "harvest finished: 2 runs", one of which A had measured
    totals = outcomes[0].totals
    assert totals is not None and (totals.runs_done, totals.runs_elsewhere) == (1, 1)
    assert "; 1 run committed by another harvest meanwhile" in printed.getvalue()


def test_a_ray_rerun_completes_an_interrupted_compaction_and_the_card(
    local_ray, tmp_path, monkeypatch
):
    """The gap: a Ray harvest wrote no pending record, so killed during its final compaction,
    its rerun found every run committed and left the files uncompacted and no card. Here the
    driver's compaction dies; the rerun, on Ray too, finishes it."""
    out = tmp_path / "d"
    options = {"families": (ONE_RUN_FAMILY,), "ray": "auto"}  # two runs: a file each per table
    die_in_final_compaction(out, monkeypatch, lambda: _harvest(out, **options))
    assert_rerun_finished(out, _config(out, **options))


def test_a_ray_harvest_stopped_by_sigterm_says_how_many_runs_it_committed(local_ray, tmp_path):
    """SIGTERM to the driver once a lane's run has come back (Slurm preempting the Ray driver):
    the line said on the way out counts the runs committed, as a harvest on one machine says
    (before, only importing ``said_on_stop`` on this path was checked, and it counted the runs
    whose results reached the driver before the lanes closed: a lane that finished its run as it
    closed committed one the count missed)."""
    from corpus.harvest.__main__ import kept
    from schemas.signals import Terminated, stop_on_termination

    out = tmp_path / "d"
    families = ("add_broadcast", "softmax", "row_reduce", "cumsum")  # runs enough to stop mid-feed
    printed = io.StringIO()
    console = Console(file=printed, width=200)
    returned: list[int] = []

    def terminate_after_a_returned_run() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = [int(n) for n in re.findall(r"^run (\d+)/\d+ ", printed.getvalue(), re.M)]
            if done:
                returned.append(max(done))
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=terminate_after_a_returned_run, daemon=True)
    with pytest.raises(Terminated) as stopped, stop_on_termination():
        watcher.start()
        run_harvest(_config(out, ray="auto", families=families), read_settings(), console)
        time.sleep(5.0)  # the harvest ended before the signal: let it land, failing below
    watcher.join()
    planned = len(run_harvest(_config(out, ray="auto", families=families, dry_run=True), read_settings(),
                              Console(file=io.StringIO())).planned)  # fmt: skip
    committed = committed_runs(str(out)).num_rows
    assert returned and returned[0] <= committed < planned, (returned, committed, planned)
    said = kept(stopped.value)
    assert said.startswith(f"the {committed} run(s) it finished are committed;"), (said, printed.getvalue())
    rows = _committed(out)
    assert len(rows) == len(set(rows)) == 2 * committed  # (a rerun resumes: the local test's part)
    assert check_dataset(str(out)).ok


# -- stopping: every lane at once, under one deadline -----------------------------------------


def test_lanes_close_at_once_under_one_deadline_and_those_stuck_are_killed(local_ray):
    """The gap: the driver closed its lanes one after another, waiting up to 60 s for each, so
    N stuck lanes held a stop for N x 60 s, past the 30 s Slurm gives between SIGTERM and
    SIGKILL. Three of four stand-in lanes never return from ``close`` (a lane waiting on a hung
    compile or another harvest's claim): all are asked at once, the deadline holds for all, and
    every actor is killed after it, the stuck ones reported."""

    class Closing:  # defined here, so Ray pickles it by value: its workers import no test module
        def __init__(self, stuck: bool) -> None:
            self.stuck = stuck

        def close(self) -> None:
            if self.stuck:
                threading.Event().wait()

        def ping(self) -> str:
            return "alive"

    actor_class = ray.remote(num_cpus=0, max_concurrency=2)(Closing)
    actors = [actor_class.remote(stuck) for stuck in (True, False, True, True)]
    assert ray.get([actor.ping.remote() for actor in actors], timeout=300) == ["alive"] * 4
    begin = time.monotonic()
    killed = close_lanes(actors, deadline_s=5.0)
    took = time.monotonic() - begin
    assert killed == [0, 2, 3]
    assert 5.0 <= took < 60.0, took  # one lane after another with 60 s each: 180 s
    assert all(_dies(actor) for actor in actors)


def _dies(actor, within_s: float = 60.0) -> bool:
    """Whether ``actor`` is found dead within ``within_s`` seconds (``ray.kill`` is
    asynchronous: a call made just after it may still be answered)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ping.remote(), timeout=within_s)
        except ray.exceptions.RayActorError:
            return True
        time.sleep(0.2)
    return False


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_closing_lane_drops_its_run_in_flight_commits_nothing_and_closes_itself(local_ray, tmp_path):
    """A lane asked to close while its benchmark worker is stuck in a kernel that never ends
    (with a benchmark timeout far past the deadline) stops by itself before the deadline: the
    run in flight comes back dropped (no configs) and nothing of it is in ``--out``. Before,
    ``close`` killed the worker without stopping the run, which went on (a fresh worker) and
    could commit the killed config as a crash of the kernel, until the driver killed the
    actor."""
    out = tmp_path / "d"
    options = {
        "suite": ("tests.corpus.harvest.faulty_kernels",),
        "families": ("test_never_ends",),
        "max_configs": 1,
        "bench_timeout_s": 600.0,
    }
    run = _harvest(out, dry_run=True, **options).planned[0]
    lane = lane_actor(True, ray.cluster_resources()).remote(_config(out, ray="auto", **options), harvest_token(), False)
    ray.get(lane.describe.remote(), timeout=300)
    executing = lane.execute.remote(run)
    deadline = time.monotonic() + 300
    spinning = False  # the lane's benchmark worker busy in the kernel's endless loop
    while not spinning and time.monotonic() < deadline:
        pid = ray.get(lane.__ray_call__.remote(lambda lane: lane.harvester.lanes[0].worker.pid), timeout=60)
        spinning = pid is not None and _cpu_seconds(pid) > 3.0
        time.sleep(0.2)
    assert spinning, "the lane's benchmark never reached the kernel"
    assert close_lanes([lane], deadline_s=120.0) == []  # it closed itself, not killed
    done = ray.get(executing, timeout=60)  # returned before close did: the actor is gone now
    assert (done.run_id, done.configs, done.summary) == (run.run_id, 0, None)
    assert not list(out.rglob("part-*.parquet")), "the dropped run wrote files"
