"""``python -m extract FILE`` refuses what cannot be IR text, naming the file."""

from __future__ import annotations

import pytest

from extract.cli import main


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b"  \n\n", "the file is empty"),
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe binary", "not a text file (byte 8 is not UTF-8)"),
    ],
)
def test_empty_or_binary_file_is_an_error_naming_it(tmp_path, capsys, content, expected):
    path = tmp_path / "kernel.ttgir"
    path.write_bytes(content)
    assert main([str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: {path}: ") and expected in captured.err
    assert "Traceback" not in captured.err
