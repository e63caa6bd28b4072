"""Host ports: which a pod takes on its node (``GetHostPorts``), and when two collide
(``HostPortInfo.CheckConflict``) — what the scheduler's NodePorts and the kubelet's admission
both check."""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

__all__ = ["BIND_ALL_HOST_IP", "HostPort", "host_ports", "port_conflict"]

#: ``DefaultBindAllHostIP``: a hostPort without hostIP binds every address.
BIND_ALL_HOST_IP = "0.0.0.0"

#: A host port as ``(protocol, port, hostIP)``, with upstream's defaults filled in.
HostPort = tuple[str, int, str]


def host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """``GetHostPorts``: the host ports of the containers and of the init containers that run
    for the pod's whole life (``restartPolicy: Always``, sidecars)."""
    containers = [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ] + list(spec.get("containers") or [])
    ports = []
    for container in containers:
        for port in container.get("ports") or []:
            number = port.get("hostPort")
            if isinstance(number, int) and number > 0:
                protocol = str(port.get("protocol") or "TCP")
                ports.append((protocol, number, str(port.get("hostIP") or BIND_ALL_HOST_IP)))
    return tuple(ports)


def port_conflict(used: Mapping[tuple[str, int], Container[str]], wanted: HostPort) -> bool:
    """``CheckConflict``: ``used`` maps (protocol, port) to the host IPs holding it. A wanted
    port on 0.0.0.0 conflicts with that protocol and port on any IP; one on a specific IP with
    the same IP and with 0.0.0.0."""
    protocol, port, ip = wanted
    holders = used.get((protocol, port))
    if not holders:
        return False
    if ip == BIND_ALL_HOST_IP:
        return True
    return BIND_ALL_HOST_IP in holders or ip in holders
