"""Publishable datasets: machine paths and host names are found, and scrubbed away without
changing any id."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import Counter
from pathlib import Path

import fsspec
import pytest

from schemas import DatasetError, DatasetWriter, read_table
from schemas.__main__ import main
from schemas.check import check_dataset
from schemas.errors import StorageError
from schemas.machine import ANONYMOUS_PREFIX, _persisted_secret, anonymize_host, is_anonymous
from schemas.paths import location_paths, relative_path, relativize_free_text, relativize_locations
from schemas.scrub import scrub_dataset
from schemas.storage import list_parquet, resolve
from schemas.tables import TABLES
from tests.faultfs import PROTOCOL, FaultPlan, FaultyFileSystem, faulty_storage, faulty_url
from tests.schemas.conftest import sample_rows

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "v1_dataset"
FIXTURE_HOST = "vm"
"""runs.hostname of the fixture (the machine that wrote it)."""


@pytest.fixture
def v1_copy(tmp_path: Path) -> str:
    root = tmp_path / "v1"
    shutil.copytree(FIXTURE, root)
    return str(root)


def _ir_paths(url: str) -> set[str]:
    paths: set[str] = set()
    for text in read_table(url, "ir_graphs", columns=["ir_text"]).column("ir_text").to_pylist():
        paths |= set(re.findall(r'loc\("([^"]+)":\d+:\d+', text))
    return paths


def _file_names(url: str) -> list[str]:
    loc = resolve(url)
    return [Path(path).name for name in TABLES for path in list_parquet(loc, name)]


# ---------------------------------------------------------------------------- scrub


def test_fixture_leaks_before_scrub(v1_copy: str) -> None:
    """The premise: a dataset written before names its machine, and check says so."""
    assert any(path.startswith("/") for path in _ir_paths(v1_copy))
    assert set(read_table(v1_copy, "runs").column("hostname").to_pylist()) == {FIXTURE_HOST}
    warnings = "\n".join(check_dataset(v1_copy).warnings)
    assert "ir_graphs.ir_text" in warnings and "absolute path" in warnings
    assert "runs.hostname" in warnings
    assert "file name(s) carry a host name" in warnings


def test_scrub_removes_paths_and_hosts_and_keeps_ids(v1_copy: str) -> None:
    before = {name: read_table(v1_copy, name) for name in TABLES}
    scrub_dataset(v1_copy)
    after = {name: read_table(v1_copy, name) for name in TABLES}

    paths = _ir_paths(v1_copy)
    assert paths and not any(path.startswith("/") for path in paths)
    source_paths = set(after["kernels"].column("source_path").to_pylist())
    assert source_paths <= paths  # kernel locations take the form of kernels.source_path
    assert paths - source_paths == {"triton/language/standard.py"}  # inlined library code
    hosts = set(after["runs"].column("hostname").to_pylist())
    assert hosts == {anonymize_host(FIXTURE_HOST)}
    assert FIXTURE_HOST not in "".join(_file_names(v1_copy)).replace(ANONYMOUS_PREFIX, "")

    for name, spec in TABLES.items():
        assert after[name].num_rows == before[name].num_rows, name
        keys = list(spec.key)
        assert sorted(after[name].select(keys).to_pylist(), key=str) == sorted(
            before[name].select(keys).to_pylist(), key=str
        ), name
    # only the scrubbed columns changed
    unchanged = [c for c in TABLES["ir_graphs"].schema.names if c != "ir_text"]
    by_id = lambda t: t.select(unchanged).sort_by("ir_id").to_pylist()  # noqa: E731
    assert by_id(after["ir_graphs"]) == by_id(before["ir_graphs"])

    report = check_dataset(v1_copy)
    assert report.problems == [] and report.warnings == []


def test_scrub_twice_changes_nothing(v1_copy: str) -> None:
    scrub_dataset(v1_copy)
    names = sorted(_file_names(v1_copy))
    again = scrub_dataset(v1_copy)
    assert all(r.files_rewritten == 0 and r.files_renamed == 0 for r in again)
    assert sorted(_file_names(v1_copy)) == names


def test_scrub_cli(v1_copy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scrub", v1_copy]) == 0
    out = capsys.readouterr().out
    assert "ir_text 22" in out and "hostname 4" in out
    assert main(["scrub", v1_copy]) == 0
    assert "nothing to scrub" in capsys.readouterr().out


def test_paths_in_error_messages_are_found_and_scrubbed(tmp_path: Path) -> None:
    root = str(tmp_path / "ds")
    rows = sample_rows(0)
    rows["measurements"][0]["error"] = (
        'CompilationError: File "/home/alice/proj/kern/ops.py", line 3'
    )
    writer = DatasetWriter(root)
    for table in ("kernels", "ir_graphs", "ir_nodes", "ir_edges", "measurements"):
        writer.write(table, rows[table])
    writer.commit_run(rows["runs"])
    assert any("measurements.error: 1 value(s)" in w for w in check_dataset(root).warnings)
    scrub_dataset(root)
    errors = (
        read_table(root, "measurements", columns=["error"]).column("error").drop_null().to_pylist()
    )
    assert errors == ['CompilationError: File "ops.py", line 3']
    assert check_dataset(root).warnings == []


def test_scrub_refuses_what_is_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not a dataset root"):
        scrub_dataset(str(tmp_path / "nothing"))


def test_scrub_refuses_an_invalid_file_before_changing_anything(v1_copy: str) -> None:
    victim = next((Path(v1_copy) / "ir_edges").rglob("*.parquet"))
    victim.write_bytes(victim.read_bytes()[:100])  # truncated: no footer
    names = sorted(_file_names(v1_copy))
    with pytest.raises(DatasetError, match=re.escape(victim.name)):
        scrub_dataset(v1_copy)
    assert sorted(_file_names(v1_copy)) == names
    assert main(["scrub", v1_copy]) == 2


# ---------------------------------------------------------------------------- paths


def test_relativize_locations_rewrites_only_absolute_file_paths() -> None:
    text = (
        '#loc1 = loc("/home/a/p/pkg/k.py":12:5)\n'
        '#loc2 = loc("pkg/k.py":3:1)\n'
        '#loc3 = loc("x"(#loc1))\n'
        '%0 = tt.load %p loc(callsite("/opt/x/site-packages/triton/language/standard.py":40:1 at #loc1))\n'
    )
    out = relativize_locations(text, lambda p: relative_path(p, ["pkg/k.py"]))
    assert location_paths(out) == set()
    assert '#loc1 = loc("pkg/k.py":12:5)' in out
    assert '#loc2 = loc("pkg/k.py":3:1)' in out and '#loc3 = loc("x"(#loc1))' in out
    assert '"triton/language/standard.py":40:1' in out
    assert location_paths(text) == {
        "/home/a/p/pkg/k.py",
        "/opt/x/site-packages/triton/language/standard.py",
    }


@pytest.mark.parametrize(
    "path,known,expected",
    [
        ("/home/a/proj/pkg/mod.py", ["pkg/mod.py"], "pkg/mod.py"),
        ("/usr/lib/python3/dist-packages/triton/a.py", [], "triton/a.py"),
        ("/home/a/script.py", [], "script.py"),
        ("pkg/mod.py", [], "pkg/mod.py"),
        ("C:\\Users\\a\\pkg\\mod.py", ["pkg/mod.py"], "pkg/mod.py"),
    ],
)
def test_relative_path(path: str, known: list[str], expected: str) -> None:
    assert relative_path(path, known) == expected


def test_free_text_keeps_urls_and_ratios() -> None:
    text = "see https://example.org/a/b; ratio a/b/c; failed in /tmp/x/y.py and ~/k/m.py"
    assert (
        relativize_free_text(text, relative_path)
        == "see https://example.org/a/b; ratio a/b/c; failed in y.py and m.py"
    )


# ---------------------------------------------------------------------------- machine ids


def test_anonymous_ids_are_stable_distinct_and_keyed() -> None:
    first = anonymize_host("gpu-node-17")
    assert first == anonymize_host("gpu-node-17") and first != anonymize_host("gpu-node-18")
    assert is_anonymous(first) and re.fullmatch(r"anon-[0-9a-f]{16}", first)
    # keyed by this machine's secret: not the plain hash anyone could compute from a guess
    assert hashlib.sha256(b"gpu-node-17").hexdigest()[:16] not in first
    assert anonymize_host(first) == first  # idempotent


def test_fallback_secret_is_created_once_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    secret = _persisted_secret(state)
    assert len(secret) == 32 and _persisted_secret(state) == secret
    assert (state / "machine-secret").stat().st_mode & 0o777 == 0o600
    assert Counter(p.name for p in state.iterdir()) == Counter(
        {"machine-secret": 1}
    )  # no temporaries left


def test_unwritable_state_dir_still_anonymizes(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    secret = _persisted_secret(blocker / "state")
    assert len(secret) == 32


# ---------------------------------------------------------------------------- faults


def _snapshot(url: str) -> dict[str, list]:
    """Every table's rows, key columns first, sorted: equal snapshots mean equal datasets."""
    snapshot = {}
    for name, spec in TABLES.items():
        table = read_table(url, name, committed_only=False)
        keys = list(spec.key)
        snapshot[name] = sorted(map(str, table.select(keys).to_pylist()))
    return snapshot


def test_a_failed_write_leaves_the_dataset_whole(v1_copy: str) -> None:
    """Scrub fails at each of its writes in turn (disk full); the dataset still reads the same
    rows, and a second scrub finishes the job."""
    before = _snapshot(v1_copy)
    scrubbed_writes = 3  # runs, and ir_graphs at two levels
    for ordinal in range(1, scrubbed_writes + 1):
        root = Path(v1_copy).parent / f"attempt{ordinal}"
        shutil.copytree(FIXTURE, root)
        with (
            faulty_storage(FaultPlan(fail={ordinal})) as plan,
            pytest.raises(StorageError, match="could not write the merged file.*intact"),
        ):
            scrub_dataset(faulty_url(root))
        assert plan.failed, ordinal
        assert _snapshot(str(root)) == before
        assert check_dataset(str(root)).problems == []
        scrub_dataset(str(root))
        report = check_dataset(str(root))
        assert _snapshot(str(root)) == before and report.problems == [] and report.warnings == []


class _NoDelete(FaultyFileSystem):
    """Deleting fails: a crash between the rewritten file's appearance and the old one's
    removal leaves both on disk."""

    def rm(self, path, recursive=False, maxdepth=None):
        raise OSError(f"crash before deleting {path}")


def test_a_crash_before_the_old_file_is_deleted_doubles_nothing(v1_copy: str) -> None:
    before = _snapshot(v1_copy)
    fsspec.register_implementation(PROTOCOL, _NoDelete, clobber=True)
    try:
        with pytest.raises(StorageError, match="replaced, but could not be deleted.*crash before deleting"):
            scrub_dataset(faulty_url(v1_copy))
    finally:
        fsspec.register_implementation(PROTOCOL, FaultyFileSystem, clobber=True)
    runs_files = list((Path(v1_copy) / "runs").rglob("*.parquet"))
    assert len(runs_files) == 2  # the original and its replacement
    assert _snapshot(v1_copy) == before
    assert {h for h in read_table(v1_copy, "runs").column("hostname").to_pylist()} == {
        anonymize_host(FIXTURE_HOST)
    }
    scrub_dataset(v1_copy)  # removes the replaced original and finishes the rest
    assert len(list((Path(v1_copy) / "runs").rglob("*.parquet"))) == 1
    report = check_dataset(v1_copy)
    assert _snapshot(v1_copy) == before and report.problems == [] and report.warnings == []
