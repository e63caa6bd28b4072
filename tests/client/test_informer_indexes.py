"""Informer indexes stay what a fresh index of the cache would be, whatever the sequence of
adds, updates and deletes; a bucket lists its objects in the order they entered it (an update
that keeps an object under the same value keeps its place, as the cache keeps a key's)."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from taintplane.client import Client, resource
from taintplane.client.informer import Informer


def by_node(obj: dict[str, Any]) -> list[str]:
    node = obj["spec"].get("nodeName")
    return [node] if node else []


def by_labels(obj: dict[str, Any]) -> list[str]:
    return sorted(obj["metadata"]["labels"])


operations = st.lists(
    st.tuples(
        st.integers(0, 6),
        st.one_of(st.none(), st.sampled_from(["n1", "n2", "n3"])),
        st.sets(st.sampled_from(["a", "b", "c"])),
        st.booleans(),  # delete
    ),
    max_size=50,
)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_indexes_match_a_fresh_index_of_the_cache_in_cache_order(ops: list[Any]) -> None:
    informer = Informer(cast(Client, None), resource("", "v1", "pods"))
    funcs = {"node": by_node, "labels": by_labels}
    for name, func in funcs.items():
        informer.add_index(name, func)
    entered: dict[str, dict[str, list[str]]] = {name: {} for name in funcs}
    for i, node, labels, delete in ops:
        key = f"default/p{i}"
        obj = {
            "metadata": {"name": f"p{i}", "namespace": "default", "labels": dict.fromkeys(labels)},
            "spec": {"nodeName": node},
        }
        old = informer.cache.get(key)
        informer._store(key, None if delete else obj)
        for name, func in funcs.items():
            before = set(func(old)) if old is not None else set()
            after = set() if delete else set(func(obj))
            for value in before - after:
                entered[name][value].remove(key)
            for value in after - before:
                entered[name].setdefault(value, []).append(key)
    for name, func in funcs.items():
        fresh: dict[str, set[str]] = {}
        for key, cached in informer.cache.items():
            for value in func(cached):
                fresh.setdefault(value, set()).add(key)
        assert sorted(informer.index_values(name)) == sorted(fresh)
        for value, keys in fresh.items():
            listed = informer.by_index(name, value)
            names = [f"default/{o['metadata']['name']}" for o in listed]
            assert set(names) == keys
            assert names == entered[name][value]
            assert informer.index_count(name, value) == len(keys)
            assert all(o is informer.cache[k] for o, k in zip(listed, names, strict=True))
