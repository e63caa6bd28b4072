"""PodTolerationRestriction, called directly: upstream's mutations and messages."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.admission import NotFound, Rejected
from taintplane.admission.pod_toleration_restriction import (
    NS_DEFAULT_TOLERATIONS as DEFAULTS,
)
from taintplane.admission.pod_toleration_restriction import (
    NS_WL_TOLERATIONS as WHITELIST,
)
from taintplane.admission.pod_toleration_restriction import (
    PodTolerationRestriction,
    PodTolerationRestrictionConfig,
    is_best_effort,
    load_configuration,
)
from taintplane.api.tolerations import Toleration
from tests.admission.support import FakeLookup, attributes, namespace, pod, run

FOO = {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}
FOO_OTHER = {"key": "foo", "operator": "Equal", "value": "baz", "effect": "NoSchedule"}
FOO_ANY = {"key": "foo", "operator": "Exists", "effect": "NoSchedule"}
GPU = {"key": "gpu", "operator": "Exists"}
MEMORY_PRESSURE = {
    "key": "node.kubernetes.io/memory-pressure",
    "operator": "Exists",
    "effect": "NoSchedule",
}
BURSTABLE = [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "500m"}}}]
NS_CONFLICT = (
    "pod tolerations (possibly merged with namespace default tolerations) conflict with its "
    "namespace whitelist"
)
CLUSTER_CONFLICT = NS_CONFLICT.replace("namespace whitelist", "cluster whitelist")


def _config(
    default: list[dict[str, Any]] | None = None, whitelist: list[dict[str, Any]] | None = None
) -> PodTolerationRestrictionConfig:
    return PodTolerationRestrictionConfig(
        [Toleration.from_dict(t) for t in default or []],
        [Toleration.from_dict(t) for t in whitelist or []],
    )


CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[Any], list[Any] | str]] = [
    # name, namespace annotations, cluster config, pod tolerations, expected (or error)
    ("nothing configured", {}, {}, [FOO], [FOO]),
    ("cluster default added", {}, {"default": [FOO]}, [], [FOO]),
    ("namespace default added", {DEFAULTS: [FOO]}, {}, [], [FOO]),
    ("namespace default overrides cluster's", {DEFAULTS: [FOO]}, {"default": [GPU]}, [], [FOO]),
    ("empty namespace default overrides cluster's", {DEFAULTS: ""}, {"default": [GPU]}, [], []),
    ("pod's own toleration first, no duplicate", {DEFAULTS: [FOO]}, {}, [FOO], [FOO]),
    (
        "pod and default with other values: both",
        {DEFAULTS: [FOO]},
        {},
        [FOO_OTHER],
        [FOO_OTHER, FOO],
    ),
    (
        "pod toleration covering the default replaces it",
        {DEFAULTS: [FOO]},
        {},
        [FOO_ANY],
        [FOO_ANY],
    ),
    ("whitelisted", {WHITELIST: [FOO_ANY]}, {}, [FOO], [FOO]),
    ("not whitelisted", {WHITELIST: [FOO]}, {}, [FOO_OTHER], NS_CONFLICT),
    ("merged default not whitelisted", {DEFAULTS: [GPU], WHITELIST: [FOO]}, {}, [], NS_CONFLICT),
    ("cluster whitelist", {}, {"whitelist": [FOO]}, [FOO_OTHER], CLUSTER_CONFLICT),
    (
        "namespace whitelist overrides cluster's",
        {WHITELIST: [FOO_OTHER]},
        {"whitelist": [FOO]},
        [FOO_OTHER],
        [FOO_OTHER],
    ),
    ("empty namespace whitelist allows all", {WHITELIST: ""}, {"whitelist": [FOO]}, [GPU], [GPU]),
    ("no tolerations pass any whitelist", {WHITELIST: [FOO]}, {}, [], []),
]


@pytest.mark.parametrize(
    ("annotations", "config", "tolerations", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_create(
    annotations: dict[str, Any],
    config: dict[str, Any],
    tolerations: list[Any],
    expected: list[Any] | str,
) -> None:
    plugin = PodTolerationRestriction(FakeLookup(namespace(annotations)), _config(**config))
    obj = pod(tolerations=list(tolerations)) if tolerations else pod()
    if isinstance(expected, str):
        with pytest.raises(Rejected) as refused:
            run(plugin, attributes(obj))
        assert refused.value.message == expected
        return
    run(plugin, attributes(obj))
    assert obj["spec"].get("tolerations", []) == expected


def test_non_best_effort_pods_tolerate_memory_pressure() -> None:
    plugin = PodTolerationRestriction(FakeLookup(namespace({DEFAULTS: [FOO]})))
    obj = pod(containers=BURSTABLE)
    run(plugin, attributes(obj))
    assert obj["spec"]["tolerations"] == [FOO, MEMORY_PRESSURE]


def test_update_adds_no_defaults_but_checks_the_whitelist() -> None:
    lookup = FakeLookup(namespace({DEFAULTS: [FOO], WHITELIST: [FOO]}))
    plugin = PodTolerationRestriction(lookup)
    obj = pod()
    run(plugin, attributes(obj, "UPDATE", old=pod()))
    assert "tolerations" not in obj["spec"]
    obj = pod(tolerations=[GPU])
    with pytest.raises(Rejected, match="namespace whitelist"):
        run(plugin, attributes(obj, "UPDATE", old=pod()))


def test_memory_pressure_on_update_too() -> None:
    plugin = PodTolerationRestriction(FakeLookup(namespace()))
    obj = pod(containers=BURSTABLE)
    run(plugin, attributes(obj, "UPDATE", old=pod(containers=BURSTABLE)))
    assert obj["spec"]["tolerations"] == [MEMORY_PRESSURE]


@pytest.mark.parametrize(
    ("operation", "subresource"), [("DELETE", ""), ("UPDATE", "status"), ("CREATE", "binding")]
)
def test_ignores_other_requests(operation: str, subresource: str) -> None:
    plugin = PodTolerationRestriction(FakeLookup(namespace({WHITELIST: [FOO]})))
    obj = pod(tolerations=[GPU])
    run(plugin, attributes(obj, operation, subresource=subresource))
    assert obj["spec"]["tolerations"] == [GPU]


def test_bad_annotation_is_a_plain_error() -> None:
    plugin = PodTolerationRestriction(FakeLookup(namespace({DEFAULTS: "[{"})))
    with pytest.raises(Rejected):
        run(plugin, attributes(pod()))


@pytest.mark.parametrize(
    ("containers", "best_effort"),
    [
        ([{"name": "c"}], True),
        ([{"name": "c", "resources": {"requests": {"cpu": "0"}}}], True),
        ([{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}], True),
        ([{"name": "c", "resources": {"limits": {"memory": "1Mi"}}}], False),
        (BURSTABLE, False),
    ],
)
def test_qos(containers: list[Any], best_effort: bool) -> None:
    assert is_best_effort(pod(containers=containers)) is best_effort
    init = pod(containers=[{"name": "c"}], initContainers=containers)
    assert is_best_effort(init) is best_effort


def test_configuration() -> None:
    config = load_configuration(
        {
            "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
            "kind": "Configuration",
            "default": [FOO],
            "whitelist": [FOO_ANY],
        }
    )
    assert config == _config([FOO], [FOO_ANY])
    assert load_configuration(None) == PodTolerationRestrictionConfig()
    with pytest.raises(ValueError, match='no kind "PodTolerationRestrictionConfig"'):
        load_configuration(
            {
                "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
                "kind": "PodTolerationRestrictionConfig",
            }
        )
    with pytest.raises(ValueError, match=r"^invalid config: \[podtolerationrestriction\.default"):
        load_configuration(
            {
                "apiVersion": "podtolerationrestriction.admission.k8s.io/v1",
                "kind": "Configuration",
                "default": [{"key": "foo", "operator": "Exists", "value": "bar"}],
            }
        )


def test_missing_namespace_is_not_found() -> None:
    """Upstream's getNamespace returns the client's NotFound (404), not a plain error."""
    plugin = PodTolerationRestriction(FakeLookup(namespace()))
    with pytest.raises(NotFound, match=r'^namespaces "gone" not found$'):
        run(plugin, attributes(pod(namespace="gone")))
