"""A family's kernel_id (and so run_id) sees its spec: editing a reference or a bind in a
module other than the kernel's gives a new identity; the kernel source alone still keys
recorded and imported rows."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus.harvest.identity import kernel_source, spec_kernel_id, spec_source
from corpus.harvest.plan import PlanRequest, plan_runs
from corpus.harvest.rows import kernel_row
from corpus.suite.registry import BUILTIN_SUITE, load_suite
from schemas.identity import kernel_id

KERNEL_MODULE = """
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)
"""

SPEC_MODULE = """
import torch

from corpus.suite.spec import Config, KernelSpec, output_buffer, seeded_randn
from {package}.scale_kernel import scale_kernel


class Scale(KernelSpec):
    name = "scale"
    category = "pointwise"
    dtypes = ("float32",)
    shapes = {{"tiny": [{{"N": 64}}], "small": [], "default": [], "large": []}}
    outputs = ("out_ptr",)

    @property
    def kernel(self):
        return scale_kernel

    def config_space(self):
        return [Config({{"BLOCK": 32}})]

    def default_config(self):
        return self.config_space()[0]

    def make_inputs(self, dims, dtype, device, seed):
        x = seeded_randn((dims["N"],), dtype, device, seed)
        return {{"x_ptr": x, "out_ptr": output_buffer((dims["N"],), dtype, device), "n": dims["N"]}}

    def bind(self, inputs, dims, config):
        return (dims["N"] // 32,), {{**inputs, **config.kwargs}}

    def reference(self, inputs, dims):
        return {{"out_ptr": {reference}}}

    def flops(self, dims):
        return dims["N"]

    def bytes_moved(self, dims, dtype):
        return 8 * dims["N"]
"""


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    name = f"identity_case_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "scale_kernel.py").write_text(KERNEL_MODULE)
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def _spec(package: str, module: str, reference: str):
    """Write (or rewrite) ``package.module`` with ``reference`` and import it afresh."""
    path = Path(sys.modules[package].__file__ or "").parent / f"{module}.py"
    path.write_text(textwrap.dedent(SPEC_MODULE.format(package=package, reference=reference)))
    sys.modules.pop(f"{package}.{module}", None)
    importlib.invalidate_caches()
    return importlib.import_module(f"{package}.{module}").Scale()


def test_editing_only_the_reference_changes_kernel_id_and_run_id(package: str) -> None:
    importlib.import_module(package)
    sys.dont_write_bytecode = True  # the edit below must not be hidden by a cached .pyc
    try:
        right = _spec(package, "spec", 'inputs["x_ptr"] * 2.0')
        right_id, right_source = spec_kernel_id(right), spec_source(right)
        fixed = _spec(package, "spec", 'inputs["x_ptr"] * 2.0 + 0.0')
    finally:
        sys.dont_write_bytecode = False
    assert type(right).__qualname__ == type(fixed).__qualname__
    assert type(right).__module__ == type(fixed).__module__
    assert kernel_source(right) == kernel_source(fixed), "one kernel, one stored source"
    assert right_source != spec_source(fixed)
    assert right_id != spec_kernel_id(fixed)
    assert kernel_row(fixed, package)["kernel_id"] == spec_kernel_id(fixed)
    assert kernel_row(fixed, package)["source"] == KERNEL_MODULE
    request = PlanRequest("tiny", None, (), 1, 0, "interpreter", {"triton": "test"})
    [run_fixed] = plan_runs({"scale": fixed}, request)
    assert run_fixed.kernel_id == spec_kernel_id(fixed) != right_id


def test_same_spec_same_identity_and_spec_modules_are_hashed(package: str) -> None:
    importlib.import_module(package)
    first = _spec(package, "spec_a", 'inputs["x_ptr"] * 2.0')
    again = type(first)()
    assert spec_kernel_id(first) == spec_kernel_id(again)
    assert f"{package}.spec_a:Scale" in spec_source(first)
    assert "def reference" in spec_source(first)
    source, entry, _ = kernel_source(first)
    assert spec_kernel_id(first) != kernel_id(source, entry), "the spec enters the key"


def test_builtin_families_sharing_a_base_module_hash_it() -> None:
    specs = load_suite(BUILTIN_SUITE)
    softmax = spec_source(specs["softmax"])
    assert "corpus.suite.kernels._rowwise" in softmax and "def " in softmax
    assert len({spec_kernel_id(spec) for spec in specs.values()}) == len(specs)


def test_cache_controls_leave_the_toolchain_fingerprint_alone() -> None:
    """Variables that only steer Triton's cache (where it lives, whether to bypass it) change
    no generated code, so they do not split run_ids; codegen knobs do."""
    from corpus.harvest.identity import toolchain_fingerprint
    from corpus.harvest.settings import read_settings

    plain = read_settings({})
    cached = read_settings({"TRITON_ALWAYS_COMPILE": "0", "TRITON_CACHE_DIR": "/elsewhere"})
    debug = read_settings({"TRITON_DEBUG": "1"})
    assert cached.codegen_env == plain.codegen_env == {}
    assert debug.codegen_env == {"TRITON_DEBUG": "1"}

    def fingerprint(settings):
        return toolchain_fingerprint(settings.codegen_env, ir_target="sm_90")

    assert fingerprint(cached) == fingerprint(plain) != fingerprint(debug)
