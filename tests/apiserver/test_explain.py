"""kubectl explain against a real server prints the descriptions kube-apiserver 1.35 serves:
the type's own text after a field's, and the "Possible enum values" of +enum fields."""

import json
import re
from importlib import resources

import pytest


def screen(text: str) -> str:
    """kubectl indents the blank lines inside a description; "~" marks them here."""
    return re.sub(r"(?m)^    ~$", "    ", text)


RUNTIMECLASS_SCHEDULING = screen(
    """\
GROUP:      node.k8s.io
KIND:       RuntimeClass
VERSION:    v1

FIELD: scheduling <Scheduling>


DESCRIPTION:
    scheduling holds the scheduling constraints to ensure that pods running with
    this RuntimeClass are scheduled to nodes that support it. If scheduling is
    nil, this RuntimeClass is assumed to be supported by all nodes.
    Scheduling specifies the scheduling constraints for nodes supporting a
    RuntimeClass.
    ~
FIELDS:
  nodeSelector\t<map[string]string>
    nodeSelector lists labels that must be present on nodes that support this
    RuntimeClass. Pods using this RuntimeClass can only be scheduled to a node
    matched by this selector. The RuntimeClass nodeSelector is merged with a
    pod's existing nodeSelector. Any conflicts will cause the pod to be rejected
    in admission.

  tolerations\t<[]Toleration>
    tolerations are appended (excluding duplicates) to pods running with this
    RuntimeClass during admission, effectively unioning the set of nodes
    tolerated by the pod and the RuntimeClass.


"""
)

POD_TOLERATIONS_HEAD = screen(
    """\
KIND:       Pod
VERSION:    v1

FIELD: tolerations <[]Toleration>


DESCRIPTION:
    If specified, the pod's tolerations.
    The pod this Toleration is attached to tolerates any taint that matches the
    triple <key,value,effect> using the matching operator <operator>.
    ~
FIELDS:
  effect\t<string>
  enum: NoExecute, NoSchedule, PreferNoSchedule
    Effect indicates the taint effect to match. Empty means match all taint
    effects. When specified, allowed values are NoSchedule, PreferNoSchedule and
    NoExecute.
    ~
    Possible enum values:
     - `"NoExecute"` Evict any already-running pods that do not tolerate the
    taint. Currently enforced by NodeController.
"""
)

TOLERATION_EFFECT = screen(
    """\
KIND:       Pod
VERSION:    v1

FIELD: effect <string>
ENUM:
    NoExecute
    NoSchedule
    PreferNoSchedule

DESCRIPTION:
    Effect indicates the taint effect to match. Empty means match all taint
    effects. When specified, allowed values are NoSchedule, PreferNoSchedule and
    NoExecute.
    ~
    Possible enum values:
     - `"NoExecute"` Evict any already-running pods that do not tolerate the
    taint. Currently enforced by NodeController.
     - `"NoSchedule"` Do not allow new pods to schedule onto the node unless
    they tolerate the taint, but allow all pods submitted to Kubelet without
    going through the scheduler to start, and allow all already-running pods to
    continue running. Enforced by the scheduler.
     - `"PreferNoSchedule"` Like TaintEffectNoSchedule, but the scheduler tries
    not to schedule new pods onto the node, rather than prohibiting new pods
    from scheduling onto the node entirely. Enforced by the scheduler.
    ~

"""
)

# The resource.k8s.io field comments end with an empty line before their markers, which
# upstream keeps ahead of the enum suffix: hence the two blank lines.
DEVICE_TAINT_RULE_TAINT_HEAD = screen(
    """\
GROUP:      resource.k8s.io
KIND:       DeviceTaintRule
VERSION:    v1alpha3

FIELD: taint <DeviceTaint>


DESCRIPTION:
    The taint that gets applied to matching devices.
    The device this taint is attached to has the "effect" on any claim which
    does not tolerate the taint and, through the claim, to pods using the claim.
    ~
FIELDS:
  effect\t<string> -required-
  enum: NoExecute, NoSchedule, None
    The effect of the taint on claims that do not tolerate the taint and through
    such claims on the pods using them.
    ~
    Valid effects are None, NoSchedule and NoExecute. PreferNoSchedule as used
    for nodes is not valid here. More effects may get added in the future.
    Consumers must treat unknown effects like None.
    ~
    ~
    Possible enum values:
     - `"NoExecute"` Evict any already-running pods that do not tolerate the
    device taint.
"""
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("runtimeclass.scheduling", RUNTIMECLASS_SCHEDULING),
        ("pod.spec.tolerations.effect", TOLERATION_EFFECT),
    ],
)
def test_explain_prints_upstream_text(kubectl, path, expected):
    assert kubectl("explain", path) == expected


@pytest.mark.parametrize(
    ("path", "head"),
    [
        ("pod.spec.tolerations", POD_TOLERATIONS_HEAD),
        ("devicetaintrule.spec.taint", DEVICE_TAINT_RULE_TAINT_HEAD),
    ],
)
def test_explain_head_is_upstream_text(kubectl, path, head):
    assert kubectl("explain", path)[: len(head)] == head


def test_kinds_have_their_description(kubectl):
    out = kubectl("explain", "runtimeclass")
    assert "DESCRIPTION:\n    RuntimeClass defines a class of container runtime" in out
    assert "<empty>" not in out


def test_every_schema_and_field_is_described():
    text = resources.files("taintplane.apiserver").joinpath("openapi_schemas.json").read_text()
    schemas = json.loads(text)["schemas"]
    undescribed = [name for name, schema in schemas.items() if not schema.get("description")]
    fields = [
        f"{name}.{field}"
        for name, schema in schemas.items()
        for field, prop in schema["properties"].items()
        if not prop.get("description")
    ]
    assert (undescribed, fields) == ([], [])
    assert schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["affinity"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Affinity"}],
        "description": "If specified, the pod's scheduling constraints",
    }
    # Paragraphs stay paragraphs (the Python client flattens them to two spaces).
    generate_name = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"][
        "generateName"
    ]["description"]
    assert "on the server.\n\nIf this field is specified" in generate_name
