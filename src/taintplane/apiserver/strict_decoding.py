"""What a strict decoder finds in a request body besides its value: duplicate fields.

kube-apiserver decodes JSON with sigs.k8s.io/json's strict mode and YAML with go-yaml, and
reports (as warnings, or under ``fieldValidation=Strict`` as errors) every key a body sets twice:
``duplicate field "spec.paused"`` for JSON, ``line 14: key "paused" already set in map`` for
YAML; for a JSON patch, the operations' own fields (``json patch duplicate field "[1].path"``,
``json patch unknown field "[0].foo"``). The body's value itself is read elsewhere (orjson, which
keeps the last of duplicate keys, as Go does); this second reading runs only where the answer
is used, and costs a few microseconds for a pod.

``DecodeNotes`` carries the findings to ``check_type``, which puts them in kube-apiserver's
order among the unknown fields (test/integration/apiserver/field_validation_test.go).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from taintplane.apiserver.bounded_yaml import BoundedLoader

__all__ = [
    "NO_NOTES",
    "DecodeNotes",
    "json_duplicates",
    "json_patch_problems",
    "notes_for_body",
    "notes_for_patch",
    "yaml_duplicates",
]

#: The fields of a JSON patch operation (RFC 6902).
_PATCH_OP_FIELDS = frozenset({"op", "path", "value", "from"})


@dataclass(frozen=True)
class DecodeNotes:
    """What strict decoding of one body found, for ``check_type``.

    ``inline``: strict paths of duplicate fields, reported where the decoder meets them among
    the unknown fields (a JSON create or update, decoded straight into the typed object).
    ``leading``: problems of the body itself, reported before the unknown fields of the
    decoded object (a patch, a YAML body); ``leading_error`` is how they read inside a strict
    decoding error when that differs from the warnings (go-yaml's multi-line message).
    ``sorted_walk``: the object reached the typed decoder as a Go map re-encoded as JSON, whose
    keys are sorted, so unknown fields are reported in key order at every level.
    """

    inline: frozenset[str] = frozenset()
    leading: tuple[str, ...] = ()
    leading_error: tuple[str, ...] | None = None
    sorted_walk: bool = False

    @property
    def leading_for_error(self) -> tuple[str, ...]:
        return self.leading if self.leading_error is None else self.leading_error


NO_NOTES = DecodeNotes()


# ---- JSON -------------------------------------------------------------------------------


@dataclass
class _Collector:
    """Duplicate paths found inside each decoded object, keyed by the object's id until its
    parent claims them (the object is alive until then: the parser holds it)."""

    inside: dict[int, list[str]] = field(default_factory=dict)

    def claim(self, value: Any, prefix: str) -> list[str]:
        if isinstance(value, dict):
            return [
                f"{prefix}.{path}" if path[0] != "[" else f"{prefix}{path}"
                for path in self.inside.pop(id(value), [])
            ]
        if isinstance(value, list):
            found: list[str] = []
            for i, item in enumerate(value):
                found.extend(self.claim(item, f"{prefix}[{i}]"))
            return found
        return []

    def hook(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        found: list[str] = []
        for key, value in pairs:
            # Document order, as the decoder meets them: what is inside the first value,
            # then the second key, then what is inside the second value.
            if key in obj:
                found.append(key)
            found.extend(self.claim(value, key))
            obj[key] = value
        if found:
            self.inside[id(obj)] = found
        return obj


def json_duplicates(raw: bytes | str) -> list[str]:
    """The strict paths (``spec.template.spec.containers[0].imagePullPolicy``) of the keys
    ``raw`` sets twice in one object, in document order. ``raw`` is valid JSON."""
    collector = _Collector()
    top = json.loads(raw, object_pairs_hook=collector.hook)
    if isinstance(top, dict):
        return collector.inside.pop(id(top), [])
    if isinstance(top, list):
        return collector.claim(top, "")
    return []


class _Pairs(tuple[tuple[str, Any], ...]):
    """A JSON object's fields in document order, duplicates kept (a JSON array stays a list)."""


def json_patch_problems(raw: bytes | str) -> list[str]:
    """Unknown and duplicate fields of a JSON patch's operations (``[0].foo``), as
    kube-apiserver warns of them; duplicates inside the values are not its concern (the
    patch library reads the values loosely)."""
    try:
        ops = json.loads(raw, object_pairs_hook=_Pairs)
    except ValueError:
        return []
    if not isinstance(ops, list):
        return []
    problems: list[str] = []
    for i, op in enumerate(ops):
        if not isinstance(op, _Pairs):
            continue
        seen: set[str] = set()
        for key, _ in op:
            if key not in _PATCH_OP_FIELDS:
                if key not in seen:
                    problems.append(f'json patch unknown field "[{i}].{key}"')
            elif key in seen:
                problems.append(f'json patch duplicate field "[{i}].{key}"')
            seen.add(key)
    return problems


# ---- YAML -------------------------------------------------------------------------------


class _DuplicateKeyLoader(BoundedLoader):
    """A safe loader that records keys a mapping sets twice, with go-yaml's line numbers
    (bounded as the body's own decoding, which reports what is over a limit)."""

    duplicates: list[tuple[int, str]]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            if key in seen:
                line = key_node.start_mark.line + 1
                self.duplicates.append((line, f'line {line}: key "{key}" already set in map'))
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def yaml_duplicates(text: str) -> list[str]:
    """go-yaml's ``line N: key "k" already set in map`` for every key ``text`` sets twice in
    one mapping, by line. ``text`` is valid YAML."""
    loader = _DuplicateKeyLoader(text)
    loader.duplicates = []
    try:
        loader.get_single_data()
    except yaml.YAMLError:
        return []
    finally:
        loader.dispose()
    return [message for _, message in sorted(loader.duplicates)]


def _yaml_error(lines: list[str]) -> str:
    return "yaml: unmarshal errors:\n  " + "\n  ".join(lines)


# ---- per request ------------------------------------------------------------------------


def _is_yaml(content_type: str) -> bool:
    return content_type.endswith("yaml")


def notes_for_body(raw: bytes, content_type: str, field_validation: str) -> DecodeNotes:
    """The notes for a create or an update body (``content_type`` without parameters)."""
    if field_validation == "Ignore" or not raw.strip():
        return NO_NOTES
    try:
        if _is_yaml(content_type):
            lines = yaml_duplicates(raw.decode("utf-8"))
            return DecodeNotes(
                leading=tuple(lines),
                leading_error=(_yaml_error(lines),) if lines else None,
                sorted_walk=True,
            )
        if content_type.endswith("json") or not content_type:
            return DecodeNotes(inline=frozenset(json_duplicates(raw)))
    except (ValueError, UnicodeDecodeError):
        pass  # the body's own decoding reports what is wrong with it
    return NO_NOTES


def notes_for_patch(raw: bytes, content_type: str, field_validation: str) -> DecodeNotes:
    """The notes for a JSON, merge or strategic merge patch: the patch's own problems first,
    then the patched object's unknown fields in key order."""
    if field_validation == "Ignore" or not raw.strip():
        return DecodeNotes(sorted_walk=True)
    try:
        if content_type == "application/json-patch+json":
            return DecodeNotes(leading=tuple(json_patch_problems(raw)), sorted_walk=True)
        duplicates = json_duplicates(raw)
    except (ValueError, UnicodeDecodeError):
        return DecodeNotes(sorted_walk=True)
    return DecodeNotes(
        leading=tuple(f'duplicate field "{path}"' for path in duplicates), sorted_walk=True
    )
