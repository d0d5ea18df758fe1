"""The one place that reads the process environment.

Libraries take explicit arguments; entry points build a :class:`Settings` with
:func:`read_settings` and pass what is needed down. Worker processes receive their
environment from the parent (see :func:`worker_environment`), never by reading ours.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

CODEGEN_ENV_PREFIXES = ("TRITON_", "MLIR_", "LLVM_", "NVPTX_", "PTXAS_")
"""Environment variables with these prefixes may change generated code; their values enter the
toolchain fingerprint (and so run_id)."""

NON_CODEGEN = frozenset(
    {
        "TRITON_CACHE_DIR",
        "TRITON_HOME",
        "TRITON_DUMP_DIR",
        "TRITON_OVERRIDE_DIR",
        "TRITON_INTERPRET",
        "TRITON_PRINT_AUTOTUNING",
        "TRITON_CACHE_MANAGER",
        "TRITON_REMOTE_CACHE_BACKEND",
    }
)


class SettingsError(ValueError):
    """An environment variable has a value we cannot use; the message names it."""


@dataclass(frozen=True)
class Settings:
    """Environment-derived settings of a harvest."""

    codegen_env: Mapping[str, str]
    """Codegen-affecting variables (name -> value) set in this environment."""
    triton_cache_dir: str | None
    """TRITON_CACHE_DIR when set; compile workers and benchmark workers share it."""
    cuda_visible_devices: str | None


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate the environment (``os.environ`` by default)."""
    env = dict(os.environ if environ is None else environ)
    codegen = {
        name: value
        for name, value in sorted(env.items())
        if name.startswith(CODEGEN_ENV_PREFIXES) and name not in NON_CODEGEN
    }
    if env.get("TRITON_INTERPRET", "0") not in ("", "0", "false", "False"):
        raise SettingsError(
            "TRITON_INTERPRET is set in the environment: unset it; the harvest selects the "
            "interpreter itself for its CPU benchmark worker (--device cpu)"
        )
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible and not re.fullmatch(r"[0-9A-Za-z,\-]+", visible):
        raise SettingsError(f"CUDA_VISIBLE_DEVICES={visible!r} is not a comma-separated device list")
    return Settings(codegen_env=codegen, triton_cache_dir=env.get("TRITON_CACHE_DIR") or None, cuda_visible_devices=visible)


def worker_environment(settings: Settings, *, interpret: bool, cache_dir: str) -> dict[str, str]:
    """Variables a worker process must see before it imports Triton or any kernel module."""
    return {"TRITON_INTERPRET": "1" if interpret else "0", "TRITON_CACHE_DIR": cache_dir}
