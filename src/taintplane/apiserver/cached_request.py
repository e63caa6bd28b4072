"""The request object the app hands its handlers: starlette's, with the query string parsed
once per distinct string rather than once per request, and headers whose ``get`` of a
missing header returns the default without raising and catching a KeyError.

In-process components send the same query with every write (their ``fieldManager``), and
parsing it was a measurable share of one in-process write (issue 16). ``QueryParams`` is
immutable, so one parsed instance can serve every request that sent the same bytes. The
request path asks for headers a component never sends (``content-length``) on every
request.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from starlette.datastructures import Headers, QueryParams
from starlette.requests import Request

__all__ = ["CachedRequest"]


@lru_cache(maxsize=1024)
def _parsed(raw: bytes) -> QueryParams:
    return QueryParams(raw)


class FastHeaders(Headers):
    def get(self, key: str, default: Any = None) -> Any:
        """``Mapping.get`` over ``__getitem__``: the first value of the header (names
        compared lowercased, as ASGI gives them), or ``default``."""
        wanted = key.lower().encode("latin-1")
        for name, value in self._list:
            if name == wanted:
                return value.decode("latin-1")
        return default


class CachedRequest(Request):
    @property
    def headers(self) -> Headers:
        headers: Headers | None = self.__dict__.get("_headers")
        if headers is None:
            headers = self._headers = FastHeaders(scope=self.scope)
        return headers

    @property
    def query_params(self) -> QueryParams:
        return _parsed(self.scope["query_string"])
