"""The admission plugins through the API server and the real kubectl: a tenant's namespace
with default tolerations, a whitelist and a node selector; a cluster-wide whitelist from the
admission configuration file; the flags and file errors of ``taintplane serve``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from taintplane.admission.plugins import AdmissionOptions
from taintplane.cli.up import serve_command
from taintplane.sim.cluster import Cluster, running_cluster
from tests.conftest import Kubectl

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}
BANANA = {"key": "dedicated", "operator": "Equal", "value": "banana", "effect": "NoSchedule"}
CONFIG = """\
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
- name: PodNodeSelector
  path: node-selectors.yaml
"""
NODE_SELECTORS = """\
podNodeSelectorPluginConfig:
  banana: dedicated=banana,disk=ssd
"""


def _namespace(name: str, annotations: dict[str, str]) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "annotations": annotations},
        }
    )


def _pod(name: str, namespace: str, **spec: object) -> str:
    spec = {"containers": [{"name": "c", "image": "nginx"}], **spec}
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    config_dir = tmp_path_factory.mktemp("admission")
    (config_dir / "admission.yaml").write_text(CONFIG)
    (config_dir / "node-selectors.yaml").write_text(NODE_SELECTORS)
    setup = AdmissionOptions(
        enable=("PodTolerationRestriction,PodNodeSelector", "ExtendedResourceToleration"),
        config_file=config_dir / "admission.yaml",
    ).load()
    data = tmp_path_factory.mktemp("cluster")
    with running_cluster(data, components=(), admission=setup) as running:
        yield running


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    if shutil.which("kubectl") is None:  # pragma: no cover - CI installs it
        pytest.fail("kubectl is not on PATH; the CI image provides it")
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path_factory.mktemp("home"))
    annotations = {
        "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps([BANANA]),
        "scheduler.alpha.kubernetes.io/tolerationsWhitelist": json.dumps(
            [BANANA, NOT_READY, UNREACHABLE]
        ),
        "scheduler.alpha.kubernetes.io/node-selector": "dedicated=banana",
    }
    kubectl("apply", "-f", "-", stdin=_namespace("banana", annotations))
    kubectl("create", "namespace", "plain")
    return kubectl


def test_tenant_pod_gets_namespace_tolerations_and_selector(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=_pod("ok", "banana"))
    spec = json.loads(kubectl("get", "pod", "ok", "-n", "banana", "-o", "json"))["spec"]
    assert spec["tolerations"] == [
        {**NOT_READY, "tolerationSeconds": 300},
        {**UNREACHABLE, "tolerationSeconds": 300},
        BANANA,
    ]
    assert spec["nodeSelector"] == {"dedicated": "banana"}


def test_tenant_toleration_outside_the_whitelist_is_refused(kubectl: Kubectl) -> None:
    sneaky = {"key": "dedicated", "operator": "Equal", "value": "apple", "effect": "NoSchedule"}
    done = kubectl.run("apply", "-f", "-", stdin=_pod("x", "banana", tolerations=[sneaky]))
    assert done.returncode == 1
    # Upstream returns a plain error here (not a Forbidden Status): a 500 without reason.
    assert done.stderr == (
        'Error from server: error when creating "STDIN": pod tolerations (possibly merged with '
        "namespace default tolerations) conflict with its namespace whitelist\n"
    )
    assert kubectl.run("get", "pod", "x", "-n", "banana").returncode == 1


def test_cluster_whitelist_from_the_configuration_file(kubectl: Kubectl) -> None:
    done = kubectl.run("apply", "-f", "-", stdin=_pod("y", "plain", tolerations=[BANANA]))
    assert done.stderr == (
        'Error from server: error when creating "STDIN": pod tolerations (possibly merged with '
        "namespace default tolerations) conflict with its cluster whitelist\n"
    )
    kubectl("apply", "-f", "-", stdin=_pod("y", "plain"))


def test_node_selector_conflict_and_whitelist(kubectl: Kubectl) -> None:
    done = kubectl.run(
        "apply", "-f", "-", stdin=_pod("z", "banana", nodeSelector={"dedicated": "apple"})
    )
    assert done.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": pods "z" is forbidden: '
        "pod node label selector conflicts with its namespace node label selector\n"
    )
    done = kubectl.run("apply", "-f", "-", stdin=_pod("z", "banana", nodeSelector={"zone": "a"}))
    assert done.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": pods "z" is forbidden: '
        "pod node label selector labels conflict with its namespace whitelist\n"
    )
    kubectl("apply", "-f", "-", stdin=_pod("z", "banana", nodeSelector={"disk": "ssd"}))


def test_extended_resources_and_runtime_class(kubectl: Kubectl) -> None:
    gpu = {
        "name": "c",
        "image": "i",
        "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}},
    }
    # The whitelist sees the tolerations every mutating plugin added, this one's too.
    done = kubectl.run("apply", "-f", "-", stdin=_pod("gpu", "plain", containers=[gpu]))
    assert "conflict with its cluster whitelist" in done.stderr
    open_ns = {"scheduler.alpha.kubernetes.io/tolerationsWhitelist": ""}  # allows all
    kubectl("apply", "-f", "-", stdin=_namespace("open", open_ns))
    kubectl("apply", "-f", "-", stdin=_pod("gpu", "open", containers=[gpu]))
    pod = json.loads(kubectl("get", "pod", "gpu", "-n", "open", "-o", "json"))
    tolerations = pod["spec"]["tolerations"]
    assert {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    done = kubectl.run("apply", "-f", "-", stdin=_pod("rc", "plain", runtimeClassName="kata"))
    assert done.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": pods "rc" is forbidden: '
        'pod rejected: RuntimeClass "kata" not found\n'
    )


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (
            ["--enable-admission-plugins", "PodTolerationRestrictions"],
            None,
            'enable-admission-plugins plugin "PodTolerationRestrictions" is unknown',
        ),
        (
            ["--enable-admission-plugins", "Priority", "--disable-admission-plugins", "Priority"],
            None,
            "[Priority] in enable-admission-plugins and disable-admission-plugins overlapped",
        ),
        (
            ["--admission-config", "{dir}/missing.yaml"],
            None,
            'unable to read admission control configuration from "{dir}/missing.yaml"',
        ),
        (
            ["--admission-config", "{dir}/bad.yaml"],
            "kind: AdmissionConfiguration\napiVersion: v9\n",
            '{dir}/bad.yaml: no kind "AdmissionConfiguration" is registered for version "v9"',
        ),
        (
            ["--admission-config", "{dir}/bad.yaml"],
            "plugins: [\n",
            "{dir}/bad.yaml: not YAML or JSON",
        ),
        (
            ["--admission-config", "{dir}/bad.yaml"],
            CONFIG.replace("operator: Exists, effect: NoExecute}", "operator: Sometimes}", 1),
            "{dir}/bad.yaml: PodTolerationRestriction: invalid config: [podtolerationrestriction.whitelist[0].operator: Unsupported value",
        ),
    ],
)
def test_serve_refuses_bad_admission_flags(
    tmp_path: Path, args: list[str], content: str | None, message: str
) -> None:
    (tmp_path / "node-selectors.yaml").write_text(NODE_SELECTORS)
    if content is not None:
        (tmp_path / "bad.yaml").write_text(content)
    args = [arg.format(dir=tmp_path) for arg in args]
    result = CliRunner().invoke(
        serve_command, ["--data-dir", str(tmp_path / "data"), "--port", "0", *args]
    )
    assert result.exit_code == 2  # usage and input file errors
    assert message.format(dir=tmp_path) in result.output
    assert not (tmp_path / "data").exists()
