"""kubectl taint against a real server, with the exact output of KUBECTL_CONTRACT.md §6."""

import json

import pytest

NODES = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
"""


@pytest.fixture(scope="module", autouse=True)
def nodes(kubectl):
    kubectl("create", "--validate=false", "-f", "-", stdin=NODES)
    # TaintNodesByCondition gave each new node node.kubernetes.io/not-ready:NoSchedule; with
    # no node lifecycle controller in this API-only cluster, lift it as that controller would
    # for nodes without conditions, so the tests see only the taints they set.
    kubectl("taint", "nodes", "--all", "node.kubernetes.io/not-ready:NoSchedule-")


def taints(kubectl, node):
    raw = kubectl("get", "node", node, "-o", "jsonpath={.spec.taints}")
    return json.loads(raw) if raw else None


def test_taint_sequence_on_one_node(kubectl):
    assert kubectl("taint", "nodes", "n2", "key1=value1:NoSchedule") == "node/n2 tainted\n"
    assert taints(kubectl, "n2") == [{"effect": "NoSchedule", "key": "key1", "value": "value1"}]
    assert kubectl("taint", "nodes", "n2", "key2:NoExecute") == "node/n2 tainted\n"
    assert taints(kubectl, "n2") == [
        {"effect": "NoExecute", "key": "key2"},
        {"effect": "NoSchedule", "key": "key1", "value": "value1"},
    ]
    refused = kubectl.run("taint", "nodes", "n2", "key1=value9:NoSchedule")
    assert refused.returncode == 1
    assert (
        refused.stderr
        == "error: node n2 already has key1 taint(s) with same effect(s) and --overwrite is false\n"
    )
    assert (
        kubectl("taint", "nodes", "n2", "key1=value9:NoSchedule", "--overwrite")
        == "node/n2 modified\n"
    )
    assert taints(kubectl, "n2") == [
        {"effect": "NoSchedule", "key": "key1", "value": "value9"},
        {"effect": "NoExecute", "key": "key2"},
    ]
    assert kubectl("taint", "nodes", "n2", "key1:NoSchedule-") == "node/n2 untainted\n"
    assert kubectl("taint", "nodes", "n2", "key2-") == "node/n2 untainted\n"
    assert taints(kubectl, "n2") is None
    missing = kubectl.run("taint", "nodes", "n2", "key2-")
    assert (missing.returncode, missing.stderr) == (1, 'error: taint "key2" not found\n')


def test_taint_all_and_by_selector(kubectl):
    assert (
        kubectl("taint", "nodes", "--all", "gpu=true:PreferNoSchedule")
        == "node/n1 tainted\nnode/n2 tainted\n"
    )
    assert (
        kubectl("taint", "nodes", "-l", "kubernetes.io/hostname=n1", "zone=a:NoExecute")
        == "node/n1 tainted\n"
    )
    assert taints(kubectl, "n1") == [
        {"effect": "NoExecute", "key": "zone", "value": "a"},
        {"effect": "PreferNoSchedule", "key": "gpu", "value": "true"},
    ]
    assert kubectl("taint", "nodes", "--all", "gpu-") == "node/n1 untainted\nnode/n2 untainted\n"
    assert kubectl("taint", "nodes", "n1", "zone-") == "node/n1 untainted\n"


def test_taint_errors(kubectl):
    bad = kubectl.run("taint", "nodes", "n1", "k=v:Bogus")
    assert (bad.returncode, bad.stderr) == (
        1,
        "error: invalid taint effect: Bogus, unsupported taint effect\nSee 'kubectl taint -h' for help and examples\n",
    )
    missing = kubectl.run("taint", "nodes", "nope", "k=v:NoSchedule")
    assert (missing.returncode, missing.stderr) == (
        1,
        'Error from server (NotFound): nodes "nope" not found\n',
    )


def test_invalid_taints_are_rejected_by_the_server_with_field_errors(kubectl):
    patch = json.dumps({"spec": {"taints": [{"key": "a", "effect": "NoScheduleNoAdmit"}]}})
    done = kubectl.run("patch", "node", "n1", "-p", patch)
    assert done.returncode == 1
    assert done.stderr == (
        'The Node "n1" is invalid: metadata.taints[0].effect: Unsupported value: "NoScheduleNoAdmit": '
        'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"\n'
    )
    assert taints(kubectl, "n1") is None
