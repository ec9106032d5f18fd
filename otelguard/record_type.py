"""`@record`: the engine's slotted data classes, made without importing `dataclasses`.

Every driver imports the engine's records, conventions, detectors and guards, and one of them, the
CLI hook, starts a new process for every tool call (bar: p95 <= 100 ms, interpreter start included).
`dataclasses` imports `inspect` (and with it `ast`, `dis`, `tokenize`): 47 M instructions, about a
sixth of the hook's whole run (callgrind, benchmarks/hook_latency.py --instructions). The engine's
classes use only this subset of `@dataclass(slots=True[, frozen=True])`, with the same behaviour:

- `__slots__` and an `__init__` taking the annotated fields in order, with class-level defaults and
  `field(default_factory=...)` (`ClassVar` annotations are not fields);
- `__eq__` over the fields of the same class (`field(compare=False)` leaves one out), `__repr__`
  (`field(repr=False)` likewise) and `__match_args__`;
- `frozen=True`: assignment raises `FrozenInstanceError`, `__hash__` is over the compared fields,
  and pickling goes around the frozen `__setattr__`; otherwise instances are unhashable, as
  `@dataclass`'s with `eq=True` are;
- `fields(cls_or_instance)` and `replace(instance, **changes)`, as the `dataclasses` functions.

The CLI hooks' own records use it too (they share the hook's start-up); the other drivers' classes
(analyzer, service, integrations) keep `dataclasses`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (not typing's: a CLI hook imports neither it nor collections.abc)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    """One field of a record: its name, default (or default factory) and whether it is compared and shown."""

    __slots__ = ("name", "default", "default_factory", "compare", "repr")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING, compare: bool = True,
                 repr: bool = True):  # noqa: A002  (the name `dataclasses.field` gives it)
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory, self.compare, self.repr = default, default_factory, compare, repr

    def __repr__(self) -> str:
        return f"Field(name={self.name!r})"


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | Any = _MISSING, compare: bool = True,
          repr: bool = True) -> Any:  # noqa: A002
    """A field's options, as `dataclasses.field`'s (those the engine uses)."""
    return Field(default, default_factory, compare, repr)


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The record's fields, in order."""
    try:
        return class_or_instance.__record_fields__
    except AttributeError:
        raise TypeError("must be called with a record class or instance") from None


def replace(instance: T, **changes: Any) -> T:
    """A new record like `instance` with `changes` (made through `__init__`, as `dataclasses.replace`)."""
    for record_field in fields(instance):
        if record_field.name not in changes:
            changes[record_field.name] = getattr(instance, record_field.name)
    return type(instance)(**changes)


def record(cls: type | None = None, /, *, frozen: bool = False) -> Any:
    """Make `cls` a slotted record (see the module doc); `@record` or `@record(frozen=True)`."""

    def make(cls: type) -> type:
        return _record_class(cls, frozen)

    return make if cls is None else make(cls)


def _record_class(cls: type, frozen: bool) -> type:
    if any(hasattr(base, "__record_fields__") for base in cls.__mro__[1:]):
        raise TypeError(f"{cls.__qualname__}: a record cannot extend another record")
    namespace = dict(cls.__dict__)
    record_fields = []
    for name, annotation in namespace.get("__annotations__", {}).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        value = namespace.pop(name, _MISSING)
        record_field = value if isinstance(value, Field) else Field(default=value)
        record_field.name = name
        record_fields.append(record_field)
    names = tuple(f.name for f in record_fields)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace.update(__slots__=names, __qualname__=cls.__qualname__, __match_args__=names,
                     __record_fields__=tuple(record_fields))
    compared = tuple(f.name for f in record_fields if f.compare)
    shown = tuple(f.name for f in record_fields if f.repr)
    for method, function in {"__init__": _init(cls.__qualname__, record_fields, frozen),
                             "__eq__": _eq(compared), "__repr__": _repr(shown)}.items():
        function.__qualname__ = f"{cls.__qualname__}.{method}"
        namespace[method] = function
    if frozen:
        namespace.update(_frozen_methods(names, compared))
    else:
        namespace["__hash__"] = None
    return type(cls)(cls.__name__, cls.__bases__, namespace)


def _init(qualname: str, record_fields: list[Field], frozen: bool) -> Callable[..., None]:
    """`__init__`, compiled from its source: every span builds records, and a generated `__init__` is
    the fastest (as dataclasses makes it). Only `__init__`: compiling costs ~0.4 M instructions a method."""
    scope: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    parameters, body, defaulted = [], [], False
    for record_field in record_fields:
        name = record_field.name
        value = name
        if record_field.default_factory is not _MISSING:
            scope[f"_factory_{name}"] = record_field.default_factory
            parameters.append(f"{name}=_MISSING")
            value = f"_factory_{name}() if {name} is _MISSING else {name}"
            defaulted = True
        elif record_field.default is not _MISSING:
            scope[f"_default_{name}"] = record_field.default
            parameters.append(f"{name}=_default_{name}")
            defaulted = True
        elif defaulted:
            raise TypeError(f"{qualname}: non-default argument {name!r} follows default argument")
        else:
            parameters.append(name)
        body.append(f"    _set(self, {name!r}, {value})" if frozen else f"    self.{name} = {value}")
    exec("\n".join([f"def __init__(self, {', '.join(parameters)}):", *(body or ["    pass"])]), scope)
    return scope["__init__"]


def _eq(compared: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return [getattr(self, name) for name in compared] == [getattr(other, name) for name in compared]

    return __eq__


def _repr(shown: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        fields_shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({fields_shown})"

    return __repr__


def _frozen_methods(names: tuple[str, ...], compared: tuple[str, ...]) -> dict[str, Any]:
    def __hash__(self: Any) -> int:
        return hash(tuple([getattr(self, name) for name in compared]))

    def __setattr__(self: Any, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    # Pickling restores slots through `__setattr__` by default, which a frozen record refuses.
    def __getstate__(self: Any) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in names])

    def __setstate__(self: Any, state: tuple[Any, ...]) -> None:
        for name, value in zip(names, state):
            object.__setattr__(self, name, value)

    return {"__hash__": __hash__, "__setattr__": __setattr__, "__delattr__": __delattr__,
            "__getstate__": __getstate__, "__setstate__": __setstate__}
