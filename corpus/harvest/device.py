"""What the harvest records about the device it measures on, and which physical GPU each
benchmark lane really is.

Only the device model (name + compute capability, or ``interpreter``) enters ``run_id``;
the rest are descriptive columns of ``runs``.

A lane is named by torch's ordinal (``cuda:N``), which counts the devices
``CUDA_VISIBLE_DEVICES`` leaves visible, in its order; ``nvidia-smi`` counts all of the
machine's GPUs. The two are joined by UUID, never by index: torch reports each lane's UUID
(a MIG instance's own UUID under MIG), and ``nvidia-smi -L`` lists every GPU's UUID with the
UUIDs of its MIG instances, so a lane maps to its physical board whatever the visible list says.
"""

from __future__ import annotations

import platform
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from schemas.enums import DEVICE_INTERPRETER

SMI_FIELDS: tuple[str, ...] = (
    "uuid",
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
)
"""``nvidia-smi --query-gpu`` fields read per GPU (clocks in MHz with ``nounits``)."""

_VISIBLE_TOKEN = re.compile(r"\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+")
_VISIBLE_END = re.compile(r"-\d+")
"""A negative index (``-1``, the usual way to hide every GPU): CUDA stops reading the list there."""
_LIST_LINE = re.compile(r"\(UUID: ((?:GPU|MIG)-[^)\s]+)\)")


@dataclass(frozen=True)
class DeviceFacts:
    """The device columns of ``runs`` (see ``schemas/tables.py``)."""

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
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
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


@dataclass(frozen=True)
class Lane:
    """One benchmark lane: torch's device name, its own UUID and its physical GPU's UUID."""

    device: str
    """``cuda:N`` (torch's ordinal among the visible devices)."""
    uuid: str
    """``GPU-...``, or ``MIG-...`` for a MIG instance."""
    gpu_uuid: str
    """UUID of the physical GPU (equal to ``uuid`` without MIG)."""
    memory_bus_width_bits: int | None = None
    memory_clock_max_khz: int | None = None

    @property
    def peak_bandwidth_bytes_per_s(self) -> float | None:
        """Theoretical DRAM bandwidth: 2 transfers per memory clock (DDR/HBM) x bus width;
        None when the device does not report both (a MIG slice gets a share of it)."""
        if not self.memory_bus_width_bits or not self.memory_clock_max_khz:
            return None
        return 2.0 * self.memory_clock_max_khz * 1e3 * self.memory_bus_width_bits / 8


def with_smi_memory_clock(lane: Lane, facts: DeviceFacts) -> Lane:
    """``lane`` with its maximum memory clock from nvidia-smi (``facts.mem_clock_max_mhz``)
    when torch reports none (``cudaDeviceProp.memoryClockRate`` is deprecated since CUDA 12 and
    gone from CUDA 13's, so a torch built on it may report no ``memory_clock_rate``), so that
    the peak bandwidth is still known."""
    if lane.memory_clock_max_khz or not facts.mem_clock_max_mhz:
        return lane
    return replace(lane, memory_clock_max_khz=facts.mem_clock_max_mhz * 1000)


def target_mismatch(target: str, facts: DeviceFacts) -> str | None:
    """Why IR compiled for ``target`` cannot describe what a GPU of ``facts`` runs, or None
    when it can (the interpreter runs no binary: any target is fine there).

    On a GPU the benchmark worker launches the binary Triton builds for the device's own
    compute capability, so IR, ``binary_hash`` and static stats compiled for another target
    would describe code that was never timed, and ``run_id`` (which holds the IR target only
    on the interpreter) could not tell such runs from those of the device's own target.
    Spellings of the device's target ('sm_90a', 'cuda:90', '90') are the same target."""
    if facts.device_kind == DEVICE_INTERPRETER:
        return None
    from extract.compile import parse_target

    resolved = parse_target(target)
    if resolved.backend == "cuda" and f"sm_{resolved.arch}" == facts.arch:
        return None
    return (
        f"the GPU is {facts.arch} and its benchmark worker times the binary built for {facts.arch}; "
        f"IR and static stats compiled for {target} would describe code that was never timed "
        "(leave the target out: it defaults to the GPU's own arch)"
    )


def interpreter_facts() -> DeviceFacts:
    return DeviceFacts(
        device_kind=DEVICE_INTERPRETER,
        arch=DEVICE_INTERPRETER,
        device_name=f"Triton interpreter on {platform.processor() or platform.machine()}",
    )


def parse_visible_devices(value: str | None) -> tuple[str, ...] | None:
    """The entries of ``CUDA_VISIBLE_DEVICES`` that CUDA makes visible (indices, ``GPU-``
    UUIDs, ``MIG-`` ids), in order, or None when unset (every GPU visible). CUDA stops at a
    negative index: ``-1`` hides every GPU (``()``), ``0,2,-1,1`` shows 0 and 2 only. Raises
    ValueError naming the variable on any other entry it cannot read."""
    if value is None:
        return None
    tokens: list[str] = []
    for token in (token.strip() for token in value.split(",") if token.strip()):
        if _VISIBLE_END.fullmatch(token):
            break
        if not _VISIBLE_TOKEN.fullmatch(token):
            raise ValueError(
                f"CUDA_VISIBLE_DEVICES={value!r}: entry {token!r} is not an index, a GPU-<uuid> "
                "or a MIG-<uuid>"
            )
        tokens.append(token)
    return tuple(tokens)


def parse_smi_list(text: str) -> dict[str, str]:
    """``nvidia-smi -L`` output -> {uuid: physical GPU uuid} for every GPU and MIG instance."""
    owners: dict[str, str] = {}
    gpu: str | None = None
    for line in text.splitlines():
        found = _LIST_LINE.search(line)
        if found is None:
            continue
        uuid = found.group(1)
        if uuid.startswith("GPU-"):
            gpu = uuid
        if gpu is not None:
            owners[uuid] = gpu
    return owners


def parse_smi_query(text: str, fields: Sequence[str] = SMI_FIELDS) -> dict[str, dict[str, str]]:
    """``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` output -> {uuid:
    {field: value}} (fields must start with ``uuid``; ``[N/A]`` values are dropped)."""
    if not fields or fields[0] != "uuid":
        raise ValueError("the first queried field must be uuid")
    rows: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            continue
        row = {f: v for f, v in zip(fields, values) if v and not v.startswith("[")}
        rows[values[0]] = row
    return rows


def lane_uuid(
    torch_uuid: str, visible: Sequence[str] | None, index: int, owners: Mapping[str, str]
) -> str:
    """The lane's UUID as nvidia-smi spells it. torch's ``props.uuid`` has no prefix: it is a
    MIG instance's when ``nvidia-smi -L`` lists it as ``MIG-...`` (``owners``) or when
    ``CUDA_VISIBLE_DEVICES`` names this lane by a ``MIG-`` id, else a whole GPU's."""
    text = str(torch_uuid)
    if text.startswith(("GPU-", "MIG-")):
        return text
    if f"MIG-{text}" in owners:
        return f"MIG-{text}"
    if visible is not None and index < len(visible) and visible[index].startswith("MIG-"):
        return visible[index]
    return f"GPU-{text}"


def check_distinct_lanes(lanes: Sequence[Lane]) -> None:
    """Refuse two lanes on one device (``--device cuda:0,0``, or two visible entries that
    are one GPU): they would time each other's kernels. Distinct MIG instances are isolated
    and allowed. Raises ValueError naming both lanes."""
    seen: dict[str, str] = {}
    for lane in lanes:
        key = lane.uuid if lane.uuid.startswith("MIG-") else lane.gpu_uuid
        if key in seen:
            raise ValueError(
                f"{seen[key]} and {lane.device} are the same GPU ({key}): one benchmark lane "
                "per GPU, or they time each other's kernels"
            )
        seen[key] = lane.device


def _nvidia_smi(*args: str) -> str:
    """stdout of ``nvidia-smi ARGS``, empty when the tool is missing or fails."""
    try:
        return subprocess.run(
            ["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(float(text)) if text else None
    except ValueError:
        return None


def cuda_lane(device: str, visible: Sequence[str] | None, owners: Mapping[str, str]) -> Lane:
    """The :class:`Lane` of torch device ``cuda:N``; ``owners`` from :func:`parse_smi_list`
    (empty without nvidia-smi: the lane is then its own physical GPU)."""
    import torch

    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    uuid = lane_uuid(str(getattr(props, "uuid", f"index-{index}")), visible, index, owners)
    return Lane(
        device=f"cuda:{index}",
        uuid=uuid,
        gpu_uuid=owners.get(uuid, uuid),
        memory_bus_width_bits=getattr(props, "memory_bus_width", None) or None,
        memory_clock_max_khz=getattr(props, "memory_clock_rate", None) or None,
    )


def cuda_lanes(devices: Sequence[str], visible: Sequence[str] | None) -> list[Lane]:
    """:func:`cuda_lane` of every device, refused by :func:`check_distinct_lanes` when two
    are one GPU."""
    owners = parse_smi_list(_nvidia_smi("-L"))
    lanes = [cuda_lane(device, visible, owners) for device in devices]
    check_distinct_lanes(lanes)
    return lanes


def cuda_facts(device: str, visible: Sequence[str] | None = None) -> DeviceFacts:
    """Facts of ``cuda:N`` from torch, plus current and maximum clocks and the driver from
    nvidia-smi for the lane's physical GPU (found by UUID; null when nvidia-smi is missing).
    Maximum clocks fall back to torch's (``clock_rate``, ``memory_clock_rate``, kHz)."""
    import torch

    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    lane = cuda_lane(device, visible, parse_smi_list(_nvidia_smi("-L")))
    query = "--query-gpu=" + ",".join(SMI_FIELDS)
    smi = parse_smi_query(_nvidia_smi(query, "--format=csv,noheader,nounits")).get(
        lane.gpu_uuid, {}
    )
    khz_to_mhz = {
        "sm": getattr(props, "clock_rate", 0) // 1000 or None,
        "mem": getattr(props, "memory_clock_rate", 0) // 1000 or None,
    }
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
        sm_clock_max_mhz=_int_or_none(smi.get("clocks.max.sm")) or khz_to_mhz["sm"],
        mem_clock_max_mhz=_int_or_none(smi.get("clocks.max.mem")) or khz_to_mhz["mem"],
        driver_version=smi.get("driver_version"),
        cuda_version=torch.version.cuda,
    )
