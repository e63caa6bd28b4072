"""Logging of the commands that run components (``up``, ``serve``, the split components), and
of the commands that run a cluster of their own only to report on it.

Lines carry klog's header (severity letter, date, time, pid, file:line), so they read as
kube-controller-manager's do. Expected failures (the API refusing a write, a
conflict, a server out of reach) are one line each, in client-go's words, naming the retry;
a traceback means a bug, or that ``-v`` asked for it.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime
from pathlib import Path

import click

__all__ = ["KlogFormatter", "quiet_components", "setup_logging", "verbosity_options"]

_SEVERITY = {"DEBUG": "I", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "F"}


class KlogFormatter(logging.Formatter):
    """klog's header, then the message: ``E1129 03:40:01.123456    4242 workqueue.py:158]
    replicaset: error syncing "default/web": …, requeuing``."""

    def format(self, record: logging.LogRecord) -> str:
        # Wall-clock time of the process (logs are about the process, not the cluster's clock).
        stamp = datetime.fromtimestamp(record.created).strftime("%m%d %H:%M:%S.%f")
        severity = _SEVERITY.get(record.levelname, "I")
        where = f"{record.filename}:{record.lineno}"
        line = f"{severity}{stamp} {record.process:>7} {where}] {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(verbose: int, log_file: Path | None) -> None:
    """Warnings and errors by default; ``-v`` adds tracebacks of expected failures and
    informational lines, ``-vv`` debug lines. ``log_file`` (appended to) replaces stderr."""
    try:
        stream = log_file.open("a", buffering=1) if log_file is not None else sys.stderr
    except OSError as error:
        raise click.UsageError(f"--log-file: cannot open {log_file}: {error.strerror}") from error
    handler = logging.StreamHandler(stream)
    handler.setFormatter(KlogFormatter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    level = (logging.WARNING, logging.INFO)[verbose] if verbose < 2 else logging.DEBUG
    logging.getLogger("taintplane").setLevel(level)


def verbosity_options(function: click.decorators.FC) -> click.decorators.FC:
    function = click.option(
        "--log-file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="PATH",
        help="Append logs to this file instead of the terminal (`up --detach` writes them "
        "to DATA_DIR/taintplane.log unless told otherwise).",
    )(function)
    return click.option(
        "-v",
        "--verbose",
        count=True,
        help="Log more: tracebacks of expected, retried failures and progress lines.",
    )(function)


def quiet_components() -> None:
    """What the copy's components log (a garbage collector retrying an owner of a kind the copy
    does not serve, a controller's conflict) is not the user's business: the report says what
    the copy could not simulate. Only a component's crash would be, and that fails the run."""
    logging.getLogger("taintplane").setLevel(logging.CRITICAL)
