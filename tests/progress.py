"""Visible progress for long tests (a pytest plugin, loaded by ``tests/conftest.py``).

Dots say nothing while one test runs for a minute, and a silent minute looks like a hang. So:

- a test marked ``@pytest.mark.slow``, or one that took at least :data:`LONG_TEST_S` seconds
  in the last run (kept in pytest's cache, ``.pytest_cache``), is named on a line of its own
  before it starts, with its last duration;
- a long fixture calls :func:`announce` with what it is about to do (the session harvests do),
  which prints even while pytest captures output.
"""

from __future__ import annotations

import time

import pytest

LONG_TEST_S = 15.0
"""A test that took this long (setup included) is announced the next time it starts."""
CACHE_KEY = "kernel_corpus/durations"

_config: pytest.Config | None = None


def announce(text: str) -> None:
    """Print ``text`` on the terminal now, on a line of its own, whether or not pytest is
    capturing output (call it from a fixture before a long set-up)."""
    if _config is None:
        return
    reporter = _config.pluginmanager.getplugin("terminalreporter")
    capture = _config.pluginmanager.getplugin("capturemanager")
    if reporter is None or _config.option.verbose < -1:  # -qq: nothing but the summary
        return
    if capture is None:
        _write(reporter, text)
        return
    with capture.global_and_fixture_disabled():
        _write(reporter, text)


def _write(reporter, text: str) -> None:
    reporter.ensure_newline()
    reporter.write_line(f"  ... {text}", cyan=True)
    reporter.currentfspath = None  # the next result prints its file's name again, on a new line


class LongTests:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.last: dict[str, float] = config.cache.get(CACHE_KEY, {}) if config.cache else {}
        self.marked: set[str] = set()
        self.started: dict[str, float] = {}
        self.took: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.marked = {item.nodeid for item in items if item.get_closest_marker("slow")}

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.started[nodeid] = time.perf_counter()
        last = self.last.get(nodeid)
        if self.config.option.verbose > 0:
            return  # -v names every test as it starts
        if nodeid in self.marked or (last is not None and last >= LONG_TEST_S):
            took = f", took {last:.0f} s last run" if last is not None else ""
            announce(f"{location[2]} (long test{took})")

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        start = self.started.pop(nodeid, None)
        if start is not None:
            self.took[nodeid] = time.perf_counter() - start

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.cache is not None and self.took:
            self.config.cache.set(CACHE_KEY, {**self.last, **{k: round(v, 1) for k, v in self.took.items()}})


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config
    config.pluginmanager.register(LongTests(config), "kernel-corpus-long-tests")
