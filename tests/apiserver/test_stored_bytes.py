"""What the registry hands the store is kept for a while (the watch hub's buffer of recent
changes): it must cost what it holds, not the encoder's whole buffer."""

from __future__ import annotations

import tracemalloc

import orjson

from taintplane.apiserver.registry_reads import encode_for_storage


def test_stored_bytes_hold_no_more_memory_than_their_length() -> None:
    obj = {"apiVersion": "v1", "kind": "Lease", "metadata": {"name": "node-1"}}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [encode_for_storage(obj) for _ in range(100)]
        each = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert orjson.loads(kept[0]) == obj
    # orjson alone leaves ~4 KiB behind each result; a bytes object's header is ~33 bytes.
    assert each < len(kept[0]) + 200
