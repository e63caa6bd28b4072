"""Deployment arithmetic and bookkeeping (upstream's ``deployment/util``): the pod-template
hash, surge and unavailability fenceposts, revision and replica annotations, conditions and
the progress predicates. Objects are the API's dicts; nothing here talks to the server."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from taintplane.api.decoding import format_time, parse_timestamp
from taintplane.api.intstr import scaled_value

__all__ = ["HASH_LABEL", "compute_hash", "safe_encode"]

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
#: Deployment annotations that are not copied to its ReplicaSets.
SKIP_COPY = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}
#: Upstream's ``MaxRevHistoryLengthInChars``.
MAX_REVISION_HISTORY_CHARS = 2000
#: ``rand.SafeEncodeString``'s alphabet: no vowels, no look-alike characters.
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
MAX_INT32 = 2**31 - 1
_NEVER = datetime.min.replace(tzinfo=UTC)


# ---- the pod-template hash ----------------------------------------------------------------


def _fnv1a32(data: bytes, value: int = 0x811C9DC5) -> int:
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    return "".join(ALPHANUMS[ord(ch) % len(ALPHANUMS)] for ch in text)


def compute_hash(template: dict[str, Any], collision_count: int | None) -> str:
    """``controller.ComputeHash``: FNV-1a 32 over the template, then the collision count as
    eight little-endian bytes, printed in decimal and safe-encoded. Upstream feeds the hash
    Go's spew dump of the typed struct; we feed it canonical JSON (sorted keys), so the
    pipeline and the alphabet match but the digits do not equal a real cluster's."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    value = _fnv1a32(canonical.encode())
    if collision_count is not None:
        value = _fnv1a32((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4), value)
    return safe_encode(str(value))


def _without_hash(template: dict[str, Any]) -> Any:
    """The template with the hash label removed and empty values dropped (Go's semantic
    equality treats a missing map and an empty one alike)."""

    def prune(value: Any) -> Any:
        if isinstance(value, dict):
            pruned = {k: prune(v) for k, v in value.items()}
            return {k: v for k, v in pruned.items() if v not in (None, {}, [])}
        if isinstance(value, list):
            return [prune(v) for v in value]
        return value

    copy = json.loads(json.dumps(template))
    labels = (copy.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return prune(copy)


def equal_ignore_hash(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(_without_hash(a) == _without_hash(b))


# ---- replica counts -------------------------------------------------------------------------


def replicas(obj: dict[str, Any] | None) -> int:
    if obj is None:
        return 0
    return int((obj.get("spec") or {}).get("replicas", 1))


def status_count(obj: dict[str, Any] | None, field: str) -> int:
    return 0 if obj is None else int((obj.get("status") or {}).get(field) or 0)


def total(rss: Iterable[dict[str, Any] | None], field: str = "") -> int:
    """Sum of ``spec.replicas`` (no field) or of a status count over the ReplicaSets."""
    return sum(status_count(rs, field) if field else replicas(rs) for rs in rss)


def active(rss: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def is_rolling(d: dict[str, Any]) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type") == "RollingUpdate"


def fenceposts(d: dict[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) resolved against spec.replicas: surge rounds up,
    unavailability down, and both zero means one may be unavailable."""
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(d)
    surge = scaled_value(rolling.get("maxSurge", "25%"), desired, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: dict[str, Any]) -> int:
    return fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: dict[str, Any]) -> int:
    if not is_rolling(d) or replicas(d) == 0:
        return 0
    return min(fenceposts(d)[1], replicas(d))


def new_rs_new_replicas(
    d: dict[str, Any], all_rss: list[dict[str, Any] | None], new_rs: dict[str, Any]
) -> int:
    """How big the new ReplicaSet may be now (``NewRSNewReplicas``)."""
    if not is_rolling(d):
        return replicas(d)
    max_total = replicas(d) + max_surge(d)
    current = total(all_rss)
    if current >= max_total:
        return replicas(new_rs)
    return replicas(new_rs) + min(max_total - current, replicas(d) - replicas(new_rs))


def is_saturated(d: dict[str, Any], new_rs: dict[str, Any] | None) -> bool:
    if new_rs is None:
        return False
    desired = (new_rs["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS)
    return (
        replicas(new_rs) == replicas(d)
        and desired == str(replicas(d))
        and status_count(new_rs, "availableReplicas") == replicas(d)
    )


def proportion(rs: dict[str, Any], d: dict[str, Any], to_add: int, added: int) -> int:
    """``GetProportion``: this ReplicaSet's share of a scaling of the Deployment."""
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    if replicas(d) == 0:
        fraction = -replicas(rs)
    else:
        wanted = replicas(d) + max_surge(d)
        annotated = _int_annotation(rs, MAX_REPLICAS)
        if annotated is None:
            annotated = status_count(d, "replicas")
        size = replicas(rs) * wanted / annotated if annotated else 0.0
        fraction = _round_half_away(size) - replicas(rs)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _round_half_away(value: float) -> int:
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


# ---- ordering ------------------------------------------------------------------------------


def _created(rs: dict[str, Any]) -> tuple[datetime, str]:
    stamp = parse_timestamp(rs["metadata"].get("creationTimestamp")) or _NEVER
    return stamp, str(rs["metadata"]["name"])


def by_creation(rss: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rss, key=_created)


def by_size_older(rss: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Largest first; among equals the older first (``ReplicaSetsBySizeOlder``)."""
    return sorted(by_creation(rss), key=lambda rs: -replicas(rs))


def by_size_newer(rss: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Largest first; among equals the newer first, then the later name
    (``ReplicaSetsBySizeNewer``: the creation order reversed)."""
    newest_first = by_creation(rss)[::-1]
    return sorted(newest_first, key=lambda rs: -replicas(rs))


def revision(rs: dict[str, Any]) -> int:
    return _int_annotation(rs, REVISION) or 0


def _int_annotation(obj: dict[str, Any], key: str) -> int | None:
    value = (obj["metadata"].get("annotations") or {}).get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


# ---- annotations ---------------------------------------------------------------------------


def set_replicas_annotations(rs: dict[str, Any], desired: int, maximum: int) -> bool:
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: dict[str, Any], desired: int, maximum: int) -> bool:
    annotations = rs["metadata"].get("annotations") or {}
    return annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(
        MAX_REPLICAS
    ) != str(maximum)


def set_new_rs_annotations(
    d: dict[str, Any], rs: dict[str, Any], new_revision: int, exists: bool
) -> bool:
    """Copy the Deployment's annotations, raise the revision (remembering the old one in
    ``revision-history``) and, for a new ReplicaSet, the replica annotations."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in (d["metadata"].get("annotations") or {}).items():
        if key not in SKIP_COPY and annotations.get(key) != value:
            annotations[key] = value
            changed = True
    old = annotations.get(REVISION)
    try:
        old_revision = int(old) if old else 0
    except ValueError:
        return False
    if old_revision < new_revision:
        annotations[REVISION] = str(new_revision)
        changed = True
        if old:
            history = [h for h in annotations.get(REVISION_HISTORY, "").split(",") if h]
            history.append(old)
            while len(",".join(history)) > MAX_REVISION_HISTORY_CHARS and len(history) > 1:
                history.pop(0)
            annotations[REVISION_HISTORY] = ",".join(history)
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


# ---- conditions and progress --------------------------------------------------------------


def new_condition(
    type_: str, status: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    stamp = format_time(now)
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == type_), None)


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """Replace the condition of its type (appended last), keeping lastTransitionTime when the
    status is unchanged; no change at all when status and reason are the same."""
    current = get_condition(status, condition["type"])
    if current is not None and current["status"] == condition["status"]:
        if current.get("reason") == condition.get("reason"):
            return
        condition["lastTransitionTime"] = current.get("lastTransitionTime")
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: dict[str, Any], type_: str) -> None:
    kept = [c for c in status.get("conditions") or [] if c.get("type") != type_]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def has_progress_deadline(d: dict[str, Any]) -> bool:
    seconds = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return seconds is not None and seconds != MAX_INT32


def deployment_complete(d: dict[str, Any], status: dict[str, Any]) -> bool:
    want = replicas(d)
    return bool(
        status.get("updatedReplicas", 0) == want
        and status.get("replicas", 0) == want
        and status.get("availableReplicas", 0) == want
        and status.get("observedGeneration", 0) >= int(d["metadata"].get("generation") or 0)
    )


def deployment_progressing(d: dict[str, Any], status: dict[str, Any]) -> bool:
    old = d.get("status") or {}
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = status.get("replicas", 0) - status.get("updatedReplicas", 0)
    return bool(
        status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0)
        or new_old < old_old
        or status.get("readyReplicas", 0) > old.get("readyReplicas", 0)
        or status.get("availableReplicas", 0) > old.get("availableReplicas", 0)
    )


def progress_deadline(d: dict[str, Any], condition: dict[str, Any]) -> datetime | None:
    since = parse_timestamp(condition.get("lastUpdateTime"))
    if since is None:
        return None
    return since + timedelta(seconds=int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0))


def deployment_timed_out(d: dict[str, Any], status: dict[str, Any], now: datetime) -> bool:
    if not has_progress_deadline(d):
        return False
    condition = get_condition(status, "Progressing")
    if condition is None or condition.get("reason") == "NewReplicaSetAvailable":
        return False
    if condition.get("reason") == "ProgressDeadlineExceeded":
        return True
    deadline = progress_deadline(d, condition)
    return deadline is not None and deadline < now
