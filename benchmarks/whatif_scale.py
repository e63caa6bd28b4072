"""Runs :mod:`taintplane.bench.whatif_scale`, as `taintplane bench whatif_scale`
does (its docstring says what it measures and how)."""

from taintplane.bench.whatif_scale import main

if __name__ == "__main__":
    main()
