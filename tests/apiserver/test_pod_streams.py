"""kubectl logs, exec, attach and port-forward against simulated nodes: upstream's checks of
the pod and container first, with their messages, then the failure of a kubelet that serves
no streams, as kubectl prints a kube-apiserver's that cannot reach one (exit 1, one line)."""

import httpx
import pytest

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "stream-node"},
}
WHY = 'the kubelet of node "stream-node" is simulated by taintplane and runs no containers'


def _pod(name: str, containers: list[str], node: str = "stream-node") -> dict[str, object]:
    spec: dict[str, object] = {"containers": [{"name": c, "image": "nginx"} for c in containers]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _status(state: dict[str, object], name: str = "c") -> dict[str, object]:
    return {
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": name,
                    "image": "nginx",
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "state": state,
                }
            ],
        }
    }


@pytest.fixture(scope="module")
def api(cluster):
    with httpx.Client(base_url=cluster.url, timeout=30) as client:
        assert client.post("/api/v1/nodes", json=NODE).status_code == 201
        status = {"status": {"addresses": [{"type": "InternalIP", "address": "10.9.0.1"}]}}
        patched = client.patch(
            "/api/v1/nodes/stream-node/status",
            json=status,
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 200, patched.text
        yield client


def _create(api: httpx.Client, pod: dict[str, object], status: dict[str, object] | None) -> None:
    assert api.post("/api/v1/namespaces/default/pods", json=pod).status_code == 201
    if status is not None:
        name = pod["metadata"]["name"]  # type: ignore[index]
        patched = api.patch(
            f"/api/v1/namespaces/default/pods/{name}/status",
            json=status,
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 200, patched.text


def test_logs_of_a_running_container(api, kubectl):
    _create(
        api, _pod("running", ["c"]), _status({"running": {"startedAt": "2026-01-01T00:00:00Z"}})
    )
    done = kubectl.run("logs", "running")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f'Error from server: Get "https://10.9.0.1:10250/containerLogs/default/running/c": {WHY}\n'
    )
    previous = kubectl.run("logs", "running", "--previous")
    assert previous.stderr == (
        'Error from server (BadRequest): previous terminated container "c" in pod "running" '
        "not found\n"
    )
    response = api.get("/api/v1/namespaces/default/pods/running/log")
    assert response.status_code == 503
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Get "https://10.9.0.1:10250/containerLogs/default/running/c": {WHY}',
        "code": 503,
    }


def test_logs_checks_the_container_and_its_state(api, kubectl):
    _create(api, _pod("waiting", ["c"]), _status({"waiting": {"reason": "ContainerCreating"}}))
    assert kubectl.run("logs", "waiting").stderr == (
        'Error from server (BadRequest): container "c" in pod "waiting" is waiting to start: '
        "ContainerCreating\n"
    )
    assert kubectl.run("logs", "waiting", "-c", "nope").stderr == (
        "error: container nope is not valid for pod waiting\n"
    )
    _create(api, _pod("two", ["a", "b"]), None)
    raw = api.get("/api/v1/namespaces/default/pods/two/log")
    assert (raw.status_code, raw.json()["message"]) == (
        400,
        "a container name must be specified for pod two, choose one of: [a b]",
    )
    assert api.get("/api/v1/namespaces/default/pods/two/log?container=z").json()["message"] == (
        "container z is not valid for pod two"
    )
    assert kubectl.run("logs", "absent").stderr == (
        'error: error from server (NotFound): pods "absent" not found in namespace "default"\n'
    )


def test_logs_of_a_pod_not_scheduled_are_empty(api, kubectl):
    _create(api, _pod("pending", ["c"], node=""), None)
    done = kubectl.run("logs", "pending")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_exec_attach_and_port_forward_fail_as_without_a_kubelet(api, kubectl):
    _create(api, _pod("shell", ["c"]), _status({"running": {"startedAt": "2026-01-01T00:00:00Z"}}))
    dialing = f"error dialing backend: {WHY}"
    execed = kubectl.run("exec", "shell", "--", "ls")
    assert (execed.returncode, execed.stderr) == (1, f"Error from server: {dialing}\n")
    attached = kubectl.run("attach", "shell")
    assert (attached.returncode, attached.stderr.splitlines()[-1]) == (
        1,
        f"Error from server: {dialing}",
    )
    forwarded = kubectl.run("port-forward", "shell", "18080:80")
    assert (forwarded.returncode, forwarded.stderr) == (
        1,
        f"error: error upgrading connection: {dialing}\n",
    )
    _create(api, _pod("unplaced", ["c"], node=""), None)
    unplaced = api.post("/api/v1/namespaces/default/pods/unplaced/exec?command=ls")
    assert (unplaced.status_code, unplaced.json()["message"]) == (
        400,
        "pod unplaced does not have a host assigned",
    )
    wrong = api.post("/api/v1/namespaces/default/pods/shell/exec?command=ls&container=x")
    assert wrong.json()["message"] == "container x is not valid for pod shell"


def test_discovery_lists_the_stream_subresources(api):
    resources = {r["name"]: r for r in api.get("/api/v1").json()["resources"]}
    assert resources["pods/log"] == {
        "name": "pods/log",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get"],
    }
    assert resources["pods/exec"]["kind"] == "PodExecOptions"
    assert resources["pods/exec"]["verbs"] == ["create", "get"]
    assert resources["pods/portforward"]["kind"] == "PodPortForwardOptions"
    assert resources["pods/attach"]["kind"] == "PodAttachOptions"
