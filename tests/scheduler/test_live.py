"""The scheduler inside a running cluster: placements, messages, requeue, one binding each."""

import json

import httpx
import pytest

from taintplane.sim.cluster import running_cluster
from tests.scheduler.builders import make_node, make_pod, taint

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    with (
        running_cluster(tmp_path_factory.mktemp("scheduled")) as cluster,
        httpx.Client(base_url=cluster.url, timeout=30) as client,
    ):
        yield client


def add_node(api, node):
    status = node.pop("status")
    assert api.post("/api/v1/nodes", json=node).status_code == 201
    api.patch(
        f"/api/v1/nodes/{node['metadata']['name']}/status", json={"status": status}, headers=MERGE
    )


def wait_for_pod(api, name, predicate, namespace="default"):
    """Follow the pod through a watch (list first) until ``predicate`` holds; no polling."""
    params = {"watch": "true", "fieldSelector": f"metadata.name={name}", "timeoutSeconds": "20"}
    with api.stream("GET", f"/api/v1/namespaces/{namespace}/pods", params=params) as response:
        for line in response.iter_lines():
            if line:
                pod = json.loads(line)["object"]
                if predicate(pod):
                    return pod
    raise AssertionError(f"pod {name} never reached the expected state")


def wait_for_events(api, field_selector, enough):
    """The events matching ``field_selector`` once ``enough(events)`` holds, followed through a
    watch: the scheduler records events after it writes the pod, asynchronously."""
    path = "/api/v1/namespaces/default/events"
    listed = api.get(path, params={"fieldSelector": field_selector}).json()
    events = {e["metadata"]["name"]: e for e in listed["items"]}
    if enough(list(events.values())):
        return list(events.values())
    params = {
        "watch": "true",
        "fieldSelector": field_selector,
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "timeoutSeconds": "20",
    }
    with api.stream("GET", path, params=params) as response:
        for line in response.iter_lines():
            if line:
                event = json.loads(line)["object"]
                events[event["metadata"]["name"]] = event
                if enough(list(events.values())):
                    return list(events.values())
    raise AssertionError(f"never enough events matching {field_selector}: {len(events)}")


def condition(pod):
    return next(
        (c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"),
        None,
    )


def test_pending_pod_is_bound_as_soon_as_its_taint_goes(api):
    add_node(api, make_node("only", taints=[taint("maintenance", value="yes")]))
    api.post("/api/v1/namespaces/default/pods", json=make_pod("waiting"))
    failed = wait_for_pod(api, "waiting", lambda p: condition(p) is not None)
    assert condition(failed)["status"] == "False"
    assert condition(failed)["reason"] == "Unschedulable"
    assert condition(failed)["message"] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint(s). "
        "no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    events = wait_for_events(
        api, "involvedObject.name=waiting,reason=FailedScheduling", lambda found: len(found) >= 1
    )
    assert [e["message"] for e in events] == [condition(failed)["message"]]
    assert events[0]["type"] == "Warning"
    # Recorded through events.k8s.io/v1: no source, the reporting controller instead.
    assert events[0]["source"] == {}
    assert events[0]["reportingComponent"] == "default-scheduler"

    api.patch("/api/v1/nodes/only", json={"spec": {"taints": None}}, headers=MERGE)
    bound = wait_for_pod(api, "waiting", lambda p: p["spec"].get("nodeName"))
    assert bound["spec"]["nodeName"] == "only"
    assert condition(bound)["status"] == "True"


def test_pods_for_another_scheduler_are_left_alone(api):
    api.post(
        "/api/v1/namespaces/default/pods", json=make_pod("elsewhere", schedulerName="my-scheduler")
    )
    api.post("/api/v1/namespaces/default/pods", json=make_pod("marker"))
    wait_for_pod(api, "marker", lambda p: p["spec"].get("nodeName"))
    pod = api.get("/api/v1/namespaces/default/pods/elsewhere").json()
    assert "nodeName" not in pod["spec"]
    assert "conditions" not in pod["status"]


def test_many_pods_each_bound_exactly_once(api):
    for i in range(3):
        add_node(api, make_node(f"pool-{i}", labels={"pool": "yes"}))
    for i in range(40):
        api.post(
            "/api/v1/namespaces/default/pods",
            json=make_pod(f"many-{i}", node_selector={"pool": "yes"}, requests={"cpu": "100m"}),
        )
    last = wait_for_pod(api, "many-39", lambda p: p["spec"].get("nodeName"))
    assert last["spec"]["nodeName"].startswith("pool-")
    pods = api.get("/api/v1/namespaces/default/pods").json()["items"]
    many = [p for p in pods if p["metadata"]["name"].startswith("many-")]
    for pod in many:
        if not pod["spec"].get("nodeName"):
            wait_for_pod(api, pod["metadata"]["name"], lambda p: p["spec"].get("nodeName"))
    events = wait_for_events(
        api,
        "reason=Scheduled",
        lambda found: (
            len(
                {
                    e["involvedObject"]["name"]
                    for e in found
                    if e["involvedObject"]["name"].startswith("many-")
                }
            )
            >= 40
        ),
    )
    scheduled = [
        e["involvedObject"]["name"]
        for e in events
        if e["involvedObject"]["name"].startswith("many-")
    ]
    assert sorted(scheduled) == sorted(f"many-{i}" for i in range(40))
    spread = {
        p["spec"]["nodeName"]
        for p in api.get("/api/v1/namespaces/default/pods").json()["items"]
        if p["metadata"]["name"].startswith("many-")
    }
    assert spread == {"pool-0", "pool-1", "pool-2"}  # least-allocated spreads them


def test_dedicated_namespace_pods_land_on_their_nodes(api):
    banana = taint("dedicated", value="banana")
    for name in ("foo", "bar", "baz"):
        add_node(api, make_node(name, taints=[banana], labels={"dedicated": "banana"}))
    api.post("/api/v1/namespaces", json={"metadata": {"name": "banana"}})
    toleration = {
        "key": "dedicated",
        "operator": "Equal",
        "value": "banana",
        "effect": "NoSchedule",
    }
    api.post(
        "/api/v1/namespaces/banana/pods",
        json=make_pod(
            "b1",
            namespace="banana",
            tolerations=[toleration],
            node_selector={"dedicated": "banana"},
        ),
    )
    bound = wait_for_pod(api, "b1", lambda p: p["spec"].get("nodeName"), namespace="banana")
    assert bound["spec"]["nodeName"] in {"foo", "bar", "baz"}
