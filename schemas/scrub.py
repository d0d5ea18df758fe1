"""Publishable datasets: find and remove what names the machine that wrote them.

A dataset is meant to be shared, so its rows and file names must not carry absolute paths of
the writing machine or its host name. Current writers never write them (extraction stores
package-relative locations, the harvest records an anonymous machine id, file names carry the
anonymous id); this module finds them in datasets written before, or by other tools
(:func:`publication_warnings`, used by ``check``), and rewrites those datasets
(:func:`scrub_dataset`, ``python -m schemas scrub DIR``):

- absolute paths in source locations of ``ir_graphs.ir_text`` and in free-text columns
  (error messages, notes) become package-relative (:mod:`schemas.paths`);
- ``runs.hostname`` becomes the anonymous id of that host (:mod:`schemas.machine`);
- file names that are not made of an anonymous writer id get a new one.

Columns hashed into keys (kernel source, signature and toolchain JSON, config JSON) are never
rewritten: ids must not change. ``ir_id`` hashes the IR without locations, so it is unchanged.

Files are replaced like ``compact`` does (:mod:`schemas.replacement`): the rewritten file
appears by atomic rename and names the file it replaces in its footer, then the old one is
deleted; a crash in between loses or doubles nothing. Scrub holds the dataset's maintenance
lock, so it never rewrites a file a ``compact`` is merging.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from schemas.compact import key_reader, present_tables
from schemas.errors import DatasetError, TableNotFoundError
from schemas.locking import LOCK_DIR, clear_idle_locks, holders_naming_hosts, maintenance_lock
from schemas.machine import ANONYMOUS_PREFIX, anonymize_host, is_anonymous
from schemas.paths import (
    FREE_PATH_RE2,
    LOCATION_PATH_RE2,
    relative_path,
    relativize_free_text,
    relativize_locations,
)
from schemas.reader import TableFiles, lift, read_table, table_files
from schemas.replacement import delete_replaced, replace_files
from schemas.storage import Location, read_file, resolve
from schemas.tables import SCHEMA_VERSION, TABLES
from schemas.writer import new_writer_id

HASHED_TEXT: frozenset[tuple[str, str]] = frozenset(
    {
        ("kernels", "source"),
        ("runs", "signature_json"),
        ("runs", "toolchain_json"),
        ("measurements", "config_json"),
    }
)
"""String columns that are hashed into a key (kernel_id, run_id, config_id): never rewritten."""

LOCATION_TEXT: frozenset[tuple[str, str]] = frozenset({("ir_graphs", "ir_text")})
"""Columns holding IR text: only file locations are rewritten there."""

HOST_COLUMNS: frozenset[tuple[str, str]] = frozenset({("runs", "hostname")})
"""Columns naming the machine: host names there become anonymous ids."""

CODE_TEXT: frozenset[tuple[str, str]] = frozenset({("kernels", "source"), *LOCATION_TEXT})
"""Program text: scanned for paths only (a host name there would be an identifier)."""

_ANONYMOUS_FILE = re.compile(
    rf"^part-(?:[a-z]+-)*{ANONYMOUS_PREFIX}[0-9a-f]{{16}}-\d+-[0-9a-f]{{8}}(?:-\d+)?\.parquet$"
)
"""File names made from an anonymous writer id (``schemas.writer.new_writer_id``)."""


@dataclass
class ScrubResult:
    """What scrubbing changed in one table."""

    table: str
    files_rewritten: int = 0
    files_renamed: int = 0
    values_changed: dict[str, int] = field(default_factory=dict)
    """Column -> values rewritten."""


def scrub_dataset(
    url: str, *, state_dir: Path | None = None, on_wait: Callable[[str], None] | None = None
) -> list[ScrubResult]:
    """Rewrite the dataset at ``url`` so that it names no machine (see module doc).

    ``state_dir``: where the anonymizing secret lives when the machine has no machine id
    (see :mod:`schemas.machine`). Running it again changes nothing. Returns one result per
    table present. Every file is validated before any is changed: a dataset with an invalid
    file raises :class:`DatasetError` naming it, untouched; so does a path holding no tables.
    Holds the dataset's maintenance lock (``on_wait(holder)`` is called when another
    maintenance command holds it), so it never rewrites files a ``compact`` is merging.
    """
    loc = resolve(url)
    present = present_tables(loc)
    if not present:
        raise DatasetError(f"{url}: no table directories ({', '.join(TABLES)}); not a dataset root")
    with maintenance_lock(loc, "scrub", on_wait):
        found = {name: table_files(loc, name) for name in present}  # listed under the lock
        rewrite = _path_rewriter(url)
        anonymize = lambda host: anonymize_host(host, state_dir=state_dir)  # noqa: E731
        results = [_scrub_table(loc, name, found[name], rewrite, anonymize) for name in present]
        cleared = clear_idle_locks(loc)  # lock lines of older versions named the host
        if cleared:
            results.append(ScrubResult(LOCK_DIR, files_rewritten=cleared))
        return results


def _path_rewriter(url: str) -> Callable[[str], str]:
    """Paths become relative to their package root; the dataset's own kernels.source_path
    values tell where that root is for the kernels' files."""
    try:
        known = {
            p
            for p in read_table(url, "kernels", columns=["source_path"])
            .column("source_path")
            .to_pylist()
            if p
        }
    except TableNotFoundError:  # no kernels table: the text-only rules still apply
        known = set()
    return lambda path: relative_path(path, known)


def _scrub_table(
    loc: Location,
    name: str,
    found: TableFiles,
    rewrite: Callable[[str], str],
    anonymize: Callable[[str], str],
) -> ScrubResult:
    result = ScrubResult(name)
    for path in found.superseded:  # leftovers of an interrupted compaction: readers ignore them
        delete_replaced(loc, path)
    read_keys = key_reader(loc, name)
    writer_id = new_writer_id()
    for sequence, path in enumerate(found.live, start=1):
        version = found.older.get(path, SCHEMA_VERSION)
        # lifted or conformed to the current schema, as readers see it (absent nullable
        # columns null), so the rewritten file is a current-version file
        table = lift(name, read_file(loc, path), version)
        scrubbed, changed = scrub_table(name, table, rewrite, anonymize)
        directory, base = posixpath.split(path)
        if changed:
            for column, count in changed.items():
                result.values_changed[column] = result.values_changed.get(column, 0) + count
            replace_files(
                loc, name, directory, [path], scrubbed.replace_schema_metadata(None),
                read_keys=read_keys, prefix="scrub",
            )  # fmt: skip
            result.files_rewritten += 1
        elif not _ANONYMOUS_FILE.match(base):
            new_name = f"part-scrub-{writer_id}-{sequence:06d}.parquet"
            loc.fs.move(path, posixpath.join(directory, new_name))  # one atomic rename
            result.files_renamed += 1
    return result


def scrub_table(
    name: str, table: pa.Table, rewrite: Callable[[str], str], anonymize: Callable[[str], str]
) -> tuple[pa.Table, dict[str, int]]:
    """``table`` (rows of table ``name``) with machine paths and host names rewritten, and the
    number of values changed per column (empty when nothing changed)."""
    changed: dict[str, int] = {}
    for index, field_ in enumerate(table.schema):
        key = (name, field_.name)
        if key in HASHED_TEXT or not _is_text(field_.type):
            continue
        column = table.column(index)
        if key in HOST_COLUMNS:
            suspects = pc.invert(pc.starts_with(column, ANONYMOUS_PREFIX))
            convert = anonymize
        elif key in LOCATION_TEXT:
            suspects = pc.match_substring_regex(column, LOCATION_PATH_RE2)
            convert = lambda value: relativize_locations(value, rewrite)  # noqa: E731
        else:
            suspects = pc.match_substring_regex(column, FREE_PATH_RE2)
            convert = lambda value: relativize_free_text(value, rewrite)  # noqa: E731
        if not pc.any(suspects).as_py():  # the common case: one vectorized pass, no Python loop
            continue
        values = column.to_pylist()
        flags = suspects.to_pylist()
        new_values = [convert(v) if flag else v for v, flag in zip(values, flags)]
        count = sum(1 for old, new in zip(values, new_values) if old != new)
        if count:
            changed[field_.name] = count
            table = table.set_column(index, field_, pa.array(new_values, field_.type))
    return table, changed


def publication_warnings(loc: Location, tables: dict[str, pa.Table]) -> list[str]:
    """Why the dataset could not be published as it is: absolute paths or host names in
    string columns, host names in file names. One line per table and column."""
    warnings = []
    # only host names the dataset itself records are looked for: this machine's name may be a
    # common word ("runner", "test") and the dataset may come from elsewhere
    recorded_hosts = _recorded_hosts(tables.get("runs"))
    hosts = sorted(recorded_hosts, key=len, reverse=True)
    for name, table in tables.items():
        for field_ in table.schema:
            if not _is_text(field_.type):
                continue
            key = (name, field_.name)
            column = table.column(field_.name)
            paths = _count(column, LOCATION_PATH_RE2 if key in LOCATION_TEXT else FREE_PATH_RE2)
            if paths:
                fix = (
                    "cannot be rewritten (hashed into a key)"
                    if key in HASHED_TEXT
                    else "`scrub` rewrites them"
                )
                warnings.append(
                    f"{name}.{field_.name}: {paths} value(s) hold an absolute path of the writing machine; {fix}"
                )
            if key in HOST_COLUMNS:
                named = int(
                    pc.sum(pc.invert(pc.starts_with(column.drop_null(), ANONYMOUS_PREFIX))).as_py()
                    or 0
                )
                if named:
                    warnings.append(
                        f"{name}.{field_.name}: {named} value(s) name a host ({', '.join(sorted(recorded_hosts))}); "
                        "`scrub` replaces them by anonymous ids"
                    )
            elif key not in CODE_TEXT and hosts:
                mentions = _count(column, _host_pattern(hosts))
                if mentions:
                    warnings.append(
                        f"{name}.{field_.name}: {mentions} value(s) mention a host name"
                    )
    named_files = _files_naming_hosts(loc, tables, hosts)
    if named_files:
        warnings.append(
            f"{len(named_files)} file name(s) carry a host name, e.g. {named_files[0]}; `scrub` renames them"
        )
    named_locks = holders_naming_hosts(loc)
    if named_locks:
        warnings.append(
            f"{len(named_locks)} lock file(s) name a host, e.g. {posixpath.relpath(named_locks[0], loc.root)}; "
            "`scrub` empties those no process holds"
        )
    return warnings


def _recorded_hosts(runs: pa.Table | None) -> set[str]:
    if runs is None or "hostname" not in runs.column_names:
        return set()
    return {
        h
        for h in pc.unique(runs.column("hostname").drop_null()).to_pylist()
        if h and not is_anonymous(h)
    }


def _host_pattern(hosts: Iterable[str]) -> str:
    alternatives = "|".join(re.escape(h) for h in hosts)
    return rf"(?:^|[^\w.-])(?:{alternatives})(?:$|[^\w-])"


def _files_naming_hosts(loc: Location, tables: dict[str, pa.Table], hosts: list[str]) -> list[str]:
    if not hosts:
        return []
    pattern = re.compile(rf"^part-(?:[a-z]+-)*(?:{'|'.join(re.escape(_safe(h)) for h in hosts)})-")
    named = []
    for name in tables:
        try:
            found = table_files(loc, name)
        except DatasetError:  # check reports unreadable tables itself
            continue
        for path in found.live:
            base = posixpath.basename(path)
            if pattern.match(base) and not _ANONYMOUS_FILE.match(base):
                named.append(posixpath.relpath(path, loc.root))
    return named


def _safe(host: str) -> str:
    """A host name as version-1 writers put it into file names."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", host)[:32] or "host"


def _count(column: pa.ChunkedArray, pattern: str) -> int:
    if column.null_count == len(column):
        return 0
    return int(pc.sum(pc.match_substring_regex(column.drop_null(), pattern)).as_py() or 0)


def _is_text(type_: pa.DataType) -> bool:
    return pa.types.is_string(type_) or pa.types.is_large_string(type_)
