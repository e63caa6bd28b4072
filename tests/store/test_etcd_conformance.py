from pathlib import Path

import pytest

from taintplane.store.etcd import EtcdStore
from taintplane.store.interface import Store
from taintplane.store.testing import StoreConformance
from tests.store.etcd_server import EtcdServer


class TestEtcdStore(StoreConformance):
    @pytest.fixture(autouse=True)
    def _etcd(self, etcd_server: EtcdServer) -> None:
        self.server = etcd_server

    async def open_store(self, directory: Path) -> Store:
        # A fresh key prefix per test: the tests share one etcd.
        return await EtcdStore(self.server.url()).open()
