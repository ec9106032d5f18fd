"""`python -m otelguard ...`: the same as the `otelguard` command."""

from __future__ import annotations

from .entry import main

if __name__ == "__main__":
    raise SystemExit(main())
