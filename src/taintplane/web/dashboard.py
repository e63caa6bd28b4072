"""The read-only dashboard at ``/dashboard/``: who is tainted, who is pending and why, who is
being evicted and when — read through the API like any other client, rendered on the server
(plain HTML and CSS, no script), refreshed every few seconds by the browser.

Pages: ``/dashboard/`` (nodes, pending pods, pods on their way out, recent events) and
``/dashboard/nodes/NAME`` (a node's taints and conditions, and for each of its pods the
toleration that decides how long it stays, when it is evicted and how long is left; see
:mod:`taintplane.web.stay` for where that instant comes from).
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from starlette.types import ASGIApp, Receive, Scope, Send

from taintplane.api.decoding import parse_timestamp
from taintplane.api.podconditions import find_condition
from taintplane.api.taints import Taint
from taintplane.client import ApiError, Client, resource
from taintplane.clock import Clock
from taintplane.web.as_user import user_client
from taintplane.web.chart import chart
from taintplane.web.history import history
from taintplane.web.page import html_page, table, timestamp
from taintplane.web.pending import PodsExplainer, pending_section, pod_name
from taintplane.web.stay import EvictionSchedule, stay

__all__ = ["DASHBOARD_PREFIX", "Dashboard"]

DASHBOARD_PREFIX = "/dashboard"
NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
EVENTS = resource("", "v1", "events")
#: Events shown on the overview, newest first.
RECENT_EVENTS = 30


def _taints(node: dict[str, Any]) -> list[Taint]:
    return [Taint.from_dict(t) for t in (node.get("spec") or {}).get("taints") or []]


def _ready(node: dict[str, Any]) -> str:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status"))
    return "Unknown"


#: The Ready condition's status as words (kubectl's STATUS column, with Unknown kept apart:
#: a node that stopped reporting is not one that reports trouble) and a mark, so that colour
#: is never the only cue.
_READY_WORDS = {"True": ("Ready", "✓"), "False": ("NotReady", "✗"), "Unknown": ("Unknown", "?")}


def _ready_badge(node: dict[str, Any]) -> str:
    status = _ready(node)
    words, mark = _READY_WORDS.get(status, (status, "?"))
    if (node.get("spec") or {}).get("unschedulable"):
        words += ",SchedulingDisabled"
    return (
        f'<span class="ready {escape(status)}" title="Ready={escape(status)}">'
        f'<span aria-hidden="true">{mark} </span>{escape(words)}</span>'
    )


def _taint_chips(taints: list[Taint]) -> str:
    return " ".join(
        f'<span class="taint {escape(t.effect)}">{escape(t.to_string())}</span>' for t in taints
    )


def _node_link(name: str, known: set[str] | None = None) -> str:
    """A link to the node's page; a node the cluster does not have (a pod bound to a name no
    node carries) is named without one, since its page would be a 404."""
    if not name:
        return ""
    if known is not None and name not in known:
        return f"{escape(name)} (node not found)"
    return f'<a href="{DASHBOARD_PREFIX}/nodes/{quote(name)}">{escape(name)}</a>'


class Dashboard:
    """Serves the dashboard's paths and hands every other request to ``inner``.

    ``evictions`` is the taint eviction controller when it runs in the same process: its
    queue is the only record of when each pod's eviction falls due."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        inner: ASGIApp,
        *,
        evictions: EvictionSchedule | None = None,
        explain: PodsExplainer | None = None,
        as_user: bool = False,
    ) -> None:
        self.client = client
        self.clock = clock
        self.inner = inner
        self.evictions = evictions
        self.explain = explain
        #: Under --auth: read the API as the person at the browser (their token, through
        #: ``inner``'s authentication and RBAC), never as the in-process components.
        self.as_user = as_user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (
            path == DASHBOARD_PREFIX or path.startswith(DASHBOARD_PREFIX + "/")
        ):
            await self.inner(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, html_page("Not allowed", "<p>The dashboard only reads.</p>"))
            return
        rest = path[len(DASHBOARD_PREFIX) :]
        client = user_client(scope, self.inner) if self.as_user else self.client
        try:
            if rest == "":
                await _redirect(send, DASHBOARD_PREFIX + "/")
            elif rest == "/":
                await _respond(send, 200, await self.overview(client))
            elif rest.startswith("/nodes/") and rest.count("/") == 2 and rest != "/nodes/":
                status, body = await self.node_page(client, rest[len("/nodes/") :])
                await _respond(send, status, body)
            else:
                await _respond(send, 404, html_page("Not found", "<p>No such dashboard page.</p>"))
        except ApiError as error:
            if error.code not in (401, 403):
                raise
            # RBAC lets this user see less than the page needs: say so in the API's words.
            body = f'<p class="denied">{escape(str(error))}</p>' + _SIGN_IN_HINT
            await _respond(send, error.code, html_page("Not allowed", body))

    async def overview(self, client: Client) -> str:
        nodes, _ = await client.list(NODES)
        pods, _ = await client.list(PODS)
        events, _ = await client.list(EVENTS)
        known = {str(n["metadata"]["name"]) for n in nodes}
        per_node: dict[str, int] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                per_node[node] = per_node.get(node, 0) + 1
        node_rows = [
            (
                _node_link(n["metadata"]["name"]),
                escape(n["metadata"].get("labels", {}).get("topology.kubernetes.io/zone", "")),
                _ready_badge(n),
                _taint_chips(_taints(n)),
                f"{per_node.get(n['metadata']['name'], 0)} / "
                f"{escape(str((n.get('status') or {}).get('allocatable', {}).get('pods', '?')))}",
            )
            for n in sorted(nodes, key=lambda n: str(n["metadata"]["name"]))
        ]
        pending = [
            p
            for p in pods
            if (p.get("status") or {}).get("phase", "Pending") == "Pending"
            and not p["metadata"].get("deletionTimestamp")
        ]
        leaving = []
        for pod in pods:
            deletion = pod["metadata"].get("deletionTimestamp")
            if not deletion:
                continue
            target = find_condition(pod, "DisruptionTarget") or {}
            leaving.append(
                (
                    escape(pod_name(pod)),
                    _node_link(str((pod.get("spec") or {}).get("nodeName") or ""), known),
                    escape(str(target.get("reason") or "")),
                    timestamp(str(deletion)),
                )
            )
        recent = sorted(events, key=_event_order, reverse=True)[:RECENT_EVENTS]
        event_rows = [
            (
                timestamp(_event_time(e)),
                escape(str(e.get("type", ""))),
                escape(str(e.get("reason", ""))),
                escape(_regarding(e)),
                escape(str(e.get("message") or e.get("note") or "")),
            )
            for e in recent
        ]
        ready = sum(_ready(n) == "True" for n in nodes)
        running = sum(
            (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
            for p in pods
        )
        body = (
            f'<p class="summary">{self._now()} · {ready} of {len(nodes)} nodes Ready · '
            f"{running} pods running · {len(pending)} pending · {len(leaving)} terminating</p>"
            + table(
                "nodes",
                ("node", "zone", "Ready", "taints", "pods"),
                node_rows,
                empty="No nodes.",
            )
            + "<h2>The last hour</h2>"
            + chart(history(pods, events, self.clock.now()))
            + "<h2>Pending pods</h2>"
            + await pending_section(
                client, pending, self.explain, lambda name: _node_link(name, known), (nodes, pods)
            )
            + "<h2>Pods on their way out</h2>"
            + table(
                "leaving",
                ("pod", "node", "reason", "deletionTimestamp"),
                leaving,
                empty="No pod is being deleted.",
            )
            + "<h2>Recent events</h2>"
            + table(
                "events",
                ("time", "type", "reason", "object", "message"),
                event_rows,
                empty="No events.",
            )
        )
        return html_page("taintplane", "<h2>Nodes</h2>" + body + self._sign_out(), refresh=5)

    async def node_page(self, client: Client, name: str) -> tuple[int, str]:
        try:
            node = await client.get(NODES, name)
        except ApiError as error:
            if error.code != 404:
                raise
            return 404, html_page("Not found", f"<p>There is no node {escape(name)}.</p>")
        taints = _taints(node)
        pods, _ = await client.list(PODS, field_selector=f"spec.nodeName={name}")
        taint_rows = [
            (
                _taint_chips([t]),
                escape(t.effect),
                timestamp(t.time_added.strftime("%Y-%m-%dT%H:%M:%SZ") if t.time_added else ""),
            )
            for t in taints
        ]
        conditions = [
            (
                escape(str(c.get("type"))),
                escape(str(c.get("status"))),
                escape(str(c.get("reason", ""))),
                timestamp(str(c.get("lastTransitionTime") or "")),
            )
            for c in (node.get("status") or {}).get("conditions") or []
        ]
        now = self.clock.now()
        stays = [
            (p, stay(p, node, taints, now, self.evictions)) for p in sorted(pods, key=pod_name)
        ]
        pod_rows = [
            (
                escape(pod_name(p)),
                escape(str((p.get("status") or {}).get("phase", ""))),
                escape(s.text),
            )
            for p, s in stays
        ]
        reckoned = (
            '<p class="note" id="reckoned">Eviction instants are reckoned from the API (the '
            "taint eviction controller's queue is not in this process): the later of the "
            "pod's scheduling and the NoExecute taint's timeAdded, or the node's last write "
            "of its taints for a taint without one.</p>"
            if any(not s.from_controller for _, s in stays)
            else ""
        )
        body = (
            f'<p class="summary">{self._now()} · {_ready_badge(node)}</p>'
            "<h2>Taints</h2>"
            + table("taints", ("taint", "effect", "added"), taint_rows, empty="No taints.")
            + "<h2>Conditions</h2>"
            + table(
                "conditions",
                ("type", "status", "reason", "since"),
                conditions,
                empty="No conditions.",
            )
            + "<h2>Pods</h2>"
            + table("pods", ("pod", "phase", "stays until"), pod_rows, empty="No pods.")
            + reckoned
        )
        body += self._sign_out()
        return 200, html_page(f"node {name}", body, refresh=5, back=DASHBOARD_PREFIX + "/")

    def _sign_out(self) -> str:
        if not self.as_user:
            return ""
        return f'<p class="note"><a id="signout" href="{DASHBOARD_PREFIX}/signout">Sign out</a></p>'

    def _now(self) -> str:
        return "clock " + escape(self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"))


def _event_time(event: dict[str, Any]) -> str:
    """When it last happened, to the second (eventTime is a MicroTime: cut to match)."""
    text = str(
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or event["metadata"].get("creationTimestamp")
        or ""
    )
    return text[:19] + "Z" if len(text) > 20 else text


def _event_order(event: dict[str, Any]) -> tuple[str, datetime, int]:
    """Newest last: the second shown, then within it the MicroTime of the last occurrence
    (``series.lastObservedTime``, else ``eventTime`` when it falls in that second), then the
    resourceVersion (every write of an event, a repeat too, gets a larger one)."""
    shown = _event_time(event)
    precise = parse_timestamp((event.get("series") or {}).get("lastObservedTime"))
    if precise is None:
        first = str(event.get("eventTime") or "")
        precise = parse_timestamp(first) if first[:19] == shown[:19] else None
    if precise is None:
        precise = parse_timestamp(shown) or datetime.min.replace(tzinfo=UTC)
    version = str(event["metadata"].get("resourceVersion") or "")
    return shown, precise, int(version) if version.isdigit() else 0


_SIGN_IN_HINT = (
    f'<p>Sign in with a bearer token on <a href="{DASHBOARD_PREFIX}/signin">the sign-in '
    "page</a>, or open the dashboard through <code>kubectl proxy</code>.</p>"
)


def _regarding(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    namespace = involved.get("namespace")
    name = f"{namespace}/{involved.get('name')}" if namespace else str(involved.get("name"))
    return f"{str(involved.get('kind', '')).lower()}/{name}"


async def _respond(send: Send, status: int, body: str) -> None:
    data = body.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(data)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def _redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 308,
            "headers": [(b"location", location.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})
