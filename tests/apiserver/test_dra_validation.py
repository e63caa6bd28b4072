"""resource.k8s.io validation through the API: upstream's field paths and exact messages."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
RULES = "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
EFFECTS = 'supported values: "NoExecute", "NoSchedule", "None"'


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def slice_(
    name: str = "s", devices: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": "gpu.example.com",
        "nodeName": "node-1",
        "pool": {"name": "node-1", "resourceSliceCount": 1},
        "devices": devices if devices is not None else [{"name": "gpu-0"}],
    }
    body.update(spec)
    return {"metadata": {"name": name}, "spec": {k: v for k, v in body.items() if v is not None}}


def rule(name: str = "r", **taint: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com"},
            "taint": {"key": "example.com/overheating", "effect": "NoSchedule", **taint},
        },
    }


def claim(name: str = "c", tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.example.com"}
    if tolerations is not None:
        exactly["tolerations"] = tolerations
    return {
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def taints(n: int) -> list[dict[str, str]]:
    return [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(n)]


def invalid(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    return str(response.json()["message"]).split(" is invalid: ", 1)[1]


CASES = [
    (
        "PreferNoSchedule is not a device taint effect",
        SLICES,
        slice_(devices=[{"name": "gpu-0", "taints": [{"key": "a", "effect": "PreferNoSchedule"}]}]),
        f'spec.devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": {EFFECTS}',
    ),
    (
        "a taint needs an effect",
        SLICES,
        slice_(devices=[{"name": "gpu-0", "taints": [{"key": "a"}]}]),
        "spec.devices[0].taints[0].effect: Required value",
    ),
    (
        "taint keys are label names, values label values",
        SLICES,
        slice_(
            devices=[{"name": "gpu-0", "taints": [{"key": "a b", "value": "-", "effect": "None"}]}]
        ),
        '[spec.devices[0].taints[0].key: Invalid value: "a b": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), spec.devices[0].taints[0].value: Invalid "
        'value: "-": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')]",
    ),
    (
        "at most 16 taints per device",
        SLICES,
        slice_(devices=[{"name": "gpu-0", "taints": taints(17)}]),
        "spec.devices[0].taints: Too many: 17: must have at most 16 items",
    ),
    (
        "at most 64 devices when any device has taints",
        SLICES,
        slice_(
            devices=[{"name": f"gpu-{i}"} for i in range(64)] + [{"name": "x", "taints": taints(1)}]
        ),
        "spec.devices: Too many: 65: must have at most 64 items",
    ),
    (
        "at most 128 devices without taints",
        SLICES,
        slice_(devices=[{"name": f"gpu-{i}"} for i in range(129)]),
        "spec.devices: Too many: 129: must have at most 128 items",
    ),
    (
        "driver and pool are required",
        SLICES,
        slice_(driver=None, pool={"resourceSliceCount": 1}),
        '[spec.driver: Required value, spec.driver: Invalid value: "": a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
        "spec.pool.name: Required value]",
    ),
    (
        "a slice says which nodes reach it",
        SLICES,
        slice_(nodeName=None),
        "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
        "`perDeviceNodeSelection` is required",
    ),
    (
        "and only one way",
        SLICES,
        slice_(allNodes=True),
        'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
        "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields "
        "are set",
    ),
    (
        "device names are unique",
        SLICES,
        slice_(devices=[{"name": "gpu-0"}, {"name": "gpu-0"}]),
        'spec.devices[1]: Duplicate value: "gpu-0"',
    ),
    (
        "a rule's taint effect",
        RULES,
        rule(effect="PreferNoSchedule"),
        f'spec.taint.effect: Unsupported value: "PreferNoSchedule": {EFFECTS}',
    ),
    (
        "a rule's selector names a device as a DNS label",
        RULES,
        {
            "metadata": {"name": "r"},
            "spec": {
                "deviceSelector": {"device": "GPU_0"},
                "taint": {"key": "a", "effect": "None"},
            },
        },
        'spec.deviceSelector.device: Invalid value: "GPU_0": a lowercase RFC 1123 label must '
        "consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ),
    (
        "toleration operators",
        CLAIMS,
        claim(tolerations=[{"key": "a", "operator": "Lt", "value": "1"}]),
        'spec.devices.requests[0].exactly.tolerations[0].operator: Unsupported value: "Lt": '
        'supported values: "Equal", "Exists"',
    ),
    (
        "Exists takes no value",
        CLAIMS,
        claim(tolerations=[{"key": "a", "operator": "Exists", "value": "x"}]),
        'spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "x": must be '
        "empty for operator `Exists`",
    ),
    (
        "toleration effects",
        CLAIMS,
        claim(tolerations=[{"operator": "Exists", "effect": "PreferNoSchedule"}]),
        "spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: "
        f'"PreferNoSchedule": {EFFECTS}',
    ),
    (
        "a request is exactly or firstAvailable",
        CLAIMS,
        {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "gpu"}]}}},
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` "
        "is required",
    ),
    (
        "a template's claim spec",
        TEMPLATES,
        {
            "metadata": {"name": "t"},
            "spec": {
                "spec": claim(tolerations=[{"key": "a", "operator": "Exists", "value": "x"}])[
                    "spec"
                ]
            },
        },
        'spec.spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "x": must '
        "be empty for operator `Exists`",
    ),
    (
        "a class's selectors need CEL",
        CLASSES,
        {"metadata": {"name": "gpu.example.com"}, "spec": {"selectors": [{}]}},
        "spec.selectors[0].cel: Required value",
    ),
]


@pytest.mark.parametrize(("what", "path", "body", "message"), CASES, ids=[c[0] for c in CASES])
def test_refused_with_upstream_messages(api, what, path, body, message):
    assert invalid(api.post(path, json=body)) == message


def test_64_tainted_devices_and_16_taints_are_accepted(api):
    devices = [{"name": f"gpu-{i}", "taints": taints(16 if i == 0 else 1)} for i in range(64)]
    created = api.post(SLICES, json=slice_("full", devices=devices))
    assert created.status_code == 201, created.text
    api.delete(f"{SLICES}/full")


def test_more_than_16_tolerations_are_accepted_as_in_1_35(api, kubectl):
    """1.35 checks each device toleration but not their number (the docs' "at most 16" is
    not enforced), in requests, subrequests and templates alike."""
    many = [{"key": f"k{i}", "operator": "Exists"} for i in range(17)]
    created = api.post(CLAIMS, json=claim("many", tolerations=many))
    assert created.status_code == 201, created.text
    assert len(created.json()["spec"]["devices"]["requests"][0]["exactly"]["tolerations"]) == 17
    sub = {"name": "a", "deviceClassName": "gpu.example.com", "tolerations": many}
    spec = {"devices": {"requests": [{"name": "gpu", "firstAvailable": [sub]}]}}
    template = {"metadata": {"name": "many"}, "spec": {"spec": spec}}
    assert api.post(TEMPLATES, json=template).status_code == 201
    manifest = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **claim("kc", many)}
    out = kubectl("create", "-f", "-", stdin=json.dumps(manifest))
    assert out.strip() == "resourceclaim.resource.k8s.io/kc created"


def test_time_added_is_set_on_create_and_update(api, cluster):
    created = api.post(
        SLICES, json=slice_("timed", devices=[{"name": "gpu-0", "taints": taints(1)}])
    )
    assert created.status_code == 201, created.text
    stamp = created.json()["spec"]["devices"][0]["taints"][0]["timeAdded"]
    assert stamp.endswith("Z")
    assert len(stamp) == len("2026-01-01T00:00:00Z")
    body = created.json()
    body["spec"]["devices"][0]["taints"].append({"key": "new", "effect": "NoExecute"})
    updated = api.put(f"{SLICES}/timed", json=body).json()
    assert updated["metadata"]["generation"] == 2
    added = updated["spec"]["devices"][0]["taints"]
    assert added[0]["timeAdded"] == stamp
    assert added[1]["timeAdded"]


def test_rule_time_added_follows_the_effect(api):
    created = api.post(RULES, json=rule("follow", effect="None", timeAdded="2020-01-01T00:00:00Z"))
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["taint"]["timeAdded"] == "2020-01-01T00:00:00Z"
    assert created.json()["status"] == {}
    patch = {"spec": {"taint": {"effect": "NoExecute"}}}
    headers = {"Content-Type": "application/merge-patch+json"}
    changed = api.patch(f"{RULES}/follow", json=patch, headers=headers).json()
    assert changed["spec"]["taint"]["timeAdded"] != "2020-01-01T00:00:00Z"
    assert changed["metadata"]["generation"] == 2
    # A new time given with the change is kept.
    patch = {"spec": {"taint": {"effect": "NoSchedule", "timeAdded": "2021-01-01T00:00:00Z"}}}
    kept = api.patch(f"{RULES}/follow", json=patch, headers=headers).json()
    assert kept["spec"]["taint"]["timeAdded"] == "2021-01-01T00:00:00Z"


def test_devices_with_unchanged_taints_stay_updatable(api):
    body = slice_("ratchet", devices=[{"name": "gpu-0", "taints": taints(1)}])
    created = api.post(SLICES, json=body).json()
    stored = copy.deepcopy(created)
    stored["spec"]["devices"].append({"name": "gpu-1"})
    assert api.put(f"{SLICES}/ratchet", json=stored).status_code == 200


def test_rule_status_conditions(api):
    api.post(RULES, json=rule("status"))
    current = api.get(f"{RULES}/status").json()
    condition = {
        "type": "EvictionInProgress",
        "status": "Maybe",
        "reason": "",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    current["status"] = {"conditions": [condition]}
    refused = api.put(f"{RULES}/status/status", json=current)
    assert invalid(refused) == (
        '[status.conditions[0].status: Unsupported value: "Maybe": supported values: '
        '"False", "True", "Unknown", status.conditions[0].reason: Required value: must be set]'
    )
    current["status"] = {"conditions": [{**condition, "status": "False", "reason": "NoEffect"}]}
    assert api.put(f"{RULES}/status/status", json=current).status_code == 200


def test_claim_spec_is_immutable(api):
    created = api.post(CLAIMS, json=claim("frozen")).json()
    created["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    message = invalid(api.put(f"{CLAIMS}/frozen", json=created))
    assert message.startswith("spec: Invalid value: ")
    assert message.endswith("field is immutable")
