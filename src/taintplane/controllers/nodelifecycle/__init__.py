"""The node lifecycle controller: node health from heartbeats, condition taints, and
rate-limited NoExecute tainting of unhealthy nodes (which the taint eviction controller then
acts on)."""

from taintplane.controllers.nodelifecycle.controller import (
    NodeLifecycleConfig,
    NodeLifecycleController,
    ZoneState,
    zone_key,
)

__all__ = ["NodeLifecycleConfig", "NodeLifecycleController", "ZoneState", "zone_key"]
