"""What the harvest records about the device it measures on.

Only the device model (name + compute capability, or ``interpreter``) enters ``run_id``;
the rest are descriptive columns of ``runs``.
"""

from __future__ import annotations

import platform
import subprocess
from dataclasses import asdict, dataclass

from schemas.enums import DEVICE_INTERPRETER


@dataclass(frozen=True)
class DeviceFacts:
    device_kind: str
    arch: str
    device_name: str
    compute_capability: str | None = None
    sm_count: int | None = None
    l2_bytes: int | None = None
    smem_per_block_bytes: int | None = None
    total_memory_bytes: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None

    @property
    def model(self) -> str:
        """The part of the device that enters run_id."""
        if self.device_kind == DEVICE_INTERPRETER:
            return DEVICE_INTERPRETER
        return f"{self.device_name} (sm {self.compute_capability})"

    def as_row(self) -> dict[str, object]:
        return asdict(self)


def interpreter_facts() -> DeviceFacts:
    return DeviceFacts(
        device_kind=DEVICE_INTERPRETER,
        arch=DEVICE_INTERPRETER,
        device_name=f"Triton interpreter on {platform.processor() or platform.machine()}",
    )


def _nvidia_smi(index: int) -> dict[str, str]:
    query = "driver_version,clocks.sm,clocks.mem"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={index}", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.split(",")]
    return dict(zip(query.split(","), values)) if len(values) == 3 else {}


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(float(text)) if text else None
    except ValueError:
        return None


def cuda_facts(device: str) -> DeviceFacts:
    """Facts of ``cuda:N`` from torch (and nvidia-smi for clocks and driver, when present)."""
    import torch

    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    smi = _nvidia_smi(index)
    return DeviceFacts(
        device_kind="cuda",
        arch=f"sm_{props.major}{props.minor}",
        device_name=props.name,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=getattr(props, "L2_cache_size", None),
        smem_per_block_bytes=getattr(props, "shared_memory_per_block_optin", None),
        total_memory_bytes=props.total_memory,
        sm_clock_mhz=_int_or_none(smi.get("clocks.sm")),
        mem_clock_mhz=_int_or_none(smi.get("clocks.mem")),
        driver_version=smi.get("driver_version"),
        cuda_version=torch.version.cuda,
    )
