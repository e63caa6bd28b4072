"""Field selectors on events.k8s.io/v1 Events: the labels of that version, converted to the
stored core/v1 ones as pkg/apis/events/v1 AddFieldLabelConversionsForEvent does; any other
label is a 400 "field label not supported"."""

import json

import httpx
import pytest

EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/sel/events"


def _event(name, regarding, reason="FailedScheduling", type_="Warning", **extra):
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-03-01T12:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-h",
        "action": "Scheduling",
        "reason": reason,
        "regarding": regarding,
        "note": "n",
        "type": type_,
        **extra,
    }


WEB = {
    "kind": "Pod",
    "namespace": "sel",
    "name": "web",
    "uid": "u-web",
    "apiVersion": "v1",
    "resourceVersion": "7",
    "fieldPath": "spec.containers{c}",
}
DB = {"kind": "Pod", "namespace": "sel", "name": "db,1=x", "uid": "u-db", "apiVersion": "v1"}
NODE = {"kind": "Node", "name": "n1", "uid": "u-n1", "apiVersion": "v1"}


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": "sel"}}).is_success
        for event in (
            _event("e-web", WEB),
            _event("e-db", DB, reason="Scheduled", type_="Normal"),
            _event("e-node", NODE, reason="NodeNotReady", reportingController="node-controller"),
            {**_event("e-old", WEB, reason="Old"), "deprecatedSource": {"component": "kubelet"}},
        ):
            response = client.post(EVENTS_V1, json=event)
            assert response.status_code == 201, response.text
        yield client


def names(api, selector):
    response = api.get(EVENTS_V1, params={"fieldSelector": selector})
    assert response.status_code == 200, response.text
    return sorted(e["metadata"]["name"] for e in response.json()["items"])


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("regarding.name=web", ["e-old", "e-web"]),
        ("regarding.kind=Node", ["e-node"]),
        ("regarding.namespace=sel", ["e-db", "e-old", "e-web"]),
        ("regarding.uid=u-db", ["e-db"]),
        ("regarding.apiVersion=v1,reason!=Old", ["e-db", "e-node", "e-web"]),
        ("regarding.resourceVersion=7", ["e-old", "e-web"]),
        ("regarding.fieldPath=spec.containers{c}", ["e-old", "e-web"]),
        ("reportingController=node-controller", ["e-node"]),
        ("reportingController!=node-controller", ["e-db", "e-old", "e-web"]),
        ("type=Normal", ["e-db"]),
        ("reason=FailedScheduling", ["e-web"]),
        ("source=kubelet", ["e-old"]),
        ("metadata.name=e-db", ["e-db"]),
        ("metadata.namespace=sel,regarding.name==web", ["e-old", "e-web"]),
        # A value with the selector's own characters, escaped, is converted whole.
        ("regarding.name=db\\,1\\=x", ["e-db"]),
    ],
)
def test_events_k8s_io_field_labels_select(api, selector, expected):
    assert names(api, selector) == expected


@pytest.mark.parametrize(
    "label", ["involvedObject.name", "reportingComponent", "note", "regarding", "series.count"]
)
def test_other_labels_are_not_supported(api, label):
    response = api.get(EVENTS_V1, params={"fieldSelector": f"reason=Old,{label}=x"})
    assert response.status_code == 400
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"field label not supported: {label}",
        "reason": "BadRequest",
        "code": 400,
    }


def test_core_v1_keeps_its_own_labels(api):
    core = api.get(
        "/api/v1/namespaces/sel/events", params={"fieldSelector": "involvedObject.name=web"}
    )
    assert sorted(e["metadata"]["name"] for e in core.json()["items"]) == ["e-old", "e-web"]
    refused = api.get("/api/v1/namespaces/sel/events", params={"fieldSelector": "regarding.name=w"})
    assert (refused.status_code, refused.json()["message"]) == (
        400,
        "field label not supported: regarding.name",
    )


def test_a_watch_selects_by_regarding(api):
    params = {"watch": "true", "fieldSelector": "regarding.name=web", "timeoutSeconds": "1"}
    with api.stream("GET", EVENTS_V1, params=params) as response:
        assert response.status_code == 200
        seen = [json.loads(line) for line in response.iter_lines() if line]
    assert sorted(e["object"]["metadata"]["name"] for e in seen) == ["e-old", "e-web"]
    assert {e["object"]["apiVersion"] for e in seen} == {"events.k8s.io/v1"}


def test_kubectl_get_events_k8s_io_with_a_regarding_selector(kubectl, api):
    out = kubectl(
        "get",
        "events.v1.events.k8s.io",
        "-n",
        "sel",
        "--field-selector",
        "regarding.kind=Node",
        "-o",
        "name",
    )
    assert out == "event.events.k8s.io/e-node\n"
    refused = kubectl.run(
        "get", "events.v1.events.k8s.io", "-n", "sel", "--field-selector", "regarding=x"
    )
    assert (refused.returncode, refused.stderr) == (
        1,
        'Error from server (BadRequest): Unable to find "events.k8s.io/v1, Resource=events" '
        'that match label selector "", field selector "regarding=x": '
        "field label not supported: regarding\n",
    )
