"""``pods/log``, ``pods/exec``, ``pods/attach`` and ``pods/portforward``: what kubectl logs,
exec, attach and port-forward reach.

kube-apiserver checks the pod, the container and the node (LogLocation, streamLocation), then
proxies the request to the node's kubelet. A simulated node's kubelet runs no containers, so
there is nothing to proxy to: after upstream's checks (same messages, same codes) the request
fails as it does upstream when the kubelet cannot be reached, a Status of reason "" that
kubectl prints as ``Error from server: …``, here with a message that says why. Its code is
503 rather than upstream's 500: nothing went wrong in the server, the backend is absent.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from taintplane.apiserver.registry import Registry
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.status import APIError

__all__ = ["STREAM_SUBRESOURCES", "serve_stream"]

STREAM_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward"})
#: The port kube-apiserver dials (the node's status.daemonEndpoints.kubeletEndpoint).
_KUBELET_PORT = 10250
_STATUS_FIELDS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")


async def serve_stream(registry: Registry, info: RequestInfo, request: Request) -> Response:
    pod = await registry.get(info.resource, info.namespace, info.name)
    query = request.query_params
    name = info.name
    if info.subresource == "portforward":
        container = ""
    else:
        container = _valid_container(query.get("container", ""), pod)
    node_name = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node_name:
        if info.subresource == "log":
            # LogLocation: no host yet is an empty location, so an empty log.
            return Response(b"", media_type="text/plain")
        raise APIError.bad_request(f"pod {name} does not have a host assigned")
    nodes = registry.scheme.lookup("", "v1", "nodes")
    assert nodes is not None
    node = await registry.get(nodes, "", node_name)
    host = _address(node) or node_name
    why = f'the kubelet of node "{node_name}" is simulated by taintplane and runs no containers'
    if info.subresource == "log":
        _check_log_status(pod, container, previous=query.get("previous") == "true")
        url = f"https://{host}:{_KUBELET_PORT}/containerLogs/{info.namespace}/{name}/{container}"
        raise _unreachable(f'Get "{url}": {why}')
    raise _unreachable(f"error dialing backend: {why}")


def _unreachable(message: str) -> APIError:
    error = APIError.make(503, "", message)
    del error.status["reason"]
    return error


def _container_names(pod: dict[str, Any]) -> list[str]:
    """podutil.VisitContainers' order: init containers, containers, ephemeral containers."""
    spec = pod.get("spec") or {}
    return [
        str(c.get("name", ""))
        for field in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(field) or []
        if isinstance(c, dict)
    ]


def _valid_container(container: str, pod: dict[str, Any]) -> str:
    """validateContainer: the one container when none is named, else a container the pod has."""
    name = pod["metadata"]["name"]
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    if not container:
        if len(containers) == 1:
            return str(containers[0].get("name", ""))
        if not containers:
            raise APIError.bad_request(f"a container name must be specified for pod {name}")
        names = " ".join(_container_names(pod))
        raise APIError.bad_request(
            f"a container name must be specified for pod {name}, choose one of: [{names}]"
        )
    if container not in _container_names(pod):
        raise APIError.bad_request(f"container {container} is not valid for pod {name}")
    return container


def _check_log_status(pod: dict[str, Any], container: str, *, previous: bool) -> None:
    """The kubelet's validateContainerLogStatus, whose 400s kube-apiserver passes on."""
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    found = next(
        (
            s
            for field in (
                "containerStatuses",
                "initContainerStatuses",
                "ephemeralContainerStatuses",
            )
            for s in status.get(field) or []
            if isinstance(s, dict) and s.get("name") == container
        ),
        None,
    )
    if found is None:
        raise APIError.bad_request(f'container "{container}" in pod "{name}" is not available')
    state, last = found.get("state") or {}, found.get("lastState") or {}
    if previous:
        if not last.get("terminated"):
            raise APIError.bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        return
    if state.get("running") or state.get("terminated"):
        return
    waiting = state.get("waiting")
    if isinstance(waiting, dict):
        if last.get("terminated"):
            return  # the last run's log
        raise APIError.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: '
            f"{waiting.get('reason', '')}"
        )
    raise APIError.bad_request(f'container "{container}" in pod "{name}" is not available')


def _address(node: dict[str, Any]) -> str:
    """The address kube-apiserver dials: the first of kube-apiserver's default
    --kubelet-preferred-address-types the node has."""
    addresses = [
        a for a in (node.get("status") or {}).get("addresses") or [] if isinstance(a, dict)
    ]
    for kind in ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"):
        for address in addresses:
            if address.get("type") == kind and address.get("address"):
                return str(address["address"])
    return ""
