"""`taintplane up --auth` end to end: the real kubectl and the official Python client over TLS
with the generated CA; 401, 403, `auth can-i`, RBAC per namespace and NodeRestriction."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")

TOKENS = 'alice-token,alice,1001\nnode-1-token,system:node:node-1,2001,"system:nodes"\n'


@dataclass
class Server:
    process: subprocess.Popen[str]
    kubeconfig: Path
    home: Path
    data_dir: Path
    url: str

    def kubectl(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {"HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig)}
        env["PATH"] = os.environ["PATH"]
        extra = [f"--token={token}"] if token else []
        return subprocess.run(
            ["kubectl", *extra, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    def ok(self, *args: str, token: str | None = None) -> str:
        done = self.kubectl(*args, token=token)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def with_token(self, token: str) -> Path:
        """A copy of the kubeconfig with another user's token (a tenant's kubeconfig)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        config["users"][0]["user"]["token"] = token
        path = self.home / f"kubeconfig-{token}"
        path.write_text(yaml.safe_dump(config))
        return path

    def ca(self) -> bytes:
        config = yaml.safe_load(self.kubeconfig.read_text())
        return base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])


def _start(tmp: Path, tokens: Path) -> Server:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "taintplane", "up", "--auth", str(tokens), "--port", "0"),
            *("--data-dir", str(tmp / "data"), "--nodes", "2"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp,
    )
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        if "serving " in line:
            url = line.rsplit("serving ", 1)[1].strip()
        if line.startswith("export KUBECONFIG="):
            kubeconfig = Path(line.split("=", 1)[1].strip())
            break
    else:  # pragma: no cover - start-up failed
        raise AssertionError("taintplane up did not print KUBECONFIG")
    # Keep reading what the server prints, so that its pipe never fills.
    threading.Thread(target=process.stdout.read, daemon=True).start()
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return Server(process, kubeconfig, home, tmp / "data", url)


def _stop(server: Server) -> None:
    server.process.send_signal(signal.SIGINT)
    try:
        server.process.wait(30)
    except subprocess.TimeoutExpired:  # pragma: no cover
        server.process.kill()
        server.process.wait()
    if server.process.stdout is not None:
        server.process.stdout.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auth")
    tokens = tmp / "tokens.csv"
    tokens.write_text(TOKENS)
    running = _start(tmp, tokens)
    # kubelets register their nodes on start: wait for them.
    running.ok("wait", "--for=condition=Ready", "node/node-1", "node/node-2", "--timeout=30s")
    yield running
    _stop(running)


def test_https_with_the_generated_ca_and_an_admin_token(server: Server) -> None:
    assert server.url.startswith("https://127.0.0.1:")
    config = yaml.safe_load(server.kubeconfig.read_text())
    token = config["users"][0]["user"]["token"]
    tokens = (server.data_dir.parent / "tokens.csv").read_text().splitlines()
    assert tokens[:2] == TOKENS.splitlines()
    assert tokens[2] == f"{token},taintplane-admin,taintplane-admin,system:masters"
    assert "node-1" in server.ok("get", "nodes", "-o", "name")


def test_a_bad_token_is_401_with_kubectls_message(server: Server) -> None:
    done = server.kubectl("get", "pods", token="wrong")
    assert done.returncode == 1
    assert done.stderr == "error: You must be logged in to the server (Unauthorized)\n"
    response = httpx.get(
        server.url + "/api/v1/pods",
        headers={"Authorization": "Bearer wrong"},
        verify=_ssl(server),
    )
    assert response.status_code == 401
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def _ssl(server: Server) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=server.ca().decode())


def test_anonymous_may_read_version_only(server: Server) -> None:
    verify = _ssl(server)
    assert httpx.get(server.url + "/version", verify=verify).status_code == 200
    assert httpx.get(server.url + "/healthz", verify=verify).status_code == 200
    api = httpx.get(server.url + "/api", verify=verify)
    assert api.status_code == 403
    assert api.json()["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
    admin = httpx.get(server.url + "/taintplane/v1/clock", verify=verify)
    assert admin.status_code == 403
    # The dashboard too (as a page that says so and offers the sign-in form).
    dashboard = httpx.get(server.url + "/dashboard/", verify=verify)
    assert dashboard.status_code == 403
    assert (
        "forbidden: User &quot;system:anonymous&quot; cannot get path &quot;/dashboard/&quot;"
        in dashboard.text
    )
    token = yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]
    seen = httpx.get(
        server.url + "/dashboard/", verify=verify, headers={"Authorization": f"Bearer {token}"}
    )
    assert seen.status_code == 200
    assert "<title>taintplane</title>" in seen.text


def test_forbidden_is_upstreams_message(server: Server) -> None:
    done = server.kubectl("get", "nodes", "node-1", token="alice-token")
    assert done.returncode == 1
    assert done.stderr == (
        'Error from server (Forbidden): nodes "node-1" is forbidden: User "alice" cannot get '
        'resource "nodes" in API group "" at the cluster scope\n'
    )
    # With read access (kubectl patch reads first), the PATCH itself is refused.
    server.ok("create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes")
    server.ok(
        "create",
        "clusterrolebinding",
        "alice-reads-nodes",
        "--clusterrole=node-reader",
        "--user=alice",
    )
    patch = server.kubectl(
        "patch",
        "node",
        "node-1",
        "--type=merge",
        "-p",
        '{"spec":{"unschedulable":true}}',
        token="alice-token",
    )
    assert patch.stderr == (
        'Error from server (Forbidden): nodes "node-1" is forbidden: User "alice" cannot patch '
        'resource "nodes" in API group "" at the cluster scope\n'
    )


def test_auth_can_i(server: Server) -> None:
    assert server.ok("auth", "can-i", "patch", "nodes") == "yes\n"
    done = server.kubectl("auth", "can-i", "create", "pods", token="alice-token")
    assert (done.returncode, done.stdout) == (1, "no\n")
    as_alice = server.kubectl("auth", "can-i", "create", "pods", "--as", "alice", "-n", "x")
    assert as_alice.stdout == "no\n"


def test_a_role_binding_grants_pods_in_one_namespace_only(server: Server) -> None:
    for ns in ("tenant-a", "tenant-b"):
        server.ok("create", "namespace", ns)
    server.ok(
        "create",
        "role",
        "pod-admin",
        "-n",
        "tenant-a",
        "--verb=get,list,watch,create,delete",
        "--resource=pods",
    )
    server.ok(
        "create",
        "rolebinding",
        "alice-pods",
        "-n",
        "tenant-a",
        "--role=pod-admin",
        "--user=alice",
    )

    def can(ns: str) -> str:
        return server.kubectl(
            "auth", "can-i", "create", "pods", "-n", ns, token="alice-token"
        ).stdout

    assert (can("tenant-a"), can("tenant-b")) == ("yes\n", "no\n")
    impersonated = server.ok("auth", "can-i", "create", "pods", "-n", "tenant-a", "--as=alice")
    assert impersonated == "yes\n"
    as_bob = server.kubectl("auth", "can-i", "list", "pods", "-n", "tenant-a", "--as=bob")
    assert as_bob.stdout == "no\n"
    server.ok("run", "web", "--image=nginx", "-n", "tenant-a", token="alice-token")
    assert "web" in server.ok("get", "pods", "-n", "tenant-a", token="alice-token")
    done = server.kubectl("run", "web", "--image=nginx", "-n", "tenant-b", token="alice-token")
    assert done.stderr == (
        'Error from server (Forbidden): pods is forbidden: User "alice" cannot create resource '
        '"pods" in API group "" in the namespace "tenant-b"\n'
    )


def test_a_node_cannot_change_its_taints_or_other_nodes(server: Server) -> None:
    done = server.kubectl(
        "taint", "nodes", "node-1", "dedicated=x:NoSchedule", token="node-1-token"
    )
    assert done.stderr == (
        'Error from server (Forbidden): nodes "node-1" is forbidden: node "node-1" is not '
        "allowed to modify taints\n"
    )
    # kubectl reads the node first, which the Node authorizer refuses for another node.
    other = server.kubectl("label", "nodes", "node-2", "x=y", token="node-1-token")
    assert other.stderr == (
        'Error from server (Forbidden): nodes "node-2" is forbidden: User '
        '"system:node:node-1" cannot get resource "nodes" in API group "" at the cluster '
        "scope: node 'node-1' cannot read 'node-2', only its own Node object\n"
    )
    # Its own labels (outside kubernetes.io) it may set; the admin may taint it.
    server.ok("label", "nodes", "node-1", "rack=r1", token="node-1-token")
    server.ok("taint", "nodes", "node-1", "dedicated=x:NoSchedule")


def test_a_node_reads_only_its_own_node_pods_and_lease(server: Server) -> None:
    for name, node in (("on-1", "node-1"), ("on-2", "node-2")):
        overrides = f'{{"spec":{{"nodeName":"{node}"}}}}'
        server.ok("run", name, "--image=nginx", f"--overrides={overrides}")
    node = "node-1-token"
    denied = 'Error from server (Forbidden): {} is forbidden: User "system:node:node-1" cannot '
    assert server.kubectl("get", "pods", "-A", token=node).stderr == (
        denied.format("pods") + 'list resource "pods" in API group "" at the cluster scope: '
        "can only list/watch pods with spec.nodeName field selector\n"
    )
    assert server.kubectl("get", "nodes", token=node).stderr == (
        denied.format("nodes") + 'list resource "nodes" in API group "" at the cluster scope: '
        "node 'node-1' cannot read all nodes, only its own Node object\n"
    )
    assert server.kubectl("get", "pod", "on-2", token=node).stderr == (
        denied.format('pods "on-2"') + 'get resource "pods" in API group "" in the namespace '
        "\"default\": no relationship found between node 'node-1' and this object\n"
    )
    assert "node-1" in server.ok("get", "node", "node-1", "-o", "name", token=node)
    assert server.ok("get", "pod", "on-1", "-o", "name", token=node) == "pod/on-1\n"
    mine = server.ok(
        "get", "pods", "-A", "--field-selector=spec.nodeName=node-1", "-o", "name", token=node
    )
    assert "pod/on-1" in mine.split()
    assert "pod/on-2" not in mine.split()
    lease = server.ok("get", "lease", "-n", "kube-node-lease", "node-1", "-o", "name", token=node)
    assert lease == "lease.coordination.k8s.io/node-1\n"
    can_i = server.kubectl("auth", "can-i", "list", "pods", token=node)
    assert can_i.stdout == "no - can only list/watch pods with spec.nodeName field selector\n"


def test_the_official_python_client_over_tls(server: Server) -> None:
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    nodes = client.CoreV1Api(api_client).list_node()
    assert {n.metadata.name for n in nodes.items} >= {"node-1", "node-2"}
    for token, code in (("alice-token", 403), ("nope", 401)):
        tenant = server.with_token(token)
        with pytest.raises(ApiException) as error:
            client.CoreV1Api(config.new_client_from_config(str(tenant))).list_namespace()
        assert error.value.status == code
    # A kubelet's credentials: its own node and pods, not everyone's.
    kubelet = client.CoreV1Api(
        config.new_client_from_config(str(server.with_token("node-1-token")))
    )
    with pytest.raises(ApiException) as error:
        kubelet.list_pod_for_all_namespaces()
    assert error.value.status == 403
    assert "can only list/watch pods with spec.nodeName field selector" in str(error.value.body)
    assert kubelet.read_node("node-1").metadata.name == "node-1"
    own = kubelet.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-1")
    assert all(p.spec.node_name == "node-1" for p in own.items)


def test_the_ca_survives_a_restart(server: Server) -> None:
    ca = server.ca()
    _stop(server)
    again = _start(server.data_dir.parent, server.data_dir.parent / "tokens.csv")
    try:
        assert again.ca() == ca
        assert "node-1" in again.ok("get", "nodes", "-o", "name")
    finally:
        server.process = again.process  # the fixture stops whichever runs
