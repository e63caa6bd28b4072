"""Upstream's own taint tests, ported black-box: `taintplane up --clock virtual`, the real
kubectl and the official Python client, instants read off the virtual clock.

Sources (Kubernetes v1.35): test/e2e/node/taints.go (NoExecuteTaintManager Single Pod and
Multiple Pods, and the DisruptionTarget condition of an evicted pod), test/e2e/kubectl/kubectl.go
("Kubectl taint [Serial]"), test/e2e/scheduling/predicates.go ("validates that
taints-tolerations is respected if matching / if not matching") and priorities.go ("Pod should
be preferably scheduled to nodes pod can tolerate"). Where upstream waits "a bit" on a real
clock, these advance the virtual one to the exact instant and one second short of it.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.cli.test_virtual_cluster_cli import RFC3339, Running, module_cluster

EVICT_KEY = "kubernetes.io/e2e-evict-taint-key"
EVICT_TAINT = f"{EVICT_KEY}=evictTaintVal:NoExecute"
PAUSE = "registry.k8s.io/pause:3.10"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from module_cluster(tmp_path_factory, "upstream")


@pytest.fixture(scope="module")
def core(running: Running) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(running.kubeconfig)))


def now(running: Running) -> datetime:
    return datetime.strptime(running.ok("clock", "now").strip(), RFC3339)


def advance(running: Running, duration: str) -> datetime:
    return datetime.strptime(running.ok("clock", "advance", duration).strip(), RFC3339)


def stamp(at: datetime) -> str:
    return at.strftime(RFC3339)


def namespace(core: client.CoreV1Api, name: str) -> str:
    core.create_namespace({"metadata": {"name": name}})
    return name


def evict_toleration(seconds: int | None) -> dict[str, Any]:
    """createPodForTaintsTest's toleration: operator left to its default (Equal)."""
    toleration: dict[str, Any] = {"key": EVICT_KEY, "value": "evictTaintVal", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


def run_pod(
    running: Running,
    core: client.CoreV1Api,
    ns: str,
    name: str,
    node: str,
    tolerations: list[dict[str, Any]] | None = None,
    group: str | None = None,
    finalizers: list[str] | None = None,
) -> None:
    """RunPodAndGetNodeName: through the scheduler (pinned by hostname), Running on NODE."""
    meta: dict[str, Any] = {"name": name, "labels": {"group": group or name}}
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {
        "containers": [{"name": "pause", "image": PAUSE}],
        "nodeSelector": {"kubernetes.io/hostname": node},
    }
    if tolerations:
        spec["tolerations"] = tolerations
    core.create_namespaced_pod(ns, {"metadata": meta, "spec": spec})
    advance(running, "0s")
    pod = core.read_namespaced_pod(name, ns)
    assert (pod.spec.node_name, pod.status.phase) == (node, "Running")


def gone(core: client.CoreV1Api, ns: str, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, ns)
    except ApiException as error:
        if error.status != 404:
            raise
        return True
    return False


def eviction_events(running: Running, ns: str, pod: str) -> list[tuple[str, str, str]]:
    raw = running.kubectl(
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        f"involvedObject.name={pod},reason=TaintManagerEviction",
        "-o",
        "json",
    )
    return [
        (e["type"], e["message"], e["lastTimestamp"])
        for e in sorted(json.loads(raw)["items"], key=lambda e: e["lastTimestamp"])
    ]


def taint(running: Running, *args: str) -> str:
    return running.kubectl("taint", "nodes", *args)


def untaint(running: Running, *args: str) -> None:
    """Clean-up that tolerates a taint already gone (a case that failed half way)."""
    running.kubectl.run("taint", "nodes", *args)


def test_single_pod_untolerated_tolerated_finite_and_cancelled(
    running: Running, core: client.CoreV1Api
) -> None:
    """NoExecuteTaintManager Single Pod [Serial], its four cases on three nodes."""
    ns = namespace(core, "taint-single-pod")
    run_pod(running, core, ns, "taint-eviction-1", "node-1")
    run_pod(running, core, ns, "taint-eviction-2", "node-2", [evict_toleration(None)])
    run_pod(running, core, ns, "taint-eviction-3", "node-2", [evict_toleration(70)])
    run_pod(running, core, ns, "taint-eviction-4", "node-3", [evict_toleration(10)])
    try:
        assert taint(running, "node-1", "node-2", "node-3", EVICT_TAINT) == (
            "node/node-1 tainted\nnode/node-2 tainted\nnode/node-3 tainted\n"
        )
        tainted = now(running)
        # "evicts pods from tainted nodes": at once, with the taint manager's event.
        advance(running, "0s")
        assert gone(core, ns, "taint-eviction-1")
        assert eviction_events(running, ns, "taint-eviction-1") == [
            ("Normal", f"Marking for deletion Pod {ns}/taint-eviction-1", stamp(tainted))
        ]
        # "removing taint cancels eviction" (Conformance): the taint goes 5 s in.
        advance(running, "5s")
        assert taint(running, "node-3", f"{EVICT_KEY}-") == "node/node-3 untainted\n"
        assert eviction_events(running, ns, "taint-eviction-4") == [
            (
                "Normal",
                f"Cancelling deletion of Pod {ns}/taint-eviction-4",
                stamp(tainted + timedelta(seconds=5)),
            )
        ]
        # "eventually evict pod with finite tolerations": not at 69 s, at 70 s.
        advance(running, "64s")
        assert not gone(core, ns, "taint-eviction-3")
        assert advance(running, "1s") == tainted + timedelta(seconds=70)
        assert gone(core, ns, "taint-eviction-3")
        assert eviction_events(running, ns, "taint-eviction-3") == [
            (
                "Normal",
                f"Marking for deletion Pod {ns}/taint-eviction-3",
                stamp(tainted + timedelta(seconds=70)),
            )
        ]
        # "doesn't evict pod with tolerations" and the cancelled one is never evicted.
        advance(running, "60s")
        for name in ("taint-eviction-2", "taint-eviction-4"):
            assert core.read_namespaced_pod(name, ns).status.phase == "Running"
        assert eviction_events(running, ns, "taint-eviction-2") == []
    finally:
        untaint(running, "node-1", "node-2", f"{EVICT_KEY}-")
        running.kubectl("delete", "namespace", ns, "--wait=false")


def test_multiple_pods_only_untolerating_and_min_toleration_seconds(
    running: Running, core: client.CoreV1Api
) -> None:
    """NoExecuteTaintManager Multiple Pods [Serial]: "only evicts pods without tolerations"
    and "evicts pods with minTolerationSeconds" (Conformance: 5 s and 25 s on one node)."""
    ns = namespace(core, "taint-multiple-pods")
    run_pod(running, core, ns, "taint-eviction-a1", "node-1", group="taint-eviction-a")
    run_pod(
        running,
        core,
        ns,
        "taint-eviction-a2",
        "node-1",
        [evict_toleration(None)],
        group="taint-eviction-a",
    )
    for name, seconds in (("taint-eviction-b1", 5), ("taint-eviction-b2", 25)):
        run_pod(running, core, ns, name, "node-2", [evict_toleration(seconds)], "taint-eviction-b")
    try:
        taint(running, "node-1", "node-2", EVICT_TAINT)
        tainted = advance(running, "0s")
        assert gone(core, ns, "taint-eviction-a1")
        advance(running, "4s")
        assert not gone(core, ns, "taint-eviction-b1")
        advance(running, "1s")
        assert gone(core, ns, "taint-eviction-b1")
        advance(running, "19s")
        assert not gone(core, ns, "taint-eviction-b2")
        assert advance(running, "1s") == tainted + timedelta(seconds=25)
        assert gone(core, ns, "taint-eviction-b2")
        advance(running, "65s")
        assert core.read_namespaced_pod("taint-eviction-a2", ns).status.phase == "Running"
        left = core.list_namespaced_pod(ns, label_selector="group=taint-eviction-a").items
        assert [p.metadata.name for p in left] == ["taint-eviction-a2"]
    finally:
        untaint(running, "node-1", "node-2", f"{EVICT_KEY}-")
        running.kubectl("delete", "namespace", ns, "--wait=false")


def test_evicted_pod_has_the_disruption_target_condition(
    running: Running, core: client.CoreV1Api
) -> None:
    """ "pods evicted from tainted nodes have pod disruption condition": a finalizer keeps the
    pod to be read after the eviction; it is terminating, with DisruptionTarget."""
    ns = namespace(core, "taint-disruption")
    finalizer = "example.com/test-finalizer"
    run_pod(running, core, ns, "taint-eviction-pod-disruption", "node-3", finalizers=[finalizer])
    try:
        taint(running, "node-3", EVICT_TAINT)
        tainted = advance(running, "0s")
        pod = core.read_namespaced_pod("taint-eviction-pod-disruption", ns)
        assert pod.metadata.deletion_timestamp is not None
        target = [c for c in pod.status.conditions if c.type == "DisruptionTarget"]
        assert [(c.status, c.reason, c.message) for c in target] == [
            ("True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
        ]
        assert stamp(target[0].last_transition_time.replace(tzinfo=None)) == stamp(tainted)
        line = running.kubectl("get", "pod", "-n", ns, "taint-eviction-pod-disruption")
        assert line.splitlines()[1].split()[2] in ("Terminating", "Completed")
        core.patch_namespaced_pod(
            "taint-eviction-pod-disruption", ns, {"metadata": {"finalizers": None}}
        )
        advance(running, "0s")
        assert gone(core, ns, "taint-eviction-pod-disruption")
    finally:
        untaint(running, "node-3", f"{EVICT_KEY}-")
        running.kubectl("delete", "namespace", ns, "--wait=false")


def describe_taints(running: Running, node: str) -> list[str]:
    """The Taints: block of kubectl describe node, one taint a line."""
    lines = running.kubectl("describe", "node", node).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Taints:"))
    block = [lines[start].removeprefix("Taints:").strip()]
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        block.append(line.strip())
    return block


def test_kubectl_taint_updates_and_removes_all_with_the_same_key(running: Running) -> None:
    """Kubectl taint [Serial]: "should update the taint on a node" and "should remove all the
    taints with the same key off a node", read back with kubectl describe node."""
    key1 = "kubernetes.io/e2e-taint-key-001-6d1d6a3c"
    added = f"{key1}=testing-taint-value:NoSchedule"
    assert taint(running, "node-1", added) == "node/node-1 tainted\n"
    assert describe_taints(running, "node-1") == [added]
    assert taint(running, "node-1", f"{key1}:NoSchedule-") == "node/node-1 untainted\n"
    assert describe_taints(running, "node-1") == ["<none>"]
    assert key1 not in running.kubectl("describe", "node", "node-1")

    key2 = "kubernetes.io/e2e-taint-key-002-6d1d6a3c"
    taints = [
        f"{key2}=testing-taint-value:NoSchedule",
        f"{key2}=another-testing-taint-value:PreferNoSchedule",
        f"{key2}=testing-taint-value-no-execute:NoExecute",
    ]
    for one in taints:
        assert taint(running, "node-1", one) == "node/node-1 tainted\n"
        assert one in describe_taints(running, "node-1")
    # kubectl puts each new taint first (the old ones keep their order after it).
    assert describe_taints(running, "node-1") == [taints[2], taints[0], taints[1]]
    assert taint(running, "node-1", f"{key2}-") == "node/node-1 untainted\n"
    assert describe_taints(running, "node-1") == ["<none>"]
    assert key2 not in running.kubectl("describe", "node", "node-1")


def scheduling_events(running: Running, ns: str, pod: str) -> list[tuple[str, str, str]]:
    raw = running.kubectl(
        "get", "events", "-n", ns, "--field-selector", f"involvedObject.name={pod}", "-o", "json"
    )
    return [
        (e["type"], e["reason"], e["message"])
        for e in json.loads(raw)["items"]
        if e["reason"] in ("Scheduled", "FailedScheduling")
    ]


def test_taints_tolerations_respected_if_matching_and_if_not(
    running: Running, core: client.CoreV1Api
) -> None:
    """predicates.go: a labelled, NoSchedule-tainted node takes the pod that tolerates the
    taint; a pod without the toleration gets FailedScheduling until the taint goes."""
    ns = namespace(core, "sched-pred")
    key = "kubernetes.io/e2e-taint-key-9f2c"
    label = "kubernetes.io/e2e-label-key-9f2c"
    taint(running, "node-2", f"{key}=testing-taint-value:NoSchedule")
    running.kubectl("label", "nodes", "node-2", f"{label}=testing-label-value")
    try:
        selector = {label: "testing-label-value"}
        container = [{"name": "pause", "image": PAUSE}]
        tolerated = {"key": key, "value": "testing-taint-value", "effect": "NoSchedule"}
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "with-tolerations"},
                "spec": {
                    "containers": container,
                    "nodeSelector": selector,
                    "tolerations": [tolerated],
                },
            },
        )
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "still-no-tolerations"},
                "spec": {"containers": container, "nodeSelector": selector},
            },
        )
        advance(running, "0s")
        assert core.read_namespaced_pod("with-tolerations", ns).spec.node_name == "node-2"
        assert scheduling_events(running, ns, "with-tolerations") == [
            ("Normal", "Scheduled", f"Successfully assigned {ns}/with-tolerations to node-2")
        ]
        refused = (
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't "
            "match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/3 "
            "nodes are available: 3 Preemption is not helpful for scheduling."
        )
        assert scheduling_events(running, ns, "still-no-tolerations") == [
            ("Warning", "FailedScheduling", refused)
        ]
        pending = core.read_namespaced_pod("still-no-tolerations", ns)
        assert [
            (c.status, c.reason, c.message)
            for c in pending.status.conditions
            if c.type == "PodScheduled"
        ] == [("False", "Unschedulable", refused)]

        # Removing the taint: the node-update event requeues the pod, which lands at once.
        taint(running, "node-2", f"{key}-")
        advance(running, "0s")
        assert core.read_namespaced_pod("still-no-tolerations", ns).spec.node_name == "node-2"
        assert scheduling_events(running, ns, "still-no-tolerations")[-1] == (
            "Normal",
            "Scheduled",
            f"Successfully assigned {ns}/still-no-tolerations to node-2",
        )
    finally:
        untaint(running, "node-2", f"{key}-")
        running.kubectl("label", "nodes", "node-2", f"{label}-")
        running.kubectl("delete", "namespace", ns, "--wait=false")


def test_pod_is_preferably_scheduled_to_the_node_it_tolerates(
    running: Running, core: client.CoreV1Api
) -> None:
    """priorities.go: ten PreferNoSchedule taints the pod tolerates on one node, ten it does
    not on each other node; TaintToleration scoring sends it to the first."""
    ns = namespace(core, "sched-prio")
    tolerations = []
    added: dict[str, list[str]] = {"node-1": [], "node-2": [], "node-3": []}
    for i in range(10):
        tolerable = f"kubernetes.io/e2e-scheduling-priorities-{i}=testing-taint-value-{i}"
        added["node-3"].append(tolerable.split("=")[0])
        taint(running, "node-3", f"{tolerable}:PreferNoSchedule")
        tolerations.append(
            {
                "key": tolerable.split("=")[0],
                "value": f"testing-taint-value-{i}",
                "effect": "PreferNoSchedule",
            }
        )
        for node in ("node-1", "node-2"):
            other = f"kubernetes.io/e2e-intolerable-{node}-{i}"
            added[node].append(other)
            taint(running, node, f"{other}=v:PreferNoSchedule")
    try:
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": "with-tolerations"},
                "spec": {
                    "containers": [{"name": "pause", "image": PAUSE}],
                    "tolerations": tolerations,
                },
            },
        )
        advance(running, "0s")
        assert core.read_namespaced_pod("with-tolerations", ns).spec.node_name == "node-3"
    finally:
        for node, keys in added.items():
            untaint(running, node, *[f"{k}-" for k in keys])
        running.kubectl("delete", "namespace", ns, "--wait=false")


def test_a_label_selected_watch_sees_the_eviction_end_in_deleted(
    running: Running, core: client.CoreV1Api
) -> None:
    """createTestController's informer: a watch of the pod's group (label selector) sees the
    taint manager's DisruptionTarget, then the deletion, and ends with DELETED."""
    ns = namespace(core, "taint-watch")
    run_pod(running, core, ns, "taint-eviction-w", "node-1")
    listed = core.list_namespaced_pod(ns, label_selector="group=taint-eviction-w")
    seen: list[tuple[str, bool, bool]] = []

    def observe() -> None:
        stream = watch.Watch()
        for event in stream.stream(
            core.list_namespaced_pod,
            ns,
            label_selector="group=taint-eviction-w",
            resource_version=listed.metadata.resource_version,
        ):
            pod = event["object"]
            target = any(c.type == "DisruptionTarget" for c in pod.status.conditions or [])
            seen.append((event["type"], target, pod.metadata.deletion_timestamp is not None))
            if event["type"] == "DELETED":
                stream.stop()

    # The watch starts at the listed resourceVersion: what happens before it connects is
    # still delivered, so nothing needs to wait for it.
    observer = threading.Thread(target=observe, daemon=True)
    observer.start()
    try:
        taint(running, "node-1", EVICT_TAINT)
        advance(running, "0s")
        observer.join(timeout=30)
        assert not observer.is_alive()
        assert seen[-1][0] == "DELETED"
        # The condition is written before the deletion, as addConditionAndDeletePod does.
        first_target = next(i for i, (_, target, _) in enumerate(seen) if target)
        first_deleting = next(i for i, (_, _, deleting) in enumerate(seen) if deleting)
        assert first_target < first_deleting
        assert [kind for kind, _, _ in seen].count("DELETED") == 1
    finally:
        untaint(running, "node-1", f"{EVICT_KEY}-")
        running.kubectl("delete", "namespace", ns, "--wait=false")


DRA_OBJECTS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: e2e-example}
spec:
  selectors:
  - cel: {expression: 'device.driver == "test-driver.cdi.k8s.io"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-2-test-driver}
spec:
  driver: test-driver.cdi.k8s.io
  nodeName: node-2
  pool: {name: node-2, generation: 1, resourceSliceCount: 1}
  devices:
  - name: device-00
    taints: [{key: example.com/taint, value: tainted, effect: NoSchedule}]
  - name: device-01
    taints: [{key: example.com/taint, value: tainted, effect: NoSchedule}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: untolerating, namespace: dra-taints}
spec:
  spec:
    devices:
      requests:
      - name: my-request
        exactly: {deviceClassName: e2e-example}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: tolerating, namespace: dra-taints}
spec:
  spec:
    devices:
      requests:
      - name: my-request
        exactly:
          deviceClassName: e2e-example
          tolerations: [{operator: Exists, effect: NoSchedule}]
---
apiVersion: v1
kind: Pod
metadata: {name: kept-pending, namespace: dra-taints}
spec:
  containers:
  - {name: c, image: registry.k8s.io/pause:3.10, resources: {claims: [{name: my-inline-claim}]}}
  resourceClaims: [{name: my-inline-claim, resourceClaimTemplateName: untolerating}]
---
apiVersion: v1
kind: Pod
metadata: {name: tolerating, namespace: dra-taints, finalizers: [e2e-test/dont-delete-me]}
spec:
  containers:
  - {name: c, image: registry.k8s.io/pause:3.10, resources: {claims: [{name: my-inline-claim}]}}
  resourceClaims: [{name: my-inline-claim, resourceClaimTemplateName: tolerating}]
"""

DEVICE_TAINT_RULE = """
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {generateName: device-taint-rule-e2e-}
spec:
  deviceSelector: {driver: test-driver.cdi.k8s.io}
  taint: {key: test.example.com/evict, value: now, effect: NoExecute}
"""


def test_device_taints_keep_pending_tolerations_schedule_and_a_rule_evicts(
    running: Running, core: client.CoreV1Api
) -> None:
    """test/e2e/dra/dra.go, DRADeviceTaints: "DeviceTaint keeps pod pending", "DeviceToleration
    enables pod scheduling" and "DeviceTaintRule evicts pod" (timeAdded defaulted, the pod kept
    by a finalizer to read its DisruptionTarget)."""
    ns = namespace(core, "dra-taints")
    try:
        running.kubectl("apply", "-f", "-", stdin=DRA_OBJECTS)
        advance(running, "0s")
        pending = core.read_namespaced_pod("kept-pending", ns)
        assert pending.spec.node_name is None
        assert [
            (c.status, c.reason, c.message)
            for c in pending.status.conditions
            if c.type == "PodScheduled"
        ] == [
            (
                "False",
                "Unschedulable",
                "0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, "
                "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            )
        ]
        tolerating = core.read_namespaced_pod("tolerating", ns)
        assert (tolerating.spec.node_name, tolerating.status.phase) == ("node-2", "Running")

        created = running.kubectl("create", "-o", "json", "-f", "-", stdin=DEVICE_TAINT_RULE)
        rule = json.loads(created)
        assert rule["spec"]["taint"]["timeAdded"] == stamp(now(running))
        advance(running, "0s")
        evicted = core.read_namespaced_pod("tolerating", ns)
        assert evicted.metadata.deletion_timestamp is not None
        assert [
            (c.status, c.reason, c.message)
            for c in evicted.status.conditions
            if c.type == "DisruptionTarget"
        ] == [
            (
                "True",
                "DeletionByDeviceTaintManager",
                "Device Taint manager: deleting due to NoExecute taint",
            )
        ]
        assert core.read_namespaced_pod("kept-pending", ns).spec.node_name is None
        running.kubectl("delete", "devicetaintrule", rule["metadata"]["name"])
        core.patch_namespaced_pod("tolerating", ns, {"metadata": {"finalizers": None}})
    finally:
        running.kubectl.run("delete", "-f", "-", "--wait=false", stdin=DRA_OBJECTS)
        running.kubectl("delete", "namespace", ns, "--wait=false")


NM_POD = """{{"kind": "Pod", "apiVersion": "v1",
 "metadata": {{"name": "{name}", "labels": {{"{key}": "{value}", "type": "test-pod"}}}},
 "spec": {{"nodeName": "127.0.0.1",
  "containers": [{{"name": "container-1", "resources": {{}}, "image": "test-image"}}]}}}}"""
DEDICATED = (
    '{{range .spec.taints}}{{if eq .key "dedicated"}}{{.key}}={{.value}}:{{.effect}}{{end}}{{end}}'
)


def test_node_management_taint_cordon_and_drain(running: Running, core: client.CoreV1Api) -> None:
    """test/cmd/node-management.sh (run_cluster_management_tests) on a node without a kubelet:
    dry runs change nothing, taints by key and by key:effect, kubectl-taint's field manager,
    drain by pod selector, and the cordon/uncordon/drain argument errors."""
    ns = namespace(core, "node-management")
    kubectl = running.kubectl

    def k(*args: str, stdin: str | None = None) -> str:
        return kubectl("-n", ns, *args, stdin=stdin)

    def dedicated() -> str:
        return k("get", "nodes", "127.0.0.1", "-o", f"go-template={DEDICATED}")

    def unschedulable() -> str:
        return k("get", "nodes", "127.0.0.1", "-o", "go-template={{.spec.unschedulable}}")

    def create_test_pods() -> None:
        for name, key, value in (("test-pod-1", "e", "f"), ("test-pod-2", "c", "d")):
            k("create", "-f", "-", stdin=NM_POD.format(name=name, key=key, value=value))

    k(
        "create",
        "-f",
        "-",
        stdin='{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "127.0.0.1"}}',
    )
    try:
        create_test_pods()
        assert dedicated() == ""
        assert k(
            "taint", "node", "127.0.0.1", "--dry-run=client", "dedicated=foo:PreferNoSchedule"
        ) == ("node/127.0.0.1 tainted\n")
        k("taint", "node", "127.0.0.1", "--dry-run=server", "dedicated=foo:PreferNoSchedule")
        assert dedicated() == ""
        k("taint", "node", "127.0.0.1", "dedicated=foo:PreferNoSchedule")
        assert dedicated() == "dedicated=foo:PreferNoSchedule"
        assert k("taint", "node", "127.0.0.1", "dedicated-") == "node/127.0.0.1 untainted\n"
        k("taint", "node", "127.0.0.1", "dedicated:PreferNoSchedule")
        assert dedicated() == "dedicated=<no value>:PreferNoSchedule"
        managers = k(
            "get",
            "node",
            "127.0.0.1",
            "--show-managed-fields",
            "-o=jsonpath={.metadata.managedFields[*].manager}",
        )
        assert "kubectl-taint" in managers.split()
        k("taint", "node", "127.0.0.1", "--dry-run=client", "dedicated-")
        k("taint", "node", "127.0.0.1", "--dry-run=server", "dedicated-")
        assert dedicated() == "dedicated=<no value>:PreferNoSchedule"
        k("taint", "node", "127.0.0.1", "dedicated-")
        assert dedicated() == ""

        assert unschedulable() == "<no value>"
        assert k("cordon", "127.0.0.1", "--dry-run=client") == "node/127.0.0.1 cordoned (dry run)\n"
        assert k("cordon", "127.0.0.1", "--dry-run=server") == (
            "node/127.0.0.1 cordoned (server dry run)\n"
        )
        k("drain", "127.0.0.1", "--dry-run=client", "--force")
        k("drain", "127.0.0.1", "--dry-run=server", "--force")
        assert unschedulable() == "<no value>"
        pods = "{{range .items}}{{.metadata.name}},{{end}}"
        assert k("get", "pods", "-o", f"go-template={pods}") == "test-pod-1,test-pod-2,"

        # kubectl's --skip-wait-for-delete-timeout compares its own wall clock with the
        # deletionTimestamp the virtual clock wrote, so the drain may wait for the pod (the
        # node has no kubelet): read its output as it comes, and end the wait as upstream's
        # clean-up does, with a forced delete.
        drain = subprocess.Popen(
            [
                "kubectl",
                "-n",
                ns,
                "drain",
                "127.0.0.1",
                "--force",
                "--pod-selector",
                "e in (f)",
                "--skip-wait-for-delete-timeout=1",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=kubectl.env(),
        )
        assert drain.stdout is not None
        assert drain.stdout.readline() == "node/127.0.0.1 cordoned\n"
        assert drain.stdout.readline() == f"evicting pod {ns}/test-pod-1\n"
        deleting = "go-template={{.metadata.deletionTimestamp}}"
        assert k("get", "pods/test-pod-2", "-o", deleting) == "<no value>"
        assert k("get", "pods/test-pod-1", "-o", deleting) != "<no value>"
        k("delete", "pod/test-pod-1", "--force", "--wait=false")
        out, _ = drain.communicate(timeout=60)
        assert drain.returncode == 0
        assert out.endswith("node/127.0.0.1 drained\n")
        k(
            "delete",
            "pod/test-pod-1",
            "pod/test-pod-2",
            "--force",
            "--ignore-not-found",
            "--wait=false",
        )
        create_test_pods()
        k("uncordon", "127.0.0.1")
        assert unschedulable() == "<no value>"
        assert k("uncordon", "127.0.0.1", "--dry-run=client") == (
            "node/127.0.0.1 already uncordoned (dry run)\n"
        )
        assert k("uncordon", "127.0.0.1", "--dry-run=server") == (
            "node/127.0.0.1 already uncordoned (server dry run)\n"
        )

        k("label", "node", "127.0.0.1", "test=label")
        both = kubectl.run("-n", ns, "drain", "127.0.0.1", "--selector", "test=label")
        assert both.returncode == 1
        assert "cannot specify both a node name" in both.stderr
        chunked = k(
            "drain",
            "--force",
            "--pod-selector",
            "type=test-pod",
            "--selector",
            "test=label",
            "--chunk-size=1",
            "--dry-run=client",
        )
        assert f"evicting pod {ns}/test-pod-1 (dry run)\n" in chunked
        assert f"evicting pod {ns}/test-pod-2 (dry run)\n" in chunked
        k("uncordon", "127.0.0.1")

        no_node = kubectl.run("cordon")
        assert no_node.returncode == 1
        assert "error: USAGE: cordon NODE" in no_node.stderr
        empty = kubectl.run("cordon", "--selector=")
        assert empty.returncode == 1
        assert "must provide one or more resources" in empty.stderr
        assert "node/127.0.0.1 cordoned" in k("cordon", "--selector", "test=label")
        assert "cordoned" not in kubectl.run("cordon", "--selector", "invalid=label").stdout
        assert unschedulable() == "true"
    finally:
        kubectl.run("-n", ns, "delete", "pod", "--all", "--force", "--wait=false")
        kubectl.run("delete", "node", "127.0.0.1")
        kubectl.run("delete", "namespace", ns, "--wait=false")
        advance(running, "0s")


def test_cluster_is_left_untainted(running: Running, core: client.CoreV1Api) -> None:
    """The cases above undo what they did: no taint is left on the simulated nodes."""
    advance(running, "0s")
    assert {n.metadata.name: n.spec.taints for n in core.list_node().items} == {
        "node-1": None,
        "node-2": None,
        "node-3": None,
    }
