"""What the pods/eviction subresource answers about the request itself, as kube-apiserver's
create handler and EvictionREST do: the body's kind and name, the preconditions' messages."""

import itertools

import httpx
import pytest

PODS = "/api/v1/namespaces/default/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}
_names = itertools.count()


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def running_pod(api):
    name = f"req-{next(_names)}"
    body = {
        "metadata": {"name": name},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    created = api.post(PODS, json=body)
    assert created.status_code == 201
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    patched = api.patch(f"{PODS}/{name}/status", json={"status": status}, headers=MERGE)
    assert patched.status_code == 200
    return patched.json()


def eviction(name, **fields):
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}, **fields}


def test_a_uid_precondition_for_another_pod_says_it_was_recreated(api):
    pod = running_pod(api)
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    body = eviction(name, deleteOptions={"preconditions": {"uid": "abc"}})
    refused = api.post(f"{PODS}/{name}/eviction", json=body)
    assert refused.status_code == 409
    assert refused.json()["message"] == (
        f'Operation cannot be fulfilled on Pod "{name}": the UID in the precondition (abc) '
        f"does not match the UID in record ({uid}). The object might have been deleted and "
        "then recreated"
    )
    assert api.get(f"{PODS}/{name}").status_code == 200


def _refusal(api, name, body):
    refused = api.post(f"{PODS}/{name}/eviction", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["reason"] == "BadRequest"
    assert "deletionTimestamp" not in api.get(f"{PODS}/{name}").json()["metadata"]
    return refused.json()["message"]


def test_an_eviction_for_another_pod_is_refused(api):
    name = running_pod(api)["metadata"]["name"]
    other = running_pod(api)["metadata"]["name"]
    message = _refusal(api, name, eviction(other))
    assert message == "name in URL does not match name in Eviction object"
    assert _refusal(api, name, {"apiVersion": "policy/v1", "kind": "Eviction"}) == message
    assert "deletionTimestamp" not in api.get(f"{PODS}/{other}").json()["metadata"]


def test_a_body_that_is_not_an_eviction_is_refused(api):
    pod = running_pod(api)
    name = pod["metadata"]["name"]
    # The decoder makes a Pod of it, which does not convert to an Eviction; a kind the
    # version does not have is not registered (transformDecodeError's words for both).
    assert _refusal(api, name, {**pod, "apiVersion": "v1", "kind": "Pod"}) == (
        'Pod in version "v1" cannot be handled as a Eviction: converting (v1.Pod) to '
        "(policy.Eviction): unknown conversion"
    )
    assert _refusal(api, name, {**eviction(name), "apiVersion": "apps/v1"}) == (
        'Eviction in version "v1" cannot be handled as a Eviction: no kind "Eviction" is '
        'registered for version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'
    )
    assert _refusal(api, name, {**eviction(name), "kind": "Evictions"}) == (
        'Evictions in version "v1" cannot be handled as a Eviction: no kind "Evictions" is '
        'registered for version "policy/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'
    )
    other_namespace = eviction(name)
    other_namespace["metadata"]["namespace"] = "kube-system"
    assert _refusal(api, name, other_namespace) == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


@pytest.mark.parametrize(
    "type_meta",
    [{"apiVersion": "policy/v1beta1", "kind": "Eviction"}, {}, {"kind": "Eviction"}],
)
def test_v1beta1_and_an_eviction_without_type_meta_are_accepted(api, type_meta):
    name = running_pod(api)["metadata"]["name"]
    body = {**type_meta, "metadata": {"name": name, "namespace": "default"}}
    evicted = api.post(f"{PODS}/{name}/eviction", json=body)
    assert evicted.status_code == 201, evicted.text
    assert api.get(f"{PODS}/{name}").json()["metadata"]["deletionTimestamp"]
