"""Kubernetes protobuf request bodies: the wire decoder on hand-built bytes, and the bodies the
real kubectl sends (create deployment/pdb/namespace/priorityclass, drain's DELETE fallback)."""

from __future__ import annotations

import contextlib
import json
import struct
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.apiserver.protobuf import ProtobufError, decode
from taintplane.apiserver.protowire import WireError, fields, packed, scalar
from taintplane.sim.cluster import Cluster
from tests.conftest import Kubectl

# ---- a small encoder, for these tests only ----------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def vint(number: int, value: int) -> bytes:
    return key(number, 0) + varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return key(number, 2) + varint(len(data)) + data


def unknown(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = ld(1, api_version) + ld(2, kind)
    return b"k8s\x00" + ld(1, type_meta) + ld(2, raw) + ld(3, b"") + ld(4, b"")


def entry(k: str, v: bytes | str) -> bytes:
    return ld(1, k) + ld(2, v)


# ---- the decoder -------------------------------------------------------------------------------


def test_drain_delete_options_bytes_from_the_contract() -> None:
    body = bytes.fromhex(
        "6b387300 0a130a02 7631120d 44656c65 74654f70 74696f6e 73120208 051a0022 00"
    )
    assert decode(body) == {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 5}


def test_delete_options_zero_grace_is_kept_and_any_group_version_works() -> None:
    raw = vint(1, 0) + ld(2, ld(1, "uid-1")) + ld(4, "Foreground") + ld(5, "All")
    assert decode(unknown("apps/v1", "DeleteOptions", raw)) == {
        "kind": "DeleteOptions",
        "apiVersion": "apps/v1",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "uid-1"},
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }


def test_deployment_as_kubectl_builds_it() -> None:
    zero_time = ld(8, b"")  # a Go value Time at zero: sent, and null in JSON
    meta = ld(1, "web") + ld(2, "") + ld(3, "") + vint(7, 0) + zero_time
    meta += ld(11, entry("app", "web"))
    container = ld(1, "nginx") + ld(2, "nginx") + ld(8, b"") + ld(14, "")
    spec = vint(1, 2) + ld(2, ld(1, entry("app", "web")))
    spec += ld(3, ld(1, zero_time + ld(11, entry("app", "web"))) + ld(2, ld(2, container)))
    spec += ld(4, ld(1, "")) + vint(5, 0)
    body = unknown("apps/v1", "Deployment", ld(1, meta) + ld(2, spec) + ld(3, vint(1, 0)))
    assert decode(body) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web", "creationTimestamp": None, "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]},
            },
            "strategy": {},
        },
        "status": {},
    }


def test_special_types_take_their_json_forms() -> None:
    int_or_percent = vint(1, 1) + vint(2, 0) + ld(3, "25%")
    budget = unknown(
        "policy/v1",
        "PodDisruptionBudget",
        ld(2, ld(1, vint(1, 0) + vint(2, 3)) + ld(3, int_or_percent)),
    )
    assert decode(budget)["spec"] == {"minAvailable": 3, "maxUnavailable": "25%"}
    seconds = 1_700_000_000
    lease = ld(3, vint(1, seconds) + vint(2, 123_456_789)) + vint(2, 40)
    assert decode(unknown("coordination.k8s.io/v1", "Lease", ld(2, lease)))["spec"] == {
        "acquireTime": "2023-11-14T22:13:20.123456Z",
        "leaseDurationSeconds": 40,
    }
    node_status = ld(1, entry("cpu", ld(1, "4"))) + ld(1, entry("memory", ld(1, "8Gi")))
    node = decode(unknown("v1", "Node", ld(3, node_status)))
    assert node["status"] == {"capacity": {"cpu": "4", "memory": "8Gi"}}
    taint = ld(1, "k") + ld(3, "NoExecute") + ld(4, vint(1, seconds))
    node = decode(unknown("v1", "Node", ld(2, ld(5, taint))))
    assert node["spec"]["taints"] == [
        {"key": "k", "effect": "NoExecute", "timeAdded": "2023-11-14T22:13:20Z"}
    ]


def test_raw_extension_fields_v1_bytes_and_negative_numbers() -> None:
    managed = ld(1, "kubectl") + ld(2, "Update") + ld(7, ld(1, b'{"f:metadata":{}}'))
    meta = ld(17, managed) + vint(10, -5)  # deletionGracePeriodSeconds is a pointer: kept
    obj = decode(unknown("v1", "Namespace", ld(1, meta)))
    assert obj["metadata"] == {
        "managedFields": [
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {}}}
        ],
        "deletionGracePeriodSeconds": -5,
    }
    probe = ld(1, ld(2, ld(1, "/healthz") + ld(2, vint(1, 0) + vint(2, 8080))))
    container = ld(1, "c") + ld(10, probe)
    pod = decode(unknown("v1", "Pod", ld(2, ld(2, container))))
    assert pod["spec"]["containers"][0]["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": 8080}
    }
    # structs Go embeds inline (ProbeHandler above, LocalObjectReference, VolumeSource)
    key_ref = ld(3, ld(1, ld(1, "cm")) + ld(2, "k"))  # EnvVarSource.configMapKeyRef
    volume = ld(1, "v") + ld(2, ld(19, ld(1, ld(1, "cm"))))  # Volume{name, configMap{name}}
    env = ld(1, "E") + ld(3, key_ref)
    pod = decode(unknown("v1", "Pod", ld(2, ld(1, volume) + ld(2, ld(1, "c") + ld(7, env)))))
    assert pod["spec"] == {
        "volumes": [{"name": "v", "configMap": {"name": "cm"}}],
        "containers": [
            {
                "name": "c",
                "env": [
                    {"name": "E", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}
                ],
            }
        ],
    }


def test_packed_and_unpacked_repeated_scalars() -> None:
    # PodSecurityContext.supplementalGroups (4): repeated int64, packed or not
    unpacked = vint(4, 1) + vint(4, 2)
    packed_groups = ld(4, varint(3) + varint(1 << 40))
    pod = decode(unknown("v1", "Pod", ld(2, ld(14, unpacked + packed_groups))))
    assert pod["spec"]["securityContext"] == {"supplementalGroups": [1, 2, 3, 1 << 40]}


def test_zero_values_follow_go_json() -> None:
    # PriorityClass.value has no omitempty (kept at 0); globalDefault has (dropped at false)
    body = unknown("scheduling.k8s.io/v1", "PriorityClass", vint(2, 0) + vint(3, 0))
    assert decode(body) == {
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "value": 0,
    }
    # fields newer than our tables are skipped, as Go skips unknown fields
    body = unknown("scheduling.k8s.io/v1", "PriorityClass", vint(99, 7) + ld(98, "x"))
    assert decode(body) == {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"kind":"Pod"}', "does not start with the k8s\\x00 prefix"),
        (unknown("v1", "ConfigMap", b""), "no protobuf decoding for v1, Kind=ConfigMap"),
        (unknown("v1", "", b""), "does not name its kind"),
        (b"k8s\x00" + ld(1, ld(2, "Pod")) + ld(3, "gzip"), "unsupported contentEncoding"),
        (unknown("v1", "Pod", b"\x0a\x05ab"), "truncated length-delimited field"),
        (unknown("v1", "Pod", b"\x0b"), "unsupported wire type 3"),
        (unknown("v1", "Pod", vint(1, 3)), "sent as a scalar"),
        (unknown("v1", "Pod", ld(1, ld(1, b"\xff"))), "not UTF-8"),
        (unknown("v1", "Pod", b"\x80" * 11), "varint"),
    ],
)
def test_malformed_bodies_are_protobuf_errors(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message.replace("\\", "\\\\").replace("(", r"\(")):
        decode(body)


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_fail_otherwise(data: bytes) -> None:
    for body in (b"k8s\x00" + data, unknown("apps/v1", "Deployment", data)):
        with contextlib.suppress(ProtobufError):
            decode(body)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_int64_and_sint64_round_trip(value: int) -> None:
    [(number, wire_type, raw)] = list(fields(vint(3, value)))
    assert (number, scalar("int64", wire_type, raw)) == (3, value)
    zigzag = (value << 1) ^ (value >> 63)
    assert scalar("sint64", 0, next(fields(vint(1, zigzag)))[2]) == value


@given(st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1)), st.text())
def test_packed_int32_and_strings_round_trip(values: list[int], text: str) -> None:
    assert packed("int32", b"".join(varint(v) for v in values)) == values
    [(_, wire_type, raw)] = list(fields(ld(1, text)))
    assert scalar("string", wire_type, raw) == text


def test_fixed_width_scalars() -> None:
    data = key(1, 1) + struct.pack("<d", 1.5) + key(2, 5) + struct.pack("<f", -2.0)
    values = [(n, t, v) for n, t, v in fields(data)]
    assert scalar("double", values[0][1], values[0][2]) == 1.5
    assert scalar("float", values[1][1], values[1][2]) == -2.0
    assert packed("sfixed32", struct.pack("<ii", -1, 7)) == [-1, 7]
    with pytest.raises(WireError):
        packed("fixed64", b"\x00")
    with pytest.raises(WireError):
        packed("string", b"")


# ---- the real kubectl --------------------------------------------------------------------------


def _object(kubectl: Kubectl, *what: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(kubectl("get", *what, "-o", "json"))
    return result


def test_create_deployment_matches_the_json_request(kubectl: Kubectl) -> None:
    assert kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2") == (
        "deployment.apps/web created\n"
    )
    manifest = kubectl(
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
        "--dry-run=client",
        "-o",
        "json",
    )
    as_json = manifest.replace('"web"', '"web-json"')
    assert kubectl("create", "-f", "-", stdin=as_json) == "deployment.apps/web-json created\n"
    applied = manifest.replace('"web"', '"web-apply"')
    assert kubectl("apply", "-f", "-", stdin=applied) == "deployment.apps/web-apply created\n"
    spec = _object(kubectl, "deploy", "web")["spec"]
    assert spec["replicas"] == 2
    assert spec["template"]["spec"]["containers"] == [
        {
            "image": "nginx",
            "imagePullPolicy": "Always",
            "name": "nginx",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    ]
    from_json = json.dumps(_object(kubectl, "deploy", "web-json")["spec"], sort_keys=True)
    assert json.dumps(spec, sort_keys=True) == from_json.replace('"web-json"', '"web"')
    # the template's null creationTimestamp that kubectl sends is not stored (1.35 omits a
    # zero creationTimestamp), so create and apply agree
    from_apply = _object(kubectl, "deploy", "web-apply")["spec"]
    assert "creationTimestamp" not in spec["template"]["metadata"]
    assert json.dumps(spec, sort_keys=True) == json.dumps(from_apply, sort_keys=True).replace(
        '"web-apply"', '"web"'
    )
    assert _object(kubectl, "deploy", "web")["metadata"]["labels"] == {"app": "web"}


def test_create_pdb_namespace_and_priorityclass(kubectl: Kubectl) -> None:
    out = kubectl("create", "pdb", "p", "--selector=app=web", "--min-available=1")
    assert out == "poddisruptionbudget.policy/p created\n"
    assert _object(kubectl, "pdb", "p")["spec"] == {
        "minAvailable": 1,
        "selector": {"matchLabels": {"app": "web"}},
    }
    out = kubectl("create", "pdb", "q", "--selector=app=web", "--max-unavailable=30%")
    assert out == "poddisruptionbudget.policy/q created\n"
    assert _object(kubectl, "pdb", "q")["spec"]["maxUnavailable"] == "30%"
    assert kubectl("create", "namespace", "proto-ns") == "namespace/proto-ns created\n"
    assert _object(kubectl, "namespace", "proto-ns")["metadata"]["name"] == "proto-ns"
    out = kubectl("create", "priorityclass", "zero", "--value=0")
    assert out == "priorityclass.scheduling.k8s.io/zero created\n"
    assert _object(kubectl, "priorityclass", "zero")["value"] == 0
    out = kubectl(
        "create",
        "priorityclass",
        "high",
        "--value=1000",
        "--description=hi",
        "--preemption-policy=Never",
    )
    assert out == "priorityclass.scheduling.k8s.io/high created\n"
    high = _object(kubectl, "priorityclass", "high")
    assert (high["value"], high["description"], high["preemptionPolicy"]) == (1000, "hi", "Never")
    assert "globalDefault" not in high


def test_drain_delete_fallback_sends_protobuf_delete_options(kubectl: Kubectl) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "proto-n1"}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "proto-p1", "namespace": "default"},
        "spec": {"nodeName": "proto-n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(node))
    kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    # gracePeriodSeconds=0 in the protobuf DeleteOptions deletes at once (no kubelet here)
    out = kubectl("drain", "proto-n1", "--disable-eviction", "--force", "--grace-period=0")
    assert out.splitlines()[-2:] == ["pod/proto-p1 deleted", "node/proto-n1 drained"]
    done = kubectl.run("get", "pod", "proto-p1")
    assert done.stderr == 'Error from server (NotFound): pods "proto-p1" not found\n'


def test_bad_protobuf_bodies_are_400_status(cluster: Cluster) -> None:
    headers = {"Content-Type": "application/vnd.kubernetes.protobuf"}
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        for body, message in [
            (unknown("v1", "ConfigMap", b""), "no protobuf decoding for v1, Kind=ConfigMap"),
            (unknown("v1", "Namespace", b"\x0a\x09"), "truncated length-delimited field"),
            (b"junk", "the protobuf body does not start with the k8s\\x00 prefix"),
        ]:
            response = client.post("/api/v1/namespaces", content=body, headers=headers)
            assert response.status_code == 400
            status = response.json()
            assert (status["kind"], status["reason"]) == ("Status", "BadRequest")
            assert status["message"] == f"error decoding protobuf body: {message}"
