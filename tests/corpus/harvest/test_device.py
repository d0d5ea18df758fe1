"""Device facts on CPU: CUDA_VISIBLE_DEVICES parsing, nvidia-smi output joined by UUID, one
lane per GPU, the peak-bandwidth formula; the live query is a GPU test."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from corpus.harvest.__main__ import parse
from corpus.harvest.app import HarvestError, default_workers, resolve_devices, resolve_execution
from corpus.harvest.checks import HarvestInputError
from corpus.harvest.device import (
    DeviceFacts,
    Lane,
    check_distinct_lanes,
    cuda_facts,
    cuda_lanes,
    interpreter_facts,
    lane_uuid,
    parse_smi_list,
    parse_smi_query,
    parse_visible_devices,
    target_mismatch,
    with_smi_memory_clock,
)
from corpus.harvest.settings import SettingsError, read_settings

GPU0 = "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77"
GPU1 = "GPU-0b6e4f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
MIG0 = "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"
MIG1 = "MIG-7a1b2c3d-4e5f-5a6b-8c9d-0e1f2a3b4c5d"
SMI_LIST = f"""GPU 0: NVIDIA H100 80GB HBM3 (UUID: {GPU0})
  MIG 3g.40gb     Device  0: (UUID: {MIG0})
  MIG 3g.40gb     Device  1: (UUID: {MIG1})
GPU 1: NVIDIA H100 80GB HBM3 (UUID: {GPU1})
"""
SMI_QUERY = f"""{GPU0}, 550.54.15, 1755, 2619, 1980, 2619
{GPU1}, 550.54.15, 345, 2619, 1980, [N/A]
"""


def test_visible_devices_accepts_indices_uuids_and_mig_ids() -> None:
    assert parse_visible_devices(None) is None
    assert parse_visible_devices("") == ()
    assert parse_visible_devices(f"1, 0,{GPU1},{MIG0}") == ("1", "0", GPU1, MIG0)
    with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES='0,gpu one'.*'gpu one'"):
        parse_visible_devices("0,gpu one")


def test_a_negative_visible_index_ends_the_list_as_cuda_reads_it() -> None:
    """``CUDA_VISIBLE_DEVICES=-1`` is the usual way to hide every GPU, and CUDA reads
    ``0,2,-1,1`` as GPUs 0 and 2: neither is refused, and lanes map to what CUDA shows."""
    assert parse_visible_devices("-1") == ()
    assert parse_visible_devices("0,2,-1,1") == ("0", "2")
    assert parse_visible_devices(f"{MIG0}, -1, {MIG1}") == (MIG0,)
    assert read_settings({"CUDA_VISIBLE_DEVICES": "-1"}).visible_devices == ()
    with pytest.raises(SettingsError, match="'gpu one'"):
        read_settings({"CUDA_VISIBLE_DEVICES": "0,gpu one,-1"})


def test_settings_read_and_refuse_the_visible_list() -> None:
    settings = read_settings({"CUDA_VISIBLE_DEVICES": f"{MIG0},{MIG1}"})
    assert settings.visible_devices == (MIG0, MIG1)
    with pytest.raises(SettingsError, match="CUDA_VISIBLE_DEVICES"):
        read_settings({"CUDA_VISIBLE_DEVICES": "0;1"})


def test_smi_list_maps_mig_instances_to_their_gpu() -> None:
    owners = parse_smi_list(SMI_LIST)
    assert owners == {GPU0: GPU0, MIG0: GPU0, MIG1: GPU0, GPU1: GPU1}
    assert parse_smi_list("") == {}


def test_smi_query_is_keyed_by_uuid_and_drops_unavailable_values() -> None:
    rows = parse_smi_query(SMI_QUERY)
    assert rows[GPU0]["clocks.max.sm"] == "1980" and rows[GPU0]["clocks.sm"] == "1755"
    assert "clocks.max.mem" not in rows[GPU1]
    with pytest.raises(ValueError, match="uuid"):
        parse_smi_query(SMI_QUERY, ("driver_version", "uuid"))


def test_lane_uuid_spells_torch_uuids_as_nvidia_smi_does() -> None:
    owners = parse_smi_list(SMI_LIST)
    assert lane_uuid(GPU1.removeprefix("GPU-"), None, 0, owners) == GPU1
    assert lane_uuid(MIG1.removeprefix("MIG-"), None, 0, owners) == MIG1
    assert lane_uuid("ffff", (MIG0,), 0, {}) == MIG0, "the visible list names the MIG lane"


def test_two_lanes_on_one_gpu_are_refused() -> None:
    one = Lane("cuda:0", GPU0, GPU0)
    same = Lane("cuda:1", GPU0, GPU0)
    with pytest.raises(ValueError, match="cuda:0 and cuda:1 are the same GPU"):
        check_distinct_lanes([one, same])
    check_distinct_lanes([one, Lane("cuda:1", GPU1, GPU1)])
    check_distinct_lanes([Lane("cuda:0", MIG0, GPU0), Lane("cuda:1", MIG1, GPU0)])


def test_peak_bandwidth_is_double_data_rate_times_bus_width() -> None:
    h100 = Lane("cuda:0", GPU0, GPU0, memory_bus_width_bits=5120, memory_clock_max_khz=2_619_000)
    assert h100.peak_bandwidth_bytes_per_s == pytest.approx(3.352e12, rel=1e-3)
    assert Lane("cuda:0", GPU0, GPU0).peak_bandwidth_bytes_per_s is None


def test_a_lane_without_torchs_memory_clock_takes_nvidia_smis() -> None:
    facts = replace(H100, mem_clock_max_mhz=2619)
    lane = with_smi_memory_clock(Lane("cuda:0", GPU0, GPU0, memory_bus_width_bits=5120), facts)
    assert lane.peak_bandwidth_bytes_per_s == pytest.approx(3.352e12, rel=1e-3)
    reported = Lane("cuda:0", GPU0, GPU0, memory_bus_width_bits=5120, memory_clock_max_khz=1_000_000)
    assert with_smi_memory_clock(reported, facts) is reported  # torch's own figure stands
    assert with_smi_memory_clock(Lane("cuda:0", GPU0, GPU0), H100).peak_bandwidth_bytes_per_s is None


def test_device_list_naming_one_gpu_twice_is_refused_before_looking_for_cuda() -> None:
    with pytest.raises(HarvestError, match="GPU 0 is listed twice; one benchmark lane per GPU"):
        resolve_devices("cuda:0,1,0")


def test_default_compile_workers_leave_a_core_per_lane() -> None:
    assert 2 <= default_workers(8) <= default_workers(1) <= 16


H100 = DeviceFacts(device_kind="cuda", arch="sm_90", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
"""Facts as :func:`cuda_facts` gives them for an H100 (written out: no GPU here)."""


def test_a_gpu_takes_only_its_own_arch_as_ir_target() -> None:
    for spelling in ("sm_90", "sm_90a", "cuda:90", "90"):
        assert target_mismatch(spelling, H100) is None
    for other in ("sm_80", "sm_100", "gfx942"):
        assert "never timed" in (target_mismatch(other, H100) or "")
    assert target_mismatch("sm_80", interpreter_facts()) is None  # the interpreter times no binary


def test_harvest_on_a_gpu_refuses_another_target_before_any_work() -> None:
    settings = read_settings({})
    with pytest.raises(HarvestInputError, match=r"--target sm_80: the GPU is sm_90"):
        resolve_execution(parse(["--device", "cuda", "--target", "sm_80"]), settings, ("cuda:0",), H100)
    own = resolve_execution(parse(["--device", "cuda", "--target", "sm_90a"]), settings, ("cuda:0",), H100)
    assert own.target == "sm_90a"
    assert resolve_execution(parse(["--device", "cuda"]), settings, ("cuda:0",), H100).target == "sm_90"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_live_facts_of_every_lane() -> None:
    devices = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    lanes = cuda_lanes(devices, None)
    assert len({lane.uuid for lane in lanes}) == len(lanes)
    facts = cuda_facts(devices[0])
    assert facts.arch.startswith("sm_") and facts.sm_count and facts.l2_bytes
    assert facts.sm_clock_max_mhz and facts.mem_clock_max_mhz
    with pytest.raises(HarvestError, match="listed twice"):
        resolve_devices("cuda:0,0")
