"""Runs :mod:`taintplane.bench.zone_outage`, as `taintplane bench zone_outage` does (its
docstring says what it measures and how)."""

from taintplane.bench.zone_outage import main

if __name__ == "__main__":
    raise SystemExit(main())
