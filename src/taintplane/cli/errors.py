"""Exit codes of every command: 2 for a usage error and for an input file that cannot be used
(unreadable, not YAML, invalid: the command was given something it cannot take), 1 for a
failure while doing the work (a cluster out of reach, a refusal, a port in use)."""

from __future__ import annotations

import click

__all__ = ["InputFileError"]


class InputFileError(click.ClickException):
    """A file named on the command line cannot be used: ``Error: …`` and exit 2, as a usage
    error exits, without the usage text (the file, not the command line, needs fixing)."""

    exit_code = 2
