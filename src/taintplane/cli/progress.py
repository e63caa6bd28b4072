"""The progress of long runs on a terminal, and the one line of totals they end with.

``clock advance``, ``what-if taint nodes|devices`` and ``simulate`` show a bar on stderr
(simulated time done of the total, objects written and Events per second) when stderr is a
terminal or ``--progress`` asks for it, then one line of totals, as::

    advanced 24h of cluster time in 8.2s (10536x): 1204 objects written (147/s), 310 events (38/s)

Without a terminal (and without ``--progress``) neither is printed: scripts read what they
always read. The bar and the line go to stderr, so stdout stays the command's answer.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from taintplane import runtime
from taintplane.api.duration import format_duration
from taintplane.sim.progress import Progress as RunProgress
from taintplane.sim.progress import WorkCount, WorkMeter

if TYPE_CHECKING:
    from taintplane.sim.cluster import Cluster

__all__ = [
    "ProgressDisplay",
    "progress_console",
    "progress_option",
    "run_shown",
    "short_duration",
    "totals_line",
    "wants_progress",
]

T = TypeVar("T")

progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar and a last line of totals on stderr (default: when stderr is "
    "a terminal).",
)


def wants_progress(flag: bool | None) -> bool:
    return sys.stderr.isatty() if flag is None else flag


def progress_console(flag: bool | None) -> Console:
    """stderr; as a terminal when --progress asked for it (a pipe then gets the bar too)."""
    return Console(stderr=True, force_terminal=True if flag else None)


def short_duration(seconds: float) -> str:
    """Go's duration without its trailing zero units: 24h, 1h30m, 90s is 1m30s."""
    text = format_duration(seconds)
    if text.endswith("m0s") and "h" in text:
        text = text[: -len("0s")]
        if text.endswith("h0m"):
            text = text[: -len("0m")]
    elif text.endswith("m0s"):
        text = text[: -len("0s")]
    return text


def _rate(count: int, wall: float) -> str:
    return f"{count / wall:.0f}/s" if wall > 0 else "-/s"


def totals_line(verb: str, work: WorkCount, wall: float) -> str:
    """The last line of a run: how much cluster time, in how long, how fast, what it wrote."""
    speed = work.done / wall if wall > 0 else 0.0
    shown = f"{speed:.0f}x" if speed >= 10 else f"{speed:.1f}x"
    return (
        f"{verb} {short_duration(work.done)} of cluster time in {wall:.1f}s ({shown}): "
        f"{work.objects} objects written ({_rate(work.objects, wall)}), "
        f"{work.events} events ({_rate(work.events, wall)})"
    )


class ProgressDisplay:
    """A rich progress bar on ``console`` (stderr by default) for a run of ``total`` simulated
    seconds ("``doing`` 24h"), fed with :class:`WorkCount`; :meth:`finish` replaces it with
    the totals line ("``verb`` 24h of cluster time …").

    ``wall`` is the stopwatch (``time.monotonic``): tests give their own."""

    def __init__(
        self,
        verb: str,
        doing: str,
        total: float,
        *,
        console: Console | None = None,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        self.verb = verb
        self.console = console or Console(stderr=True)
        self._wall = wall
        self._started = wall()
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[simulated]}"),
            TextColumn("{task.fields[rates]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._task: TaskID = self._progress.add_task(
            f"{doing} {short_duration(total)}",
            total=max(total, 1e-9),
            simulated=f"0s / {short_duration(total)}",
            rates="",
        )
        self._progress.start()
        self._meter: WorkMeter | None = None
        self.last = WorkCount(0.0, total, 0, 0)

    def elapsed(self) -> float:
        return max(self._wall() - self._started, 0.0)

    def update(self, work: WorkCount) -> None:
        self.last = work
        wall = self.elapsed()
        self._progress.update(
            self._task,
            completed=work.done,
            simulated=f"{short_duration(work.done)} / {short_duration(work.total)}",
            rates=f"{_rate(work.objects, wall)} objects, {_rate(work.events, wall)} events",
            refresh=True,
        )

    async def __call__(self, cluster: Cluster, done: float, total: float) -> None:
        """The :class:`~taintplane.sim.progress.Progress` of an in-process run."""
        if self._meter is None:
            self._meter = WorkMeter(cluster)
            await self._meter.start()
        self.update(await self._meter.read(done, total))

    def finish(self) -> str:
        """Take the bar away; print and return the totals line."""
        self._progress.stop()
        line = totals_line(self.verb, self.last, self.elapsed())
        self.console.print(line, highlight=False, soft_wrap=True)
        return line

    def abandon(self) -> None:
        """Take the bar away after a failure, printing nothing more."""
        self._progress.stop()


def run_shown(
    flag: bool | None,
    verb: str,
    doing: str,
    total: float,
    work: Callable[[RunProgress | None], Coroutine[Any, Any, T]],
) -> T:
    """Run ``work`` (an in-process simulation taking a progress) with a bar when one is
    wanted, then print the totals line; nothing extra when not."""
    display = (
        ProgressDisplay(verb, doing, total, console=progress_console(flag))
        if wants_progress(flag)
        else None
    )
    try:
        # A simulation allocates as a cluster does, and the snapshot it runs on lives as long
        # as it does: a long run's collector settings (the default ones collect the whole heap
        # over and over: a third of what-if's copy and a fifth of its window at 500 nodes).
        with runtime.settled_heap():
            result = asyncio.run(work(display))
    except BaseException:
        if display is not None:
            display.abandon()
        raise
    if display is not None:
        display.finish()
    return result
