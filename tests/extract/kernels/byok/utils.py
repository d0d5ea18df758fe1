"""Helpers imported relatively by :mod:`.ops`, as projects split them out."""

from __future__ import annotations

import triton


def block_for(n: int) -> int:
    """Smallest power of two covering ``n`` columns, at least 16."""
    return max(16, triton.next_power_of_2(n))
