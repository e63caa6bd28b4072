"""Operations on toleration lists, after Kubernetes' ``pkg/util/tolerations`` and helpers.

Admission plugins compose tolerations with these: PodTolerationRestriction merges namespace
defaults into a pod and checks the result against a whitelist, RuntimeClass merges its
scheduling tolerations, DefaultTolerationSeconds and the DaemonSet controller add-or-update
single tolerations. Equality here is field-by-field (Go's ``DeepEqual``), so an absent
operator and ``"Equal"`` are different tolerations even though they match the same taints.
"""

from __future__ import annotations

from collections.abc import Sequence

from taintplane.api.taints import TaintEffect
from taintplane.api.tolerations import Toleration, TolerationOperator

__all__ = ["add_or_update", "is_superset", "merge", "verify_against_whitelist"]


def is_superset(ss: Toleration, t: Toleration) -> bool:
    """Does ``ss`` tolerate everything ``t`` tolerates (``isSuperset``)?"""
    if ss == t:
        return True
    # An empty key with Exists matches every key.
    if t.key != ss.key and (ss.key or ss.operator != TolerationOperator.EXISTS):
        return False
    # An empty effect matches every effect.
    if t.effect != ss.effect and ss.effect:
        return False
    if (
        ss.effect == TaintEffect.NO_EXECUTE
        and ss.toleration_seconds is not None
        and (t.toleration_seconds is None or t.toleration_seconds > ss.toleration_seconds)
    ):
        # ss evicts sooner than t would, so it tolerates less.
        return False
    if ss.operator in ("", TolerationOperator.EQUAL):
        # Only an explicit "Equal" is covered: upstream compares the operator literally, so an
        # absent operator on t is not covered unless the two tolerations are identical.
        return t.operator == TolerationOperator.EQUAL and t.value == ss.value
    # Lt and Gt are not understood here upstream either: such a toleration covers only itself.
    return ss.operator == TolerationOperator.EXISTS


def verify_against_whitelist(
    tolerations: Sequence[Toleration], whitelist: Sequence[Toleration]
) -> bool:
    """``VerifyAgainstWhitelist``: is every toleration covered by some whitelist entry?

    An empty whitelist, or no tolerations at all, passes.
    """
    if not whitelist or not tolerations:
        return True
    return all(any(is_superset(w, t) for w in whitelist) for t in tolerations)


def merge(first: Sequence[Toleration], second: Sequence[Toleration]) -> list[Toleration]:
    """``MergeTolerations``: the union, dropping any toleration another one covers.

    Of two equal tolerations the first is kept; order is otherwise preserved.
    """
    combined = [*first, *second]
    merged: list[Toleration] = []
    for i, toleration in enumerate(combined):
        if any(is_superset(kept, toleration) for kept in merged):
            continue
        if any(
            later != toleration and is_superset(later, toleration) for later in combined[i + 1 :]
        ):
            continue
        merged.append(toleration)
    return merged


def add_or_update(
    tolerations: Sequence[Toleration], toleration: Toleration
) -> tuple[list[Toleration], bool]:
    """``AddOrUpdateTolerationInPodSpec``: replace the toleration(s) with the same key,
    operator, value and effect, or append. Returns the new list and whether it changed."""
    result: list[Toleration] = []
    updated = False
    for existing in tolerations:
        if toleration.matches(existing):
            if toleration == existing:
                return list(tolerations), False
            result.append(toleration)
            updated = True
            continue
        result.append(existing)
    if not updated:
        result.append(toleration)
    return result, True
