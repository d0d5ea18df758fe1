"""Shared fixtures of the extract tests: the IR fixture files for the running Triton."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extract.kernels.cases import cases
from tests.extract.make_fixtures import LEVELS, TARGETS, relative_paths, version_dir

HANDWRITTEN = Path(__file__).resolve().parent / "fixtures" / "handwritten"
FIXTURE_CASES = [item.name for item in cases() if item.fixture]
FIXTURE_NAMES = [f"{name}.{target}.{level}" for name in FIXTURE_CASES for target in TARGETS for level in LEVELS]


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Committed fixtures of this Triton version, or (for a version without committed
    fixtures) the same cases compiled now."""
    committed = version_dir()
    if committed.is_dir() and all((committed / name).is_file() for name in FIXTURE_NAMES):
        return committed
    from extract.compile import compile_call

    out = tmp_path_factory.mktemp("fixtures")
    for item in cases():
        if not item.fixture:
            continue
        for target in TARGETS:
            result = compile_call(item.fn, item.args, target=target, num_warps=item.num_warps, num_stages=item.num_stages)
            for level in LEVELS:
                (out / f"{item.name}.{target}.{level}").write_text(relative_paths(str(result.asm[level])))
    return out
