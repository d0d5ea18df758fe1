"""What the workers' fork server imports once, before it forks any worker
(:data:`corpus.harvest.workers.PRELOAD`).

Only modules whose import reads no environment a worker sets for itself: torch and Triton
(whose settings are read when used, not when imported), NumPy, pyarrow, and this project's
worker modules, which import no kernel module. Importing them here saves every worker ~1.5-2 s
of CPU. Afterwards the imported objects are frozen out of the garbage collector (``gc.freeze``):
collections in the workers then skip the ~200k objects of these imports, and pages the workers
share with the server stay shared (workers leave by ``os._exit``, the server unfreezes at exit).
"""

from __future__ import annotations

import atexit
import gc

import numpy  # noqa: F401
import pyarrow  # noqa: F401
import torch
import triton
import triton.compiler  # noqa: F401

import corpus.harvest.compile_worker
import corpus.harvest.measure_worker
import corpus.harvest.workers  # noqa: F401
import extract.compile
import extract.graph
import extract.sass  # noqa: F401

if torch.cuda.is_initialized():  # a forked child could not use CUDA: refuse to be the server
    raise RuntimeError("CUDA was initialized while preloading the workers' fork server")

gc.freeze()
# Unfrozen again at exit, so the objects are finalized as usual: nanobind (Triton's bindings)
# would otherwise report every frozen instance as a leak on the harvest's terminal.
atexit.register(gc.unfreeze)
