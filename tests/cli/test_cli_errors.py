"""Every command's failures name the problem and what to do, with exit code 1 and no traceback:
an unusable kubeconfig, a stopped cluster, a refused token (401) or user (403), a misspelt node
or namespace (nothing changed), a write failing half-way (what changed and how to undo it), and
warnings that give only the advice that applies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from taintplane.admission.plugins import ALL_ORDERED_PLUGINS, DEFAULT_ON_PLUGINS, AdmissionSetup
from taintplane.admission.pod_toleration_restriction import PodTolerationRestrictionConfig
from taintplane.agents.nodes import DeviceSet, NodeShape
from taintplane.api.tolerations import Toleration
from taintplane.cli.main import cli
from taintplane.sim.cluster import Cluster, running_cluster
from tests.auth.test_kubectl_tls import Server, _start, _stop
from tests.conftest import Kubectl

FIX = "fix it, or pass --kubeconfig the file `taintplane up` printed"
WHITELISTED = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


# --- kubeconfig -----------------------------------------------------------------------------


def _kubeconfig(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("command", [("clock", "now"), ("explain", "pod", "web")])
def test_a_kubeconfig_that_is_not_yaml(tmp_path: Path, command: tuple[str, ...]) -> None:
    path = _kubeconfig(tmp_path, "garbage: [\n")
    assert invoke(*command, "--kubeconfig", path) == (
        1,
        "",
        f'Error: error loading config file "{path}": yaml: line 2: expected the node content, '
        f"but found '<stream end>'; {FIX}\n",
    )


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ("- a\n", 'error loading config file "{path}": a kubeconfig is a mapping, not a list'),
        ("", 'invalid configuration: no configuration has been provided in kubeconfig "{path}"'),
        (
            "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n",
            "invalid configuration: no context chosen (current-context is not set) in "
            'kubeconfig "{path}"',
        ),
        (
            "current-context: x\ncontexts: []\n",
            "invalid configuration: context was not found for specified context: x in "
            'kubeconfig "{path}"',
        ),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n",
            'invalid configuration: [user was not specified for context "x", cluster "c" was '
            'not found for context "x"] in kubeconfig "{path}"',
        ),
        (
            "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
            "clusters: [{name: c, cluster: {}}]\nusers: [{name: u, user: {}}]\n",
            'invalid configuration: no server found for cluster "c" in kubeconfig "{path}"',
        ),
    ],
)
def test_a_kubeconfig_clientcmd_would_refuse(tmp_path: Path, config: str, problem: str) -> None:
    path = _kubeconfig(tmp_path, config)
    assert invoke("clock", "now", "--kubeconfig", path) == (
        1,
        "",
        f"Error: {problem.format(path=path)}; {FIX}\n",
    )


# --- a stopped cluster ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    with running_cluster(tmp_path_factory.mktemp("stopped"), components=()) as cluster:
        kubeconfig, url = str(cluster.kubeconfig_path), cluster.url
    return kubeconfig, url


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (("explain", "pod", "web"), "All connection attempts failed"),
        (("dedicate", "nodes", "node-1", "--to-namespace", "a"), "All connection attempts failed"),
        (
            ("taint", "devices", "gpu.example.com", "a=b:NoExecute"),
            "All connection attempts failed",
        ),
        (("clock", "now"), "[Errno 111] Connection refused"),
        (("policy", "who-can-land", "node-1"), "[Errno 111] Connection refused"),
        (("device", "health", "d/p/x", "failed"), "[Errno 111] Connection refused"),
    ],
)
def test_a_stopped_cluster(stopped: tuple[str, str], command: tuple[str, ...], reason: str) -> None:
    kubeconfig, url = stopped
    assert invoke(*command, "--kubeconfig", kubeconfig) == (
        1,
        "",
        f"Error: cannot reach the cluster at {url}: {reason}; is `taintplane up` running?\n",
    )


# --- dedicate and taint devices on a running cluster ----------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    # PodTolerationRestriction with a cluster whitelist of the node-condition taints only.
    whitelist = [
        Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
        Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    ]
    enabled = tuple(
        p
        for p in ALL_ORDERED_PLUGINS
        if p in DEFAULT_ON_PLUGINS or p in ("PodTolerationRestriction", "PodNodeSelector")
    )
    admission = AdmissionSetup(
        enabled=enabled,
        toleration_restriction=PodTolerationRestrictionConfig(whitelist=whitelist),
    )
    with running_cluster(
        tmp_path_factory.mktemp("errors"),
        components=("controller-manager", "agents"),
        nodes=[
            NodeShape("node-1", devices=[DeviceSet("gpu.example.com", 2)]),
            NodeShape("node-2"),
            NodeShape("node-3"),
        ],
        admission=admission,
    ) as running:
        yield running


@pytest.fixture
def kubectl(cluster: Cluster, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster.kubeconfig_path, tmp_path)


def _dedication(kubectl: Kubectl, node: str) -> tuple[str, str]:
    taints = kubectl("get", "node", node, "-o", "jsonpath={.spec.taints}")
    label = kubectl("get", "node", node, "-o", "jsonpath={.metadata.labels.dedicated}")
    return taints, label


def test_a_missing_node_changes_nothing(cluster: Cluster, kubectl: Kubectl) -> None:
    done = invoke(
        *("dedicate", "nodes", "node-2", "node-9", "--to-namespace", "team-b"),
        *("--kubeconfig", str(cluster.kubeconfig_path)),
    )
    assert done == (1, "", f'Error: nodes "node-9" not found (from {cluster.url})\n')
    assert _dedication(kubectl, "node-2") == ("", "")
    missing = kubectl.run("get", "namespace", "team-b")
    assert missing.stderr == 'Error from server (NotFound): namespaces "team-b" not found\n'


def test_an_invalid_namespace_name_changes_nothing(cluster: Cluster, kubectl: Kubectl) -> None:
    done = invoke(
        *("dedicate", "nodes", "node-2", "--to-namespace", "Bad_NS"),
        *("--kubeconfig", str(cluster.kubeconfig_path)),
    )
    assert done == (
        1,
        "",
        'Error: The Namespace "Bad_NS" is invalid: metadata.name: Invalid value: "Bad_NS": a '
        "lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n",
    )
    assert _dedication(kubectl, "node-2") == ("", "")


def test_the_warning_gives_only_the_advice_that_applies(cluster: Cluster, kubectl: Kubectl) -> None:
    kubeconfig = ("--kubeconfig", str(cluster.kubeconfig_path))
    # The cluster whitelist keeps the toleration out: only spec.nodeName gets past NoSchedule.
    code, _, stderr = invoke("dedicate", "nodes", "node-3", "--to-namespace", "team-c", *kubeconfig)
    assert (code, stderr) == (
        0,
        "warning: pods of default, kube-node-lease, kube-public, kube-system can still land on "
        "node-3 (they may set spec.nodeName past a NoSchedule taint); use --evict — see "
        "`taintplane policy who-can-land node-3`\n",
    )
    done = invoke("dedicate", "nodes", "node-3", "--to-namespace", "team-c", "--evict", *kubeconfig)
    assert done[0] == 0
    assert done[2] == ""  # nothing left to advise
    # A namespace whose own whitelist allows the taint can still tolerate it.
    allowed = [{"key": "dedicated", "operator": "Exists"}]
    kubectl("annotate", "namespace", "kube-public", f"{WHITELISTED}={json.dumps(allowed)}")
    try:
        done = invoke(
            "dedicate", "nodes", "node-3", "--to-namespace", "team-c", "--evict", *kubeconfig
        )
    finally:
        kubectl("annotate", "namespace", "kube-public", f"{WHITELISTED}-")
    assert done[0] == 0
    assert done[2] == (
        "warning: pods of kube-public can still land on node-3 (they may add the toleration); "
        "narrow their namespaces' tolerationsWhitelist — see "
        "`taintplane policy who-can-land node-3`\n"
    )


def test_tainting_devices_nobody_published_warns(cluster: Cluster) -> None:
    kubeconfig = ("--kubeconfig", str(cluster.kubeconfig_path))
    rule = "devicetaintrule.resource.k8s.io/taintplane-gpu.example.com-node-9-drain"
    assert invoke(
        "taint", "devices", "gpu.example.com/node-9", "drain:NoSchedule", *kubeconfig
    ) == (
        0,
        f"{rule} created\npool gpu.example.com/node-9 tainted\n",
        'warning: no device published in a ResourceSlice matches driver "gpu.example.com", '
        'pool "node-9" now; the rule applies to matching devices published later '
        "(`kubectl get resourceslices` lists the published ones)\n",
    )
    # The rule was created all the same: it selects devices published later.
    assert invoke("taint", "devices", "gpu.example.com/node-9", "drain-", *kubeconfig)[0] == 0
    code, _, stderr = invoke(
        "taint", "devices", "gpu.example.com/node-1/gpu-1", "drain:NoSchedule", *kubeconfig
    )
    assert (code, stderr) == (0, "")
    assert invoke("taint", "devices", "gpu.example.com/node-1/gpu-1", "drain-", *kubeconfig)[0] == 0


# --- a cluster with --auth ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auth-errors")
    tokens = tmp / "tokens.csv"
    tokens.write_text("alice-token,alice,1001\nbob-token,bob,1002\n")
    running = _start(tmp, tokens)
    running.ok("wait", "--for=condition=Ready", "node/node-1", "--timeout=30s")
    yield running
    _stop(running)


def test_an_unknown_token_is_refused(server: Server) -> None:
    kubeconfig = server.with_token("wrong")
    assert invoke("clock", "now", "--kubeconfig", str(kubeconfig)) == (
        1,
        "",
        f"Error: You must be logged in to the server (Unauthorized): {server.url} refused the "
        f'token of user "taintplane" in {kubeconfig}; use the kubeconfig `taintplane up` '
        "printed, or a token from the cluster's --auth file\n",
    )


@pytest.mark.parametrize(
    ("command", "refusal"),
    [
        (("clock", "now"), 'forbidden: User "alice" cannot get path "/taintplane/v1/clock"'),
        (
            ("clock", "advance", "5s"),
            'forbidden: User "alice" cannot post path "/taintplane/v1/clock/advance"',
        ),
        (
            ("node", "stop", "node-1"),
            'forbidden: User "alice" cannot post path "/taintplane/v1/nodes/node-1/stop"',
        ),
        (
            ("policy", "who-can-land", "node-1"),
            'forbidden: User "alice" cannot get path "/taintplane/v1/policy/who-can-land/node-1"',
        ),
        (
            ("explain", "pod", "web"),
            'pods "web" is forbidden: User "alice" cannot get resource "pods" in API group "" '
            'in the namespace "default"',
        ),
    ],
)
def test_a_user_without_the_rights_is_told_which(
    server: Server, command: tuple[str, ...], refusal: str
) -> None:
    kubeconfig = str(server.with_token("alice-token"))
    assert invoke(*command, "--kubeconfig", kubeconfig) == (
        1,
        "",
        f"Error: {refusal} (Forbidden, from {server.url}): grant it with a RoleBinding or "
        "ClusterRoleBinding, or use a kubeconfig whose user may (the one `taintplane up --auth` "
        "writes is cluster-admin)\n",
    )


def test_a_write_failing_half_way_says_what_changed_and_how_to_undo_it(server: Server) -> None:
    # bob may taint and label nodes, but not create the namespace.
    server.ok("create", "clusterrole", "node-tainter", "--verb=get,patch", "--resource=nodes")
    server.ok("create", "clusterrolebinding", "bob", "--clusterrole=node-tainter", "--user=bob")
    server.ok("label", "node", "node-2", "dedicated=old")
    kubeconfig = str(server.with_token("bob-token"))
    done = invoke(
        *("dedicate", "nodes", "node-1", "node-2", "--to-namespace", "team-z"),
        *("--kubeconfig", kubeconfig),
    )
    assert done == (
        1,
        "node/node-1 tainted dedicated=team-z:NoSchedule\n"
        "node/node-1 labeled node-restriction.kubernetes.io/dedicated=team-z\n"
        "node/node-2 tainted dedicated=team-z:NoSchedule\n"
        "node/node-2 labeled node-restriction.kubernetes.io/dedicated=team-z\n"
        "node/node-2 unlabeled dedicated (the old dedication's label, which a node may set on "
        "itself)\n",
        'Error: namespaces "team-z" is forbidden: User "bob" cannot get resource "namespaces" '
        f'in API group "" in the namespace "team-z" (Forbidden, from {server.url}): grant it '
        "with a RoleBinding or ClusterRoleBinding, or use a kubeconfig whose user may (the one "
        "`taintplane up --auth` writes is cluster-admin); the changes printed above were kept, "
        "undo them with: "
        "kubectl taint nodes node-1 dedicated- && "
        "kubectl label nodes node-1 node-restriction.kubernetes.io/dedicated- && "
        "kubectl taint nodes node-2 dedicated- && "
        "kubectl label nodes node-2 node-restriction.kubernetes.io/dedicated- && "
        "kubectl label nodes node-2 dedicated=old --overwrite\n",
    )
    undo = done[2].split("undo them with: ", 1)[1].strip().split(" && ")
    for command in undo:
        server.ok(*command.split()[1:])
    for node, label in (("node-1", ""), ("node-2", "old")):
        taints = server.ok("get", "node", node, "-o", "jsonpath={.spec.taints}")
        assert "dedicated" not in taints
        assert server.ok("get", "node", node, "-o", "jsonpath={.metadata.labels.dedicated}") == (
            label
        )
        assert "node-restriction" not in server.ok("get", "node", node, "--show-labels")
