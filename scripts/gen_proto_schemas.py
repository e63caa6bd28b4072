"""Generate ``src/taintplane/apiserver/proto_schemas.json`` from ``scripts/proto/*.proto``.

For every message the kinds taintplane serves reach (plus DeleteOptions, Binding, Eviction),
the schema maps field number -> ``[json name, type, mode]`` or ``[json name, value type, "m",
key type]`` for maps. Types are scalar names or fully qualified message names. ``mode`` is
``r`` (repeated), ``p`` (a Go pointer: a zero value sent is kept) or ``v`` (a Go value field:
zero means unset, as ``omitempty`` in JSON) or ``k`` (a Go value field without ``omitempty``:
a zero value is kept, as in JSON) or ``i`` (a struct embedded inline, as Probe's ProbeHandler:
its fields are the parent's in JSON). Kubernetes' proto field names are its JSON names.

Fields are pointers when a file carries gogoproto options and the field is not
``(gogoproto.nullable) = false``; in plain upstream text (no options) every field is a value.
The .proto files do not say which value fields lack ``omitempty``: those are the ones the
OpenAPI schemas (``openapi_schemas.json``, from upstream's) list as required; inline fields
are message fields the parent's OpenAPI schema lacks while it has the inner message's fields.

Run: .venv/bin/python scripts/gen_proto_schemas.py   (offline; see proto_from_kubectl.py)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from taintplane.api.scheme import SCHEME

ROOT = Path(__file__).resolve().parents[1]
PROTO = ROOT / "scripts/proto"
OUT = ROOT / "src/taintplane/apiserver/proto_schemas.json"
OPENAPI = ROOT / "src/taintplane/apiserver/openapi_schemas.json"

META = "k8s.io.apimachinery.pkg.apis.meta.v1"
SCALARS = {
    "double",
    "float",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "sint32",
    "sint64",
    "fixed32",
    "fixed64",
    "sfixed32",
    "sfixed64",
    "bool",
    "string",
    "bytes",
}
#: Kubernetes API groups -> the proto package under k8s.io.api
PACKAGES = {
    "": "core",
    "apps": "apps",
    "policy": "policy",
    "coordination.k8s.io": "coordination",
    "node.k8s.io": "node",
    "scheduling.k8s.io": "scheduling",
    "rbac.authorization.k8s.io": "rbac",
    "events.k8s.io": "events",
    "resource.k8s.io": "resource",
}

_FIELD = re.compile(
    r"^(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(\[(.*)\])?\s*;$"
)
_MAP = re.compile(r"^map\s*<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*(\[.*\])?\s*;$")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse(text: str) -> tuple[str, dict[str, list[tuple[str, ...]]]]:
    """(package, message -> [(number, name, type, mode[, key type])]) of one .proto file."""
    body = _strip_comments(text)
    package = re.search(r"\bpackage\s+([\w.]+)\s*;", body)
    if package is None:
        raise ValueError("no package")
    gogo = "gogoproto." in body
    messages: dict[str, list[tuple[str, ...]]] = {}
    current: list[tuple[str, ...]] | None = None
    for line in (raw.strip() for raw in body.splitlines()):
        if start := re.match(r"^message\s+(\w+)\s*\{$", line):
            current = messages.setdefault(start.group(1), [])
        elif line == "}":
            current = None
        elif current is not None and (field := _FIELD.match(line)):
            label, kind, name, number, _, options = field.groups()
            value = not gogo or "(gogoproto.nullable) = false" in (options or "")
            mode = "r" if label == "repeated" else ("v" if value else "p")
            current.append((number, name, kind, mode))
        elif current is not None and (entry := _MAP.match(line)):
            key, kind, name, number, _ = entry.groups()
            current.append((number, name, kind, "m", key))
        elif current is not None and line:
            raise ValueError(f"cannot parse {line!r}")
    return package.group(1), messages


def _qualify(kind: str, package: str, known: set[str]) -> str:
    if kind in SCALARS:
        return kind
    if kind.startswith("."):
        return kind[1:]
    for candidate in (f"{package}.{kind}", kind):
        if candidate in known:
            return candidate
    raise ValueError(f"unknown type {kind} in {package}")


def load() -> dict[str, list[tuple[str, ...]]]:
    parsed = [parse(path.read_text()) for path in sorted(PROTO.glob("*.proto"))]
    known = {f"{pkg}.{name}" for pkg, messages in parsed for name in messages}
    out: dict[str, list[tuple[str, ...]]] = {}
    for package, messages in parsed:
        for name, fields in messages.items():
            resolved = []
            for number, field_name, kind, mode, *key in fields:
                resolved.append((number, field_name, _qualify(kind, package, known), mode, *key))
            out[f"{package}.{name}"] = resolved
    return out


def roots() -> dict[str, str]:
    """``apiVersion/kind`` -> message, for every kind a request body may carry."""
    kinds: dict[str, str] = {}
    gvks = {(r.group, r.version, r.kind) for r in SCHEME}
    gvks |= {s.kind for r in SCHEME for s in r.subresources if s.kind}
    for group, version, kind in sorted(gvks):
        api_version = f"{group}/{version}" if group else version
        kinds[f"{api_version}/{kind}"] = f"k8s.io.api.{PACKAGES[group]}.{version}.{kind}"
    kinds["v1/DeleteOptions"] = kinds["meta.k8s.io/v1/DeleteOptions"] = f"{META}.DeleteOptions"
    return kinds


def main() -> None:
    messages = load()
    kinds = {}
    for api_kind, message in roots().items():
        if message in messages:
            kinds[api_kind] = message
        else:
            print(f"skipped {api_kind}: no {message} in scripts/proto", file=sys.stderr)
    schema: dict[str, Any] = {"kinds": kinds, "messages": {}}
    openapi = json.loads(OPENAPI.read_text())["schemas"]
    todo = list(kinds.values())
    while todo:
        name = todo.pop()
        if name in schema["messages"]:
            continue
        entries: dict[str, list[str]] = {}
        described = openapi.get("io.k8s." + name.removeprefix("k8s.io."), {})
        required, properties = described.get("required", []), described.get("properties", {})
        for number, field_name, kind, mode, *key in messages[name]:
            if mode == "v" and kind in SCALARS and field_name in required:
                mode = "k"
            inner = {entry[1] for entry in messages.get(kind, [])}
            if mode in "vp" and field_name not in properties and inner & set(properties):
                mode = "i"  # a Go struct embedded inline: its fields are the parent's in JSON
            entries[number] = [field_name, kind, mode, *key]
            if kind in messages:
                todo.append(kind)
        schema["messages"][name] = entries
    schema["messages"] = dict(sorted(schema["messages"].items()))
    OUT.write_text(json.dumps(schema, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(kinds)} kinds, {len(schema['messages'])} messages")


if __name__ == "__main__":
    main()
