"""``python -m schemas.bench`` prints the reader ratios it promises (figures are not asserted:
they are the benchmark's job, on a quiet machine)."""

from __future__ import annotations

from schemas.bench import main


def test_bench_prints_gated_vs_plain_ratios(capsys) -> None:
    main(["--rows", "3000", "--rows-per-file", "1000", "--rounds", "1", "--ratios-only"])
    printed = capsys.readouterr().out
    for reader in ("read_table, first read (", "read_table ", "scan_table().collect(), first read (polars"):
        assert reader in printed
        assert reader.replace(",", ", committed runs,", 1) in printed  # and the default, committed read
    assert printed.count("x  p") == 8  # eight ratio lines, each naming its plain counterpart


def test_bench_compacts_the_same_rows_from_few_and_many_files() -> None:
    """compact_seconds asserts that each compaction merged every row; the files it reports are
    the few and eight times as many."""
    from schemas.bench import COMPACT_FILE_FACTOR, BenchConfig, compact_seconds

    seconds = compact_seconds(BenchConfig(rows=2000, rows_per_file=1000, samples_per_row=0, seed=0))
    assert list(seconds) == [2, 2 * COMPACT_FILE_FACTOR]
    assert all(s > 0 for s in seconds.values())
