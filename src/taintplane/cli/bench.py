"""``taintplane bench NAME [ARGS…]``: run one of the benchmarks behind BENCHMARKS.md (the
modules of :mod:`taintplane.bench`; ``benchmarks/NAME.py`` in a checkout runs the same).
Without NAME, list them. Each prints its progress on stderr and its figures as JSON or text
on stdout; ``taintplane bench NAME --help`` tells its options."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys

import click

import taintplane.bench

__all__ = ["bench_command", "benchmarks"]


def benchmarks() -> dict[str, str]:
    """Name -> what the benchmark measures (its docstring's first clause)."""
    found = {}
    for module in pkgutil.iter_modules(taintplane.bench.__path__):
        doc = importlib.import_module(f"taintplane.bench.{module.name}").__doc__ or ""
        paragraph = " ".join(doc.strip().split("\n\n")[0].split())
        found[module.name] = re.split(r"[.:](?:\s|$)", paragraph, maxsplit=1)[0]
    return dict(sorted(found.items()))


@click.command(
    "bench",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    add_help_option=False,
)
@click.argument("name", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench_command(name: str | None, args: tuple[str, ...]) -> None:
    """Run the benchmark NAME with ARGS (NAME --help for its options); list them without.

    \b
    Examples:
      taintplane bench
      taintplane bench startup --help
    """
    known = benchmarks()
    if name is None or name in ("-h", "--help"):
        width = max(len(n) for n in known)
        click.echo("taintplane bench NAME [ARGS…]  (NAME --help for its options)\n")
        for bench, summary in known.items():
            click.echo(f"  {bench.ljust(width)}  {summary}")
        return
    if name not in known:
        raise click.UsageError(
            f"no benchmark {name!r}; one of: {', '.join(known)} (taintplane bench lists them)"
        )
    module = importlib.import_module(f"taintplane.bench.{name}")
    sys.argv = [f"taintplane bench {name}", *args]
    raise SystemExit(module.main())
