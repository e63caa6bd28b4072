"""Where an etcd store lives: ``etcd://HOST:PORT[,HOST:PORT…][/PREFIX]``.

Parsed without importing gRPC, so that a malformed ``--store`` is refused before anything
heavy loads. The key prefix (default ``/registry``, as kube-apiserver's) lets several
taintplanes share one etcd cluster: each keeps its own key layout under its own prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_PREFIX", "EtcdTarget", "EtcdURLError", "parse_etcd_url"]

DEFAULT_PREFIX = "/registry"

_ENDPOINT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]+)):(?P<port>\d+)$")
_PREFIX = re.compile(r"^(/[A-Za-z0-9_.-]+)+$")


class EtcdURLError(ValueError):
    pass


@dataclass(frozen=True)
class EtcdTarget:
    #: (host, port) of each member; an IPv6 host without brackets.
    endpoints: tuple[tuple[str, int], ...]
    #: Every key is stored as ``prefix + key`` (taintplane's keys start with "/").
    prefix: str = DEFAULT_PREFIX

    def describe(self) -> str:
        """The endpoints as a user wrote them, for messages."""
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.endpoints)

    def url(self) -> str:
        suffix = "" if self.prefix == DEFAULT_PREFIX else self.prefix
        return f"etcd://{self.describe()}{suffix}"


def parse_etcd_url(url: str) -> EtcdTarget:
    """``etcd://127.0.0.1:2379``, ``etcd://h1:2379,h2:2379``, ``etcd://[::1]:2379/team-a``."""
    example = "e.g. etcd://127.0.0.1:2379 or etcd://h1:2379,h2:2379"
    if not url.startswith("etcd://"):
        raise EtcdURLError(f"{url!r} is not an etcd URL: {example}")
    rest = url[len("etcd://") :]
    hosts, slash, path = rest.partition("/")
    if not hosts:
        raise EtcdURLError(f"{url!r} names no endpoint: {example}")
    endpoints: list[tuple[str, int]] = []
    for part in hosts.split(","):
        match = _ENDPOINT.match(part.strip())
        if match is None:
            raise EtcdURLError(f"{url!r}: endpoint {part!r} is not HOST:PORT ({example})")
        port = int(match["port"])
        if not 0 < port < 65536:
            raise EtcdURLError(f"{url!r}: port {port} is out of range 1-65535")
        endpoints.append((match["v6"] or match["host"], port))
    prefix = DEFAULT_PREFIX
    if slash and path.strip("/"):
        prefix = "/" + path.strip("/")
        if _PREFIX.match(prefix) is None:
            raise EtcdURLError(
                f"{url!r}: key prefix {prefix!r} may hold only letters, digits, '_', '.', '-' "
                "and '/'"
            )
    return EtcdTarget(tuple(endpoints), prefix)
