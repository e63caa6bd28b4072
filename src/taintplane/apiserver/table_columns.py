"""Table primitives: a column, the cell helpers every printer uses, and the Name and Age
columns (``pkg/printers/internalversion``'s conventions)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from taintplane.api.decoding import parse_timestamp

__all__ = [
    "AGE",
    "AGE_DESCRIPTION",
    "NAME",
    "Cell",
    "Column",
    "Obj",
    "count_cell",
    "field_cell",
    "get_path",
    "human_duration",
    "or_none",
    "since",
]

Obj = Mapping[str, Any]
Cell = Callable[[Obj, datetime], object]

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


class Column:
    def __init__(
        self,
        name: str,
        cell: Cell,
        *,
        priority: int = 0,
        type_: str = "string",
        fmt: str = "",
        description: str = "",
    ) -> None:
        self.name, self.cell, self.priority = name, cell, priority
        self.type, self.format = type_, fmt
        self.description = description or name

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if rest == 0 else f"{hours // 24 // 365}y{rest}d"
    return f"{hours // 24 // 365}y"


def since(stamp: object, now: datetime) -> str:
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    then = parse_timestamp(stamp)  # a naive time stored by an older version reads as UTC
    if then is None:
        return "<unknown>"
    return human_duration((now - then).total_seconds())


def _name(obj: Obj, _: datetime) -> object:
    return (obj.get("metadata") or {}).get("name", "")


def _age(obj: Obj, now: datetime) -> object:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


NAME = Column("Name", _name, fmt="name", description=NAME_DESCRIPTION)
AGE = Column("Age", _age, description=AGE_DESCRIPTION)


def get_path(obj: Obj, *path: str, default: object = "") -> Any:
    current: Any = obj
    for part in path:
        if not isinstance(current, Mapping):
            return default
        current = current.get(part)
    return default if current is None else current


def or_none(value: object) -> object:
    return value if value not in (None, "") else "<none>"


def field_cell(*path: str) -> Cell:
    return lambda o, _: get_path(o, *path)


def count_cell(*path: str) -> Cell:
    return lambda o, _: int(get_path(o, *path, default=0) or 0)
