"""``status.allocation.devices.config`` of an allocated claim ("Populate configs" in 1.35's
``Allocate``, with kubernetes#134793).

Class configurations come first: those of a class once, when the first request allocated from
it is met, each naming the requests (``req/sub`` for a chosen subrequest) that use the class.
The claim's own configurations follow in their order: one naming no request is copied as it
is; one naming requests is copied, its ``requests`` as written, once for every request of the
claim it names by the request's name or by the chosen subrequest's ``req/sub`` — so one naming
a subrequest that was not chosen is left out, and one naming two requests appears twice, as
1.35 has it. Nothing drops ``requests`` from a configuration that covers every request: that
came after 1.35.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ChosenRequest", "allocation_config"]


@dataclass(frozen=True, slots=True)
class ChosenRequest:
    """A claim's request as allocated: its name, and the name in the results (``req/sub``
    when one of its subrequests was chosen) with the class of what was chosen."""

    name: str
    result_name: str
    device_class: str


def allocation_config(
    claim: Mapping[str, Any],
    chosen: Sequence[ChosenRequest],
    classes: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    for request in chosen:
        entries = by_class.get(request.device_class)
        if entries is not None:
            for entry in entries:
                entry["requests"].append(request.result_name)
            continue
        spec = (classes.get(request.device_class) or {}).get("spec") or {}
        entries = [
            {"source": "FromClass", "requests": [request.result_name], **_configuration(c)}
            for c in spec.get("config") or []
        ]
        by_class[request.device_class] = entries
        out.extend(entries)
    for config in ((claim.get("spec") or {}).get("devices") or {}).get("config") or []:
        names = [str(n) for n in config.get("requests") or []]
        if not names:
            out.append({"source": "FromClaim", **_configuration(config)})
            continue
        for request in chosen:
            if request.name in names or request.result_name in names:
                out.append(
                    {"source": "FromClaim", "requests": list(names), **_configuration(config)}
                )
    return out


def _configuration(config: Mapping[str, Any]) -> dict[str, Any]:
    """The inlined DeviceConfiguration (``opaque``) of a class's or claim's entry."""
    return {k: v for k, v in config.items() if k not in ("requests", "source")}
