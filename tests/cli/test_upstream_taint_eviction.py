"""The taint eviction controller's own unit tests, ported black-box: `taintplane up --clock
virtual`, real kubectl for taints, the official Python client for pods, every instant read off
the virtual clock (upstream sleeps and polls a fake clientset's actions).

Source (Kubernetes v1.35): pkg/controller/tainteviction/taint_eviction_test.go — TestUpdateNode
("Only one added taint tolerated", "Pod with multiple tolerations are evicted when first one
runs out", "Taint removed"), TestUpdateNodeWithMultipleTaints (a forever toleration and a
60 s one: queued and cancelled as the second taint comes and goes), TestUpdateNodeWithMultiplePods
("Evict all pods not matching all taints instantly"), TestUpdatePod through the updates the API
allows (tolerationSeconds changed, a toleration added: processPodOnNode never pushes an eviction
later, nor brings one forward, and GetMatchingTolerations uses the first toleration that
matches), TestCreateNode ("Creating tainted Node matching already assigned Pod") and
TestEventualConsistency (a pod created on a node already tainted). "expectPatch" is the
DisruptionTarget condition; TestPodDeletionEvent's words are the events'. Removing a
toleration, which the unit test does, is refused by pod update validation, so it is not ported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.cli.test_virtual_cluster_cli import RFC3339, Running, module_cluster

PAUSE = "registry.k8s.io/pause:3.10"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from module_cluster(tmp_path_factory, "te")


@pytest.fixture(scope="module")
def core(running: Running) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(running.kubeconfig)))


def advance(running: Running, duration: str) -> datetime:
    return datetime.strptime(running.ok("clock", "advance", duration).strip(), RFC3339)


def stamp(at: datetime) -> str:
    return at.strftime(RFC3339)


def taint(index: int) -> str:
    """createNoExecuteTaint(index), as kubectl taint writes it."""
    return f"testTaint{index}=test{index}:NoExecute"


def toleration(index: int, seconds: int | None) -> dict[str, Any]:
    """addToleration(pod, index, seconds): operator left to its default (Equal)."""
    found: dict[str, Any] = {
        "key": f"testTaint{index}",
        "value": f"test{index}",
        "effect": "NoExecute",
    }
    if seconds is not None:
        found["tolerationSeconds"] = seconds
    return found


def pod(
    core: client.CoreV1Api, ns: str, name: str, node: str, *tolerations: dict[str, Any]
) -> None:
    """testutil.NewPod(name, node) with the tolerations, bound to NODE directly."""
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "image": PAUSE}]}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    core.create_namespaced_pod(ns, {"metadata": {"name": name}, "spec": spec})


def evicted(core: client.CoreV1Api, ns: str, name: str) -> bool:
    """Deleted by the controller: gone (its kubelet finished it) or terminating."""
    try:
        found = core.read_namespaced_pod(name, ns)
    except ApiException as error:
        if error.status != 404:
            raise
        return True
    return found.metadata.deletion_timestamp is not None


def events(running: Running, ns: str, name: str) -> list[tuple[str, str]]:
    """The pod's TaintManagerEviction events: (message, lastTimestamp), in order."""
    raw = running.kubectl(
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        f"involvedObject.name={name},reason=TaintManagerEviction",
        "-o",
        "json",
    )
    items = sorted(json.loads(raw)["items"], key=lambda e: e["metadata"]["creationTimestamp"])
    return [(e["message"], e["lastTimestamp"]) for e in items]


def marking(ns: str, name: str, at: datetime) -> tuple[str, str]:
    return (f"Marking for deletion Pod {ns}/{name}", stamp(at))


def cancelling(ns: str, name: str, at: datetime) -> tuple[str, str]:
    return (f"Cancelling deletion of Pod {ns}/{name}", stamp(at))


@pytest.fixture
def ns(running: Running, core: client.CoreV1Api, request: pytest.FixtureRequest) -> Iterator[str]:
    name = request.node.name.removeprefix("test_").replace("_", "-")[:50].rstrip("-")
    core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        for node in ("node-1", "node-2", "node-3"):
            for key in ("testTaint1-", "testTaint2-"):
                running.kubectl.run("taint", "nodes", node, key)
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        core.delete_namespace(name)
        advance(running, "0s")


def test_only_one_added_taint_tolerated_evicts_at_once(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestUpdateNode "Only one added taint tolerated" and TestUpdateNodeWithMultiplePods
    "Evict all pods not matching all taints instantly": with two taints, tolerating one (for
    any time, or forever) is no help; the DisruptionTarget condition is written first."""
    pod(core, ns, "pod1", "node-1")
    pod(core, ns, "pod2", "node-1", toleration(1, 1))
    pod(core, ns, "pod3", "node-1", toleration(1, None))
    pod(core, ns, "finalized", "node-1", toleration(1, 100))
    core.patch_namespaced_pod("finalized", ns, {"metadata": {"finalizers": ["example.com/keep"]}})
    advance(running, "0s")
    running.kubectl("taint", "nodes", "node-1", taint(1), taint(2))
    at = advance(running, "0s")
    for name in ("pod1", "pod2", "pod3", "finalized"):
        assert evicted(core, ns, name), name
        assert events(running, ns, name) == [marking(ns, name, at)]
    kept = core.read_namespaced_pod("finalized", ns)
    assert [
        (c.type, c.status, c.reason, c.message)
        for c in kept.status.conditions
        if c.type == "DisruptionTarget"
    ] == [
        (
            "DisruptionTarget",
            "True",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
        )
    ]
    core.patch_namespaced_pod("finalized", ns, {"metadata": {"finalizers": None}})


def test_the_first_toleration_to_run_out_evicts(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestUpdateNode "Pod with multiple tolerations are evicted when first one runs out"
    (1 s and 100 s: evicted at 1 s) and TestUpdateNodeWithMultiplePods "Pods with different
    toleration times are evicted appropriately" (none: at once; 1 s; forever: never)."""
    pod(core, ns, "multi", "node-2", toleration(1, 1), toleration(2, 100))
    pod(core, ns, "pod1", "node-3")
    pod(core, ns, "pod2", "node-3", toleration(1, 1))
    pod(core, ns, "pod3", "node-3", toleration(1, None))
    advance(running, "0s")
    running.kubectl("taint", "nodes", "node-2", taint(1), taint(2))
    running.kubectl("taint", "nodes", "node-3", taint(1))
    at = advance(running, "0s")
    assert evicted(core, ns, "pod1")
    assert not evicted(core, ns, "multi")
    assert not evicted(core, ns, "pod2")
    assert advance(running, "1s") == at + timedelta(seconds=1)
    assert evicted(core, ns, "multi")
    assert evicted(core, ns, "pod2")
    assert events(running, ns, "multi") == [marking(ns, "multi", at + timedelta(seconds=1))]
    advance(running, "10m")
    assert not evicted(core, ns, "pod3")
    assert events(running, ns, "pod3") == []


def test_removing_the_taint_cancels_with_an_event(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestUpdateNode "Taint removed": a pod tolerating the taint for a while is not deleted
    once the taint goes, and the cancellation is told (TestPodDeletionEvent's words)."""
    pod(core, ns, "pod1", "node-1", toleration(1, 10))
    advance(running, "0s")
    running.kubectl("taint", "nodes", "node-1", taint(1))
    at = advance(running, "5s")
    running.kubectl("taint", "nodes", "node-1", "testTaint1-")
    advance(running, "1m")
    assert not evicted(core, ns, "pod1")
    assert events(running, ns, "pod1") == [cancelling(ns, "pod1", at)]


def test_a_second_taint_tolerated_for_a_while_queues_and_cancels(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestUpdateNodeWithMultipleTaints: taint1 tolerated forever, taint2 for 60 s. taint1
    alone queues nothing; taint2 added queues the eviction (60 s on); taint2 removed cancels it
    (the event), and nothing is deleted."""
    forever = {"key": "testTaint1", "operator": "Exists", "effect": "NoExecute"}
    minute = {
        "key": "testTaint2",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 60,
    }
    pod(core, ns, "pod1", "node-2", forever, minute)
    advance(running, "0s")
    running.kubectl("taint", "nodes", "node-2", taint(1))
    advance(running, "5m")
    assert events(running, ns, "pod1") == []
    running.kubectl("taint", "nodes", "node-2", taint(2))
    added = advance(running, "59s")
    running.kubectl("taint", "nodes", "node-2", "testTaint2-")
    advance(running, "5m")
    assert not evicted(core, ns, "pod1")
    assert events(running, ns, "pod1") == [cancelling(ns, "pod1", added)]


def test_updated_toleration_seconds_never_move_the_eviction(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestUpdatePod "lengthening toleration shouldn't work", and its mirror: once queued, an
    eviction keeps its instant whether tolerationSeconds grows (10 s -> 100 s) or shrinks
    (100 s -> 10 s, 5 s in), and a forever toleration appended for the same taint is not used
    (the first match is). No cancellation is told."""
    pod(core, ns, "longer", "node-3", toleration(1, 10))
    pod(core, ns, "shorter", "node-3", toleration(1, 100))
    pod(core, ns, "appended", "node-3", toleration(1, 20))
    advance(running, "0s")
    running.kubectl("taint", "nodes", "node-3", taint(1))
    at = advance(running, "5s") - timedelta(seconds=5)

    def set_seconds(name: str, seconds: int, *more: dict[str, Any]) -> None:
        found = core.read_namespaced_pod(name, ns)
        tolerations = [t.to_dict() for t in found.spec.tolerations]
        for t in tolerations:
            if t["key"] == "testTaint1":
                t["toleration_seconds"] = seconds
        found.spec.tolerations = [client.V1Toleration(**t) for t in tolerations] + [
            client.V1Toleration(**m) for m in more
        ]
        core.replace_namespaced_pod(name, ns, found)

    set_seconds("longer", 100)
    set_seconds("shorter", 10)
    set_seconds("appended", 20, {"key": "testTaint1", "operator": "Exists", "effect": "NoExecute"})
    advance(running, "4s")
    assert not evicted(core, ns, "longer")
    assert advance(running, "1s") == at + timedelta(seconds=10)
    assert evicted(core, ns, "longer")
    assert not evicted(core, ns, "shorter")
    advance(running, "10s")
    assert evicted(core, ns, "appended")
    advance(running, "79s")
    assert not evicted(core, ns, "shorter")
    advance(running, "1s")
    assert evicted(core, ns, "shorter")
    for name, after in (("longer", 10), ("appended", 20), ("shorter", 100)):
        assert events(running, ns, name) == [marking(ns, name, at + timedelta(seconds=after))]


def test_a_pod_created_on_a_tainted_node_is_evicted(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestEventualConsistency "new pod2 created on tainted Node" (at once) and "new pod2 with
    taint toleration created on tainted Node" (100 s after it was created)."""
    running.kubectl("taint", "nodes", "node-1", taint(1))
    advance(running, "30s")
    pod(core, ns, "pod2", "node-1")
    pod(core, ns, "tolerating", "node-1", toleration(1, 100))
    at = advance(running, "0s")
    assert evicted(core, ns, "pod2")
    assert events(running, ns, "pod2") == [marking(ns, "pod2", at)]
    advance(running, "99s")
    assert not evicted(core, ns, "tolerating")
    advance(running, "1s")
    assert evicted(core, ns, "tolerating")


def test_a_tainted_node_created_under_an_assigned_pod(
    running: Running, core: client.CoreV1Api, ns: str
) -> None:
    """TestCreateNode: a pod bound to a node that does not exist yet; the node created with a
    NoExecute taint the pod does not tolerate has it deleted, one it tolerates does not."""
    pod(core, ns, "pod1", "late-node")
    pod(core, ns, "tolerating", "late-node-2", toleration(1, None))
    advance(running, "0s")
    taints = [{"key": "testTaint1", "value": "test1", "effect": "NoExecute"}]
    try:
        for name in ("late-node", "late-node-2"):
            core.create_node({"metadata": {"name": name}, "spec": {"taints": taints}})
        at = advance(running, "0s")
        assert evicted(core, ns, "pod1")
        assert events(running, ns, "pod1") == [marking(ns, "pod1", at)]
        assert not evicted(core, ns, "tolerating")
    finally:
        for name in ("late-node", "late-node-2"):
            core.delete_node(name)
