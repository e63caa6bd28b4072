"""Runs :mod:`taintplane.bench.scheduler_throughput`, as `taintplane bench scheduler_throughput`
does (its docstring says what it measures and how)."""

from taintplane.bench.scheduler_throughput import main

if __name__ == "__main__":
    raise SystemExit(main())
