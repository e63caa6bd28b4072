"""Retry pacing as client-go's ``k8s.io/apimachinery/pkg/util/wait`` computes it, on a
:class:`~taintplane.clock.Clock`.

- :class:`Backoff` is ``wait.Backoff``: ``step()`` returns the next wait and grows the
  following one by ``factor`` up to ``cap``; ``jitter`` adds up to that fraction of the wait.
- :class:`ExponentialBackoffManager` is ``wait.NewExponentialBackoffManager``: a
  :class:`Backoff` that starts over once no wait was asked for during ``reset_after``
  seconds (the reflector's: 800 ms doubling to 30 s, reset after 2 min, jitter 1.0).

The random source is a parameter so that tests can fix it (a ``random.Random`` whose
``random()`` returns 0 gives the waits without jitter).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from taintplane.clock import Clock

__all__ = ["Backoff", "ExponentialBackoffManager", "jitter"]


def jitter(duration: float, max_factor: float, rng: random.Random | None = None) -> float:
    """``wait.Jitter``: ``duration`` plus up to ``max_factor`` of it (1.0 when ≤ 0)."""
    if max_factor <= 0:
        max_factor = 1.0
    return duration + (rng or random).random() * max_factor * duration


@dataclass
class Backoff:
    """``wait.Backoff``: ``duration`` seconds, multiplied by ``factor`` after each step
    while ``steps`` remain; once the next wait would pass ``cap`` (when set) it stays at
    ``cap`` and no steps remain."""

    duration: float
    factor: float = 1.0
    jitter: float = 0.0
    steps: int = 1
    cap: float = 0.0
    rng: random.Random | None = field(default=None, repr=False)

    def step(self) -> float:
        if self.steps < 1:
            return (
                jitter(self.duration, self.jitter, self.rng) if self.jitter > 0 else self.duration
            )
        self.steps -= 1
        duration = self.duration
        if self.factor != 0:
            self.duration *= self.factor
            if self.cap > 0 and self.duration > self.cap:
                self.duration = self.cap
                self.steps = 0
        if self.jitter > 0:
            duration = jitter(duration, self.jitter, self.rng)
        return duration


#: ``math.MaxInt32``: the manager's backoff never runs out of steps before its cap.
_UNLIMITED = 2**31 - 1


class ExponentialBackoffManager:
    """``wait.NewExponentialBackoffManager(initial, cap, reset_after, factor, jitter)``."""

    def __init__(
        self,
        clock: Clock,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        reset_after: float = 120.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        rng: random.Random | None = None,
    ) -> None:
        self.clock = clock
        self.initial = initial
        self.reset_after = reset_after
        self._backoff = Backoff(initial, factor, jitter, _UNLIMITED, cap, rng)
        self._last: float | None = None

    def next_delay(self) -> float:
        """The next wait (``getNextBackoff``), started over after a quiet ``reset_after``."""
        now = self.clock.monotonic()
        if self._last is not None and now - self._last > self.reset_after:
            self._backoff.steps = _UNLIMITED
            self._backoff.duration = self.initial
        self._last = now
        return self._backoff.step()
