"""Two reports of the same simulation made comparable."""

from __future__ import annotations

import json
import re
from typing import Any

#: The random suffix the API server gives a ``generateName`` (upstream's alphabet: no vowels,
#: no 0, 1, 3): a ReplicaSet's pod ``web-74b9979c99-tp5d2``.
GENERATED = re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{5}\b")


def canonical(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (a ``to_json()``) with generated names' suffixes masked and every list in
    one order. Which pod a ReplicaSet creates at an instant gets which suffix depends on the
    order its concurrent creations reach the registry, and components that react to the same
    change write in the store writer thread's order: neither is the same in two runs of the
    same copy. What happened, when, where and how often still has to be."""
    masked: dict[str, Any] = json.loads(GENERATED.sub("-?????", json.dumps(report)))
    for value in masked.values():
        if isinstance(value, list):
            value.sort(key=lambda item: json.dumps(item, sort_keys=True))
    return masked
