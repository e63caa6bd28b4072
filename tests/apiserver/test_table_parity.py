"""The Tables kube-apiserver returns for ``kubectl get``, checked cell by cell on virtual time:
RoleBinding/ClusterRoleBinding (printRoleBinding), Role/ClusterRole (the default table
convertor's CREATED AT), DeviceTaintRule (printDeviceTaint), ResourceSlice's NODE, Node's -o
wide <unknown>s, and printPod's READY/STATUS/RESTARTS with init containers, sidecars and
restart times. Each through the Table JSON and through kubectl's own output."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from taintplane.clock import VirtualClock
from taintplane.sim.cluster import Cluster, running_cluster
from tests.apiserver.test_kubectl_wide_tables import by_name
from tests.conftest import Kubectl

T0 = datetime(2026, 11, 25, 18, 50, 37, tzinfo=UTC)
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def clock() -> VirtualClock:
    return VirtualClock(T0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, clock: VirtualClock) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("tables"), clock=clock, components=()) as c:
        yield c


@pytest.fixture(scope="module")
def http(cluster: Cluster) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        yield client


def advance(cluster: Cluster, clock: VirtualClock, seconds: float) -> None:
    assert cluster.loop is not None
    asyncio.run_coroutine_threadsafe(clock.advance(seconds), cluster.loop).result(10)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def table(http: httpx.Client, path: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The column definitions and the one row's cells (by column name) of a GET as a Table."""
    response = http.get(path, headers=TABLE)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["kind"] == "Table"
    columns = body["columnDefinitions"]
    [row] = body["rows"]
    return columns, dict(zip([c["name"] for c in columns], row["cells"], strict=True))


def shape(columns: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(c["name"], c["type"], c["priority"]) for c in columns]


def create(http: httpx.Client, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    response = http.post(path, json=obj)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


# ---- RBAC ----------------------------------------------------------------------------------

SUBJECTS = [
    {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
    {"kind": "ServiceAccount", "name": "builder", "namespace": "kube-system"},
    {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
    {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
    {"kind": "ServiceAccount", "name": "default", "namespace": "default"},
]
BINDING_COLUMNS = [
    ("Name", "string", 0),
    ("Role", "string", 0),
    ("Age", "string", 0),
    ("Users", "string", 1),
    ("Groups", "string", 1),
    ("ServiceAccounts", "string", 1),
]


def test_role_bindings_print_their_role_and_subjects(
    http: httpx.Client, kubectl: Kubectl, cluster: Cluster, clock: VirtualClock
) -> None:
    create(
        http,
        f"{RBAC}/namespaces/default/rolebindings",
        {
            "metadata": {"name": "readers"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": SUBJECTS,
        },
    )
    create(
        http,
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": "parity-admins"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": SUBJECTS[2:3],
        },
    )
    advance(cluster, clock, 90)
    columns, cells = table(http, f"{RBAC}/namespaces/default/rolebindings/readers")
    assert shape(columns) == BINDING_COLUMNS
    assert columns[3]["description"] == "Users in the roleBinding"
    assert cells == {
        "Name": "readers",
        "Role": "Role/reader",
        "Age": "90s",
        "Users": "alice, bob",
        "Groups": "devs",
        "ServiceAccounts": "kube-system/builder, default/default",
    }
    columns, cells = table(http, f"{RBAC}/clusterrolebindings/parity-admins")
    assert shape(columns) == BINDING_COLUMNS
    assert columns[5]["description"] == "ServiceAccounts in the clusterRoleBinding"
    assert list(cells.values()) == [
        "parity-admins",
        "ClusterRole/cluster-admin",
        "90s",
        "",
        "devs",
        "",
    ]

    plain = kubectl("get", "rolebinding", "readers").splitlines()
    assert plain[0].split() == ["NAME", "ROLE", "AGE"]
    assert plain[1].split() == ["readers", "Role/reader", "90s"]
    wide = by_name(kubectl("get", "rolebinding", "readers", "-o", "wide"), "readers")
    assert wide == {
        "NAME": "readers",
        "ROLE": "Role/reader",
        "AGE": "90s",
        "USERS": "alice, bob",
        "GROUPS": "devs",
        "SERVICEACCOUNTS": "kube-system/builder, default/default",
    }
    wide = by_name(
        kubectl("get", "clusterrolebinding", "parity-admins", "-o", "wide"), "parity-admins"
    )
    assert wide["ROLE"] == "ClusterRole/cluster-admin"
    assert (wide["USERS"], wide["GROUPS"], wide["SERVICEACCOUNTS"]) == ("", "devs", "")


def test_roles_print_the_default_columns_name_and_created_at(
    http: httpx.Client, kubectl: Kubectl, clock: VirtualClock
) -> None:
    created = stamp(clock.now())
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    create(
        http, f"{RBAC}/namespaces/default/roles", {"metadata": {"name": "reader"}, "rules": rules}
    )
    create(http, f"{RBAC}/clusterroles", {"metadata": {"name": "parity-reader"}, "rules": rules})
    for path in (f"{RBAC}/namespaces/default/roles/reader", f"{RBAC}/clusterroles/parity-reader"):
        columns, cells = table(http, path)
        assert shape(columns) == [("Name", "string", 0), ("Created At", "date", 0)]
        assert columns[1]["format"] == ""
        assert columns[1]["description"].startswith("CreationTimestamp is a timestamp")
        assert list(cells.values()) == [path.rsplit("/", 1)[1], created]
    got = kubectl("get", "clusterrole", "parity-reader").splitlines()
    assert got[0].split() == ["NAME", "CREATED", "AT"]
    assert got[1].split() == ["parity-reader", created]
    got = kubectl("get", "role", "reader").splitlines()
    assert got[1].split() == ["reader", created]


# ---- DRA -----------------------------------------------------------------------------------


def test_device_taint_rules_print_their_taint(
    http: httpx.Client, kubectl: Kubectl, cluster: Cluster, clock: VirtualClock
) -> None:
    path = "/apis/resource.k8s.io/v1alpha3/devicetaintrules"
    added = clock.now() - timedelta(hours=3)
    taint = {"key": "example.com/unhealthy", "value": "ecc", "effect": "NoExecute"}
    create(
        http,
        path,
        {
            "apiVersion": "resource.k8s.io/v1alpha3",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "ecc-errors"},
            "spec": {"deviceSelector": {}, "taint": {**taint, "timeAdded": stamp(added)}},
        },
    )
    # Without a timeAdded the server stamps its own time.
    create(
        http,
        path,
        {
            "apiVersion": "resource.k8s.io/v1alpha3",
            "kind": "DeviceTaintRule",
            "metadata": {"name": "drain"},
            "spec": {"taint": {"key": "example.com/drain", "effect": "NoSchedule"}},
        },
    )
    advance(cluster, clock, 45)
    columns, cells = table(http, f"{path}/ecc-errors")
    assert shape(columns) == [
        ("Name", "string", 0),
        ("Key", "string", 0),
        ("Value", "string", 0),
        ("Effect", "string", 0),
        ("TimeAdded", "string", 0),
        ("Age", "string", 0),
    ]
    assert columns[1]["description"] == (
        "The taint key to be applied to a device. Must be a label name."
    )
    assert list(cells.values()) == [
        "ecc-errors", "example.com/unhealthy", "ecc", "NoExecute", "3h", "45s",
    ]  # fmt: skip
    _, cells = table(http, f"{path}/drain")
    assert list(cells.values()) == ["drain", "example.com/drain", "", "NoSchedule", "45s", "45s"]

    output = kubectl("get", "devicetaintrules.v1alpha3.resource.k8s.io")
    assert output.splitlines()[0].split() == ["NAME", "KEY", "VALUE", "EFFECT", "TIMEADDED", "AGE"]
    assert by_name(output, "ecc-errors") == {
        "NAME": "ecc-errors",
        "KEY": "example.com/unhealthy",
        "VALUE": "ecc",
        "EFFECT": "NoExecute",
        "TIMEADDED": "3h",
        "AGE": "45s",
    }
    assert by_name(output, "drain")["VALUE"] == ""


def test_a_resource_slice_for_all_nodes_has_an_empty_node(
    http: httpx.Client, kubectl: Kubectl
) -> None:
    create(
        http,
        "/apis/resource.k8s.io/v1/resourceslices",
        {
            "metadata": {"name": "network-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "allNodes": True,
                "pool": {"name": "fabric", "generation": 1, "resourceSliceCount": 1},
            },
        },
    )
    columns, cells = table(http, "/apis/resource.k8s.io/v1/resourceslices/network-gpus")
    assert [c["name"] for c in columns] == ["Name", "Node", "Driver", "Pool", "Age"]
    assert list(cells.values())[:4] == ["network-gpus", "", "gpu.example.com", "fabric"]
    got = by_name(kubectl("get", "resourceslices", "network-gpus"), "network-gpus")
    assert (got["NODE"], got["DRIVER"], got["POOL"]) == ("", "gpu.example.com", "fabric")


# ---- nodes ---------------------------------------------------------------------------------


def test_a_node_without_system_info_prints_unknown_wide(
    http: httpx.Client, kubectl: Kubectl
) -> None:
    create(http, "/api/v1/nodes", {"metadata": {"name": "bare-node"}})
    _, cells = table(http, "/api/v1/nodes/bare-node")
    assert cells["Version"] == ""
    assert [cells[c] for c in ("Internal-IP", "External-IP")] == ["<none>", "<none>"]
    assert [cells[c] for c in ("OS-Image", "Kernel-Version", "Container-Runtime")] == [
        "<unknown>"
    ] * 3
    wide = by_name(kubectl("get", "node", "bare-node", "-o", "wide"), "bare-node")
    assert wide["OS-IMAGE"] == wide["KERNEL-VERSION"] == wide["CONTAINER-RUNTIME"] == "<unknown>"
    assert wide["INTERNAL-IP"] == wide["EXTERNAL-IP"] == "<none>"


# ---- pods ----------------------------------------------------------------------------------


def make_pod(
    http: httpx.Client,
    name: str,
    containers: list[str],
    status: dict[str, Any],
    init: list[dict[str, Any]] | None = None,
) -> None:
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    if init:
        spec["initContainers"] = [{"image": "busybox", **c} for c in init]
    pod = create(
        http, "/api/v1/namespaces/default/pods", {"metadata": {"name": name}, "spec": spec}
    )
    pod["status"] = status
    response = http.put(f"/api/v1/namespaces/default/pods/{name}/status", json=pod)
    assert response.status_code == 200, response.text


def running(name: str, *, restarts: int = 0, finished: datetime | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "name": name,
        "image": "busybox",
        "imageID": "",
        "ready": True,
        "started": True,
        "restartCount": restarts,
        "state": {"running": {"startedAt": "2026-11-25T18:00:00Z"}},
    }
    if finished is not None:
        state["lastState"] = {
            "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": stamp(finished)}
        }
    return state


def terminated(name: str, exit_code: int, reason: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "busybox",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": {"exitCode": exit_code, "reason": reason}},
    }


def conditions(**status: bool) -> list[dict[str, str]]:
    return [{"type": k, "status": "True" if v else "False"} for k, v in status.items()]


def test_pod_ready_status_and_restarts(
    http: httpx.Client, kubectl: Kubectl, clock: VirtualClock
) -> None:
    now = clock.now()
    # RESTARTS: the sum, and how long ago the latest counted container last finished.
    make_pod(
        http,
        "restarter",
        ["a", "b"],
        {
            "phase": "Running",
            "conditions": conditions(Initialized=True, Ready=True),
            "containerStatuses": [
                running("a", restarts=2, finished=now - timedelta(minutes=5)),
                running("b", restarts=1, finished=now - timedelta(seconds=150)),
            ],
        },
    )
    # An init container still running: Init:1/2, and only init containers' restarts count.
    make_pod(
        http,
        "initializing",
        ["main"],
        {
            "phase": "Pending",
            "conditions": conditions(Initialized=False, Ready=False),
            "initContainerStatuses": [
                terminated("setup", 0, "Completed"),
                running("migrate", restarts=4, finished=now - timedelta(seconds=30)),
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "image": "busybox",
                    "imageID": "",
                    "ready": False,
                    "restartCount": 7,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                }
            ],
        },
        init=[{"name": "setup"}, {"name": "migrate"}],
    )
    # A sidecar counts towards READY and RESTARTS.
    make_pod(
        http,
        "with-sidecar",
        ["main"],
        {
            "phase": "Running",
            "conditions": conditions(Initialized=True, Ready=True),
            "initContainerStatuses": [
                running("proxy", restarts=2, finished=now - timedelta(seconds=20))
            ],
            "containerStatuses": [running("main")],
        },
        init=[{"name": "proxy", "restartPolicy": "Always"}],
    )
    # Done: two containers and a sidecar, all stopped.
    make_pod(
        http,
        "sidecar-done",
        ["a", "b"],
        {
            "phase": "Succeeded",
            "conditions": conditions(Initialized=True, Ready=False),
            "initContainerStatuses": [terminated("proxy", 0, "Completed")],
            "containerStatuses": [terminated("a", 0, "Completed"), terminated("b", 0, "Completed")],
        },
        init=[{"name": "proxy", "restartPolicy": "Always"}],
    )
    # The first container completed, the second failed: Error, not Completed.
    make_pod(
        http,
        "half-failed",
        ["a", "b"],
        {
            "phase": "Failed",
            "conditions": conditions(Initialized=True, Ready=False),
            "containerStatuses": [terminated("a", 0, "Completed"), terminated("b", 1, "Error")],
        },
    )
    expected = {
        "restarter": ("2/2", "Running", "3 (2m30s ago)"),
        "initializing": ("0/1", "Init:1/2", "4 (30s ago)"),
        "with-sidecar": ("2/2", "Running", "2 (20s ago)"),
        "sidecar-done": ("0/3", "Completed", "0"),
        "half-failed": ("0/2", "Error", "0"),
    }
    for name, cells in expected.items():
        _, got = table(http, f"/api/v1/namespaces/default/pods/{name}")
        assert (got["Ready"], got["Status"], got["Restarts"]) == cells, name
    output = kubectl("get", "pods", "-o", "wide")
    for name, cells in expected.items():
        row = by_name(output, name)
        assert (row["READY"], row["STATUS"], row["RESTARTS"]) == cells, name
