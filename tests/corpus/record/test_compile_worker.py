"""The recording's compile worker (corpus.record.compile_worker, what corpus.record and the
Triton plug-in compile with on the interpreter) compiles what Triton would for the call's own
arguments: a tensor whose data pointer is off a 16-byte boundary is specialized as such, and a
``@triton.jit`` function passed as an argument reaches the worker."""

from __future__ import annotations

from pathlib import Path

import torch

from corpus.harvest.settings import compiler_selected, read_settings, worker_environment
from corpus.record.compile_worker import WorkerCompiler
from corpus.record.compiled import compile_config
from corpus.suite.spec import Config
from tests.corpus.guide.kernels import activation_kernel, relu, scale_kernel


def _worker(tmp_path: Path) -> WorkerCompiler:
    environment = worker_environment(read_settings(allow_interpret=True), interpret=False, cache_dir=str(tmp_path))
    with compiler_selected():
        return WorkerCompiler("sm_90", environment)


def test_a_misaligned_tensor_compiles_as_triton_specializes_it(tmp_path: Path) -> None:
    """The gap: tensors cross the pipe as meta tensors, always aligned, so a view one float
    into its storage (x[1:]) was compiled with ``tt.divisibility = 16`` on its pointer: the IR
    of another specialization than the one the workload's kernel compiles to."""
    x, out = torch.randn(1001), torch.empty(1000)
    config = Config({"BLOCK": 64}, num_warps=1)
    worker = _worker(tmp_path)
    try:
        for view in (x[:1000], x[1:]):
            args = {"x_ptr": view, "out_ptr": out, "n_elements": 1000}
            in_process, _ = compile_config(scale_kernel, args, config, "sm_90", always_compile=True)
            in_worker, _ = worker(scale_kernel, args, config)
            assert in_worker.status == in_process.status == "ok"
            assert in_worker.ttir_id == in_process.ttir_id, f"storage offset {view.storage_offset()}"
    finally:
        worker.close()


def test_a_jit_function_argument_reaches_the_worker(tmp_path: Path) -> None:
    """The gap: a ``@triton.jit`` function passed as a constexpr (an activation) did not pickle
    ("it's not the same object as ...relu"), so no config compiled: corpus.record stored no IR
    for such a kernel, and the plug-in fell back to benchmarking every config."""
    x = torch.randn(1000)
    args = {"x_ptr": x, "out_ptr": torch.empty_like(x), "n_elements": 1000, "ACTIVATION": relu}
    config = Config({"BLOCK": 64}, num_warps=1)
    worker = _worker(tmp_path)
    try:
        in_worker, _ = worker(activation_kernel, args, config)
    finally:
        worker.close()
    in_process, _ = compile_config(activation_kernel, args, config, "sm_90", always_compile=True)
    assert in_worker.status == "ok", in_worker.error
    assert in_worker.ttir_id == in_process.ttir_id
