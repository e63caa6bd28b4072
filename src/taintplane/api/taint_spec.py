"""The ``kubectl taint`` grammar and how kubectl applies it to a node's taint list.

Arguments after the resource names are taint changes:

* ``key=value:Effect`` and ``key:Effect`` add (or, with ``--overwrite``, replace) a taint;
* ``key=value:Effect-``, ``key:Effect-`` remove the taint with that key and effect;
* ``key-`` removes every taint with that key.

Errors carry kubectl's wording verbatim. Those kubectl reports as usage errors (with its
"See 'kubectl taint -h' …" trailer) are marked ``usage=True`` so a command line can do the same.
Our ``taint devices`` and ``what-if`` commands use this module too.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from taintplane.api import names
from taintplane.api.gofmt import go_quote
from taintplane.api.taints import Taint, TaintEffect

__all__ = [
    "TaintChanges",
    "TaintOperation",
    "TaintSpecError",
    "apply_taint_changes",
    "check_add_remove_conflicts",
    "parse_taint",
    "parse_taint_changes",
    "parse_taint_command",
    "split_taint_args",
    "validate_taint_command",
]


# Client-side checks are kubectl's own, so they speak the kubectl release we drive.
_WORDING = names.Wording.KUBECTL_1_32


class TaintSpecError(ValueError):
    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class TaintOperation(enum.StrEnum):
    """What ``kubectl taint`` prints after ``node/<name>``."""

    TAINTED = "tainted"
    UNTAINTED = "untainted"
    MODIFIED = "modified"


@dataclass(frozen=True, slots=True)
class TaintChanges:
    add: tuple[Taint, ...] = ()
    #: Taints to remove; an empty effect removes every taint with the key.
    remove: tuple[Taint, ...] = ()


def _is_taint_arg(arg: str) -> bool:
    return "=" in arg or ":" in arg or arg.endswith("-")


def split_taint_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``kubectl taint`` arguments into resources (type and names) and taint changes."""
    resources: list[str] = []
    specs: list[str] = []
    for arg in args:
        if _is_taint_arg(arg):
            specs.append(arg)
        elif specs:
            raise TaintSpecError(f"all resources must be specified before taint changes: {arg}")
        else:
            resources.append(arg)
    return resources, specs


def _validate_effect(effect: str) -> None:
    if effect not in (
        TaintEffect.NO_SCHEDULE,
        TaintEffect.PREFER_NO_SCHEDULE,
        TaintEffect.NO_EXECUTE,
    ):
        raise TaintSpecError(
            f"invalid taint effect: {effect}, unsupported taint effect", usage=True
        )


def parse_taint(spec: str) -> Taint:
    """One taint from ``key=value:effect``, ``key:effect`` or ``key`` (no removal suffix)."""
    value = ""
    effect = ""
    parts = spec.split(":")
    if len(parts) == 1:
        key = parts[0]
    elif len(parts) == 2:
        effect = parts[1]
        _validate_effect(effect)
        key_value = parts[0].split("=")
        if len(key_value) > 2:
            raise TaintSpecError(f"invalid taint spec: {spec}", usage=True)
        key = key_value[0]
        if len(key_value) == 2:
            value = key_value[1]
            problems = names.is_valid_label_value(value, _WORDING)
            if problems:
                raise TaintSpecError(
                    f"invalid taint spec: {spec}, {'; '.join(problems)}", usage=True
                )
    else:
        raise TaintSpecError(f"invalid taint spec: {spec}", usage=True)
    problems = names.is_qualified_name(key, _WORDING)
    if problems:
        raise TaintSpecError(f"invalid taint spec: {spec}, {'; '.join(problems)}", usage=True)
    return Taint(key=key, value=value, effect=effect)


def _go_struct_v(taint: Taint) -> str:
    # kubectl prints the duplicated taint with %v: {key value effect <nil>}.
    return f"{{{taint.key} {taint.value} {taint.effect} <nil>}}"


def parse_taint_changes(specs: Sequence[str]) -> TaintChanges:
    """``parseTaints``: split specs into taints to add and taints to remove, and check them."""
    add: list[Taint] = []
    remove: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        if spec.endswith("-"):
            taint = parse_taint(spec[:-1])
            remove.append(Taint(key=taint.key, effect=taint.effect))
            continue
        taint = parse_taint(spec)
        if not taint.effect:
            raise TaintSpecError(f"invalid taint spec: {spec}", usage=True)
        if (taint.effect, taint.key) in seen:
            raise TaintSpecError(
                f"duplicated taints with the same key and effect: {_go_struct_v(taint)}", usage=True
            )
        seen.add((taint.effect, taint.key))
        add.append(taint)
    return TaintChanges(tuple(add), tuple(remove))


def parse_taint_command(args: Sequence[str]) -> tuple[list[str], TaintChanges]:
    """``kubectl taint``'s argument handling: resources first, then at least one change."""
    resources, specs = split_taint_args(args)
    if not resources:
        raise TaintSpecError("one or more resources must be specified as <resource> <name>")
    if not specs:
        raise TaintSpecError("at least one taint update is required")
    return resources, parse_taint_changes(specs)


def validate_taint_command(
    resources: Sequence[str], changes: TaintChanges, *, all_nodes: bool, selector: str
) -> None:
    """``kubectl taint``'s Validate after the resource type is known to be nodes: no taint
    both added and removed, and exactly one way of naming the targets."""
    check_add_remove_conflicts(changes)
    if all_nodes and selector:
        raise TaintSpecError("setting 'all' parameter with a non empty selector is prohibited")
    if not all_nodes and not selector and len(resources) < 2:
        raise TaintSpecError(
            "at least one resource name must be specified since 'all' parameter is not set"
        )


def check_add_remove_conflicts(changes: TaintChanges) -> None:
    conflicts = [
        f'{{"{removed.key}":"{removed.effect}"}}'
        for added in changes.add
        for removed in changes.remove
        if added.key == removed.key and (not removed.effect or added.effect == removed.effect)
    ]
    if conflicts:
        raise TaintSpecError(
            "can not both modify and remove the following taint(s) in the same command: "
            + ", ".join(conflicts)
        )


def apply_taint_changes(
    node_name: str, existing: Sequence[Taint], changes: TaintChanges, *, overwrite: bool
) -> tuple[TaintOperation, list[Taint]]:
    """Compute a node's new taint list as ``kubectl taint`` does.

    New taints come first, then the existing taints they do not replace, minus the removed
    ones. Raises when adding a taint that exists without ``overwrite``, or when a taint to
    remove is absent (kubectl's errors, aggregated as kubectl aggregates them).
    """
    if not overwrite:
        clashing = [new.key for new in changes.add for old in existing if new.matches(old)]
        if clashing:
            raise TaintSpecError(
                f"node {node_name} already has {','.join(clashing)} taint(s) with same effect(s) "
                "and --overwrite is false"
            )
    result = list(changes.add)
    for old in existing:
        if not any(new.matches(old) for new in changes.add):
            result.append(old)
    added = len(existing) != len(result)

    errors: list[str] = []
    removed = False  # as upstream, only the last removal decides "modified" vs "tainted"
    for gone in changes.remove:
        before = len(result)
        if gone.effect:
            result = [t for t in result if not t.matches(gone)]
        else:
            result = [t for t in result if t.key != gone.key]
        removed = len(result) != before
        if not removed:
            errors.append(f"taint {go_quote(gone.to_string())} not found")
    if errors:
        raise TaintSpecError(_aggregate(errors))

    if (added and removed) or overwrite:
        return TaintOperation.MODIFIED, result
    if added:
        return TaintOperation.TAINTED, result
    return TaintOperation.UNTAINTED, result


def _aggregate(messages: list[str]) -> str:
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
