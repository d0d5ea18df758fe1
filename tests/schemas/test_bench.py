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
