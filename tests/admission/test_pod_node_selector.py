"""PodNodeSelector, called directly: upstream's merges and messages."""

from __future__ import annotations

from typing import Any

import pytest

from taintplane.admission import Forbidden, NotFound, Rejected
from taintplane.admission.pod_node_selector import (
    NAMESPACE_NODE_SELECTOR,
    PodNodeSelector,
    load_configuration,
)
from tests.admission.support import FakeLookup, attributes, namespace, pod, run

CONFLICT = "pod node label selector conflicts with its namespace node label selector"
WHITELIST = "pod node label selector labels conflict with its namespace whitelist"

CASES: list[tuple[str, str | None, dict[str, str], dict[str, str], dict[str, str] | str]] = [
    # name, namespace annotation (None: absent), plugin config, pod selector, expected
    ("nothing configured", None, {}, {"a": "1"}, {"a": "1"}),
    ("namespace selector merged", "env=prod", {}, {"a": "1"}, {"env": "prod", "a": "1"}),
    ("same value is no conflict", "env=prod", {}, {"env": "prod"}, {"env": "prod"}),
    ("conflict", "env=prod", {}, {"env": "dev"}, CONFLICT),
    ("cluster default", None, {"clusterDefaultNodeSelector": "env=prod"}, {}, {"env": "prod"}),
    (
        "annotation overrides cluster default",
        "zone=a",
        {"clusterDefaultNodeSelector": "env=prod"},
        {},
        {"zone": "a"},
    ),
    ("empty annotation: no selector", "", {"clusterDefaultNodeSelector": "env=prod"}, {}, {}),
    (
        "whitelisted",
        "env=prod",
        {"ns": "env=prod,team=a"},
        {"team": "a"},
        {"env": "prod", "team": "a"},
    ),
    ("not whitelisted", "env=prod", {"ns": "env=prod"}, {"team": "a"}, WHITELIST),
    ("whitelist of another namespace", None, {"other": "env=prod"}, {"team": "a"}, {"team": "a"}),
    ("spaces trimmed", " env = prod , zone=a", {}, {}, {"env": "prod", "zone": "a"}),
]


@pytest.mark.parametrize(
    ("annotation", "config", "selector", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_create(
    annotation: str | None,
    config: dict[str, str],
    selector: dict[str, str],
    expected: dict[str, str] | str,
) -> None:
    annotations = {} if annotation is None else {NAMESPACE_NODE_SELECTOR: annotation}
    plugin = PodNodeSelector(FakeLookup(namespace(annotations)), config)
    obj = pod(nodeSelector=dict(selector)) if selector else pod()
    if isinstance(expected, str):
        with pytest.raises(Forbidden) as refused:
            run(plugin, attributes(obj))
        assert refused.value.reason == expected
        return
    run(plugin, attributes(obj))
    assert obj["spec"].get("nodeSelector", {}) == expected


def test_only_create() -> None:
    plugin = PodNodeSelector(FakeLookup(namespace({NAMESPACE_NODE_SELECTOR: "env=prod"})))
    obj = pod(nodeSelector={"env": "dev"})
    run(plugin, attributes(obj, "UPDATE", old=pod()))
    run(plugin, attributes(obj, subresource="binding"))
    assert obj["spec"]["nodeSelector"] == {"env": "dev"}


def test_bad_annotation_is_a_plain_error_and_a_missing_namespace_not_found() -> None:
    plugin = PodNodeSelector(FakeLookup(namespace({NAMESPACE_NODE_SELECTOR: "env"})))
    with pytest.raises(Rejected, match=r"^invalid selector: \[env\]$"):
        run(plugin, attributes(pod()))
    with pytest.raises(NotFound, match=r'^namespaces "gone" not found$'):
        run(plugin, attributes(pod(namespace="gone")))


def test_configuration() -> None:
    config: dict[str, Any] = {"podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "a=b"}}
    assert load_configuration(config) == {"clusterDefaultNodeSelector": "a=b"}
    assert load_configuration({"PodNodeSelectorPluginConfig": {"ns": None}}) == {"ns": ""}
    assert load_configuration(None) == {}
    with pytest.raises(ValueError, match=r"podNodeSelectorPluginConfig\.ns: invalid selector"):
        load_configuration({"podNodeSelectorPluginConfig": {"ns": "a=b=c"}})
