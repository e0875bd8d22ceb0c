"""The `opensand` link backend on a real OpenSAND 8 (satlab.testbed.opensand): a short TCP download
across OpenSAND's gateway, satellite and terminal entities, its MODCOD and its delay; and the
emulator box's agent, which starts them (satlab.agent.opensandbox), refusing in a box without
OpenSAND.

OpenSAND is not in the package registries CI reaches: without its binary (on PATH, or under
SATLAB_OPENSAND_PREFIX) the tests of a real OpenSAND skip, naming it."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from satlab.agent.unixhttp import AgentError, request
from satlab.link_backend import missing_binaries
from satlab.opensand import archive
from satlab.opensand.importer import import_dir
from satlab.scenario import expand_runs, parse_scenario
from satlab.settings import STATE_ROOT
from satlab.testbed.runner import run_one

MISSING = missing_binaries()
needs_opensand = pytest.mark.skipif(
    bool(MISSING),
    reason=f"OpenSAND 8 not installed: {', '.join(MISSING)} not found "
    "(on PATH, or under SATLAB_OPENSAND_PREFIX)",
)

# Clear sky 20 dB up and down: total C/N 16.99 dB -> MODCOD 28 (32APSK 9/10) under OpenSAND's ACM
# rule with margin 0 (anchors measured on OpenSAND 8.2.0 itself).
CLEAR_SKY_MODCOD = 28
LINK = {
    "backend": "opensand",
    "forward": {
        "delay_ms": 250,
        "symbol_rate_baud": 5.0e6,
        "pilots": False,
        "gse_label_bytes": 6,
        "acm": {"mode": "acm", "refresh_ms": 1000, "margin_db": 0},
    },
    "return": {"delay_ms": 250, "kind": "rcs2", "symbol_rate_baud": 2.0e6},
}


def run(duration_s: float, artifacts: Path | None = None) -> dict[str, Any]:
    sc = parse_scenario(
        {
            "name": "opensand-backend",
            "link": LINK,
            "duration_s": duration_s,
            "sample_period_ms": 100,
            "traffic": [{"kind": "bulk_tcp", "duration_s": duration_s}],
            "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
        }
    )
    return run_one(sc, expand_runs(sc)[0], artifacts=artifacts)


@needs_opensand
def test_a_tcp_download_crosses_opensand_at_its_modcod_and_delay(tmp_path: Path) -> None:
    res = run(8, tmp_path)
    assert res["status"] == "ok", res.get("error")
    fwd = [r for r in res["timeseries"]["link"] if r["direction"] == "forward"]
    modcods = [r["modcod"] for r in fwd if "modcod" in r]
    assert modcods and all(m == CLEAR_SKY_MODCOD for m in modcods[len(modcods) // 2 :]), modcods
    assert any(r.get("delivered_bps", 0) > 0 for r in fwd)
    flow = res["flows"][0]
    assert flow["bytes_received"] > 100_000, flow
    # 250 ms each way, plus OpenSAND's 10 ms forward and 26.5 ms return frames and its
    # timers: the smallest RTT TCP saw is 500 ms and a few frames.
    rtts = [s["srtt_us"] / 1000 for s in res["timeseries"]["tcp"] if s.get("srtt_us")]
    assert rtts and 500 <= min(rtts) <= 650, min(rtts, default=None)
    entities = res["opensand"]["entities"]
    assert set(entities) == {"gw", "sat", "st"}
    assert all(e["user_s"] + e["system_s"] > 0 for e in entities.values())
    # The run keeps its configuration, to run again elsewhere, and what the entities wrote.
    arts = res["artifacts"]
    assert set(arts) == {"opensand.config.zip", "opensand.probes.zip"}, arts
    archive.unpack(Path(arts["opensand.config.zip"]).read_bytes(), tmp_path / "config")
    back = import_dir(archive.config_root(tmp_path / "config")).link
    assert back["forward"]["symbol_rate_baud"] == LINK["forward"]["symbol_rate_baud"]
    with zipfile.ZipFile(arts["opensand.probes.zip"]) as zf:
        names = zf.namelist()
    for entity in ("gw", "sat", "st"):
        assert f"opensand-probes/{entity}/opensand.log" in names, names
        assert any(n.startswith(f"opensand-probes/{entity}/stats/") for n in names), names


def _own_entities() -> dict[str, int]:
    """The OpenSAND entities this process started, by entity (their working directory is
    TESTBED_DIR/opensand/ENTITY, in a testbed whose state names this process as owner)."""
    found = {}
    for state in Path(STATE_ROOT).glob("*/state.json"):
        try:
            if json.loads(state.read_text())["owner_pid"] != os.getpid():
                continue
        except (OSError, ValueError):
            continue
        for cwd in Path("/proc").glob("[0-9]*/cwd"):
            try:
                where = cwd.readlink()
            except OSError:
                continue
            if where.parent == state.parent / "opensand":
                found[where.name] = int(cwd.parent.name)
    return found


@needs_opensand
def test_an_entity_that_dies_fails_the_run_and_nothing_is_left() -> None:
    out: dict[str, Any] = {}
    th = threading.Thread(target=lambda: out.update(run(20)))
    th.start()
    deadline = time.monotonic() + 30
    while "sat" not in (entities := _own_entities()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "sat" in entities, "the satellite entity never started"
    time.sleep(4)  # the link is up and the traffic running
    os.kill(entities["sat"], signal.SIGKILL)
    th.join(60)
    assert out["status"] == "failed"
    assert "OpenSAND sat exited" in out["error"], out["error"]
    assert not _own_entities(), "entities outlived the run"


def test_rate_share_traffic_is_refused_naming_the_field() -> None:
    """A UDP load given as a share of the capacity needs the built-in emulator's status: refused
    before anything is built, whether OpenSAND is installed or not."""
    sc = parse_scenario(
        {
            "name": "opensand-share",
            "link": LINK,
            "duration_s": 2,
            "traffic": [{"kind": "udp_cbr", "rate_share": 0.1}],
            "configurations": [{"name": "cubic"}],
        }
    )
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "failed"
    assert res["error"].startswith("traffic.0.rate_share: "), res["error"]
    assert "testbed_id" not in res  # no testbed was built


@pytest.fixture
def bare_agent(tmp_path: Path) -> Iterator[str]:
    """A host agent in a network namespace of its own (only `lo`) whose OpenSAND prefix holds no
    OpenSAND, as a compose emu box without docker/opensand/compose.yml; its socket's path."""
    sock = tmp_path / "emu.sock"
    env = {**os.environ, "SATLAB_OPENSAND_PREFIX": str(tmp_path / "none")}
    argv = ["unshare", "--net", "--", sys.executable, "-m", "satlab.agent.server"]
    agent = subprocess.Popen([*argv, "--socket", str(sock), "--name", "emu"], env=env)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and agent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        yield str(sock)
    finally:
        agent.terminate()
        agent.wait(10)


def test_a_box_without_opensand_refuses_naming_the_binary(bare_agent: str, tmp_path: Path) -> None:
    names = {e: f"sl0test-os{e}" for e in ("gw", "sat", "st")}
    with pytest.raises(AgentError) as err:
        request(bare_agent, "POST", "/opensand", {"dir": str(tmp_path), "namespaces": names})
    assert f"409 box emu: link.backend: opensand needs {tmp_path}/none/bin/opensand" in str(
        err.value
    )
    # nothing started, nothing wired: telling and stopping answer all the same
    assert request(bare_agent, "GET", "/opensand") == {"exit_codes": {}}
    assert request(bare_agent, "DELETE", "/opensand") == {"usage": {}}
    assert request(bare_agent, "GET", "/macs") == {"lo": "00:00:00:00:00:00"}
