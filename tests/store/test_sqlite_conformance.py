from pathlib import Path

from taintplane.store.interface import Store
from taintplane.store.sqlite import SqliteStore
from taintplane.store.testing import StoreConformance


class TestSqliteStore(StoreConformance):
    async def open_store(self, directory: Path) -> Store:
        return await SqliteStore(directory / "state.db").open()


class TestSqliteStoreFullSync(StoreConformance):
    async def open_store(self, directory: Path) -> Store:
        return await SqliteStore(directory / "state.db", synchronous="FULL").open()
