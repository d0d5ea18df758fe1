"""``python -m corpus.guide.bench``: each of its two tunings autotunes a kernel object of its
own. On a GPU a ``JITFunction`` keeps every kernel it compiled in memory, so the exhaustive
tuning of the object the guided one had tuned loaded the guided one's configs without compiling
them, and the tuning-time ratio compared a cold tuner with a partly warm one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from rich.console import Console

from corpus.guide.bench import show_warnings

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import json
import torch
import triton
from corpus.guide.bench import tune
from corpus.guide.bench_kernel import rms_scale_kernel

configs = [triton.Config({"BLOCK_M": m}, num_warps=1) for m in (1, 2)]
x = torch.randn(4, 8)
expected = x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-6)
tunings = []
for _ in range(2):
    y = torch.empty_like(x)
    tuning = tune(configs, None, True, x, y)
    tunings.append((tuning, bool(torch.allclose(y, expected, rtol=1e-4, atol=1e-4))))
kernels = [getattr(t, "kernel", None) for t, _ in tunings]
print(json.dumps({
    "distinct": len({id(k) for k in kernels} | {id(rms_scale_kernel)}) == 3 and None not in kernels,
    "same_code": [getattr(k, "fn", None) is rms_scale_kernel.fn for k in kernels],
    "benchmarked": [t.benchmarked for t, _ in tunings],
    "correct": [ok for _, ok in tunings],
}))
"""


def test_each_tuning_autotunes_a_fresh_kernel_object_of_the_same_code() -> None:
    environment = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "distinct": True, "same_code": [True, True], "benchmarked": [2, 2], "correct": [True, True],
    }  # fmt: skip


def test_the_guides_warnings_are_warning_lines_others_stay_pythons() -> None:
    """The bench printed corpus.guide's warnings as Python does: the kernel's file and line, then
    its '@triton.jit' line. They are 'warning:' lines now (as train.predict's); a warning from
    elsewhere keeps Python's form, location included."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn_explicit("corpus.guide: model m ranks the configs of k without inputs", UserWarning, __file__, 1)
        warnings.warn("something else", DeprecationWarning, stacklevel=1)
    out = io.StringIO()
    with pytest.warns(DeprecationWarning, match="something else") as again:
        show_warnings(Console(file=out, width=200), caught)
    assert out.getvalue() == "warning: model m ranks the configs of k without inputs\n"
    assert [w.filename for w in again] == [__file__]
