"""Upstream's DaemonSet e2e tests that involve node selection, taints and tolerations, ported
black-box: `taintplane up --clock virtual`, the official Python client, kubectl for taints.

Sources (Kubernetes v1.35): test/e2e/apps/daemon_set.go ("should run and stop simple daemon",
"should run and stop complex daemon", "… with node affinity", "should retry creating failed
daemon pods"; BeforeEach's empty `scheduler.alpha.kubernetes.io/node-selector` namespace
annotation, checkRunningOnAllNodes skipping nodes whose taints the daemon pod does not
tolerate) and the tolerations pkg/controller/daemon/util adds to every daemon pod
(AddOrUpdateDaemonPodTolerations): not-ready and unreachable NoExecute without
tolerationSeconds, disk-, memory- and pid-pressure and unschedulable NoSchedule, and
network-unavailable NoSchedule for a hostNetwork pod. Upstream polls every second until its
condition holds; here the virtual clock is advanced and the result read once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes import client, config

from tests.cli.test_virtual_cluster_cli import RFC3339, Running, module_cluster

NAME_LABEL = "daemonset-name"
COLOR_LABEL = "daemonset-color"
IMAGE = "registry.k8s.io/e2e-test-images/httpd:2.4.38-4"  # WebserverImage
NODES = ["node-1", "node-2", "node-3"]


def exists(key: str, effect: str) -> dict[str, str]:
    return {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect}


AUTOMATIC = [
    exists("not-ready", "NoExecute"),
    exists("unreachable", "NoExecute"),
    exists("disk-pressure", "NoSchedule"),
    exists("memory-pressure", "NoSchedule"),
    exists("pid-pressure", "NoSchedule"),
    exists("unschedulable", "NoSchedule"),
]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from module_cluster(tmp_path_factory, "ds")


@pytest.fixture(scope="module")
def api(running: Running) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(running.kubeconfig))


@pytest.fixture(scope="module")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


def advance(running: Running, duration: str) -> datetime:
    return datetime.strptime(running.ok("clock", "advance", duration).strip(), RFC3339)


def namespace(core: client.CoreV1Api, name: str) -> str:
    """The framework's namespace, with updateNamespaceAnnotations' empty node selector."""
    core.create_namespace(
        {
            "metadata": {
                "name": name,
                "annotations": {"scheduler.alpha.kubernetes.io/node-selector": ""},
            }
        }
    )
    return name


def new_daemon_set(**spec: Any) -> dict[str, Any]:
    """newDaemonSet("daemon-set", WebserverImage, {daemonset-name: daemon-set})."""
    label = {NAME_LABEL: "daemon-set"}
    return {
        "metadata": {"name": "daemon-set"},
        "spec": {
            "selector": {"matchLabels": label},
            "template": {
                "metadata": {"labels": label},
                "spec": {
                    "containers": [
                        {"name": "app", "image": IMAGE, "ports": [{"containerPort": 9376}]}
                    ],
                    **spec,
                },
            },
        },
    }


def daemon_pods(core: client.CoreV1Api, ns: str) -> list[client.V1Pod]:
    return list(core.list_namespaced_pod(ns, label_selector=f"{NAME_LABEL}=daemon-set").items)


def on_nodes(core: client.CoreV1Api, ns: str) -> dict[str, str]:
    """checkDaemonPodOnNodes: node -> the one available (Ready) daemon pod not being deleted."""
    placed: dict[str, list[str]] = {}
    for pod in daemon_pods(core, ns):
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        if pod.metadata.deletion_timestamp is None and ready:
            placed.setdefault(pod.spec.node_name, []).append(pod.metadata.name)
    assert all(len(names) == 1 for names in placed.values()), placed
    return {node: names[0] for node, names in sorted(placed.items())}


def status(running: Running, ns: str) -> dict[str, Any]:
    """The DaemonSet's status as JSON, so that fields left out are seen left out."""
    raw = running.kubectl("get", "daemonset", "daemon-set", "-n", ns, "-o", "json")
    return dict(json.loads(raw)["status"])


def full(count: int, generation: int = 1) -> dict[str, int]:
    return {
        "currentNumberScheduled": count,
        "desiredNumberScheduled": count,
        "numberAvailable": count,
        "numberMisscheduled": 0,
        "numberReady": count,
        "observedGeneration": generation,
        "updatedNumberScheduled": count,
    }


#: A DaemonSet that should run nowhere: the omitempty counts are absent, as upstream's.
NOWHERE = {
    "currentNumberScheduled": 0,
    "desiredNumberScheduled": 0,
    "numberMisscheduled": 0,
    "numberReady": 0,
    "observedGeneration": 1,
}


def events(running: Running, ns: str, reason: str) -> list[tuple[str, str]]:
    raw = running.kubectl(
        "get", "events", "-n", ns, "--field-selector", f"reason={reason}", "-o", "json"
    )
    items = sorted(json.loads(raw)["items"], key=lambda e: (e["lastTimestamp"], e["message"]))
    return [(e["type"], e["message"]) for e in items]


def delete_namespace(running: Running, ns: str) -> None:
    """The AfterEach: the namespace and its daemon pods gone before the next case (the
    namespace controller starts 5 s after the delete and looks again 16 s later)."""
    running.kubectl("delete", "namespace", ns, "--wait=false")
    advance(running, "30s")
    done = running.kubectl.run("get", "namespace", ns)
    assert done.stderr == f'Error from server (NotFound): namespaces "{ns}" not found\n'


def test_simple_daemon_runs_everywhere_with_the_automatic_tolerations(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """Conformance "should run and stop simple daemon": a pod on every node, checkDaemonStatus,
    a deleted pod revived; each pod carries the tolerations the controller adds."""
    ns = namespace(core, "ds-simple")
    apps.create_namespaced_daemon_set(ns, new_daemon_set())
    advance(running, "0s")
    placed = on_nodes(core, ns)
    assert list(placed) == NODES
    assert status(running, ns) == full(3)
    for pod in daemon_pods(core, ns):
        assert [t.to_dict() for t in pod.spec.tolerations] == [
            {**t, "value": None, "toleration_seconds": None} for t in AUTOMATIC
        ]
    core.delete_namespaced_pod(placed["node-1"], ns)
    advance(running, "0s")
    revived = on_nodes(core, ns)
    assert list(revived) == NODES
    assert revived["node-1"] != placed["node-1"]
    assert revived["node-2"] == placed["node-2"]
    created = [message for _, message in events(running, ns, "SuccessfulCreate")]
    names = {*placed.values(), *revived.values()}
    assert sorted(created) == sorted(f"Created pod: {name}" for name in names)
    delete_namespace(running, ns)


def test_host_network_daemon_pods_also_tolerate_network_unavailable(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """AddOrUpdateDaemonPodTolerations: a hostNetwork pod also tolerates network-unavailable
    (NoSchedule), after the template's own tolerations and the six above; a template
    toleration equal to an automatic one is kept once, where the template has it."""
    ns = namespace(core, "ds-host-network")
    own = {"key": "dedicated", "operator": "Equal", "value": "agents", "effect": "NoSchedule"}
    apps.create_namespaced_daemon_set(
        ns, new_daemon_set(hostNetwork=True, tolerations=[own, AUTOMATIC[5]])
    )
    advance(running, "0s")
    assert list(on_nodes(core, ns)) == NODES
    for pod in daemon_pods(core, ns):
        assert [t.to_dict() for t in pod.spec.tolerations] == [
            {"toleration_seconds": None, **t, "value": t.get("value")}
            for t in [
                own,
                AUTOMATIC[5],
                *AUTOMATIC[:5],
                exists("network-unavailable", "NoSchedule"),
            ]
        ]
    delete_namespace(running, ns)


def set_color(core: client.CoreV1Api, node: str, color: str | None) -> None:
    """setDaemonSetNodeLabels: the node's daemonset-* labels replaced by COLOR (or none)."""
    core.patch_node(node, {"metadata": {"labels": {COLOR_LABEL: color}}})


def test_complex_daemon_follows_node_labels_and_its_node_selector(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """Conformance "should run and stop complex daemon": a node selector matching no node runs
    nowhere; labelling a node blue brings a pod, relabelling it green takes it away, and
    patching the selector to green (with RollingUpdate) brings it back."""
    ns = namespace(core, "ds-complex")
    apps.create_namespaced_daemon_set(ns, new_daemon_set(nodeSelector={COLOR_LABEL: "blue"}))
    try:
        advance(running, "0s")
        assert on_nodes(core, ns) == {}
        assert status(running, ns) == NOWHERE
        set_color(core, "node-2", "blue")
        advance(running, "0s")
        assert list(on_nodes(core, ns)) == ["node-2"]
        assert status(running, ns) == full(1)
        set_color(core, "node-2", "green")
        advance(running, "0s")
        assert on_nodes(core, ns) == {}
        patch = {
            "spec": {
                "template": {"spec": {"nodeSelector": {COLOR_LABEL: "green"}}},
                "updateStrategy": {"type": "RollingUpdate"},
            }
        }
        apps.patch_namespaced_daemon_set("daemon-set", ns, patch)
        advance(running, "0s")
        assert list(on_nodes(core, ns)) == ["node-2"]
        assert status(running, ns) == full(1, generation=2)
    finally:
        set_color(core, "node-2", None)
        delete_namespace(running, ns)


def test_complex_daemon_with_node_affinity(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """ "should run and stop complex daemon with node affinity": required affinity for blue;
    the daemon pod's own affinity names its node (matchFields metadata.name) instead; removing
    the label unschedules it (the controller deletes the pod)."""
    ns = namespace(core, "ds-affinity")
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": COLOR_LABEL, "operator": "In", "values": ["blue"]}
                        ]
                    }
                ]
            }
        }
    }
    apps.create_namespaced_daemon_set(ns, new_daemon_set(affinity=affinity))
    try:
        advance(running, "0s")
        assert on_nodes(core, ns) == {}
        set_color(core, "node-3", "blue")
        advance(running, "0s")
        placed = on_nodes(core, ns)
        assert list(placed) == ["node-3"]
        pod = core.read_namespaced_pod(placed["node-3"], ns)
        terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        assert [t.to_dict() for t in terms.node_selector_terms] == [
            {
                "match_expressions": None,
                "match_fields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}],
            }
        ]
        set_color(core, "node-3", None)
        advance(running, "0s")
        assert on_nodes(core, ns) == {}
        assert events(running, ns, "SuccessfulDelete") == [
            ("Normal", f"Deleted pod: {placed['node-3']}")
        ]
    finally:
        set_color(core, "node-3", None)
        delete_namespace(running, ns)


def test_failed_daemon_pod_is_replaced_and_deleted(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """Conformance "should retry creating failed daemon pods": a pod's phase set to Failed
    (UpdateStatus, resourceVersion cleared) is replaced on its node, with the controller's
    FailedDaemonPod warning, and the failed pod is deleted completely."""
    ns = namespace(core, "ds-failed")
    apps.create_namespaced_daemon_set(ns, new_daemon_set())
    advance(running, "0s")
    placed = on_nodes(core, ns)
    assert list(placed) == NODES
    pod = core.read_namespaced_pod(placed["node-1"], ns)
    pod.metadata.resource_version = None
    pod.status.phase = "Failed"
    core.replace_namespaced_pod_status(pod.metadata.name, ns, pod)
    advance(running, "0s")
    revived = on_nodes(core, ns)
    assert list(revived) == NODES
    assert revived["node-1"] != placed["node-1"]
    assert placed["node-1"] not in [p.metadata.name for p in daemon_pods(core, ns)]
    assert events(running, ns, "FailedDaemonPod") == [
        (
            "Warning",
            f"Found failed daemon pod {ns}/{placed['node-1']} on node node-1, will try to kill it",
        )
    ]
    assert status(running, ns) == full(3)
    delete_namespace(running, ns)


def test_daemon_pods_on_tainted_and_cordoned_nodes(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """schedulableNodes: a node whose NoSchedule taint the daemon pod does not tolerate gets
    none (and is not desired); a cordoned node gets one (unschedulable is tolerated). An
    untolerated NoSchedule taint added later leaves the running pod (misscheduled, no longer
    desired); an untolerated NoExecute taint has it deleted; removing the taints brings the
    pods back."""
    ns = namespace(core, "ds-tainted")
    running.kubectl("taint", "nodes", "node-3", "dedicated=other:NoSchedule")
    running.kubectl("cordon", "node-1")
    try:
        apps.create_namespaced_daemon_set(ns, new_daemon_set())
        advance(running, "0s")
        placed = on_nodes(core, ns)
        assert list(placed) == ["node-1", "node-2"]
        assert status(running, ns) == full(2)
        running.kubectl("taint", "nodes", "node-1", "dedicated=other:NoSchedule")
        advance(running, "0s")
        assert on_nodes(core, ns) == placed
        # Counted as updateDaemonSetStatus does: only nodes that should run a pod add up.
        assert status(running, ns) == {**full(1), "numberMisscheduled": 1}
        running.kubectl("taint", "nodes", "node-2", "evict=now:NoExecute")
        advance(running, "0s")
        assert list(on_nodes(core, ns)) == ["node-1"]
        assert status(running, ns) == {**NOWHERE, "numberMisscheduled": 1}
        running.kubectl("taint", "nodes", "node-1", "node-3", "dedicated-")
        running.kubectl("taint", "nodes", "node-2", "evict-")
    finally:
        running.kubectl.run("taint", "nodes", "node-1", "node-3", "dedicated-")
        running.kubectl.run("taint", "nodes", "node-2", "evict-")
        running.kubectl("uncordon", "node-1")
    advance(running, "0s")
    assert list(on_nodes(core, ns)) == NODES
    delete_namespace(running, ns)


def test_daemon_pods_stay_on_an_unreachable_node(
    running: Running, core: client.CoreV1Api, apps: client.AppsV1Api
) -> None:
    """The unreachable NoExecute toleration has no tolerationSeconds: when a node's kubelet
    falls silent, a plain pod (DefaultTolerationSeconds' 300 s) is evicted 300 s after the
    taint's timeAdded, the daemon pod is never marked for deletion."""
    ns = namespace(core, "ds-unreachable")
    apps.create_namespaced_daemon_set(ns, new_daemon_set())
    core.create_namespaced_pod(
        ns,
        {
            "metadata": {"name": "plain"},
            "spec": {
                "containers": [{"name": "app", "image": IMAGE}],
                "nodeSelector": {"kubernetes.io/hostname": "node-3"},
            },
        },
    )
    advance(running, "0s")
    daemon = on_nodes(core, ns)["node-3"]
    running.ok("node", "stop", "node-3")
    try:
        advance(running, "2m")
        taints = {t.effect: t for t in core.read_node("node-3").spec.taints or []}
        assert taints["NoExecute"].key == "node.kubernetes.io/unreachable"
        due = taints["NoExecute"].time_added.replace(tzinfo=None) + timedelta(seconds=300)
        now = advance(running, "0s")
        advance(running, f"{int((due - now).total_seconds()) - 1}s")
        assert core.read_namespaced_pod("plain", ns).metadata.deletion_timestamp is None
        assert advance(running, "1s") == due
        assert core.read_namespaced_pod("plain", ns).metadata.deletion_timestamp is not None
        assert events(running, ns, "TaintManagerEviction") == [
            ("Normal", f"Marking for deletion Pod {ns}/plain")
        ]
        advance(running, "1h")
        kept = core.read_namespaced_pod(daemon, ns)
        assert kept.metadata.deletion_timestamp is None
        assert kept.spec.node_name == "node-3"
    finally:
        running.ok("node", "start", "node-3")
        advance(running, "1m")
    assert core.read_node("node-3").spec.taints is None
    delete_namespace(running, ns)
