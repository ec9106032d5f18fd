"""Opening input files for the analyzer: gzip detection, a binary sniff, and bounded, numbered lines.

`otlp_json.iter_spans` does the parsing. The analyzer hands it a `LineReader` instead of a path
so that it can tell, while spans stream out, which line it is on: spans carry no line number, and
the line is what tells record boundaries (when to check whether a trace is complete) and what the
coverage block counts.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from typing import IO, cast

from ..errors import OtelGuardError
from .lines import DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_LINE_BYTES, LineReader

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


def open_input(path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> LineReader:
    """Open one input file (`-`: standard input) for reading, its lines bounded as `LineReader`
    bounds them. Raises `InputError` when it cannot be read at all.

    Gzip is recognised by its magic bytes, whatever the name. A file whose first bytes hold a NUL is
    binary (OTLP/JSON is UTF-8 text): refused here, with the line it was found on.
    """
    label = os.fspath(path)
    if label == "-":
        return _open_stream(sys.stdin.buffer, "<stdin>", max_line_bytes, max_decompressed_bytes)
    if os.path.isdir(label):
        raise InputError(label, 0, "is a directory, not an OTLP JSON file")
    try:
        raw = open(label, "rb")  # noqa: SIM115 - owned by the returned LineSource
    except OSError as error:
        raise InputError(label, 0, f"cannot open: {error.strerror or error}") from None
    return _open_stream(raw, label, max_line_bytes, max_decompressed_bytes)


def ungzipped(raw: IO[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    """(`raw` buffered, so that it can be peeked at; the stream to read: that one, un-gzipped when
    it starts with the gzip magic, whatever the name)."""
    buffered = cast(io.BufferedReader, raw) if hasattr(raw, "peek") else io.BufferedReader(cast(io.RawIOBase, raw))
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        return buffered, cast(IO[bytes], gzip.GzipFile(fileobj=buffered))
    return buffered, buffered


def _open_stream(raw: IO[bytes], label: str, max_line_bytes: int, max_decompressed_bytes: int) -> LineReader:
    named_gz = label.endswith((".gz", ".gzip"))
    try:
        buffered, stream = ungzipped(raw)
        compressed = stream is not buffered
        head = stream.peek(_SNIFF_BYTES)[:_SNIFF_BYTES]  # type: ignore[attr-defined]  # buffered or gzip: both peek
    except (OSError, EOFError, zlib.error) as error:
        raw.close()
        raise InputError(label, 1, f"not valid gzip data ({error})") from None
    if b"\x00" in head:
        raw.close()
        line = head[: head.index(b"\x00")].count(b"\n") + 1
        hint = " (named .gz, but not gzip data)" if named_gz and not compressed else ""
        raise InputError(label, line, f"binary data, not OTLP JSON{hint}")
    def close() -> None:
        try:
            stream.close()
        finally:
            raw.close()  # a GzipFile over a file object leaves that file open

    reader = LineReader(stream, name=label, compressed=compressed, named_gz_not_gzip=named_gz and not compressed,
                        max_line_bytes=max_line_bytes, max_decompressed_bytes=max_decompressed_bytes, close=close)
    reader.head = head  # the first bytes, decompressed, read without consuming them (`starts_with_logs`)
    return reader


def starts_with_logs(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first record is OTLP logs, told from its first bytes (gzip or not). Standard
    input is not looked into (it can be read once); a file that cannot be opened says no here and is
    reported when it is read."""
    if os.fspath(path) == "-":
        return False
    try:
        reader = open_input(path)
    except InputError:
        return False
    try:
        return b'"resourceLogs"' in reader.head.lstrip()[:256]
    finally:
        reader.close()
