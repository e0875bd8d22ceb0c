"""`satlab import opensand DIR` and `satlab export opensand SCENARIO DIR`."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from satlab.opensand.exporter import MAX_TERMINALS, export_link
from satlab.opensand.importer import ImportResult, NotMapped, import_dir
from satlab.opensand.xmlsafe import OpenSandError
from satlab.scenario import (
    ScenarioError,
    expand_runs,
    load_scenario,
    map_link_files,
    parse_scenario,
    resolve_link_paths,
)

console = Console(stderr=True, soft_wrap=True)


def scenario_data(result: ImportResult, name: str, source: str) -> dict[str, Any]:
    """A runnable scenario around the imported link: one bulk download with CUBIC."""
    return {
        "version": 1,
        "name": name,
        "description": f"Link imported from the OpenSAND 8 configuration {source} "
        f"({len(result.not_mapped)} settings not mapped: see the comment at the top).",
        "duration_s": 30,
        "link": result.link,
        "traffic": [{"kind": "bulk_tcp", "duration_s": 30}],
        "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
    }


def scenario_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", text).strip("-.") or "opensand"
    return ("x" + name if not name[0].isalnum() else name)[:64]


def _print_not_mapped(items: list[NotMapped]) -> None:
    console.print(f"not mapped ({len(items)}):")
    for n in items:
        console.print(f"  {n.line()}", markup=False, highlight=False)


def cmd_import(args: argparse.Namespace) -> int:
    src = Path(args.dir)
    try:
        result = import_dir(src)
    except OpenSandError as err:
        console.print(f"[red]import opensand: {err}[/red]")
        return 2
    name = args.name or scenario_name(src.resolve().name)
    out = Path(args.out or f"{name}.yaml")
    files_dir = out.parent / f"{out.stem}-files"
    if out.exists() or (result.files and files_dir.exists()):
        console.print(f"[red]import opensand: {out} or {files_dir} exists (not overwritten)[/red]")
        return 2
    # The link names its files relative to the scenario file.
    link = dict(result.link)
    rel = {n: f"{files_dir.name}/{n}" for n in result.files}
    link = map_link_files(link, lambda _, v: rel.get(v, v))
    data = scenario_data(result, name, str(src))
    data["link"] = link
    try:
        parse_scenario({**data, "link": resolve_link_paths(link, files_dir.parent)})
    except ScenarioError as err:
        console.print(f"[red]import opensand: the imported scenario is not valid:[/red]\n{err}")
        return 2
    header = [f"# Imported from the OpenSAND 8 configuration {src} by `satlab import opensand`."]
    header += ["# Not mapped (OpenSAND settings with no place in the link):"]
    header += [f"#   {n.line()}" for n in result.not_mapped] or ["#   none"]
    if result.files:
        files_dir.mkdir(parents=True)
        for n, content in result.files.items():
            (files_dir / n).write_bytes(content)
    out.write_text("\n".join(header) + "\n" + yaml.safe_dump(data, sort_keys=False))
    try:
        _check_with_emulator(out)
    except ValueError as err:
        out.unlink()
        shutil.rmtree(files_dir, ignore_errors=True)
        console.print(f"[red]import opensand: the emulator refuses the imported link:[/red]\n{err}")
        return 2
    console.print(
        f"wrote {out}"
        + (f" and {len(result.files)} file(s) in {files_dir}" if result.files else "")
    )
    _print_not_mapped(result.not_mapped)
    return 0


def _check_with_emulator(path: Path) -> None:
    from satlab.linkcheck import check_link
    from satlab.settings import EMULATOR_BIN

    if EMULATOR_BIN.is_file():
        check_link(load_scenario(path).link)


def cmd_export(args: argparse.Namespace) -> int:
    try:
        sc = load_scenario(Path(args.scenario))
    except ScenarioError as err:
        console.print(f"[red]scenario {args.scenario} is not valid:[/red]\n{err}")
        return 2
    # The base link as the emulator gets it (without sweeps; clear-sky values of a link budget
    # filled in), the same link every run of the scenario starts from.
    link = expand_runs(sc.model_copy(update={"sweep": None, "repetitions": 1}))[0].link
    try:
        notes = export_link(link, Path(args.dir), terminals=args.terminals, files_at=args.files_at)
    except OpenSandError as err:
        console.print(f"[red]export opensand: {err}[/red]")
        return 2
    console.print(f"wrote {args.dir} (topology.xml, gw/, sat/, the terminal folders, README.txt)")
    _print_not_mapped(notes)
    return 0


def add_import_parser(sub: Any) -> None:
    p = sub.add_parser("import", help="import another tool's configuration (opensand)")
    isub = p.add_subparsers(dest="import_kind", required=True)
    o = isub.add_parser("opensand", help="an OpenSAND 8 configuration directory -> a scenario")
    o.add_argument("dir")
    o.add_argument("--name", help="scenario name (default: the directory's name)")
    o.add_argument("--out", help="scenario file to write (default NAME.yaml)")


def export_main(argv: list[str]) -> int:
    """`satlab export opensand SCENARIO DIR` (`satlab export ID` is the service's export)."""
    ap = argparse.ArgumentParser(
        prog="satlab export opensand",
        description="Write a scenario's link as an OpenSAND 8 configuration (gw, sat, terminals)",
    )
    ap.add_argument("scenario")
    ap.add_argument("dir", help="output directory (must not exist or be empty)")
    ap.add_argument("--terminals", type=int, default=1, help=f"terminals, 1-{MAX_TERMINALS}")
    ap.add_argument(
        "--files-at",
        metavar="DIR",
        help="name trace files by absolute path DIR/ENTITY/NAME (where DIR will be on the "
        "OpenSAND machine, e.g. /etc/opensand); default: relative",
    )
    return cmd_export(ap.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(export_main(sys.argv[1:]))
