"""Session-wide test set-up and the fixtures several packages' tests share.

- a private Triton cache, so results never depend on what other checkouts (other paths, other
  source locations) left in ~/.triton/cache; removed when the session ends (when this file
  made it);
- :mod:`tests.progress`: long tests and long fixtures are named on the terminal as they start;
- ``demo_dataset`` / ``demo_train``: what ``make demo`` makes (its own commands, read from the
  Makefile), once per session, for the README, notebook and train tests;
- ``ray_cluster``: one local Ray instance per session (its start-up costs seconds).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_OWN_TRITON_CACHE: str | None = None
if "TRITON_CACHE_DIR" not in os.environ:
    _OWN_TRITON_CACHE = tempfile.mkdtemp(prefix="kernel-corpus-test-cache-")
    os.environ["TRITON_CACHE_DIR"] = _OWN_TRITON_CACHE


def pytest_sessionfinish(session, exitstatus) -> None:
    if _OWN_TRITON_CACHE is not None:
        shutil.rmtree(_OWN_TRITON_CACHE, ignore_errors=True)

pytest_plugins = ["tests.progress"]

REPO = Path(__file__).resolve().parents[1]
MAKEFILE = REPO / "Makefile"
RAY_LANES = 2
"""Interpreter lanes (the custom resource the harvest's Ray actors ask for) of ``ray_cluster``."""


def make_recipe(target: str) -> list[list[str]]:
    """The commands of ``target``'s recipe in the Makefile, as argument lists: ``$(VAR)``
    expanded from the Makefile's ``VAR := value`` lines, ``$(BIN)/python`` being this Python."""
    text = MAKEFILE.read_text()
    variables = dict(re.findall(r"^([A-Z_]+)\s*[:?]?=\s*(.*)$", text, re.M))
    recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, f"no recipe for {target} in {MAKEFILE}"
    commands = []
    for line in recipe.group(1).splitlines():
        line = line.strip().replace("$(BIN)/python", shlex.quote(sys.executable))
        line = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)
        commands.append(shlex.split(line))
    return commands


def demo_command(tool: str, **overrides: str) -> list[str]:
    """``make demo``'s command that runs ``python -m tool``, with ``--flag value`` overrides."""
    [command] = [c for c in make_recipe("demo") if c[1:3] == ["-m", tool]]
    for flag, value in overrides.items():
        option = "--" + flag.replace("_", "-")
        command[command.index(option) + 1] = value
    return command


def announce(text: str) -> None:
    """:func:`tests.progress.announce`, imported once pytest has loaded the plugin (an import
    here, at collection, would keep pytest from rewriting its asserts)."""
    from tests.progress import announce as tell

    tell(text)


def _run(command: list[str], cwd: Path) -> None:
    # train's processed-data cache goes beside the data, not into the user's ~/.cache
    env = {**os.environ, "KERNEL_CORPUS_TRAIN_CACHE": str(cwd / ".train-cache")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")


@pytest.fixture(scope="session")
def first_hour(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch directory standing in for a fresh clone's working directory after ``make
    demo``: the commands and snippets of the README run from here (``demo_dataset`` and
    ``demo_train`` fill it)."""
    return tmp_path_factory.mktemp("first-hour")


@pytest.fixture(scope="session")
def demo_dataset(first_hour: Path) -> Path:
    """``first_hour/demo-dataset``: ``make demo``'s harvest and check, exactly as the Makefile
    runs them, once per session. ``KERNEL_CORPUS_TEST_DEMO_DATASET`` may name one made by
    ``make demo`` already, to skip the harvest while iterating locally."""
    out = first_hour / "demo-dataset"
    prebuilt = os.environ.get("KERNEL_CORPUS_TEST_DEMO_DATASET")
    if prebuilt:
        out.symlink_to(Path(prebuilt).resolve(), target_is_directory=True)
        return out
    harvest = demo_command("corpus.harvest")
    announce(f"harvesting {harvest[harvest.index('--out') + 1]} as make demo does (a minute or two)")
    _run(harvest, first_hour)
    _run(demo_command("schemas"), first_hour)
    assert (out / "runs").is_dir(), "make demo's harvest wrote no demo-dataset"
    return out


@pytest.fixture(scope="session")
def demo_train(demo_dataset: Path, first_hour: Path) -> Path:
    """``first_hour/demo-train``: ``make demo``'s training command with 2 epochs and 1 seed (the
    tests need its files and a checkpoint, not a good model)."""
    command = demo_command("train", epochs="2", seeds="1")
    out = first_hour / command[command.index("--out") + 1]
    announce(f"training {out.name} as make demo does, 2 epochs and 1 seed (about a minute)")
    _run(command, first_hour)
    assert (out / "checkpoint").is_dir(), "make demo's training wrote no checkpoint"
    return out


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """One local Ray instance for the session, with :data:`RAY_LANES` interpreter lanes;
    yields the ``ray`` module. Skips when Ray (the ``ray`` extra) is not installed."""
    ray = pytest.importorskip("ray")
    from corpus.harvest.cluster import LANE_RESOURCE

    announce("starting a local Ray instance for the session")
    ray.init(num_cpus=2, resources={LANE_RESOURCE: RAY_LANES}, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture()
def hangup_as_in_a_terminal() -> Iterator[None]:
    """SIGHUP at its default action for the test, as in a terminal: a test run under ``nohup``
    inherits it ignored, and a command keeps an ignored SIGHUP ignored (by design)."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)
