"""Our Triton hooks are good neighbours: a hook installed before ours sees every event while
ours is installed, and is back in place afterwards."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from triton import knobs

from extract import triton_compat
from extract.compile import compile_call
from tests.extract.kernels.pointwise import add_kernel


def _args(n_elements: int) -> dict[str, Any]:
    tensor = torch.empty(4096, dtype=torch.float32, device="meta")
    return {
        "x_ptr": tensor,
        "y_ptr": tensor,
        "out_ptr": tensor,
        "n_elements": n_elements,
        "BLOCK": 128,
    }


@pytest.fixture
def user_listener():
    """A listener of the test's own, installed the way a user (or tritonparse) would."""
    events: list[dict[str, Any]] = []

    def listener(**kwargs: Any) -> None:
        events.append(kwargs)

    saved = knobs.compilation.listener
    knobs.compilation.listener = listener
    try:
        yield listener, events
    finally:
        knobs.compilation.listener = saved


def test_user_compilation_listener_sees_our_compiles_and_is_reinstalled(user_listener) -> None:
    listener, events = user_listener
    result = compile_call(add_kernel, _args(4096), target="sm_90", always_compile=True)
    assert knobs.compilation.listener is listener
    assert len(events) == 1
    event = events[0]
    assert event["cache_hit"] is False  # always_compile: a real compile
    assert event["metadata"]["name"] == "add_kernel"
    # our own use of the listener still works beside the user's
    assert result.metadata.get("cache_hit") is False


def test_cache_hits_reach_both_listeners(user_listener) -> None:
    listener, events = user_listener
    compile_call(add_kernel, _args(2048), target="sm_90")
    cached = compile_call(add_kernel, _args(2048), target="sm_90")
    assert [e["cache_hit"] for e in events][-1] is True
    assert cached.metadata.get("cache_hit") is True
    assert knobs.compilation.listener is listener


def test_previous_listener_sees_events_even_when_ours_fails() -> None:
    class Slot:
        listener = None

    slot = Slot()
    seen: list[int] = []
    slot.listener = lambda value: seen.append(value)
    previous = slot.listener

    def ours(value: int) -> None:
        raise RuntimeError("ours failed")

    with (
        triton_compat.chained_hook(slot, "listener", ours),
        pytest.raises(RuntimeError, match="ours failed"),
    ):
        slot.listener(7)
    assert seen == [7]
    assert slot.listener is previous


def test_a_hook_installed_over_ours_is_left_in_place() -> None:
    """tritonparse initialised while we compile: its listener stays, and calling through to
    ours afterwards reaches only the listener installed before us."""

    class Slot:
        listener = None

    slot = Slot()
    calls: list[str] = []
    slot.listener = lambda: calls.append("first")
    with triton_compat.chained_hook(slot, "listener", lambda: calls.append("ours")):
        below = slot.listener

        def late() -> None:
            calls.append("late")
            below()

        slot.listener = late
    assert slot.listener is late
    slot.listener()
    assert calls == ["late", "first"]


def test_no_previous_hook_restores_none() -> None:
    class Slot:
        listener = None

    slot = Slot()
    seen: list[int] = []
    with triton_compat.chained_hook(slot, "listener", seen.append):
        slot.listener(1)
    assert slot.listener is None
    assert seen == [1]


def test_autotuning_listener_chains() -> None:
    if not hasattr(getattr(knobs, "autotuning", None), "listener"):
        pytest.skip("this Triton has no autotuning listener")
    seen: list[str] = []
    saved = knobs.autotuning.listener
    knobs.autotuning.listener = lambda **kw: seen.append("user:" + kw["key"])
    user = knobs.autotuning.listener
    try:
        with triton_compat.autotuning_listener(lambda **kw: seen.append("ours:" + kw["key"])):
            knobs.autotuning.listener(key="k")  # what the autotuner does after tuning
        assert knobs.autotuning.listener is user
        assert seen == ["ours:k", "user:k"]
    finally:
        knobs.autotuning.listener = saved


def test_launch_hooks_join_the_chain_and_leave() -> None:
    seen: list[str] = []
    user_enter = lambda metadata: seen.append("user")  # noqa: E731
    chain = knobs.runtime.launch_enter_hook
    if hasattr(chain, "add"):
        chain.add(user_enter)
    else:  # a plain slot (older Triton)
        saved = knobs.runtime.launch_enter_hook
        knobs.runtime.launch_enter_hook = user_enter
    try:
        with triton_compat.launch_hooks(enter=lambda metadata: seen.append("ours")):
            knobs.runtime.launch_enter_hook({"name": "k"})
        assert sorted(seen) == ["ours", "user"]
        seen.clear()
        knobs.runtime.launch_enter_hook({"name": "k"})
        assert seen == ["user"]
    finally:
        if hasattr(chain, "add"):
            chain.remove(user_enter)
        else:
            knobs.runtime.launch_enter_hook = saved


def test_tritonparse_traces_our_compiles(tmp_path) -> None:
    """The real tool: tritonparse's listener, installed by its own init, records the compiles
    our extraction runs, and stays installed afterwards."""
    structured_logging = pytest.importorskip("tritonparse.structured_logging")
    saved = (knobs.compilation.listener, getattr(knobs.autotuning, "listener", None))
    structured_logging.init(str(tmp_path))
    try:
        installed = knobs.compilation.listener
        compile_call(add_kernel, _args(1024), target="sm_90", always_compile=True)
        assert knobs.compilation.listener is installed
    finally:
        structured_logging.clear_logging_config()
        knobs.compilation.listener, knobs.autotuning.listener = saved
    traced = "".join(
        path.read_text(errors="replace") for path in tmp_path.rglob("*") if path.is_file()
    )
    assert '"event_type": "compilation"' in traced or '"event_type":"compilation"' in traced
    assert "add_kernel" in traced
