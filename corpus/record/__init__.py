"""Record a live workload's Triton autotuning into the dataset tables.

``python -m corpus.record --out DATASET -- python workload.py ...`` or, inside Python::

    import corpus.record
    with corpus.record(out="dataset"):
        run_my_model()

Every tuning of a ``@triton.autotune`` kernel becomes a committed run (source ``record``):
its measurements, the IR graphs and static stats of each config, and the kernel's source.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from corpus.record.recorder import Recorder, RecordError, RecordOptions, RecordSummary, record

__all__ = ["RecordError", "RecordOptions", "RecordSummary", "Recorder", "record"]


class _CallableModule(types.ModuleType):
    """Makes ``corpus.record(out=...)`` work: the package is the name users reach for, and
    ``corpus.record`` is this package once imported (a function of that name in ``corpus``
    would be replaced by the submodule on import)."""

    def __call__(self, out: str, **options: Any) -> Recorder:
        return record(out, **options)


sys.modules[__name__].__class__ = _CallableModule
