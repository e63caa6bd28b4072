"""kube-apiserver's ``--token-auth-file``: CSV records ``token,user,uid[,"group1,group2"]``.

Read as upstream's tokenfile authenticator does (Go's encoding/csv, any number of fields per
record): fewer than three fields is an error, an empty token is skipped, a later duplicate
token wins, and the fourth field is split on commas into groups.
"""

from __future__ import annotations

import csv
import io
import os
import secrets
from pathlib import Path

from taintplane.admission.chain import UserInfo

__all__ = [
    "MASTERS",
    "TokenFileError",
    "admin_token",
    "ensure_admin_token",
    "format_record",
    "parse_tokens",
]

MASTERS = "system:masters"


class TokenFileError(ValueError):
    pass


def parse_tokens(text: str, path: str = "tokens") -> dict[str, UserInfo]:
    """Token → user, in file order (the first ``system:masters`` user is the admin)."""
    tokens: dict[str, UserInfo] = {}
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as error:
        raise TokenFileError(f"token file '{path}': {error}") from error
    for record in records:
        if not record:  # Go's reader skips empty lines
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{path}' must have at least 3 columns (token, user name, user "
                f"uid), found {len(record)}"
            )
        if record[0] == "":
            continue
        groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
        tokens.pop(record[0], None)  # a duplicate moves to its later place
        tokens[record[0]] = UserInfo(record[1], groups, record[2])
    return tokens


def format_record(token: str, user: UserInfo) -> str:
    """One line of the file (quoted where CSV needs it)."""
    out = io.StringIO()
    fields = [token, user.name, user.uid]
    if user.groups:
        fields.append(",".join(user.groups))
    csv.writer(out, lineterminator="\n").writerow(fields)
    return out.getvalue()


def admin_token(tokens: dict[str, UserInfo]) -> str | None:
    """The token of the first user in ``system:masters``."""
    return next((t for t, u in tokens.items() if MASTERS in u.groups), None)


def ensure_admin_token(path: Path) -> tuple[dict[str, UserInfo], str]:
    """Read the token file, first adding a generated ``taintplane-admin`` (group
    ``system:masters``) if it has no such user (creating the file, mode 0600, if missing)."""
    text = path.read_text() if path.exists() else ""
    tokens = parse_tokens(text, str(path))
    token = admin_token(tokens)
    if token is not None:
        return tokens, token
    token = secrets.token_urlsafe(32)
    admin = UserInfo("taintplane-admin", (MASTERS,), "taintplane-admin")
    line = format_record(token, admin)
    if text and not text.endswith("\n"):
        line = "\n" + line
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as file:
        file.write(line)
    tokens[token] = admin
    return tokens, token
