"""Using a cost model where kernels are tuned: the candidate rows a model ranks
(:mod:`corpus.guide.candidates`, shared with ``python -m corpus.harvest --rank-with``) and the
``prune_configs_by`` provider for Triton's own autotuner (:func:`prune_configs`).

It lives in ``corpus`` rather than ``train`` because ranking a kernel's configs needs them
compiled to IR first, which needs ``extract`` and Triton; ``train`` imports ``schemas`` only.
"""
from __future__ import annotations

from corpus.guide.plugin import ConfigRanker, attach, prune_configs

__all__ = ["ConfigRanker", "attach", "prune_configs"]
