"""The node ``Taint`` value type (``core/v1 Taint``) and its wire form.

A taint is ``key[=value]:effect`` with an optional ``timeAdded``. Taints are identified by
``(key, effect)``: a node may not carry two taints with the same pair, and ``kubectl taint``
overwrites and removes by that pair.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from taintplane.api.decoding import DecodeError, format_time, optional_str, optional_time
from taintplane.api.field import Path
from taintplane.api.gofmt import GoStruct

__all__ = ["Taint", "TaintEffect", "parse_taints", "taints_to_list"]


class TaintEffect(enum.StrEnum):
    """The effects a taint can have. ``Taint.effect`` is a plain ``str`` so that unknown
    effects survive parsing and reach validation, which names them in its error."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""
    time_added: datetime | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: Path | None = None) -> Taint:
        """Parse one element of ``spec.taints``; wrong JSON types raise :class:`DecodeError`."""
        path = path if path is not None else Path.root("taint")
        if not isinstance(data, Mapping):
            raise DecodeError.wrong_type(data, "NodeSpec", path, "v1.Taint")
        return cls(
            key=optional_str(data, "key", "Taint", path),
            value=optional_str(data, "value", "Taint", path),
            effect=optional_str(data, "effect", "Taint", path),
            time_added=optional_time(data, "timeAdded", "Taint", path),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON Kubernetes writes: ``key`` and ``effect`` always, the rest when set."""
        out: dict[str, Any] = {"key": self.key}
        if self.value:
            out["value"] = self.value
        out["effect"] = self.effect
        if self.time_added is not None:
            out["timeAdded"] = format_time(self.time_added)
        return out

    def matches(self, other: Taint) -> bool:
        """``MatchTaint``: same key and effect (the identity of a taint on a node)."""
        return self.key == other.key and self.effect == other.effect

    def to_string(self) -> str:
        """``Taint.ToString``: ``key=value:effect`` with empty parts left out."""
        if not self.effect:
            return self.key if not self.value else f"{self.key}={self.value}:"
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"

    def __str__(self) -> str:
        return self.to_string()

    def go_value(self) -> GoStruct:
        """How a field error prints this taint (JSON of the internal ``core.Taint``)."""
        added = None if self.time_added is None else format_time(self.time_added)
        return GoStruct(
            (
                ("Key", self.key),
                ("Value", self.value),
                ("Effect", self.effect),
                ("TimeAdded", added),
            )
        )


def parse_taints(items: object, path: Path) -> list[Taint]:
    """Parse a ``taints`` list (``null`` or absent reads as empty)."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise DecodeError.wrong_type(items, "NodeSpec", path, "[]v1.Taint")
    return [Taint.from_dict(item, path.index(i)) for i, item in enumerate(items)]


def taints_to_list(taints: Iterable[Taint]) -> list[dict[str, Any]]:
    return [taint.to_dict() for taint in taints]
