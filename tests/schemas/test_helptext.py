from __future__ import annotations

from schemas.helptext import plain


def test_docstring_markup_becomes_plain_words():
    doc = "``python -m x``: uses :func:`schemas.read_table`, :class:`~schemas.DatasetWriter` and :ref:`the card <card>`"
    assert plain(doc) == "python -m x: uses schemas.read_table, DatasetWriter and the card"
    assert plain(None) == ""
    assert plain("no markup, `single` backquotes kept") == "no markup, `single` backquotes kept"
