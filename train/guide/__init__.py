"""Tuning with a cost model: score candidate configs with a checkpoint, sequential tuners
(an in-loop LFBO surrogate, expected improvement over calibrated model estimates) and budgets.

Used by the offline replay (:mod:`train.replay`), the budgeted harvest
(``python -m corpus.harvest --rank-with``) and the Triton plug-in (:mod:`corpus.guide`).
Imports ``schemas`` and ``train`` only.
"""

from __future__ import annotations

from train.guide.budget import Budget, parse_budget
from train.guide.improvement import EiSettings
from train.guide.policies import EiPolicy, LfboPolicy, Policy, hedged_order
from train.guide.scoring import (
    GuideModel,
    Scores,
    arch_refusal,
    load_model,
    model_name,
    score_candidates,
)
from train.guide.surrogate import LfboSettings

__all__ = [
    "Budget",
    "EiPolicy",
    "EiSettings",
    "GuideModel",
    "LfboPolicy",
    "LfboSettings",
    "Policy",
    "Scores",
    "arch_refusal",
    "hedged_order",
    "load_model",
    "model_name",
    "parse_budget",
    "score_candidates",
]
