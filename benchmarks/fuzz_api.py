"""The API fuzz suite's generator (tests/fuzz/harness.py) run for longer against a real
server on 127.0.0.1: hostile bodies, patches of every type and junk query parameters for
every served kind. Prints the requests sent, the answers by status code, every answer >= 500
(there should be none), whether /readyz still answers, and stored objects that no longer
type-check or validate (there should be none).

    .venv/bin/python benchmarks/fuzz_api.py --examples 5000 [--seed 1] [--openapi 20]

``--openapi N`` then runs schemathesis' N generated requests for every operation of the
published OpenAPI v3 documents (tests/fuzz/test_openapi_fuzz.py runs one of each in CI).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

import httpx
from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import schemathesis
from tests.fuzz import harness
from tests.fuzz.test_openapi_fuzz import check_operation, merged_openapi

from taintplane.sim.cluster import running_cluster


def openapi_run(base_url: str, examples: int, failures: list[str]) -> None:
    published = schemathesis.openapi.from_dict(merged_openapi(base_url))
    codes: dict[int, int] = {}
    started = time.perf_counter()
    operations = 0
    for result in published.get_all_operations():
        operations += 1
        try:
            check_operation(result.ok(), base_url, examples, codes)  # type: ignore[union-attr]
        except AssertionError as failure:
            failures.append(str(failure)[:800])
    sent = sum(codes.values())
    elapsed = time.perf_counter() - started
    print(f"schemathesis: {operations} operations, {sent} requests in {elapsed:.1f} s")
    print("  answers: " + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items())))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--openapi", type=int, default=0, metavar="N")
    args = parser.parse_args()
    codes: collections.Counter[int] = collections.Counter()
    failures: list[str] = []
    slowest: list[tuple[float, str]] = []
    with (
        tempfile.TemporaryDirectory(prefix="fuzz-api-") as data,
        running_cluster(Path(data), components=()) as cluster,
        httpx.Client(base_url=cluster.url, timeout=60) as client,
    ):

        @seed(args.seed)
        @settings(
            max_examples=args.examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(harness.calls())
        def run(call: harness.Call) -> None:
            started = time.perf_counter()
            response = harness.send(client, call)
            slowest.append((time.perf_counter() - started, call.describe()[:160]))
            slowest.sort(reverse=True)
            del slowest[5:]
            codes[response.status_code] += 1
            try:
                harness.check_answer(call, response)
            except AssertionError as failure:
                failures.append(str(failure)[:800])

        started = time.perf_counter()
        run()
        elapsed = time.perf_counter() - started
        if args.openapi:
            openapi_run(cluster.url, args.openapi, failures)
        ready = client.get("/readyz").status_code
        assert cluster.apiserver is not None
        problems = harness.stored_problems(client, cluster.apiserver.registry)
    sent = sum(codes.values())
    print(f"requests: {sent} in {elapsed:.1f} s ({sent / elapsed:.0f}/s), seed {args.seed}")
    print("answers: " + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items())))
    print(f"answers >= 500 (504 for an unreached resourceVersion aside): {len(failures)}")
    for failure in failures[:20]:
        print("  " + failure)
    print("slowest: " + "; ".join(f"{t * 1000:.0f} ms {what}" for t, what in slowest[:3]))
    print(f"/readyz afterwards: {ready}")
    print(f"stored objects that no longer type-check or validate: {len(problems)}")
    for problem in problems[:20]:
        print("  " + problem)
    return 1 if failures or problems or ready != 200 else 0


if __name__ == "__main__":
    raise SystemExit(main())
