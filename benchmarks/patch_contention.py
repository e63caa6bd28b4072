"""Runs :mod:`taintplane.bench.patch_contention`, as `taintplane bench patch_contention`
does (its docstring says what it measures and how)."""

from taintplane.bench.patch_contention import main

if __name__ == "__main__":
    main()
