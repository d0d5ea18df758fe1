"""Measurement values the column types cannot rule out, found in one place.

A ``status`` is a string and a latency a double, so a file can hold a status that is none of
:data:`schemas.enums.STATUSES` (``"OK"``, ``"bogus"``) or a NaN or infinite latency, and still
fit its schema. Every source of rows writes neither (an ``ok`` config always has a finite,
non-negative median; a tool's ``inf`` timing becomes a failure status), but a foreign writer or
damage can, and training would take them silently: a NaN median of an ``ok`` row counted as a
valid latency whose logarithm is NaN, an unknown status as one more failure to learn. So
:class:`schemas.DatasetWriter` refuses such rows, ``python -m schemas check`` reports them and
``python -m train`` refuses them (:func:`measurement_value_problems`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from schemas.enums import STATUSES, Status

TIMING_COLUMNS: tuple[str, ...] = ("median_ms", "mean_ms", "min_ms", "max_ms", "p20_ms", "p80_ms", "std_ms")
"""Timing statistics of ``measurements`` (milliseconds): finite wherever they are not null."""


def _example(table: pa.Table, mask: pa.ChunkedArray | pa.Array, column: str) -> str:
    """``run_id=..., config_id=... (column=value)`` of the first row ``mask`` selects."""
    row = table.filter(mask).slice(0, 1).to_pylist()[0]
    keys = ", ".join(f"{k}={row[k]}" for k in ("run_id", "config_id") if k in row)
    return f"{keys} ({column}={row[column]!r})" if keys else f"{column}={row[column]!r}"


def measurement_value_problems(table: pa.Table) -> list[str]:
    """One line per kind of impossible value among ``measurements`` rows ``table`` (any subset
    of its columns): a status outside the vocabulary, a NaN or infinite timing statistic or
    sample, an ``ok`` row whose median is missing or negative. Empty when all is well."""
    problems = []
    names = table.column_names
    if "status" in names:
        unknown = pc.invert(pc.is_in(table.column("status"), value_set=pa.array(STATUSES)))
        count = pc.sum(unknown).as_py() or 0
        if count:
            values = sorted(set(table.filter(unknown).column("status").to_pylist()))[:3]
            problems.append(
                f"measurements: {count} row(s) whose status is none of {', '.join(STATUSES)} "
                f"({', '.join(map(repr, values))}), e.g. {_example(table, unknown, 'status')}"
            )
    for column in (c for c in TIMING_COLUMNS if c in names):
        values = table.column(column)
        bad = pc.fill_null(pc.invert(pc.is_finite(values)), False)
        count = pc.sum(bad).as_py() or 0
        if count:
            problems.append(
                f"measurements: {count} {column} value(s) are NaN or infinite, e.g. {_example(table, bad, column)}"
            )
    if "samples_ms" in names:
        samples = pc.list_flatten(table.column("samples_ms"))
        count = len(samples) - samples.null_count - (pc.sum(pc.is_finite(samples)).as_py() or 0)
        if count:
            problems.append(f"measurements: {count} value(s) inside samples_ms are NaN or infinite")
    if "status" in names and "median_ms" in names:
        median = table.column("median_ms")
        ok = pc.equal(table.column("status"), Status.OK.value)
        unusable = pc.or_kleene(pc.is_null(median), pc.less(median, 0.0))
        bad = pc.fill_null(pc.and_(ok, unusable), False)
        count = pc.sum(bad).as_py() or 0
        if count:
            problems.append(
                f"measurements: {count} 'ok' row(s) without a usable median_ms (missing or negative), "
                f"e.g. {_example(table, bad, 'median_ms')}"
            )
    return problems
