"""``what-if`` runs its copy with a long run's collector settings and gives them back: tests (and
anything else) invoke it in their own process, which goes on afterwards."""

from __future__ import annotations

import gc

from taintplane import runtime


def test_the_settings_hold_while_the_work_runs_and_are_given_back() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    kept = [object()]
    with runtime.settled_heap():
        assert gc.get_threshold() == (50_000, 20, 20)
        assert gc.get_freeze_count() > frozen  # what exists now is left out of collections
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0  # collectable again
    assert kept
