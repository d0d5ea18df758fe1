"""Write one run's rows in commit order, each IR graph and kernel once per dataset.

Shared by the recorder and the importers (the harvest batches its own writes): IR tables,
the kernel, measurements, and the ``runs`` row last -- its landing commits the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from corpus.harvest.runner import IR_TABLES, existing_ids
from schemas import DatasetWriter


@dataclass
class RunRows:
    """The rows of one run: IR graphs by ir_id (their three tables), the kernel row, the
    measurements rows and the runs row."""

    graphs: dict[str, dict[str, pa.Table]]
    kernel: dict[str, Any]
    measurements: list[dict[str, Any]]
    run: dict[str, Any]


@dataclass
class RunWriter:
    """Writes :class:`RunRows` into ``writer``'s dataset, skipping IR graphs and kernels the
    dataset already holds (content-keyed, so equal ids mean equal rows)."""

    writer: DatasetWriter
    known_ir: set[str] = field(default_factory=set)
    known_kernels: set[str] = field(default_factory=set)
    new_graphs: int = 0

    @classmethod
    def for_dataset(cls, out: str, writer: DatasetWriter | None = None) -> RunWriter:
        return cls(
            writer or DatasetWriter(out),
            existing_ids(out, "ir_graphs", "ir_id"),
            existing_ids(out, "kernels", "kernel_id"),
        )

    def write_graphs(self, graphs: Mapping[str, Mapping[str, pa.Table]]) -> None:
        """IR graphs alone (a trace's compiles that belong to no run)."""
        new = {ir: tables for ir, tables in graphs.items() if ir not in self.known_ir}
        if not new:
            return
        for name in IR_TABLES:  # nodes and edges first: a graph's row says it is stored whole
            self.writer.write(
                name,
                pa.concat_tables([t[name] for t in new.values()], promote_options="permissive"),
            )
        self.known_ir.update(new)
        self.new_graphs += len(new)

    def write_kernel(self, kernel: Mapping[str, Any]) -> None:
        if kernel["kernel_id"] not in self.known_kernels:
            self.writer.write("kernels", [dict(kernel)])
            self.known_kernels.add(kernel["kernel_id"])

    def write(self, rows: RunRows) -> None:
        """Everything of one run, the ``runs`` row last."""
        self.write_graphs(rows.graphs)
        self.write_kernel(rows.kernel)
        if rows.measurements:
            self.writer.write("measurements", rows.measurements)
        self.writer.commit_run([rows.run])
