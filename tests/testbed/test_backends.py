"""Testbed kinds (satlab.testbed.backend) and the agent reset a long-lived box needs between runs.
The compose testbed itself runs for real in tests/compose/smoke.sh."""

from pathlib import Path

import pytest

from satlab.agent.unixhttp import AgentError
from satlab.testbed import backend, containers
from satlab.testbed.testbed import Testbed
from satlab.testbed.testbed import TestbedError as RefusedError  # (not a test class)


def _running(pid: int) -> bool:
    """True for a live process; a zombie is not, nor one reaped while we look (no /proc entry)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_agent_reset_stops_every_process_and_forgets_it() -> None:
    with Testbed(servers=1, clients=1) as tb:
        body = {"id": "sink0", "kind": "traffic", "args": ["sink", "--port", "5001"]}
        pid = tb.agent("cli1", "POST", "/processes", body)["pid"]
        assert tb.agent("cli1", "DELETE", "/processes") == {"stopped": ["sink0"]}
        assert not _running(pid)
        with pytest.raises(AgentError, match="404"):
            tb.agent("cli1", "GET", "/processes/sink0")
        # the same id can be used again by the next run
        tb.agent("cli1", "POST", "/processes", body)


def test_unknown_testbed_kind_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SATLAB_TESTBED", "vms")
    with pytest.raises(
        RefusedError, match="SATLAB_TESTBED: 'vms' is not one of namespaces, containers"
    ):
        backend.create_testbed()


def test_container_testbed_names_the_missing_boxes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SATLAB_TESTBED", "containers")
    monkeypatch.setattr(containers, "BOXES", tmp_path)
    for role in ("srv1", "gw", "emu", "st", "cli1"):
        (tmp_path / f"{role}.sock").touch()
    too_many = backend.create_testbed(servers=2, clients=1)
    with pytest.raises(RefusedError, match=r"hosts: .* needs \['srv2'\]"):
        too_many.__enter__()
    with pytest.raises(RefusedError, match="configuration.gateway"):
        backend.create_testbed(gateway=True).__enter__()
