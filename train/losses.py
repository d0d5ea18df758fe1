"""Training losses: within-run ranking (pairwise or listwise), log-latency regression, validity.

Conventions: a lower ``score`` means predicted faster; ``group`` ids a sample's run, and
ranking terms never cross runs (latencies of different runs are not comparable).

Ranking losses (:data:`RANKING_LOSSES`, ``LossWeights.ranking``):

- ``pairwise``: hinge on ordered pairs whose latency gap exceeds the timing spread;
- ``listmle``: ListMLE (Xia et al. 2008): the negative log-likelihood of the measured order
  of a run's valid configs under a Plackett-Luce model of the scores;
- ``softmax``: ListNet top-one (Cao et al. 2007): cross-entropy between the softmax of the
  negated scores over a run and a softmax of the negated log latencies at temperature
  :data:`SOFTMAX_TEMPERATURE` (configs within a few percent of the best share its mass).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from train.data import Batch
from train.model import ModelOutput

RANKING_LOSSES = ("pairwise", "listmle", "softmax")
SOFTMAX_TEMPERATURE = 0.1
"""Temperature (ln-latency units) of the softmax loss's target: a config 10 % slower than the
best gets e^-1 of its weight."""


@dataclass(frozen=True)
class LossWeights:
    """Weights of the three terms and the ranking hyperparameters."""

    ranking: str = "pairwise"
    """Which ranking term (:data:`RANKING_LOSSES`)."""
    rank: float = 1.0
    regression: float = 0.2
    validity: float = 0.2
    margin: float = 0.1
    """Hinge margin in score units."""
    max_pairs: int = 4096
    """Pairs sampled per step when a batch has more (uniformly, without replacement)."""


def ranking_pairs(
    batch: Batch, generator: torch.Generator | None = None, max_pairs: int = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fast, slow) sample indices of the batch's ordered pairs: same run, both valid, and the
    latency gap larger than the two timings' spread (p20..p80 half-widths), so near-ties that
    the measurements cannot order are not trained on. At most ``max_pairs``, sampled."""
    lat = batch.log_latency
    ok = batch.valid & ~torch.isnan(lat)
    same = (
        (batch.group.unsqueeze(0) == batch.group.unsqueeze(1)) & ok.unsqueeze(0) & ok.unsqueeze(1)
    )
    gap = lat.unsqueeze(0) - lat.unsqueeze(1)  # [i, j] = lat_j - lat_i: > 0 when i is faster
    tol = batch.tie_tol.unsqueeze(0) + batch.tie_tol.unsqueeze(1)
    fast, slow = torch.nonzero(same & (gap > tol) & (gap > 1e-6), as_tuple=True)
    if len(fast) > max_pairs:
        keep = torch.randperm(len(fast), generator=generator)[:max_pairs]
        fast, slow = fast[keep], slow[keep]
    return fast, slow


def pairwise_hinge(
    score: torch.Tensor, fast: torch.Tensor, slow: torch.Tensor, margin: float
) -> torch.Tensor:
    """mean(relu(margin - (score[slow] - score[fast]))); 0 when there are no pairs."""
    if len(fast) == 0:
        return score.sum() * 0.0
    return F.relu(margin - (score[slow] - score[fast])).mean()


def _run_lists(batch: Batch) -> list[torch.Tensor]:
    """Per run of the batch, its valid samples' indices sorted fastest first (runs with at
    least two)."""
    ok = batch.valid & ~torch.isnan(batch.log_latency)
    lists = []
    for run in torch.unique(batch.group[ok]):
        members = torch.nonzero(ok & (batch.group == run), as_tuple=True)[0]
        if len(members) >= 2:
            lists.append(members[torch.argsort(batch.log_latency[members], stable=True)])
    return lists


def listmle(score: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Mean over runs of the ListMLE loss of the measured order (fastest first), per config:
    sum_i [logsumexp(-score[order[i:]]) + score[order[i]]] / n. 0 without a run to rank."""
    losses = []
    for order in _run_lists(batch):
        s = -score[order]  # higher = better under Plackett-Luce
        # logsumexp over each suffix, from the end: flip, cumulative logsumexp, flip back.
        suffix = torch.logcumsumexp(s.flip(0), dim=0).flip(0)
        losses.append((suffix - s).mean())
    return torch.stack(losses).mean() if losses else score.sum() * 0.0


def softmax_loss(score: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Mean over runs of the cross-entropy between softmax(-log_latency / T) (target) and
    softmax(-score) over the run's valid configs. 0 without a run to rank."""
    losses = []
    for order in _run_lists(batch):
        target = torch.softmax(-batch.log_latency[order] / SOFTMAX_TEMPERATURE, dim=0)
        losses.append(-(target * torch.log_softmax(-score[order], dim=0)).sum())
    return torch.stack(losses).mean() if losses else score.sum() * 0.0


def ranking_loss(
    score: torch.Tensor,
    batch: Batch,
    weights: LossWeights,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The ranking term ``weights.ranking`` names (unweighted)."""
    if weights.ranking == "pairwise":
        fast, slow = ranking_pairs(batch, generator, weights.max_pairs)
        return pairwise_hinge(score, fast, slow, weights.margin)
    if weights.ranking == "listmle":
        return listmle(score, batch)
    if weights.ranking == "softmax":
        return softmax_loss(score, batch)
    raise ValueError(f"ranking loss {weights.ranking!r} is not one of {RANKING_LOSSES}")


def regression_loss(output: ModelOutput, batch: Batch) -> torch.Tensor:
    """Smooth-L1 between predicted and measured ln(latency ms) over valid samples."""
    ok = batch.valid & ~torch.isnan(batch.log_latency)
    if not ok.any():
        return output.log_latency.sum() * 0.0
    return F.smooth_l1_loss(output.log_latency[ok], batch.log_latency[ok])


def validity_loss(output: ModelOutput, batch: Batch) -> torch.Tensor:
    """Binary cross-entropy of the validity logit against status == ok, over every sample."""
    return F.binary_cross_entropy_with_logits(
        output.valid_logit, batch.valid.to(output.valid_logit.dtype)
    )


def total_loss(
    output: ModelOutput,
    batch: Batch,
    weights: LossWeights,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Weighted sum of the three terms, and each term's value (for logging)."""
    terms = {
        "rank": ranking_loss(output.score, batch, weights, generator),
        "regression": regression_loss(output, batch),
        "validity": validity_loss(output, batch),
    }
    total = (
        weights.rank * terms["rank"]
        + weights.regression * terms["regression"]
        + weights.validity * terms["validity"]
    )
    return total, {name: float(value.detach()) for name, value in terms.items()}
