"""files.iter_lines reads a block at a time; it must give exactly the lines readline gave."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.ingest.parse import files


def _by_readline(stream: io.BufferedReader, cap: int):
    """The line reader iter_lines used before it read blocks."""
    lineno = 0
    while chunk := stream.readline(cap):
        lineno += 1
        if len(chunk) >= cap and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):
                chunk = stream.readline(cap)
            yield lineno, None
            continue
        yield lineno, chunk.decode("utf-8", errors="replace").rstrip("\r\n")


_PIECES = [b"a", b"\n", b"\r", b"\r\n", b"\xe2\x82\xac", b"\xe2", b"\x82", b"\xff", b"xyz" * 5]


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=40),
    st.integers(1, 30),
    st.integers(1, 16),
)
def test_block_lines_are_readline_lines(pieces, cap, block):
    data = b"".join(pieces)
    saved = files._BLOCK
    files._BLOCK = block
    try:
        got = list(files._lines(io.BufferedReader(io.BytesIO(data), buffer_size=8), cap))
    finally:
        files._BLOCK = saved
    assert got == list(_by_readline(io.BufferedReader(io.BytesIO(data)), cap))
