"""kernel-corpus's harvest side: the suite (:mod:`corpus.suite`), the autotune runner
(:mod:`corpus.harvest`), other sources of rows (:mod:`corpus.record`, :mod:`corpus.ingest`) and
their benchmarks (:mod:`corpus.bench`). Needs the ``harvest`` extra."""

from __future__ import annotations

from schemas.extras import require_extra

require_extra("corpus", "harvest", ("torch", "triton", "numpy", "networkx", "threadpoolctl", "scipy"))
