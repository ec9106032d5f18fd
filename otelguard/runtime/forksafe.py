"""Re-initialise background machinery in a forked child, without keeping its owners alive.

A bound method handed to `os.register_at_fork` would pin its object forever; instead every owner is
held weakly here and one module-level hook resets them all in the child.
"""

from __future__ import annotations

import operator
import os
import threading
import weakref
from typing import Any, Callable

# owner -> what to do to it in a forked child (one action an owner; none holds the owner itself)
_owners: "weakref.WeakKeyDictionary[Any, Callable[[Any], None]]" = weakref.WeakKeyDictionary()


def reinit_after_fork(owner: Any, method: str) -> None:
    """Call `owner.<method>()` in every forked child while `owner` is alive."""
    _owners[owner] = operator.methodcaller(method)


def fork_safe_lock(owner: Any, attribute: str) -> threading.Lock:
    """A new lock for `owner.<attribute>`, replaced by a fresh one in every forked child while `owner`
    is alive: only the forking thread lives on there, so a lock another thread held would stay held."""
    _owners[owner] = lambda alive: setattr(alive, attribute, threading.Lock())
    return threading.Lock()


def _after_fork_in_child() -> None:
    for owner, action in list(_owners.items()):
        action(owner)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
