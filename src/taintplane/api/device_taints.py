"""DRA device taints, device tolerations and DeviceTaintRule selectors (KEP-5055).

These follow the node taint types but differ where the KEP says so:

* the effects are ``None``, ``NoSchedule`` and ``NoExecute`` (``PreferNoSchedule`` is not valid);
  a consumer treats an effect it does not know (written by a newer server) like ``None``;
* a toleration tolerates a taint as ``resourceclaim.ToleratesTaint`` does, which is
  ``v1.Toleration.ToleratesTaint`` without ``Lt``/``Gt``: a toleration with an effect matches
  only taints with exactly that effect, so a ``NoExecute`` toleration does not imply
  ``NoSchedule`` (taints are not unique by key and effect across slices and rules);
* a DeviceTaintRule's selector: all set fields must match; the empty selector matches every
  device, no selector matches none.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from taintplane.api.decoding import (
    DecodeError,
    format_time,
    optional_int64,
    optional_str,
    optional_time,
)
from taintplane.api.field import Path

__all__ = [
    "DeviceTaint",
    "DeviceTaintEffect",
    "DeviceTaintSelector",
    "DeviceToleration",
    "DeviceTolerationOperator",
    "parse_device_taints",
    "parse_device_tolerations",
    "rule_selects",
    "untolerated_taints",
]


class DeviceTaintEffect(enum.StrEnum):
    NONE = "None"
    NO_SCHEDULE = "NoSchedule"
    NO_EXECUTE = "NoExecute"


class DeviceTolerationOperator(enum.StrEnum):
    EQUAL = "Equal"
    EXISTS = "Exists"


_KNOWN_EFFECTS = frozenset(e.value for e in DeviceTaintEffect)


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    effect: str
    value: str = ""
    time_added: datetime | None = None

    @classmethod
    def from_dict(cls, data: object, path: Path | None = None) -> DeviceTaint:
        path = path if path is not None else Path.root("taint")
        if not isinstance(data, Mapping):
            raise DecodeError.wrong_type(data, "DeviceTaint", path, "v1.DeviceTaint")
        return cls(
            key=optional_str(data, "key", "DeviceTaint", path),
            value=optional_str(data, "value", "DeviceTaint", path),
            effect=optional_str(data, "effect", "DeviceTaint", path),
            time_added=optional_time(data, "timeAdded", "DeviceTaint", path),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key}
        if self.value:
            out["value"] = self.value
        out["effect"] = self.effect
        if self.time_added is not None:
            out["timeAdded"] = format_time(self.time_added)
        return out

    @property
    def effective_effect(self) -> DeviceTaintEffect:
        """The effect a consumer acts on: an unknown effect counts as ``None``."""
        if self.effect in _KNOWN_EFFECTS:
            return DeviceTaintEffect(self.effect)
        return DeviceTaintEffect.NONE

    def to_string(self) -> str:
        """``key=value:effect`` as ``kubectl taint`` spells a taint."""
        head = f"{self.key}={self.value}" if self.value else self.key
        return f"{head}:{self.effect}" if self.effect else head

    def __str__(self) -> str:
        return self.to_string()


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = DeviceTolerationOperator.EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def from_dict(cls, data: object, path: Path | None = None) -> DeviceToleration:
        path = path if path is not None else Path.root("toleration")
        if not isinstance(data, Mapping):
            raise DecodeError.wrong_type(data, "DeviceToleration", path, "v1.DeviceToleration")
        return cls(
            key=optional_str(data, "key", "DeviceToleration", path),
            operator=optional_str(data, "operator", "DeviceToleration", path),
            value=optional_str(data, "value", "DeviceToleration", path),
            effect=optional_str(data, "effect", "DeviceToleration", path),
            toleration_seconds=optional_int64(data, "tolerationSeconds", "DeviceToleration", path),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.key:
            out["key"] = self.key
        if self.operator:
            out["operator"] = self.operator
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = self.toleration_seconds
        return out

    def tolerates(self, taint: DeviceTaint) -> bool:
        """``resourceclaim.ToleratesTaint``: effect (when set) and key (when set) must be
        equal; ``Exists`` matches any value, ``Equal`` (or no operator) the same value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", DeviceTolerationOperator.EQUAL):
            return self.value == taint.value
        return self.operator == DeviceTolerationOperator.EXISTS


@dataclass(frozen=True, slots=True)
class DeviceTaintSelector:
    """``spec.deviceSelector`` of a DeviceTaintRule: every field that is set must match."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None

    @classmethod
    def from_dict(cls, data: object, path: Path | None = None) -> DeviceTaintSelector | None:
        """``None`` for an absent (or ``null``) selector, which selects no device."""
        path = path if path is not None else Path.root("deviceSelector")
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise DecodeError.wrong_type(
                data, "DeviceTaintRuleSpec", path, "v1alpha3.DeviceTaintSelector"
            )
        fields: dict[str, str | None] = {}
        for name in ("driver", "pool", "device"):
            fields[name] = (
                None
                if data.get(name) is None
                else optional_str(data, name, "DeviceTaintSelector", path)
            )
        return cls(**fields)

    def matches(self, driver: str, pool: str, device: str) -> bool:
        return (
            (self.driver is None or self.driver == driver)
            and (self.pool is None or self.pool == pool)
            and (self.device is None or self.device == device)
        )


def rule_selects(selector: DeviceTaintSelector | None, driver: str, pool: str, device: str) -> bool:
    """Whether a rule with this selector taints the device: no selector selects nothing."""
    return selector is not None and selector.matches(driver, pool, device)


def parse_device_taints(items: object, path: Path) -> list[DeviceTaint]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise DecodeError.wrong_type(items, "Device", path, "[]v1.DeviceTaint")
    return [DeviceTaint.from_dict(item, path.index(i)) for i, item in enumerate(items)]


def parse_device_tolerations(items: object, path: Path) -> list[DeviceToleration]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise DecodeError.wrong_type(items, "ExactDeviceRequest", path, "[]v1.DeviceToleration")
    return [DeviceToleration.from_dict(item, path.index(i)) for i, item in enumerate(items)]


def untolerated_taints(
    taints: Iterable[DeviceTaint],
    tolerations: Sequence[DeviceToleration],
    effect: DeviceTaintEffect,
) -> list[DeviceTaint]:
    """The taints whose (effective) effect is ``effect`` that no toleration tolerates.

    Every taint is checked on its own: two taints with one key and different effects need
    a toleration each (or one without an effect)."""
    return [
        taint
        for taint in taints
        if taint.effective_effect is effect and not any(t.tolerates(taint) for t in tolerations)
    ]
