"""Write ``scripts/proto/*.proto`` from the descriptors kubectl carries for upstream's protos.

Every kubectl binary embeds, gzipped, the ``FileDescriptorProto`` of each ``generated.proto``
of k8s.io/api and k8s.io/apimachinery it links (gogo-protobuf registers them). They are
upstream's .proto files compiled: messages, fields, numbers, types and the gogoproto options
(``nullable=false`` marks a Go value field, its absence a pointer), without the comments.
This script prints them back as .proto text, with upstream's license header, for the packages
taintplane serves; ``gen_proto_schemas.py`` reads the result.

Run: .venv/bin/python scripts/proto_from_kubectl.py [path/to/kubectl]   (kubectl v1.32)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

from taintplane.apiserver.protowire import fields

OUT = Path(__file__).resolve().parent / "proto"

FILES = [
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/generated.proto",
    "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
    "k8s.io/apimachinery/pkg/api/resource/generated.proto",
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/api/apps/v1/generated.proto",
    "k8s.io/api/policy/v1/generated.proto",
    "k8s.io/api/coordination/v1/generated.proto",
    "k8s.io/api/node/v1/generated.proto",
    "k8s.io/api/scheduling/v1/generated.proto",
    "k8s.io/api/rbac/v1/generated.proto",
    "k8s.io/api/events/v1/generated.proto",
]

LICENSE = """/*
Copyright The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/
"""

TYPES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64"}
TYPES |= {7: "fixed32", 8: "bool", 9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32"}
TYPES |= {16: "sfixed64", 17: "sint32", 18: "sint64"}
LABELS = {1: "optional", 2: "required", 3: "repeated"}
NULLABLE, CUSTOMNAME = 65001, 65004


def descriptors(binary: bytes) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    pos = binary.find(b"\x1f\x8b\x08")
    while pos >= 0:
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(binary[pos : pos + (1 << 21)])
        except zlib.error:
            data = b""
        if data[:1] == b"\n" and data[2 : 2 + data[1]].endswith(b"generated.proto"):
            found[data[2 : 2 + data[1]].decode()] = data
        pos = binary.find(b"\x1f\x8b\x08", pos + 1)
    return found


def _one(data: bytes) -> dict[int, list[int | bytes]]:
    out: dict[int, list[int | bytes]] = {}
    for number, _, value in fields(data):
        out.setdefault(number, []).append(value)
    return out


def _str(msg: dict[int, list[int | bytes]], number: int, default: str = "") -> str:
    value = msg.get(number, [default.encode()])[-1]
    return value.decode() if isinstance(value, bytes) else str(value)


def _field(raw: bytes, maps: dict[str, tuple[str, str]]) -> str:
    f = _one(raw)
    kind = int(f[5][-1])
    type_name = _str(f, 6) if kind in (11, 14) else TYPES[kind]
    label = LABELS[int(f[4][-1])]
    options = []
    for option_raw in f.get(8, []):
        assert isinstance(option_raw, bytes)
        for number, _, value in fields(option_raw):
            if number == NULLABLE:
                options.append(f"(gogoproto.nullable) = {'true' if value else 'false'}")
            elif number == CUSTOMNAME and isinstance(value, bytes):
                options.append(f'(gogoproto.customname) = "{value.decode()}"')
    suffix = f" [{', '.join(options)}]" if options else ""
    head = f"{label} {type_name}"
    entry = type_name.rsplit(".", 1)[-1]
    if label == "repeated" and entry in maps:
        head = f"map<{maps[entry][0]}, {maps[entry][1]}>"
    return f"  {head} {_str(f, 1)} = {_str(f, 3)}{suffix};"


def _message(raw: bytes) -> str:
    m = _one(raw)
    maps: dict[str, tuple[str, str]] = {}
    for nested in m.get(3, []):
        assert isinstance(nested, bytes)
        entry = _one(nested)
        kv = {}
        for field_raw in entry.get(2, []):
            assert isinstance(field_raw, bytes)
            f = _one(field_raw)
            kind = int(f[5][-1])
            kv[_str(f, 1)] = _str(f, 6) if kind in (11, 14) else TYPES[kind]
        maps[_str(entry, 1)] = (kv["key"], kv["value"])
    lines = [f"message {_str(m, 1)} {{"]
    for field_raw in m.get(2, []):
        assert isinstance(field_raw, bytes)
        lines.append(_field(field_raw, maps))
    return "\n".join([*lines, "}\n"])


def render(name: str, data: bytes, kubectl_version: str) -> str:
    d = _one(data)
    out = [
        LICENSE,
        f"// {name}: reconstructed by scripts/proto_from_kubectl.py from the FileDescriptorProto",
        f"// that kubectl {kubectl_version} embeds (upstream's comments are not part of it).\n",
        'syntax = "proto2";\n',
        f"package {_str(d, 2)};\n",
    ]
    out += [f'import "{dep.decode()}";' for dep in d.get(3, []) if isinstance(dep, bytes)]
    out.append("")
    out += [_message(raw) for raw in d.get(4, []) if isinstance(raw, bytes)]
    return "\n".join(out)


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else shutil.which("kubectl")
    if not path:
        sys.exit("kubectl not found")
    binary = Path(path).read_bytes()
    done = subprocess.run([path, "version", "--client", "-o", "json"], capture_output=True)
    version = json.loads(done.stdout)["clientVersion"]["gitVersion"]
    found = descriptors(binary)
    OUT.mkdir(exist_ok=True)
    for name in FILES:
        target = OUT / (name.removesuffix("/generated.proto").replace("/", "_") + ".proto")
        target.write_text(render(name, found[name], version))
        print(f"wrote {target.relative_to(OUT.parent.parent)}")


if __name__ == "__main__":
    main()
