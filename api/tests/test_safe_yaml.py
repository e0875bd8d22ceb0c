"""safe_yaml.load: request YAML without anchors or aliases, nested at most 64 deep, every refusal
a yaml.YAMLError naming the line, and no expansion before the refusal."""

from __future__ import annotations

import time

import pytest
import yaml

from satlab import safe_yaml


def alias_bomb(levels: int = 6, width: int = 10) -> str:
    """About 1 KB naming one scalar width**levels times (a million with the defaults)."""
    lines = ["l0: &l0 x"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def refusal(text: str) -> tuple[int, str]:
    """(line, problem) of the refusal of text."""
    with pytest.raises(yaml.YAMLError) as err:
        safe_yaml.load(text)
    mark = getattr(err.value, "problem_mark", None)
    assert mark is not None, err.value
    return mark.line + 1, str(getattr(err.value, "problem", ""))


def test_plain_documents_load_like_safe_load() -> None:
    text = "name: x\nlink: {forward: {delay_ms: 250}}\nlist: [1, 2.5, true, null, '3']\n"
    assert safe_yaml.load(text) == yaml.safe_load(text)
    assert safe_yaml.load("") is None


def test_alias_bomb_is_refused_at_once_without_expanding() -> None:
    bomb = alias_bomb()
    assert len(bomb) < 1200
    start = time.monotonic()
    line, problem = refusal(bomb)
    assert time.monotonic() - start < 0.5
    assert line == 1 and "aliases" in problem and "not accepted" in problem


def test_anchors_and_aliases_are_refused_with_their_line() -> None:
    line, problem = refusal("a: 1\nb: *nowhere\n")
    assert line == 2 and "aliases" in problem
    line, problem = refusal("base: {k: 1}\nlink:\n  forward: &fwd {delay_ms: 250}\n")
    assert line == 3 and "anchors" in problem


@pytest.mark.parametrize(
    "text",
    [
        "[" * 500 + "]" * 500,  # flow sequences
        "{a: " * 500 + "1" + "}" * 500,  # flow mappings
        "".join("  " * i + f"k{i}:\n" for i in range(500)) + "  " * 500 + "v\n",  # block
    ],
)
def test_deep_nesting_is_refused_with_its_line(text: str) -> None:
    line, problem = refusal(text)
    assert problem == "nested more than 64 levels deep"
    if text.startswith("k0"):
        assert line == 65  # the line of the 65th mapping's first key


def test_nesting_up_to_the_limit_is_accepted() -> None:
    value = safe_yaml.load("[" * 64 + "1" + "]" * 64)
    for _ in range(64):
        assert isinstance(value, list)
        value = value[0]
    assert value == 1
    assert refusal("[" * 65 + "1" + "]" * 65)[0] == 1


@pytest.mark.parametrize("text", ["n: " + "1" * 5000, "d: 2024-13-45"])
def test_scalars_python_cannot_read_are_yaml_errors(text: str) -> None:
    assert refusal(text)[0] == 1
