"""Which guard a span belongs to: the registry of live guard processors.

`tool_signal()`, `@budget` and `watch_stream` find the guard of the span they run in: the guard on
the provider that made the span, else the newest guard still running.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Protocol

from .sdk_span import processors_of


class Registered(Protocol):
    @property
    def running(self) -> bool: ...

    def holds(self, span_id: int) -> bool:
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
    """The guard on the provider that made `span` (read from the SDK span where the adapter may,
    else the guard that tracks it open); else the newest active guard; else None."""
    processors = active_processors()
    registered = {id(processor): processor for processor in processors}
    for processor in processors_of(span):
        guard = registered.get(id(processor))
        if guard is not None and guard.running:
            return guard
    span_id = span.get_span_context().span_id
    for processor in reversed(processors):
        if processor.running and processor.holds(span_id):
            return processor
    return processors[-1] if processors else None
