"""The box registry of the hardware testbed: the machines an admin registers (name, role, agent
address, interfaces), which the worker's hardware testbed leases for runs
(satlab.testbed.hardware).

A box's name is the DNS name in its agent's certificate (`satlab ca issue DIR NAME --role agent`),
checked on every connection. The interfaces a role needs, in order:
  server, client  [experiment NIC]
  gw, st          [LAN-side NIC, satellite-side NIC]
  emu             [NIC cabled to the gw edge, NIC cabled to the st edge]  (its af_packet ports)
  hop             [servers' LAN NIC, NIC to the gw box's hopup, NIC to its hoplan]
A gw box has two more, [..., hopup NIC, hoplan NIC], to run scenarios with terrestrial hops
(`path.terrestrial`: the hop box builds the hops' routers and emulators, README hardware).
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from satlab.agent.tlsca import NAME
from satlab.service.errors import Conflict, Invalid, NotFound
from satlab.service.models import BOX_ROLES, Box
from satlab.testbed.hardware import GW_WITH_HOPS

# Linux interface names: at most 15 bytes, no '/', ':' or white space (dev_valid_name).
IFNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,15}$")
INTERFACES_NEEDED = {"server": 1, "client": 1, "gw": 2, "st": 2, "emu": 2, "hop": 3}
HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class BoxIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=63, description="the DNS name in its agent's certificate")
    role: str = Field(description="server, client, gw, emu, st or hop")
    address: str = Field(max_length=300, description="HOST:PORT its agent listens on (TLS)")
    interfaces: list[str] = Field(
        max_length=8,
        description="NIC names: servers/clients 1, gw/st [lan, sat] (gw with hops: "
        "+ [hopup, hoplan]), emu [gw, st], hop [srv, hopup, hoplan]",
    )


class BoxOut(BoxIn):
    created_at: datetime

    @classmethod
    def of(cls, b: Box) -> BoxOut:
        return cls(
            name=b.name,
            role=b.role,
            address=b.address,
            interfaces=list(b.interfaces),
            created_at=b.created_at,
        )


def _address_problem(address: str) -> str | None:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        return f"address: {address!r} is not HOST:PORT (port 1-65535)"
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"address: {host!r} is not an IPv6 address"
        return None
    if not HOSTNAME.match(host):
        return f"address: {host!r} is not a host name or IPv4 address (IPv6 in brackets)"
    return None


def validate(body: BoxIn) -> list[str]:
    errors = []
    if not NAME.match(body.name):
        errors.append(f"name: {body.name!r} is not a DNS label (a-z, 0-9, '-', at most 63)")
    if body.role not in BOX_ROLES:
        errors.append(f"role: {body.role!r} is not one of {', '.join(BOX_ROLES)}")
    elif len(body.interfaces) != INTERFACES_NEEDED[body.role] and not (
        body.role == "gw" and len(body.interfaces) == GW_WITH_HOPS
    ):
        errors.append(
            f"interfaces: a box of role {body.role} needs {INTERFACES_NEEDED[body.role]}"
            f"{f' or {GW_WITH_HOPS}' if body.role == 'gw' else ''} "
            f"(got {len(body.interfaces)}); see GET /api/boxes' description"
        )
    bad = [i for i in body.interfaces if not IFNAME.match(i)]
    if bad:
        errors.append(f"interfaces: {bad} are not interface names (1-15 of A-Z a-z 0-9 _ . @ -)")
    if len(set(body.interfaces)) != len(body.interfaces):
        errors.append(f"interfaces: {body.interfaces} names one NIC twice")
    problem = _address_problem(body.address)
    if problem:
        errors.append(problem)
    return errors


def register(session: Session, body: BoxIn) -> Box:
    errors = validate(body)
    if errors:
        raise Invalid(errors)
    if session.get(Box, body.name) is not None:
        raise Conflict(f"name: a box named {body.name!r} is registered already")
    taken = session.scalar(select(Box.name).where(Box.address == body.address))
    if taken is not None:
        raise Conflict(f"address: {body.address} is box {taken!r}'s already")
    box = Box(name=body.name, role=body.role, address=body.address, interfaces=body.interfaces)
    session.add(box)
    session.flush()
    return box


def listed(session: Session) -> list[Box]:
    return list(session.scalars(select(Box).order_by(Box.role, Box.name)))


def remove(session: Session, name: str) -> Box:
    """Unregisters a box; a run that leased it keeps it until it ends (the lease is a lock)."""
    box = session.get(Box, name)
    if box is None:
        raise NotFound(f"no box named {name!r}")
    session.delete(box)
    return box
