"""Label maps as ``k8s.io/apimachinery/pkg/labels`` treats them for the admission plugins that
steer pods with node selectors (PodNodeSelector, RuntimeClass): parsing ``a=b,c=d``,
conflicts, merges and whitelists."""

from __future__ import annotations

from collections.abc import Mapping

from taintplane.api import names

__all__ = ["LabelMapError", "are_labels_in_whitelist", "conflicts", "merge", "parse_labels_map"]


class LabelMapError(ValueError):
    """A selector string that is not a list of ``key=value`` labels."""


def _go_string_slice(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"


def parse_labels_map(selector: str) -> dict[str, str]:
    """``ConvertSelectorToLabelsMap``: ``"a=b, c=d"`` as a map; keys and values validated."""
    labels: dict[str, str] = {}
    if not selector:
        return labels
    for label in selector.split(","):
        parts = label.split("=")
        if len(parts) != 2:
            raise LabelMapError(f"invalid selector: {_go_string_slice(parts)}")
        key, value = parts[0].strip(), parts[1].strip()
        problems = names.is_qualified_name(key)
        if problems:
            raise LabelMapError(f'<nil>: Invalid value: "{key}": {"; ".join(problems)}')
        problems = names.is_valid_label_value(value)
        if problems:
            raise LabelMapError(f'[{key}]: Invalid value: "{value}": {"; ".join(problems)}')
        labels[key] = value
    return labels


def conflicts(first: Mapping[str, str], second: Mapping[str, str]) -> bool:
    """``labels.Conflicts``: a key both maps have, with different values."""
    return any(key in second and second[key] != value for key, value in first.items())


def merge(first: Mapping[str, str], second: Mapping[str, str]) -> dict[str, str]:
    """``labels.Merge``: the union; the second map wins on a shared key."""
    return {**first, **second}


def are_labels_in_whitelist(labels: Mapping[str, str], whitelist: Mapping[str, str]) -> bool:
    """``labels.AreLabelsInWhiteList``: every label is in the whitelist with the same value
    (an empty whitelist allows everything)."""
    if not whitelist:
        return True
    return all(key in whitelist and whitelist[key] == value for key, value in labels.items())
