"""The `satlab` commands that write the service's database directly: API tokens, migrations and
the scenario library. The database and service modules are imported inside each command so that
the REST commands (remote_cli.py) run on machines with neither the database nor its settings."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from satlab.settings import REPO_ROOT

console = Console(stderr=True)
out = Console()


def cmd_token(args: argparse.Namespace) -> int:
    from sqlalchemy import select

    from satlab import db
    from satlab.service import auth
    from satlab.service.models import ApiToken

    with db.new_session() as s:
        if args.token_cmd == "create":
            row, token = auth.create_token(
                s, args.name, args.role, args.scope, args.rate_limit, args.expires_days
            )
            s.commit()
            console.print(
                f"token {row.id} ({row.name}, {row.role}) created; it is shown only once:"
            )
            print(token)
        elif args.token_cmd == "list":
            t = Table()
            for c in ("id", "name", "role", "scope", "rate/min", "last used", "revoked"):
                t.add_column(c)
            for r in s.scalars(select(ApiToken).order_by(ApiToken.id)):
                t.add_row(
                    str(r.id),
                    r.name,
                    r.role,
                    ",".join(r.scope) if r.scope else "*",
                    str(r.rate_limit_per_min or "default"),
                    f"{r.last_used_at:%Y-%m-%d %H:%M}" if r.last_used_at else "",
                    f"{r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "",
                )
            out.print(t)
        else:
            auth.revoke_token(s, args.id)
            s.commit()
            console.print(f"token {args.id} revoked")
    return 0


def cmd_library(args: argparse.Namespace) -> int:
    from satlab import db
    from satlab.service import library

    with db.new_session() as s:
        outcomes = library.sync(s, Path(args.root))
    for o in outcomes:
        line = f"{o.action:9} {o.name} ({o.path})" + (f": {o.detail}" if o.detail else "")
        style = "red" if o.action == "failed" else None
        out.print(line, style=style, markup=False, highlight=False)
    return 1 if any(o.action == "failed" for o in outcomes) else 0


def migrate() -> None:
    from alembic import command
    from alembic.config import Config

    command.upgrade(Config(str(REPO_ROOT / "api" / "alembic.ini")), "head")
