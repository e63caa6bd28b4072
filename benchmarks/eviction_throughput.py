"""Runs :mod:`taintplane.bench.eviction_throughput`, as `taintplane bench eviction_throughput`
does (its docstring says what it measures and how)."""

from taintplane.bench.eviction_throughput import main

if __name__ == "__main__":
    main()
