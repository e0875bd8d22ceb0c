"""The project CA of a hardware testbed: `satlab ca init DIR`, `satlab ca issue DIR NAME --role`.

Agents on physical boxes are reached over TCP, and the control channel is mutually authenticated
TLS (satlab.agent.tlshttp): every agent and every controller (a worker) holds a certificate signed
by this CA, with its name as the certificate's DNS name. The role decides the extended key usage:
an agent's certificate serves (serverAuth), a controller's connects (clientAuth), so a stolen agent
certificate cannot drive other agents. Keys are EC P-256; every file written is mode 0600.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROLES = ("agent", "controller")
CA_DAYS = 3650
LEAF_DAYS = 825
# A certificate's name is a DNS label: TLS checks it as the peer's host name (box names alike).
NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


class CaError(RuntimeError):
    pass


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def init(ca_dir: Path, common_name: str = "satlab project CA") -> Path:
    """Creates DIR/ca.key and DIR/ca.crt; refuses to overwrite an existing CA."""
    ca_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if (ca_dir / "ca.key").exists() or (ca_dir / "ca.crt").exists():
        raise CaError(f"{ca_dir}: a CA is already there (ca.key/ca.crt); not overwritten")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write_private(ca_dir / "ca.key", _key_pem(key))
    _write_private(ca_dir / "ca.crt", cert.public_bytes(serialization.Encoding.PEM))
    return ca_dir / "ca.crt"


def issue(ca_dir: Path, name: str, role: str) -> tuple[Path, Path]:
    """Writes DIR/NAME.crt and DIR/NAME.key, signed by the CA in DIR; returns (cert, key)."""
    if not NAME.match(name):
        raise CaError(f"name: {name!r} is not a DNS label (a-z, 0-9, '-', at most 63)")
    if role not in ROLES:
        raise CaError(f"role: {role!r} is not one of {', '.join(ROLES)}")
    try:
        ca_key = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
    except FileNotFoundError as exc:
        raise CaError(f"{ca_dir}: no CA there ({exc.filename}); run `satlab ca init`") from None
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    crt, key_path = ca_dir / f"{name}.crt", ca_dir / f"{name}.key"
    if crt.exists() or key_path.exists():
        raise CaError(f"name: {name!r} already has a certificate in {ca_dir}; not overwritten")
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if role == "agent" else ExtendedKeyUsageOID.CLIENT_AUTH
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=LEAF_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_private(key_path, _key_pem(key))
    _write_private(crt, cert.public_bytes(serialization.Encoding.PEM))
    return crt, key_path


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("ca", help="the project CA of a hardware testbed (agents' mutual TLS)")
    ca_sub = p.add_subparsers(dest="ca_cmd", required=True)
    i = ca_sub.add_parser("init", help="create DIR/ca.key and DIR/ca.crt")
    i.add_argument("dir", type=Path)
    s = ca_sub.add_parser("issue", help="write DIR/NAME.crt and DIR/NAME.key signed by the CA")
    s.add_argument("dir", type=Path)
    s.add_argument("name", help="the box's registered name (agent) or the worker's (controller)")
    s.add_argument("--role", required=True, choices=ROLES)


def main(args: argparse.Namespace) -> int:
    try:
        if args.ca_cmd == "init":
            print(init(args.dir))
        else:
            for path in issue(args.dir, args.name, args.role):
                print(path)
    except CaError as exc:
        print(f"satlab ca: {exc}")
        return 2
    return 0
