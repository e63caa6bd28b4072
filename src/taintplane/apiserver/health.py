"""``/healthz``, ``/livez`` and ``/readyz`` as ``k8s.io/apiserver``'s healthz package serves
them: each runs a list of named checks, answers ``ok`` (or, with ``?verbose``, a line per
check and ``<name> check passed``), skips the checks named by ``?exclude=``, and fails with
500 and ``[-]<check> failed: reason withheld`` lines. ``/<endpoint>/<check>`` runs one check.

The checks are the ones taintplane really has, under kube-apiserver's names so probes and
scripts written for it work: ``ping``; ``log`` (kube-apiserver's fails when klog's flush
stalls; Python's logging writes synchronously, so it cannot); ``etcd`` (and, for readiness,
``etcd-readiness``) read the store, whatever backs it, as kube-apiserver's read etcd; the
post-start hooks taintplane runs at start-up; and, for readiness, ``shutdown``. There is no
``informer-sync``: the API server keeps no informers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from starlette.datastructures import QueryParams
from starlette.responses import PlainTextResponse, Response

from taintplane.api.gofmt import go_quote
from taintplane.store.interface import Store

__all__ = ["POST_START_HOOKS", "HealthChecks"]

#: The post-start hooks kube-apiserver names for what taintplane's bootstrap does.
NAMESPACES_HOOK = "start-system-namespaces-controller"
PRIORITY_CLASSES_HOOK = "scheduling/bootstrap-system-priority-classes"
RBAC_HOOK = "rbac/bootstrap-roles"
POST_START_HOOKS = (NAMESPACES_HOOK, PRIORITY_CLASSES_HOOK, RBAC_HOOK)

_HEADERS = {"X-Content-Type-Options": "nosniff"}
_TEXT = "text/plain; charset=utf-8"

#: A check: None when healthy, else why not (logged, never shown by the root endpoints).
Check = Callable[[], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class _Named:
    name: str
    check: Check


class HealthChecks:
    def __init__(self, store: Store, *, rbac: bool) -> None:
        self._store = store
        self._pending_hooks = {NAMESPACES_HOOK, PRIORITY_CLASSES_HOOK}
        if rbac:
            self._pending_hooks.add(RBAC_HOOK)
        self._shutting_down = False
        hooks = [
            _Named(f"poststarthook/{hook}", self._hook_check(hook))
            for hook in POST_START_HOOKS
            if hook in self._pending_hooks
        ]
        common = [
            _Named("ping", _healthy),
            _Named("log", _healthy),
            _Named("etcd", self._store_check),
        ]
        self._endpoints: dict[str, Sequence[_Named]] = {
            "healthz": [*common, *hooks],
            "livez": [*common, *hooks],
            "readyz": [
                *common,
                _Named("etcd-readiness", self._store_check),
                *hooks,
                _Named("shutdown", self._shutdown_check),
            ],
        }

    def hook_finished(self, hook: str) -> None:
        self._pending_hooks.discard(hook)

    def shutting_down(self) -> None:
        self._shutting_down = True

    async def serve(self, segments: Sequence[str], query: QueryParams) -> Response | None:
        """The answer for a path under a health endpoint, or None when the path is not one
        (a check that does not exist is the server's generic 404)."""
        checks = self._endpoints.get(segments[0]) if segments else None
        if checks is None:
            return None
        if len(segments) == 1:
            return await self._root(segments[0], checks, query)
        wanted = "/".join(segments[1:])
        for named in checks:
            if named.name == wanted:
                problem = await named.check()
                if problem is None:
                    return PlainTextResponse("ok", media_type=_TEXT)
                return _error(f"internal server error: {problem}")
        return None

    async def _root(self, name: str, checks: Sequence[_Named], query: QueryParams) -> Response:
        """healthz.handleRootHealth."""
        excluded = set(query.getlist("exclude"))
        lines: list[str] = []
        failed = False
        for named in checks:
            if named.name in excluded:
                excluded.discard(named.name)
                lines.append(f"[+]{named.name} excluded: ok\n")
            elif await named.check() is not None:
                lines.append(f"[-]{named.name} failed: reason withheld\n")
                failed = True
            else:
                lines.append(f"[+]{named.name} ok\n")
        if excluded:
            quoted = ",".join(go_quote(n) for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        if failed:
            return _error("".join(lines) + f"{name} check failed")
        if "verbose" not in query:
            return PlainTextResponse("ok", media_type=_TEXT, headers=_HEADERS)
        body = "".join(lines) + f"{name} check passed\n"
        return PlainTextResponse(body, media_type=_TEXT, headers=_HEADERS)

    def _hook_check(self, hook: str) -> Check:
        async def check() -> str | None:
            return "not finished" if hook in self._pending_hooks else None

        return check

    async def _store_check(self) -> str | None:
        try:
            await self._store.current_revision()
        except Exception as error:  # any failure to read the store is the check's failure
            return str(error) or type(error).__name__
        return None

    async def _shutdown_check(self) -> str | None:
        return "process is shutting down" if self._shutting_down else None


async def _healthy() -> str | None:
    return None


def _error(text: str) -> Response:
    """Go's http.Error: the text and a newline, as plain text, with nosniff."""
    return PlainTextResponse(text + "\n", status_code=500, media_type=_TEXT, headers=_HEADERS)
