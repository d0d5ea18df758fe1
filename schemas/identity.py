"""Content-derived keys and the canonical encodings they hash.

All keys are 16 hex characters: the first 8 bytes of BLAKE2b over a canonical encoding.
At 2**64 values a million-row dataset has a collision chance below 1e-7.

- ``kernel_id``  = H("kernel", entry name, module source text)
- ``config_id``  = H("config", canonical JSON of {kwargs, num_warps, num_stages, num_ctas, maxnreg})
- ``run_id``     = H("run", kernel_id, canonical signature JSON, device model, toolchain JSON)
- ``ir_id``      = H("ir", level, IR text with source locations stripped by ``extract``)

Readers in other repositories may recompute keys with these functions (they need only the
standard library).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

KEY_HEX_CHARS = 16


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def content_hash(*parts: str | bytes) -> str:
    """Hex digest of the parts, length-prefixed so ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.blake2b(digest_size=KEY_HEX_CHARS // 2)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def kernel_id(source: str, entry_name: str, spec_source: str = "") -> str:
    """Key of a kernel: its module source text and entry function name, plus ``spec_source``
    when the rows were measured through a suite spec (the harvest): the spec classes' names and
    the source of their modules other than the kernel's (inputs, reference, outputs, bind), so
    a fixed spec is a new kernel_id and run_id. Recorded and imported rows have no spec."""
    if not spec_source:
        return content_hash("kernel", entry_name, source)
    return content_hash("kernel", entry_name, source, spec_source)


def config_dict(
    kwargs: Mapping[str, Any],
    num_warps: int,
    num_stages: int,
    num_ctas: int = 1,
    maxnreg: int | None = None,
) -> dict[str, Any]:
    """The canonical dict that ``config_id`` hashes and ``measurements.config_json`` stores."""
    return {
        "kwargs": dict(sorted(kwargs.items())),
        "num_warps": int(num_warps),
        "num_stages": int(num_stages),
        "num_ctas": int(num_ctas),
        "maxnreg": None if maxnreg is None else int(maxnreg),
    }


def config_id(
    kwargs: Mapping[str, Any],
    num_warps: int,
    num_stages: int,
    num_ctas: int = 1,
    maxnreg: int | None = None,
) -> str:
    """Key of a launch configuration."""
    return content_hash("config", canonical_json(config_dict(kwargs, num_warps, num_stages, num_ctas, maxnreg)))


def launch_string(
    kwargs: Mapping[str, Any],
    num_warps: int,
    num_stages: int,
    num_ctas: int = 1,
    maxnreg: int | None = None,
) -> str:
    """The config as the ``triton.Config(...)`` expression a user would paste into code."""
    body = ", ".join(f"{k!r}: {v!r}" for k, v in sorted(kwargs.items()))
    text = f"triton.Config({{{body}}}, num_warps={num_warps}, num_stages={num_stages}"
    if num_ctas != 1:
        text += f", num_ctas={num_ctas}"
    if maxnreg is not None:
        text += f", maxnreg={maxnreg}"
    return text + ")"


def run_id(kernel_key: str, signature: Mapping[str, Any], device_model: str, toolchain: Mapping[str, Any]) -> str:
    """Key of an autotune run.

    ``signature``: argument names, dtypes, shapes, stride patterns and specializing scalar
    values. ``device_model``: name plus compute capability, or ``"interpreter"``.
    ``toolchain``: Triton version/hash and codegen-affecting environment knobs. Device facts
    that do not change the device model (clocks, driver) are not part of the key.
    """
    return content_hash("run", kernel_key, canonical_json(signature), device_model, canonical_json(toolchain))


def ir_id(level: str, text_without_locations: str) -> str:
    """Key of an IR graph; callers strip source locations first (``extract`` does)."""
    return content_hash("ir", level, text_without_locations)
