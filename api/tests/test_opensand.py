"""OpenSAND 8 import and export (satlab/opensand/): hand-written OpenSAND configurations import
with the expected values and not-mapped lists; scenario -> OpenSAND XML -> scenario is the
identity on every mapped field; hostile input is refused with errors naming the file."""

from __future__ import annotations

import copy
import io
import shutil
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

import pytest

from satlab.link_backend import BackendUnavailable, emulator_link, require_backend
from satlab.linkcheck import check_link
from satlab.opensand import archive, tables
from satlab.opensand.cli import scenario_data
from satlab.opensand.exporter import export_link, geometry_delay_ms
from satlab.opensand.importer import QUEUE_MAX_BYTES, import_dir
from satlab.opensand.xmlsafe import MAX_XML_BYTES, OpenSandError, parse_xml
from satlab.scenario import ScenarioError, map_link_files, parse_scenario
from satlab.settings import EMULATOR_BIN, REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "opensand"


def settings(result: Any) -> set[tuple[str, str]]:
    return {(n.file, n.setting) for n in result.not_mapped}


def emulator_accepts(link: dict[str, Any], files: dict[str, bytes], tmp: Path) -> None:
    """The emulator's own check of an imported link with its files (skipped without the binary,
    like the service's check)."""
    if not EMULATOR_BIN.is_file():
        return
    for name, content in files.items():
        (tmp / name).write_bytes(content)
    check_link(map_link_files(link, lambda _, v: str(tmp / v)))


# -- hand-written configurations --


def test_cli_ethernet_example_imports(tmp_path: Path) -> None:
    """opensand_cli's reference carrier: 54 MHz / 1.35 = 40 Msym/s ACM over Table 13, 125 ms at
    the gateway and at the terminal, a File rain trace on the terminal's downlink."""
    r = import_dir(FIXTURES / "cli-ethernet")
    f, b = r.link["forward"], r.link["return"]
    assert f["symbol_rate_baud"] == 40e6 and f["roll_off"] == 0.35
    assert f["acm"] == {"mode": "acm", "refresh_ms": 1000, "margin_db": 0.0}
    assert "modcod_table" not in f  # waveforms 1-28 are the embedded table
    assert f["pilots"] is False and f["frame"] == "normal" and f["gse_label_bytes"] == 6
    assert f["delay_ms"] == 250 and b["delay_ms"] == 250  # 125 ms per entity, each way
    assert f["uplink"] == {"clear_sky_db": 20.0, "attenuation": {"type": "constant", "value_db": 0}}
    assert f["downlink"]["attenuation"] == {"type": "file", "file": "attenuation.csv", "loop": True}
    assert r.files["attenuation.csv"] == (FIXTURES / "cli-ethernet/st/attenuation.csv").read_bytes()
    assert b["kind"] == "rcs2" and b["symbol_rate_baud"] == 40e6 and b["roll_off"] == 0.2
    assert b["burst_symbols"] == 536 and "modcod_table" not in b
    assert f["queue"] == {"limit_packets": 6000, "limit_bytes": QUEUE_MAX_BYTES}  # the BE FIFO
    assert b["queue"]["limit_packets"] == 6000
    assert r.entities == {"gateway": 6, "satellite": 0, "terminals": [1], "mapped_terminal": 1}
    got = settings(r)
    expected = {
        ("gw/topology.xml", "frequency_plan/spots/item[0]/return_band/item[0]/type"),
        ("gw/profile.xml", "physical_layer/error_insertion/error_insertion_type"),
        ("gw/profile.xml", "encap/gse/decap_buffer_len"),
        ("gw/profile.xml", "network/gw_fifos/item/capacity"),
        ("gw/profile.xml", "network/qos_classes/item/pcp"),
        ("st/profile.xml", "access/dama/cra"),
        ("st/profile.xml", "encap/gse/compatibility_mode"),
        ("gw/topology.xml", "wave_forms/dvb_rcs2/item/burst_length"),  # the 1616-symbol rows
        ("gw/topology.xml", "advanced_settings/links/forward_duration"),
        ("gw/topology.xml", "advanced_settings/timers/synchro"),
        ("gw/topology.xml", "advanced_settings/delay/fifo_size"),
        ("gw/infrastructure.xml", "entity/entity_gw"),
        ("sat/infrastructure.xml", "storage"),
        ("st/infrastructure.xml", "infrastructure"),
    }
    assert expected <= got, expected - got
    # Mapped settings are not in the list, and identical topologies of the other entities add
    # nothing.
    mapped = {
        "physical_layer/delay/delay_value",
        "physical_layer/uplink_attenuation/clear_sky",
        "physical_layer/downlink_attenuation/file_attenuation_file",
        "advanced_settings/timers/acm_refresh",
        "advanced_settings/links/forward_margin",
        "wave_forms/dvb_s2/item/threshold",
        "encap/gse/compatibility_mode",
    }
    assert not {(f, s) for f, s in got if s in mapped and f.startswith("gw/")}
    assert not any(f.endswith("topology.xml") and not f.startswith("gw/") for f, _ in got)
    gate = next(n for n in r.not_mapped if n.setting.endswith("error_insertion_type"))
    assert gate.value == "Gate" and "PER curve" in gate.reason
    emulator_accepts(r.link, r.files, tmp_path)


def test_deploy_project_imports(tmp_path: Path) -> None:
    """An opensand-deploy project: VCM forward for the terminal's group, a 1616-symbol return
    over waveforms 14-20, FileDelay + constant delay, On/Off and Triangular fades, QoS pcp 3,
    two terminals and a regenerative return."""
    r = import_dir(FIXTURES / "deploy-project")
    f, b = r.link["forward"], r.link["return"]
    assert f["symbol_rate_baud"] == 10e6 and f["roll_off"] == 0.25  # 12500 kHz / 1.25
    assert f["acm"] == {"mode": "vcm", "refresh_ms": 100, "margin_db": 0.5,
                        "vcm_modcods": [28, 28, 22]}  # fmt: skip
    assert f["gse_label_bytes"] == 3  # compatibility_mode false
    # The gateway's FileDelay plus the terminal's 12 ms, both ways.
    expected_file = {
        "path": "delay-plus-12ms-gw_delay.txt",
        "refresh_period_ms": 1000,
        "loop": True,
    }
    assert f["delay_file"] == b["delay_file"] == expected_file
    delay = r.files["delay-plus-12ms-gw_delay.txt"].decode()
    assert [ln for ln in delay.splitlines() if not ln.startswith("#")] == [
        "0 252",
        "30 262",
        "60 252",
    ]
    assert f["uplink"] == {"clear_sky_db": 18.5, "attenuation": {
        "type": "on_off", "on_ticks": 5, "off_ticks": 25, "amplitude_db": 4.0}}  # fmt: skip
    assert f["downlink"]["attenuation"] == {"type": "constant", "value_db": 1.5}
    assert b["uplink"] == {"clear_sky_db": 15.0, "attenuation": {
        "type": "triangular", "slope_db_per_tick": 0.2, "period_ticks": 60}}  # fmt: skip
    assert b["symbol_rate_baud"] == 5e6 and b["burst_symbols"] == 1616
    assert b["acm"] == {"mode": "acm", "refresh_ms": 100, "margin_db": 1.0}
    rows = tables.parse_table(r.files[b["modcod_table"]].decode(), "t")
    assert [x[0] for x in rows] == list(range(14, 21)) and rows[0][4] == 1.71
    assert f["queue"]["limit_packets"] == 2500  # pcp 3 -> class CA -> FIFO AF
    assert b["queue"]["limit_packets"] == 800
    assert r.entities["terminals"] == [1, 2] and r.entities["mapped_terminal"] == 1
    got = settings(r)
    expected = {
        ("topology.xml", "frequency_plan/spots/item[0]/assignments/return_regen_level"),
        ("topology.xml", "frequency_plan/spots/item/forward_band/item/group"),  # Premium carrier
        ("topology.xml", "wave_forms/dvb_rcs2/item/burst_length"),  # the 536-symbol rows
        (
            "entities/terminal1/profile.xml",
            "physical_layer/minimal_condition/minimal_condition_type",
        ),
        ("entities/terminal1/profile.xml", "physical_layer/minimal_condition/threshold"),
        ("entities/terminal2/infrastructure.xml", "entity"),  # the second terminal
        ("entities/gateway/profile.xml", "physical_layer/delay/file_path"),  # absolute path
    }
    assert expected <= got, expected - got
    assert not any(f.startswith("entities/terminal2/profile") for f, _ in got)
    emulator_accepts(r.link, r.files, tmp_path)


def test_import_names_the_file_and_element(tmp_path: Path) -> None:
    root = tmp_path / "c"
    shutil.copytree(FIXTURES / "cli-ethernet", root)
    p = root / "gw/profile.xml"
    p.write_text(
        p.read_text().replace("<delay_value>125</delay_value>", "<delay_value>x</delay_value>")
    )
    with pytest.raises(
        OpenSandError, match=r"gw/profile.xml: <physical_layer/delay/delay_value>: 'x'"
    ):
        import_dir(root)
    p.write_text(
        p.read_text().replace("<delay_value>x</delay_value>", "<delay_value>125</delay_value>")
    )
    (root / "st/attenuation.csv").unlink()
    with pytest.raises(OpenSandError, match=r"st/profile.xml: <physical_layer/downlink_attenuation/"
                       r"file_attenuation_file>: 'attenuation.csv' is not a file"):  # fmt: skip
        import_dir(root)
    (tmp_path / "empty").mkdir()
    with pytest.raises(OpenSandError, match="no infrastructure.xml"):
        import_dir(tmp_path / "empty")


def test_import_refuses_a_trace_outside_the_directory(tmp_path: Path) -> None:
    root = tmp_path / "c"
    shutil.copytree(FIXTURES / "cli-ethernet", root)
    (tmp_path / "secret.csv").write_text("0 0\n")
    p = root / "st/profile.xml"
    p.write_text(p.read_text().replace(">attenuation.csv<", ">../../secret.csv<"))
    with pytest.raises(OpenSandError, match="is not a file in the configuration directory"):
        import_dir(root)


# -- round trips --


def full_link(trace: Path, table: Path | None = None) -> dict[str, Any]:
    """A DVB-S2 ACM link with every mapped field explicit."""
    f: dict[str, Any] = {
        "kind": "dvbs2", "symbol_rate_baud": 10e6, "roll_off": 0.35, "pilots": False,
        "frame": "normal", "gse_label_bytes": 6,
        "acm": {"mode": "acm", "refresh_ms": 100, "margin_db": 0.5},
        "delay_ms": 260.0,
        "uplink": {"clear_sky_db": 22.0, "attenuation": {"type": "constant", "value_db": 0.0}},
        "downlink": {"clear_sky_db": 19.0,
                     "attenuation": {"type": "file", "file": str(trace), "loop": False}},
        "queue": {"limit_packets": 3000, "limit_bytes": QUEUE_MAX_BYTES},
    }  # fmt: skip
    if table is not None:
        f["modcod_table"] = str(table)
    b: dict[str, Any] = {
        "kind": "rcs2", "symbol_rate_baud": 2e6, "roll_off": 0.2, "burst_symbols": 536,
        "acm": {"mode": "acm", "refresh_ms": 100, "margin_db": 1.0},
        "delay_ms": 260.0,
        "uplink": {"clear_sky_db": 17.5,
                   "attenuation": {"type": "on_off", "on_ticks": 3, "off_ticks": 7,
                                   "amplitude_db": 2.5}},
        "downlink": {"clear_sky_db": 20.0,
                     "attenuation": {"type": "triangular", "slope_db_per_tick": 0.25,
                                     "period_ticks": 40}},
        "queue": {"limit_packets": 500, "limit_bytes": QUEUE_MAX_BYTES},
    }  # fmt: skip
    return {"forward": f, "return": b}


def round_trip(link: dict[str, Any], tmp: Path) -> tuple[dict[str, Any], Any, list[Any]]:
    notes = export_link(link, tmp / "os")
    r = import_dir(tmp / "os")
    return r.link, r, notes


def file_contents(link: dict[str, Any], files: dict[str, bytes] | None) -> dict[str, Any]:
    """The link with each file reference replaced by the file's content (names differ)."""

    def content(_: str, v: str) -> str:
        raw = files[v] if files is not None else Path(v).read_bytes()
        return raw.decode()

    return map_link_files(copy.deepcopy(link), content)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "fade.txt"
    p.write_text("# tick dB\n0 0\n5 3.5\n12 9.25\n20 0\n")
    return p


def test_round_trip_acm_with_trace(tmp_path: Path, trace: Path) -> None:
    link = full_link(trace)
    back, r, notes = round_trip(link, tmp_path)
    assert file_contents(back, r.files) == file_contents(link, None)
    assert notes == []  # every field of this link maps
    emulator_accepts(back, r.files, tmp_path)


def test_round_trip_custom_table_ccm_and_vcm(tmp_path: Path, trace: Path) -> None:
    table = tmp_path / "mc.txt"
    table.write_text(tables.format_table([r for r in tables.DVBS2 if 4 <= r[0] <= 17], "sub"))
    link = full_link(trace, table)
    back, r, _ = round_trip(link, tmp_path / "a")
    rows = tables.parse_table(r.files[back["forward"].pop("modcod_table")].decode(), "t")
    assert rows == tables.parse_table(table.read_text(), "t")
    link["forward"].pop("modcod_table")
    assert file_contents(back, r.files) == file_contents(link, None)
    for acm in ({"mode": "ccm", "modcod": 13}, {"mode": "vcm", "vcm_modcods": [28, 28, 22]}):
        link = full_link(trace)
        link["forward"]["acm"] |= acm
        back, r, notes = round_trip(link, tmp_path / acm["mode"])
        assert back["forward"]["acm"] == link["forward"]["acm"]
        assert "modcod_table" not in back["forward"] and notes == []


def test_round_trip_delays(tmp_path: Path, trace: Path) -> None:
    """Odd whole delays split between the entities; a delay file goes to the terminal."""
    link = full_link(trace)
    link["forward"]["delay_ms"] = link["return"]["delay_ms"] = 271.0
    back, _, notes = round_trip(link, tmp_path / "a")
    assert back["forward"]["delay_ms"] == back["return"]["delay_ms"] == 271 and notes == []
    delays = tmp_path / "delay.txt"
    delays.write_text("0 250\n10 262.5\n20 250\n")
    link = full_link(trace)
    for d in ("forward", "return"):
        del link[d]["delay_ms"]
        link[d]["delay_file"] = {"path": str(delays), "refresh_period_ms": 500, "loop": True}
    back, r, notes = round_trip(link, tmp_path / "b")
    assert file_contents(back, r.files) == file_contents(link, None) and notes == []


def test_round_trip_fixed_rate(tmp_path: Path) -> None:
    """OpenSAND has no fixed-rate link: the exporter says so and writes a constant carrier of
    that rate; the mapped fields (delay, queues, budgets) come back unchanged."""
    link = {
        "forward": {"kind": "fixed", "rate_bps": 20e6, "delay_ms": 250.0,
                    "queue": {"limit_packets": 200, "limit_bytes": QUEUE_MAX_BYTES}},
        "return": {"kind": "fixed", "rate_bps": 2e6, "delay_ms": 250.0,
                   "queue": {"limit_packets": 100, "limit_bytes": QUEUE_MAX_BYTES}},
    }  # fmt: skip
    back, _, notes = round_trip(link, tmp_path)
    noted = {n.setting for n in notes}
    assert {"forward.kind", "forward.rate_bps", "return.kind", "return.rate_bps"} <= noted
    for d, best, rate in (("forward", tables.DVBS2[-1], 20e6), ("return", tables.RCS2[-1], 2e6)):
        assert back[d]["delay_ms"] == 250 and back[d]["queue"] == link[d]["queue"]
        assert back[d]["acm"]["mode"] == "ccm" and back[d]["acm"]["modcod"] == best[0]
        # The constant carrier's raw rate is the fixed rate to within OpenSAND's whole kHz.
        assert back[d]["symbol_rate_baud"] * best[3] == pytest.approx(rate, rel=2e-3)


def test_export_lists_what_opensand_cannot_express(tmp_path: Path, trace: Path) -> None:
    link = full_link(trace)
    link["forward"] |= {"pilots": True, "bit_errors": {"model": "uniform", "ber": 1e-6},
                        "reorder": {"probability": 0.01, "extra_delay_ms": 5}}  # fmt: skip
    link["forward"]["acm"]["hysteresis_db"] = 0.3
    link["return"]["delay_ms"] = 300.0
    link["forward"]["queue"]["limit_bytes"] = 1_000_000
    link["forward"]["downlink"]["attenuation"]["tick_ms"] = 1000
    link["forward"]["beam"] = {"terminals": [{"name": "a", "prefixes": ["10.250.3.11/32"]}]}
    notes = {n.setting: n for n in export_link(link, tmp_path / "os")}
    assert "terminals are not exported" in notes["forward.beam.terminals"].reason
    for k in ("forward.pilots", "forward.bit_errors.model", "forward.bit_errors.ber",
              "forward.reorder.probability", "forward.acm.hysteresis_db", "return.delay_ms",
              "forward.queue.limit_bytes", "forward.downlink.attenuation.tick_ms"):  # fmt: skip
        assert k in notes, k
    assert "same both ways" in notes["return.delay_ms"].reason
    readme = (tmp_path / "os/README.txt").read_text()
    assert "forward.reorder.probability = 0.01" in readme
    with pytest.raises(OpenSandError, match="not an empty directory"):
        export_link(link, tmp_path / "os")


def test_export_has_the_blocks_opensand_8_2_schema_requires(tmp_path: Path, trace: Path) -> None:
    """OpenSAND 8.2.0 validates its files against schemas it generates (`opensand -g DIR`): every
    infrastructure.xml carries all five entity kinds' blocks in the model's order and the logs'
    extra_levels, and a terminal's profile has access2 before physical_layer (files without them
    are refused: "Element 'entity_gw': This element is not expected. Expected is (entity_sat)")."""
    export_link(full_link(trace), tmp_path / "os")
    kinds = ["entity_sat", "entity_gw", "entity_gw_net_acc", "entity_gw_phy", "entity_st"]
    for folder, own in (("gw", "Gateway"), ("sat", "Satellite"), ("st", "Terminal")):
        infra = ET.parse(tmp_path / "os" / folder / "infrastructure.xml").getroot()
        entity = infra.find("root/entity")
        assert entity is not None
        assert [c.tag for c in entity] == ["entity_type", *kinds]
        assert entity.findtext("entity_type") == own
        assert infra.find("root/logs/extra_levels/item/name") is not None
    profile = ET.parse(tmp_path / "os" / "st" / "profile.xml").getroot().find("root")
    assert profile is not None
    tags = [c.tag for c in profile]
    assert tags[-2:] == ["access2", "physical_layer"], tags


def test_geometry_delay() -> None:
    g = {"satellite_longitude_deg": 13.0, "gateway": {"lat_deg": 0, "lon_deg": 13.0},
         "terminal": {"lat_deg": 0, "lon_deg": 13.0}}  # fmt: skip
    assert geometry_delay_ms(g) == pytest.approx(238.74, abs=0.01)  # emulator/CONFIG.md


def test_imported_scenario_is_valid() -> None:
    r = import_dir(FIXTURES / "cli-ethernet")
    link = map_link_files(r.link, lambda _, v: str(FIXTURES / "cli-ethernet/st" / v))
    sc = parse_scenario({**scenario_data(r, "imported", "x"), "link": link})
    assert sc.link["forward"]["symbol_rate_baud"] == 40e6


# -- hostile input --


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<model><root><entity><entity_type>&lol3;</entity_type></entity></root></model>"""


def test_xml_refuses_entities_external_references_and_size() -> None:
    with pytest.raises(OpenSandError, match=r"x.xml: refused: DTDForbidden"):
        parse_xml(BILLION_LAUGHS, "x.xml")
    xxe = b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY e SYSTEM "file:///etc/passwd">]><model/>'
    with pytest.raises(OpenSandError, match="refused"):
        parse_xml(xxe, "y.xml")
    with pytest.raises(OpenSandError, match=f"over the {MAX_XML_BYTES}-byte limit"):
        parse_xml(b"<model><root>" + b" " * MAX_XML_BYTES + b"</root></model>", "big.xml")
    with pytest.raises(OpenSandError, match="z.xml: not well-formed XML"):
        parse_xml(b"<model><root>", "z.xml")
    deep = b"<model><root>" + b"<a>" * 40 + b"</a>" * 40 + b"</root></model>"
    with pytest.raises(OpenSandError, match="nested deeper than"):
        parse_xml(deep, "deep.xml")


def test_import_of_a_billion_laughs_profile(tmp_path: Path) -> None:
    root = tmp_path / "c"
    shutil.copytree(FIXTURES / "cli-ethernet", root)
    (root / "st/profile.xml").write_bytes(BILLION_LAUGHS)
    with pytest.raises(OpenSandError, match=r"st/profile.xml: refused"):
        import_dir(root)


def tar_of(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for info, data in members:
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_archives_refuse_traversal_links_and_bombs(tmp_path: Path) -> None:
    for bad in ("../evil.xml", "/etc/evil.xml", "a/../../evil.xml"):
        with pytest.raises(OpenSandError, match="outside the archive"):
            archive.unpack(tar_of([(tarfile.TarInfo(bad), b"x")]), tmp_path)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr(bad, b"x")
        with pytest.raises(OpenSandError, match="outside the archive"):
            archive.unpack(buf.getvalue(), tmp_path)
    link = tarfile.TarInfo("gw/profile.xml")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(OpenSandError, match="not a regular file"):
        archive.unpack(tar_of([(link, b"")]), tmp_path)
    # A zip bomb: one member far larger unpacked than the limit.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.xml", b"\0" * (archive.MAX_MEMBER_BYTES + 1))
    assert len(buf.getvalue()) < 100_000
    with pytest.raises(OpenSandError, match="over the .*limit"):
        archive.unpack(buf.getvalue(), tmp_path)
    with pytest.raises(OpenSandError, match="not a valid zip or tar"):
        archive.unpack(b"neither zip nor tar" * 10, tmp_path)
    assert not (tmp_path.parent / "evil.xml").exists() and not any(tmp_path.iterdir())


def test_archive_round_trip(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in (FIXTURES / "cli-ethernet").rglob("*"):
            if p.is_file():
                zf.write(p, "cli-ethernet/" + p.relative_to(FIXTURES / "cli-ethernet").as_posix())
    archive.unpack(buf.getvalue(), tmp_path)
    assert (
        import_dir(archive.config_root(tmp_path)).link == import_dir(FIXTURES / "cli-ethernet").link
    )


def test_a_runs_files_are_packed_for_its_artifacts(tmp_path: Path, trace: Path) -> None:
    """The `opensand` backend keeps two zips with a run: the configuration as exported (it unpacks
    and imports as an upload does, trace files included) and each entity's probes and logs."""
    link = full_link(trace)
    export_link(link, tmp_path / "os")
    config = archive.pack_config(tmp_path / "os", tmp_path / "keep" / "opensand-config.zip")
    with zipfile.ZipFile(config) as zf:
        names = set(zf.namelist())
    assert {"opensand-config/README.txt", "opensand-config/st/infrastructure.xml"} <= names
    archive.unpack(config.read_bytes(), tmp_path / "in")
    back = import_dir(archive.config_root(tmp_path / "in"))
    assert file_contents(back.link, back.files) == file_contents(link, None)
    # What the entities leave beside their configuration while they run.
    for entity in ("gw", "sat", "st"):
        (tmp_path / "os" / entity / "stats").mkdir()
        (tmp_path / "os" / entity / "stats" / f"{entity}_0.csv").write_text("Date;x (dB)\n")
        (tmp_path / "os" / entity / "opensand.log").write_text("started\n")
    (tmp_path / "os" / "st" / "stats" / "st2.log").write_text("[st] logged on\n")
    probes = archive.pack_probes(tmp_path / "os", ["gw", "st"], tmp_path / "keep" / "p.zip")
    with zipfile.ZipFile(probes) as zf:
        assert sorted(zf.namelist()) == [
            "p/gw/opensand.log", "p/gw/stats/gw_0.csv",
            "p/st/opensand.log", "p/st/stats/st2.log", "p/st/stats/st_0.csv",
        ]  # fmt: skip
        assert zf.read("p/st/stats/st2.log") == b"[st] logged on\n"


# -- the backend --


def test_backend_opensand_fails_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("SATLAB_OPENSAND_PREFIX", raising=False)
    with pytest.raises(
        BackendUnavailable, match=r"opensand needs opensand, not found on PATH; install OpenSAND 8"
    ):
        require_backend({"backend": "opensand"})
    require_backend({"backend": "satlab"})
    require_backend({})
    assert emulator_link({"backend": "opensand", "forward": {}}) == {"forward": {}}
    with pytest.raises(ScenarioError, match="backend: 'ns3' is not one of satlab, opensand"):
        parse_scenario({**scenario_data(import_dir(FIXTURES / "cli-ethernet"), "x", "y"),
                        "link": {"backend": "ns3"}})  # fmt: skip


def test_runner_refuses_opensand_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_one fails the run with the missing binaries' names before building a testbed."""
    from satlab.scenario import expand_runs
    from satlab.testbed import runner

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("SATLAB_OPENSAND_PREFIX", raising=False)

    def no_testbed(*a: Any, **k: Any) -> Any:
        raise AssertionError("a testbed was built")

    monkeypatch.setattr(runner, "create_testbed", no_testbed)
    sc = parse_scenario({**scenario_data(import_dir(FIXTURES / "cli-ethernet"), "x", "y"),
                         "link": {"backend": "opensand"}})  # fmt: skip
    res = runner.run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "failed" and "opensand needs opensand" in res["error"]
    assert "apt-get install opensand" in res["error"]


def test_opensand_prefix_names_the_binary_it_looked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """SATLAB_OPENSAND_PREFIX: the binary is PREFIX/bin/opensand, and the error names that path."""
    from satlab.link_backend import opensand_binary

    monkeypatch.setenv("SATLAB_OPENSAND_PREFIX", str(tmp_path))
    with pytest.raises(BackendUnavailable, match=f"opensand needs {tmp_path}/bin/opensand; "):
        require_backend({"backend": "opensand"})
    binary = tmp_path / "bin" / "opensand"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert opensand_binary() == binary
    require_backend({"backend": "opensand"})


# -- the command line --


def test_cli_import_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from satlab.cli import main
    from satlab.scenario import load_scenario

    out = tmp_path / "imp" / "s.yaml"
    out.parent.mkdir()
    with pytest.raises(SystemExit) as e:
        main(
            [
                "import",
                "opensand",
                str(FIXTURES / "cli-ethernet"),
                "--name",
                "eth",
                "--out",
                str(out),
            ]
        )
    assert e.value.code == 0
    text = out.read_text()
    assert text.startswith("# Imported from the OpenSAND 8 configuration")
    assert "#   gw/profile.xml: physical_layer/error_insertion/error_insertion_type = Gate" in text
    sc = load_scenario(out)
    assert sc.name == "eth"
    assert (
        Path(sc.link["forward"]["downlink"]["attenuation"]["file"]).read_bytes()
        == (FIXTURES / "cli-ethernet/st/attenuation.csv").read_bytes()
    )
    assert "not mapped (" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # not overwritten
        main(["import", "opensand", str(FIXTURES / "cli-ethernet"), "--out", str(out)])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["export", "opensand", str(out), str(tmp_path / "exp"), "--terminals", "2"])
    assert e.value.code == 0
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == [
        "README.txt", "gw", "sat", "st2", "st3", "topology.xml"]  # fmt: skip
    again = import_dir(tmp_path / "exp")
    assert again.entities == {"gateway": 0, "satellite": 1, "terminals": [2, 3],
                              "mapped_terminal": 2}  # fmt: skip
    assert again.link["forward"]["downlink"] == {
        **sc.link["forward"]["downlink"],
        "attenuation": {**sc.link["forward"]["downlink"]["attenuation"], "file": "attenuation.csv"},
    }


def test_export_for_the_compose_profile(tmp_path: Path, trace: Path) -> None:
    """The layout and absolute trace paths for a machine that keeps it in /etc/opensand."""
    link = full_link(trace)
    export_link(link, tmp_path / "os", files_at="/etc/opensand")
    for f in ("topology.xml", "gw/infrastructure.xml", "gw/profile.xml", "sat/infrastructure.xml",
              "st/infrastructure.xml", "st/profile.xml", "st/fade.txt"):  # fmt: skip
        assert (tmp_path / "os" / f).is_file(), f
    assert (
        "<file_attenuation_file>/etc/opensand/st/fade.txt<"
        in (tmp_path / "os/st/profile.xml").read_text()
    )
    r = import_dir(tmp_path / "os")
    assert file_contents(r.link, r.files) == file_contents(link, None)
    absolute = [n for n in r.not_mapped if n.value == "/etc/opensand/st/fade.txt"]
    assert absolute and "its copy st/fade.txt in the directory is used" in absolute[0].reason
    with pytest.raises(OpenSandError, match="not an absolute path"):
        export_link(link, tmp_path / "os2", files_at="etc")


def test_probes_are_read_from_opensand_local_statistics(tmp_path: Path) -> None:
    """An entity's local statistics files as opensand-output 8.2 writes them (FileStatHandler: a
    header of `NAME (UNIT)`, local-time stamps, empty fields for probes without a new value, a
    new numbered file when the probes change)."""
    from satlab.opensand import probes

    (tmp_path / "st2_0.csv").write_text(
        "Date;spot_0.st.phy.total_cn (dB);spot_0.st.down_forward_modcod.received_modcod "
        "(modcod index);spot_0.st.phy.drops (frame number)\n"
        "2026-11-27 06:14:38.510;16.99;;0\n"
        "2026-11-27 06:14:38.563;16.99;28;2\n"
        "2026-11-27 06:14:38.6"  # cut short by the entity's end
    )
    (tmp_path / "st2_1.csv").write_text(
        "Date;spot_0.st.phy.drops (frame number);spot_0.gw.standard.queue_loss.packets.be "
        "(Packets)\n2026-11-27 06:14:39.000;3;4\n"
    )
    stats = probes.read_stats(tmp_path)
    cn = probes.find(stats, "phy.total_cn")
    assert cn is not None and cn.unit == "dB" and [v for _, v in cn.points] == [16.99, 16.99]
    modcod = probes.find(stats, "down_forward_modcod.received_modcod")
    assert modcod is not None and [v for _, v in modcod.points] == [28]
    assert round(modcod.points[0][0] - cn.points[0][0], 3) == 0.053
    assert probes.total(stats, "phy.drops") == 5
    assert probes.total(stats, "queue_loss.packets") == 4  # the gateway's, behind its category
    assert probes.find(stats, "throughputs.l2_from_sat.total") is None
