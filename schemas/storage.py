"""Filesystem access shared by the writer, reader and maintenance commands.

Local paths use pyarrow's own filesystem; URLs with a scheme (``memory://``, ``s3://``, ...)
go through fsspec wrapped as a pyarrow filesystem, so the rest of the code has one API.

On-disk layout: ``ROOT/<table>/<key>=<value>/part-<writer>-<seq>.parquet``. Names starting
with ``.`` or ``_`` are invisible to readers: files are written under such a temporary name
and appear only by rename.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from schemas.errors import (
    CorruptFileError,
    DatasetError,
    FileVanishedError,
    TableNotFoundError,
    UnknownStorageError,
)
from schemas.tables import TABLES

META_VERSION = b"kernel_corpus.schema_version"
META_TABLE = b"kernel_corpus.table"
META_REPLACES = b"kernel_corpus.replaces"
"""JSON list of sibling file names a compacted file supersedes (see :mod:`schemas.compact`)."""


@dataclass(frozen=True)
class Location:
    """A dataset root resolved to a pyarrow filesystem and a path inside it."""

    fs: pafs.FileSystem
    root: str
    url: str

    def table_dir(self, table: str) -> str:
        return posixpath.join(self.root, table)


def resolve(url: str | os.PathLike[str]) -> Location:
    """Resolve a local path (a ``str`` or a ``pathlib.Path``, as pyarrow and polars take) or
    fsspec URL to a :class:`Location`; a scheme fsspec cannot serve here is
    :class:`~schemas.errors.UnknownStorageError`, naming the URL."""
    url = os.fspath(url)
    if "://" in url and not url.startswith("file://"):
        import fsspec  # only needed for remote/in-memory datasets

        try:
            fs, path = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as exc:  # an unknown scheme, or its backend missing
            raise UnknownStorageError(f"{url}: {' '.join(str(exc).split())}") from None
        return Location(pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path.rstrip("/") or "/", url)
    local = pafs.LocalFileSystem()
    path = url.removeprefix("file://")
    return Location(local, os.path.abspath(path), url)


def is_hidden(relative_path: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative_path.split("/"))


@dataclass(frozen=True)
class FileStat:
    """A visible Parquet file of a table: its path, size in bytes, modification time in ns (0
    when the filesystem reports none) and ``version``: what the storage changes on every write
    of the file (:func:`_versions`). Files are immutable once they appear, so these identify a
    file's content (see :mod:`schemas.verdicts`) even when a person or tool writes over one:
    ``cp -p``, ``rsync -t`` and ``touch -r`` carry a name, size and mtime over, but not a
    version."""

    path: str
    size: int
    mtime_ns: int
    version: str = ""

    @property
    def identity(self) -> tuple[int, int, str]:
        """(size, mtime_ns, version): what changes when the file's bytes may have."""
        return (self.size, self.mtime_ns, self.version)


VERSION_FIELDS = (
    "ETag", "etag", "VersionId", "version_id", "generation", "md5Hash", "crc32c", "content_md5",
    "LastModified", "last_modified", "updated", "mtime", "created", "ino",
)
"""Entries of an fsspec ``info`` dict that change when an object is written (S3's ETag and
LastModified, GCS's generation, Azure's etag, the memory store's creation time, a local
file's ctime (``created``) and inode): pyarrow's wrapper of fsspec passes on only ``mtime``,
which object stores do not report under that name."""


def _versions(loc: Location, table_dir: str) -> dict[str, str]:
    """Path -> version of every file under ``table_dir``: a local file's ctime (which the
    kernel sets on every write and no tool can set back) and inode, or an fsspec store's
    :data:`VERSION_FIELDS`, from one more listing. Empty for other filesystems."""
    if isinstance(loc.fs, pafs.LocalFileSystem):
        return {}  # stat per file in :func:`_local_stat`: a listing gives no ctime
    handler = loc.fs.handler if isinstance(loc.fs, pafs.PyFileSystem) else None
    fs = getattr(handler, "fs", None)
    if fs is None:
        return {}
    found = fs.find(table_dir, detail=True, withdirs=False)
    return {
        path.rstrip("/"): json.dumps({k: str(info[k]) for k in VERSION_FIELDS if k in info}, sort_keys=True)
        for path, info in found.items()
    }


def _local_stat(path: str) -> FileStat:
    """A local file's :class:`FileStat`, size, mtime, ctime and inode from one ``os.stat``. A
    file gone since the listing raises :class:`FileVanishedError`: a concurrent ``compact``
    replaced it, list again."""
    try:
        status = os.stat(path)
    except FileNotFoundError as exc:
        raise FileVanishedError(path) from exc
    return FileStat(path, status.st_size, status.st_mtime_ns, f"{status.st_ctime_ns}:{status.st_ino}")


def list_files(loc: Location, table: str) -> list[FileStat]:
    """Visible Parquet files of a table, sorted by path. Raises TableNotFoundError if the table
    is absent."""
    table_dir = loc.table_dir(table)
    info = loc.fs.get_file_info(table_dir)
    if info.type != pafs.FileType.Directory:
        raise TableNotFoundError(
            f"{loc.url}: table directory {table!r} not found at {table_dir}{not_a_root_hint(loc)}"
        )
    selector = pafs.FileSelector(table_dir, recursive=True)
    files = []
    versions = _versions(loc, table_dir)
    for item in loc.fs.get_file_info(selector):
        rel = posixpath.relpath(item.path, table_dir)
        if not item.path.endswith(".parquet") or is_hidden(rel) or item.type == pafs.FileType.Directory:
            continue
        if item.type != pafs.FileType.File:
            raise CorruptFileError(item.path, UNREADABLE_ENTRY)
        if isinstance(loc.fs, pafs.LocalFileSystem):
            files.append(_local_stat(item.path))
            continue
        mtime = item.mtime_ns if item.mtime_ns is not None else 0
        files.append(FileStat(item.path, int(item.size or 0), int(mtime), versions.get(item.path.rstrip("/"), "")))
    broken = [path for path in broken_links(loc, table_dir) if path.endswith(".parquet")]
    if broken:
        raise CorruptFileError(broken[0], UNREADABLE_ENTRY)
    return sorted(files, key=lambda f: f.path)


def not_a_root_hint(loc: Location) -> str:
    """Why ``loc`` is no dataset root, as a clause to append to a missing-table error, when the
    path says: it does not exist, is a file, or is a table's directory or one of its partitions
    (``read_table("ds/measurements", "measurements")``: the path a plain Parquet reader takes).
    Empty when the root looks right and only the table is missing."""
    info = loc.fs.get_file_info(loc.root)
    if info.type == pafs.FileType.NotFound:
        return f" ({loc.root} does not exist)"
    if info.type != pafs.FileType.Directory and isinstance(loc.fs, pafs.LocalFileSystem):
        # Only a local file is surely no directory: over HTTP every path that answers is a "file".
        return f" ({loc.root} is a file, not a dataset directory)"
    parts = loc.root.rstrip("/").split("/")
    if parts[-1] in TABLES:
        table, up = parts[-1], 1
    elif len(parts) > 1 and "=" in parts[-1] and parts[-2] in TABLES:
        table, up = parts[-2], 2
    else:
        return ""
    dataset = loc.url.rstrip("/")
    for _ in range(up):  # the URL as given (relative, file://, s3://), less its last parts
        scheme, _, path = dataset.rpartition("://")
        head = path.rsplit("/", 1)[0] if "/" in path else "."
        dataset = f"{scheme}://{head}" if scheme else head
    where = f"the {table!r} table's directory" if up == 1 else f"a partition of the {table!r} table"
    return f"; {loc.url} is {where}: pass the dataset root, {dataset!r}"


def broken_links(loc: Location, directory: str) -> list[str]:
    """Visible symbolic links under ``directory`` whose target is gone (local datasets; other
    storage has no links). pyarrow's listing leaves them out without a word."""
    if not isinstance(loc.fs, pafs.LocalFileSystem):
        return []
    found = []
    pending = [directory]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except FileNotFoundError:  # removed meanwhile (a partition emptied by compaction)
            continue
        for entry in entries:
            if is_hidden(posixpath.relpath(entry.path, directory)):
                continue
            if entry.is_symlink():
                if not os.path.exists(entry.path):
                    found.append(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return sorted(found)


UNREADABLE_ENTRY = "not a file: a symbolic link whose target is gone, or a special file"
"""Why a visible entry of a table that is neither a file nor a directory is refused: the
listing would skip it, hiding the rows it stood for."""


def list_strays(loc: Location, table: str) -> list[str]:
    """Visible files of a table's directory that are not Parquet files (a ``.bak`` copy, a
    note, a broken link): kernel-corpus never reads them, but a plain reader of the directory
    (``pyarrow.dataset``) would, so they are reported by ``check``. Sorted paths; empty when
    the table is absent."""
    table_dir = loc.table_dir(table)
    if loc.fs.get_file_info(table_dir).type != pafs.FileType.Directory:
        return []
    listed = (
        item.path
        for item in loc.fs.get_file_info(pafs.FileSelector(table_dir, recursive=True))
        if item.type != pafs.FileType.Directory
        and not item.path.endswith(".parquet")
        and not is_hidden(posixpath.relpath(item.path, table_dir))
    )
    return sorted({*listed, *(p for p in broken_links(loc, table_dir) if not p.endswith(".parquet"))})


def list_hidden_data(loc: Location, table: str) -> list[str]:
    """Parquet files with visible names inside hidden directories of a table's directory
    (``runs/_old/part-*.parquet``, ``runs/arch=sm_90/.rsync-partial/part-*.parquet``): a copy
    kept aside, or a copy tool's partial file. kernel-corpus and ``pyarrow.dataset`` skip
    them, but a glob (polars', duckdb's ``runs/*/part-*.parquet``) reads them beside the
    live files. Writers' own temporaries are hidden files (``.tmp-*``), never such
    directories. Sorted paths; empty when the table is absent."""
    table_dir = loc.table_dir(table)
    if loc.fs.get_file_info(table_dir).type != pafs.FileType.Directory:
        return []
    found = []
    for item in loc.fs.get_file_info(pafs.FileSelector(table_dir, recursive=True)):
        directory, name = posixpath.split(posixpath.relpath(item.path, table_dir))
        if (
            item.type != pafs.FileType.Directory
            and name.endswith(".parquet")
            and not is_hidden(name)
            and is_hidden(directory)
        ):
            found.append(item.path)
    return sorted(found)


def list_parquet(loc: Location, table: str) -> list[str]:
    """Paths of the visible Parquet files of a table, sorted. Raises TableNotFoundError if the
    table is absent."""
    return [f.path for f in list_files(loc, table)]


def partition_values(loc: Location, table: str, path: str) -> dict[str, str]:
    """The hive partition values the directories of ``path`` name (``arch=sm_90/`` ->
    ``{"arch": "sm_90"}``), relative to the table's directory."""
    relative = posixpath.relpath(posixpath.dirname(path), loc.table_dir(table))
    values = {}
    for segment in relative.split("/"):
        key, sep, value = segment.partition("=")
        if sep and key:
            values[key] = value
    return values


def read_footer(loc: Location, path: str) -> pq.FileMetaData:
    """Parquet footer of ``path``; CorruptFileError naming the file when unreadable, when
    a column chunk's physical type is not its schema column's (:func:`chunk_type_problem`),
    or when its row counts disagree (:func:`row_count_problem`)."""
    try:
        with loc.fs.open_input_file(path) as handle:
            metadata = pq.ParquetFile(handle).metadata
    except (OSError, pa.ArrowException) as exc:
        if vanished(loc, path):
            raise FileVanishedError(path) from exc
        raise CorruptFileError(path, exc) from exc
    problem = chunk_type_problem(metadata) or row_count_problem(metadata)
    if problem:
        raise CorruptFileError(path, problem)
    return metadata


def row_count_problem(metadata: pq.FileMetaData) -> str | None:
    """What is wrong when the footer's row counts disagree: the file's ``num_rows`` with its
    row groups', or a row group's with the values of a flat column chunk (one value per row,
    nulls included). Readers read as many rows as a row group says, and ``scan_table`` takes
    the file's count for the rows stored, so a count one short drops a row or lets an
    uncommitted one through; one flipped footer bit, which no checksum covers, does it."""
    groups = [metadata.row_group(group) for group in range(metadata.num_row_groups)]
    held = sum(group.num_rows for group in groups)
    if held != metadata.num_rows:
        return f"footer: says {metadata.num_rows} rows, its row groups hold {held} rows (a damaged footer)"
    schema = metadata.schema
    flat = [i for i in range(len(schema)) if schema.column(i).max_repetition_level == 0]
    for index, group in enumerate(groups):
        for column in flat:
            chunk = group.column(column)
            if chunk.num_values != group.num_rows:
                return (
                    f"footer: row group {index} says {group.num_rows} rows, its column chunk "
                    f"{chunk.path_in_schema!r} {chunk.num_values} values (a damaged footer)"
                )
    return None


def chunk_type_problem(metadata: pq.FileMetaData) -> str | None:
    """What is wrong when a column chunk of the footer names another physical type than its
    schema column (one flipped bit of the footer, which no checksum covers): pyarrow aborts
    the whole process (an uncaught C++ exception) on the first read of its statistics or
    pages, so this is checked before anything else touches them."""
    schema = metadata.schema
    expected = [schema.column(i).physical_type for i in range(len(schema))]
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        if row_group.num_columns != len(expected):
            return f"footer: row group {group} has {row_group.num_columns} column chunks, the schema {len(expected)} columns"
        for index, want in enumerate(expected):
            chunk = row_group.column(index)
            if chunk.physical_type != want:
                return (
                    f"footer: column chunk {chunk.path_in_schema!r} of row group {group} says physical "
                    f"type {chunk.physical_type}, its schema column {want} (a damaged footer)"
                )
    return None


@dataclass(frozen=True)
class Footer:
    """What kernel-corpus keeps in a file's Parquet footer, parsed and checked
    (:func:`parse_footer`, the one place footers are interpreted)."""

    path: str
    metadata: pq.FileMetaData
    version: int
    """``kernel_corpus.schema_version``."""
    table: str | None
    """``kernel_corpus.table``: the table the writer meant (None: not recorded)."""
    replaces: tuple[str, ...]
    """``kernel_corpus.replaces``: names of sibling files this one supersedes (written by
    ``compact``, ``scrub`` and ``check --fix``; see :mod:`schemas.replacement`)."""


def parse_footer(path: str, metadata: pq.FileMetaData) -> Footer:
    """The kernel-corpus entries of ``path``'s footer; CorruptFileError naming the file when
    one is missing or malformed (a version that is not an integer, a ``replaces`` entry that
    is not a JSON list of sibling file names)."""
    kv = metadata.metadata or {}
    if META_VERSION not in kv:
        raise CorruptFileError(path, "no kernel_corpus.schema_version in the file metadata")
    text = kv[META_VERSION].decode(errors="replace").strip()
    if not re.fullmatch(r"[0-9]+", text):
        raise CorruptFileError(
            path, f"footer kernel_corpus.schema_version is {text!r}, not an integer"
        )
    table = kv[META_TABLE].decode(errors="replace") if META_TABLE in kv else None
    replaces = _parse_replaces(path, kv.get(META_REPLACES))
    return Footer(path, metadata, int(text), table, replaces)


def _parse_replaces(path: str, raw: bytes | None) -> tuple[str, ...]:
    if raw is None:
        return ()
    text = raw.decode(errors="replace")
    try:
        names = json.loads(text)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise CorruptFileError(
            path, f"footer kernel_corpus.replaces is {shown!r}, not a JSON list of file names"
        )
    own = posixpath.basename(path)
    for name in names:
        if (
            not name.endswith(".parquet")
            or "/" in name
            or "\\" in name
            or name.startswith((".", "_"))
            or name == own
        ):
            raise CorruptFileError(
                path,
                f"footer kernel_corpus.replaces names {name!r}, which is not another visible "
                "Parquet file of the same directory",
            )
    return tuple(names)


def footer_version(path: str, metadata: pq.FileMetaData) -> int:
    """The footer's ``kernel_corpus.schema_version`` (:func:`parse_footer`)."""
    return parse_footer(path, metadata).version


PARQUET = ds.ParquetFileFormat(
    default_fragment_scan_options=ds.ParquetFragmentScanOptions(page_checksum_verification=True)
)
"""How the readers read Parquet: verifying each page's CRC where the file has them (every file
:func:`write_atomic` writes; older files have none), so storage damage inside a page is a
:class:`CorruptFileError`, not silently different values."""


def read_file(loc: Location, path: str, columns: list[str] | None = None) -> pa.Table:
    """Read one Parquet file whole (page checksums verified); CorruptFileError naming the file
    when it fails."""
    try:
        with loc.fs.open_input_file(path) as handle:
            return pq.read_table(handle, columns=columns, page_checksum_verification=True)
    except (OSError, pa.ArrowException) as exc:
        if vanished(loc, path):
            raise FileVanishedError(path) from exc
        raise CorruptFileError(path, exc) from exc


def _encodings(schema: pa.Schema) -> dict[str, list[str]]:
    """Byte-stream-split (not dictionary) encoding for float columns: latencies are
    high-entropy, and splitting their bytes lets zstd find the shared exponents (~20% smaller
    measurement rows)."""
    floats = [f.name for f in schema if pa.types.is_floating(f.type)]
    return {
        "use_dictionary": [f.name for f in schema if f.name not in floats],
        "use_byte_stream_split": floats,
    }


def write_atomic(
    loc: Location, directory: str, name: str, table: pa.Table, *, compression: str = "zstd"
) -> str:
    """Write ``table`` to ``directory/name`` so that it appears whole or not at all.

    The bytes go to a hidden temporary file in the same directory, then one rename makes the
    file visible; a writer killed mid-write leaves only an invisible temporary behind.
    Returns the final path.
    """
    loc.fs.create_dir(directory, recursive=True)
    final = posixpath.join(directory, name)
    temporary = posixpath.join(directory, f".tmp-{uuid.uuid4().hex}-{name}")
    try:
        pq.write_table(
            table,
            temporary,
            filesystem=loc.fs,
            compression=compression,
            write_page_checksum=True,  # a flipped bit in a page is an error, not a label
            **_encodings(table.schema),
        )
        loc.fs.move(temporary, final)
    except BaseException:
        with contextlib.suppress(OSError):
            loc.fs.delete_file(temporary)
        raise
    return final


TEMPORARY_PREFIX = ".tmp-"
STALE_TEMPORARY_AGE_S = 3600.0
"""A hidden temporary older than this is a killed writer's leftover: a live writer renames its
temporary within the seconds one file takes to write."""


@dataclass(frozen=True)
class Temporary:
    """A hidden ``.tmp-*`` file under a table directory; ``age_s`` None when the filesystem
    reports no modification time."""

    path: str
    size: int
    age_s: float | None

    def older_than(self, seconds: float) -> bool:
        """Whether the file was last written at least ``seconds`` ago, or is dated that far in
        the future (a writer whose clock runs that far ahead, or a touched file: no live write
        either way). False without a modification time."""
        return self.age_s is not None and abs(self.age_s) >= seconds


def list_temporaries(loc: Location, tables: list[str]) -> list[Temporary]:
    """Hidden write temporaries under the given table directories (absent tables skipped)."""
    now = time.time()
    found = []
    for table in tables:
        table_dir = loc.table_dir(table)
        if loc.fs.get_file_info(table_dir).type != pafs.FileType.Directory:
            continue
        for item in loc.fs.get_file_info(pafs.FileSelector(table_dir, recursive=True)):
            if item.type == pafs.FileType.File and posixpath.basename(item.path).startswith(
                TEMPORARY_PREFIX
            ):
                age = now - item.mtime.timestamp() if item.mtime is not None else None
                found.append(Temporary(item.path, item.size or 0, age))
    return sorted(found, key=lambda t: t.path)


def remove_stale_temporaries(
    loc: Location, tables: list[str], min_age_s: float = STALE_TEMPORARY_AGE_S
) -> list[Temporary]:
    """Delete temporaries older than ``min_age_s`` seconds (never younger ones: their writer may
    still be running); returns what was removed."""
    removed = []
    for temporary in list_temporaries(loc, tables):
        if temporary.older_than(min_age_s):
            with contextlib.suppress(FileNotFoundError):
                loc.fs.delete_file(temporary.path)
                removed.append(temporary)
    return removed


def probe_writable(loc: Location, tables: list[str]) -> None:
    """Create the table directories and write and remove a small hidden file in each, so a
    destination that cannot take the dataset fails now, in one line, not after hours of work.

    Raises DatasetError naming the destination and the reason.
    """
    for table in tables:
        directory = loc.table_dir(table)
        probe = posixpath.join(directory, f"{TEMPORARY_PREFIX}probe-{uuid.uuid4().hex}")
        try:
            loc.fs.create_dir(directory, recursive=True)
            with loc.fs.open_output_stream(probe) as handle:
                handle.write(b"kernel-corpus write probe")
            loc.fs.delete_file(probe)
        except (OSError, pa.ArrowException) as exc:
            reason = (
                exc.strerror
                if isinstance(exc, OSError) and exc.strerror
                else str(exc).splitlines()[0]
            )
            reason = " ".join(reason.split())
            raise DatasetError(f"{loc.url}: cannot write the dataset there ({reason})") from None


def vanished(loc: Location, path: str) -> bool:
    """True when ``path`` no longer exists (a concurrent compaction removed it)."""
    try:
        return loc.fs.get_file_info(path).type == pafs.FileType.NotFound
    except OSError:
        return False
