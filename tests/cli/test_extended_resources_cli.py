"""Extended resources advertised through the API, as the Kubernetes docs' "Advertise Extended
Resources for a Node" does (a JSON patch of the node's status capacity alone): the kubelet's
next status update makes allocatable follow capacity, as upstream's MachineInfo setter does,
and takes the resource out of allocatable once it leaves capacity. Preemption's e2e tests
(e2enode.AddExtendedResource) patch both, which the kubelet keeps."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.cli.test_virtual_cluster_cli import Running, stop, up

DONGLE = "example.com/dongle"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    cluster = up(
        tmp_path_factory.mktemp("extended"),
        tmp_path_factory.mktemp("home"),
        "--clock",
        "virtual",
        "--nodes",
        "2",
    )
    try:
        yield cluster
    finally:
        stop(cluster)


def resources(running: Running, node: str) -> tuple[str, str]:
    raw = running.kubectl(
        "get", "node", node, "-o", "jsonpath={.status.capacity} {.status.allocatable}"
    )
    capacity, allocatable = (json.loads(part) for part in raw.split(" "))
    return capacity.get(DONGLE, "-"), allocatable.get(DONGLE, "-")


def test_allocatable_follows_a_capacity_advertised_through_the_api(running: Running) -> None:
    kubectl = running.kubectl
    add = [{"op": "add", "path": "/status/capacity/example.com~1dongle", "value": "4"}]
    kubectl("patch", "node", "node-1", "--subresource=status", "--type=json", "-p", json.dumps(add))
    running.ok("clock", "advance", "0s")
    assert resources(running, "node-1") == ("4", "-")
    # The kubelet's next status update (every 10 s) writes allocatable from capacity.
    running.ok("clock", "advance", "10s")
    assert resources(running, "node-1") == ("4", "4")
    pod = {
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {DONGLE: "3"}, "limits": {DONGLE: "3"}},
                }
            ]
        }
    }
    kubectl("run", "dongle", "--image=registry.k8s.io/pause:3.10", f"--overrides={json.dumps(pod)}")
    running.ok("clock", "advance", "0s")
    assert kubectl("get", "pod", "dongle", "-o", "jsonpath={.spec.nodeName}") == "node-1"

    # Gone from capacity: the kubelet takes it out of allocatable too.
    remove = [{"op": "remove", "path": "/status/capacity/example.com~1dongle"}]
    kubectl(
        "patch", "node", "node-1", "--subresource=status", "--type=json", "-p", json.dumps(remove)
    )
    running.ok("clock", "advance", "10s")
    assert resources(running, "node-1") == ("-", "-")
    # Nodes nobody touched write nothing new: their allocatable is their capacity.
    assert resources(running, "node-2") == ("-", "-")
    assert json.loads(
        kubectl("get", "node", "node-2", "-o", "jsonpath={.status.allocatable}")
    ) == json.loads(kubectl("get", "node", "node-2", "-o", "jsonpath={.status.capacity}"))


def test_capacity_and_allocatable_patched_together_are_kept(running: Running) -> None:
    """e2enode.AddExtendedResource: a strategic merge patch of both."""
    patch = {"status": {"capacity": {DONGLE: "5"}, "allocatable": {DONGLE: "5"}}}
    running.kubectl("patch", "node", "node-2", "--subresource=status", "-p", json.dumps(patch))
    running.ok("clock", "advance", "10m")
    assert resources(running, "node-2") == ("5", "5")
