"""Shared fixtures of the suite tests: every test that takes ``family`` runs once per family
of the built-in suite, so families added by anyone are covered without editing the tests."""

from __future__ import annotations

import pytest

from corpus.suite.registry import BUILTIN_SUITE, load_suite
from corpus.suite.spec import KernelSpec

SUITE_REPORT: dict[str, list[str]] = {}
"""Lines the suite tests want in the terminal summary, by section title."""


def builtin_specs() -> dict[str, KernelSpec]:
    return load_suite(BUILTIN_SUITE)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "family" in metafunc.fixturenames:
        metafunc.parametrize("family", sorted(builtin_specs()))


@pytest.fixture(scope="session")
def specs() -> dict[str, KernelSpec]:
    return builtin_specs()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, lines in SUITE_REPORT.items():
        terminalreporter.section(title)
        for line in lines:
            terminalreporter.write_line(line)
