"""The request object the app hands its handlers: starlette's, with the query string parsed
once per distinct string rather than once per request.

In-process components send the same query with every write (their ``fieldManager``), and
parsing it was a measurable share of one in-process write (issue 16). ``QueryParams`` is
immutable, so one parsed instance can serve every request that sent the same bytes.
"""

from __future__ import annotations

from starlette.datastructures import QueryParams
from starlette.requests import Request

__all__ = ["CachedRequest"]

#: Parsed query strings by their bytes (bounded: cleared when full).
_PARSED: dict[bytes, QueryParams] = {}
_LIMIT = 1024


class CachedRequest(Request):
    @property
    def query_params(self) -> QueryParams:
        raw: bytes = self.scope["query_string"]
        parsed = _PARSED.get(raw)
        if parsed is None:
            if len(_PARSED) >= _LIMIT:
                _PARSED.clear()
            parsed = _PARSED[raw] = QueryParams(raw)
        return parsed
