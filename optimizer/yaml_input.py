"""YAML input within limits: :func:`parse_yaml`, for every YAML file the project reads.

Parsed by libyaml (C) where PyYAML has it, else by PyYAML's own Python parser; either way
PyYAML's composer, with the limits, builds the nodes and its safe constructor the values. A
document the fast parser refuses, or finds past a limit, is parsed again by the Python one,
so every error (its wording, its line) is what it always was.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from optimizer import limits, schema
from optimizer.errors import ConfigError

try:
    from yaml.cyaml import CParser  # type: ignore[attr-defined]  # only there with libyaml
except ImportError:  # PyYAML built without libyaml: the Python parser alone
    FAST = False
else:
    FAST = True


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text (safe types only) within the limits of :mod:`optimizer.limits`: nesting,
    aliases and what they expand to, integer digits, and no duplicate keys (the last one
    silently won). Syntax errors and limits become a ConfigError with the line."""
    if FAST:
        loader = None
        try:
            loader = _FastLimitedLoader(text, source)
            return loader.get_single_data()
        except (yaml.YAMLError, ConfigError, RecursionError):
            pass  # parsed again below, for the error as the Python parser words it
        finally:
            if loader is not None:
                loader.dispose()
    return _parse_slowly(text, source)


def _parse_slowly(text: str, source: str) -> Any:
    loader = None
    try:
        loader = _LimitedLoader(text, source)  # its reader refuses control characters already
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, where, f"invalid YAML: {problem}") from exc
    except RecursionError:
        raise ConfigError(source, "", f"nested deeper than {limits.MAX_NESTING} levels") from None
    finally:
        if loader is not None:
            loader.dispose()


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader with limits. Aliases are where a few hundred bytes become gigabytes
    (an alias bomb): each one is counted, and the nodes it stands for are added up as if it
    were expanded; past either limit the document is refused before anything is built."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self.source = source
        self._depth = 0
        self._aliases = 0
        self._expanded = 0
        self._sizes: dict[int, int] = {}

    def _refuse(self, mark: Any, problem: str) -> None:
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(self.source, where, problem)

    def _peek(self) -> yaml.Event | None:
        # types-PyYAML leaves Parser.peek_event unannotated; it returns the next event (None at the end).
        event: yaml.Event | None = self.peek_event()  # type: ignore[no-untyped-call]
        return event

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self._peek()
        if isinstance(event, yaml.AliasEvent):
            node = self.anchors.get(event.anchor)
            if node is not None:
                self._aliases += 1
                if self._aliases > limits.MAX_YAML_ALIASES:
                    self._refuse(event.start_mark, f"more than {limits.MAX_YAML_ALIASES} aliases")
                self._expanded += self._size(node)
                if self._expanded > limits.MAX_YAML_EXPANDED_NODES:
                    self._refuse(
                        event.start_mark,
                        f"aliases expand to more than {limits.MAX_YAML_EXPANDED_NODES:,} values",
                    )
        self._depth += 1
        if self._depth > limits.MAX_NESTING:
            mark = event.start_mark if event is not None else None
            self._refuse(mark, f"nested deeper than {limits.MAX_NESTING} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _size(self, node: Any) -> int:
        """Nodes under ``node`` counted as if every alias were expanded (memoised, no recursion)."""
        todo = [(node, False)]
        while todo:
            item, children_done = todo.pop()
            if id(item) in self._sizes:
                continue
            children = _children(item)
            if children_done or not children:
                self._sizes[id(item)] = 1 + sum(self._sizes[id(c)] for c in children)
                continue
            todo.append((item, True))
            todo.extend((c, False) for c in children if id(c) not in self._sizes)
        return self._sizes[id(node)]

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], Any] = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    marker = (key_node.tag, key_node.value)
                    if marker in seen:
                        self._refuse(
                            key_node.start_mark,
                            f"duplicate key {schema.key_text(key_node.value)} (also line "
                            f"{seen[marker].line + 1}); each key may appear once",
                        )
                    seen[marker] = key_node.start_mark
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: Any) -> int:
        digits = sum(ch.isalnum() for ch in str(node.value))
        if digits > limits.MAX_INT_DIGITS:
            self._refuse(node.start_mark, f"an integer of {digits} digits (at most {limits.MAX_INT_DIGITS})")
        return int(super().construct_yaml_int(node))


_LimitedLoader.add_constructor("tag:yaml.org,2002:int", _LimitedLoader.construct_yaml_int)


#: A number with an exponent and no dot (``1e-9``, ``5E3``) or no exponent sign (``1.5e3``):
#: YAML 1.1 reads these as strings, YAML 1.2 and every operator as numbers.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_LimitedLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


class _FastLimitedLoader(_LimitedLoader):
    """The same, its events from libyaml's scanner and parser (C) instead of PyYAML's Python
    ones: the composer (with the limits), the constructor and the resolver are the same. About
    6x faster: 0.15 s -> 0.025 s on configs/fabric-64.yaml, a quarter of what ``heliostat plan``
    spent before the solver. The Python reader still refuses control characters first."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text, source)
        self._events = CParser(text)

    def check_event(self, *choices: Any) -> bool:
        return bool(self._events.check_event(*choices))

    def peek_event(self) -> Any:
        return self._events.peek_event()

    def get_event(self) -> Any:
        return self._events.get_event()

    def dispose(self) -> None:
        self._events.dispose()
        super().dispose()


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


