"""train.predict's table (train.ranking_view): runs by family and shape, configs by knobs,
failed configs said, widths kept."""

from __future__ import annotations

import io

import polars as pl
from rich.console import Console

from train.ranking_view import print_ranking, shown_columns


def _ranking(**extra) -> pl.DataFrame:
    params = [{"name": "BLOCK_M", "value": 16}, {"name": "BLOCK_N", "value": 128}]
    return pl.DataFrame({
        "run_id": ["3f9a2c"] * 3, "config_id": ["c0", "c1", "c2"], "rank": [1, 2, 3],
        "predicted_ms": [0.5, 0.25, 0.75], "p_valid": [0.9, 0.8, 0.1],
        "num_warps": [4, 8, 2], "num_stages": [2, 3, 1], "config_params": [params] * 3, **extra,
    })  # fmt: skip


def _printed(ranking: pl.DataFrame, width: int = 80, out: str | None = None) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    print_ranking(console, ranking, top=2, source="ckpt", out=out)
    return console.file.getvalue().splitlines()


def test_runs_by_family_configs_by_knobs_failures_said():
    ranking = _ranking(family=["softmax"] * 3, shape_name=["M5_N1536"] * 3,
                       dtype=["float32"] * 3, median_ms=[0.4, None, 0.3],
                       valid=[True, False, True])  # fmt: skip
    lines = _printed(ranking, out="r.parquet")
    text = "\n".join(lines)
    assert "softmax M5_N1536 float32" in text and "3f9a2c" not in text
    assert "BLOCK_M=16 BLOCK_N=128 w4 s2" in text and "failed" in text
    assert "w2 s1" not in text  # rank 3 is past --top 2
    assert "wrote r.parquet" in text
    assert max(map(len, lines)) <= 80 and all(line == line.rstrip() for line in lines)


def test_runs_are_listed_by_family_and_shape_not_by_run_id():
    """Runs came in run_id order (a hash): softmax, cumsum, bias_gelu, softmax again ...; they
    read as the harvest's summary lists them, family then shape."""
    runs = [("a1", "softmax", "M7"), ("b2", "cumsum", "M5"), ("c3", "softmax", "M4")]
    ranking = pl.concat([
        _ranking(run_id=[run] * 3, family=[family] * 3, shape_name=[shape] * 3, dtype=["float32"] * 3)
        for run, family, shape in runs
    ])  # fmt: skip
    headings = [line.strip() for line in _printed(ranking) if line.strip().endswith(" float32")]
    assert headings == ["cumsum M5 float32", "softmax M4 float32", "softmax M7 float32"]


def test_candidates_without_a_family_show_their_run_id_and_no_empty_columns():
    ranking = _ranking()
    assert shown_columns(ranking) == ["rank", "config", "predicted ms", "p runs"]
    text = "\n".join(_printed(ranking))
    assert "3f9a2c" in text and "measured ms" not in text
    assert "nothing written: --out" in text


def test_a_config_never_benchmarked_is_not_shown_as_failed():
    """The gap: a budget's or corpus.guide's ``skipped`` rows (no latency, ``valid`` false) were
    shown as ``failed`` by ``python -m train.predict --data``, as if the config had not run."""
    ranking = _ranking(median_ms=[0.4, None, None], valid=[True, False, False],
                       status=["ok", "skipped", "skipped"])  # fmt: skip
    text = "\n".join(_printed(ranking))
    assert "not run" in text and "failed" not in text.split("measured ms", 1)[1].split("rank ", 1)[0]


def test_a_config_id_with_brackets_is_shown_as_it_is():
    """A compile directory's name is the config_id of a config without meta-parameters: rich
    read "[x]" in it as a style (gone) and "[/b]" as a closing tag (a MarkupError)."""
    ranking = _ranking(config_id=["dir[x][/b]", "c1", "c2"], config_params=[[]] * 3)
    text = "\n".join(_printed(ranking, width=120))
    assert "dir[x][/b] w4 s2" in text, text
