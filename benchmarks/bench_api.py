"""Runs :mod:`taintplane.bench.bench_api`, as `taintplane bench bench_api`
does (its docstring says what it measures and how)."""

from taintplane.bench.bench_api import main

if __name__ == "__main__":
    raise SystemExit(main())
