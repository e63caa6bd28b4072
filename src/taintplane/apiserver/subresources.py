"""The pod subresources that are actions: ``binding`` (what the scheduler posts) and
``eviction`` (what ``kubectl drain`` posts, honouring PodDisruptionBudgets)."""

from __future__ import annotations

from typing import Any

from taintplane.api.decoding import format_time
from taintplane.api.intstr import scaled_value
from taintplane.api.selectors import SelectorError, label_selector_from_dict
from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError, success

__all__ = ["bind", "evict"]

PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


async def bind(registry: Registry, info: RequestInfo, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
        raise APIError.bad_request("a Binding needs a target")
    target = str(body["target"].get("name") or "")
    if not target:
        raise APIError.invalid(info.resource, info.name, [])
    now = format_time(registry.clock.now())

    def assign(pod: dict[str, Any]) -> dict[str, Any]:
        metadata = pod["metadata"]
        if metadata.get("deletionTimestamp"):
            raise APIError.conflict_binding(
                info.name, f"pod {info.name} is being deleted, cannot be assigned to a host"
            )
        current = (pod.get("spec") or {}).get("nodeName")
        if current:
            raise APIError.conflict_binding(
                info.name, f'pod {info.name} is already assigned to node "{current}"'
            )
        pod.setdefault("spec", {})["nodeName"] = target
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            }
        )
        status["conditions"] = conditions
        return pod

    # Binding writes spec and status at once, which neither the main resource nor the status
    # subresource may: it goes straight through the registry's raw update.
    await registry.guaranteed_update(
        info.resource, info.namespace, info.name, assign, subresource="binding"
    )
    return success(201)


def _healthy(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


async def evict(registry: Registry, info: RequestInfo, body: Any) -> dict[str, Any]:
    pod = await registry.get(info.resource, info.namespace, info.name)
    options = (body or {}).get("deleteOptions") if isinstance(body, dict) else None
    options = options if isinstance(options, dict) else {}
    phase = (pod.get("status") or {}).get("phase")
    # Pods that are not running, or already going, can always be evicted.
    if phase not in ("Succeeded", "Failed", "Pending") and not pod["metadata"].get(
        "deletionTimestamp"
    ):
        await _check_budget(registry, info, pod)
    await registry.delete(
        info.resource,
        info.namespace,
        info.name,
        grace_period=options.get("gracePeriodSeconds"),
        preconditions=options.get("preconditions"),
    )
    return success(201)


async def _check_budget(registry: Registry, info: RequestInfo, pod: dict[str, Any]) -> None:
    pdb_type = registry.scheme.lookup("policy", "v1", "poddisruptionbudgets")
    assert pdb_type is not None
    budgets = []
    labels = pod["metadata"].get("labels") or {}
    for pdb in (await registry.list(pdb_type, info.namespace)).items:
        try:
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if (pdb.get("spec") or {}).get("selector") is not None and selector.matches(labels):
            budgets.append(pdb)
    if not budgets:
        return
    if len(budgets) > 1:
        raise APIError.make(
            500,
            "InternalError",
            "This pod has more than one PodDisruptionBudget, which the eviction "
            "subresource does not support.",
        )
    pdb = budgets[0]
    spec = pdb.get("spec") or {}
    selector = label_selector_from_dict(spec.get("selector"))
    pods = [
        p
        for p in (await registry.list(info.resource, info.namespace)).items
        if selector.matches(p["metadata"].get("labels"))
    ]
    expected = len(pods)
    healthy = sum(1 for p in pods if _healthy(p))
    if "minAvailable" in spec:
        desired = scaled_value(spec["minAvailable"], expected, round_up=True)
    elif "maxUnavailable" in spec:
        desired = expected - scaled_value(spec["maxUnavailable"], expected, round_up=True)
    else:
        desired = expected
    if healthy - desired <= 0:
        name = pdb["metadata"]["name"]
        raise APIError.make(
            429,
            "TooManyRequests",
            PDB_VIOLATION,
            {
                "causes": [
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {name} needs {desired} healthy pods "
                        f"and has {healthy} currently",
                    }
                ]
            },
        )
