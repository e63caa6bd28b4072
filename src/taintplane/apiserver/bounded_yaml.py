"""YAML decoding that counts what an alias would expand to before anything expands it.

PyYAML composes an alias as a second reference to the anchored node, so composing and
constructing a "billion laughs" document is cheap; what blows up is turning the shared graph
into JSON (436 bytes, 9^8 leaves: 33 s of one core and gigabytes). kube-apiserver decodes YAML
with go-yaml v2, which since CVE-2019-11253 counts every node it decodes, aliased ones again
each time, and stops a document whose decoding is mostly alias expansion
(``yaml: document contains excessive aliasing``); its parser also stops at 10000 levels of
nesting (``yaml: exceeded max depth of 10000``).

:class:`BoundedLoader` composes the node graph itself (on libyaml's event stream when it is
there: the pure-Python scanner is three times slower), measuring each anchored node once: how
many decodes it costs (aliases inside it included) and how deep it goes. An alias then adds
its target's measure to go-yaml's two counters without being walked, so the ratio test runs
as go-yaml's would at that point, and the expanded depth is known before anything expands.
Nesting is limited to :data:`~taintplane.apiserver.body_limits.MAX_DEPTH` (Python's stack,
not Go's, sets how deep the server's walkers can go).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from taintplane.apiserver.body_limits import MAX_DEPTH

__all__ = ["BoundedLoader", "YAMLLimitError", "allowed_alias_ratio", "load"]

#: go-yaml's alias_ratio_range_low/high: up to 400000 decodes 99 % may come from aliases,
#: scaling down to 10 % at 4000000.
_RATIO_LOW = 400_000
_RATIO_HIGH = 4_000_000

#: libyaml's scanner error past its own nesting limit.
_LIBYAML_DEPTH = "exceeded maximum nesting depth"

_Base: type = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


class YAMLLimitError(yaml.YAMLError):
    """A document over a limit, worded as go-yaml words it (no position)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def allowed_alias_ratio(decodes: int) -> float:
    """The share of decodes go-yaml lets alias expansion have, by the decodes so far."""
    if decodes <= _RATIO_LOW:
        return 0.99
    if decodes >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decodes - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW))


class BoundedLoader(_Base):  # type: ignore[misc]
    """A safe loader whose composer counts alias expansion and depth (see the module)."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self._anchored: dict[str, Node] = {}
        #: (decodes, height) of each anchored node, once composed; an anchor without one is
        #: still open, and an alias to it is a node containing itself.
        self._measures: dict[int, tuple[int, int]] = {}
        self._decodes = 1  # go-yaml counts the document node too
        self._aliases = 0
        self._depth = 0

    # ---- the counters --------------------------------------------------------------------

    def _count(self, decodes: int, aliases: int) -> None:
        self._decodes += decodes
        self._aliases += aliases
        if (
            self._aliases > 100
            and self._decodes > 1000
            and self._aliases / self._decodes > allowed_alias_ratio(self._decodes)
        ):
            # Inside one expansion both counters grow together, so the ratio only rises and
            # the allowance only falls: testing after the whole target is testing every step.
            raise YAMLLimitError("yaml: document contains excessive aliasing")

    def _check_depth(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise YAMLLimitError(f"yaml: exceeded max depth of {MAX_DEPTH}")

    # ---- composing (replaces PyYAML's Composer, which libyaml's loader runs in C) ---------

    def get_single_node(self) -> Node | None:
        self.get_event()  # StreamStartEvent
        node = None
        if not self.check_event(StreamEndEvent):
            node = self._document()
        if not self.check_event(StreamEndEvent):
            event = self.get_event()
            raise yaml.composer.ComposerError(
                "expected a single document in the stream",
                node.start_mark if node is not None else None,
                "but found another document",
                event.start_mark,
            )
        self.get_event()  # StreamEndEvent
        return node

    def _document(self) -> Node:
        self.get_event()  # DocumentStartEvent
        node, _, _ = self._node(None, None)
        self.get_event()  # DocumentEndEvent
        return node

    def _node(self, parent: Node | None, index: Any) -> tuple[Node, int, int]:
        """The next node, with what decoding it costs go-yaml and how deep it goes."""
        if self.check_event(AliasEvent):
            return self._alias()
        anchor = self.peek_event().anchor
        self._count(1, 0)
        self.descend_resolver(parent, index)
        if self.check_event(ScalarEvent):
            event = self.get_event()
            tag = event.tag
            if tag is None or tag == "!":
                tag = self.resolve(ScalarNode, event.value, event.implicit)
            node: Node = ScalarNode(
                tag, event.value, event.start_mark, event.end_mark, style=event.style
            )
            if anchor is not None:
                self._anchored[anchor] = node
            decodes, height = 1, 0
        else:
            node, decodes, height = self._collection(anchor)
        self.ascend_resolver()
        if anchor is not None:
            self._measures[id(node)] = (decodes, height)
        return node, decodes, height

    def _alias(self) -> tuple[Node, int, int]:
        event = self.get_event()
        target = self._anchored.get(event.anchor)
        if target is None:
            raise yaml.composer.ComposerError(
                None, None, f"found undefined alias {event.anchor!r}", event.start_mark
            )
        measure = self._measures.get(id(target))
        if measure is None:
            raise YAMLLimitError(f"yaml: anchor '{event.anchor}' value contains itself")
        decodes, height = measure
        self._count(1, 0)  # the alias node itself, then its target, all of it aliased
        self._count(decodes, decodes)
        self._check_depth(self._depth + height)
        return target, 1 + decodes, height

    def _collection(self, anchor: str | None) -> tuple[Node, int, int]:
        start = self.get_event()
        mapping = isinstance(start, MappingStartEvent)
        tag = start.tag
        if tag is None or tag == "!":
            tag = self.resolve(MappingNode if mapping else SequenceNode, None, start.implicit)
        kind = MappingNode if mapping else SequenceNode
        node = kind(tag, [], start.start_mark, None, flow_style=start.flow_style)
        if anchor is not None:
            self._anchored[anchor] = node
        self._depth += 1
        self._check_depth(self._depth)
        decodes, height = 1, 0
        end = MappingEndEvent if mapping else SequenceEndEvent
        index = 0
        while not self.check_event(end):
            if mapping:
                key, key_decodes, _ = self._node(node, None)
                value, value_decodes, value_height = self._node(node, key)
                node.value.append((key, value))
                decodes += key_decodes + value_decodes
            else:
                value, value_decodes, value_height = self._node(node, index)
                node.value.append(value)
                decodes += value_decodes
                index += 1
            height = max(height, value_height)
        node.end_mark = self.get_event().end_mark
        self._depth -= 1
        return node, decodes, height + 1


def load(text: str | bytes) -> Any:
    """One YAML document as Python values (PyYAML's safe types), within go-yaml's limits."""
    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        if error.problem == _LIBYAML_DEPTH:
            # libyaml's own stop (1000 levels) is past ours: the same refusal.
            raise YAMLLimitError(f"yaml: exceeded max depth of {MAX_DEPTH}") from None
        raise
    finally:
        loader.dispose()
