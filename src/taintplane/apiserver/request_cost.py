"""Which requests are long-running, mutating, expensive or exempt (for :mod:`fairness`),
judged from the request line and headers alone, before any of the body is read."""

from __future__ import annotations

from starlette.requests import Request

from taintplane.apiserver import codec
from taintplane.apiserver.auth.guard import CURRENT_USER
from taintplane.apiserver.auth.tokens import MASTERS
from taintplane.apiserver.fairness import RequestClass
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.scopes import SCOPE_IN_PROCESS

__all__ = ["EXPENSIVE_BODY_BYTES", "EXPENSIVE_YAML_BYTES", "SMALL_LIST", "classify"]

#: A JSON or protobuf body larger than this is decoded, checked and recorded in a seat.
EXPENSIVE_BODY_BYTES = 64 * 1024
#: YAML is parsed in Python, about a hundred times slower than JSON: a smaller threshold.
EXPENSIVE_YAML_BYTES = 4 * 1024
#: A LIST with a limit up to this (a page, as informers and kubectl ask) is cheap.
SMALL_LIST = 500

_TRUE = ("1", "t", "T", "TRUE", "true", "True")


def classify(request: Request, info: RequestInfo) -> RequestClass:
    method = request.method
    query = request.query_params
    user = CURRENT_USER.get()
    in_process = bool(request.scope.get(SCOPE_IN_PROCESS))
    who = {"in_process": in_process, "exempt": in_process or bool(user and MASTERS in user.groups)}
    if method in ("GET", "HEAD"):
        if query.get("watch") in _TRUE:
            return RequestClass(mutating=False, long_running=True, **who)
        return RequestClass(mutating=False, expensive=_expensive_list(request, info), **who)
    if method == "DELETE" and not info.name:  # deletecollection: a LIST, then a delete each
        return RequestClass(mutating=True, expensive=True, **who)
    return RequestClass(mutating=True, expensive=_expensive_body(request), **who)


def _expensive_list(request: Request, info: RequestInfo) -> bool:
    if info.name:
        return False  # a GET of one object
    query = request.query_params
    if query.get("labelSelector") or query.get("fieldSelector"):
        return True  # matching may read every object of the kind, whatever the limit
    try:
        limit = int(query.get("limit") or 0)
    except ValueError:
        return False  # a 400 before any work
    return not 0 < limit <= SMALL_LIST


def _expensive_body(request: Request) -> bool:
    length = request.headers.get("content-length")
    if length is None:
        # Chunked: the size is unknown until it has been read; only a body can make it long.
        return "transfer-encoding" in request.headers
    try:
        size = int(length)
    except ValueError:
        return False  # refused by the server before the application
    if codec.media_type(request.headers.get("content-type")).endswith("yaml"):
        return size > EXPENSIVE_YAML_BYTES
    return size > EXPENSIVE_BODY_BYTES
