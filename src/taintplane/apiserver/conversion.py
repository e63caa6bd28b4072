"""Serving one stored kind in a second API version: events.k8s.io/v1 Event over core/v1 Event.

Kubernetes stores events once and serves them in both versions. The two differ only in the
names of some top-level fields (``involvedObject`` is ``regarding``, ``message`` is ``note``,
…), so conversion is a rename of top-level keys: of objects and apply configurations, of merge
and strategic-merge patches, and of the first segment of JSON-patch paths. Field selectors are
converted label by label, as the served version's field label conversion function does: only
the labels in its table are supported, each mapped to the stored version's label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taintplane.api.selectors import SelectorError, parse_field_selector

__all__ = ["VIEWS", "View"]


@dataclass(frozen=True)
class View:
    api_version: str
    kind: str
    #: served field name -> stored field name
    renames: Mapping[str, str]
    storage: tuple[str, str, str]  # (group, version, plural) of the stored resource
    #: served field label -> stored field label; a label not here is not supported
    field_labels: Mapping[str, str]

    def _reverse(self) -> dict[str, str]:
        return {stored: served for served, stored in self.renames.items()}

    def to_storage(self, body: Any, storage_api_version: str) -> Any:
        if not isinstance(body, dict):
            return body
        out = {self.renames.get(k, k): v for k, v in body.items()}
        if body.get("apiVersion") == self.api_version:
            out["apiVersion"] = storage_api_version
        return out

    def patch_to_storage(self, patch: Any, content_type: str, storage_api_version: str) -> Any:
        if content_type == "application/json-patch+json" and isinstance(patch, list):
            converted = []
            for op in patch:
                if isinstance(op, dict):
                    op = {
                        **op,
                        **{
                            k: self._rename_pointer(op[k])
                            for k in ("path", "from")
                            if isinstance(op.get(k), str)
                        },
                    }
                converted.append(op)
            return converted
        return self.to_storage(patch, storage_api_version)

    def _rename_pointer(self, pointer: str) -> str:
        parts = pointer.split("/")
        if len(parts) > 1 and parts[1] in self.renames:
            parts[1] = self.renames[parts[1]]
        return "/".join(parts)

    def field_selector_to_storage(self, text: str) -> str:
        """``text`` in the stored version's field labels; SelectorError (a 400) for a label
        the served version does not support or a selector that does not parse."""
        terms = []
        for requirement in parse_field_selector(text).requirements:
            label = self.field_labels.get(requirement.field)
            if label is None:
                raise SelectorError(f"field label not supported: {requirement.field}")
            operator = "!=" if requirement.negated else "="
            terms.append(f"{label}{operator}{_escape(requirement.value)}")
        return ",".join(terms)

    def from_storage(self, obj: Any) -> Any:
        if not isinstance(obj, dict):
            return obj
        if obj.get("kind") == "Status":
            return obj
        if isinstance(obj.get("items"), list) and str(obj.get("kind", "")).endswith("List"):
            return {
                **obj,
                "apiVersion": self.api_version,
                "kind": self.kind + "List",
                "items": [self.from_storage(item) for item in obj["items"]],
            }
        if obj.get("kind") == "Table":
            return obj
        reverse = self._reverse()
        out = {reverse.get(k, k): v for k, v in obj.items()}
        if "apiVersion" in obj:
            out["apiVersion"] = self.api_version
        return out


VIEWS: dict[tuple[str, str, str], View] = {
    ("events.k8s.io", "v1", "events"): View(
        api_version="events.k8s.io/v1",
        kind="Event",
        renames={
            "regarding": "involvedObject",
            "note": "message",
            "reportingController": "reportingComponent",
            "deprecatedSource": "source",
            "deprecatedFirstTimestamp": "firstTimestamp",
            "deprecatedLastTimestamp": "lastTimestamp",
            "deprecatedCount": "count",
        },
        storage=("", "v1", "events"),
        # pkg/apis/events/v1 AddFieldLabelConversionsForEvent.
        field_labels={
            "reason": "reason",
            "regarding.kind": "involvedObject.kind",
            "regarding.namespace": "involvedObject.namespace",
            "regarding.name": "involvedObject.name",
            "regarding.uid": "involvedObject.uid",
            "regarding.apiVersion": "involvedObject.apiVersion",
            "regarding.resourceVersion": "involvedObject.resourceVersion",
            "regarding.fieldPath": "involvedObject.fieldPath",
            "reportingController": "reportingComponent",
            "source": "source",
            "type": "type",
            "metadata.namespace": "metadata.namespace",
            "metadata.name": "metadata.name",
        },
    ),
}


def _escape(value: str) -> str:
    """fields.EscapeValue: the selector syntax's own characters, backslash-escaped."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
