"""``python -m corpus.harvest --self-test`` without a GPU: the interpreter subset runs for
real (copy kernel under every CPU timer, a compile worker process extracting IR for sm_90),
the GPU checks say they were skipped, and a failing check fails the exit code."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import triton.language  # noqa: F401  (Triton's own helpers decorated for the compiler first)
from rich.console import Console

from corpus.harvest.__main__ import main as harvest_main
from corpus.harvest.selftest import (
    CACHE_FAMILY,
    FAIL,
    OK,
    SKIPPED,
    SelfTestConfig,
    Verdict,
    _cache_entries,
    _compile_in_worker,
    _flush_check,
    _run_checks,
    exit_code,
    hold_cycles,
    run_self_test,
    self_test_config,
)
from corpus.harvest.settings import read_settings

cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path")


@pytest.fixture
def interpreter_scope(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The self-test selects the interpreter in its process; undo that after the test, and
    forget the kernel modules it imported under the interpreter: a later test in this process
    would otherwise get their interpreted kernels (``@triton.jit`` chose when it decorated), so
    the suite check's compile plan (tests/corpus/suite/test_check.py) came out different when
    it ran after this file."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("corpus.suite.kernels", "tests.corpus.harvest.faulty_kernels")):
            del sys.modules[name]


@cpu_only
def test_cpu_self_test_runs_the_interpreter_subset(interpreter_scope: None, tmp_path: Path) -> None:
    out = io.StringIO()
    config = SelfTestConfig("cpu", ("corpus.suite.kernels",), str(tmp_path / "cache"))
    verdicts = {v.check: v for v in run_self_test(config, read_settings({}), Console(file=out))}
    for name in ("device facts", "timer thread_cpu", "timer process_cpu", "timer wall"):
        assert verdicts[name].verdict == OK, verdicts[name]
    worker = verdicts["compile worker"]
    assert worker.verdict == OK and "graphs: ttir, ttgir" in worker.detail, worker
    assert any((tmp_path / "cache").iterdir()), "the worker compiled into the given cache"
    for name in ("copy bandwidth", "L2 flush", "compile worker -> launch"):
        assert verdicts[name].verdict == SKIPPED and "GPU" in verdicts[name].detail
    assert exit_code(list(verdicts.values())) == 0
    assert "harvest self-test" in out.getvalue() and "skipped" in out.getvalue()


@cpu_only
def test_a_failing_check_is_reported_and_the_rest_still_run(
    interpreter_scope: None, tmp_path: Path
) -> None:
    config = SelfTestConfig("cpu", ("tests.corpus.harvest.faulty_kernels",), str(tmp_path))
    verdicts = run_self_test(config, read_settings({}), Console(file=io.StringIO()))
    failed = [v for v in verdicts if v.verdict == FAIL]
    assert [v.check for v in failed] == ["compile worker"]
    assert "add_broadcast" in failed[0].detail
    assert exit_code(verdicts) == 1


@cpu_only
def test_self_test_uses_the_harvest_cache_and_refuses_cuda_without_it(tmp_path: Path) -> None:
    settings = read_settings({"TRITON_CACHE_DIR": str(tmp_path)})
    assert self_test_config("cpu", (), settings).cache_dir == str(tmp_path)
    stable = self_test_config("cpu", (), read_settings({"XDG_CACHE_HOME": str(tmp_path)}))
    assert stable.cache_dir.startswith(str(tmp_path / "kernel-corpus" / "triton"))
    with pytest.raises(ValueError, match="CUDA is not available"):
        run_self_test(SelfTestConfig("cuda:0", (), str(tmp_path)), settings)
    with pytest.raises(ValueError, match="checks one GPU"):  # not torch's error in _gpu_checks
        self_test_config("cuda:0,1", (), settings)


def test_a_launcher_module_in_the_cache_is_no_recompile(tmp_path: Path) -> None:
    """The cache-hit check counts compiled kernels only: a launch caches host modules beside
    them (Triton 3.6 builds ``__triton_launcher.so`` per kernel signature at its first launch,
    every version ``cuda_utils.so`` on first use), which a first self-test on a fresh cache
    would otherwise report as a recompile."""
    cache = tmp_path / "cache"
    config = SelfTestConfig("cpu", ("corpus.suite.kernels",), str(cache))
    outcome, _ = _compile_in_worker(config, read_settings({}), "sm_90")
    assert outcome.status == "ok", outcome.error
    kernels = _cache_entries(str(cache))
    assert len(kernels) == 1 and any((cache / next(iter(kernels))).glob(f"*{CACHE_FAMILY}*.cubin"))
    for key, module in (("a" * 64, "__triton_launcher.so"), ("b" * 64, "cuda_utils.so")):
        (cache / key).mkdir()
        (cache / key / module).write_bytes(b"\x7fELF")  # where Triton's FileCacheManager puts them
    assert _cache_entries(str(cache)) == kernels


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_self_test_passes(tmp_path: Path) -> None:
    config = SelfTestConfig("cuda:0", ("corpus.suite.kernels",), str(tmp_path / "cache"))
    verdicts = {
        v.check: v for v in run_self_test(config, read_settings({}), Console(file=io.StringIO()))
    }
    assert not [v for v in verdicts.values() if v.verdict in (FAIL, SKIPPED)], verdicts
    assert verdicts["compile worker -> launch"].verdict == OK


def test_the_flush_check_holds_the_gpu_busy_for_half_a_millisecond_per_rep() -> None:
    assert hold_cycles(1980) == 990_000  # H100 SXM's max SM clock
    assert hold_cycles(None) == 1_000_000  # unknown clock: 2 GHz assumed, a longer hold
    from corpus.harvest.timing import CudaEventTimer

    with pytest.raises(ValueError, match="hold_cycles"):
        CudaEventTimer("cuda:0", 0, hold_cycles=-1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_flush_check_finds_the_flushed_copy_slower() -> None:
    """Both arms time the copy alone: without the hold, the unflushed arm timed Triton's host
    launch overhead (the GPU idles between its reps) and came out slower than the flushed one."""
    from corpus.harvest.device import cuda_facts

    torch.cuda.set_device("cuda:0")
    verdict = _flush_check("cuda:0", cuda_facts("cuda:0"))
    assert verdict.verdict == OK, verdict.detail


def test_self_test_refuses_harvest_options_it_would_ignore(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = harvest_main(["--self-test", "--dry-run", "--out", str(out), "--device", "cpu"])
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 2
    assert "it takes --device and --suite, not --out, --dry-run" in printed
    assert not out.exists()


def test_checks_after_a_sticky_cuda_error_are_skipped_naming_it() -> None:
    """An illegal address leaves the self-test's CUDA context unusable: the GPU checks after it
    each failed with that error, as if the flush or the timers were broken too."""

    def illegal_address() -> Verdict:  # fault injection: the CUDA driver's text
        raise RuntimeError("Triton Error [CUDA]: an illegal memory access was encountered")

    ran: list[str] = []

    def fine(name: str) -> Verdict:
        ran.append(name)
        return Verdict(name, OK, "fine")

    verdicts = _run_checks(
        [
            ("device facts", lambda: fine("device facts")),
            ("copy bandwidth", illegal_address),
            ("L2 flush", lambda: fine("L2 flush")),
            ("timer cuda_event", lambda: fine("timer cuda_event")),
        ]
    )
    assert ran == ["device facts"]
    assert [(v.check, v.verdict) for v in verdicts] == [
        ("device facts", OK), ("copy bandwidth", FAIL), ("L2 flush", SKIPPED), ("timer cuda_event", SKIPPED),
    ]  # fmt: skip
    assert verdicts[2].detail == "not run: 'copy bandwidth' left the CUDA context unusable (a sticky error)"
    other = _run_checks([("copy bandwidth", lambda: Verdict("copy bandwidth", FAIL, "slow")), ("L2 flush", lambda: fine("L2 flush"))])
    assert [v.verdict for v in other] == [FAIL, OK], "only a sticky error stops the checks"
