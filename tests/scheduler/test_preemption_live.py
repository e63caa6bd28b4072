"""DefaultPreemption in a running cluster: victims chosen, marked, deleted; the pod nominated
and bound once the room is really free."""

import httpx
import pytest

from taintplane.sim.cluster import running_cluster
from tests.scheduler.builders import make_node, make_pod
from tests.scheduler.test_live import add_node, wait_for_pod


@pytest.fixture
def api(tmp_path):
    with (
        running_cluster(tmp_path) as cluster,
        httpx.Client(base_url=cluster.url, timeout=30) as client,
    ):
        yield client


def priority_class(api, name, value, **extra):
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }
    response = api.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=body)
    assert response.status_code == 201, response.text


def create_pod(api, pod):
    response = api.post("/api/v1/namespaces/default/pods", json=pod)
    assert response.status_code == 201, response.text
    return response.json()


def test_high_priority_pod_preempts_the_fewest_lowest_priority_pods(api):
    priority_class(api, "low", 10)
    priority_class(api, "mid", 20)
    priority_class(api, "high", 1000)
    add_node(api, make_node("n1", cpu="3"))
    # n1 holds one mid (1 cpu) and two low (1 cpu each) pods.
    for name, cls in (("mid-1", "mid"), ("low-1", "low"), ("low-2", "low")):
        create_pod(api, make_pod(name, requests={"cpu": "1"}, priorityClassName=cls))
        wait_for_pod(api, name, lambda p: p["spec"].get("nodeName") == "n1")

    preemptor = create_pod(api, make_pod("urgent", requests={"cpu": "2"}, priorityClassName="high"))
    assert preemptor["spec"]["priority"] == 1000
    nominated = wait_for_pod(api, "urgent", lambda p: p.get("status", {}).get("nominatedNodeName"))
    assert nominated["status"]["nominatedNodeName"] == "n1"
    assert not nominated["spec"].get("nodeName")

    # Two cpus were needed: both low pods go, the mid one is given back.
    for victim in ("low-1", "low-2"):
        pod = api.get(f"/api/v1/namespaces/default/pods/{victim}").json()
        assert pod["metadata"].get("deletionTimestamp"), victim
        target = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert target["status"] == "True"
        assert target["reason"] == "PreemptionByScheduler"
        assert target["message"] == (
            "default-scheduler: preempting to accommodate a higher priority pod"
        )
        events = api.get(
            "/api/v1/namespaces/default/events",
            params={"fieldSelector": f"involvedObject.name={victim},reason=Preempted"},
        ).json()["items"]
        assert [e["message"] for e in events] == [
            f"Preempted by pod {preemptor['metadata']['uid']} on node n1"
        ]
    assert (
        not api.get("/api/v1/namespaces/default/pods/mid-1")
        .json()["metadata"]
        .get("deletionTimestamp")
    )

    # The kubelet's part (no agents run here): the victims finish terminating.
    for victim in ("low-1", "low-2"):
        api.request(
            "DELETE",
            f"/api/v1/namespaces/default/pods/{victim}",
            json={"gracePeriodSeconds": 0},
        )
    bound = wait_for_pod(api, "urgent", lambda p: p["spec"].get("nodeName"))
    assert bound["spec"]["nodeName"] == "n1"


def test_equal_priority_never_preempts(api):
    add_node(api, make_node("n1", cpu="1"))
    create_pod(api, make_pod("first", requests={"cpu": "1"}))
    wait_for_pod(api, "first", lambda p: p["spec"].get("nodeName"))
    create_pod(api, make_pod("second", requests={"cpu": "1"}))
    failed = wait_for_pod(
        api,
        "second",
        lambda p: any(
            c["type"] == "PodScheduled" for c in p.get("status", {}).get("conditions", [])
        ),
    )
    message = next(c for c in failed["status"]["conditions"] if c["type"] == "PodScheduled")
    assert message["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert (
        not api.get("/api/v1/namespaces/default/pods/first")
        .json()["metadata"]
        .get("deletionTimestamp")
    )
