"""Session-wide test set-up: a private Triton cache, so results never depend on what other
checkouts (other paths, other source locations) left in ~/.triton/cache."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="kernel-corpus-test-cache-"))
