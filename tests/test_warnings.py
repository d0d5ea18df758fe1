"""Our commands print our own warnings only: what Triton, Ray and Jupyter say about their own
defaults, and that the user did not cause, is filtered where we call them."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_extract_compile_gives_no_warning_of_triton_defaults(tmp_path):
    # -W error: a UserWarning (Triton 3.9's TRITON_DEFAULT_FP_FUSION notice) would fail the compile
    done = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-m", "extract", "compile",
         "tests/extract/kernels/pointwise.py:add_kernel", "--signature", "*fp16,*fp16,*fp16,i32:16",
         "--constexpr", "BLOCK=256", "--target", "sm_90", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and (tmp_path / "add_kernel.ttgir").is_file()


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_ray_token_notice_of_a_local_cluster_is_dropped():
    pytest.importorskip("ray")
    from ray._private.authentication import authentication_token_setup as ray_auth

    from corpus.harvest.cluster import RAY_AUTH_LOGGER, RAY_LOCAL_NOTICES, DropLogRecords

    assert ray_auth.logger.name == RAY_AUTH_LOGGER  # the logger Ray really uses
    collect, quiet = Collect(), DropLogRecords(RAY_LOCAL_NOTICES)
    ray_auth.logger.addHandler(collect)
    try:
        ray_auth._warn_token_auth_enabled()  # what ray.init() logs when it starts a local cluster
        assert RAY_LOCAL_NOTICES[0] in collect.messages[-1]
        collect.messages.clear()
        ray_auth.logger.addFilter(quiet)
        ray_auth._warn_token_auth_enabled()
        ray_auth.logger.warning("another warning")
    finally:
        ray_auth.logger.removeFilter(quiet)
        ray_auth.logger.removeHandler(collect)
    assert collect.messages == ["another warning"]
