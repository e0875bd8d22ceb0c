"""Run results: the document, headline metrics, compact time series, artifacts, aggregation.

- The result document (docs/run-result.md) is stored without its time series in results.document.
- Time series become one row per run and series with little-endian float32 arrays of times and
  values (8 bytes a sample instead of a JSON object): `tcp.<host>:<sport>-<dport>.<field>` for the
  senders' TCP_INFO samples, `link.<direction>.<field>` for the emulator's telemetry, and with
  per-class queues `link.<direction>.class.<name>.<field>` for each class (CLASS_FIELDS), and on a
  beam `link.<direction>.terminal.<name>.<field>` for each terminal (TERMINAL_FIELDS, and on a
  return beam with DAMA its requests and grant, DAMA_FIELDS; with contention access also its
  cumulative contention split, `contention_<field>` for satlab.contention.SPLIT_FIELDS).
  `downsample` gives min/max/mean per time bucket for plotting long series.
- Headline metrics per run (runs.summary): goodput_bps and completion_s of the first traffic item
  (as `satlab run` reports), total_goodput_bps over every flow, mean_fct_s of the first short-flows
  item, retransmissions (Tcp.RetransSegs over all hosts), and jain_fairness: Jain's index
  (sum x)^2 / (n sum x^2) over the bytes each sender connection delivered, when several share.
- Aggregation over repetitions: mean and 95% confidence interval (satlab.stats.mean_ci95).
"""

from __future__ import annotations

import csv
import io
import json
import math
import mimetypes
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from satlab import contention
from satlab.metrics import METRICS
from satlab.service.errors import Invalid, NotFound
from satlab.service.models import Artifact, Experiment, Result, Run, Series
from satlab.settings import get_settings
from satlab.stats import mean_ci95

TCP_FIELDS = (
    "cwnd",
    "ssthresh",
    "srtt_us",
    "rttvar_us",
    "retrans_total",
    "delivery_rate_bps",
    "bytes_acked",
    "bytes_received",
)
LINK_FIELDS = (
    "modcod",
    "esn0_db",
    "attenuation_db",
    "useful_rate_bps",
    "carrier_useful_rate_bps",  # a forward beam's carrier (useful_rate_bps is its first terminal's)
    "queue_packets",
    "queue_bytes",
)
# Per class: the queue's depth and the cumulative counters as the status gives them, and
# queue_delay_ms, the mean queueing delay of the packets the class sent since the previous sample
# (from the cumulative delay sum and packet count; no sample where it sent none).
CLASS_FIELDS = ("queue_packets", "queue_bytes", "sent_bytes", "dropped_packets")
# Per terminal of a beam (the status's `terminals`, forward and return): what the run view charts
# per terminal. Terminal names are a-z, 0-9, `_`, `-` (the emulator's rule), so the name cannot
# run into the field.
TERMINAL_FIELDS = ("modcod", "esn0_db", "useful_rate_bps", "queue_packets", "queue_bytes")
DAMA_FIELDS = ("requested_rbdc_kbps", "requested_vbdc_bytes", "granted_kbps")


def _num(x: Any) -> float:
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, int | float):
        return float(x)
    if isinstance(x, dict) and "id" in x:  # a MODCOD object
        return _num(x["id"])
    return math.nan


def jain(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if len(xs) < 2:
        return None
    sq = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * sq) if sq > 0 else None


def connection_bytes(tcp: list[dict[str, Any]]) -> dict[str, float]:
    """Bytes each sender connection delivered over the run (last - first bytes_acked)."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for s in tcp:
        key = f"{s.get('host')}:{s.get('sport')}-{s.get('dport')}"
        b = _num(s.get("bytes_acked"))
        if math.isfinite(b):
            first.setdefault(key, b)
            last[key] = b
    return {k: last[k] - first[k] for k in last}


def headline(doc: dict[str, Any]) -> dict[str, float | None]:
    flows = doc.get("flows") or []
    out: dict[str, float | None] = dict.fromkeys(METRICS)
    if flows:
        out["goodput_bps"] = flows[0].get("goodput_bps")
        out["completion_s"] = flows[0].get("completion_s")
    goodputs = [f["goodput_bps"] for f in flows if f.get("goodput_bps") is not None]
    out["total_goodput_bps"] = float(sum(goodputs)) if goodputs else None
    fcts = [f["mean_fct_s"] for f in flows if f.get("mean_fct_s") is not None]
    out["mean_fct_s"] = fcts[0] if fcts else None
    hosts = doc.get("hosts") or {}
    if hosts:
        out["retransmissions"] = float(sum(h.get("Tcp.RetransSegs", 0) for h in hosts.values()))
    tcp = (doc.get("timeseries") or {}).get("tcp") or []
    out["jain_fairness"] = jain(list(connection_bytes(tcp).values()))
    return out


def pack(values: list[float]) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


def unpack(blob: bytes) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.frombuffer(blob, dtype="<f4")


def _terminal_samples(
    direction_key: str, terminals: list[dict[str, Any]], with_contention: bool
) -> Iterable[tuple[str, float]]:
    """(series name, value) of each terminal's fields in one status record; `with_contention`:
    also its contention split (a link without contention access would store only zeros)."""
    for term in terminals:
        key = f"{direction_key}.terminal.{term.get('name')}"
        for f in TERMINAL_FIELDS:
            if f in term:
                yield f"{key}.{f}", _num(term[f])
        dama = term.get("dama") or {}
        for f in DAMA_FIELDS:
            if f in dama:
                yield f"{key}.{f}", _num(dama[f])
        if with_contention and dama:
            for f, v in contention.split(dama).items():
                yield f"{key}.contention_{f}", float(v)


def series_of(doc: dict[str, Any]) -> dict[str, tuple[list[float], list[float]]]:
    ts = doc.get("timeseries") or {}
    out: dict[str, tuple[list[float], list[float]]] = {}

    def add(name: str, t: float, v: float) -> None:
        tt, vv = out.setdefault(name, ([], []))
        tt.append(t)
        vv.append(v)

    for s in ts.get("tcp") or []:
        key = f"tcp.{s.get('host')}:{s.get('sport')}-{s.get('dport')}"
        for f in TCP_FIELDS:
            if f in s:
                add(f"{key}.{f}", _num(s.get("t")), _num(s[f]))
    delay_seen: dict[str, tuple[float, float]] = {}  # class key -> (delay sum ms, sent packets)
    with_contention = contention.configured((doc.get("inputs") or {}).get("link") or {})
    for r in ts.get("link") or []:
        key = f"link.{r.get('direction')}"
        t = _num(r.get("t"))
        for f in LINK_FIELDS:
            if f in r:
                add(f"{key}.{f}", t, _num(r[f]))
        for c in r.get("classes") or []:
            ckey = f"{key}.class.{c.get('name')}"
            for f in CLASS_FIELDS:
                if f in c:
                    add(f"{ckey}.{f}", t, _num(c[f]))
            total = (_num(c.get("queue_delay_sum_ms")), _num(c.get("sent_packets")))
            before = delay_seen.get(ckey, (0.0, 0.0))
            delay_seen[ckey] = total
            if total[1] > before[1]:
                add(f"{ckey}.queue_delay_ms", t, (total[0] - before[0]) / (total[1] - before[1]))
        for name, v in _terminal_samples(key, r.get("terminals") or [], with_contention):
            add(name, t, v)
    return out


def store(session: Session, run: Run, doc: dict[str, Any]) -> dict[str, float | None]:
    """Stores a run's result document, its series and its artifacts (in the caller's
    transaction); returns the headline metrics."""
    summary = headline(doc)
    session.execute(delete(Series).where(Series.run_id == run.id))
    session.execute(delete(Artifact).where(Artifact.run_id == run.id))
    for name, (t, v) in series_of(doc).items():
        session.add(Series(run_id=run.id, name=name, n=len(t), t=pack(t), v=pack(v)))
    cap = get_settings().max_artifact_bytes
    skipped = {}
    for name, path in (doc.get("artifacts") or {}).items():
        p = Path(path)
        try:
            size = p.stat().st_size
        except OSError as err:
            skipped[name] = f"cannot read: {err.strerror}"
            continue
        if size > cap:
            skipped[name] = f"{size} bytes is over the {cap}-byte artifact limit"
            continue
        ctype = "application/vnd.tcpdump.pcap" if p.suffix == ".pcap" else None
        session.add(
            Artifact(
                run_id=run.id,
                name=name,
                content_type=ctype or mimetypes.guess_type(p.name)[0] or "application/octet-stream",
                size_bytes=size,
                content=p.read_bytes(),
            )
        )
    stored = {k: v for k, v in doc.items() if k != "timeseries"}
    if skipped:  # with those the runner already left out (a capture cut short by a full disk)
        stored["artifacts_skipped"] = {**doc.get("artifacts_skipped", {}), **skipped}
    existing = session.get(Result, run.id)
    if existing is None:
        session.add(Result(run_id=run.id, document=stored))
    else:
        existing.document = stored
    return summary


def list_series(session: Session, run_id: int) -> list[dict[str, Any]]:
    rows = session.execute(
        select(Series.name, Series.n).where(Series.run_id == run_id).order_by(Series.name)
    ).all()
    return [{"name": n, "points": k} for n, k in rows]


def downsample(
    session: Session,
    run_id: int,
    name: str,
    buckets: int,
    t_from: float | None = None,
    t_to: float | None = None,
) -> dict[str, Any]:
    """min/max/mean of the series per equal-width time bucket (NaN samples ignored)."""
    row = session.scalar(select(Series).where(Series.run_id == run_id, Series.name == name))
    if row is None:
        raise NotFound(f"run {run_id} has no series {name!r}")
    t = unpack(row.t).astype(np.float64)
    v = unpack(row.v).astype(np.float64)
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    lo = float(t[0]) if t_from is None and len(t) else (t_from or 0.0)
    hi = float(t[-1]) if t_to is None and len(t) else (t_to if t_to is not None else 0.0)
    if hi < lo:
        raise Invalid(f"to: {hi} is before from ({lo})")
    keep = (t >= lo) & (t <= hi) & np.isfinite(v)
    t, v = t[keep], v[keep]
    out: list[dict[str, float]] = []
    if len(t):
        width = (hi - lo) / buckets if hi > lo else 1.0
        idx = np.minimum(((t - lo) / width).astype(np.int64), buckets - 1)
        for b in np.unique(idx):
            sel = v[idx == b]
            out.append(
                {
                    "t0": lo + float(b) * width,
                    "t1": lo + float(b + 1) * width,
                    "n": int(sel.size),
                    "min": float(sel.min()),
                    "max": float(sel.max()),
                    "mean": float(sel.mean()),
                }
            )
    return {"run_id": run_id, "name": name, "points": row.n, "buckets": out}


def _key(v: Any) -> str:
    return repr(v)  # a sweep value: a number, a string, a bool or (two dimensions) a list


def aggregate(session: Session, exp: Experiment) -> list[dict[str, Any]]:
    """Per configuration and sweep value (matrix order): runs, successful runs, and each
    headline metric as mean with a 95% interval over the repetitions."""
    # Only the columns it needs: whole rows (each run's spec) cost most of a comparison's time.
    runs = session.execute(
        select(Run.configuration, Run.sweep_value, Run.state, Run.summary)
        .where(Run.experiment_id == exp.id)
        .order_by(Run.index)
    ).all()
    return aggregate_rows(
        (cfg, sv, summary if state == "succeeded" else None) for cfg, sv, state, summary in runs
    )


def aggregate_rows(
    runs: Iterable[tuple[str, Any, dict[str, Any] | None]],
) -> list[dict[str, Any]]:
    """aggregate's rows from (configuration, sweep value, headline summary or None for a run
    that did not succeed) in run order; `satlab run` passes its local runs' results."""
    groups: dict[tuple[str, str], list[dict[str, Any] | None]] = defaultdict(list)
    order: list[tuple[str, Any]] = []
    for cfg, sv, summary in runs:
        k = (cfg, _key(sv))
        if k not in groups:
            order.append((cfg, sv))
        groups[k].append(summary)
    rows = []
    for cfg, sv in order:
        rs = groups[(cfg, _key(sv))]
        ok = [s for s in rs if s]
        row: dict[str, Any] = {
            "configuration": cfg,
            "sweep_value": sv,
            "runs": len(rs),
            "succeeded": len(ok),
            "metrics": {},
        }
        for m in METRICS:
            vals = [float(s[m]) for s in ok if s.get(m) is not None]
            est = mean_ci95(vals)
            row["metrics"][m] = {
                "mean": None if est.n == 0 else est.mean,
                "half_width": est.half_width,
                "n": est.n,
                "values": vals,
            }
        rows.append(row)
    return rows


def csv_sweep_value(v: Any) -> Any:
    """A sweep value in a CSV cell: as is, empty when unswept, JSON for two dimensions."""
    if v is None:
        return ""
    return json.dumps(v) if isinstance(v, list) else v


def _csv(header: list[str], rows: Iterable[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _blank_if_none(v: Any) -> Any:
    return "" if v is None else v


def runs_csv(session: Session, exp: Experiment) -> str:
    runs = session.scalars(select(Run).where(Run.experiment_id == exp.id).order_by(Run.index)).all()
    return _csv(
        [
            "run_id",
            "configuration",
            "sweep_value",
            "repetition",
            "seed",
            "state",
            "attempt",
            *METRICS,
        ],
        (
            [
                r.id,
                r.configuration,
                csv_sweep_value(r.sweep_value),
                r.repetition,
                r.seed,
                r.state,
                r.attempt,
                *(_blank_if_none((r.summary or {}).get(m)) for m in METRICS),
            ]
            for r in runs
        ),
    )


def aggregate_csv(rows: list[dict[str, Any]]) -> str:
    return _csv(
        [
            "configuration",
            "sweep_value",
            "runs",
            "succeeded",
            "metric",
            "mean",
            "ci95_half_width",
            "n",
        ],
        (
            [
                row["configuration"],
                csv_sweep_value(row["sweep_value"]),
                row["runs"],
                row["succeeded"],
                m,
                _blank_if_none(e["mean"]),
                _blank_if_none(e["half_width"]),
                e["n"],
            ]
            for row in rows
            for m, e in row["metrics"].items()
        ),
    )
