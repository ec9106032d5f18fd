"""Re-initialise background machinery in a forked child, without keeping its owners alive.

A bound method handed to `os.register_at_fork` would pin its object forever; instead every owner is
held weakly here and one module-level hook resets them all in the child.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

_owners: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def reinit_after_fork(owner: Any, method: str) -> None:
    """Call `owner.<method>()` in every forked child while `owner` is alive."""
    _owners[owner] = method


def _after_fork_in_child() -> None:
    for owner, method in list(_owners.items()):
        getattr(owner, method)()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
