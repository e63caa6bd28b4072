"""Generate ``src/taintplane/apiserver/openapi_schemas.json`` from the official Python client.

The kubernetes Python client (v35, generated from Kubernetes 1.35's OpenAPI) carries, for every
API type, its fields, their types, whether they are required and their descriptions. This
script turns the types our kinds reach into OpenAPI v3 component schemas, adding the
strategic-merge extensions the client does not carry (from taintplane.apiserver.patch), so
``kubectl apply`` can compute patches and ``kubectl explain`` can describe fields.

The client drops texts kube-apiserver serves: type descriptions, the descriptions of fields
that refer to another type, paragraph breaks (it flattens "\n\n" to "  ") and the
"Possible enum values" suffix (with the ``enum`` list) of fields whose Go type is +enum.
``openapi_descriptions.json`` beside this script holds those texts as Kubernetes 1.35's
OpenAPI carries them (extracted once from published copies of that OpenAPI, committed so
this runs offline); they take precedence over the client's.

Run: .venv/bin/python scripts/gen_openapi_schemas.py   (needs kubernetes==35.*, a dev extra)
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import kubernetes
import kubernetes.client as models

from taintplane.api.scheme import SCHEME
from taintplane.apiserver.patch import MERGE_KEYS, MERGE_PRIMITIVE_LISTS

OUT = Path(__file__).resolve().parents[1] / "src/taintplane/apiserver/openapi_schemas.json"
DESCRIPTIONS = Path(__file__).resolve().with_name("openapi_descriptions.json")

META_TYPES = {
    "ObjectMeta",
    "ListMeta",
    "OwnerReference",
    "ManagedFieldsEntry",
    "Condition",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Status",
    "StatusDetails",
    "StatusCause",
    "DeleteOptions",
    "Preconditions",
    "FieldSelectorRequirement",
}
# core/v1 types that only other groups reach (the client names them without a package).
CORE_TYPES = {"PodTemplateSpec"}
PRIMITIVES = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "object": {},
}
# "V1Toleration", "V1alpha3DeviceTaintRule", or with a package prefix: "CoreV1ResourceClaim".
_CLASS = re.compile(r"^([A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


def description(cls: type, attr: str) -> str:
    doc = getattr(cls, attr).__doc__ or ""
    parts = [p.strip() for p in doc.split("\n\n")]
    if len(parts) < 3:
        return ""
    text = parts[1].replace("  # noqa: E501", "").strip()
    return "" if text.startswith(":return:") else text


def required(cls: type, attr: str) -> bool:
    setter = getattr(cls, attr).fset
    return setter is not None and "must not be `None`" in inspect.getsource(setter)


class Generator:
    def __init__(self, upstream: dict[str, Any]) -> None:
        self.schemas: dict[str, Any] = {}
        self.names: dict[str, str] = {}
        self.upstream = upstream

    def schema_name(self, class_name: str, group: str) -> str:
        match = _CLASS.match(class_name)
        assert match, class_name
        package_prefix, version, kind = match.groups()
        version = version.lower()
        if package_prefix:
            return f"io.k8s.api.{package_prefix.lower()}.{version}.{kind}"
        if kind in META_TYPES and version == "v1":
            return f"io.k8s.apimachinery.pkg.apis.meta.v1.{kind}"
        if kind in CORE_TYPES and version == "v1":
            return f"io.k8s.api.core.v1.{kind}"
        package = (
            (group.split(".")[0] if group else "core")
            if group != "rbac.authorization.k8s.io"
            else "rbac"
        )
        return f"io.k8s.api.{package}.{version}.{kind}"

    def type_schema(self, spec: str, group: str, field: str) -> dict[str, Any]:
        if spec in PRIMITIVES:
            return dict(PRIMITIVES[spec])
        if spec.startswith("list["):
            inner = self.type_schema(spec[5:-1], group, field)
            schema: dict[str, Any] = {"type": "array", "items": inner}
            if field in MERGE_KEYS and "$ref" in json.dumps(inner):
                schema["x-kubernetes-patch-merge-key"] = MERGE_KEYS[field]
                schema["x-kubernetes-patch-strategy"] = "merge"
            elif field in MERGE_PRIMITIVE_LISTS:
                schema["x-kubernetes-patch-strategy"] = "merge"
            return schema
        if spec.startswith("dict("):
            value = spec[5:-1].split(",", 1)[1].strip()
            return {"type": "object", "additionalProperties": self.type_schema(value, group, field)}
        return {"allOf": [{"$ref": f"#/components/schemas/{self.add(spec, group)}"}]}

    def add(self, class_name: str, group: str) -> str:
        if class_name in self.names:
            return self.names[class_name]
        name = self.schema_name(class_name, group)
        self.names[class_name] = name
        cls = getattr(models, class_name)
        upstream = self.upstream.get(name, {})
        upstream_fields = upstream.get("properties", {})
        properties: dict[str, Any] = {}
        needed: list[str] = []
        for attr, spec in cls.openapi_types.items():
            json_name = cls.attribute_map[attr]
            prop = self.type_schema(spec, group, json_name)
            field = upstream_fields.get(json_name, {})
            text = field.get("description") or description(cls, attr)
            if text:
                prop["description"] = text
            if "enum" in field and prop.get("type") == "string":
                prop["enum"] = field["enum"]
            properties[json_name] = prop
            if required(cls, attr):
                needed.append(json_name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if "description" in upstream:
            schema["description"] = upstream["description"]
        if needed:
            schema["required"] = needed
        self.schemas[name] = schema
        return name


def main() -> int:
    if not kubernetes.__version__.startswith("35."):
        print(
            f"needs kubernetes==35.* (Kubernetes 1.35); found {kubernetes.__version__}",
            file=sys.stderr,
        )
        return 1
    generator = Generator(json.loads(DESCRIPTIONS.read_text())["schemas"])
    kinds: dict[str, str] = {}
    for rt in SCHEME:
        prefix = rt.version[0].upper() + rt.version[1:]
        class_name = f"{prefix}{rt.kind}"
        if not hasattr(models, class_name):  # names the client disambiguates: CoreV1Event
            package = rt.group.split(".")[0] if rt.group else "core"
            class_name = f"{package.capitalize()}{class_name}"
        name = generator.add(class_name, rt.group)
        generator.schemas[name]["x-kubernetes-group-version-kind"] = [
            {"group": rt.group, "kind": rt.kind, "version": rt.version}
        ]
        kinds[f"{rt.group}/{rt.version}/{rt.kind}"] = name
        if "list" not in rt.verbs:  # bindings: create only, no list kind
            continue
        list_class = f"{class_name}List"
        if not hasattr(models, list_class):  # ResourceV1ResourceClaim has a V1ResourceClaimList
            list_class = f"{prefix}{rt.kind}List"
        list_name = generator.add(list_class, rt.group)
        generator.schemas[list_name]["x-kubernetes-group-version-kind"] = [
            {"group": rt.group, "kind": rt.list_kind, "version": rt.version}
        ]
        kinds[f"{rt.group}/{rt.version}/{rt.list_kind}"] = list_name
    for extra, group in (
        ("V1Status", ""),
        ("V1DeleteOptions", ""),
        ("V1Eviction", "policy"),
        ("V1Binding", ""),
    ):
        generator.add(extra, group)
    out = {"kubernetes": kubernetes.__version__, "kinds": kinds, "schemas": generator.schemas}
    OUT.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(generator.schemas)} schemas)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
