"""What a simulated kubelet does with a pod while it runs, as upstream's: init containers and
sidecars, a changed image restarts its container, the active deadline fails the pod, a status
someone else changed is reconciled every 10 s, a host-network pod has its node's address, a
shorter grace period brings the stop forward — on virtual time, at exact instants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taintplane.agents.nodes import NodeShape
from taintplane.client import resource
from tests.controllers.harness import Sim, simulate
from tests.scheduler.builders import make_pod

PODS = resource("", "v1", "pods")


def pod(name: str, **spec: Any) -> dict[str, Any]:
    made = make_pod(name, node_name="node-1")
    made["spec"]["containers"] = [{"name": "web", "image": "nginx:1.27"}]
    made["spec"].update(spec)
    return made


def run(tmp_path: Path, scenario: Any) -> None:
    simulate(tmp_path, scenario, components=("agents",), nodes=[NodeShape("node-1")])


def condition(found: dict[str, Any], type_: str) -> tuple[str, str | None, str]:
    for c in found["status"]["conditions"]:
        if c["type"] == type_:
            return c["status"], c.get("reason"), c["lastTransitionTime"]
    raise AssertionError(f"no {type_} condition")


def test_init_containers_complete_and_sidecars_run(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(
            pod(
                "init",
                initContainers=[
                    {"name": "setup", "image": "busybox:1.36"},
                    {"name": "proxy", "image": "envoy:1.30", "restartPolicy": "Always"},
                ],
            )
        )
        await sim.advance(1)
        found = await sim.pod("init")
        assert found is not None
        assert found["status"]["phase"] == "Running"
        setup, proxy = found["status"]["initContainerStatuses"]
        assert setup["name"] == "setup"
        assert setup["state"]["terminated"]["exitCode"] == 0
        assert setup["state"]["terminated"]["reason"] == "Completed"
        assert (setup["ready"], setup["started"]) == (True, False)
        assert proxy["name"] == "proxy"
        assert proxy["state"] == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
        assert (proxy["ready"], proxy["started"]) == (True, True)
        fields = [e["involvedObject"]["fieldPath"] for e in await sim.events("Started")]
        assert fields == [
            "spec.initContainers{setup}",
            "spec.initContainers{proxy}",
            "spec.containers{web}",
        ]

    run(tmp_path, scenario)


def test_a_changed_image_restarts_its_container(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("web"))
        await sim.advance(5)
        patch = {"spec": {"containers": [{"name": "web", "image": "httpd:2.4"}]}}
        await sim.client.patch(PODS, "web", patch, namespace="default", patch_type="strategic")
        await sim.advance(1)
        found = await sim.pod("web")
        assert found is not None
        (status,) = found["status"]["containerStatuses"]
        assert status["image"] == "httpd:2.4"
        assert status["restartCount"] == 1
        assert status["state"] == {"running": {"startedAt": "2026-01-01T00:00:05Z"}}
        last = status["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (0, "Completed")
        assert (last["startedAt"], last["finishedAt"]) == (
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:05Z",
        )
        assert status["containerID"] != last["containerID"]
        killing = [e["message"] for e in await sim.events("Killing")]
        assert killing == ["Container web definition changed, will be restarted"]

    run(tmp_path, scenario)


def test_the_active_deadline_fails_the_pod_at_its_instant(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("deadline", activeDeadlineSeconds=30))
        await sim.advance(29.9)
        running = await sim.pod("deadline")
        assert running is not None
        assert running["status"]["phase"] == "Running"
        await sim.advance(0.1)
        failed = await sim.pod("deadline")
        assert failed is not None
        assert failed["status"]["phase"] == "Failed"
        assert failed["status"]["reason"] == "DeadlineExceeded"
        assert (
            failed["status"]["message"]
            == "Pod was active on the node longer than the specified deadline"
        )
        assert condition(failed, "Ready") == ("False", "PodFailed", "2026-01-01T00:00:30Z")
        [event] = await sim.events("DeadlineExceeded")
        assert (event["type"], event["message"]) == (
            "Normal",
            "Pod was active on the node longer than the specified deadline",
        )

    run(tmp_path, scenario)


def test_a_status_changed_by_another_writer_is_reconciled_within_ten_seconds(
    tmp_path: Path,
) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("web"))
        await sim.advance(1)
        # What the node lifecycle controller's MarkPodsNotReady writes.
        not_ready = {
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "lastTransitionTime": "2026-01-01T00:00:01Z",
                    }
                ]
            }
        }
        await sim.client.patch(
            PODS,
            "web",
            not_ready,
            namespace="default",
            patch_type="strategic",
            subresource="status",
        )
        await sim.advance(0)
        found = await sim.pod("web")
        assert found is not None
        assert condition(found, "Ready")[0] == "False"  # not at once: at the next reconcile
        await sim.advance_to(10)
        found = await sim.pod("web")
        assert found is not None
        assert condition(found, "Ready") == ("True", None, "2026-01-01T00:00:10Z")

    run(tmp_path, scenario)


def test_a_host_network_pod_has_its_nodes_address(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("host", hostNetwork=True))
        await sim.advance(1)
        found = await sim.pod("host")
        assert found is not None
        status = found["status"]
        assert status["podIP"] == status["hostIP"]
        assert status["podIPs"] == status["hostIPs"]

    run(tmp_path, scenario)


def test_a_shorter_grace_period_brings_the_stop_forward(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        slow = pod("slow", terminationGracePeriodSeconds=30)
        slow["metadata"]["annotations"] = {"sim.taintplane.io/shutdown-seconds": "100"}
        await sim.create_pod(slow)
        await sim.advance(1)
        await sim.client.delete(PODS, "slow", "default")
        await sim.advance(1)
        await sim.client.delete(PODS, "slow", "default", grace_period=5)
        await sim.advance(4.9)
        assert await sim.pod("slow") is not None
        await sim.advance(0.1)
        assert await sim.pod("slow") is None  # at 2 + 5 s, not at 1 + 30 s

    run(tmp_path, scenario)


def test_the_kubelet_refuses_a_pod_bound_past_the_schedulers_checks(tmp_path: Path) -> None:
    async def scenario(sim: Sim) -> None:
        await sim.create_pod(pod("windows", os={"name": "windows"}))
        await sim.create_pod(pod("elsewhere", nodeSelector={"kubernetes.io/hostname": "node-2"}))
        labelled = pod("labelled")
        labelled["metadata"]["labels"] = {"kubernetes.io/os": "windows"}
        await sim.create_pod(labelled)
        await sim.create_pod(pod("fits", os={"name": "linux"}))
        await sim.advance(1)
        expected = {
            "windows": (
                "PodOSNotSupported",
                "Failed to admit pod as the OS field doesn't match node OS",
            ),
            "elsewhere": (
                "NodeAffinity",
                "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
            ),
            "labelled": (
                "PodOSSelectorNodeLabelDoesNotMatch",
                "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
            ),
        }
        for name, (reason, message) in expected.items():
            found = await sim.pod(name)
            assert found is not None
            status = found["status"]
            assert (status["phase"], status["reason"], status["message"]) == (
                "Failed",
                reason,
                f"Pod was rejected: {message}",
            )
            [event] = [e for e in await sim.events(reason) if e["involvedObject"]["name"] == name]
            assert (event["type"], event["message"]) == ("Warning", message)
        fits = await sim.pod("fits")
        assert fits is not None
        assert fits["status"]["phase"] == "Running"

    run(tmp_path, scenario)


def requesting(name: str, node: str = "node-1", **requests: str) -> dict[str, Any]:
    made = pod(name)
    made["spec"]["nodeName"] = node
    resources: dict[str, Any] = {"requests": dict(requests)}
    # Extended resources cannot be overcommitted: the API wants their limits set (and equal).
    extended = {k: v for k, v in requests.items() if "/" in k}
    if extended:
        resources["limits"] = extended
    made["spec"]["containers"][0]["resources"] = resources
    return made


def test_the_kubelet_refuses_what_its_node_cannot_hold(tmp_path: Path) -> None:
    """lifecycle/predicate.go: the pods it already runs count against the node's allocatable;
    the first shortfall is the reason (OutOfcpu, OutOfpods, OutOf<extended>)."""

    async def scenario(sim: Sim) -> None:
        await sim.create_pod(requesting("big", cpu="1500m", memory="1Gi"))
        await sim.advance(1)
        await sim.create_pod(requesting("more", cpu="1", memory="1Gi"))
        await sim.create_pod(requesting("gpus", **{"example.com/gpu": "3"}))
        # An extended resource the node does not have is a cluster-level one: not counted.
        await sim.create_pod(requesting("licensed", **{"example.com/licence": "1"}))
        await sim.advance(1)
        expected = {
            "more": (
                "OutOfcpu",
                "Node didn't have enough resource: cpu, requested: 1000, used: 1500, "
                "capacity: 2000",
            ),
            "gpus": (
                "OutOfexample.com/gpu",
                "Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, "
                "capacity: 2",
            ),
        }
        for name, (reason, message) in expected.items():
            found = await sim.pod(name)
            assert found is not None
            status = found["status"]
            assert (status["phase"], status["reason"], status["message"]) == (
                "Failed",
                reason,
                f"Pod was rejected: {message}",
            )
            [event] = [e for e in await sim.events(reason) if e["involvedObject"]["name"] == name]
            assert (event["type"], event["message"]) == ("Warning", message)
        licensed = await sim.pod("licensed")
        assert licensed is not None
        assert licensed["status"]["phase"] == "Running"
        # Three pods run now (big, licensed) plus one more fits; the fourth is one too many.
        await sim.create_pod(requesting("third"))
        await sim.advance(1)
        await sim.create_pod(requesting("fourth"))
        await sim.advance(1)
        fourth = await sim.pod("fourth")
        assert fourth is not None
        assert (fourth["status"]["reason"], fourth["status"]["message"]) == (
            "OutOfpods",
            "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, "
            "capacity: 3",
        )
        # Room is given back when a pod is gone: the same request fits now.
        await sim.client.delete(PODS, "big", "default")
        await sim.advance(31)
        await sim.create_pod(requesting("later", cpu="1"))
        await sim.advance(1)
        later = await sim.pod("later")
        assert later is not None
        assert later["status"]["phase"] == "Running"

    shape = NodeShape(
        "node-1", capacity={"cpu": "2", "memory": "8Gi", "pods": "3", "example.com/gpu": "2"}
    )
    simulate(tmp_path, scenario, components=("agents",), nodes=[shape])


def test_the_kubelet_refuses_a_host_port_already_taken_on_its_node(tmp_path: Path) -> None:
    """predicate.go's generalFilter checks host ports too (AdmissionCheck: NodePorts)."""

    def on_port(name: str, host_ip: str = "") -> dict[str, Any]:
        made = pod(name)
        port: dict[str, Any] = {"containerPort": 80, "hostPort": 8080}
        if host_ip:
            port["hostIP"] = host_ip
        made["spec"]["containers"][0]["ports"] = [port]
        return made

    async def scenario(sim: Sim) -> None:
        await sim.create_pod(on_port("first", "10.0.0.1"))
        await sim.advance(1)
        await sim.create_pod(on_port("other-ip", "10.0.0.2"))  # another address: free
        await sim.create_pod(on_port("every-ip"))  # 0.0.0.0 collides with any address
        await sim.advance(1)
        other = await sim.pod("other-ip")
        assert other is not None
        assert other["status"]["phase"] == "Running"
        refused = await sim.pod("every-ip")
        assert refused is not None
        assert (refused["status"]["phase"], refused["status"]["reason"]) == ("Failed", "NodePorts")
        assert refused["status"]["message"] == (
            "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for "
            "the requested pod ports"
        )

    run(tmp_path, scenario)
