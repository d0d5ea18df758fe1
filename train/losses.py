"""Training losses: within-run pairwise ranking, log-latency regression, validity.

Conventions: a lower ``score`` means predicted faster; ``group`` ids a sample's run, and
ranking pairs never cross runs (latencies of different runs are not comparable).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from train.data import Batch
from train.model import ModelOutput


@dataclass(frozen=True)
class LossWeights:
    """Weights of the three terms and the ranking hyperparameters."""

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
    fast, slow = ranking_pairs(batch, generator, weights.max_pairs)
    terms = {
        "rank": pairwise_hinge(output.score, fast, slow, weights.margin),
        "regression": regression_loss(output, batch),
        "validity": validity_loss(output, batch),
    }
    total = (
        weights.rank * terms["rank"]
        + weights.regression * terms["regression"]
        + weights.validity * terms["validity"]
    )
    return total, {name: float(value.detach()) for name, value in terms.items()}
