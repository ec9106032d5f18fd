"""Opening input files for the analyzer: gzip detection, a binary sniff, and lines counted as read.

`otlp_json.iter_lazy_spans` does the parsing. The analyzer hands it a `LineSource` (a text stream) instead
of a path so that it can tell, while spans stream out, which line it is on: spans carry no line
number, and the line is what tells record boundaries (when to check whether a trace is complete)
and what the coverage block counts.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from typing import IO

from ..errors import OtelGuardError

_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 8192


class InputError(OtelGuardError):
    """An input file cannot be analysed at all (missing, unreadable, binary, corrupt gzip, not OTLP).

    The CLI turns it into a one-line message and exit status 2. `line` is 0 when the whole file is
    at fault rather than one line of it.
    """

    def __init__(self, path: str, line: int, reason: str):
        where = f"{path}: line {line}" if line else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class LineSource(io.TextIOBase):
    """The text lines of one input file, counted as they are read.

    `lines` is the number of lines read so far and `last` the most recent one, so whoever consumes
    the parser's output can tell which line a span came from. Iterating is the only supported read.
    """

    def __init__(self, text: IO[str], name: str, *, compressed: bool, named_gz_not_gzip: bool):
        super().__init__()
        self._text = text
        self.name = name
        self.compressed = compressed
        self.named_gz_not_gzip = named_gz_not_gzip
        self.lines = 0
        self.last = ""

    def readable(self) -> bool:
        return True

    def __iter__(self) -> LineSource:
        return self

    def __next__(self) -> str:
        line = self._text.readline()
        if not line:
            raise StopIteration
        self.lines += 1
        self.last = line
        return line

    def close(self) -> None:
        try:
            self._text.close()
        finally:
            super().close()


def open_input(path: str | os.PathLike[str]) -> LineSource:
    """Open one input file (`-`: standard input) for reading. Raises `InputError` when it cannot be
    read at all.

    Gzip is recognised by its magic bytes, whatever the name. A file whose first bytes hold a NUL is
    binary (OTLP/JSON is UTF-8 text): refused here, with the line it was found on.
    """
    label = os.fspath(path)
    if label == "-":
        return _open_stream(sys.stdin.buffer, "<stdin>")
    if os.path.isdir(label):
        raise InputError(label, 0, "is a directory, not an OTLP JSON file")
    try:
        raw = open(label, "rb")  # noqa: SIM115 - owned by the returned LineSource
    except OSError as error:
        raise InputError(label, 0, f"cannot open: {error.strerror or error}") from None
    return _open_stream(raw, label)


def _open_stream(raw: IO[bytes], label: str) -> LineSource:
    named_gz = label.endswith((".gz", ".gzip"))
    try:
        buffered: IO[bytes] = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type]
        compressed = buffered.peek(2)[:2] == _GZIP_MAGIC  # type: ignore[attr-defined]
        stream: IO[bytes] = gzip.GzipFile(fileobj=buffered) if compressed else buffered  # type: ignore[assignment]
        head = stream.peek(_SNIFF_BYTES)[:_SNIFF_BYTES]  # type: ignore[attr-defined]
    except (OSError, EOFError, zlib.error) as error:
        raw.close()
        raise InputError(label, 1, f"not valid gzip data ({error})") from None
    if b"\x00" in head:
        raw.close()
        line = head[: head.index(b"\x00")].count(b"\n") + 1
        hint = " (named .gz, but not gzip data)" if named_gz and not compressed else ""
        raise InputError(label, line, f"binary data, not OTLP JSON{hint}")
    # Invalid UTF-8 becomes U+FFFD: such a line then fails as JSON and is counted, never raised.
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")
    return LineSource(text, label, compressed=compressed, named_gz_not_gzip=named_gz and not compressed)
