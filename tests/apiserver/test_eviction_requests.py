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


def running_pod(api) -> dict:
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
