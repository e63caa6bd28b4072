"""Field errors in the shape of Kubernetes' ``k8s.io/apimachinery/pkg/util/validation/field``.

A validation function returns a list of :class:`FieldError`. Each error knows its path
(``spec.tolerations[0].operator``), its type (``Unsupported value``), the rejected value and a
detail, and renders exactly as the Kubernetes API server does, e.g.::

    spec.tolerations[0].operator: Unsupported value: "Foo": supported values: "Equal", "Exists"

The API server turns a list of them into a 422 ``Status`` whose causes carry ``reason``
(``FieldValueInvalid`` …), ``message`` (the body without the path) and ``field`` (the path).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from taintplane.api.gofmt import GoStruct, go_json, go_quote

__all__ = ["ErrorType", "FieldError", "Path", "aggregate_message"]


class ErrorType(enum.Enum):
    """The error types of ``field.ErrorType``: (Status cause reason, message prefix)."""

    NOT_FOUND = ("FieldValueNotFound", "Not found")
    REQUIRED = ("FieldValueRequired", "Required value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    INTERNAL = ("InternalError", "Internal error")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")

    @property
    def reason(self) -> str:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


# Error types whose message never shows the rejected value.
_VALUELESS = {
    ErrorType.REQUIRED,
    ErrorType.FORBIDDEN,
    ErrorType.TOO_LONG,
    ErrorType.INTERNAL,
}

_OMIT = object()


@dataclass(frozen=True, slots=True)
class Path:
    """A field path such as ``spec.tolerations[0].key`` (``field.Path``)."""

    parts: tuple[str, ...] = ()

    @classmethod
    def root(cls, *names: str) -> Path:
        path = cls()
        for name in names:
            path = path.child(name)
        return path

    def child(self, name: str, *more: str) -> Path:
        parts = self.parts
        if not more:  # the usual call: one name (validation builds a path per field)
            return Path((*parts, "." + name) if parts else (name,))
        grown = [*parts]
        for part in (name, *more):
            grown.append(("." + part) if grown else part)
        return Path(tuple(grown))

    def index(self, i: int) -> Path:
        return Path((*self.parts, f"[{i}]"))

    def key(self, k: str) -> Path:
        return Path((*self.parts, f"[{k}]"))

    def __str__(self) -> str:
        return "".join(self.parts)

    def json_path(self) -> str:
        """The path with indices removed, as Go's JSON decoder names struct fields."""
        return "".join(p for p in self.parts if not p.startswith("["))


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure, rendered exactly like ``field.Error.Error()``."""

    type: ErrorType
    field: str
    bad_value: object = _OMIT
    detail: str = ""

    @property
    def body(self) -> str:
        """The message without the field path (what a Status cause's ``message`` carries)."""
        if self.type in _VALUELESS or self.bad_value is _OMIT:
            text = self.type.text
        else:
            text = f"{self.type.text}: {_render_bad_value(self.bad_value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"

    # Constructors named after the upstream helpers.
    @classmethod
    def invalid(cls, path: Path, value: object, detail: str) -> FieldError:
        return cls(ErrorType.INVALID, str(path), value, detail)

    @classmethod
    def required(cls, path: Path, detail: str = "") -> FieldError:
        return cls(ErrorType.REQUIRED, str(path), _OMIT, detail)

    @classmethod
    def forbidden(cls, path: Path, detail: str) -> FieldError:
        return cls(ErrorType.FORBIDDEN, str(path), _OMIT, detail)

    @classmethod
    def duplicate(cls, path: Path, value: object, detail: str = "") -> FieldError:
        return cls(ErrorType.DUPLICATE, str(path), value, detail)

    @classmethod
    def not_supported(cls, path: Path, value: object, valid: Iterable[str]) -> FieldError:
        quoted = [go_quote(v) for v in valid]
        detail = ("supported values: " + ", ".join(quoted)) if quoted else ""
        return cls(ErrorType.NOT_SUPPORTED, str(path), value, detail)


def _render_bad_value(value: object) -> str:
    # field.Error.ErrorBody: nil becomes the string "null" (so it prints quoted), numbers and
    # booleans print bare, strings quoted, and anything composite as JSON.
    if value is None:
        return go_quote("null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, GoStruct):
        return value.to_json()
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return go_json(dict(sorted(value.items())))  # a Go map: encoding/json sorts its keys
    if isinstance(value, dict | list):
        return go_json(value)  # a struct or list decoded from JSON: its own order
    raise TypeError(f"no Go rendering for {type(value).__name__}")


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """``ErrorList.ToAggregate().Error()``: one error bare, several in ``[a, b]``."""
    messages: list[str] = []
    for error in errors:
        text = str(error)
        if text not in messages:
            messages.append(text)
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"
