"""Replacing files atomically, and verifying every claim that a file replaced others.

Maintenance commands (``compact``, ``scrub``, ``check --fix``) never rewrite a file: they
write a new one whose footer names the files it replaces (``kernel_corpus.replaces``), then
delete those. Readers skip a replaced file from the moment its replacement appears, so a
crash in between loses and doubles nothing (:func:`replace_files`).

A footer is only a claim, and a wrong claim would hide committed rows (an empty file that
"replaces" the real ``runs`` file makes the dataset look empty, one with the same keys and
other timings swaps the measurements). So a claim retires a file only when every row of that
file is present in the replacing file with the same key and the same values of the table's
fixed columns (:attr:`schemas.tables.TableSpec.fixed`: what no maintenance command rewrites)
(:func:`settle_claims`, used by every reader, ``check`` and ``compact``), and
:func:`replace_files` checks the same before it writes. Replacements may chain (scrub, then
compact), but not loop: files that replace each other in a cycle stay live and are reported.
The check reads those identity columns only, and only while replaced files still exist (after
a crash, until the next ``compact``).

One exception: an imported run's ``finished_at`` (and ``started_at``, ``hostname``) records
when and where ``python -m corpus.ingest`` ran, not the tuning it imports, whose
``harvest_id`` derives from the log's content. Two imports of one log (on two machines, then
merged) are the same rows but for those columns, and ``check --fix`` keeps one of them
(:mod:`schemas.repair`); so ``finished_at`` is not compared for rows whose ``source`` is an
importer's (:data:`IMPORT_SOURCES`, :func:`comparable_identity`), and ``source`` is.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from schemas.enums import Source
from schemas.errors import DatasetError, ReplacementError, StorageError, failure_reason
from schemas.keys import key_set, missing_from
from schemas.storage import META_REPLACES, Footer, Location, write_atomic
from schemas.tables import TABLES
from schemas.writer import new_writer_id, with_file_metadata

KeyReader = Callable[[str], pa.Table]
"""path -> the identity columns (key, then fixed columns; :func:`claim_columns`) of that file's
rows, lifted to the current schema (:func:`schemas.reader.file_keys`)."""

IMPORT_SOURCES = frozenset({Source.HELION.value, Source.TRITONPARSE.value})
"""``runs.source`` of rows ``python -m corpus.ingest`` wrote: their key derives from the log's
content, so importing one log twice (into two datasets) gives the same keys."""

IMPORT_OWN_COLUMNS = ("started_at", "finished_at", "hostname")
"""Columns of an imported ``runs`` row that describe the import (its clock and machine), not
the tuning imported: the only columns in which two imports of one log differ."""


def claim_columns(table: str) -> tuple[str, ...]:
    """The columns a claim is checked on: the table's identity (key, fixed columns), and for
    ``runs`` the ``source`` that tells an imported row (:func:`comparable_identity`), itself
    compared: no maintenance command rewrites it."""
    identity = TABLES[table].identity
    return (*identity, "source") if table == "runs" else identity


def comparable_identity(table: str, rows: pa.Table) -> pa.Table:
    """The :func:`claim_columns` of ``rows`` as compared between a replaced file and its
    replacement (a ``source`` that ``rows`` lacks is null): an imported run's ``finished_at``
    is the import's clock (:data:`IMPORT_OWN_COLUMNS`), so it is left out (null) for those
    rows; every other row keeps it. ``source`` being compared too, a replacement that calls a
    harvested run imported does not escape the check."""
    columns = list(claim_columns(table))
    if table != "runs":
        return rows.select(columns)
    if "source" not in rows.column_names:
        rows = rows.append_column("source", pa.nulls(rows.num_rows, pa.string()))
    source = rows.column("source")
    imported = pc.fill_null(pc.is_in(source, value_set=pa.array(sorted(IMPORT_SOURCES), source.type)), False)
    finished = rows.column("finished_at")
    compared = pc.if_else(imported, pa.scalar(None, finished.type), finished)
    return rows.select(columns).set_column(columns.index("finished_at"), "finished_at", compared)


def settle_claims(
    table: str,
    footers: Mapping[str, Footer],
    invalid: Sequence[str],
    read_keys: KeyReader,
) -> tuple[set[str], list[DatasetError]]:
    """Which listed files are retired by a verified replacement, and what is wrong with the
    claims that are not honoured.

    ``footers``: the valid files of one table (path -> parsed footer); ``invalid``: listed
    files that failed validation (a claim on one is not honoured: its own error stands).
    A claim retires file F when every row of F is present in the claiming file (same key and
    fixed values), and when the claiming file is live or itself retired by a chain that ends in a live file.
    """
    present = set(footers) | set(invalid)
    claims = [
        (replacer, posixpath.join(posixpath.dirname(replacer), name))
        for replacer, footer in footers.items()
        for name in footer.replaces
    ]
    claims = [(replacer, replaced) for replacer, replaced in claims if replaced in present]
    if not claims:
        return set(), []
    compared = claim_columns(table)
    problems: list[DatasetError] = []
    verified: dict[str, set[str]] = {}
    replacer_keys: dict[str, pa.Array] = {}  # a merge claims every file it replaced: read it once
    for replacer, replaced in claims:
        if replaced in invalid:
            continue  # an invalid file cannot be vouched for; its own error is reported
        if replacer not in replacer_keys:
            replacer_keys[replacer] = key_set(comparable_identity(table, read_keys(replacer)), compared)
        missing = missing_from(comparable_identity(table, read_keys(replaced)), replacer_keys[replacer], compared)
        if missing:
            problems.append(
                ReplacementError(
                    f"{replacer}: its footer says it replaces {posixpath.basename(replaced)}, but "
                    f"{missing} of that file's rows are not in it ({_compared(table)}); the claim "
                    "is not honoured (it would hide those rows): delete the file that is not a "
                    "merge of the other"
                )
            )
            continue
        verified.setdefault(replacer, set()).add(replaced)
    retired = {path for targets in verified.values() for path in targets}
    reachable = _reachable(set(footers) - retired, verified)
    looping = retired - reachable
    if looping:
        problems.append(
            ReplacementError(
                f"{', '.join(sorted(looping))}: these files claim to replace each other in a "
                "cycle; none is retired (keep one copy of their rows)"
            )
        )
        retired -= looping
    return retired, problems


def _compared(table: str) -> str:
    spec = TABLES[table]
    values = claim_columns(table)[len(spec.key):]
    if not values:
        return f"by key {', '.join(spec.key)}"
    imported = " (finished_at not for imported runs)" if table == "runs" else ""
    return f"by key {', '.join(spec.key)} and values of {', '.join(values)}{imported}"


def _reachable(live: set[str], edges: Mapping[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(live)
    while stack:
        for target in edges.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def replace_files(
    loc: Location,
    name: str,
    directory: str,
    paths: Sequence[str],
    rows: pa.Table,
    *,
    read_keys: KeyReader,
    prefix: str = "compact",
) -> str:
    """Replace ``paths`` (files of table ``name`` in ``directory``) by one new file of
    ``rows``, atomically: the new file names the old ones in its footer, so readers skip them
    from the moment it appears; they are deleted after. Returns the new file's name.

    Raises DatasetError, with ``paths`` untouched and nothing written, when a row of an old
    file is missing from ``rows`` (by key and fixed values: the replacement would lose or
    change rows) or the new file cannot be written. ``read_keys``: the identity columns of an
    old file (:data:`KeyReader`).
    """
    compared = claim_columns(name)
    new_rows = comparable_identity(name, rows.select([c for c in compared if c in rows.column_names]))
    new_keys = key_set(new_rows, compared)  # once, not per file: compacting N files stays linear
    for path in paths:
        missing = missing_from(comparable_identity(name, read_keys(path)), new_keys, compared)
        if missing:
            raise DatasetError(
                f"{path}: {missing} of its rows would be missing from its replacement "
                f"({_compared(name)}); nothing was changed"
            )
    replaces = json.dumps(sorted(posixpath.basename(p) for p in paths)).encode()
    table = with_file_metadata(rows, TABLES[name], {META_REPLACES: replaces})
    file_name = f"part-{prefix}-{new_writer_id()}.parquet"
    try:
        write_atomic(loc, directory, file_name, table)
    except (OSError, pa.ArrowException) as exc:
        raise StorageError(
            f"{directory}: could not write the merged file ({failure_reason(exc)}); "
            "the files it would replace are untouched and the dataset is intact"
        ) from None
    for path in paths:
        delete_replaced(loc, path)
    return file_name


def delete_replaced(loc: Location, path: str) -> None:
    """Delete a file its replacement made invisible. One that cannot be deleted (read-only or
    failing storage) stays harmlessly superseded; the next ``compact`` removes it."""
    try:
        loc.fs.delete_file(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageError(
            f"{path}: replaced, but could not be deleted ({exc.strerror or exc}); readers "
            "ignore it and the next `python -m schemas compact` removes it"
        ) from None

