"""The harvest on a local Ray cluster (interpreter lanes stand in for GPUs)."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from corpus.harvest.app import HarvestConfig, run_harvest
from corpus.harvest.cluster import ACTOR_PREFIX, LANE_RESOURCE
from corpus.harvest.settings import read_settings
from schemas import committed_runs, read_table
from tests.conftest import RAY_LANES

from .conftest import FAMILIES

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


def test_ray_harvest_equals_a_single_process_harvest(local_ray, single_process, tmp_path):
    out = tmp_path / "d"
    outcome = _harvest(out, ray="auto")
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
