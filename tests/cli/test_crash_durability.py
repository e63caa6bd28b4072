"""An acknowledged write survives ``kill -9`` of the API server (DESIGN.md promise)."""

import asyncio
import os
import signal
import subprocess
import sys

import httpx


def serve(data_dir):
    process = subprocess.Popen(
        [sys.executable, "-m", "taintplane", "serve", "--data-dir", str(data_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().rsplit(" ", 1)[1].strip()
    process.stdout.readline()
    return process, url


def test_every_acknowledged_create_survives_sigkill_of_the_server(tmp_path):
    process, url = serve(tmp_path)
    acknowledged: list[str] = []

    async def load():
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:

            async def writer(worker):
                for i in range(10_000):
                    name = f"w{worker}-{i}"
                    try:
                        response = await client.post(
                            "/api/v1/nodes", json={"metadata": {"name": name}}
                        )
                    except httpx.TransportError:
                        return  # the server is gone
                    if response.status_code == 201:
                        acknowledged.append(name)
                    if len(acknowledged) >= 800 and worker == 0 and i % 50 == 0:
                        os.kill(process.pid, signal.SIGKILL)

            await asyncio.gather(*(writer(w) for w in range(16)))

    asyncio.run(load())
    process.wait(30)
    process.stdout.close()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    assert len(acknowledged) >= 800

    process, url = serve(tmp_path)
    try:
        present = {
            n["metadata"]["name"]
            for n in httpx.get(f"{url}/api/v1/nodes", timeout=60).json()["items"]
        }
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert [name for name in acknowledged if name not in present] == []
