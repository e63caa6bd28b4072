"""What kube-apiserver 1.35 checks in claims, templates and classes beyond their shape: CEL
selectors compile (validateCELSelector), request references name requests
(validateRequestNameRef), constraints name an attribute, and admin access needs a labelled
namespace (AuthorizedForAdmin)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from taintplane.api.features import FeatureGates
from taintplane.client import resource
from taintplane.clock import VirtualClock
from taintplane.sim.cluster import in_process_cluster
from tests.controllers.harness import START

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
NAMESPACES = "/api/v1/namespaces"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
ADMIN_FORBIDDEN = (
    "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the "
    f"`{ADMIN_LABEL}: true` label on the containing namespace"
)
REF_DETAIL = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
EXPECTING = (
    "{'[', '{', '(', '.', '-', '!', '?', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, "
    "NUM_UINT, STRING, BYTES, IDENTIFIER}"
)


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def request(name: str = "gpu", **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", **exactly}}


def claim(name: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"devices": {"requests": requests, **devices}}}


def selecting(expression: str) -> dict[str, Any]:
    return request(selectors=[{"cel": {"expression": expression}}])


def invalid(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    return str(response.json()["message"]).split(" is invalid: ", 1)[1]


SELECTOR = "spec.devices.requests[0].exactly.selectors[0].cel.expression"

CEL_CASES = [
    (
        "a syntax error",
        "device.attributes[",
        f'{SELECTOR}: Invalid value: "device.attributes[": compilation failed: ERROR: '
        "<input>:1:19: Syntax error: mismatched input '<EOF>' expecting "
        f"{EXPECTING}\n | device.attributes[\n | ..................^",
    ),
    (
        "an undeclared variable",
        "foo == 1",
        f'{SELECTOR}: Invalid value: "foo == 1": compilation failed: ERROR: <input>:1:1: '
        "undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^",
    ),
    (
        "a field the device does not have",
        'device.name == "gpu-0"',
        f'{SELECTOR}: Invalid value: "device.name == \\"gpu-0\\"": compilation failed: ERROR: '
        "<input>:1:7: undefined field 'name'\n | device.name == \"gpu-0\"\n | ......^",
    ),
    (
        "an int result",
        "1",
        f'{SELECTOR}: Invalid value: "1": must evaluate to bool or the unknown type, not int',
    ),
    (
        "a string result",
        "device.driver",
        f'{SELECTOR}: Invalid value: "device.driver": must evaluate to bool or the unknown '
        "type, not string",
    ),
]


@pytest.mark.parametrize(
    ("what", "expression", "message"), CEL_CASES, ids=[c[0] for c in CEL_CASES]
)
def test_selectors_must_compile(api, what, expression, message):
    assert invalid(api.post(CLAIMS, json=claim("c", [selecting(expression)]))) == message


def test_selectors_are_compiled_in_subrequests_templates_and_classes(api):
    sub: dict[str, Any] = {"name": "a", "deviceClassName": "gpu.example.com"}
    sub["selectors"] = [{"cel": {"expression": "foo"}}]
    spec = {"devices": {"requests": [{"name": "gpu", "firstAvailable": [sub]}]}}
    template = {"metadata": {"name": "t"}, "spec": {"spec": spec}}
    assert invalid(api.post(TEMPLATES, json=template)).startswith(
        "spec.spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression: "
        'Invalid value: "foo": compilation failed: ERROR: <input>:1:1: undeclared reference'
    )
    klass = {"metadata": {"name": "bad"}, "spec": {"selectors": [{"cel": {"expression": "1"}}]}}
    assert invalid(api.post(CLASSES, json=klass)) == (
        'spec.selectors[0].cel.expression: Invalid value: "1": must evaluate to bool or the '
        "unknown type, not int"
    )


def test_attribute_values_have_the_unknown_type_and_pass(api):
    """An attribute's value is typed "any" upstream, so a bare one compiles (and fails only
    when evaluated, if not a bool)."""
    for i, expression in enumerate(
        [
            'device.attributes["test.example.com"].numa',
            'device.attributes["gpu.example.com"].all(k, k != "")',
            'cel.bind(a, device.attributes["gpu.example.com"], a.model == "x" && has(a.numa))',
            'device.capacity["gpu.example.com"].memory.compareTo(quantity("1Gi")) >= 0',
            'strings.quote(device.driver) != ""',
        ]
    ):
        created = api.post(CLAIMS, json=claim(f"ok-{i}", [selecting(expression)]))
        assert created.status_code == 201, (expression, created.text)


def test_the_optional_syntax_and_bind_compile_and_costly_selectors_are_forbidden(api):
    """validateCELSelector: a selector whose worst-case cost exceeds
    CELSelectorExpressionMaxCost (1 000 000) is Forbidden; the optional syntax compiles, and
    a syntax error in an expression using it is still reported as one."""
    ok = 'device.attributes["gpu.example.com"].?model.orValue("") == "a100"'
    assert api.post(CLAIMS, json=claim("optional", [selecting(ok)])).status_code == 201
    gpu = 'device.attributes["gpu.example.com"]'
    costly = f"{gpu}.all(a, {gpu}.all(b, {gpu}.all(c, {gpu}.all(d, a != d))))"
    assert invalid(api.post(CLAIMS, json=claim("costly", [selecting(costly)]))) == (
        "spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden: too "
        "complex, exceeds cost limit"
    )
    broken = 'device.attributes["gpu.example.com"].?model.orValue("") =='
    # After an operator, cel-go expects an operand ('?' opens none there).
    after_operator = EXPECTING.replace("'?', ", "")
    assert invalid(api.post(CLAIMS, json=claim("broken", [selecting(broken)]))) == (
        "spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "
        + json.dumps(broken)
        + ": compilation failed: ERROR: <input>:1:59: Syntax error: mismatched input "
        f"'<EOF>' expecting {after_operator}\n | {broken}\n | " + "." * 58 + "^"
    )


def test_unchanged_class_selectors_are_not_compiled_again(api, cluster):
    """A DeviceClass stored with a selector the check now refuses (written before it
    existed) stays updatable while its selectors are unchanged."""
    klass = {
        "metadata": {"name": "old"},
        "spec": {"selectors": [{"cel": {"expression": "true"}}]},
    }
    created = api.post(CLASSES, json=klass)
    assert created.status_code == 201, created.text
    body = created.json()
    body["spec"]["selectors"][0]["cel"]["expression"] = "foo == 1"
    assert invalid(api.put(f"{CLASSES}/old", json=body)).startswith(
        'spec.selectors[0].cel.expression: Invalid value: "foo == 1": compilation failed'
    )
    body = api.get(f"{CLASSES}/old").json()
    body["metadata"]["labels"] = {"a": "b"}
    assert api.put(f"{CLASSES}/old", json=body).status_code == 200


def test_request_references_must_name_requests(api):
    sub = {"name": "a", "deviceClassName": "gpu.example.com"}
    requests = [request("gpu"), {"name": "alt", "firstAvailable": [sub]}]
    constraints = [
        {"requests": ["gpu", "alt/a", "nope", "alt/b", "a/b/c", "gpu"], "matchAttribute": "d/x"},
        {},
        {"matchAttribute": "numa"},
    ]
    config = [{"requests": ["gpu/a", "Bad"], "opaque": {"driver": "d.example", "parameters": {}}}]
    message = invalid(
        api.post(CLAIMS, json=claim("refs", requests, constraints=constraints, config=config))
    )
    label = (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )
    assert message == (
        "["
        f'spec.devices.constraints[0].requests[2]: Invalid value: "nope": {REF_DETAIL}, '
        f'spec.devices.constraints[0].requests[3]: Invalid value: "alt/b": {REF_DETAIL}, '
        f'spec.devices.constraints[0].requests[4]: Invalid value: "a/b/c": {REF_DETAIL}, '
        'spec.devices.constraints[0].requests[5]: Duplicate value: "gpu", '
        "spec.devices.constraints[1].matchAttribute: Required value, "
        'spec.devices.constraints[2].matchAttribute: Invalid value: "numa": a fully qualified '
        "name must be a domain and a name separated by a slash, "
        f'spec.devices.config[0].requests[0]: Invalid value: "gpu/a": {REF_DETAIL}, '
        f'spec.devices.config[0].requests[1]: Invalid value: "Bad": {label}, '
        f'spec.devices.config[0].requests[1]: Invalid value: "Bad": {REF_DETAIL}'
        "]"
    )


def test_too_many_constraints(api):
    constraints = [{"matchAttribute": "d.example/x"}] * 33
    assert invalid(api.post(CLAIMS, json=claim("many", [request()], constraints=constraints))) == (
        "spec.devices.constraints: Too many: 33: must have at most 32 items"
    )


def test_admin_access_needs_the_namespace_label(api):
    adm = claim("adm", [request(adminAccess=True)])
    assert invalid(api.post(CLAIMS, json=adm)) == ADMIN_FORBIDDEN
    template = {"metadata": {"name": "adm"}, "spec": {"spec": adm["spec"]}}
    # Upstream names the request without the template's extra "spec." (AuthorizedForAdmin
    # builds the path itself).
    assert invalid(api.post(TEMPLATES, json=template)) == ADMIN_FORBIDDEN
    # adminAccess: false asks for nothing.
    assert api.post(CLAIMS, json=claim("plain", [request(adminAccess=False)])).status_code == 201

    ns = {"metadata": {"name": "admins", "labels": {ADMIN_LABEL: "true"}}}
    assert api.post(NAMESPACES, json=ns).status_code == 201
    created = api.post(CLAIMS.replace("/default/", "/admins/"), json=adm)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True
    created = api.post(TEMPLATES.replace("/default/", "/admins/"), json=template)
    assert created.status_code == 201, created.text


def test_kubectl_reports_the_admin_access_refusal(kubectl):
    manifest = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        **claim("kadm", [request(adminAccess=True)]),
    }
    done = kubectl.run("create", "-f", "-", stdin=json.dumps(manifest))
    assert done.returncode == 1
    assert done.stderr.strip() == f'The ResourceClaim "kadm" is invalid: {ADMIN_FORBIDDEN}'


CLAIM_RESOURCE = resource("resource.k8s.io", "v1", "resourceclaims")


def test_with_admin_access_off_the_field_is_dropped(tmp_path: Path) -> None:
    """DRAAdminAccess off: adminAccess is dropped on create, so no label is needed."""

    async def main() -> None:
        clock = VirtualClock(START)
        gates = FeatureGates.parse("DRAAdminAccess=false")
        async with in_process_cluster(tmp_path, clock, components=(), features=gates) as cluster:
            body = claim("adm", [request(adminAccess=True)])
            body["metadata"]["namespace"] = "default"
            assert cluster.client is not None
            created = await cluster.client.create(CLAIM_RESOURCE, body, namespace="default")
            assert "adminAccess" not in created["spec"]["devices"]["requests"][0]["exactly"]

    asyncio.run(main())
