"""The workload's compile time survives the recorder's own compile of the same config.

On a GPU the recorder compiles each tuned config again in the workload's process for its IR
(``corpus.record.compiled.compile_config``, ``always_compile=False``): Triton's cache serves
the entry the workload's compile wrote, and the compilation listener reports that load as a
cache hit for the same metadata hash. Here both compiles are real ones for sm_90 on the CPU."""

from __future__ import annotations

from pathlib import Path

import torch
import triton
import triton.language as tl
from triton import knobs

from corpus.record.hooks import TritonHooks
from extract.compile import compile_call


# The test's own kernel: importing a package's kernel module here, at collection, would make
# it a compiled (not interpreted) function for every later test of the session.
@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def test_a_cache_hit_keeps_the_workloads_compile_time(tmp_path: Path) -> None:
    buffer = torch.empty(1024, device="meta")
    args = {"src_ptr": buffer, "dst_ptr": buffer, "n": 1024, "BLOCK": 256}
    hooks = TritonHooks(lambda event: None, bench=None, use_listener=False)
    with knobs.cache.scope(), hooks.installed():
        knobs.cache.dir = str(tmp_path)
        workload = compile_call(copy_kernel, args, target="sm_90")  # the workload's compile
        recorder = compile_call(copy_kernel, args, target="sm_90")  # the recorder's: a load
    digest = str(workload.metadata["hash"])
    assert not workload.metadata["cache_hit"] and recorder.metadata["cache_hit"]
    assert recorder.metadata["hash"] == workload.metadata["hash"]
    assert hooks.compile_times[digest] is not None and hooks.compile_times[digest] > 0
