"""The `otelguard` command's entry point (and `python -m otelguard`'s).

A coding-agent CLI starts `otelguard hook <cli>` for every tool call, so that form goes straight to
`otelguard.hooks.command` without importing the command line's parser and subcommands; everything
else goes to `otelguard.cli.main`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .hooks import CLIS


def main(argv: Sequence[str] | None = None) -> int:
    """The command on `argv` (default: the process's own arguments). A hook on the process's own
    arguments ends the process itself (`hooks.command.run_as_the_process`)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) == 2 and arguments[0] == "hook" and arguments[1] in CLIS:
        from .hooks.command import run, run_as_the_process

        if argv is None:  # the console script or `python -m otelguard`: this process is the hook's own
            run_as_the_process(arguments[1])
        return run(arguments[1], sys.stdin.buffer, sys.stdout)
    from .cli import main as cli_main

    return cli_main(arguments)
