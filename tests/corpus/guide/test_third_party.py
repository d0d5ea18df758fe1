"""The plug-in on real third-party autotuned kernels, on Triton's interpreter: liger-kernel's
fused MoE forward, its kernels guided by :func:`corpus.guide.attach` under
``python -m corpus.record`` (tests/corpus/guide/liger_moe.py), what attaching refuses, and
flag-gems' own autotuner (``LibTuner``) guided and recorded (tests/corpus/guide/gems_workload.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from schemas import read_table
from schemas.check import check_dataset

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def liger_moe(guide_model: Path, foreign_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("liger_kernel", reason="the thirdparty extra (liger-kernel) is not installed")
    root = tmp_path_factory.mktemp("liger-moe")
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-W", "ignore", "-m", "corpus.record", "--out", str(root / "d"), "--rep", "1",
               "--warmup", "0", "--", sys.executable, str(HERE / "liger_moe.py"), str(root / "report.json"),
               str(guide_model), str(foreign_model)]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return {**json.loads((root / "report.json").read_text()), "out": str(root / "d")}


def test_liger_kernels_guided_by_attach_benchmark_exactly_top_k(liger_moe: dict) -> None:
    """The gap: a kernel liger-kernel decorated takes no ``prune_configs_by`` (Triton reads it
    once, at decoration); there was no way to guide it short of replacing the autotuner's
    ``early_config_prune`` by hand, which drops the library's own prune."""
    assert liger_moe["correct"]
    for name in ("_fused_up_proj_swiglu_kernel", "_fused_down_proj_kernel"):
        kernel = liger_moe["kernels"][name]
        assert len(kernel["benchmarked"]) == 2  # top_k of the five the kernel's own prune kept
        assert set(kernel["benchmarked"]) <= set(kernel["all"]) and kernel["best"] in kernel["benchmarked"]
        assert kernel["compiles"] == 5


def test_a_model_that_cannot_rank_a_liger_kernel_falls_back_with_one_warning(liger_moe: dict) -> None:
    gather = liger_moe["kernels"]["_token_gather_weighted_sum_kernel"]
    assert gather["benchmarked"] == gather["all"] and gather["compiles"] == 0
    (warning,) = liger_moe["fallback_warnings"]  # only the kernel whose model cannot rank
    assert "_token_gather_weighted_sum_kernel" in warning and "Triton benchmarks all 5" in warning


def test_recorded_liger_rows_say_why_each_config_was_not_benchmarked(liger_moe: dict) -> None:
    columns = ["run_id", "status", "error", "ttgir_id"]
    rows = pl.from_arrow(read_table(liger_moe["out"], "measurements", columns=columns))
    runs = {r["family"]: r["run_id"] for r in read_table(liger_moe["out"], "runs").to_pylist()}
    for name in ("_fused_up_proj_swiglu_kernel", "_fused_down_proj_kernel"):
        run = rows.filter(pl.col("run_id") == runs[name])
        ok = run.filter(pl.col("status") == "ok")
        ranked_out = run.filter(pl.col("error").str.contains("top 2 of model"))
        assert ok.height == 2 and ranked_out.height == 3 and run.height == 32
        assert ok["ttgir_id"].null_count() == 0 and ranked_out["ttgir_id"].null_count() == 0
        assert all("checkpoint@" in reason for reason in ranked_out["error"])
    gather = rows.filter(pl.col("run_id") == runs["_token_gather_weighted_sum_kernel"])
    assert gather.filter(pl.col("status") == "ok").height == 5
    assert gather.filter(pl.col("error").str.contains("by model")).height == 0  # nothing pruned by it
    assert check_dataset(liger_moe["out"]).ok


def test_attach_refuses_a_kernel_that_is_not_autotuned(guide_model: Path) -> None:
    pytest.importorskip("liger_kernel", reason="the thirdparty extra (liger-kernel) is not installed")
    from liger_kernel.ops import fused_moe_kernels

    from corpus.guide import attach

    with pytest.raises(TypeError, match="_moe_router_histogram_kernel is not autotuned"):
        attach(fused_moe_kernels._moe_router_histogram_kernel, guide_model)


def test_attaching_twice_replaces_the_provider_and_keeps_the_kernels_own_prune(guide_model: Path) -> None:
    pytest.importorskip("liger_kernel", reason="the thirdparty extra (liger-kernel) is not installed")
    from liger_kernel.ops import fused_moe_kernels

    from corpus.guide import attach

    tuner = fused_moe_kernels._fused_down_proj_kernel
    own = tuner.early_config_prune

    def library_prune(configs, named_args, **kwargs):  # type: ignore[no-untyped-def]
        return configs

    try:
        tuner.early_config_prune = library_prune
        first = attach(tuner, guide_model, top_k=3)
        second = attach(tuner, guide_model, top_k=2)
        assert tuner.early_config_prune is second and second.early_config_prune is library_prune
        assert first.early_config_prune is library_prune
    finally:
        tuner.early_config_prune = own


def test_a_flag_gems_tuning_is_guided_and_reported_as_not_recorded(tmp_path: Path, guide_model: Path) -> None:
    """The gap: ``LibTuner.run`` tunes without ``Autotuner.run`` or Triton's listener, so a
    flag-gems workload's tunings passed the recorder in silence ("recorded 0 run(s)", nothing
    else). Now each is named, with the tuner class, whether flag-gems was imported before the
    recording or during it; the hooks are gone afterwards. ``corpus.guide.attach`` finds the
    LibTuner under flag-gems' ``@libentry()``, and LibTuner's own run calls the provider
    (through the ``prune_configs`` it inherits): the model ranks the kernel's 4 configs and
    keeps its top 2 before flag-gems' policy benchmarks (which needs a GPU here)."""
    if importlib.util.find_spec("flag_gems") is None:  # importing it here would need the env below
        pytest.skip("flag-gems is not installed")
    env = {**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}, "PYTHONPATH": str(REPO),
           "GEMS_VENDOR": "nvidia", "FLAGGEMS_DB_URL": f"sqlite:///{tmp_path}/gems.db"}  # fmt: skip
    command = [sys.executable, "-W", "ignore", str(HERE / "gems_workload.py"), str(tmp_path / "out"), str(guide_model)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["restored"]
    assert report["guided"] == {"compiles": 4, "chosen": 2, "fallbacks": []}
    inside, before = report["inside"], report["before"]
    (unseen,) = inside["unseen"]
    assert unseen.startswith("sum_dim_kernel (tuned by flag_gems.utils.libentry.LibTuner")
    assert inside["runs"] == 0 and inside["lost"] == f"1 tuning(s) not recorded: {unseen}"
    # a user's LibTuner subclass (defined during the recording) whose run calls LibTuner's: one
    # tuning, said once, by LibTuner's run that tuned
    assert before["runs"] == 0 and before["unseen"][0] == unseen
    (subclassed,) = before["unseen"][1:]
    assert subclassed.startswith("double (tuned by flag_gems.utils.libentry.LibTuner,")
