"""Runs :mod:`taintplane.bench.startup`, as `taintplane bench startup`
does (its docstring says what it measures and how)."""

from taintplane.bench.startup import main

if __name__ == "__main__":
    main()
