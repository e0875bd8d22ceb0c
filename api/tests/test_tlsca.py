"""`satlab ca`: the hardware testbed's project CA (satlab.agent.tlsca)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from satlab.agent import tlsca
from satlab.cli import main


def test_init_and_issue_write_private_files_with_the_name_and_usage(tmp_path: Path) -> None:
    ca = tmp_path / "ca"
    with pytest.raises(SystemExit) as done:
        main(["ca", "init", str(ca)])
    assert done.value.code == 0
    tlsca.issue(ca, "lab-emu", "agent")
    tlsca.issue(ca, "worker1", "controller")
    files = sorted(p.name for p in ca.iterdir())
    assert files == ["ca.crt", "ca.key", "lab-emu.crt", "lab-emu.key", "worker1.crt", "worker1.key"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in ca.iterdir())
    root = x509.load_pem_x509_certificate((ca / "ca.crt").read_bytes())
    for name, usage in (
        ("lab-emu", ExtendedKeyUsageOID.SERVER_AUTH),
        ("worker1", ExtendedKeyUsageOID.CLIENT_AUTH),
    ):
        cert = x509.load_pem_x509_certificate((ca / f"{name}.crt").read_bytes())
        cert.verify_directly_issued_by(root)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert san.get_values_for_type(x509.DNSName) == [name]
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(eku) == [usage]
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"


def test_refusals_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(tlsca.CaError, match="no CA there"):
        tlsca.issue(tmp_path, "box1", "agent")
    tlsca.init(tmp_path)
    with pytest.raises(tlsca.CaError, match="a CA is already there"):
        tlsca.init(tmp_path)
    with pytest.raises(tlsca.CaError, match="name: 'Box_1' is not a DNS label"):
        tlsca.issue(tmp_path, "Box_1", "agent")
    with pytest.raises(tlsca.CaError, match="role: 'admin' is not one of agent, controller"):
        tlsca.issue(tmp_path, "box1", "admin")
    tlsca.issue(tmp_path, "box1", "agent")
    with pytest.raises(tlsca.CaError, match="name: 'box1' already has a certificate"):
        tlsca.issue(tmp_path, "box1", "controller")
