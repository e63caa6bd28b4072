"""Which plugins run, in which order, and the admission configuration file."""

from __future__ import annotations

from pathlib import Path

import pytest

from taintplane.admission import Plugin
from taintplane.admission.admission_config import AdmissionConfigError, read_admission_configuration
from taintplane.admission.plugins import AdmissionOptions, AdmissionSetup
from taintplane.admission.pod_node_selector import PodNodeSelector
from taintplane.admission.pod_toleration_restriction import PodTolerationRestriction
from taintplane.admission.priority import Priority
from taintplane.admission.taint_nodes_by_condition import TaintNodesByCondition
from tests.admission.support import FakeLookup


def test_default_plugins_in_upstream_order() -> None:
    setup = AdmissionOptions().load()
    assert setup == AdmissionSetup()
    ours = [
        p
        for p in setup.enabled
        if p
        in {
            "NodeRestriction",
            "TaintNodesByCondition",
            "Priority",
            "DefaultTolerationSeconds",
            "RuntimeClass",
            "PodTolerationRestriction",
        }
    ]
    assert ours == [
        "NodeRestriction",
        "TaintNodesByCondition",
        "Priority",
        "DefaultTolerationSeconds",
        "RuntimeClass",
    ]


def test_enable_and_disable_keep_upstream_order() -> None:
    setup = AdmissionOptions(
        enable=("PodTolerationRestriction", "PodNodeSelector"), disable=("Priority,RuntimeClass",)
    ).load()
    lookup = FakeLookup()
    plugins: list[Plugin] = [
        Priority(lookup),
        PodTolerationRestriction(lookup),
        TaintNodesByCondition(),
        PodNodeSelector(lookup),
    ]
    assert [p.name for p in setup.select(plugins)] == [
        "TaintNodesByCondition",
        "PodNodeSelector",
        "PodTolerationRestriction",
    ]


def test_legacy_pod_node_selector_file(tmp_path: Path) -> None:
    path = tmp_path / "legacy.yaml"
    path.write_text("podNodeSelectorPluginConfig:\n  clusterDefaultNodeSelector: env=prod\n")
    assert read_admission_configuration(path) == {
        "PodNodeSelector": {
            "podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "env=prod"}
        }
    }
    setup = AdmissionOptions(config_file=path).load()
    assert setup.node_selectors == {"clusterDefaultNodeSelector": "env=prod"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "want an AdmissionConfiguration object"),
        ("plugins: []", "Object 'Kind' is missing"),
        ("kind: AdmissionConfiguration", "Object 'apiVersion' is missing"),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: {}",
            "plugins: want a list",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: [{}]",
            "plugins[0]: want a map with a plugin name",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins: [{name: X, configuration: 3}]",
            "plugins[0]: configuration must be an object",
        ),
    ],
)
def test_bad_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(content)
    with pytest.raises(AdmissionConfigError) as error:
        read_admission_configuration(path)
    assert str(error.value).startswith(str(path))
    assert message in str(error.value)
