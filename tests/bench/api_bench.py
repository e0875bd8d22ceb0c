"""API latency benchmark: p50/p99 of the list, result and comparison endpoints with 10,000 stored
runs under 100 concurrent clients.

    make bench-api            (root: one real testbed run provides the stored result document)

Steps: a scratch database (dropped at the end) migrated with Alembic; one real 3 s run through the
testbed gives a genuine satlab.run/1 document; 100 experiments of 100 runs (4 configurations x 25
repetitions) are submitted through the API and each run is claimed and finished through the same
service functions a worker uses, storing that document (summary, time series) 10,000 times; then
uvicorn (2 processes) serves the API and 100 asyncio clients request each endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv" / "bin"
BENCH_DB = "satlab_bench"

SCENARIO = """\
version: 1
name: bench
duration_s: 3
repetitions: 25
link:
  forward: {delay_ms: 250, kind: fixed, rate_bps: 10.0e6}
  return: {delay_ms: 250, kind: fixed, rate_bps: 2.0e6}
traffic: [{kind: bulk_tcp, duration_s: 3}]
configurations:
  - {name: cubic, transport: {congestion_control: cubic}}
  - {name: reno, transport: {congestion_control: reno}}
  - {name: bbr, transport: {congestion_control: bbr}}
  - {name: cubic2, transport: {congestion_control: cubic}}
"""


PG_SH = str(Path(__file__).resolve().parents[2] / "scripts" / "pg.sh")


def scratch_database(base_url: str) -> str:
    """Creates the bench database next to the project's (scripts/pg.sh create-db: the service
    role's rights, as in production); returns its SQLAlchemy URL."""
    drop_database()
    subprocess.run([PG_SH, "create-db", BENCH_DB], check=True, capture_output=True)
    return base_url.replace("/satlab?", f"/{BENCH_DB}?")


def drop_database() -> None:
    subprocess.run([PG_SH, "drop-db", BENCH_DB], check=True, capture_output=True)


def real_result_doc() -> dict[str, Any]:
    import yaml

    from satlab.scenario import expand_runs, parse_scenario
    from satlab.testbed.runner import run_one

    sc = parse_scenario({**yaml.safe_load(SCENARIO), "repetitions": 1})
    doc = run_one(sc, expand_runs(sc)[0])
    if doc["status"] != "ok":
        sys.exit(f"the real run failed: {doc.get('error')}")
    return doc


def seed(url: str, token: str, doc: dict[str, Any], experiments: int) -> list[int]:
    from sqlalchemy import select

    from satlab import db
    from satlab.service import runs
    from satlab.service.models import Run

    me = runs.WorkerIdentity("bench", os.getpid())
    h = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=h, timeout=60) as c:
        sc = c.post("/api/scenarios", json={"yaml": SCENARIO})
        sc.raise_for_status()
        exp_ids = []
        for i in range(experiments):
            r = c.post("/api/experiments", json={"scenario_id": sc.json()["id"]})
            r.raise_for_status()
            exp_ids.append(r.json()["experiment"]["id"])
            print(f"\r  seeding experiment {i + 1}/{experiments}", end="", flush=True)
            with db.new_session() as s:
                ids = list(s.scalars(select(Run.id).where(Run.experiment_id == exp_ids[-1])))
            for rid in ids:
                with db.new_session() as s:
                    runs.claim(s, rid, me)
                with db.new_session() as s:
                    runs.finish(s, rid, me, doc, None)
    print()
    return exp_ids


# Issue 24: list, show and compare p99 under 50 ms with 10 000 runs and 100 clients.
TARGET_P99_MS = 50


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def load(
    url: str, token: str, paths: list[str], clients: int, requests: int
) -> tuple[list[float], int]:
    """Latencies of the successful requests and the number of failed ones."""
    lat: list[float] = []
    errors = 0
    queue = list(paths)
    random.Random(1).shuffle(queue)
    queue = (queue * (requests // len(queue) + 1))[:requests]
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, limits=limits, timeout=120
    ) as c:

        async def worker() -> None:
            nonlocal errors
            while queue:
                path = queue.pop()
                t0 = time.perf_counter()
                try:
                    r = await c.get(path)
                    r.raise_for_status()
                except httpx.HTTPError:
                    errors += 1
                    continue
                lat.append(time.perf_counter() - t0)

        await asyncio.gather(*(worker() for _ in range(clients)))
    return lat, errors


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[q - 1] if len(xs) > 1 else xs[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=100, help="x 100 runs each")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--requests", type=int, default=2000, help="per endpoint")
    args = ap.parse_args()
    base = os.environ["DATABASE_URL"]
    url_db = scratch_database(base)
    os.environ["DATABASE_URL"] = url_db
    server = None
    try:
        subprocess.run([VENV / "satlab", "migrate"], check=True, capture_output=True)
        from satlab import db
        from satlab.service import auth

        with db.new_session() as s:
            _, token = auth.create_token(s, "bench", "admin", None, 10_000_000)
            s.commit()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [
                VENV / "uvicorn",
                "satlab.app:app",
                "--port",
                str(port),
                "--workers",
                "2",
                "--log-level",
                "warning",
            ],
            cwd=ROOT / "api",
        )
        for _ in range(100):
            try:
                httpx.get(f"{url}/api/health").raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        print("one real 3 s run for the stored result document ...")
        doc = real_result_doc()
        t0 = time.monotonic()
        exp_ids = seed(url, token, doc, args.experiments)
        print(f"  {len(exp_ids) * 100} runs stored in {time.monotonic() - t0:.0f} s")
        with psycopg.connect(url_db.replace("postgresql+psycopg://", "postgresql://")) as c:
            nruns = c.execute("SELECT count(*) FROM runs WHERE state = 'succeeded'").fetchone()
            size = c.execute(
                "SELECT pg_size_pretty(pg_database_size(current_database()))"
            ).fetchone()
        run_ids = list(range(1, len(exp_ids) * 100 + 1))
        endpoints = {
            "list    GET /api/experiments?limit=50": [
                f"/api/experiments?limit=50&offset={o}" for o in range(0, len(exp_ids), 10)
            ],
            "result  GET /api/runs/{id}/result": [f"/api/runs/{r}/result" for r in run_ids[::7]],
            "compare GET /api/experiments/{id}/comparison": [
                f"/api/experiments/{e}/comparison?baseline=cubic" for e in exp_ids
            ],
        }
        print(
            f"\n{nruns[0] if nruns else 0} stored runs, database {size[0] if size else '?'}; "
            f"{args.clients} concurrent clients, {args.requests} requests per endpoint, "
            "uvicorn with 2 processes on this 2-core machine\n"
        )
        print(
            f"{'endpoint':48} {'p50 ms':>8} {'p99 ms':>8} {'target':>8} {'':4} {'req/s':>8} "
            f"{'errors':>7}"
        )
        for name, paths in endpoints.items():
            t = time.perf_counter()
            lat, errors = asyncio.run(load(url, token, paths, args.clients, args.requests))
            wall = time.perf_counter() - t
            p99 = pct(lat, 99) * 1e3
            verdict = "ok" if p99 < TARGET_P99_MS and errors == 0 else "FAIL"
            print(
                f"{name:48} {pct(lat, 50) * 1e3:8.1f} {p99:8.1f} {'<' + str(TARGET_P99_MS):>8} "
                f"{verdict:4} {len(lat) / wall:8.0f} {errors:7d}"
            )
        # Little's law: with N clients always waiting on a reply, mean latency = N / throughput.
        print(
            f"\n{args.clients} clients each always waiting: a mean under {TARGET_P99_MS} ms needs "
            f"more than {args.clients * 1000 // TARGET_P99_MS} req/s, served and generated on "
            "this machine's cores"
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
        drop_database()


if __name__ == "__main__":
    main()
