"""Which guard a span belongs to: the registry of live guard processors.

`tool_signal()`, `@budget` and `watch_stream` find the guard of the span they run in: the guard that
tracks it open (a tool span, or a span inside an agent run), else the newest guard still running.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Protocol


class Registered(Protocol):
    @property
    def running(self) -> bool: ...

    def holds(self, span: Any) -> bool:
        """Whether this guard tracks the open span (a tool span, or a span inside an agent run)."""
        ...


# Registration order matters: with several guarded providers, the newest is the fallback owner.
_active: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
_registrations = itertools.count()


def register(processor: Registered) -> None:
    _active[next(_registrations)] = processor


def unregister(processor: Registered) -> None:
    for key, registered in list(_active.items()):
        if registered is processor:
            _active.pop(key, None)


def active_processors() -> list[Any]:
    """Running guard processors, oldest first."""
    return [processor for _, processor in sorted(_active.items())]


def owning_processor(span: Any) -> Any:
    """The guard that tracks `span` open (the newest, if several do); else the newest active guard;
    else None."""
    processors = active_processors()
    for processor in reversed(processors):
        if processor.running and processor.holds(span):
            return processor
    return processors[-1] if processors else None
