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

_configs: list[pytest.Config] = []
"""Configured sessions, innermost last (a test may run pytest in-process, as pytester does)."""
_running: str | None = None
"""Node id of the test in progress, whose file name is printed again after an announcement."""


def announce(text: str) -> None:
    """Print ``text`` on the terminal now, on a line of its own, whether or not pytest is
    capturing output (call it from a fixture before a long set-up)."""
    if not _configs:
        return
    config = _configs[-1]
    reporter = config.pluginmanager.getplugin("terminalreporter")
    capture = config.pluginmanager.getplugin("capturemanager")
    if reporter is None or config.option.verbose < -1:  # -qq: nothing but the summary
        return
    if capture is None:
        _write(reporter, text, config)
        return
    with capture.global_and_fixture_disabled():
        _write(reporter, text, config)


def _write(reporter, text: str, config: pytest.Config) -> None:
    reporter.ensure_newline()
    reporter.write(f"  ... {text}", cyan=True)
    reporter.currentfspath = None  # so that the next result starts a line with its file's name
    if _running is not None and config.option.verbose <= 0:
        reporter.write_fspath_result(_running, "")  # a new line; the running test's result follows
    else:
        reporter.line("")


class LongTests:
    """Names long tests as they start; remembers every test's duration for the next run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
        self.last: dict[str, float] = self.cache.get(CACHE_KEY, {}) if self.cache is not None else {}
        self.marked: set[str] = set()
        self.started: dict[str, float] = {}
        self.took: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.marked = {item.nodeid for item in items if item.get_closest_marker("slow")}

    @pytest.hookimpl(trylast=True)  # after the terminal reporter has started the test's line
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        global _running
        _running = nodeid
        self.started[nodeid] = time.perf_counter()
        last = self.last.get(nodeid)
        if self.config.option.verbose > 0:
            return  # -v names every test as it starts
        if nodeid in self.marked or (last is not None and last >= LONG_TEST_S):
            took = f", took {last:.0f} s last run" if last is not None else ""
            announce(f"{location[2]} (long test{took})")

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        global _running
        _running = None
        start = self.started.pop(nodeid, None)
        if start is not None:
            self.took[nodeid] = time.perf_counter() - start

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.cache is not None and self.took:
            self.cache.set(CACHE_KEY, {**self.last, **{k: round(v, 1) for k, v in self.took.items()}})


def pytest_configure(config: pytest.Config) -> None:
    _configs.append(config)
    config.pluginmanager.register(LongTests(config), "kernel-corpus-long-tests")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config in _configs:
        _configs.remove(config)
