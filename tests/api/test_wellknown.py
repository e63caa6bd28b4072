import pytest

from taintplane.api import wellknown
from taintplane.api.features import DEFAULTS, FeatureGates, UnknownFeatureGateError
from taintplane.api.tolerations import Toleration


def test_well_known_taint_keys_are_upstreams():
    assert wellknown.TAINT_NODE_NOT_READY == "node.kubernetes.io/not-ready"
    assert wellknown.TAINT_NODE_UNREACHABLE == "node.kubernetes.io/unreachable"
    assert wellknown.TAINT_NODE_UNSCHEDULABLE == "node.kubernetes.io/unschedulable"
    assert wellknown.TAINT_NODE_MEMORY_PRESSURE == "node.kubernetes.io/memory-pressure"
    assert wellknown.TAINT_NODE_DISK_PRESSURE == "node.kubernetes.io/disk-pressure"
    assert wellknown.TAINT_NODE_PID_PRESSURE == "node.kubernetes.io/pid-pressure"
    assert wellknown.TAINT_NODE_NETWORK_UNAVAILABLE == "node.kubernetes.io/network-unavailable"
    assert wellknown.TAINT_NODE_OUT_OF_SERVICE == "node.kubernetes.io/out-of-service"
    assert (
        wellknown.TAINT_EXTERNAL_CLOUD_PROVIDER == "node.cloudprovider.kubernetes.io/uninitialized"
    )
    assert wellknown.TAINT_NODE_SHUTDOWN == "node.cloudprovider.kubernetes.io/shutdown"


DAEMON = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
HOST_NETWORK = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def wire(tolerations):
    return [t.to_dict() for t in tolerations]


def test_daemonset_pods_get_exactly_these_tolerations_in_this_order():
    assert wire(wellknown.daemon_pod_tolerations([])) == DAEMON


def test_host_network_daemons_also_tolerate_network_unavailable():
    assert wire(wellknown.daemon_pod_tolerations([], host_network=True)) == [*DAEMON, HOST_NETWORK]


def test_template_tolerations_come_first_and_matching_ones_are_replaced():
    own = Toleration("gpu", "Exists")
    with_seconds = Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute", 300)
    result = wellknown.daemon_pod_tolerations([own, with_seconds])
    # The not-ready toleration is replaced in place: daemons tolerate it forever.
    assert wire(result) == [own.to_dict(), DAEMON[0], *DAEMON[1:]]


def test_applying_twice_changes_nothing():
    once = wellknown.daemon_pod_tolerations([], host_network=True)
    assert wellknown.daemon_pod_tolerations(once, host_network=True) == once


def test_comparison_operators_gate_is_alpha_and_off():
    assert DEFAULTS["TaintTolerationComparisonOperators"] is False
    assert FeatureGates().comparison_operators is False
    assert FeatureGates({"TaintTolerationComparisonOperators": True}).comparison_operators is True


def test_feature_gate_flag_parsing():
    assert (
        FeatureGates.parse("TaintTolerationComparisonOperators=true").comparison_operators is True
    )
    assert (
        FeatureGates.parse(" TaintTolerationComparisonOperators = False ,").comparison_operators
        is False
    )
    assert FeatureGates.parse("").comparison_operators is False
    with pytest.raises(UnknownFeatureGateError, match=r"^unrecognized feature gate: Nope$"):
        FeatureGates.parse("Nope=true")
    with pytest.raises(
        ValueError, match=r"^missing bool value for TaintTolerationComparisonOperators$"
    ):
        FeatureGates.parse("TaintTolerationComparisonOperators")
    with pytest.raises(ValueError, match=r"^invalid value of X=yes"):
        FeatureGates.parse("X=yes")
    with pytest.raises(UnknownFeatureGateError):
        FeatureGates().enabled("Nope")
