"""DefaultTolerationSeconds: every pod tolerates ``node.kubernetes.io/not-ready`` and
``node.kubernetes.io/unreachable`` (NoExecute) for 300 s unless it says otherwise.

As upstream's plugin, on pod create and update (not subresources): a toleration counts as
covering a taint when its key is that taint's or empty and its effect is NoExecute or empty;
the missing defaults are appended, not-ready first. The seconds are the API server flags
``--default-not-ready-toleration-seconds`` and ``--default-unreachable-toleration-seconds``.
"""

from __future__ import annotations

from typing import Any

from taintplane.admission.chain import Attributes
from taintplane.api.wellknown import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE

__all__ = ["DEFAULT_TOLERATION_SECONDS", "DefaultTolerationSeconds"]

DEFAULT_TOLERATION_SECONDS = 300


def _covers(toleration: dict[str, Any], key: str) -> bool:
    return toleration.get("key", "") in ("", key) and toleration.get("effect", "") in (
        "",
        "NoExecute",
    )


class DefaultTolerationSeconds:
    name = "DefaultTolerationSeconds"

    def __init__(
        self,
        not_ready_seconds: int = DEFAULT_TOLERATION_SECONDS,
        unreachable_seconds: int = DEFAULT_TOLERATION_SECONDS,
    ) -> None:
        self.defaults = (
            (TAINT_NODE_NOT_READY, not_ready_seconds),
            (TAINT_NODE_UNREACHABLE, unreachable_seconds),
        )

    async def admit(self, attributes: Attributes) -> None:
        if attributes.operation not in ("CREATE", "UPDATE") or not attributes.is_pod():
            return
        pod = attributes.obj
        if pod is None:
            return
        spec = pod.setdefault("spec", {})
        tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
        added = list(spec.get("tolerations") or [])
        for key, seconds in self.defaults:
            if not any(_covers(t, key) for t in tolerations):
                added.append(
                    {
                        "key": key,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": seconds,
                    }
                )
        if len(added) != len(spec.get("tolerations") or []):
            spec["tolerations"] = added
