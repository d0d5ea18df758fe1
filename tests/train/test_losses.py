"""Ranking losses (train.losses) on hand-made batches: listwise terms prefer the right order."""

from __future__ import annotations

import math

import pytest
import torch

from train.data import Batch
from train.losses import RANKING_LOSSES, LossWeights, listmle, ranking_loss, softmax_loss


def _batch(latency_ms: list[float], group: list[int], valid: list[bool] | None = None) -> Batch:
    n = len(latency_ms)
    empty = torch.zeros(0, dtype=torch.long)
    ok = torch.tensor(valid if valid is not None else [True] * n)
    log_latency = torch.where(ok, torch.log(torch.tensor(latency_ms)), torch.tensor(math.nan))
    return Batch(
        x_cat=torch.zeros((0, 1), dtype=torch.long), x_num=torch.zeros((0, 2)),
        edge_index=torch.zeros((2, 0), dtype=torch.long), edge_type=empty, edge_pos=empty,
        node_graph=empty, n_graphs=0, sample_graph=torch.full((n,), -1), tab=torch.zeros((n, 1)),
        log_latency=log_latency, valid=ok, group=torch.tensor(group), tie_tol=torch.zeros(n),
    )  # fmt: skip


LATENCY = [1.0, 2.0, 4.0, 8.0, 1.0, 3.0]
GROUP = [0, 0, 0, 0, 1, 1]


@pytest.mark.parametrize("loss", [listmle, softmax_loss])
def test_right_order_costs_less_than_reversed(loss):
    batch = _batch(LATENCY, GROUP)
    right = torch.log(torch.tensor(LATENCY)) * 3  # lower score = faster
    assert float(loss(right, batch)) < float(loss(-right, batch))
    assert float(loss(right, batch)) < float(loss(torch.zeros(6), batch))


def test_listmle_by_hand():
    # One run of two configs, fastest first: loss = (logsumexp(-s0, -s1) + s0 + 0) / 2 with
    # the last term logsumexp(-s1) + s1 = 0.
    batch = _batch([1.0, 2.0], [0, 0])
    score = torch.tensor([0.5, 1.5])
    expected = (math.log(math.exp(-0.5) + math.exp(-1.5)) + 0.5) / 2
    assert float(listmle(score, batch)) == pytest.approx(expected)


def test_runs_never_mix_and_failed_configs_are_left_out():
    batch = _batch(LATENCY, GROUP)
    score = torch.log(torch.tensor(LATENCY))
    # Shifting a whole run's scores changes nothing: terms compare configs within a run only.
    shifted = score + torch.tensor([0, 0, 0, 0, 100.0, 100.0])
    for loss in (listmle, softmax_loss):
        assert float(loss(shifted, batch)) == pytest.approx(float(loss(score, batch)), rel=1e-5)
    failed = _batch(LATENCY, GROUP, valid=[True, True, True, False, True, False])
    # Run 1 keeps one valid config: nothing to rank there; NaN latencies never enter.
    value = listmle(score, failed)
    assert torch.isfinite(value)
    alone = _batch([1.0], [0])
    assert float(listmle(torch.zeros(1), alone)) == 0.0


@pytest.mark.parametrize("name", RANKING_LOSSES)
def test_every_ranking_loss_has_gradients(name):
    batch = _batch(LATENCY, GROUP)
    score = torch.zeros(6, requires_grad=True)
    ranking_loss(score, batch, LossWeights(ranking=name)).backward()
    assert (
        score.grad is not None and torch.isfinite(score.grad).all() and score.grad.abs().sum() > 0
    )
    with pytest.raises(ValueError, match="ranking loss"):
        ranking_loss(score, batch, LossWeights(ranking="nope"))
