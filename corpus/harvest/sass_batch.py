"""The instruction columns of a harvest's cubins, filled in batches off the critical path.

Compile workers send back each cubin's code (:attr:`CompileOutcome.sass_code`); a
:class:`SassBatcher` thread in the harvest process disassembles what has gathered in one
``nvdisasm`` call (:func:`extract.sass.instruction_stats_many`) when ``batch_size`` codes wait,
when the oldest has waited ``linger_s``, or when someone needs a result now. Rows are written
with their instruction columns filled (:func:`fill_row`): nothing is written twice, and the
columns are those :func:`extract.sass.static_stats` gives the same cubin.

Identical codes (configs with one binary, ~29% of a default plan) are disassembled once: a
code's result is kept under its hash (:data:`CACHE_SIZE` most recent).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from extract.locations import publishable_message

if TYPE_CHECKING:
    from extract.sass import InstructionStats

# extract.sass and extract.compile import Triton: imported where used, so importing the harvest
# does not (corpus.record must select Triton's interpreter before Triton is first imported).

BATCH_SIZE = 256
"""Codes that start a batch at once (~256 x 25 KB: one call of a few seconds at most)."""
LINGER_S = 10.0
"""How long the oldest waiting code may wait for others before its batch starts anyway (rows
that must be written sooner ask for their batch then: see :meth:`SassBatcher.wait`)."""
CACHE_SIZE = 8192
"""Results kept by code hash (a few hundred bytes each)."""


def code_key(code: bytes) -> str:
    """The name a code is filed under: a hash of its bytes."""
    return hashlib.blake2b(code, digest_size=16).hexdigest()


class SassBatcher:
    """Disassembles submitted codes in batches on one background thread.

    ``arch``: the ``nvdisasm -b`` architecture (:func:`batcher_for_target`). ``busy_s`` is
    the wall time spent in ``nvdisasm`` calls, ``calls`` their number and ``codes`` the
    distinct codes disassembled."""

    def __init__(
        self,
        arch: str,
        *,
        batch_size: int = BATCH_SIZE,
        linger_s: float = LINGER_S,
        cache_size: int = CACHE_SIZE,
        tools_dir: str | None = None,
    ) -> None:
        self.arch = arch
        self.batch_size = batch_size
        self.linger_s = linger_s
        self.cache_size = cache_size
        self.tools_dir = tools_dir
        self.busy_s = 0.0
        self.calls = 0
        self.codes = 0
        self._results: OrderedDict[str, Future[InstructionStats]] = OrderedDict()
        self._pending: dict[str, bytes] = {}
        self._oldest = 0.0
        self._urgent = False
        self._closed = False
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, code: bytes) -> Future[InstructionStats]:
        """The future instruction statistics of ``code`` (one future per distinct code)."""
        key = code_key(code)
        with self._condition:
            future = self._results.get(key)
            if future is not None:
                self._results.move_to_end(key)
                return future
            future = self._results[key] = Future()
            self._evict()
            if not self._pending:
                self._oldest = time.monotonic()
            self._pending[key] = code
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="sass-batcher", daemon=True)
                self._thread.start()
            self._condition.notify_all()
        return future

    def wait(self, futures: Iterable[Future[InstructionStats]]) -> None:
        """Block until ``futures`` are done, starting a batch now if one of them waits."""
        futures = list(futures)
        if all(future.done() for future in futures):
            return
        with self._condition:
            self._urgent = True
            self._condition.notify_all()
        for future in futures:
            future.result()

    def close(self) -> None:
        """Finish what is pending, then stop the thread."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _evict(self) -> None:
        while len(self._results) > self.cache_size:
            key, oldest = next(iter(self._results.items()))
            if not oldest.done():
                return  # never drop a pending code's future; the cache shrinks later
            del self._results[key]

    def _serve(self) -> None:
        while True:
            with self._condition:
                while not self._pending and not self._closed:
                    self._condition.wait()
                if not self._pending:
                    return
                while not (self._urgent or self._closed or len(self._pending) >= self.batch_size):
                    left = self._oldest + self.linger_s - time.monotonic()
                    if left <= 0:
                        break
                    self._condition.wait(left)
                batch, self._pending, self._urgent = self._pending, {}, False
                futures = {key: self._results[key] for key in batch}
            self._run(batch, futures)

    def _run(self, batch: dict[str, bytes], futures: dict[str, Future[InstructionStats]]) -> None:
        from extract.sass import InstructionStats, instruction_stats_many

        begin = time.perf_counter()
        try:
            results = instruction_stats_many(batch, self.arch, tools_dir=self.tools_dir)
        except Exception as exc:  # never leave a waiter hanging
            failed = InstructionStats(note=f"static stats failed: {type(exc).__name__}: {exc}")
            results = dict.fromkeys(batch, failed)
        self.busy_s += time.perf_counter() - begin
        self.calls += 1
        self.codes += len(batch)
        for key, future in futures.items():
            future.set_result(results[key])


def batcher_for_target(target: str, **options: Any) -> SassBatcher | None:
    """A batcher for cubins compiled for ``target`` ('sm_90', 'cuda:90'); None for targets
    that produce no cubin (HIP)."""
    from extract.compile import parse_target
    from extract.sass import disassembler_arch

    resolved = parse_target(target)
    if resolved.backend != "cuda":
        return None
    return SassBatcher(disassembler_arch(int(resolved.arch)), **options)


def instruction_stats_now(codes: Mapping[str, bytes | None], target: str) -> dict[str, InstructionStats]:
    """Instruction statistics of the configs' codes (config id -> :attr:`CompileOutcome.sass_code`,
    None: nothing to fill) compiled for ``target``, from one ``nvdisasm`` call in this thread,
    identical codes once: for callers that hold every config of a run at once (a recorded
    autotune event, the plug-in's candidates) rather than a stream. Never raises."""
    from extract.sass import InstructionStats, instruction_stats_many

    wanted = {config_id: code for config_id, code in codes.items() if code is not None}
    if not wanted:
        return {}
    batcher = batcher_for_target(target)
    if batcher is None:  # no cubin for the target, so no code was sent: nothing to list
        return {}
    by_key = {code_key(code): code for code in wanted.values()}
    try:
        listed = instruction_stats_many(by_key, batcher.arch, tools_dir=batcher.tools_dir)
    except Exception as exc:
        failed = InstructionStats(note=f"static stats failed: {type(exc).__name__}: {exc}")
        listed = dict.fromkeys(by_key, failed)
    return {config_id: listed[code_key(code)] for config_id, code in wanted.items()}


def fill_row(row: dict[str, Any], listed: InstructionStats) -> None:
    """Put ``listed`` into a ``measurements`` row built from a compile outcome whose
    ``stats`` lacked the instruction columns; its note joins the row's (made publishable)."""
    from extract.sass import mix_column

    row["spill_bytes"] = listed.spill_bytes
    row["sass_instructions"] = listed.instructions
    row["sass_mix"] = mix_column(listed.mix)
    if listed.note:
        row["stats_note"] = publishable_message("; ".join(filter(None, [row.get("stats_note"), listed.note])))
