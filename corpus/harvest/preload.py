"""What the workers' fork server imports once, before it forks any worker
(:data:`corpus.harvest.workers.PRELOAD`).

The heavy imports whose result no worker setting changes: torch (~1 s of CPU, most of a
worker's start-up), NumPy, pyarrow, threadpoolctl and the schemas. Not Triton: ``@triton.jit``
chooses compiler or interpreter when it decorates, and ``triton.language`` decorates its own
helpers (``tl.sum``, ...) when it is imported, so each worker imports Triton after its own
``TRITON_INTERPRET`` is set (~0.2 s). Nothing here initializes CUDA. Afterwards the imported
objects are frozen out of the garbage collector (``gc.freeze``): collections in the workers then
skip the ~200k objects of these imports, and pages the workers share with the server stay
shared (workers leave by ``os._exit``; the server unfreezes at exit).
"""

from __future__ import annotations

import atexit
import gc
import sys

import numpy  # noqa: F401
import pyarrow  # noqa: F401
import threadpoolctl  # noqa: F401
import torch

import schemas  # noqa: F401

if "triton" in sys.modules:  # a worker must import Triton under its own environment
    raise RuntimeError("Triton was imported while preloading the workers' fork server")
if torch.cuda.is_initialized():  # a forked child could not use CUDA: refuse to be the server
    raise RuntimeError("CUDA was initialized while preloading the workers' fork server")

gc.freeze()
# Unfrozen again at exit, so the objects are finalized as usual: nanobind would otherwise
# report frozen instances as leaks on the harvest's terminal.
atexit.register(gc.unfreeze)
