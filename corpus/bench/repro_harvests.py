"""The reproducibility experiment: harvest one tiny plan twice, optionally with a third
harvest running beside them as load, and measure how well the two agree
(``python -m corpus.bench repro --harvest``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from corpus.bench.repro import Reproducibility, describe, reproducibility
from corpus.harvest.app import HarvestConfig, run_harvest
from corpus.harvest.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ReproHarvestConfig:
    """The plan harvested twice, and whether a third harvest loads the machine meanwhile."""

    families: tuple[str, ...]
    max_configs: int
    dtypes: tuple[str, ...] = ("float32",)
    passes: int | None = None
    rep: int | None = None
    timer: str = "auto"
    workers: int = 2
    with_load: bool = False
    root: str | None = None
    """Directory for the datasets (default: a new temporary directory, kept for inspection)."""
    suite: tuple[str, ...] = ("corpus.suite.kernels",)
    interleave: bool = True
    """False: the version-1 schedule (each config's reps back to back), for ablations."""
    dedupe: bool = True
    """False: time identical binaries separately, for ablations."""


class LoadHarvestFailed(RuntimeError):
    """The harvest meant to load the machine exited with an error; the message has its command."""


class LoadHarvest:
    """Harvests into a scratch dataset over and over in a child process until stopped: the
    compile pool and interpreter of a real harvest, competing for the same cores."""

    def __init__(self, config: ReproHarvestConfig, out: Path) -> None:
        self.command = [
            sys.executable,
            "-m",
            "corpus.harvest",
            "--suite",
            ",".join(config.suite),
            "--out",
            str(out),
            "--device",
            "cpu",
            "--no-resume",
            "--no-compact",
            "--families",
            ",".join(config.families),
            "--dtypes",
            ",".join(config.dtypes),
            "--max-configs",
            str(config.max_configs),
            "--workers",
            str(config.workers),
            "--seed",
            "1",
        ]
        self.stopping = threading.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.rounds = 0
        self.failed: int | None = None
        """Exit status of a load round that failed (the load then stops)."""
        self.thread = threading.Thread(target=self._loop, name="load-harvest", daemon=True)

    def _loop(self) -> None:
        while not self.stopping.is_set():
            self.process = subprocess.Popen(
                self.command,
                cwd=REPO_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            status = self.process.wait()
            if status != 0 and not self.stopping.is_set():
                self.failed = status
                return
            self.rounds += 1

    def __enter__(self) -> LoadHarvest:
        self.thread.start()
        time.sleep(5.0)  # let its compile pool get going before the measured harvest starts
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # the harvest and its worker processes
        self.thread.join(timeout=60)


def harvest_twice(
    config: ReproHarvestConfig, settings: Settings, console: Console
) -> Reproducibility:
    """Two harvests of the same plan into ``root/a`` and ``root/b`` (with ``--with-load``, a
    third one loops beside them), then their agreement, printed and returned."""
    root = Path(config.root or tempfile.mkdtemp(prefix="repro-"))
    quiet = Console(file=open("/dev/null", "w"), width=120)  # noqa: SIM115 - lives for the process
    base = HarvestConfig(
        out=str(root / "a"),
        suite=config.suite,
        families=config.families,
        scale="tiny",
        dtypes=config.dtypes,
        max_configs=config.max_configs,
        device="cpu",
        workers=config.workers,
        passes=config.passes,
        rep=config.rep,
        timer=config.timer,
        interleave=config.interleave,
        dedupe=config.dedupe,
        flush_every_s=30.0,
    )
    console.print(
        f"plan: {', '.join(config.families)}; tiny; {', '.join(config.dtypes)}; {config.max_configs} configs/run; "
        f"timer {config.timer}, {'interleaved' if config.interleave else 'sequential'} timing, "
        f"identical binaries {'timed once' if config.dedupe else 'timed separately'}; "
        f"load: {'a third harvest beside them' if config.with_load else 'none added'} -> {root}",
        markup=False,  # families and a path: text
    )
    for name in ("a", "b"):
        start = time.perf_counter()
        if config.with_load:
            with LoadHarvest(config, root / "load") as load:
                run_harvest(replace(base, out=str(root / name)), settings, quiet)
            if load.failed is not None:
                raise LoadHarvestFailed(
                    f"the load harvest failed (exit status {load.failed}): {' '.join(load.command)}"
                )
            console.print(
                f"harvest {name}: {time.perf_counter() - start:.0f} s beside {load.rounds + 1} load harvest round(s)"
            )
        else:
            run_harvest(replace(base, out=str(root / name)), settings, quiet)
            console.print(f"harvest {name}: {time.perf_counter() - start:.0f} s")
    result = reproducibility(str(root / "a"), str(root / "b"))
    for line in describe(result):
        console.print(line, markup=False)  # run labels: text
    return result
