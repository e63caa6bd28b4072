"""Runs :mod:`taintplane.bench.fixture_startup`, as `taintplane bench fixture_startup`
does (its docstring says what it measures and how)."""

from taintplane.bench.fixture_startup import main

if __name__ == "__main__":
    main()
