"""The Internet checksum (RFC 1071), for the packets the tests and the fuzz seeds build by hand."""

from __future__ import annotations

import struct


def inet_checksum(data: bytes) -> int:
    """The ones' complement of the ones' complement sum of `data`'s 16-bit words (an odd length
    padded with a zero byte)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
