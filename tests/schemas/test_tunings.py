"""What tells one imported tuning (:mod:`schemas.tunings`): the rows check and the importer
compare to find one tuning stored under two run_ids."""

from __future__ import annotations

import pyarrow as pa

from schemas.tunings import doubled_tunings, tuning_identity

RUN = {"source": "tritonparse", "source_ref": "cache:(100,)", "kernel_id": "k", "arch": "sm_90"}
TIMED = [{"config_id": "b", "status": "ok", "median_ms": 2.0}, {"config_id": "a", "status": "ok", "median_ms": 1.0}]


def test_the_same_outcomes_in_any_order_are_one_tuning() -> None:
    assert tuning_identity(RUN, TIMED) == tuning_identity(RUN, TIMED[::-1]) is not None
    other = [dict(TIMED[0], median_ms=2.5), TIMED[1]]  # another rank's timing of the same key
    assert tuning_identity(RUN, other) != tuning_identity(RUN, TIMED)


def test_runs_without_a_timed_config_or_not_imported_have_no_identity() -> None:
    """Two tunings of one key whose every config failed (or cache hits) look alike without being
    one tuning; a harvest's runs are keyed by a random harvest_id and never compared."""
    failed = [{"config_id": "a", "status": "compile_error", "median_ms": None}]
    assert tuning_identity(RUN, failed) is None
    assert tuning_identity(RUN, []) is None
    assert tuning_identity(dict(RUN, source="harvest"), TIMED) is None
    assert tuning_identity(dict(RUN, source_ref=None), TIMED) is None


def test_only_copies_under_another_run_id_are_doubled() -> None:
    """Two tunings of one run_id with equal outcomes are the log's tunings done again."""
    runs = pa.Table.from_pylist(
        [dict(RUN, run_id=run, harvest_id=harvest) for run, harvest in (("r1", "h1"), ("r1", "h2"), ("r2", "h3"))]
    )
    rows = [dict(m, run_id=run, harvest_id=harvest) for run, harvest in (("r1", "h1"), ("r1", "h2")) for m in TIMED]
    assert doubled_tunings(runs, pa.Table.from_pylist(rows)) == []
    uncommitted = [dict(m, run_id="r2", harvest_id="h9") for m in TIMED]  # no runs row: not a tuning
    assert doubled_tunings(runs.slice(0, 2), pa.Table.from_pylist(rows + uncommitted)) == []
    rows += [dict(m, run_id="r2", harvest_id="h3") for m in TIMED]
    assert doubled_tunings(runs, pa.Table.from_pylist(rows)) == [[("r1", "h1"), ("r1", "h2"), ("r2", "h3")]]
