"""``python -m train``: train the GNN cost model and the baselines, write metrics and report.

Thin entry point: arguments -> :class:`train.experiment.ExperimentConfig` ->
:func:`train.cli.main`. Under ``torchrun`` the GNN trains with DistributedDataParallel.
"""

from __future__ import annotations

import sys

from train.cli import main

if __name__ == "__main__":
    sys.exit(main())
