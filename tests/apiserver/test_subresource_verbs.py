"""Every subresource answers only the verbs kube-apiserver 1.35 installs for it: the others
have no route, a 405 as go-restful's through kube-apiserver's serviceErrorHandler (a generic
Status with empty details, no Allow header), and nothing is read or written.

The table is the scheme itself, so a subresource added later is covered without a new test."""

import itertools
from typing import Any

import httpx
import orjson
import pytest

from taintplane.api.scheme import SCHEME, ResourceType
from taintplane.apiserver.handlers import HANDLED_SUBRESOURCES

PODS = "/api/v1/namespaces/default/pods"
METHODS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
NOT_ALLOWED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server does not allow this method on the requested resource",
    "reason": "MethodNotAllowed",
    "details": {},
    "code": 405,
}
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def _path(resource: ResourceType, name: str, subresource: str) -> str:
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    scope = "/namespaces/default" if resource.namespaced else ""
    return f"{base}{scope}/{resource.plural}/{name}/{subresource}"


def _request(api: httpx.Client, method: str, path: str, body: bytes = b"{}") -> httpx.Response:
    headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
    return api.request(method, path, content=body, headers=headers)


ROUTES = [
    (resource, sub.name, method, verb in sub.verbs)
    for resource in SCHEME
    for sub in resource.subresources
    for method, verb in METHODS.items()
]


@pytest.mark.parametrize(
    ("resource", "subresource", "method", "served"),
    ROUTES,
    ids=[f"{r.plural}/{s}-{m}" for r, s, m, _ in ROUTES],
)
def test_each_subresource_answers_only_its_verbs(api, resource, subresource, method, served):
    response = _request(api, method, _path(resource, "absent", subresource))
    if served:
        # The route exists: whatever the answer (the object is absent), it is not a 405.
        assert response.status_code != 405, response.text
    else:
        assert response.status_code == 405, response.text
        assert response.json() == NOT_ALLOWED
        assert "allow" not in response.headers


def test_every_subresource_in_the_scheme_has_a_handler():
    """A subresource the handlers do not know would be written as an update of the whole
    object: adding one to the scheme must come with its semantics."""
    for resource in SCHEME:
        for sub in resource.subresources:
            assert sub.name in HANDLED_SUBRESOURCES, f"{resource.plural}/{sub.name}"


def _pod(api: httpx.Client) -> dict[str, Any]:
    name = f"sub-{next(_names)}"
    body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    created = api.post(PODS, json=body)
    assert created.status_code == 201, created.text
    pod: dict[str, Any] = created.json()
    return pod


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("subresource", ["binding", "eviction"])
def test_binding_and_eviction_take_only_posts_and_leave_the_pod_alone(api, subresource, method):
    """The issue's rows: PUT …/binding with ``{}`` or an invalid spec stored the body as the
    pod (containers gone, a bogus toleration, an invalid nodeName); PUT …/eviction was a pod
    update; DELETE deleted the pod."""
    pod = _pod(api)
    name = pod["metadata"]["name"]
    bogus = (
        b'{"spec": {"nodeName": "no-such-node!!", "tolerations": [{"operator": "Bogus"}]}}'
        if method != "GET"
        else b""
    )
    for body in (b"{}", bogus):
        response = _request(api, method, f"{PODS}/{name}/{subresource}", body)
        assert response.status_code == 405, response.text
        assert response.json() == NOT_ALLOWED
    after = api.get(f"{PODS}/{name}").json()
    assert after == pod


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_status_is_not_created_or_deleted(api, method):
    pod = _pod(api)
    response = _request(api, method, f"{PODS}/{pod['metadata']['name']}/status")
    assert response.status_code == 405
    assert api.get(f"{PODS}/{pod['metadata']['name']}").json() == pod


def test_scale_and_finalize_refuse_what_they_do_not_serve(api):
    namespace = api.post("/api/v1/namespaces", json={"metadata": {"name": "fin-verbs"}}).json()
    for method in ("GET", "PATCH", "DELETE", "POST"):
        response = _request(api, method, "/api/v1/namespaces/fin-verbs/finalize")
        assert response.status_code == 405, (method, response.text)
    assert api.get("/api/v1/namespaces/fin-verbs").json() == namespace
    for method in ("POST", "DELETE"):
        path = "/apis/apps/v1/namespaces/default/deployments/absent/scale"
        assert _request(api, method, path).status_code == 405


def test_discovery_lists_the_same_verbs(api):
    listed = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert listed["pods/binding"]["verbs"] == ["create"]
    assert listed["pods/eviction"]["verbs"] == ["create"]
    assert listed["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert listed["namespaces/finalize"]["verbs"] == ["update"]


def _binding(name, **fields):
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, **fields}


NODE = {"apiVersion": "v1", "kind": "Node", "name": "n1"}


def test_a_binding_names_the_pod_of_the_url(api):
    """BindingREST.Create: a Binding for another pod, or naming none, is refused."""
    pod = _pod(api)
    name = pod["metadata"]["name"]
    for body in (_binding("other", target=NODE), {"target": NODE}, {}):
        refused = api.post(f"{PODS}/{name}/binding", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json()["message"] == "name in URL does not match name in Binding object"
    elsewhere = {**_binding(name, target=NODE), "metadata": {"name": name, "namespace": "kube"}}
    refused = api.post(f"{PODS}/{name}/binding", json=elsewhere)
    assert refused.json()["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    assert api.get(f"{PODS}/{name}").json() == pod


def test_a_binding_is_validated_as_validate_pod_binding(api):
    pod = _pod(api)
    name = pod["metadata"]["name"]
    refused = api.post(f"{PODS}/{name}/binding", json=_binding(name, target={"kind": "Pod"}))
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["message"] == (
        f'Binding "{name}" is invalid: [target.kind: Unsupported value: "Pod": supported '
        'values: "Node", "<empty>", target.name: Required value]'
    )
    assert [c["field"] for c in body["details"]["causes"]] == ["target.kind", "target.name"]
    numeric = api.post(f"{PODS}/{name}/binding", json=_binding(name, target={"name": 7}))
    assert numeric.status_code == 400
    assert api.get(f"{PODS}/{name}").json() == pod


def test_a_binding_stores_any_target_name_and_the_pod_then_refuses_updates(api):
    """Upstream's ValidatePodBinding asks only for a target name, and setPodNodeAndMetadata
    writes it as spec.nodeName without validating the pod (pkg/registry/core/pod/storage).
    ValidatePodUpdate validates the whole spec again, so an update of the pod is then 422
    on spec.nodeName (it had been stored: found by the fuzz suite); a status write is not
    (ValidatePodStatusUpdate leaves the spec alone)."""
    pod = _pod(api)
    name = pod["metadata"]["name"]
    target = {"kind": "Node", "name": "NoSchedule"}
    bound = api.post(f"{PODS}/{name}/binding", json=_binding(name, target=target))
    assert bound.status_code == 201, bound.text
    assert api.get(f"{PODS}/{name}").json()["spec"]["nodeName"] == "NoSchedule"
    labelled = {"metadata": {"labels": {"a": "b"}}}
    refused = _request(api, "PATCH", f"{PODS}/{name}", orjson.dumps(labelled))
    assert refused.status_code == 422, refused.text
    assert refused.json()["message"] == (
        f'Pod "{name}" is invalid: spec.nodeName: Invalid value: "NoSchedule": a lowercase '
        "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert [c["field"] for c in refused.json()["details"]["causes"]] == ["spec.nodeName"]
    assert "labels" not in api.get(f"{PODS}/{name}").json()["metadata"]
    status = {"status": {"message": "m"}}
    written = _request(api, "PATCH", f"{PODS}/{name}/status", orjson.dumps(status))
    assert written.status_code == 200, written.text


def test_a_dry_run_binding_binds_nothing(api):
    pod = _pod(api)
    name = pod["metadata"]["name"]
    dry = api.post(f"{PODS}/{name}/binding?dryRun=All", json=_binding(name, target=NODE))
    assert dry.status_code == 201, dry.text
    assert api.get(f"{PODS}/{name}").json() == pod


def test_the_legacy_bindings_need_a_pod_name(api):
    refused = api.post("/api/v1/namespaces/default/bindings", json={"target": NODE})
    assert refused.status_code == 400
    assert refused.json()["message"] == "Name parameter required."


def test_an_update_names_its_object(api):
    """The update handler's checkName: a PUT body without a name (``{}`` to a status) is
    refused before anything is read."""
    pod = _pod(api)
    name = pod["metadata"]["name"]
    for path in (f"{PODS}/{name}", f"{PODS}/{name}/status"):
        refused = api.put(path, json={})
        assert refused.status_code == 400, refused.text
        assert refused.json()["message"] == (
            f"the name of the object ({name} based on URL) was undeterminable: "
            "name must be provided"
        )
    assert api.get(f"{PODS}/{name}").json() == pod


def test_a_scale_update_names_its_workload_and_may_pin_its_uid(api):
    """ScaleREST: the update handler's checkName on the Scale, then scaleUpdatedObjectInfo's
    UID precondition (a conflict on deployments/scale)."""
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    template = {
        "selector": {"matchLabels": {"app": "sc"}},
        "template": {
            "metadata": {"labels": {"app": "sc"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    }
    created = api.post(deployments, json={"metadata": {"name": "sc"}, "spec": template})
    assert created.status_code == 201, created.text
    scale = f"{deployments}/sc/scale"
    unnamed = api.put(scale, json={"spec": {"replicas": 3}})
    assert unnamed.status_code == 400
    assert unnamed.json()["message"] == (
        "the name of the object (sc based on URL) was undeterminable: name must be provided"
    )
    other = api.put(scale, json={"metadata": {"name": "other"}, "spec": {"replicas": 3}})
    assert other.json()["message"] == (
        "the name of the object (other) does not match the name on the URL (sc)"
    )
    pinned = {"metadata": {"name": "sc", "uid": "not-it"}, "spec": {"replicas": 3}}
    conflict = api.put(scale, json=pinned)
    assert conflict.status_code == 409
    uid = created.json()["metadata"]["uid"]
    assert conflict.json()["message"] == (
        'Operation cannot be fulfilled on deployments/scale.apps "sc": Precondition failed: '
        f"UID in precondition: not-it, UID in object meta: {uid}"
    )
    assert api.get(f"{deployments}/sc").json()["spec"]["replicas"] == 1
    ok = api.put(scale, json={"metadata": {"name": "sc", "uid": uid}, "spec": {"replicas": 3}})
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("subresource", ["", "/status"])
def test_a_write_cannot_move_its_object(api, subresource):
    """handlers/update.go and patch.go: EnsureObjectNamespaceMatchesRequestNamespace, then
    checkName, on the object to write (the patched one for a patch)."""
    pod = _pod(api)
    at = f"{PODS}/{pod['metadata']['name']}{subresource}"
    merge = {"Content-Type": "application/merge-patch+json"}
    renamed = api.patch(at, json={"metadata": {"name": "elsewhere"}}, headers=merge)
    assert renamed.status_code == 400, renamed.text
    assert renamed.json()["message"] == (
        f"the name of the object (elsewhere) does not match the name on the URL "
        f"({pod['metadata']['name']})"
    )
    moved = api.patch(at, json={"metadata": {"namespace": "kube-system"}}, headers=merge)
    wrong_namespace = (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    assert moved.status_code == 400
    assert moved.json()["message"] == wrong_namespace
    body = {**pod, "metadata": {**pod["metadata"], "namespace": "kube-system"}}
    put = api.put(at, json=body)
    assert put.status_code == 400
    assert put.json()["message"] == wrong_namespace
    assert api.get(f"{PODS}/{pod['metadata']['name']}").json() == pod


def test_a_binding_that_does_not_decode_is_a_bad_request(api):
    pod = _pod(api)
    name = pod["metadata"]["name"]
    refused = api.post(f"{PODS}/{name}/binding", json={"metadata": [], "target": NODE})
    assert refused.status_code == 400
    assert refused.json()["message"] == (
        'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal array '
        "into Go struct field Binding.metadata of type v1.ObjectMeta"
    )
    assert api.get(f"{PODS}/{name}").json() == pod
