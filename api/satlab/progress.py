"""The progress display of the commands that run experiments (`satlab run`, `satlab reproduce`,
`satlab wait`): a line per task with its description, bar, `info` field and elapsed time."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


def run_progress(console: Console, info: str = "{task.fields[info]}") -> Progress:
    """`info`: the column after the bar, a rich format of the task (its `info` field by default)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn(info),
        TimeElapsedColumn(),
        console=console,
    )
