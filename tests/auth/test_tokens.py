"""The --token-auth-file parser: upstream's CSV rules, and quoting round-trips."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taintplane.admission.chain import UserInfo
from taintplane.apiserver.auth.tokens import (
    TokenFileError,
    ensure_admin_token,
    format_record,
    parse_tokens,
)


def test_upstream_format_with_quoted_groups() -> None:
    text = 'abc,alice,u1,"system:masters,devs"\ndef,bob,u2\n'
    assert parse_tokens(text) == {
        "abc": UserInfo("alice", ("system:masters", "devs"), "u1"),
        "def": UserInfo("bob", (), "u2"),
    }


def test_too_few_columns_is_upstreams_error() -> None:
    with pytest.raises(TokenFileError) as error:
        parse_tokens("abc,alice\n", "/etc/tokens.csv")
    assert str(error.value) == (
        "token file '/etc/tokens.csv' must have at least 3 columns (token, user name, "
        "user uid), found 2"
    )


def test_empty_tokens_and_blank_lines_are_skipped_duplicates_keep_the_last() -> None:
    text = ",nobody,u0\n\nt,first,u1\nt,second,u2\n"
    assert parse_tokens(text) == {"t": UserInfo("second", (), "u2")}


def test_empty_group_field_is_one_empty_group_as_go_split() -> None:
    assert parse_tokens("t,a,u,\n")["t"].groups == ("",)


_field = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00\r"),
    max_size=12,
)
_group = _field.filter(lambda g: "," not in g)


@given(
    token=_field.filter(bool),
    name=_field,
    uid=_field,
    groups=st.lists(_group.filter(bool), max_size=4),
)
def test_records_round_trip_through_csv_quoting(
    token: str, name: str, uid: str, groups: list[str]
) -> None:
    user = UserInfo(name, tuple(groups), uid)
    assert parse_tokens(format_record(token, user)) == {token: user}


@given(st.lists(st.lists(_field, min_size=3, max_size=5), min_size=1, max_size=5))
def test_any_csv_written_by_a_csv_writer_parses_field_for_field(rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL).writerows(rows)
    expected: dict[str, UserInfo] = {}
    for row in rows:
        if row[0]:
            groups = tuple(row[3].split(",")) if len(row) >= 4 else ()
            expected.pop(row[0], None)
            expected[row[0]] = UserInfo(row[1], groups, row[2])
    assert parse_tokens(out.getvalue()) == expected


def test_an_admin_token_is_added_only_when_there_is_no_masters_user(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text("t1,alice,u1")
    tokens, admin = ensure_admin_token(path)
    assert tokens[admin] == UserInfo("taintplane-admin", ("system:masters",), "taintplane-admin")
    assert path.read_text().splitlines()[0] == "t1,alice,u1"
    assert path.stat().st_mode & 0o777 in (0o600, 0o644)
    again, same = ensure_admin_token(path)
    assert same == admin
    assert again == tokens
    path.write_text('root,root,0,"system:masters"\n')
    assert ensure_admin_token(path)[1] == "root"
