"""Training loop: run-grouped batches, early stopping on validation Kendall tau, DDP-aware.

Which epoch's weights are kept (``FitResult.selection``): the best validation Kendall tau;
the lowest training loss when the validation split has no run with two valid configs (said
in ``FitResult.notice``: a validation split that cannot rank must not silently hand back the
untrained initial weights); the last epoch when there is no validation split at all (the
final model, trained for a fixed number of epochs).

Under ``torchrun`` (``torch.distributed`` initialized by the caller) the model is wrapped in
DistributedDataParallel and each rank takes its share of the runs every epoch
(:meth:`train.data.GraphSamples.run_batches`); every rank evaluates the whole validation set
with identical weights, so early-stopping decisions agree without communication.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from train.data import GraphSamples
from train.losses import LossWeights, total_loss
from train.metrics import evaluate
from train.model import CostModel, ModelConfig


@dataclass(frozen=True)
class TrainConfig:
    """Optimization hyperparameters (stored in checkpoints)."""

    epochs: int = 40
    lr: float = 2e-3
    weight_decay: float = 1e-4
    runs_per_batch: int = 8
    patience: int = 10
    """Epochs without a better validation Kendall tau before stopping."""
    seed: int = 0
    device: str = "cpu"
    loss: LossWeights = field(default_factory=LossWeights)


SELECTIONS = ("val_kendall_tau", "train_loss", "last_epoch")


@dataclass
class FitResult:
    """The kept model, the epoch it came from, the criterion that chose it (:data:`SELECTIONS`;
    see the module docstring) and its value, per-epoch history rows (epoch, train loss terms,
    val_kendall_tau) and ``notice``: a sentence for the user when the criterion is not the
    requested one (None otherwise)."""

    model: CostModel
    best_epoch: int
    best_val: float
    history: list[dict[str, float]]
    selection: str = "val_kendall_tau"
    notice: str | None = None


@dataclass
class Predictions:
    """Per-sample model outputs (numpy, float64 [n]): ``score`` (lower = faster),
    ``latency_ms`` (exp of the regression head), ``p_valid`` (sigmoid of the validity head)."""

    score: np.ndarray
    latency_ms: np.ndarray
    p_valid: np.ndarray


def _world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@torch.no_grad()
def predict_samples(
    model: CostModel, samples: GraphSamples, *, runs_per_batch: int = 64
) -> Predictions:
    """Run ``model`` over every sample (in sample order)."""
    device = next(model.parameters()).device  # batches follow the model (CPU or its GPU)
    model.eval()
    score = np.zeros(len(samples))
    latency = np.zeros(len(samples))
    p_valid = np.zeros(len(samples))
    for idx in samples.run_batches(runs_per_batch, shuffle=False):
        out = model(samples.collate(idx).to(device))
        score[idx] = out.score.double().cpu().numpy()
        latency[idx] = torch.exp(out.log_latency.double()).cpu().numpy()
        p_valid[idx] = torch.sigmoid(out.valid_logit.double()).cpu().numpy()
    return Predictions(score, latency, p_valid)


def validation_tau(model: CostModel, samples: GraphSamples) -> float:
    """Mean per-run Kendall tau of ``model`` on ``samples`` (NaN when no run is rankable)."""
    pred = predict_samples(model, samples)
    measured = samples.frame["median_ms"].to_numpy().astype(np.float64)
    measured = np.where(samples.valid.numpy(), measured, np.nan)
    return evaluate(samples.frame["run_id"].to_numpy(), measured, pred.score)["kendall_tau"]


def train_model(
    train: GraphSamples,
    val: GraphSamples | None,
    model_config: ModelConfig,
    config: TrainConfig,
    *,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> FitResult:
    """Train a :class:`CostModel` on ``train``; keep the weights of the epoch with the best mean
    validation Kendall tau on ``val`` and stop after ``config.patience`` epochs without gain
    (see the module docstring for a ``val`` that cannot rank, or None)."""
    selection, notice = _selection(val)
    torch.manual_seed(config.seed)
    rank, world = _world()
    model = CostModel(model_config)
    _initialize_heads(model, train)
    model = model.to(config.device)
    wrapped: torch.nn.Module = model
    if world > 1:
        # find_unused_parameters: a batch of runs whose configs all failed to compile has no
        # graph, and the GNN's parameters then get no gradient on that rank.
        wrapped = DistributedDataParallel(model, find_unused_parameters=True)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    generator = torch.Generator().manual_seed(config.seed + rank)
    best_state, best_val, best_epoch, stale = copy.deepcopy(model.state_dict()), -math.inf, 0, 0
    history: list[dict[str, float]] = []
    for epoch in range(1, config.epochs + 1):
        model.train()
        sums: dict[str, float] = {}
        steps = 0
        for idx in train.run_batches(
            config.runs_per_batch,
            shuffle=True,
            seed=config.seed * 100003 + epoch,
            rank=rank,
            world_size=world,
        ):
            batch = train.collate(idx).to(config.device)
            loss, terms = total_loss(wrapped(batch), batch, config.loss, generator)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            terms["loss"] = float(loss.detach())
            for name, value in terms.items():
                sums[name] = sums.get(name, 0.0) + value
            steps += 1
        row = {"epoch": float(epoch), **{k: v / max(steps, 1) for k, v in sums.items()}}
        if selection == "val_kendall_tau" and val is not None:
            row["val_kendall_tau"] = validation_tau(model, val)
        history.append(row)
        if on_epoch is not None:
            on_epoch(row)
        current = {
            "val_kendall_tau": row.get("val_kendall_tau", math.nan),
            "train_loss": -row.get("loss", math.inf),
            "last_epoch": float(epoch),
        }[selection]
        if not math.isnan(current) and current > best_val:
            best_state, best_val, best_epoch, stale = (
                copy.deepcopy(model.state_dict()),
                current,
                epoch,
                0,
            )
        else:
            stale += 1
            if stale >= config.patience and selection != "last_epoch":
                break
    model.load_state_dict(best_state)
    model.eval()
    if selection == "train_loss":
        best_val = -best_val
    return FitResult(model, best_epoch, best_val, history, selection, notice)


def _selection(val: GraphSamples | None) -> tuple[str, str | None]:
    """(criterion, notice) for a validation split: see the module docstring."""
    if val is None or len(val) == 0:
        return "last_epoch", None
    judged = (
        val.frame.filter(pl.col("valid")).group_by("run_id").agg(pl.col("median_ms").n_unique())
    )
    if judged.filter(pl.col("median_ms") >= 2).is_empty():
        return "train_loss", (
            "the validation split has no run with two valid configs of different latency to "
            "rank: the epoch with "
            "the lowest training loss is kept instead of early stopping on validation tau"
        )
    return "val_kendall_tau", None


def _initialize_heads(model: CostModel, train: GraphSamples) -> None:
    """Start the regression head at the training mean log latency and the validity head at
    the training share of valid configs (as a logit): latencies span decades and a head at 0
    (1 ms) would spend its first epochs shifting its bias, and a validity head at 0 (p 0.5)
    flips on noise, so a model early-stopped after a few epochs predicted failures on data
    without any."""
    known = train.log_latency[train.valid & ~torch.isnan(train.log_latency)]
    share = float(train.valid.float().mean()) if len(train) else 1.0
    share = min(max(share, 1e-3), 1 - 1e-3)
    with torch.no_grad():
        if len(known):
            model.heads.bias[1] = known.mean()
        model.heads.bias[2] = math.log(share / (1 - share))
