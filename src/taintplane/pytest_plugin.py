"""The ``taintplane_cluster`` pytest fixture (registered through the ``pytest11`` entry point,
so installing taintplane is enough).

::

    def test_my_controller_survives_a_node_failure(taintplane_cluster):
        v1 = kubernetes.client.CoreV1Api(taintplane_cluster.kubernetes_client())
        ...
        taintplane_cluster.stop_node("node-2")
        taintplane_cluster.advance("6m")

    @pytest.mark.taintplane(nodes=5, feature_gates="TaintTolerationComparisonOperators=true")
    def test_with_five_nodes(taintplane_cluster): ...

The marker takes :func:`taintplane.testing.local_cluster`'s keyword arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from taintplane.testing import LocalCluster

__all__ = ["OPTIONS", "pytest_configure", "taintplane_cluster"]

#: The marker's keyword options (``local_cluster``'s).
OPTIONS = ("nodes", "cluster_file", "clock", "start", "feature_gates")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "taintplane(**options): options of the taintplane_cluster fixture "
        "(nodes, cluster_file, clock, start, feature_gates)",
    )


@pytest.fixture
def taintplane_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """A whole cluster (API server, scheduler, controllers, simulated nodes) on a virtual
    clock, serving on 127.0.0.1 for the duration of the test."""
    # Imported here, not with the plugin: pytest loads plugins before coverage starts, and
    # every session would pay for importing the whole control plane.
    from taintplane.testing import local_cluster

    marker = request.node.get_closest_marker("taintplane")
    options = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        pytest.fail(
            f"@pytest.mark.taintplane takes keyword options only ({', '.join(OPTIONS)}), "
            f"not {marker.args!r}",
            pytrace=False,
        )
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        pytest.fail(
            f"@pytest.mark.taintplane: unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(OPTIONS)}",
            pytrace=False,
        )
    with local_cluster(tmp_path_factory.mktemp("taintplane"), **options) as cluster:
        yield cluster
