"""The hooks' log, beside the history: what a hook did that a user may want to know (a reminder or
block sent, an invalid config, an internal error with its traceback, anything otelguard wrote to
stderr meanwhile). Written without the `logging` module (a hook process starts without it, as it
starts without anything it does not need), rotated past `MAX_BYTES` to one `.1` file (two hooks
rotating at once may put a line in the old file). Names and ids from the CLI are quoted escaped.
"""

from __future__ import annotations

import os
import sys
import time

from . import paths

MAX_BYTES = 1_000_000


def write(path: str, level: str, message: str) -> None:
    """Append one line; where the log cannot be written (a directory others may write in, a link or
    someone else's file at its name), the line goes to stderr, saying why."""
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {os.getpid()} {level} {message.rstrip()}\n"
    try:
        paths.private_directory(os.path.dirname(path))
        try:
            if os.lstat(path).st_size > MAX_BYTES:
                os.replace(path, path + ".1")  # (a rename: it moves a link, never follows one)
        except FileNotFoundError:
            pass
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | paths.NO_FOLLOW, 0o600)
        try:
            paths.own_file(descriptor, path)
            os.write(descriptor, line.encode("utf-8", "replace"))
        finally:
            os.close(descriptor)
    except OSError as error:
        if sys.__stderr__ is not None:  # the CLI keeps a hook's stderr in its debug log
            sys.__stderr__.write(f"{line.rstrip()} (not in {path}: {error})\n")
