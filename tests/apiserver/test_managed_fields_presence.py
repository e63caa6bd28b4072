"""An Update operation owns the maps and structs it created as ".", as structured-merge-diff's
Compare records every path absent before (kubectl create, run and client-side apply)."""

import httpx
import pytest


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def entries(obj):
    return {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def test_kubectl_run_owns_labels_but_not_the_always_encoded_containers(api, kubectl):
    kubectl("run", "presence", "--image=nginx")
    fields = entries(api.get("/api/v1/namespaces/default/pods/presence").json())["kubectl-run"]
    assert fields["f:metadata"] == {"f:labels": {".": {}, "f:run": {}}}
    # spec.containers is encoded (null) in the empty Pod: no "." for the list, one per item.
    containers = fields["f:spec"]["f:containers"]
    assert "." not in containers
    assert containers['k:{"name":"presence"}']["."] == {}


def test_a_label_added_to_an_unlabelled_object_owns_the_map(api, kubectl):
    api.post("/api/v1/nodes", json={"metadata": {"name": "presence"}})
    kubectl("label", "node", "presence", "a=1")
    kubectl("annotate", "node", "presence", "b=2")
    fields = entries(api.get("/api/v1/nodes/presence").json())
    assert fields["kubectl-label"] == {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}
    assert fields["kubectl-annotate"] == {"f:metadata": {"f:annotations": {".": {}, "f:b": {}}}}
