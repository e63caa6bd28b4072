"""Runs :mod:`taintplane.bench.bench_store`, as `taintplane bench bench_store`
does (its docstring says what it measures and how)."""

from taintplane.bench.bench_store import main

if __name__ == "__main__":
    main()
