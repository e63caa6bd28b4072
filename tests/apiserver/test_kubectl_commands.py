"""The kubectl commands of KUBECTL_CONTRACT.md §6 against a real server, exact output."""

import json
import queue
import subprocess
import threading

import pytest
import yaml

NODES = """
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1, node-role.kubernetes.io/control-plane: ""}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: tol-pod, labels: {app: tol}}
spec:
  containers: [{name: c, image: nginx:1.27}]
  tolerations:
  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
"""


@pytest.fixture(scope="module", autouse=True)
def seed(kubectl):
    kubectl("apply", "-f", "-", stdin=NODES)


def test_version_and_api_resources(kubectl):
    assert "Server Version: v1.35.0+taintplane" in kubectl("version")
    resources = kubectl("api-resources").splitlines()
    assert resources[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = {line.split()[0]: line.split() for line in resources[1:]}
    assert rows["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert rows["nodes"] == ["nodes", "no", "v1", "false", "Node"]
    assert rows["devicetaintrules"] == [
        "devicetaintrules",
        "resource.k8s.io/v1alpha3",
        "false",
        "DeviceTaintRule",
    ]
    assert rows["runtimeclasses"] == ["runtimeclasses", "node.k8s.io/v1", "false", "RuntimeClass"]


def test_get_nodes_with_roles_status_and_labels(kubectl):
    lines = kubectl("get", "nodes").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert lines[1].split()[:3] == ["n1", "Unknown", "control-plane"]
    assert lines[2].split()[:3] == ["n2", "Unknown", "<none>"]
    wide = kubectl("get", "nodes", "-o", "wide").splitlines()[0].split()
    assert wide[-5:] == [
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    labels = kubectl("get", "node", "n2", "--show-labels").splitlines()[1].split()
    assert labels[-1] == "kubernetes.io/hostname=n2"
    assert kubectl("get", "no", "-o", "name") == "node/n1\nnode/n2\n"


def test_create_get_describe_and_delete_a_pod(kubectl):
    assert kubectl("create", "-f", "-", stdin=POD) == "pod/tol-pod created\n"
    again = kubectl.run("create", "-f", "-", stdin=POD)
    assert again.returncode == 1
    assert (
        again.stderr
        == 'Error from server (AlreadyExists): error when creating "STDIN": pods "tol-pod" already exists\n'
    )
    lines = kubectl("get", "pods", "-o", "wide").splitlines()
    assert lines[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert lines[1].split()[:4] == ["tol-pod", "0/1", "Pending", "0"]
    assert lines[1].split()[5:] == ["<none>", "<none>", "<none>", "<none>"]
    all_namespaces = kubectl("get", "pods", "-A").splitlines()
    assert all_namespaces[1].split()[:2] == ["default", "tol-pod"]
    assert kubectl("get", "pod", "tol-pod", "-o", "jsonpath={.spec.tolerations[0].value}") == "gpu"
    as_yaml = yaml.safe_load(kubectl("get", "pod", "tol-pod", "-o", "yaml"))
    assert as_yaml["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert as_yaml["spec"]["schedulerName"] == "default-scheduler"
    description = kubectl("describe", "pod", "tol-pod")
    assert "\nTolerations:      dedicated=gpu:NoSchedule\n" in description
    assert kubectl("delete", "pod", "tol-pod") == 'pod "tol-pod" deleted\n'
    gone = kubectl.run("get", "pod", "tol-pod")
    assert (gone.returncode, gone.stderr) == (
        1,
        'Error from server (NotFound): pods "tol-pod" not found\n',
    )


def test_apply_client_side_then_unchanged_then_configured(kubectl):
    manifest = POD.replace("tol-pod", "applied")
    assert kubectl("apply", "-f", "-", stdin=manifest) == "pod/applied created\n"
    # DefaultTolerationSeconds added two tolerations: the list (atomic, no merge key) differs
    # from the manifest's, so kubectl's three-way patch sends it again, as with any real
    # cluster; the server re-adds the defaults and the pod stays as it was.
    assert kubectl("apply", "-f", "-", stdin=manifest) == "pod/applied configured\n"
    tolerations = kubectl("get", "pod", "applied", "-o", "jsonpath={.spec.tolerations[*].key}")
    assert tolerations == "dedicated node.kubernetes.io/not-ready node.kubernetes.io/unreachable"
    relabelled = manifest.replace("app: tol", "app: tol2")
    assert kubectl("apply", "-f", "-", stdin=relabelled) == "pod/applied configured\n"
    assert kubectl("get", "pod", "applied", "-o", "jsonpath={.metadata.labels.app}") == "tol2"
    annotation = kubectl("get", "pod", "applied", "-o", "jsonpath={.metadata.annotations}")
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotation
    kubectl("delete", "pod", "applied")


def test_apply_server_side(kubectl):
    manifest = POD.replace("tol-pod", "ssa")
    assert (
        kubectl("apply", "--server-side", "-f", "-", stdin=manifest)
        == "pod/ssa serverside-applied\n"
    )
    assert (
        kubectl("apply", "--server-side", "-f", "-", stdin=manifest.replace("app: tol", "app: v2"))
        == "pod/ssa serverside-applied\n"
    )
    assert kubectl("get", "pod", "ssa", "-o", "jsonpath={.metadata.labels.app}") == "v2"
    kubectl("delete", "pod", "ssa")


def test_replace_with_a_stale_resource_version_conflicts(kubectl):
    kubectl("create", "-f", "-", stdin=POD.replace("tol-pod", "rep"))
    current = json.loads(kubectl("get", "pod", "rep", "-o", "json"))
    kubectl("label", "pod", "rep", "bump=1")
    current["metadata"]["labels"]["x"] = "y"
    stale = kubectl.run("replace", "-f", "-", stdin=json.dumps(current))
    assert stale.returncode == 1
    assert stale.stderr == (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on '
        'pods "rep": the object has been modified; please apply your changes to the latest version and try again\n'
    )
    fresh = json.loads(kubectl("get", "pod", "rep", "-o", "json"))
    fresh["metadata"]["labels"]["x"] = "y"
    assert kubectl("replace", "-f", "-", stdin=json.dumps(fresh)) == "pod/rep replaced\n"
    kubectl("delete", "pod", "rep")


def test_patch_types_and_status_subresource(kubectl):
    assert (
        kubectl("patch", "node", "n2", "-p", '{"metadata":{"labels":{"smp":"1"}}}')
        == "node/n2 patched\n"
    )
    assert (
        kubectl(
            "patch", "node", "n2", "--type=merge", "-p", '{"metadata":{"labels":{"merge":"1"}}}'
        )
        == "node/n2 patched\n"
    )
    assert (
        kubectl(
            "patch",
            "node",
            "n2",
            "--type=json",
            "-p",
            '[{"op":"add","path":"/spec/taints","value":[{"key":"j","effect":"NoSchedule"}]}]',
        )
        == "node/n2 patched\n"
    )
    assert (
        kubectl("get", "node", "n2", "-o", "jsonpath={.spec.taints}")
        == '[{"effect":"NoSchedule","key":"j"}]'
    )
    assert kubectl("patch", "node", "n2", "-p", '{"spec":{"taints":null}}') == "node/n2 patched\n"
    assert _make_ready(kubectl, "n2") == "node/n2 patched\n"
    assert kubectl("get", "nodes", "n2").splitlines()[1].split()[1] == "Ready"
    # The main resource cannot write status.
    kubectl("patch", "node", "n2", "--type=merge", "-p", '{"status":{"conditions":[]}}')
    assert kubectl("get", "nodes", "n2").splitlines()[1].split()[1] == "Ready"
    unchanged = kubectl("patch", "node", "n2", "-p", '{"metadata":{"labels":{"smp":"1"}}}')
    assert unchanged == "node/n2 patched (no change)\n"


def _make_ready(kubectl, node):
    """The node's Ready condition True, as its kubelet would report (these nodes have none)."""
    status = '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}'
    return kubectl("patch", "node", node, "--subresource=status", "-p", status)


def test_label_annotate_cordon_uncordon(kubectl):
    _make_ready(kubectl, "n2")  # STATUS below reads Ready,SchedulingDisabled (runs alone too)
    assert kubectl("label", "node", "n2", "a=b") == "node/n2 labeled\n"
    exists = kubectl.run("label", "node", "n2", "a=c")
    assert (exists.returncode, exists.stderr) == (
        1,
        "error: 'a' already has a value (b), and --overwrite is false\n",
    )
    assert kubectl("label", "node", "n2", "a-") == "node/n2 unlabeled\n"
    assert kubectl("annotate", "node", "n2", "note=hi") == "node/n2 annotated\n"
    assert kubectl("cordon", "n2") == "node/n2 cordoned\n"
    assert kubectl("cordon", "n2") == "node/n2 already cordoned\n"
    assert kubectl("get", "node", "n2").splitlines()[1].split()[1] == "Ready,SchedulingDisabled"
    assert kubectl("uncordon", "n2") == "node/n2 uncordoned\n"


def test_drain_evicts_and_honours_disruption_budgets(kubectl):
    pod = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: web}}
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: 11111111-1111-1111-1111-111111111111, controller: true}}]
spec:
  nodeName: n1
  containers: [{{name: c, image: nginx}}]
"""
    for name in ("web-1", "web-2"):
        kubectl("create", "-f", "-", stdin=pod.format(name=name))
    done = kubectl.run("drain", "n1", "--grace-period=0", "--timeout=20s")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "node/n1 cordoned\nevicting pod default/web-1\nevicting pod default/web-2\n"
        "pod/web-1 evicted\npod/web-2 evicted\nnode/n1 drained\n"
    ) or sorted(done.stdout.splitlines()) == sorted(
        [
            "node/n1 cordoned",
            "evicting pod default/web-1",
            "evicting pod default/web-2",
            "pod/web-1 evicted",
            "pod/web-2 evicted",
            "node/n1 drained",
        ]
    )
    assert kubectl("get", "pods", "-o", "name") == ""
    kubectl("uncordon", "n1")


def test_wait_and_not_found(kubectl):
    missing = kubectl.run("wait", "--for=condition=Ready", "pod/nope", "--timeout=5s")
    assert (missing.returncode, missing.stderr) == (
        1,
        'Error from server (NotFound): pods "nope" not found\n',
    )
    kubectl("create", "-f", "-", stdin=POD.replace("tol-pod", "waited"))
    ready = '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
    kubectl("patch", "pod", "waited", "--subresource=status", "--type=merge", "-p", ready)
    assert (
        kubectl("wait", "--for=condition=Ready", "pod/waited", "--timeout=10s")
        == "pod/waited condition met\n"
    )
    kubectl("delete", "pod", "waited")


def test_explain_describes_tolerations(kubectl):
    text = kubectl("explain", "pod.spec.tolerations")
    assert text.startswith("KIND:       Pod\nVERSION:    v1\n\nFIELD: tolerations <[]Toleration>\n")
    assert "  effect\t<string>\n  enum: NoExecute, NoSchedule, PreferNoSchedule\n" in text


def test_get_watch_streams_table_rows(kubectl):
    kubectl("create", "-f", "-", stdin=POD.replace("tol-pod", "watched"))
    process = subprocess.Popen(
        ["kubectl", "get", "pods", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl.env(),
    )
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = process.stdout, process.stderr
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        assert lines.get(timeout=20).split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert lines.get(timeout=20).split()[:3] == ["watched", "0/1", "Pending"]
        kubectl("label", "pod", "watched", "seen=yes")
        assert lines.get(timeout=20).split()[:3] == ["watched", "0/1", "Pending"]
        kubectl("delete", "pod", "watched")
        assert lines.get(timeout=20).split()[:3] == ["watched", "0/1", "Pending"]
    finally:
        process.terminate()
        process.wait(10)
        stdout.close()
        stderr.close()
