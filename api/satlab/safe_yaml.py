"""YAML that arrives in requests, loaded with bounded work.

`yaml.safe_load` still accepts anchors and aliases, so a document of about 1 KB can name a
node a million times over (an "alias bomb"), and it recurses once per nesting level, so ~500
levels end in RecursionError. `load` composes the document with a SafeLoader that refuses every
anchor and alias and any collection nested deeper than MAX_DEPTH while composing, before anything
is expanded or constructed. Scalars that Python cannot make into a value (an integer of more than
4300 digits, a date like 2024-13-45) are refused too, instead of escaping as ValueError.

Every refusal is a yaml.MarkedYAMLError whose mark is where the problem is, so a caller's usual
`except yaml.YAMLError` reports it as `line N: ...`.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import Node

MAX_DEPTH = 64


class Refused(yaml.MarkedYAMLError):
    """Valid YAML that is not accepted here; `problem` says why, `problem_mark` where."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _Loader(yaml.SafeLoader):
    max_depth = MAX_DEPTH

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0  # collections open around the node being composed

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        # An alias needs an anchor before it, so refusing anchors refuses aliases at the first one.
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise Refused(
                "YAML aliases and anchors (*name, &name) are not accepted", event.start_mark
            )
        if not isinstance(event, yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self.max_depth:
            raise Refused(f"nested more than {self.max_depth} levels deep", event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as err:
            raise ConstructorError(None, None, str(err), node.start_mark) from None


def load(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """The value of a single YAML document (like yaml.safe_load) without anchors or aliases and
    nested at most max_depth collections deep; raises yaml.YAMLError naming the line."""
    loader = _Loader(text)
    loader.max_depth = max_depth
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
