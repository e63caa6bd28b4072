"""``taintplane what-if taint nodes …`` as a user runs it: against a live ``taintplane up
--clock virtual`` (which it must not change), and against a snapshot kubectl wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_virtual_cluster_cli import Running, fails, stop, taints, up

HEADER = "What if: kubectl taint nodes {nodes} {taint}"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[Running]:
    running = up(tmp_path_factory.mktemp("what-if"), home, "--clock", "virtual", "--nodes", "3")
    try:
        running.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")
        running.ok("clock", "advance", "30s")
        yield running
    finally:
        stop(running)


def pods_by_node(running: Running) -> dict[str, list[str]]:
    listed = json.loads(running.kubectl("get", "pods", "-o", "json"))
    found: dict[str, list[str]] = {}
    for pod in listed["items"]:
        found.setdefault(pod["spec"]["nodeName"], []).append(pod["metadata"]["name"])
    return found


def test_what_if_on_the_live_cluster_changes_nothing_there(cluster: Running) -> None:
    now = cluster.ok("clock", "now").strip()
    before = pods_by_node(cluster)
    busiest = max(sorted(before), key=lambda node: len(before[node]))
    report = json.loads(
        cluster.ok("what-if", "taint", "nodes", busiest, "maintenance=true:NoExecute", "-o", "json")
    )
    assert (report["start"], report["nodes"], report["taints"]) == (
        now,
        [busiest],
        ["maintenance=true:NoExecute"],
    )
    # Default window: no pod tolerates the taint, so 30 s of grace and 5 minutes to settle.
    assert report["pods"]
    assert report["until"] != now
    assert sorted(p["name"] for p in report["pods"]) == sorted(before[busiest])
    assert {(p["outcome"], p["offsetSeconds"]) for p in report["pods"]} == {("evicted", 0.0)}
    assert len(report["replacements"]) == len(before[busiest])
    assert {r["node"] for r in report["replacements"]} <= {"node-1", "node-2", "node-3"} - {busiest}
    assert report["placementNote"] == (
        "where pods are scheduled is one possible outcome: nodes that score equally are chosen "
        "at random, as the scheduler does"
    )
    first = report["timeline"][0]
    assert (first["event"], first["name"], first["detail"], first["offsetSeconds"]) == (
        "tainted",
        busiest,
        "maintenance=true:NoExecute",
        0.0,
    )
    # The cluster itself: untainted, same pods, same instant.
    assert taints(cluster, busiest) == []
    assert pods_by_node(cluster) == before
    assert cluster.ok("clock", "now").strip() == now


def test_what_if_reads_a_kubectl_snapshot_and_prints_a_timeline(
    cluster: Running, tmp_path: Path
) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(
        cluster.kubectl(
            "get",
            "nodes,pods,replicasets,deployments,daemonsets,poddisruptionbudgets",
            "-A",
            "-o",
            "yaml",
        )
    )
    text = cluster.ok(
        "what-if",
        "taint",
        "nodes",
        "node-1",
        "node-3",
        "gpu=true:NoSchedule",
        "--snapshot",
        str(snapshot),
        "--until",
        "10m",
    )
    lines = text.splitlines()
    assert lines[0] == HEADER.format(nodes="node-1 node-3", taint="gpu=true:NoSchedule")
    assert lines[1].startswith("Simulated from ")
    assert lines[1].endswith(" for 10m0s (nothing was changed in the cluster).")
    assert lines[3].split() == ["TIME", "EVENT", "OBJECT", "DETAIL"]
    assert lines[4].split() == ["+0s", "tainted", "node/node-1", "gpu=true:NoSchedule"]
    assert lines[5].split() == ["+0s", "tainted", "node/node-3", "gpu=true:NoSchedule"]
    assert lines[6:8] == ["", "Pods on the tainted nodes:"]
    assert lines[-1].startswith("Summary: of ")
    assert lines[-1].endswith(
        " on the tainted nodes, 0 evicted, 0 deleted; 0 pods created, 0 scheduled, 0 pending."
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("nodes", "nope", "a=b:NoSchedule"), 1, 'Error: nodes "nope" not found'),
        (
            ("pods", "x", "a=b:NoSchedule"),
            1,
            "Error: invalid resource type pods, only node types are supported",
        ),
        (
            ("nodes", "node-1", "a=b:Bogus"),
            2,
            "Error: invalid taint effect: Bogus, unsupported taint effect",
        ),
        (("nodes", "node-1"), 2, "Error: at least one taint update is required"),
        (
            ("nodes", "node-1", "a:NoSchedule", "--until", "soon"),
            2,
            'Error: Invalid value for --until: time: invalid duration "soon" (use e.g. 30m, 1h30m)',
        ),
        (
            ("nodes", "node-1", "a:NoSchedule", "--snapshot", "/nonexistent/snap.yaml"),
            2,
            "Error: cannot read snapshot /nonexistent/snap.yaml: No such file or directory",
        ),
    ],
)
def test_what_if_refuses_clearly(
    cluster: Running, args: tuple[str, ...], code: int, message: str
) -> None:
    fails(cluster.taintplane("what-if", "taint", *args), code, message)


SNAPSHOT_FROM_ELSEWHERE = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: worker, uid: 6d1c1d0e-0000-4000-8000-000000000001}
  status:
    conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-03-01T10:00:00Z"}]
    capacity: {cpu: "4", memory: 16Gi, pods: "110"}
- apiVersion: v1
  kind: Pod
  metadata:
    name: db-0
    namespace: default
    uid: 6d1c1d0e-0000-4000-8000-000000000002
    ownerReferences:
    - {apiVersion: apps/v1, kind: StatefulSet, name: db, uid: 6d1c1d0e-0000-4000-8000-000000000003, controller: true}
  spec: {nodeName: worker, containers: [{name: c, image: postgres}]}
  status: {phase: Running}
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db, namespace: default, uid: 6d1c1d0e-0000-4000-8000-000000000003}
  spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c, image: postgres}]}}}
- apiVersion: v1
  kind: Service
  metadata: {name: db, namespace: default}
  spec: {ports: [{port: 5432}]}
"""


def test_what_if_says_what_it_could_not_simulate(cluster: Running, tmp_path: Path) -> None:
    snapshot = tmp_path / "elsewhere.yaml"
    snapshot.write_text(SNAPSHOT_FROM_ELSEWHERE)
    done = cluster.taintplane(
        "what-if", "taint", "nodes", "worker", "maint=1:NoExecute", "--snapshot", str(snapshot)
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the copy's components keep their logs to themselves
    assert "Not simulated (the copy runs without them): apps/v1 StatefulSet, v1 Service" in (
        done.stdout
    )
    row = next(line for line in done.stdout.splitlines() if line.startswith("default     db-0"))
    assert row.endswith("; its owner StatefulSet/db is not simulated: a replacement is not shown")


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_selector_matching_no_node_changes_nothing_and_succeeds_as_kubectl_does(
    cluster: Running, output: str
) -> None:
    taint = ("nodes", "-l", "pool=zzz", "x=y:NoExecute")
    real = cluster.kubectl.run("taint", *taint)
    assert (real.returncode, real.stdout) == (0, "")
    done = cluster.taintplane("what-if", "taint", *taint, "-o", output)
    assert (done.returncode, done.stderr) == (0, "")
    message = "No node matches -l pool=zzz: nothing would change."
    if output == "text":
        assert done.stdout == message + "\n"
    else:
        assert json.loads(done.stdout) == {"nodes": [], "summary": message}
