"""Dedicated nodes really are dedicated (issue 6's invariant), over TLS with tokens.

Two nodes are dedicated to team-a with `taintplane dedicate nodes … --evict` on a cluster whose
PodTolerationRestriction whitelist (from `--admission-config`) allows tenants only the
node-condition tolerations. A tenant of team-b — with the `edit` role in its namespace only —
then submits 10 000 Hypothesis-generated pods: arbitrary tolerations (including ones for the
dedicated taint and the empty-key "tolerate everything"), node selectors, required node
affinity (including matchFields on the dedicated nodes' names) and spec.nodeName set directly.
A watch records every state of every pod: none may ever run on a dedicated node. The tenant
also cannot touch node taints (the real kubectl shows the 403).
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.auth.test_kubectl_tls import Server, _ssl, _stop

DEDICATED = ("node-1", "node-2")
NODES = ("node-1", "node-2", "node-3", "node-4")
TENANT = "tenant-b-token"
ADMISSION = """
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodTolerationRestriction
  configuration:
    apiVersion: podtolerationrestriction.admission.k8s.io/v1alpha1
    kind: Configuration
    whitelist:
    - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute}
    - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}
    - {key: node.kubernetes.io/memory-pressure, operator: Exists, effect: NoSchedule}
"""


def _start(tmp: Path) -> Server:
    import subprocess
    import sys

    tokens = tmp / "tokens.csv"
    tokens.write_text(f'{TENANT},tenant-b,3001,"tenants"\n')
    config = tmp / "admission.yaml"
    config.write_text(ADMISSION)
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "taintplane", "up", "--auth", str(tokens), "--port", "0"),
            *("--data-dir", str(tmp / "data"), "--nodes", str(len(NODES))),
            *("--admission-config", str(config)),
            "--enable-admission-plugins=PodTolerationRestriction,PodNodeSelector",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp,
    )
    assert process.stdout is not None
    url, kubeconfig = "", None
    for line in process.stdout:
        if "serving " in line:
            url = line.rsplit("serving ", 1)[1].strip()
        if line.startswith("export KUBECONFIG="):
            kubeconfig = Path(line.split("=", 1)[1].strip())
            break
    assert kubeconfig is not None, "taintplane up did not start"
    threading.Thread(target=process.stdout.read, daemon=True).start()
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return Server(process, kubeconfig, home, tmp / "data", url)


class Watcher:
    """Every pod state the API reports in team-b, as it happens; violations recorded."""

    def __init__(self, server: Server, admin_token: str) -> None:
        self.violations: list[str] = []
        self.ran_elsewhere = 0
        self._stop = threading.Event()
        self._client = httpx.Client(
            base_url=server.url,
            verify=_ssl(server),
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=httpx.Timeout(10, read=None),
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._follow()
        except httpx.HTTPError:
            if not self._stop.is_set():  # closing the client ends the stream; anything else
                raise  # is a failure of the watch itself

    def _follow(self) -> None:
        params = {"watch": "true", "allowWatchBookmarks": "false"}
        with self._client.stream("GET", "/api/v1/namespaces/team-b/pods", params=params) as r:
            for line in r.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    continue
                pod = json.loads(line)["object"]
                node = (pod.get("spec") or {}).get("nodeName")
                running = (pod.get("status") or {}).get("phase") == "Running"
                if running and node in DEDICATED:
                    self.violations.append(f"{pod['metadata']['name']} ran on {node}")
                elif running:
                    self.ran_elsewhere += 1

    def close(self) -> None:
        self._stop.set()
        self._client.close()
        self._thread.join(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    tmp = tmp_path_factory.mktemp("invariant")
    server = _start(tmp)
    admin = yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]
    server.ok("wait", "--for=condition=Ready", *(f"node/{n}" for n in NODES), "--timeout=30s")
    import subprocess
    import sys

    dedicate = subprocess.run(
        [
            *(sys.executable, "-m", "taintplane", "dedicate", "nodes", *DEDICATED),
            *("--to-namespace", "team-a", "--evict", "--kubeconfig", str(server.kubeconfig)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert dedicate.returncode == 0, dedicate.stderr
    server.ok("create", "namespace", "team-b")
    server.ok(
        "create",
        "rolebinding",
        "tenant-edit",
        "--clusterrole=edit",
        "--user=tenant-b",
        "-n",
        "team-b",
    )
    yield server, admin
    _stop(server)


def test_a_tenant_cannot_edit_node_taints(cluster: tuple[Server, str]) -> None:
    server, _ = cluster
    done = server.kubectl("taint", "nodes", "node-1", "dedicated-", token=TENANT)
    assert done.returncode == 1
    assert done.stderr == (
        'Error from server (Forbidden): nodes "node-1" is forbidden: User "tenant-b" cannot '
        'get resource "nodes" in API group "" at the cluster scope\n'
    )
    taints = json.loads(server.ok("get", "node", "node-1", "-o", "jsonpath={.spec.taints}"))
    assert {"key": "dedicated", "value": "team-a", "effect": "NoExecute"} in [
        {k: t[k] for k in ("key", "value", "effect") if k in t} for t in taints
    ]


KEYS = st.sampled_from(["dedicated", "", "node.kubernetes.io/not-ready", "gpu", "zone"])
VALUES = st.sampled_from(["team-a", "team-b", "", "x"])
EFFECTS = st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"])


@st.composite
def toleration(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(KEYS)
    operator = draw(st.sampled_from(["Exists", "Equal", None]))
    t: dict[str, Any] = {"key": key} if key else {}
    if operator == "Exists" or (operator is None and not key):
        t["operator"] = "Exists"
    else:
        if operator:
            t["operator"] = operator
        t["value"] = draw(VALUES)
    effect = draw(EFFECTS)
    if effect:
        t["effect"] = effect
    if effect == "NoExecute" and draw(st.booleans()):
        t["tolerationSeconds"] = draw(st.integers(min_value=-5, max_value=10_000))
    return t


@st.composite
def pod(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    tolerations = draw(st.lists(toleration(), max_size=3))
    if tolerations:
        spec["tolerations"] = tolerations
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(
            st.dictionaries(
                st.sampled_from(["dedicated", "kubernetes.io/hostname"]),
                st.sampled_from(["team-a", *NODES]),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        field_term = {
            "matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [draw(st.sampled_from(NODES))]}
            ]
        }
        label_term = {
            "matchExpressions": [
                {
                    "key": "dedicated",
                    "operator": draw(st.sampled_from(["In", "Exists"])),
                    "values": ["team-a"],
                }
            ]
        }
        if label_term["matchExpressions"][0]["operator"] == "Exists":
            del label_term["matchExpressions"][0]["values"]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": draw(
                        st.lists(st.sampled_from([field_term, label_term]), min_size=1, max_size=2)
                    )
                }
            }
        }
    node = draw(st.sampled_from([None, None, *NODES]))
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-"}, "spec": spec}


def test_ten_thousand_tenant_pods_never_run_on_dedicated_nodes(
    cluster: tuple[Server, str],
) -> None:
    server, admin = cluster
    context: ssl.SSLContext = _ssl(server)
    watcher = Watcher(server, admin)
    outcomes: dict[int, int] = {}
    lock = threading.Lock()

    tenant = httpx.Client(
        base_url=server.url,
        verify=context,
        headers={"Authorization": f"Bearer {TENANT}"},
        limits=httpx.Limits(max_connections=8),
        timeout=30,
    )
    operator = httpx.Client(
        base_url=server.url, verify=context, headers={"Authorization": f"Bearer {admin}"}
    )

    unexpected: list[str] = []

    def submit(body: dict[str, Any]) -> None:
        # Anything but created or refused with a Status is recorded and fails the test at the
        # end with the server's answer (an assertion inside Hypothesis would be reported as
        # the whole 100-pod example, whose repr is too large to print).
        try:
            response = tenant.post("/api/v1/namespaces/team-b/pods", json=body)
        except httpx.HTTPError as error:
            with lock:
                unexpected.append(f"{body['metadata'].get('name')}: {error!r}")
            return
        code = response.status_code
        with lock:
            outcomes[code] = outcomes.get(code, 0) + 1
            if code not in (201, 403, 422, 500):
                unexpected.append(f"{body['metadata'].get('name')}: {code} {response.text[:300]}")

    @settings(
        max_examples=100,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(pod(), min_size=100, max_size=100))
    def batch(pods: list[dict[str, Any]]) -> None:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(submit, pods))
        # Let the kubelets and the scheduler see this batch, then clear it for the next.
        operator.delete("/api/v1/namespaces/team-b/pods", params={"gracePeriodSeconds": "0"})

    try:
        batch()
        # The cluster has handled everything submitted: every pod got a decision before the
        # namespace was cleared (a last list is the barrier for the watch).
        operator.get("/api/v1/namespaces/team-b/pods")
    finally:
        watcher.close()
        tenant.close()
        operator.close()
    assert unexpected == []
    assert sum(outcomes.values()) == 10_000
    assert outcomes.get(201, 0) > 1000  # plenty were admitted and had a chance to run
    assert outcomes.get(500, 0) > 100  # and plenty carried a forbidden toleration
    assert watcher.violations == []
    assert watcher.ran_elsewhere > 100  # the watch did see pods run (on the shared nodes)


def test_a_tenants_forbidden_toleration_is_refused_over_tls(cluster: tuple[Server, str]) -> None:
    server, _ = cluster
    manifest = """
apiVersion: v1
kind: Pod
metadata: {name: sneaky, namespace: team-b}
spec:
  containers: [{name: c, image: nginx}]
  tolerations: [{key: dedicated, operator: Equal, value: team-a, effect: NoExecute}]
"""
    path = server.home / "sneaky.yaml"
    path.write_text(manifest)
    done = server.kubectl("apply", "-f", str(path), token=TENANT)
    assert done.returncode == 1
    assert done.stderr == (
        f'Error from server: error when creating "{path}": pod tolerations (possibly merged '
        "with namespace default tolerations) conflict with its cluster whitelist\n"
    )
