"""The progress plugin: long tests and long fixtures are named on the terminal as they start,
and durations carry over to the next run through pytest's cache."""

from __future__ import annotations

pytest_plugins = ["pytester"]

PROBE = '''
import time
import pytest

@pytest.fixture(scope="session")
def long_fixture():
    from tests.progress import announce
    announce("preparing the data (a second)")
    return 1

def test_quick(long_fixture):
    pass

@pytest.mark.slow
def test_marked():
    pass

def test_took_a_while():
    time.sleep(0.3)
'''


def test_long_tests_and_fixtures_are_named_before_they_run(pytester, monkeypatch):
    monkeypatch.setattr("tests.progress.LONG_TEST_S", 0.2)  # read by the in-process run below
    pytester.makeini("[pytest]\nmarkers =\n    slow: long\n")
    pytester.makepyfile(test_probe=PROBE)
    first = pytester.runpytest_inprocess("-p", "tests.progress")
    first.assert_outcomes(passed=3)
    lines = first.outlines
    assert "  ... preparing the data (a second)" in lines
    assert "  ... test_marked (long test)" in lines
    assert not any("test_took_a_while" in line for line in lines)  # no duration known yet
    second = pytester.runpytest_inprocess("-p", "tests.progress")
    assert any(line.startswith("  ... test_took_a_while (long test, took 0 s last run)") for line in second.outlines)
    assert not any("test_quick (long" in line for line in second.outlines)
