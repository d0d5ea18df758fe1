"""``python -m corpus.record``: run a workload under the recorder and report what it wrote."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from corpus.destination import out_as_found_unless_work, probe_out
from corpus.harvest.settings import interpreter_selected, select_interpreter
from corpus.record.recorder import Recorder, RecordError, RecordOptions, RecordSummary
from corpus.record.workload import Workload, run_workload
from extract.versions import interpreter_defect


@dataclass(frozen=True)
class RecordCommand:
    """Everything ``python -m corpus.record`` accepts, parsed and typed."""

    options: RecordOptions
    workload: Workload
    device: str = "auto"
    """'auto' (the interpreter when there is no GPU), 'cpu' (always the interpreter) or 'cuda'."""
    force_out: bool = False
    """Accept an ``out`` that is a non-empty directory holding no dataset, or whose README.md or
    card.json kernel-corpus did not write (see :func:`corpus.destination.probe_out`)."""


def choose_device(device: str) -> None:
    """Select the interpreter before the workload imports its kernels, as the harvest's
    ``--device auto`` does; refuse 'cuda' without a GPU."""
    import torch

    if device == "cpu" or (device == "auto" and not torch.cuda.is_available()):
        if "triton" in sys.modules and not interpreter_selected():
            # @triton.jit code imported already (Triton's own tl.sum, ...) cannot be interpreted
            raise RecordError(
                "Triton was imported before the interpreter could be selected; set TRITON_INTERPRET=1"
            )
        defect = interpreter_defect()
        if defect is not None:
            raise RecordError(defect)
        select_interpreter()
    elif device == "cuda" and not torch.cuda.is_available():
        raise RecordError(
            "--device cuda: CUDA is not available here; use --device cpu (the interpreter)"
        )
    elif device == "cuda" and interpreter_selected():
        raise RecordError("--device cuda: TRITON_INTERPRET is set; unset it to record on the GPU")


def format_summary(out: str, summary: RecordSummary) -> str:
    lines = [
        f"recorded {summary.runs} run(s), {summary.measurements} measurement(s), "
        f"{summary.ir_graphs} new IR graph(s) into {out} ({summary.record_s:.2f} s recording)",
    ]
    if summary.cache_hits or summary.cache_hits_in_memory:
        lines.append(
            f"autotune cache hits: {summary.cache_hits} from Triton's disk cache (runs without "
            f"measurements), {summary.cache_hits_in_memory} already tuned in this process (not recorded)"
        )
    if summary.not_measured:
        lines.append(summary.failed_configs())
    if summary.configs_without_ir:
        lines.append(
            f"{summary.configs_without_ir} measured config(s) without IR graphs (stats_note says why), e.g.:"
        )
        lines += [f"  {example}" for example in summary.without_ir]
    if summary.twins_left_out:
        lines.append(
            f"{summary.twins_left_out} benchmarked config(s) not recorded: each differs from a config "
            "benchmarked before it only in its pre_hook or ir_override (one config_id: the first is recorded)"
        )
    lines += [f"tuning failed (the autotuned call raised): {failure}" for failure in summary.failed_tunings]
    lines += [f"not recorded: {failure}" for failure in summary.failures]
    lines += [f"tuning not recorded: {unseen}" for unseen in summary.unseen_tunings]
    if summary.untuned_launches:
        lines.append(summary.untuned())
    return "\n".join(lines) + "\n"


def record_workload(command: RecordCommand, out: TextIO | None = None) -> int:
    """Run the workload under the recorder; returns the workload's exit status. An interrupt
    (Ctrl-C) leaves every finished tuning committed and is re-raised. A wrong ``--out`` is
    :class:`corpus.destination.OutRefused`, before the workload starts; that and any other
    refusal before the workload starts (a device that is not there) leave ``--out`` as they
    found it (:func:`corpus.destination.out_as_found_unless_work`). Once the workload starts,
    ``--out`` is a dataset, whatever the workload does."""
    out = out or sys.stderr
    with out_as_found_unless_work(command.options.out) as work_begins:
        probe_out(command.options.out, force=command.force_out)  # a bad --out must not cost the workload
        choose_device(command.device)
        recorder = Recorder(command.options, warn_at_exit=False)  # the summary below says it all
        work_begins()
    try:
        with recorder:
            status = run_workload(command.workload)
    finally:
        out.write(format_summary(command.options.out, recorder.summary))
    return status
