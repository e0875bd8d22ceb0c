"""API latency benchmark: p50/p99 of the list, result and comparison endpoints with 10,000 stored
runs under 100 concurrent clients.

    make bench-api            (root: one real testbed run provides the stored result document)
    .venv/bin/python tests/bench/api_bench.py --baseline-api DIR
                              (also measures another copy of api/, e.g. the last commit's from
                              `git archive HEAD api | tar -x -C DIR/..`, back to back on the same
                              database, and prints the ratios)

Steps: a scratch database (dropped at the end) migrated with Alembic; one real 3 s run through the
testbed gives a genuine satlab.run/1 document; one experiment of 100 runs (4 configurations x 25
repetitions) is submitted through the API and each run is claimed and finished through the same
service functions a worker uses, storing that document; the other 99 experiments are copies of it
made in SQL (experiment, runs, result documents; not the time series, which none of these
endpoints reads), since finishing 10,000 runs one by one took most of an hour on this machine;
then uvicorn (2 processes) serves the API and 100 asyncio clients request each endpoint.
Each process's caches start empty: the result paths are 1,429 distinct runs, so most result
requests are first requests in their process; each comparison is requested about 20 times.
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
from typing import Any, NamedTuple

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
    return dict(doc)


def seed(url: str, token: str, doc: dict[str, Any], experiments: int) -> list[int]:
    """The ids of `experiments` finished experiments: the first through the API and the
    worker's service functions, the rest copied from it in SQL."""
    from sqlalchemy import insert, literal, select

    from satlab import db
    from satlab.service import runs
    from satlab.service.models import Experiment, Result, Run

    me = runs.WorkerIdentity("bench", os.getpid())
    h = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=h, timeout=60) as c:
        sc = c.post("/api/scenarios", json={"yaml": SCENARIO})
        sc.raise_for_status()
        r = c.post("/api/experiments", json={"scenario_id": sc.json()["id"]})
        r.raise_for_status()
        first = int(r.json()["experiment"]["id"])
    with db.new_session() as s:
        ids = list(s.scalars(select(Run.id).where(Run.experiment_id == first)))
    for i, rid in enumerate(ids):
        with db.new_session() as s:
            runs.claim(s, rid, me)
        with db.new_session() as s:
            runs.finish(s, rid, me, doc, None)
        print(f"\r  finishing run {i + 1}/{len(ids)} of the first experiment", end="", flush=True)
    print()
    exp_cols = [c for c in Experiment.__table__.columns if c.name != "id"]
    run_cols = [c for c in Run.__table__.columns if c.name not in ("id", "experiment_id")]
    exp_ids = [first]
    with db.new_session() as s:
        src = s.get(Experiment, first)
        assert src is not None
        for _ in range(experiments - 1):
            new = s.scalar(
                insert(Experiment)
                .from_select(
                    [c.name for c in exp_cols],
                    select(*exp_cols).where(Experiment.id == first),
                )
                .returning(Experiment.id)
            )
            assert new is not None
            s.execute(
                insert(Run).from_select(
                    ["experiment_id", *(c.name for c in run_cols)],
                    select(literal(new), *run_cols).where(Run.experiment_id == first),
                )
            )
            old_run, new_run = select(Run).subquery(), select(Run).subquery()
            s.execute(
                insert(Result).from_select(
                    ["run_id", "document"],
                    select(new_run.c.id, Result.document)
                    .join(old_run, old_run.c.id == Result.run_id)
                    .join(new_run, new_run.c.index == old_run.c.index)
                    .where(old_run.c.experiment_id == first, new_run.c.experiment_id == new),
                )
            )
            exp_ids.append(new)
        s.commit()
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


def pct(xs: list[float], q: int) -> float:
    return statistics.quantiles(xs, n=100)[q - 1] if len(xs) > 1 else xs[0]


def serve(api_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """uvicorn (2 processes) serving the satlab package found in `api_dir`; its URL once up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            VENV / "uvicorn",
            "satlab.app:app",
            "--app-dir",
            str(api_dir),
            "--port",
            str(port),
            "--workers",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=api_dir,
    )
    for _ in range(300):
        try:
            httpx.get(f"{url}/api/health").raise_for_status()
            return server, url
        except httpx.HTTPError:
            time.sleep(0.1)
    stop(server)
    sys.exit(f"uvicorn serving {api_dir} did not answer /api/health in 30 s")


def stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(10)


class Figure(NamedTuple):
    p50_ms: float
    p99_ms: float
    rate: float  # successful requests per second
    errors: int
    server_cpu_ms: float  # CPU time of the uvicorn processes per request
    client_cpu_ms: float  # CPU time of this process (the 100 clients) per request


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its children (uvicorn's workers)."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        for t in Path(f"/proc/{pid}/task").iterdir():
            for child in (t / "children").read_text().split():
                total += cpu_s(int(child))
    except (OSError, IndexError):
        pass  # a process that went away meanwhile
    return total


def measure(
    server: subprocess.Popen[bytes],
    url: str,
    token: str,
    endpoints: dict[str, list[str]],
    clients: int,
    requests: int,
) -> dict[str, Figure]:
    out = {}
    for name, paths in endpoints.items():
        t, srv, own = time.perf_counter(), cpu_s(server.pid), time.process_time()
        lat, errors = asyncio.run(load(url, token, paths, clients, requests))
        wall = time.perf_counter() - t
        n = max(1, len(lat) + errors)
        out[name] = Figure(
            pct(lat, 50) * 1e3,
            pct(lat, 99) * 1e3,
            len(lat) / wall,
            errors,
            (cpu_s(server.pid) - srv) * 1e3 / n,
            (time.process_time() - own) * 1e3 / n,
        )
    return out


def table(title: str, figures: dict[str, Figure]) -> None:
    print(f"\n{title}")
    print(
        f"{'endpoint':48} {'p50 ms':>8} {'p99 ms':>8} {'target':>8} {'':4} {'req/s':>8} "
        f"{'errors':>7} {'server CPU ms/req':>18} {'client CPU ms/req':>18}"
    )
    for name, f in figures.items():
        verdict = "ok" if f.p99_ms < TARGET_P99_MS and f.errors == 0 else "FAIL"
        print(
            f"{name:48} {f.p50_ms:8.1f} {f.p99_ms:8.1f} {'<' + str(TARGET_P99_MS):>8} "
            f"{verdict:4} {f.rate:8.0f} {f.errors:7d} {f.server_cpu_ms:18.2f} "
            f"{f.client_cpu_ms:18.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", type=int, default=100, help="x 100 runs each")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--requests", type=int, default=2000, help="per endpoint")
    ap.add_argument(
        "--baseline-api",
        type=Path,
        help="another copy of api/ to measure first on the same database (before/after)",
    )
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
        server, url = serve(ROOT / "api")
        print("one real 3 s run for the stored result document ...")
        doc = real_result_doc()
        t0 = time.monotonic()
        exp_ids = seed(url, token, doc, args.experiments)
        print(f"  {len(exp_ids) * 100} runs stored in {time.monotonic() - t0:.0f} s")
        with psycopg.connect(url_db.replace("postgresql+psycopg://", "postgresql://")) as c:
            run_ids = [r[0] for r in c.execute("SELECT id FROM runs ORDER BY id").fetchall()]
            nruns = c.execute("SELECT count(*) FROM runs WHERE state = 'succeeded'").fetchone()
            size = c.execute(
                "SELECT pg_size_pretty(pg_database_size(current_database()))"
            ).fetchone()
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
            "uvicorn with 2 processes on this 2-core machine"
        )
        before = None
        if args.baseline_api is not None:
            stop(server)
            server, url = serve(args.baseline_api.resolve())
            before = measure(server, url, token, endpoints, args.clients, args.requests)
            stop(server)
            table(f"before: {args.baseline_api}", before)
            server, url = serve(ROOT / "api")
        after = measure(server, url, token, endpoints, args.clients, args.requests)
        table("this working tree" if before else "", after)
        if before:
            print("\nratios (this / before)")
            for name, f in after.items():
                b = before[name]
                print(
                    f"{name:48} p50 x{f.p50_ms / b.p50_ms:.2f}  p99 x{f.p99_ms / b.p99_ms:.2f}  "
                    f"req/s x{f.rate / b.rate:.2f}  server CPU/req x"
                    f"{f.server_cpu_ms / b.server_cpu_ms:.2f}"
                )
        # Little's law: with N clients always waiting on a reply, mean latency = N / throughput.
        need = args.clients * 1000 // TARGET_P99_MS
        print(
            f"\n{args.clients} clients each always waiting: a mean under {TARGET_P99_MS} ms needs "
            f"more than {need} req/s, served and generated on this machine's cores"
        )
        cores = os.cpu_count() or 1
        for name, f in after.items():
            per_req = f.server_cpu_ms + f.client_cpu_ms  # PostgreSQL's share not counted
            print(
                f"  {name.split()[0]}: {per_req:.2f} ms of CPU per request (server + clients, "
                f"without PostgreSQL's): at most {cores * 1000 / per_req:.0f} req/s on {cores} "
                f"idle cores, {need * per_req / 1000:.1f} cores for {need} req/s"
            )
    finally:
        if server is not None:
            stop(server)
        drop_database()


if __name__ == "__main__":
    main()
