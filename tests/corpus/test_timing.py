from __future__ import annotations

import pytest

from corpus.timing import WallTimer, l2_flush_bytes, summarize


def test_summary_statistics():
    stats = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats.median_ms, stats.min_ms, stats.max_ms, stats.mean_ms) == (3.0, 1.0, 5.0, 3.0)
    assert stats.p20_ms == pytest.approx(1.8) and stats.p80_ms == pytest.approx(4.2)
    assert stats.std_ms == pytest.approx(2**0.5)
    assert stats.n_reps == 5
    with pytest.raises(ValueError):
        summarize([])


def test_wall_timer_restores_outside_timed_region_every_rep():
    events: list[str] = []
    samples = WallTimer().measure(lambda: events.append("launch"), lambda: events.append("restore"), warmup=1, rep=3)
    assert len(samples) == 3 and all(s >= 0 for s in samples)
    assert events == ["restore", "launch"] * 4


def test_flush_buffer_is_at_least_twice_l2():
    assert l2_flush_bytes(50 << 20) == 100 << 20
    assert l2_flush_bytes(None) == 64 << 20
