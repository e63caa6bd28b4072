"""How kube-controller-manager's ``/metrics`` differs from prometheus_client's defaults.

component-base prefixes each metric's HELP text with its stability level (``[ALPHA] ``,
``[BETA] ``, ``[STABLE] ``; ``metrics.StabilityLevel``, set per metric where upstream
declares it) and, being the Go client, has no ``*_created`` series.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = ["WithoutCreated", "alpha", "stable"]


def alpha(help_text: str) -> str:
    return f"[ALPHA] {help_text}"


def stable(help_text: str) -> str:
    return f"[STABLE] {help_text}"


class WithoutCreated(Collector):
    """A registry's metrics without their ``_created`` samples.

    Filtering here rather than calling ``prometheus_client.disable_created_metrics()`` keeps
    the choice to this exposition: that switch is process-global and would change every other
    registry in the process (a test's, an embedding program's) as well."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Metric]:
        for family in self.registry.collect():
            kept = Metric(family.name, family.documentation, family.type, family.unit)
            kept.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield kept
