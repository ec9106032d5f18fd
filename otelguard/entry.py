"""The `otelguard` command's entry point (and `python -m otelguard`'s).

A coding-agent CLI starts `otelguard hook <cli>` for every tool call, so that form goes straight to
`otelguard.hooks.command` without importing the command line's parser and subcommands; everything
else goes to `otelguard.cli.main`.
"""

from __future__ import annotations

import gc
import sys

from .hooks import CLIS

TYPE_CHECKING = False  # (not typing's: a hook imports neither it nor collections.abc)
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) == 2 and arguments[0] == "hook" and arguments[1] in CLIS:
        # This process judges one call and exits: the cyclic collector's passes over the modules it
        # imports would cost ~7 M instructions (3% of a hook), for cycles freed at exit anyway.
        gc.disable()
        from .hooks.command import run

        return run(arguments[1], sys.stdin.buffer, sys.stdout, own_process=True)
    from .cli import main as cli_main

    return cli_main(arguments)
