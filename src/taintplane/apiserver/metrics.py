"""kube-apiserver's ``apiserver_resource_objects``: how many objects of each resource are stored.

As storage/etcd3/metrics's gauge (ALPHA; labels ``group`` and ``resource``, ``group`` empty for
core; -1 when counting fails), one series per resource with its own storage: the create-only
reviews store nothing, and events.k8s.io Events are core Events served in another version (upstream
counts them once, as ``group="", resource="events"``).

Upstream's registry counts each resource when it starts and then every
``--etcd-count-metric-poll-period`` (a minute, with jitter), so a scrape may read a count up to
that old. Here the count is taken when scraped, as if that poll had just run: the jitter makes
upstream's instants unreproducible anyway, and under virtual time a scrape then reads exactly what
is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from taintplane.api.scheme import ResourceType, Scheme
from taintplane.apiserver.conversion import VIEWS
from taintplane.store.interface import Store

__all__ = ["ResourceObjects", "count_resource_objects", "stored_resources"]

log = logging.getLogger(__name__)

RESOURCE_OBJECTS_HELP = (
    "[ALPHA] Number of stored objects at the time of last check split by kind. "
    "In case of a fetching error, the value will be -1."
)


def stored_resources(scheme: Scheme) -> list[ResourceType]:
    """One served version of each resource that has storage of its own."""
    seen: dict[tuple[str, str], ResourceType] = {}
    for resource in scheme:
        if (
            resource.verbs == ("create",)
            or (resource.group, resource.version, resource.plural) in VIEWS
        ):
            continue
        seen.setdefault((resource.group, resource.plural), resource)
    return list(seen.values())


async def count_resource_objects(store: Store, scheme: Scheme) -> ResourceObjects:
    counts: dict[tuple[str, str], int] = {}
    for resource in stored_resources(scheme):
        try:
            counts[(resource.group, resource.plural)] = await store.count(resource.storage_prefix())
        except Exception:  # any fetching error is -1, as upstream's UpdateStoreStats
            log.debug("counting %s failed", resource.group_resource, exc_info=True)
            counts[(resource.group, resource.plural)] = -1
    return ResourceObjects(counts)


class ResourceObjects(Collector):
    def __init__(self, counts: Mapping[tuple[str, str], int]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "apiserver_resource_objects", RESOURCE_OBJECTS_HELP, labels=["group", "resource"]
        )
        for (group, resource), count in sorted(self.counts.items()):
            family.add_metric([group, resource], count)
        yield family
