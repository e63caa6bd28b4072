"""A resource type's hash is computed once (issue 16: it keys the registry's maps several
times a request); it must stay the hash of its fields, so equal types hash alike and a
replaced field changes it."""

from __future__ import annotations

import dataclasses
import pickle

from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.scheme import SCHEME, ResourceType

TEXT = st.text(max_size=4)


@given(TEXT, TEXT, TEXT, st.booleans(), st.lists(TEXT, max_size=2), st.booleans())
def test_hash_of_the_fields(
    group: str, kind: str, plural: str, namespaced: bool, names: list[str], preferred: bool
) -> None:
    a = ResourceType(group, "v1", kind, plural, namespaced, tuple(names), preferred=preferred)
    b = ResourceType(group, "v1", kind, plural, namespaced, tuple(names), preferred=preferred)
    assert a == b
    assert hash(a) == hash(b)
    fields = tuple(getattr(a, f.name) for f in dataclasses.fields(a) if f.compare)
    assert hash(a) == hash(fields)
    changed = dataclasses.replace(a, plural=plural + "x")
    assert hash(changed) == hash(
        tuple(getattr(changed, f.name) for f in dataclasses.fields(changed) if f.compare)
    )
    assert "_hash" not in repr(a)


def test_served_types_round_trip() -> None:
    pods = SCHEME.lookup("", "v1", "pods")
    assert pods is not None
    again = pickle.loads(pickle.dumps(pods))
    assert again == pods
    assert hash(again) == hash(pods)
    assert {pods: 1}[dataclasses.replace(pods)] == 1
