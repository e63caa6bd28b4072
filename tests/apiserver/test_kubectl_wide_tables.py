"""kubectl get ... [-o wide] for workloads, events and ResourceClaims: the columns and cells
of upstream's printers (Deployment/ReplicaSet/DaemonSet CONTAINERS, IMAGES, SELECTOR; Event
SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME; ResourceClaim STATE)."""

from __future__ import annotations

from typing import Any

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: wide-web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: wide-web}
    matchExpressions: [{key: tier, operator: In, values: [front, edge]}]
  template:
    metadata: {labels: {app: wide-web, tier: front}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
      - {name: proxy, image: "envoy:v1.30"}
"""
EVENT = """
apiVersion: v1
kind: Event
metadata: {name: wide-web-abc.1}
involvedObject: {kind: Pod, name: wide-web-abc, namespace: default, fieldPath: "spec.containers{web}"}
reason: Killing
message: "Stopping container web  "
source: {component: kubelet, host: node-1}
type: Normal
count: 3
firstTimestamp: "2020-01-01T00:00:00Z"
lastTimestamp: "2020-01-01T00:00:00Z"
"""
CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: wide-claim}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()]


def by_name(output: str, name: str) -> dict[str, Any]:
    """The row named ``name``, keyed by header (headers of two words joined by a space)."""
    lines = output.splitlines()
    header = lines[0]
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 1] == " ")]
    # Headers are separated by at least two spaces ("FIRST SEEN" is one header).
    columns = [s for s in starts if s == 0 or header[s - 2 : s] == "  "]
    names = [header[a:b].strip() for a, b in zip(columns, [*columns[1:], None], strict=True)]
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(columns, [*columns[1:], None], strict=True)]
        if (cells and cells[0] == name) or name in cells:
            return dict(zip(names, cells, strict=True))
    raise AssertionError(f"{name} not in:\n{output}")


WIDE_CELLS = {
    "CONTAINERS": "web,proxy",
    "IMAGES": "nginx:1.27,envoy:v1.30",
    "SELECTOR": "app=wide-web,tier in (edge,front)",
}


def test_deployment_wide_columns(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    plain = rows(kubectl("get", "deployment", "wide-web"))
    assert plain[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert plain[1][:4] == ["wide-web", "0/2", "0", "0"]
    wide = by_name(kubectl("get", "deployment", "wide-web", "-o", "wide"), "wide-web")
    assert list(wide) == [
        "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]  # fmt: skip
    assert {k: wide[k] for k in WIDE_CELLS} == WIDE_CELLS


def test_replicaset_and_daemonset_wide_columns(kubectl) -> None:
    rs = DEPLOYMENT.replace("kind: Deployment", "kind: ReplicaSet").replace(
        "metadata: {name: wide-web}", "metadata: {name: wide-rs}"
    )
    kubectl("apply", "-f", "-", stdin=rs)
    wide = by_name(kubectl("get", "replicaset", "wide-rs", "-o", "wide"), "wide-rs")
    assert list(wide) == [
        "NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]  # fmt: skip
    assert {k: wide[k] for k in WIDE_CELLS} == WIDE_CELLS
    ds = (
        DEPLOYMENT.replace("kind: Deployment", "kind: DaemonSet")
        .replace("metadata: {name: wide-web}", "metadata: {name: wide-ds}")
        .replace("  replicas: 2\n", "")
    )
    kubectl("apply", "-f", "-", stdin=ds)
    wide = by_name(kubectl("get", "daemonset", "wide-ds", "-o", "wide"), "wide-ds")
    assert list(wide) == [
        "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR",
        "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]  # fmt: skip
    assert wide["NODE SELECTOR"] == "<none>"
    assert {k: wide[k] for k in WIDE_CELLS} == WIDE_CELLS


def test_event_wide_columns(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=EVENT)
    plain = by_name(kubectl("get", "events", "--field-selector", "reason=Killing"), "Killing")
    assert list(plain) == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert plain["OBJECT"] == "pod/wide-web-abc"
    assert plain["MESSAGE"] == "Stopping container web"  # trimmed, as upstream
    wide = by_name(
        kubectl("get", "events", "--field-selector", "reason=Killing", "-o", "wide"), "Killing"
    )
    assert list(wide) == [
        "LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
        "FIRST SEEN", "COUNT", "NAME",
    ]  # fmt: skip
    assert wide["SUBOBJECT"] == "spec.containers{web}"
    assert wide["SOURCE"] == "kubelet, node-1"
    assert wide["COUNT"] == "3"
    assert wide["NAME"] == "wide-web-abc.1"
    assert wide["FIRST SEEN"] == wide["LAST SEEN"]


def test_resourceclaim_state(kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=CLAIM)
    got = rows(kubectl("get", "resourceclaims", "wide-claim"))
    assert got[0] == ["NAME", "STATE", "AGE"]
    assert got[1][:2] == ["wide-claim", "pending"]
