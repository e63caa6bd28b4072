"""Associative-list keys (``k:{"name":"c"}``) and set elements (``v:"x"``) in managedFields
are rendered without the JSON encoder for plain strings and ints (issue 16: the encoder was
a measurable share of every write's field record). They must be exactly what
``json.dumps(value, separators=(",", ":"))`` gives, for any value; and the entry times
the entries are sorted by are read through a cache that must give what parsing gives."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from taintplane.apiserver import fieldmanager
from taintplane.apiserver.patch import MERGE_KEYS

SCALARS = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x80)),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@given(st.one_of(SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(st.text(), SCALARS)))
def test_rendered_as_json_dumps(value: Any) -> None:
    assert fieldmanager._json(value) == json.dumps(value, separators=(",", ":"))


@given(st.sampled_from(sorted(MERGE_KEYS)), SCALARS)
def test_element_keys_as_json_dumps(field: str, value: Any) -> None:
    key = MERGE_KEYS[field]
    expected = "k:" + json.dumps({key: value}, separators=(",", ":"))
    assert fieldmanager._element_key(field, {key: value, "other": 1}) == expected


@given(st.one_of(st.datetimes().map(lambda t: t.isoformat() + "Z"), st.text(max_size=30)))
def test_entry_seconds_as_parsed(text: str) -> None:
    try:
        expected = int(datetime.fromisoformat(text).timestamp())
    except ValueError:
        expected = 0
    assert fieldmanager._seconds(text) == expected
    assert fieldmanager._seconds(text) == expected  # the cached answer
