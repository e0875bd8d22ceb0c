"""Safe reading of OpenSAND's XML files: no DTD, no entities, no external references (defusedxml),
a size limit, and errors that name the file and the element.

Each file becomes a `Doc`: its leaf settings by path (`physical_layer/delay/delay_type`, list items
as `item[2]`), with a record of which ones the importer read, so that everything it did not read
can be reported by name instead of being dropped silently."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

MAX_XML_BYTES = 2 << 20  # an OpenSAND 8 topology with every waveform is about 20 kB
MAX_ELEMENTS = 20_000
MAX_DEPTH = 32


class OpenSandError(ValueError):
    """A configuration that cannot be read; the message names the file (and element)."""


@dataclass
class Doc:
    """One XML file of the configuration: `name` is its path inside the configuration directory."""

    name: str
    leaves: dict[str, str]
    used: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)  # every element's path, leaves and components

    def __post_init__(self) -> None:
        for k in self.leaves:
            parts = k.split("/")
            self.paths.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))

    def get(self, path: str) -> str | None:
        """The text of the leaf at `path` (below `<root>`), marked as read; None when absent."""
        if path in self.leaves:
            self.used.add(path)
            return self.leaves[path]
        return None

    def has(self, path: str) -> bool:
        return path in self.paths

    def req(self, path: str) -> str:
        v = self.get(path)
        if v is None:
            raise OpenSandError(f"{self.name}: <{path}> is missing")
        return v

    def num(self, path: str, lo: float, hi: float, default: float | None = None) -> float:
        v = self.get(path)
        if v is None:
            if default is None:
                raise OpenSandError(f"{self.name}: <{path}> is missing")
            return default
        try:
            x = float(v)
        except ValueError:
            raise OpenSandError(f"{self.name}: <{path}>: {v!r} is not a number") from None
        if not lo <= x <= hi:
            raise OpenSandError(f"{self.name}: <{path}>: {v} is outside [{lo:g}, {hi:g}]")
        return x

    def flag(self, path: str, default: bool = False) -> bool:
        v = self.get(path)
        if v is None:
            return default
        if v.lower() not in ("true", "false", "1", "0"):
            raise OpenSandError(f"{self.name}: <{path}>: {v!r} is not true or false")
        return v.lower() in ("true", "1")

    def items(self, path: str) -> list[str]:
        """The item paths of the list at `path` (`path/item[0]`, ...), in document order."""
        n, out = 0, []
        while self.has(f"{path}/item[{n}]"):
            out.append(f"{path}/item[{n}]")
            n += 1
        return out

    def use_all(self, prefix: str = "") -> None:
        """Marks every leaf under `prefix` as read (a part the importer accounts for as a whole)."""
        for k in self.leaves:
            if not prefix or k == prefix or k.startswith(prefix + "/"):
                self.used.add(k)

    def unused(self) -> dict[str, str]:
        return {k: v for k, v in self.leaves.items() if k not in self.used}


def parse_xml(data: bytes, name: str) -> Doc:
    """A Doc of an OpenSAND model file (`<model><root>...</root></model>`)."""
    if len(data) > MAX_XML_BYTES:
        raise OpenSandError(f"{name}: {len(data)} bytes is over the {MAX_XML_BYTES}-byte limit")
    try:
        root = SafeET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException as err:
        raise OpenSandError(
            f"{name}: refused: {type(err).__name__} (DTDs, entities and external "
            "references are not allowed)"
        ) from None
    except ET.ParseError as err:
        raise OpenSandError(f"{name}: not well-formed XML: {err}") from None
    if root.tag != "model" or root.find("root") is None:
        raise OpenSandError(f"{name}: <{root.tag}>: expected an OpenSAND <model><root> document")
    leaves: dict[str, str] = {}
    count = 0

    def walk(el: ET.Element, path: str, depth: int) -> None:
        nonlocal count
        count += 1
        if count > MAX_ELEMENTS:
            raise OpenSandError(f"{name}: more than {MAX_ELEMENTS} elements")
        if depth > MAX_DEPTH:
            raise OpenSandError(f"{name}: <{path}>: nested deeper than {MAX_DEPTH} elements")
        children = list(el)
        if not children:
            if path:
                leaves[path] = (el.text or "").strip()
            return
        n_items = 0
        for c in children:
            if not isinstance(c.tag, str):
                continue
            if c.tag == "item":
                key = f"item[{n_items}]"
                n_items += 1
            else:
                key = c.tag
            walk(c, f"{path}/{key}" if path else key, depth + 1)

    top = root.find("root")
    assert top is not None
    walk(top, "", 0)
    return Doc(name, leaves)


def read_xml(path: Path, name: str) -> Doc:
    try:
        size = path.stat().st_size
        if size > MAX_XML_BYTES:
            raise OpenSandError(f"{name}: {size} bytes is over the {MAX_XML_BYTES}-byte limit")
        return parse_xml(path.read_bytes(), name)
    except OSError as err:
        raise OpenSandError(f"{name}: {err.strerror}") from None


_INDEX = re.compile(r"\[\d+\]")


def collapse(path: str) -> str:
    """A leaf path without list indices (`network/gw_fifos/item/capacity`)."""
    return _INDEX.sub("", path)
