"""The lines of an input, numbered, read in bounded memory and linear time.

A binary stream is read in chunks of `_CHUNK_BYTES`; a run of blank lines is counted in C (one
regular-expression search and one `bytes.count` per run), never handed out line by line, and never
held, however long; a line with content is held only up to `max_line_bytes` (past that the input is
refused, with the line's number); the bytes read (after gzip) are capped at `max_decompressed_bytes`. Lines are numbered from 1 whatever the
path, so every reader of them can say which line a span or a problem came from.

Items: `(number, text)` for a line with content (its newline kept), `(number, count)` for a run of
`count` blank lines starting at line `number`.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterator
from typing import IO, Any

from ..errors import OtelGuardError

DEFAULT_MAX_LINE_BYTES = 128 * 2**20  # the longest line (or multi-line document) held at once
DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 2**30  # bytes read from one input, after gzip
_CHUNK_BYTES = 2**20
# The first character that is not ASCII whitespace (as `bytes.isspace` sees it): the lines before it
# are blank.
_CONTENT = re.compile(rb"[^ \t\n\r\f\v]")
_WHITESPACE = frozenset(b" \t\n\r\f\v")

Numbered = tuple[int, "str | int"]


class InputLimitError(OtelGuardError):
    """The input passes a bound (`--max-line-bytes`, `--max-decompressed-bytes`) at `line`."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class ReadFailed(OtelGuardError):
    """The stream under the lines failed (I/O error, corrupt or truncated gzip) at `line`."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def too_long(what: str, size: int, limit: int) -> str:
    """Why `what` (a line, a document) is refused: it passed `limit` after `size` bytes."""
    return (f"{what} longer than --max-line-bytes ({limit:,} bytes; {size:,} read so far): raise the limit, or "
            "check that this is OTLP JSON")


class LineReader:
    """Numbered lines of a binary stream (see the module doc). `lines` is the number of the last line
    handed out (or counted as blank), `last` the text of the last line with content.

    `name`, `compressed`, `named_gz_not_gzip`: what the opener found out about the input."""

    def __init__(self, stream: IO[bytes], *, name: str = "<stream>", compressed: bool = False,
                 named_gz_not_gzip: bool = False, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                 max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES, close: Any = None,
                 chunk_bytes: int = _CHUNK_BYTES):
        self._stream = stream
        self._chunk_bytes = chunk_bytes
        self._read = getattr(stream, "read1", stream.read)  # one read at a time: lines come out as they arrive
        self._close = close
        self.name = name
        self.compressed = compressed
        self.named_gz_not_gzip = named_gz_not_gzip
        self.max_line_bytes = max_line_bytes
        self.max_decompressed_bytes = max_decompressed_bytes
        self.lines = 0
        self.last = ""
        self.head = b""  # what the opener sniffed of the first bytes, when it did
        self.bytes_read = 0

    def close(self) -> None:
        if self._close is not None:
            close, self._close = self._close, None
            close()

    def __iter__(self) -> Iterator[Numbered]:
        limit = self.max_line_bytes
        pieces: list[bytes] = []  # the start of a line that goes on in the next chunk
        held = 0  # bytes in `pieces`
        blank_tail = False  # the chunks so far end in a line of whitespace, not held
        number = 0  # lines finished so far
        while True:
            chunk = self._chunk(number + 1)
            if not chunk:
                break
            pos = 0
            size = len(chunk)
            while pos < size:
                if not pieces and chunk[pos] in _WHITESPACE:  # (a line with content is one test)
                    content = _CONTENT.search(chunk, pos)
                    blank_end = chunk.rfind(b"\n", pos, size if content is None else content.start()) + 1
                    if blank_end > pos:
                        count = chunk.count(b"\n", pos, blank_end)
                        self.lines = number + count
                        yield number + 1, count
                        number += count
                        pos = blank_end
                        blank_tail = False
                        continue
                end = chunk.find(b"\n", pos)
                if end < 0:
                    if pieces or _CONTENT.search(chunk, pos) is not None:
                        held += size - pos
                        if held > limit:
                            raise InputLimitError(number + 1, too_long("the line is", held, limit))
                        pieces.append(chunk[pos:] if pos else chunk)
                    else:  # whitespace so far: nothing to hold (a blank line costs no memory, however long)
                        blank_tail = True
                    break
                end += 1
                if held + end - pos > limit:
                    raise InputLimitError(number + 1, too_long("the line is", held + end - pos, limit))
                if pieces:
                    pieces.append(chunk[pos:end])
                    line = b"".join(pieces)
                    pieces.clear()
                else:
                    line = chunk[pos:end]
                held = 0
                blank_tail = False
                pos = end
                number += 1
                yield self._line(number, line)
        if pieces:  # the last line, without a newline
            yield self._line(number + 1, b"".join(pieces))
        elif blank_tail:  # ... a blank one
            self.lines = number + 1
            yield number + 1, 1

    def _line(self, number: int, line: bytes) -> Numbered:
        self.lines = number
        if line.isspace():  # a blank line that began in one chunk and ended in the next
            return number, 1
        # Invalid UTF-8 becomes U+FFFD: such a line then fails as JSON and is counted, never raised.
        text = self.last = line.decode("utf-8", "replace")
        return number, text

    def _chunk(self, line: int) -> bytes:
        try:
            chunk = self._read(self._chunk_bytes)
        except (OSError, EOFError, zlib.error) as error:
            raise ReadFailed(line, str(error) or type(error).__name__) from None
        self.bytes_read += len(chunk)
        if self.bytes_read > self.max_decompressed_bytes:
            raise InputLimitError(line, f"more than --max-decompressed-bytes ({self.max_decompressed_bytes:,} bytes) "
                                        "read from this input: raise the limit to read it all")
        return chunk


def text_lines(stream: IO[str] | io.TextIOBase, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Numbered]:
    """Numbered lines of a text stream, as `LineReader` gives them (line length counted in characters)."""
    number = 0
    blank = 0  # blank lines not handed out yet
    while True:
        try:
            line = stream.readline(max_line_bytes + 1)
        except (OSError, EOFError, zlib.error) as error:
            raise ReadFailed(number + 1, str(error) or type(error).__name__) from None
        if not line:
            break
        number += 1
        if len(line) > max_line_bytes:
            raise InputLimitError(number, too_long("the line is", len(line), max_line_bytes))
        if line.isspace():
            blank += 1
            continue
        if blank:
            yield number - blank, blank
            blank = 0
        yield number, line
    if blank:
        yield number - blank + 1, blank
