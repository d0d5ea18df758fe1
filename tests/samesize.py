"""Rewrite a Parquet file in place with other rows, keeping its path, size and modification time.

What ``cp -p`` of another file of the same size over a data file leaves, or a same-size edit
followed by ``touch -r`` (or a restore with ``rsync -t``): caches that identify a file by its
path, size and mtime cannot tell the new rows from the old. Sizes are matched with a padding
entry in the Parquet footer's key-value metadata (one byte of padding is one byte of file), so
:func:`make_room` first gives the original file some padding to trade against.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PAD_KEY = "tests.padding"


def _write(path: Path, table: pa.Table, pad: int) -> int:
    """Write ``table`` to ``path`` with ``pad`` bytes of footer padding; returns its size."""
    with pq.ParquetWriter(path, table.schema, compression="zstd", write_page_checksum=True) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({PAD_KEY: "x" * pad})
    return path.stat().st_size


def make_room(path: Path, pad: int = 2048) -> None:
    """Rewrite ``path`` with its own rows and ``pad`` bytes of footer padding (a new file: new
    mtime), so that a later :func:`rewrite_keeping_size_and_mtime` has bytes to give back."""
    rows = pq.read_table(path)
    scratch = path.with_name(f".room-{path.name}")
    _write(scratch, rows, pad)
    os.replace(scratch, path)


def rewrite_keeping_size_and_mtime(path: Path, table: pa.Table) -> None:
    """Overwrite ``path`` in place (same inode, as ``cp -p`` does) with ``table``, padded to the
    file's size, and set its access and modification times back. ``table`` keeps the original's
    schema metadata (the dataset's footer keys)."""
    before = path.stat()
    table = table.replace_schema_metadata(pq.read_schema(path).metadata)
    scratch = path.with_name(f".same-size-{path.name}")
    try:
        unpadded = _write(scratch, table, 0)
        for pad in range(max(0, before.st_size - unpadded - 2), before.st_size - unpadded + 1):
            if _write(scratch, table, pad) == before.st_size:
                break
        else:
            raise AssertionError(f"{path}: no padding makes the new rows {before.st_size} bytes")
        with open(path, "r+b") as handle:  # in place: the inode stays, as with cp -p
            handle.write(scratch.read_bytes())
    finally:
        scratch.unlink(missing_ok=True)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
