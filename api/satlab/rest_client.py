"""A SatLab service's REST API as the `satlab` commands use it: the client, its errors, and waiting
for an experiment to end (with a progress bar on stderr)."""

from __future__ import annotations

import time
from typing import Any

import httpx
from rich.console import Console

from satlab.progress import run_progress

console = Console(stderr=True)
TERMINAL = ("succeeded", "failed", "cancelled")


class CliError(Exception):
    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class Client:
    def __init__(self, url: str, token: str | None) -> None:
        if not token:
            raise CliError("no token: set SATLAB_TOKEN or pass --token")
        self.http = httpx.Client(
            base_url=url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=60.0,
        )

    def call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise CliError(f"cannot reach the service: {exc}") from None
        if r.status_code >= 400:
            try:
                body = r.json()
                msg = body.get("detail") or r.text
            except ValueError:
                msg = r.text
            raise CliError(f"{method} {path}: {r.status_code}\n{msg}")
        ctype = r.headers.get("content-type", "")
        return r.json() if ctype.startswith("application/json") else r.text


def wait(client: Client, exp_id: int, poll_s: float = 2.0) -> dict[str, Any]:
    with run_progress(console, "{task.completed:.1f}/{task.total} runs {task.fields[info]}") as bar:
        task = None
        while True:
            exp = client.call("GET", f"/api/experiments/{exp_id}")
            runs = exp["runs"] or []
            done = sum(1 for r in runs if r["state"] in TERMINAL)
            going = [r for r in runs if r["state"] == "running"]
            info = ", ".join(f"{k} {v}" for k, v in sorted(exp["runs_by_state"].items()))
            if going:
                r = going[0]
                info += f" | now {r['configuration']} rep {r['repetition']}"
            if task is None:
                task = bar.add_task(f"experiment {exp_id}", total=len(runs), info=info)
            bar.update(task, completed=done + sum(r["progress"] for r in going), info=info)
            if exp["state"] in TERMINAL:
                return dict(exp)
            time.sleep(poll_s)
