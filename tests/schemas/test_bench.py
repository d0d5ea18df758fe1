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


def test_each_first_read_verifies_the_statistics_again(monkeypatch) -> None:
    """The gap: the bench forgot only the "+statistics" verdicts before each reader's first
    read, so the first committed read_table met the "+trusted-statistics" verdict an earlier
    reader left for measurements and timed a first read without its statistics check (the
    first committed scan, without that of runs). Each first read now verifies the statistics
    of every table it reads; later reads rely on the verdicts."""
    from pathlib import Path

    from schemas import bench, reader

    verified: list[set[str]] = []  # per timed read: the tables whose statistics it verified
    real_check, real_timed = reader.file_statistics_problems, bench._timed

    def recorded(loc, path, columns=None):
        verified[-1].add(Path(path).parts[-3])  # TABLE/arch=.../part-*.parquet
        return real_check(loc, path, columns)

    def timed(read) -> float:
        verified.append(set())
        return real_timed(read)

    monkeypatch.setattr(reader, "file_statistics_problems", recorded)
    monkeypatch.setattr(bench, "_timed", timed)
    bench.reader_ratios(bench.BenchConfig(rows=3000, rows_per_file=1000, samples_per_row=0, seed=0, rounds=1))
    per_reader = [verified[i : i + 4] for i in range(0, len(verified), 4)]  # first gated, plain; a round of each
    assert [reads[0] for reads in per_reader] == [{"measurements"}] * 2 + [{"measurements", "runs"}] * 2
    assert all(not tables for reads in per_reader for tables in reads[1:])
